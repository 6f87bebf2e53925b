/* test_mock_manifest.c - the SDK mock host reads plugin manifests: a param
 * a test does not set returns the manifest's default exactly as the real
 * host supplies it (compared getter by getter for every in-tree plugin),
 * set params win, bad manifests are named, and a plugin whose params the
 * host cannot supply fails naming the key instead of guessing a default. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <loom/mock_host.h>
#include "testutil.h"
#include <loom/sys/registry.h>
#include "registry_priv.h"
#include "ctx.h"

/* Asserts that `text` contains `frag`. */
static void has(const char *text, const char *frag)
{
    ck_assert_msg(strstr(text, frag) != NULL, "missing \"%s\" in: %s", frag, text);
}

/* Every getter of the real host (params resolved from the manifest alone)
 * and of the mock (the same manifest loaded) agrees on every param. */
static void compare_with_host(const char *manifest_path)
{
    loom_plugin_manifest man;
    loom_error err = {0};
    ck_assert_msg(loom_parse_plugin_manifest(manifest_path, &man, &err) == LOOM_OK, "%s",
                  err.message);
    loom_param_value *v = NULL;
    int n = 0;
    ck_assert_int_eq(loom_params_resolve(&man, NULL, "t", "params", &v, &n, &err), LOOM_OK);
    loom_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.params = v;
    ctx.n_params = n;
    const loom_host_api *real = loom_host_table();

    loom_mock_host *h = loom_mock_host_new_with_manifest(manifest_path);
    ck_assert_ptr_nonnull(h);
    const loom_host_api *mock = loom_mock_host_api(h);
    loom_ctx *mc = loom_mock_host_ctx(h);
    for (int i = 0; i <= man.n_params; i++) {
        /* the last round asks for a key no manifest declares */
        const char *key = i < man.n_params ? man.params[i].name : "no_such_param";
        int64_t ri = -7, mi = -7;
        double rd = -7, md = -7;
        int rb = -7, mb = -7;
        ck_assert_int_eq(real->param_int(&ctx, key, &ri), mock->param_int(mc, key, &mi));
        ck_assert_int_eq(ri, mi);
        ck_assert_int_eq(real->param_double(&ctx, key, &rd), mock->param_double(mc, key, &md));
        ck_assert_double_eq(rd, md);
        ck_assert_int_eq(real->param_bool(&ctx, key, &rb), mock->param_bool(mc, key, &mb));
        ck_assert_int_eq(rb, mb);
        const char *rs = real->param_string(&ctx, key), *ms = mock->param_string(mc, key);
        ck_assert_msg((rs == NULL) == (ms == NULL), "%s: %s: string %s vs %s", manifest_path,
                      key, rs ? rs : "NULL", ms ? ms : "NULL");
        if (rs)
            ck_assert_str_eq(rs, ms);
    }
    loom_mock_host_free(h);
    loom_params_free(v, n);
    loom_plugin_manifest_clear(&man);
}

START_TEST(defaults_match_the_real_host)
{
    DIR *dir = opendir(loom_test_src("plugins"));
    ck_assert_ptr_nonnull(dir);
    int seen = 0;
    for (struct dirent *e; (e = readdir(dir));) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/plugins/%s/manifest.json", LOOM_TEST_SOURCE_DIR,
                 e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        fclose(f);
        compare_with_host(path);
        seen++;
    }
    closedir(dir);
    ck_assert_int_ge(seen, 30);
    /* every param type: int, enum, float, bool, string */
    compare_with_host(loom_test_src("tests/fixtures/good-rank/manifest.json"));
}
END_TEST

