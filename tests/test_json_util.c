/* test_json_util.c - JSON reading: syntax errors with line/column, typed
 * getters with JSON paths, unknown-field rejection, limits. */
#include <float.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "testutil.h"
#include <loom/sys/json.h>
#include <loom/sys/util.h>
#include "base.h"

/* Parses `text` as file "in.json"; fails the test on error. */
static cJSON *parse_ok(const char *text)
{
    cJSON *root = NULL;
    loom_error err = {0};
    int rc = loom_json_parse("in.json", text, strlen(text), &root, &err);
    ck_assert_msg(rc == LOOM_OK, "parse failed: %s", err.message);
    return root;
}

/* Parses `text` expecting failure; returns the message in err. */
static int parse_fail(const char *text, loom_error *err)
{
    cJSON *root = NULL;
    int rc = loom_json_parse("in.json", text, strlen(text), &root, err);
    ck_assert_ptr_null(root);
    return rc;
}

START_TEST(syntax_error_line_column)
{
    loom_error err = {0};
    /* The stray 'x' is on line 3, column 8. */
    ck_assert_int_eq(parse_fail("{\n  \"a\": 1,\n  \"b\": x\n}\n", &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "in.json:3:8: malformed JSON: unexpected 'x'");
    ck_assert_int_eq(err.code, LOOM_EINVAL);
}
END_TEST

START_TEST(truncated_document)
{
    loom_error err = {0};
    ck_assert_int_eq(parse_fail("{\n  \"a\": [1, 2", &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "in.json:2:13: malformed JSON: unexpected end of input");
}
END_TEST

START_TEST(trailing_garbage_and_empty)
{
    loom_error err = {0};
    ck_assert_int_eq(parse_fail("{} }", &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "in.json:1:4: malformed JSON: unexpected '}'");
    ck_assert_int_eq(parse_fail(" \n ", &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "in.json:2:2: malformed JSON: empty document");
}
END_TEST

START_TEST(non_finite_and_duplicates)
{
    loom_error err = {0};
    ck_assert_int_eq(parse_fail("{\"a\": [0, 1e999]}", &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message,
                     "in.json: a[1]: expected a finite number, found a number out of range");
    ck_assert_int_eq(parse_fail("{\"m\": {\"k\": 1, \"k\": 2}}", &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "in.json: m: expected unique field names, found \"k\" twice");
}
END_TEST

START_TEST(subnormal_numbers_rejected)
{
    loom_error err = {0};
    ck_assert_int_eq(parse_fail("{\"efficiency\": {\"gemm\": 1e-320}}", &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "in.json: efficiency.gemm: expected 0 or a number of magnitude "
                                  "at least 2.22507e-308, found 9.99989e-321 (a subnormal number, "
                                  "too small to compute with)");
    ck_assert_int_eq(parse_fail("[-4e-320]", &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "in.json: [0]: expected 0 or"));
    /* 0, -0 and the smallest normal number are fine */
    cJSON_Delete(parse_ok("[0, -0, 2.2250738585072014e-308, -1e-300]"));
}
END_TEST

START_TEST(escaped_names_and_one_line_messages)
{
    char buf[64];
    ck_assert_str_eq(loom_escape("vit\nloom: ok\x1b[31m\"\\\t\r\x7f\xc3\xa9", buf, sizeof buf),
                     "vit\\nloom: ok\\x1b[31m\\\"\\\\\\t\\r\\x7f\\xc3\\xa9");
    ck_assert_str_eq(loom_escape("plain-name_1.0", buf, sizeof buf), "plain-name_1.0");
    ck_assert_str_eq(loom_escape(NULL, buf, sizeof buf), "");
    /* too long: cut with "..." inside the buffer */
    char small[8];
    ck_assert_str_eq(loom_escape("abcdefghij", small, sizeof small), "abcd...");
    ck_assert_str_eq(loom_escape("abcdefg", small, sizeof small), "abcdefg");
    ck_assert_str_eq(loom_escape("\n\n\n\n", small, sizeof small), "\\n\\n...");
    /* every message is one line: control characters escaped, UTF-8 kept */
    loom_error err = {0};
    loom_set_error(&err, LOOM_EINVAL, "f.json: name: found \"%s\" (%s)", "a\nb\x1b[0m",
                   "\xe2\x80\x94 ok");
    ck_assert_str_eq(err.message, "f.json: name: found \"a\\nb\\x1b[0m\" (\xe2\x80\x94 ok)");
    /* C1 controls and malformed UTF-8 are escaped too */
    loom_set_error(&err, LOOM_EINVAL, "%s|%s", "\xc2\x9b" "31m", "\xff\xfe");
    ck_assert_str_eq(err.message, "\\xc2\\x9b31m|\\xff\\xfe");
}
END_TEST

START_TEST(special_files_refused)
{
    loom_error err = {0};
    int fd = 7;
    ck_assert_int_eq(loom_open_input("/dev/null", &fd, &err), LOOM_EIO);
    ck_assert_int_eq(fd, -1);
    ck_assert_str_eq(err.message,
                     "/dev/null: cannot read: expected a regular file, found a character device");
    cJSON *root = NULL;
    ck_assert_int_eq(loom_json_load("/tmp", &root, &err), LOOM_EIO);
    ck_assert_str_eq(err.message, "/tmp: cannot read: expected a regular file, found a directory");
    char dir[] = "/tmp/loom-json-XXXXXX", fifo[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(fifo, sizeof fifo, "%s/f.json", dir);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    char *text = NULL;
    /* returns at once: the open does not wait for a writer */
    ck_assert_int_eq(loom_read_file(fifo, &text, NULL, &err), LOOM_EIO);
    ck_assert_ptr_null(text);
    ck_assert_ptr_nonnull(strstr(err.message, "f.json: cannot read: expected a regular file, "
                                              "found a FIFO (named pipe)"));
    unlink(fifo);
    rmdir(dir);
    const char *path = loom_test_tmpfile(".json", "{\"a\": 1}");
    ck_assert_int_eq(loom_open_input(path, &fd, &err), LOOM_OK);
    ck_assert_int_ge(fd, 0);
    close(fd);
}
END_TEST

START_TEST(int_getter)
{
    cJSON *root = parse_ok("{\"m\": {\"n\": 4, \"f\": 1.5, \"s\": \"x\", \"big\": 7}}");
    const cJSON *m = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_json_get_object("in.json", root, "", "m", 1, &m, &err), LOOM_OK);
    int64_t v = -1;
    ck_assert_int_eq(loom_json_get_int("in.json", m, "m", "n", 1, 0, 10, &v, &err), LOOM_OK);
    ck_assert_int_eq(v, 4);
    ck_assert_int_eq(loom_json_get_int("in.json", m, "m", "f", 1, 0, 3600000, &v, &err),
                     LOOM_EINVAL);
    ck_assert_str_eq(err.message, "in.json: m.f: expected an integer in [0, 3600000], found 1.5");
    ck_assert_int_eq(loom_json_get_int("in.json", m, "m", "s", 1, INT64_MIN, INT64_MAX, &v, &err),
                     LOOM_EINVAL);
    ck_assert_str_eq(err.message, "in.json: m.s: expected an integer, found \"x\"");
    ck_assert_int_eq(loom_json_get_int("in.json", m, "m", "big", 1, 1, INT64_MAX, &v, &err),
                     LOOM_OK);
    ck_assert_int_eq(v, 7);
    ck_assert_int_eq(loom_json_get_int("in.json", m, "m", "big", 1, 8, INT64_MAX, &v, &err),
                     LOOM_EINVAL);
    ck_assert_str_eq(err.message, "in.json: m.big: expected an integer >= 8, found 7");
    /* Absent and optional: value untouched. */
    v = 42;
    ck_assert_int_eq(loom_json_get_int("in.json", m, "m", "zz", 0, 0, 1, &v, &err), LOOM_OK);
    ck_assert_int_eq(v, 42);
    ck_assert_int_eq(loom_json_get_int("in.json", m, "m", "zz", 1, 0, 1, &v, &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message,
                     "in.json: m.zz: expected an integer in [0, 1], found nothing (missing field)");
    cJSON_Delete(root);
}
END_TEST

START_TEST(other_getters)
{
    cJSON *root = parse_ok("{\"d\": 2.5, \"b\": true, \"s\": \"hi\", \"a\": [1], \"o\": {}}");
    loom_error err = {0};
    double d = 0;
    ck_assert_int_eq(loom_json_get_double("f", root, "", "d", 1, 0, 3, &d, &err), LOOM_OK);
    ck_assert_double_eq(d, 2.5);
    ck_assert_int_eq(loom_json_get_double("f", root, "", "d", 1, 0, 1, &d, &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "f: d: expected a number in [0, 1], found 2.5");
    ck_assert_int_eq(loom_json_get_double("f", root, "", "s", 1, -DBL_MAX, DBL_MAX, &d, &err),
                     LOOM_EINVAL);
    ck_assert_str_eq(err.message, "f: s: expected a number, found \"hi\"");
    int b = 0;
    ck_assert_int_eq(loom_json_get_bool("f", root, "", "b", 1, &b, &err), LOOM_OK);
    ck_assert_int_eq(b, 1);
    ck_assert_int_eq(loom_json_get_bool("f", root, "", "d", 1, &b, &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "f: d: expected true or false, found 2.5");
    const char *s = NULL;
    ck_assert_int_eq(loom_json_get_string("f", root, "", "s", 1, &s, &err), LOOM_OK);
    ck_assert_str_eq(s, "hi");
    ck_assert_int_eq(loom_json_get_string("f", root, "", "a", 1, &s, &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "f: a: expected a string, found an array");
    const cJSON *o = NULL;
    ck_assert_int_eq(loom_json_get_array("f", root, "", "a", 1, &o, &err), LOOM_OK);
    ck_assert_int_eq(cJSON_GetArraySize(o), 1);
    ck_assert_int_eq(loom_json_get_array("f", root, "", "o", 1, &o, &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "f: o: expected an array, found an object");
    ck_assert_int_eq(loom_json_get_object("f", root, "", "missing", 0, &o, &err), LOOM_OK);
    ck_assert_ptr_null(o);
    cJSON_Delete(root);
}
END_TEST

START_TEST(check_keys_and_paths)
{
    cJSON *root = parse_ok("{\"a\": 1, \"bogus\": 2}");
    loom_error err = {0};
    static const char *const allowed[] = {"a", "b", "c", NULL};
    ck_assert_int_eq(loom_json_check_keys("f.json", root, "modules[1]", allowed, &err),
                     LOOM_EINVAL);
    ck_assert_str_eq(err.message,
                     "f.json: modules[1]: unknown field \"bogus\" (expected one of: a, b, c)");
    static const char *const all[] = {"a", "bogus", NULL};
    ck_assert_int_eq(loom_json_check_keys("f.json", root, "", all, &err), LOOM_OK);
    cJSON_Delete(root);

    char buf[64];
    loom_json_path_key(buf, sizeof buf, "pipeline[2]", "params");
    ck_assert_str_eq(buf, "pipeline[2].params");
    loom_json_path_key(buf, sizeof buf, "", "seed");
    ck_assert_str_eq(buf, "seed");
    loom_json_path_index(buf, sizeof buf, "modules", 1);
    ck_assert_str_eq(buf, "modules[1]");
    loom_json_path_key(buf, 8, "abcdefgh", "ijk");
    ck_assert_str_eq(buf, "abcdefg");
}
END_TEST

START_TEST(type_names)
{
    cJSON *root = parse_ok("[1, \"s\", true, false, null, [], {}]");
    static const char *const want[] = {"a number", "a string", "true", "false",
                                       "null", "an array", "an object"};
    int i = 0;
    for (const cJSON *it = root->child; it; it = it->next, i++)
        ck_assert_str_eq(loom_json_type_name(it), want[i]);
    ck_assert_int_eq(i, 7);
    ck_assert_str_eq(loom_json_type_name(NULL), "nothing");
    cJSON_Delete(root);
}
END_TEST

START_TEST(load_files)
{
    loom_error err = {0};
    cJSON *root = NULL;
    const char *p = loom_test_tmpfile(".json", "{\"x\": [1, 2, 3]}");
    ck_assert_int_eq(loom_json_load(p, &root, &err), LOOM_OK);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(root, "x")), 3);
    cJSON_Delete(root);
    remove(p);

    ck_assert_int_eq(loom_json_load("/nonexistent/loom.json", &root, &err), LOOM_EIO);
    ck_assert_ptr_nonnull(strstr(err.message, "/nonexistent/loom.json: cannot open"));

    p = loom_test_tmpfile(".json", "[1,\n2,\n,]");
    ck_assert_int_eq(loom_json_load(p, &root, &err), LOOM_EINVAL);
    char want[4200];
    snprintf(want, sizeof want, "%s:3:1: malformed JSON: unexpected ','", p);
    ck_assert_str_eq(err.message, want);
    remove(p);

    char *text = NULL;
    size_t len = 0;
    p = loom_test_tmpfile(".txt", "abc");
    ck_assert_int_eq(loom_read_file(p, &text, &len, &err), LOOM_OK);
    ck_assert_uint_eq(len, 3);
    ck_assert_str_eq(text, "abc");
    free(text);
    remove(p);
}
END_TEST

START_TEST(nul_byte_rejected)
{
    loom_error err = {0};
    cJSON *root = NULL;
    static const char text[] = "{\"a\":\n 1}\0{}";
    ck_assert_int_eq(loom_json_parse("in.json", text, sizeof text - 1, &root, &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "in.json:2:4: malformed JSON: unexpected NUL byte");
}
END_TEST

START_TEST(parse_slice_of_buffer)
{
    /* Only the first len bytes count; nothing past them is read. */
    static const char buf[] = "{\"a\": [1, 2]}{\"b\": 3}";
    cJSON *root = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_json_parse("in.json", buf, 13, &root, &err), LOOM_OK);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(root, "a")), 2);
    cJSON_Delete(root);
    ck_assert_int_eq(loom_json_parse("in.json", buf, 12, &root, &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "in.json:1:13: malformed JSON: unexpected end of input");
    ck_assert_int_eq(loom_json_parse("in.json", buf, 14, &root, &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "in.json:1:14: malformed JSON: unexpected '{'");
    ck_assert_int_eq(loom_json_parse("in.json", "[1,}", 4, &root, &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "in.json:1:4: malformed JSON: unexpected '}'");
}
END_TEST

/* Builds the suite. */
/* Byte counts with units, as --memory-cap takes them. */
START_TEST(sizes_with_units)
{
    double b = 0;
    ck_assert_int_eq(loom_parse_bytes("80GiB", &b), 0);
    ck_assert_double_eq(b, 85899345920.0);
    ck_assert_int_eq(loom_parse_bytes("80GB", &b), 0);
    ck_assert_double_eq(b, 8e10);
    ck_assert_int_eq(loom_parse_bytes("1.5tib", &b), 0);
    ck_assert_double_eq(b, 1649267441664.0);
    ck_assert_int_eq(loom_parse_bytes("512MiB", &b), 0);
    ck_assert_double_eq(b, 536870912.0);
    ck_assert_int_eq(loom_parse_bytes("85899345920", &b), 0);
    ck_assert_double_eq(b, 85899345920.0);
    ck_assert_int_eq(loom_parse_bytes("64B", &b), 0);
    ck_assert_double_eq(b, 64.0);
    const char *bad[] = {"", "GiB", "-1GiB", "80XB", "80 GiB", "1e400", "nan", "80G", NULL};
    for (int i = 0; bad[i]; i++)
        ck_assert_msg(loom_parse_bytes(bad[i], &b) == -1, "accepted '%s'", bad[i]);
}
END_TEST

static Suite *json_suite(void)
{
    Suite *s = suite_create("json_util");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, syntax_error_line_column);
    tcase_add_test(tc, truncated_document);
    tcase_add_test(tc, trailing_garbage_and_empty);
    tcase_add_test(tc, non_finite_and_duplicates);
    tcase_add_test(tc, subnormal_numbers_rejected);
    tcase_add_test(tc, escaped_names_and_one_line_messages);
    tcase_add_test(tc, special_files_refused);
    tcase_add_test(tc, int_getter);
    tcase_add_test(tc, other_getters);
    tcase_add_test(tc, check_keys_and_paths);
    tcase_add_test(tc, type_names);
    tcase_add_test(tc, load_files);
    tcase_add_test(tc, nul_byte_rejected);
    tcase_add_test(tc, parse_slice_of_buffer);
    tcase_add_test(tc, sizes_with_units);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(json_suite());
}
