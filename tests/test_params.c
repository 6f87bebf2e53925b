/* test_params.c - resolving a step's params against a plugin manifest:
 * defaults, given values, type / range / enum / unknown-key errors with
 * the full JSON path, CLI string overrides and formatting. */
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include <loom/sys/registry.h>
#include "registry_priv.h"
#include "ctx.h"

static loom_plugin_manifest man;

/* Loads the good ranker's manifest (6 params) before each test. */
static void setup(void)
{
    loom_error err = {0};
    int rc = loom_parse_plugin_manifest(
        loom_test_src("tests/fixtures/good-rank/manifest.json"), &man, &err);
    ck_assert_msg(rc == LOOM_OK, "%s", err.message);
}

/* Frees the manifest after each test. */
static void teardown(void)
{
    loom_plugin_manifest_clear(&man);
}

/* Resolves JSON text (NULL: no params object); returns the status. */
static int resolve(const char *json, loom_param_value **v, int *n, loom_error *err)
{
    cJSON *p = json ? cJSON_Parse(json) : NULL;
    if (json)
        ck_assert_ptr_nonnull(p);
    int rc = loom_params_resolve(&man, p, "f.json", "pipeline[2].params", v, n, err);
    cJSON_Delete(p);
    return rc;
}

/* Resolves expecting LOOM_EINVAL with exactly `msg`. */
static void resolve_fails(const char *json, const char *msg)
{
    loom_param_value *v = NULL;
    int n = -1;
    loom_error err = {0};
    ck_assert_int_eq(resolve(json, &v, &n, &err), LOOM_EINVAL);
    ck_assert_ptr_null(v);
    ck_assert_int_eq(n, 0);
    ck_assert_str_eq(err.message, msg);
}

START_TEST(defaults_when_absent)
{
    loom_param_value *v = NULL;
    int n = 0;
    loom_error err = {0};
    ck_assert_int_eq(resolve(NULL, &v, &n, &err), LOOM_OK);
    ck_assert_int_eq(n, 6);
    ck_assert_str_eq(v[0].name, "budget_ms");
    ck_assert_int_eq(v[0].type, LOOM_PARAM_INT);
    ck_assert_int_eq(v[0].i, 1000);
    ck_assert_double_eq(v[0].d, 1000.0);
    ck_assert_str_eq(v[1].name, "mode");
    ck_assert_str_eq(v[1].s, "fast");
    ck_assert(v[1].s != man.params[1].def.s); /* owned copy */
    ck_assert_double_eq(v[2].d, 1.0);
    ck_assert_int_eq(v[3].i, 1);
    ck_assert_str_eq(v[4].s, "");
    ck_assert_str_eq(v[5].s, "no");
    loom_params_free(v, n);

    ck_assert_int_eq(resolve("{}", &v, &n, &err), LOOM_OK);
    ck_assert_int_eq(v[0].i, 1000);
    loom_params_free(v, n);
}
END_TEST

START_TEST(given_values)
{
    loom_param_value *v = NULL;
    int n = 0;
    loom_error err = {0};
    ck_assert_int_eq(resolve("{\"budget_ms\": 3600000, \"mode\": \"exact\", \"alpha\": 2, "
                             "\"deterministic\": false, \"file\": \"a.txt\"}",
                             &v, &n, &err),
                     LOOM_OK);
    ck_assert_int_eq(v[0].i, 3600000);
    ck_assert_str_eq(v[1].s, "exact");
    ck_assert_double_eq(v[2].d, 2.0);
    ck_assert_int_eq(v[3].i, 0);
    ck_assert_str_eq(v[4].s, "a.txt");
    ck_assert_str_eq(v[5].s, "no");
    char buf[256];
    loom_params_format(v, n, buf, sizeof buf);
    ck_assert_str_eq(buf, "budget_ms=3600000 mode=exact alpha=2 deterministic=false "
                          "file=\"a.txt\" fail_create=no");
    loom_params_free(v, n);
}
END_TEST

START_TEST(type_and_range_errors)
{
    resolve_fails("{\"budget_ms\": 1.5}",
                  "f.json: pipeline[2].params.budget_ms: expected an integer in [0, 3600000], "
                  "found 1.5");
    resolve_fails("{\"budget_ms\": 3600001}",
                  "f.json: pipeline[2].params.budget_ms: expected an integer in [0, 3600000], "
                  "found 3600001");
    resolve_fails("{\"budget_ms\": \"fast\"}",
                  "f.json: pipeline[2].params.budget_ms: expected an integer in [0, 3600000], "
                  "found \"fast\"");
    resolve_fails("{\"mode\": \"slow\"}",
                  "f.json: pipeline[2].params.mode: expected one of \"fast\", \"exact\", "
                  "found \"slow\"");
    resolve_fails("{\"mode\": 1}",
                  "f.json: pipeline[2].params.mode: expected a string, found 1");
    resolve_fails("{\"alpha\": -0.5}",
                  "f.json: pipeline[2].params.alpha: expected a number >= 0, found -0.5");
    resolve_fails("{\"deterministic\": 1}",
                  "f.json: pipeline[2].params.deterministic: expected true or false, found 1");
    resolve_fails("{\"file\": null}",
                  "f.json: pipeline[2].params.file: expected a string, found null");
    resolve_fails("{\"budget_ms\": 5, \"bogus\": 1}",
                  "f.json: pipeline[2].params: unknown field \"bogus\" (expected one of: "
                  "budget_ms, mode, alpha, deterministic, file, fail_create)");
    resolve_fails("[1]", "f.json: pipeline[2].params: expected an object, found an array");
}
END_TEST