START_TEST(set_params_win_and_defaults_stay)
{
    loom_mock_host *h = loom_mock_host_new();
    const loom_host_api *a = loom_mock_host_api(h);
    loom_ctx *c = loom_mock_host_ctx(h);
    int64_t i = 0;
    /* no manifest: nothing is declared */
    ck_assert_int_eq(a->param_int(c, "budget_ms", &i), LOOM_ENOTFOUND);
    /* a plugin folder or its manifest.json */
    loom_error err = {0};
    ck_assert_int_eq(loom_mock_host_load_manifest(h, loom_test_src("tests/fixtures/good-rank"),
                                                  &err),
                     LOOM_OK);
    ck_assert_int_eq(a->param_int(c, "budget_ms", &i), LOOM_OK);
    ck_assert_int_eq(i, 1000);
    ck_assert_str_eq(a->param_string(c, "mode"), "fast");
    ck_assert_str_eq(a->param_string(c, "file"), "");
    ck_assert_int_eq(loom_mock_host_set_param(h, "budget_ms", "5"), LOOM_OK);
    ck_assert_int_eq(loom_mock_host_set_param(h, "mode", "exact"), LOOM_OK);
    ck_assert_int_eq(a->param_int(c, "budget_ms", &i), LOOM_OK);
    ck_assert_int_eq(i, 5);
    ck_assert_str_eq(a->param_string(c, "mode"), "exact");
    loom_mock_host_clear_params(h);
    ck_assert_int_eq(a->param_int(c, "budget_ms", &i), LOOM_OK);
    ck_assert_int_eq(i, 1000);
    ck_assert_str_eq(a->param_string(c, "mode"), "fast");
    /* by id among plugin folders; replaces the params loaded before */
    ck_assert_int_eq(loom_mock_host_load_manifest_of(h, loom_test_src("plugins"),
                                                     "org.loom.roofline", &err),
                     LOOM_OK);
    ck_assert_int_eq(a->param_int(c, "budget_ms", &i), LOOM_ENOTFOUND);
    double d = 0;
    ck_assert_int_eq(a->param_double(c, "gemm_efficiency_scale", &d), LOOM_OK);
    ck_assert_double_eq(d, 1.0);
    ck_assert_int_eq(loom_mock_host_load_manifest_of(h, loom_test_src("plugins"),
                                                     "org.loom.nothing", &err),
                     LOOM_ENOTFOUND);
    has(err.message, "org.loom.nothing");
    loom_mock_host_free(h);
}
END_TEST

START_TEST(bad_manifests_are_named)
{
    loom_mock_host *h = loom_mock_host_new();
    loom_error err = {0};
    ck_assert_int_eq(loom_mock_host_load_manifest(h, "/nonexistent/loom/manifest.json", &err),
                     LOOM_EIO);
    has(err.message, "/nonexistent/loom/manifest.json: cannot read the manifest");
    const char *no_default = loom_test_tmpfile(
        ".json", "{\"params\": {\"k\": {\"type\": \"int\", \"doc\": \"x\"}}}");
    ck_assert_int_eq(loom_mock_host_load_manifest(h, no_default, &err), LOOM_EINVAL);
    has(err.message, "params.k.default: expected an int default");
    const char *bad_type = loom_test_tmpfile(
        ".json", "{\"params\": {\"k\": {\"type\": \"integer\", \"default\": 1}}}");
    ck_assert_int_eq(loom_mock_host_load_manifest(h, bad_type, &err), LOOM_EINVAL);
    has(err.message, "params.k.type");
    ck_assert_int_eq(loom_mock_host_load_manifest(h, loom_test_tmpfile(".json", "{"), &err),
                     LOOM_EINVAL);
    ck_assert_ptr_null(loom_mock_host_new_with_manifest("/nonexistent/loom"));
    loom_mock_host_free(h);
}
END_TEST

/* A plugin's defaults live in its param table (manifest.json says the
 * same): on a host that supplies no params it runs with them, and a value
 * outside the table's bounds fails naming the param, expected and found. */
const loom_plugin_info *loom_static_roofline(void);
START_TEST(plugins_default_from_their_table)
{
    const loom_cost_model_vtable *vt =
        (const loom_cost_model_vtable *)loom_static_roofline()->role(LOOM_ROLE_COST_MODEL);
    loom_mock_host *bare = loom_mock_host_new();
    void *self = NULL;
    loom_error err = {0};
    ck_assert_int_eq(vt->create(loom_mock_host_api(bare), loom_mock_host_ctx(bare), NULL,
                                &self, &err),
                     LOOM_OK);
    vt->destroy(self);
    self = NULL;
    loom_mock_host_set_param(bare, "gemm_efficiency_scale", "3");
    ck_assert_int_eq(vt->create(loom_mock_host_api(bare), loom_mock_host_ctx(bare), NULL,
                                &self, &err),
                     LOOM_EINVAL);
    ck_assert_str_eq(err.message, "roofline: params.gemm_efficiency_scale: expected a number "
                                  "in [0, 2], found 3");
    ck_assert_ptr_null(self);
    loom_mock_host_free(bare);
    loom_mock_host *h = loom_test_mock_host(loom_static_roofline());
    ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h), NULL, &self,
                                &err),
                     LOOM_OK);
    vt->destroy(self);
    loom_mock_host_free(h);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("mock_manifest");
    TCase *tc = tcase_create("mock");
    tcase_add_test(tc, defaults_match_the_real_host);
    tcase_add_test(tc, set_params_win_and_defaults_stay);
    tcase_add_test(tc, bad_manifests_are_named);
    tcase_add_test(tc, plugins_default_from_their_table);
    suite_add_tcase(su, tc);
    return loom_test_main(su);
}
