/* test_manifest.c - plugin manifest parsing: every field of a good
 * manifest, and the error (status, JSON path or line:column, expected vs
 * found) for each kind of malformed manifest. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include <loom/sys/registry.h>
#include "registry_priv.h"
#include "ctx.h"

/* Parses a manifest expecting failure with `code`; returns the message
 * (static buffer). */
static const char *parse_fail(const char *path, int code)
{
    static loom_error err;
    loom_plugin_manifest m;
    memset(&err, 0, sizeof err);
    int rc = loom_parse_plugin_manifest(path, &m, &err);
    loom_plugin_manifest_clear(&m);
    ck_assert_msg(rc == code, "%s: status %d, expected %d (%s)", path, rc, code,
                  err.message);
    ck_assert_int_eq(err.code, code);
    return err.message;
}

/* Asserts that msg contains "<path>: <tail>" exactly. */
static void expect_msg(const char *msg, const char *path, const char *tail)
{
    char want[4600];
    snprintf(want, sizeof want, "%s: %s", path, tail);
    ck_assert_str_eq(msg, want);
}

/* A minimal manifest with `extra` spliced in after "version". */
static const char *tmp_manifest(const char *extra, const char *binary,
                                const char *provides)
{
    char text[4096];
    snprintf(text, sizeof text,
             "{\"loom_plugin\": 1, \"id\": \"t.x\", \"version\": \"1.0.0\", %s"
             "\"abi\": 1, \"binary\": \"%s\", \"provides\": %s}",
             extra, binary,
             provides ? provides
                      : "{\"role\": \"ranker\", \"role_version\": 1, \"name\": \"x\"}");
    return loom_test_tmpfile(".json", text);
}

START_TEST(good_manifest_fields)
{
    loom_plugin_manifest m;
    loom_error err = {0};
    const char *path = loom_test_src("tests/fixtures/good-rank/manifest.json");
    ck_assert_int_eq(loom_parse_plugin_manifest(path, &m, &err), LOOM_OK);
    ck_assert_str_eq(m.id, "fixture.good-rank");
    ck_assert_str_eq(m.version, "1.2.0");
    ck_assert_int_eq(m.abi, 1);
    ck_assert_str_eq(m.entry, LOOM_PLUGIN_ENTRY_SYMBOL);
    ck_assert_str_eq(m.role, "ranker");
    ck_assert_uint_eq(m.role_version, 1);
    ck_assert_str_eq(m.name, "good-rank");
    ck_assert_int_eq(m.thread_safe, 1);
    char *dir = realpath(loom_test_src("tests/fixtures/good-rank"), NULL);
    char want[4200];
    ck_assert_str_eq(m.dir, dir);
    snprintf(want, sizeof want, "%s/manifest.json", dir);
    ck_assert_str_eq(m.manifest_path, want);
    snprintf(want, sizeof want, "%s/fixture-good-rank.so", dir);
    ck_assert_str_eq(m.binary_path, want);
    free(dir);

    ck_assert_int_eq(m.n_params, 6);
    const loom_param_spec *p = m.params;
    ck_assert_str_eq(p[0].name, "budget_ms");
    ck_assert_int_eq(p[0].type, LOOM_PARAM_INT);
    ck_assert_int_eq(p[0].def.i, 1000);
    ck_assert(p[0].has_min && p[0].has_max);
    ck_assert_double_eq(p[0].min, 0);
    ck_assert_double_eq(p[0].max, 3600000);
    ck_assert_str_eq(p[0].doc, "search time budget");
    ck_assert_str_eq(p[1].name, "mode");
    ck_assert_int_eq(p[1].type, LOOM_PARAM_ENUM);
    ck_assert_int_eq(p[1].n_values, 2);
    ck_assert_str_eq(p[1].values[0], "fast");
    ck_assert_str_eq(p[1].values[1], "exact");
    ck_assert_str_eq(p[1].def.s, "fast");
    ck_assert_int_eq(p[2].type, LOOM_PARAM_DOUBLE);
    ck_assert_double_eq(p[2].def.d, 1.0);
    ck_assert(p[2].has_min && !p[2].has_max);
    ck_assert_int_eq(p[3].type, LOOM_PARAM_BOOL);
    ck_assert_int_eq(p[3].def.i, 1);
    ck_assert_int_eq(p[4].type, LOOM_PARAM_STRING);
    ck_assert_str_eq(p[4].def.s, "");
    ck_assert_str_eq(p[4].def.name, "file");
    loom_plugin_manifest_clear(&m);
    ck_assert_ptr_null(m.id);
}
END_TEST

START_TEST(truncated_gives_line_column)
{
    const char *path = loom_test_src("tests/fixtures/bad-manifests/truncated.json");
    const char *msg = parse_fail(path, LOOM_EINVAL);
    char want[4200];
    snprintf(want, sizeof want, "%s:6:1: malformed JSON: unexpected end of input", path);
    ck_assert_str_eq(msg, want);
}
END_TEST