START_TEST(plugin_without_params)
{
    loom_plugin_manifest bare;
    loom_error err = {0};
    ck_assert_int_eq(loom_parse_plugin_manifest(
                         loom_test_src("tests/fixtures/good-cost/manifest.json"), &bare, &err),
                     LOOM_OK);
    cJSON *p = cJSON_Parse("{\"x\": 1}");
    loom_param_value *v = NULL;
    int n = -1;
    ck_assert_int_eq(loom_params_resolve(&bare, p, "g.json", "pipeline[0].params", &v, &n, &err),
                     LOOM_EINVAL);
    ck_assert_str_eq(err.message, "g.json: pipeline[0].params: unknown field \"x\" (plugin "
                                  "fixture.good-cost declares no params)");
    cJSON_Delete(p);
    ck_assert_int_eq(loom_params_resolve(&bare, NULL, "g.json", "pipeline[0].params", &v, &n, &err),
                     LOOM_OK);
    ck_assert_int_eq(n, 0);
    loom_params_free(v, n);
    loom_plugin_manifest_clear(&bare);
}
END_TEST

START_TEST(set_from_string)
{
    loom_param_value *v = NULL;
    int n = 0;
    loom_error err = {0};
    ck_assert_int_eq(resolve(NULL, &v, &n, &err), LOOM_OK);
    ck_assert_int_eq(loom_params_set_from_string(&man, v, n, "budget_ms", "42", &err), LOOM_OK);
    ck_assert_int_eq(v[0].i, 42);
    ck_assert_double_eq(v[0].d, 42.0);
    ck_assert_int_eq(loom_params_set_from_string(&man, v, n, "budget_ms", "4x", &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "fixture.good-rank.budget_ms: expected an integer in "
                                  "[0, 3600000], found \"4x\"");
    ck_assert_int_eq(loom_params_set_from_string(&man, v, n, "budget_ms", "-1", &err), LOOM_EINVAL);
    ck_assert_int_eq(v[0].i, 42); /* unchanged on error */
    ck_assert_int_eq(loom_params_set_from_string(&man, v, n, "mode", "exact", &err), LOOM_OK);
    ck_assert_str_eq(v[1].s, "exact");
    ck_assert_int_eq(loom_params_set_from_string(&man, v, n, "mode", "slow", &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message,
                     "fixture.good-rank.mode: expected one of \"fast\", \"exact\", found \"slow\"");
    ck_assert_int_eq(loom_params_set_from_string(&man, v, n, "alpha", "0.25", &err), LOOM_OK);
    ck_assert_double_eq(v[2].d, 0.25);
    ck_assert_int_eq(loom_params_set_from_string(&man, v, n, "alpha", "-1", &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "fixture.good-rank.alpha: expected a number >= 0, found \"-1\"");
    ck_assert_int_eq(loom_params_set_from_string(&man, v, n, "alpha", "inf", &err), LOOM_EINVAL);
    ck_assert_int_eq(loom_params_set_from_string(&man, v, n, "deterministic", "false", &err),
                     LOOM_OK);
    ck_assert_int_eq(v[3].i, 0);
    ck_assert_int_eq(loom_params_set_from_string(&man, v, n, "deterministic", "maybe", &err),
                     LOOM_EINVAL);
    ck_assert_str_eq(err.message,
                     "fixture.good-rank.deterministic: expected true or false, found \"maybe\"");
    ck_assert_int_eq(loom_params_set_from_string(&man, v, n, "file", "x y.txt", &err), LOOM_OK);
    ck_assert_str_eq(v[4].s, "x y.txt");
    ck_assert_int_eq(loom_params_set_from_string(&man, v, n, "nope", "1", &err), LOOM_ENOTFOUND);
    ck_assert_str_eq(err.message, "fixture.good-rank.nope: unknown param (plugin "
                                  "fixture.good-rank declares: budget_ms, mode, alpha, "
                                  "deterministic, file, fail_create)");
    char buf[256];
    loom_params_format(v, n, buf, sizeof buf);
    ck_assert_str_eq(buf, "budget_ms=42 mode=exact alpha=0.25 deterministic=false "
                          "file=\"x y.txt\" fail_create=no");
    loom_params_free(v, n);
}
END_TEST

/* Builds the suite. */
static Suite *params_suite(void)
{
    Suite *s = suite_create("params");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, defaults_when_absent);
    tcase_add_test(tc, given_values);
    tcase_add_test(tc, type_and_range_errors);
    tcase_add_test(tc, plugin_without_params);
    tcase_add_test(tc, set_from_string);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(params_suite());
}