START_TEST(field_errors_name_json_paths)
{
    static const struct {
        const char *file, *tail;
    } cases[] = {
        {"wrong-type.json", "abi: expected an integer in [1, 2147483647], found \"1\""},
        {"missing-field.json",
         "binary: expected a string, found nothing (missing field)"},
        {"bad-binary.json",
         "binary: expected a file name inside the plugin folder, found a path with a "
         "'..' component (\"../elsewhere/loom-evil.so\")"},
        {"bad-default.json",
         "params.depth.default: expected an integer in [0, 3], found 5"},
        {"bad-enum.json",
         "params.mode.default: expected one of the listed values, found \"slow\""},
        {"unknown-field.json",
         "unknown field \"licence\" (expected one of: loom_plugin, id, version, abi, "
         "binary, entry, description, thread_safe, provides, params)"},
        {"bad-role.json",
         "provides.role: expected one of cost_model, partitioner, ranker, interleaver, "
         "memory_tuner, found \"scheduler\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char rel[256];
        snprintf(rel, sizeof rel, "tests/fixtures/bad-manifests/%s", cases[i].file);
        const char *path = loom_test_src(rel);
        expect_msg(parse_fail(path, LOOM_EINVAL), path, cases[i].tail);
    }
}
END_TEST

START_TEST(binary_must_be_plain_name)
{
    const char *p = tmp_manifest("", "/usr/lib/x.so", NULL);
    expect_msg(parse_fail(p, LOOM_EINVAL), p,
               "binary: expected a file name inside the plugin folder, found an "
               "absolute path (\"/usr/lib/x.so\")");
    remove(p);
    p = tmp_manifest("", "sub/x.so", NULL);
    expect_msg(parse_fail(p, LOOM_EINVAL), p,
               "binary: expected a file name inside the plugin folder, found a path "
               "with '/' (\"sub/x.so\")");
    remove(p);
    p = tmp_manifest("", "..", NULL);
    ck_assert_ptr_nonnull(strstr(parse_fail(p, LOOM_EINVAL), "'..' component"));
    remove(p);
}
END_TEST

START_TEST(top_level_checks)
{
    const char *p = loom_test_tmpfile(".json", "{\"loom_plugin\": 2}");
    expect_msg(parse_fail(p, LOOM_EINVAL), p,
               "loom_plugin: expected 1 (the manifest format version), found 2");
    remove(p);
    p = loom_test_tmpfile(".json", "[1]");
    expect_msg(parse_fail(p, LOOM_EINVAL), p, "(document): expected an object, found an array");
    remove(p);
    p = loom_test_tmpfile(".json",
                          "{\"loom_plugin\": 1, \"id\": \"org loom\", \"version\": \"1.0.0\"}");
    expect_msg(parse_fail(p, LOOM_EINVAL), p,
               "id: expected 1-100 characters from [A-Za-z0-9._-], found \"org loom\"");
    remove(p);
    p = loom_test_tmpfile(".json",
                          "{\"loom_plugin\": 1, \"id\": \"a\", \"version\": \"1.0\"}");
    expect_msg(parse_fail(p, LOOM_EINVAL), p,
               "version: expected MAJOR.MINOR.PATCH (e.g. \"1.0.0\"), found \"1.0\"");
    remove(p);
    p = tmp_manifest("\"entry\": \"9lives\", ", "x.so", NULL);
    expect_msg(parse_fail(p, LOOM_EINVAL), p, "entry: expected a C identifier, found \"9lives\"");
    remove(p);
    p = tmp_manifest("\"thread_safe\": \"yes\", ", "x.so", NULL);
    expect_msg(parse_fail(p, LOOM_EINVAL), p, "thread_safe: expected true or false, found \"yes\"");
    remove(p);
    p = tmp_manifest("", "x.so", "{\"role\": \"ranker\", \"name\": \"x\"}");
    expect_msg(parse_fail(p, LOOM_EINVAL), p,
               "provides.role_version: expected an integer in [1, 4294967295], found "
               "nothing (missing field)");
    remove(p);
    p = tmp_manifest("", "x.so", "{\"role\": \"ranker\", \"role_version\": 1, \"name\": \"x\", \"v\": 1}");
    expect_msg(parse_fail(p, LOOM_EINVAL), p,
               "provides: unknown field \"v\" (expected one of: role, role_version, name)");
    remove(p);
    ck_assert_ptr_nonnull(strstr(parse_fail("/nonexistent/manifest.json", LOOM_EIO),
                                 "/nonexistent/manifest.json: cannot open"));
}
END_TEST

START_TEST(optional_fields_default)
{
    loom_plugin_manifest m;
    loom_error err = {0};
    const char *p = tmp_manifest("", "x.so", NULL);
    ck_assert_int_eq(loom_parse_plugin_manifest(p, &m, &err), LOOM_OK);
    ck_assert_str_eq(m.entry, "loom_plugin_entry");
    ck_assert_str_eq(m.description, "");
    ck_assert_int_eq(m.thread_safe, 0);
    ck_assert_int_eq(m.n_params, 0);
    ck_assert_str_eq(m.dir, "/tmp");
    ck_assert_str_eq(m.binary_path, "/tmp/x.so");
    loom_plugin_manifest_clear(&m);
    remove(p);
}
END_TEST

START_TEST(param_spec_errors)
{
    static const struct {
        const char *params, *tail;
    } cases[] = {
        {"{\"a\": {\"type\": \"double\", \"default\": 1}}",
         "params.a.type: expected one of int, float, bool, string, enum, found \"double\""},
        {"{\"a\": {\"type\": \"float\", \"default\": 1, \"min\": 2, \"max\": 1}}",
         "params.a.max: expected a number >= min (2), found 1"},
        {"{\"a\": {\"type\": \"int\", \"default\": 1, \"min\": 0.5}}",
         "params.a.min: expected an integer, found 0.5"},
        {"{\"a\": {\"type\": \"bool\", \"default\": true, \"min\": 0}}",
         "params.a.min: expected no \"min\" for a param of type bool, found one"},
        {"{\"a\": {\"type\": \"int\", \"default\": 1, \"values\": [1]}}",
         "params.a.values: expected no \"values\" for a param of type int, found one"},
        {"{\"a\": {\"type\": \"enum\", \"values\": [\"x\", \"x\"], \"default\": \"x\"}}",
         "params.a.values[1]: expected a value not listed before, found \"x\" again"},
        {"{\"a\": {\"type\": \"enum\", \"values\": [], \"default\": \"x\"}}",
         "params.a.values: expected a non-empty array of strings, found an empty array"},
        {"{\"a\": {\"type\": \"string\"}}",
         "params.a.default: expected a string, found nothing (missing field)"},
        {"{\"a\": {\"type\": \"float\", \"default\": 0.5, \"min\": 1}}",
         "params.a.default: expected a number >= 1, found 0.5"},
        {"{\"a\": {\"type\": \"int\", \"default\": 1, \"unit\": \"ms\"}}",
         "params.a: unknown field \"unit\" (expected one of: type, default, min, max, "
         "values, doc)"},
        {"{\"9a\": {\"type\": \"int\", \"default\": 1}}",
         "params.9a: expected a param name of letters, digits, '_' and '-' starting "
         "with a letter or '_', found \"9a\""},
        {"{\"a\": 3}", "params.a: expected an object, found a number"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char extra[1024];
        snprintf(extra, sizeof extra, "\"params\": %s, ", cases[i].params);
        const char *p = tmp_manifest(extra, "x.so", NULL);
        expect_msg(parse_fail(p, LOOM_EINVAL), p, cases[i].tail);
        remove(p);
    }
}
END_TEST

START_TEST(versions)
{
    unsigned long v[3];
    ck_assert_int_eq(loom_version_parse("1.10.3", v), LOOM_OK);
    ck_assert_uint_eq(v[0], 1);
    ck_assert_uint_eq(v[1], 10);
    ck_assert_uint_eq(v[2], 3);
    ck_assert_int_eq(loom_version_parse("01.0.0", v), LOOM_EINVAL);
    ck_assert_int_eq(loom_version_parse("1.0.0-rc1", v), LOOM_EINVAL);
    ck_assert_int_eq(loom_version_parse("1..0", v), LOOM_EINVAL);
    ck_assert_int_eq(loom_version_parse("", v), LOOM_EINVAL);
    ck_assert_int_gt(loom_version_compare("1.10.0", "1.9.9"), 0);
    ck_assert_int_lt(loom_version_compare("0.9.0", "1.0.0"), 0);
    ck_assert_int_eq(loom_version_compare("2.0.1", "2.0.1"), 0);
}
END_TEST

START_TEST(role_names)
{
    ck_assert_int_eq(loom_role_index("cost_model"), 0);
    ck_assert_int_eq(loom_role_index("partitioner"), 1);
    ck_assert_int_eq(loom_role_index("ranker"), 2);
    ck_assert_int_eq(loom_role_index("interleaver"), 3);
    ck_assert_int_eq(loom_role_index("memory_tuner"), 4);
    ck_assert_int_eq(loom_role_index("scheduler"), -1);
    ck_assert_int_eq(loom_role_index(NULL), -1);
    ck_assert_str_eq(loom_role_name(3), "interleaver");
    ck_assert_ptr_null(loom_role_name(5));
    ck_assert_str_eq(loom_param_type_name(LOOM_PARAM_DOUBLE), "float");
}
END_TEST

/* Builds the suite. */
static Suite *manifest_suite(void)
{
    Suite *s = suite_create("manifest");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, good_manifest_fields);
    tcase_add_test(tc, truncated_gives_line_column);
    tcase_add_test(tc, field_errors_name_json_paths);
    tcase_add_test(tc, binary_must_be_plain_name);
    tcase_add_test(tc, top_level_checks);
    tcase_add_test(tc, optional_fields_default);
    tcase_add_test(tc, param_spec_errors);
    tcase_add_test(tc, versions);
    tcase_add_test(tc, role_names);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(manifest_suite());
}
