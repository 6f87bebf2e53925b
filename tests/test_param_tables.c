/*
 * test_param_tables.c - a plugin's params are declared once: every shipped
 * plugin's param table (loom_plugin_info.params of its built binary) and the
 * template's say exactly what their manifest.json's "params" say (names,
 * types, defaults, bounds, enum values, docs), and rankers declare the
 * reserved budget params of <loom/ranker.h> with their types. Also
 * loom_params_read() (<loom/params.h>) on the mock host: defaults, the
 * host's values, bounds and the messages.
 */
#include <check.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <loom/loom.h>
#include <loom/mock_host.h>
#include "testutil.h"

#define REPORT_BYTES 8192

/* Appends one line to the report. */
static void note(char *rep, const char *fmt, ...) LOOM_PRINTF(2, 3);
static void note(char *rep, const char *fmt, ...)
{
    size_t n = strlen(rep);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rep + n, REPORT_BYTES - n, fmt, ap);
    va_end(ap);
    n = strlen(rep);
    if (n + 1 < REPORT_BYTES)
        strcat(rep, "\n");
}

/* Compares bound `key` ("min" / "max") of manifest param p with the table's
 * `have` (`none` when unbounded); 1 on a disagreement. */
static int bound_differs(const char *file, const char *name, const cJSON *p, const char *key,
                         double have, double none, char *rep)
{
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(p, key);
    if (!b && have == none)
        return 0;
    if (b && cJSON_IsNumber(b) && b->valuedouble == have)
        return 0;
    char want[48];
    if (b && cJSON_IsNumber(b))
        snprintf(want, sizeof want, "%.17g", b->valuedouble);
    else
        snprintf(want, sizeof want, "%s", b ? "not a number" : "none");
    if (have == none)
        note(rep, "%s: params.%s.%s: manifest %s, table none", file, name, key, want);
    else
        note(rep, "%s: params.%s.%s: manifest %s, table %.17g", file, name, key, want, have);
    return 1;
}

/* Compares the default of manifest param p with the table's; 1 on a
 * disagreement. */
static int default_differs(const char *file, const cJSON *p, const loom_param_def *d,
                           char *rep)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(p, "default");
    if (d->kind == LOOM_PARAM_KIND_BOOL && cJSON_IsBool(v) &&
        cJSON_IsTrue(v) == (d->def != 0))
        return 0;
    if ((d->kind == LOOM_PARAM_KIND_INT || d->kind == LOOM_PARAM_KIND_FLOAT) &&
        cJSON_IsNumber(v) && v->valuedouble == d->def)
        return 0;
    if ((d->kind == LOOM_PARAM_KIND_STRING || d->kind == LOOM_PARAM_KIND_ENUM) &&
        cJSON_IsString(v) && d->def_text && !strcmp(v->valuestring, d->def_text))
        return 0;
    char *text = v ? cJSON_PrintUnformatted(v) : NULL;
    if (d->kind == LOOM_PARAM_KIND_STRING || d->kind == LOOM_PARAM_KIND_ENUM)
        note(rep, "%s: params.%s.default: manifest %s, table \"%s\"", file, d->name,
             text ? text : "none", d->def_text ? d->def_text : "");
    else
        note(rep, "%s: params.%s.default: manifest %s, table %.17g", file, d->name,
             text ? text : "none", d->def);
    free(text);
    return 1;
}

/* Compares an enum's "values" with the table's "a|b|c"; 1 on a
 * disagreement. */
static int values_differ(const char *file, const cJSON *p, const loom_param_def *d,
                         char *rep)
{
    const cJSON *vs = cJSON_GetObjectItemCaseSensitive(p, "values");
    char joined[512] = "";
    const cJSON *v;
    cJSON_ArrayForEach(v, vs) {
        if (joined[0])
            strncat(joined, "|", sizeof joined - strlen(joined) - 1);
        strncat(joined, cJSON_IsString(v) ? v->valuestring : "?",
                sizeof joined - strlen(joined) - 1);
    }
    const char *have = d->kind == LOOM_PARAM_KIND_ENUM && d->values ? d->values : "";
    if (!strcmp(joined, have))
        return 0;
    note(rep, "%s: params.%s.values: manifest \"%s\", table \"%s\"", file, d->name, joined,
         have);
    return 1;
}

/* Compares manifest param p with table entry d; the number of
 * disagreements. */
static int param_differs(const char *file, const cJSON *p, const loom_param_def *d, char *rep)
{
    int bad = 0;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(p, "type");
    const char *kind = loom_param_kind_name(d->kind);
    if (!cJSON_IsString(type) || strcmp(type->valuestring, kind)) {
        note(rep, "%s: params.%s.type: manifest %s, table %s", file, d->name,
             cJSON_IsString(type) ? type->valuestring : "none", kind);
        return 1; /* the rest compares values of that type */
    }
    bad += default_differs(file, p, d, rep);
    bad += bound_differs(file, d->name, p, "min", d->min, LOOM_NO_MIN, rep);
    bad += bound_differs(file, d->name, p, "max", d->max, LOOM_NO_MAX, rep);
    bad += values_differ(file, p, d, rep);
    const cJSON *doc = cJSON_GetObjectItemCaseSensitive(p, "doc");
    const char *want = cJSON_IsString(doc) ? doc->valuestring : "";
    if (strcmp(want, d->doc ? d->doc : "")) {
        note(rep, "%s: params.%s.doc: manifest \"%s\", table \"%s\"", file, d->name, want,
             d->doc ? d->doc : "");
        bad++;
    }
    return bad;
}

/* Checks a ranker's reserved param `name` has the type ranker.h gives it. */
static int reserved_differs(const char *file, const loom_param_def *d, char *rep)
{
    int want_int = !strcmp(d->name, LOOM_RANKER_PARAM_MAX_EVALUATIONS);
    int want_bool = !strcmp(d->name, LOOM_RANKER_PARAM_DETERMINISTIC);
    int want_number = !strcmp(d->name, LOOM_RANKER_PARAM_BUDGET_MS);
    if ((want_int && d->kind != LOOM_PARAM_KIND_INT) ||
        (want_bool && d->kind != LOOM_PARAM_KIND_BOOL) ||
        (want_number && d->kind != LOOM_PARAM_KIND_INT && d->kind != LOOM_PARAM_KIND_FLOAT)) {
        note(rep, "%s: params.%s: a reserved ranker param (loom/ranker.h) must be %s, "
                  "found %s", file, d->name,
             want_int ? "int" : want_bool ? "bool" : "int or float",
             loom_param_kind_name(d->kind));
        return 1;
    }
    return 0;
}

/* Compares the manifest text `json` (read from `file`) with `table`; the
 * number of disagreements, each a line of `rep`. */
static int table_differs(const char *file, const char *json, const loom_param_def *table,
                         char *rep)
{
    cJSON *m = cJSON_Parse(json);
    if (!m) {
        note(rep, "%s: not JSON", file);
        return 1;
    }
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(m, "params");
    const cJSON *prov = cJSON_GetObjectItemCaseSensitive(m, "provides");
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(prov, "role");
    int ranker = cJSON_IsString(role) && !strcmp(role->valuestring, LOOM_ROLE_RANKER);
    int bad = 0;
    for (const loom_param_def *d = table; d && d->name; d++) {
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(params, d->name);
        if (!p) {
            note(rep, "%s: params.%s: in the table, not in the manifest", file, d->name);
            bad++;
            continue;
        }
        bad += param_differs(file, p, d, rep);
        if (ranker)
            bad += reserved_differs(file, d, rep);
    }
    const cJSON *p;
    cJSON_ArrayForEach(p, params) {
        const loom_param_def *d = table;
        while (d && d->name && strcmp(d->name, p->string))
            d++;
        if (!d || !d->name) {
            note(rep, "%s: params.%s: in the manifest, not in the table", file, p->string);
            bad++;
        }
    }
    cJSON_Delete(m);
    return bad;
}

/* The built binary of plugin folder `dir` (its manifest's "binary") and
 * its info; fails the test when it cannot be loaded. */
static const loom_plugin_info *load_info(const char *dir, const char *json)
{
    cJSON *m = cJSON_Parse(json);
    const cJSON *bin = cJSON_GetObjectItemCaseSensitive(m, "binary");
    ck_assert_msg(cJSON_IsString(bin), "plugins/%s/manifest.json: no binary", dir);
    char path[1024];
    snprintf(path, sizeof path, "%s/plugins/%s/%s", LOOM_TEST_BINARY_DIR, dir,
             bin->valuestring);
    cJSON_Delete(m);
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(lib != NULL, "%s: %s", path, dlerror());
    loom_plugin_entry_fn entry;
    *(void **)&entry = dlsym(lib, LOOM_PLUGIN_ENTRY_SYMBOL);
    ck_assert_msg(entry != NULL, "%s: no %s", path, LOOM_PLUGIN_ENTRY_SYMBOL);
    const loom_plugin_info *info = entry();
    ck_assert_msg(info->struct_size >= LOOM_STRUCT_END(loom_plugin_info, params),
                  "%s: info struct_size %u has no params member", path, info->struct_size);
    return info; /* never dlclosed, as the host does */
}

START_TEST(every_shipped_plugin_agrees)
{
    char root[1024], rep[REPORT_BYTES] = "";
    snprintf(root, sizeof root, "%s/plugins", LOOM_TEST_SOURCE_DIR);
    DIR *dir = opendir(root);
    ck_assert_ptr_nonnull(dir);
    int checked = 0, bad = 0, folders = 0;
    for (struct dirent *e; (e = readdir(dir));) {
        if (e->d_name[0] == '.')
            continue;
        char file[1300];
        snprintf(file, sizeof file, "%s/%s/manifest.json", root, e->d_name);
        if (access(file, R_OK) != 0)
            continue; /* not a plugin folder */
        char *json = loom_test_slurp(file);
        folders++;
        const loom_plugin_info *info = load_info(e->d_name, json);
        snprintf(file, sizeof file, "plugins/%s/manifest.json", e->d_name);
        bad += table_differs(file, json, info->params, rep);
        checked++;
        free(json);
    }
    closedir(dir);
    ck_assert_msg(bad == 0, "%d disagreement(s):\n%s", bad, rep);
    ck_assert_int_gt(checked, 0);
    ck_assert_int_eq(checked, folders);
    printf("param_tables: %d shipped plugins agree with their manifests\n", checked);
}
END_TEST

const loom_plugin_info *loom_static_reverse(void);
START_TEST(the_template_agrees)
{
    char file[1024], rep[REPORT_BYTES] = "";
    snprintf(file, sizeof file, "%s/examples/plugin-template/manifest.json",
             LOOM_TEST_SOURCE_DIR);
    char *json = loom_test_slurp(file);
    ck_assert_ptr_nonnull(json);
    ck_assert_ptr_nonnull(loom_static_reverse()->params);
    int bad = table_differs("manifest.json", json, loom_static_reverse()->params, rep);
    ck_assert_msg(bad == 0, "%s", rep);
    free(json);
}
END_TEST

/* The template's create (LOOM_INSTANCE_CREATE): the table's default on a
 * bare host; a bad value fails, leaving *self untouched. */
START_TEST(the_template_creates_from_its_table)
{
    const loom_ranker_vtable *vt =
        (const loom_ranker_vtable *)loom_static_reverse()->role(LOOM_ROLE_RANKER);
    loom_mock_host *h = loom_mock_host_new();
    loom_error err = {0};
    void *self = NULL;
    ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h), NULL, &self, &err),
                     LOOM_OK);
    ck_assert_ptr_nonnull(self);
    vt->destroy(self);
    self = NULL;
    loom_mock_host_set_param(h, "evaluate", "maybe");
    ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h), NULL, &self, &err),
                     LOOM_EINVAL);
    ck_assert_str_eq(err.message, "reverse: params.evaluate: expected true or false, found a "
                                  "value of another type (LOOM_EINVAL)");
    ck_assert_ptr_null(self);
    loom_mock_host_free(h);
}
END_TEST

/* The check names each disagreement: file, param, field, manifest vs
 * table. */
START_TEST(a_disagreement_is_named)
{
    typedef struct conf {
        int64_t budget_ms;
        double det;
        const char *order;
    } conf;
    static const loom_param_def table[] = {
        LOOM_INT_PARAM(conf, budget_ms, 1000, 1, LOOM_NO_MAX, "time budget"),
        LOOM_FLOAT_PARAM_AT("deterministic", conf, det, 0, 0, 1, "x"),
        LOOM_ENUM_PARAM(conf, order, "lpt", "lpt|fifo", "group order"),
        LOOM_PARAM_END};
    const char *json =
        "{\"provides\": {\"role\": \"ranker\"}, \"params\": {"
        "\"budget_ms\": {\"type\": \"int\", \"default\": 500, \"min\": 1, \"max\": 9,"
        " \"doc\": \"time\"},"
        "\"deterministic\": {\"type\": \"float\", \"default\": 0, \"min\": 0, \"max\": 1,"
        " \"doc\": \"x\"},"
        "\"order\": {\"type\": \"enum\", \"values\": [\"lpt\", \"spt\"], \"default\": \"lpt\","
        " \"doc\": \"group order\"},"
        "\"seed\": {\"type\": \"int\", \"default\": 0, \"doc\": \"\"}}}";
    char rep[REPORT_BYTES] = "";
    ck_assert_int_eq(table_differs("m.json", json, table, rep), 6);
    ck_assert_str_eq(rep,
                     "m.json: params.budget_ms.default: manifest 500, table 1000\n"
                     "m.json: params.budget_ms.max: manifest 9, table none\n"
                     "m.json: params.budget_ms.doc: manifest \"time\", table \"time budget\"\n"
                     "m.json: params.deterministic: a reserved ranker param (loom/ranker.h) "
                     "must be bool, found float\n"
                     "m.json: params.order.values: manifest \"lpt|spt\", table \"lpt|fifo\"\n"
                     "m.json: params.seed: in the manifest, not in the table\n");
}
END_TEST

/* A config struct with one member of every kind. */
typedef struct rd_conf {
    int32_t small;
    int64_t big;
    double ratio;
    int flag;
    const char *path;
    const char *order;
} rd_conf;

static const loom_param_def rd_table[] = {
    LOOM_INT_PARAM(rd_conf, small, 3, 1, 64, "an int32 member"),
    LOOM_INT_PARAM(rd_conf, big, 5000000000LL, 0, LOOM_NO_MAX, "an int64 member"),
    LOOM_FLOAT_PARAM(rd_conf, ratio, 0.25, 0, 1, "a ratio"),
    LOOM_BOOL_PARAM(rd_conf, flag, 1, "a flag"),
    LOOM_STRING_PARAM(rd_conf, path, "none", "a path"),
    LOOM_ENUM_PARAM(rd_conf, order, "lpt", "lpt|fifo|spt", "an order"),
    LOOM_PARAM_END};

/* loom_params_read on a host that supplies no params: the defaults. */
START_TEST(read_gives_the_table_defaults)
{
    loom_mock_host *h = loom_mock_host_new();
    rd_conf c;
    memset(&c, 0, sizeof c);
    loom_error err = {0};
    ck_assert_int_eq(loom_params_read(loom_mock_host_api(h), loom_mock_host_ctx(h), "t",
                                      rd_table, &c, &err),
                     LOOM_OK);
    ck_assert_int_eq(c.small, 3);
    ck_assert_int_eq(c.big, 5000000000LL);
    ck_assert_double_eq(c.ratio, 0.25);
    ck_assert_int_eq(c.flag, 1);
    ck_assert_str_eq(c.path, "none");
    ck_assert_str_eq(c.order, "lpt");
    loom_mock_host_free(h);
}
END_TEST

/* The host's values win; each bad one fails naming the param, expected
 * and found. */
START_TEST(read_checks_the_host_values)
{
    static const char *const cases[][3] = {
        {"small", "65", "t: params.small: expected an integer in [1, 64], found 65"},
        {"big", "-1", "t: params.big: expected an integer >= 0, found -1"},
        {"ratio", "1.5", "t: params.ratio: expected a number in [0, 1], found 1.5"},
        {"small", "many", "t: params.small: expected an integer in [1, 64], found a value "
                          "of another type (LOOM_EINVAL)"},
        {"flag", "2", "t: params.flag: expected true or false, found a value of another "
                      "type (LOOM_EINVAL)"},
        {"order", "lifo", "t: params.order: expected one of \"lpt\", \"fifo\", \"spt\", "
                          "found \"lifo\""}};
    loom_error err = {0};
    rd_conf c;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        loom_mock_host *h = loom_mock_host_new();
        loom_mock_host_set_param(h, cases[i][0], cases[i][1]);
        ck_assert_int_eq(loom_params_read(loom_mock_host_api(h), loom_mock_host_ctx(h), "t",
                                          rd_table, &c, &err),
                         LOOM_EINVAL);
        ck_assert_str_eq(err.message, cases[i][2]);
        loom_mock_host_free(h);
    }
    loom_mock_host *h = loom_mock_host_new();
    loom_mock_host_set_param(h, "small", "64");
    loom_mock_host_set_param(h, "big", "7");
    loom_mock_host_set_param(h, "ratio", "1");
    loom_mock_host_set_param(h, "flag", "false");
    loom_mock_host_set_param(h, "path", "a.csv");
    loom_mock_host_set_param(h, "order", "spt");
    ck_assert_int_eq(loom_params_read(loom_mock_host_api(h), loom_mock_host_ctx(h), "t",
                                      rd_table, &c, &err),
                     LOOM_OK);
    ck_assert_int_eq(c.small, 64);
    ck_assert_int_eq(c.big, 7);
    ck_assert_double_eq(c.ratio, 1.0);
    ck_assert_int_eq(c.flag, 0);
    ck_assert_str_eq(c.path, "a.csv");
    ck_assert_str_eq(c.order, "spt");
    loom_mock_host_free(h);
}
END_TEST

/* The host's evaluation-mode budget (ranker.h): ten times the value, at
 * least 60 s, at most the declared max. */
START_TEST(int_list_reads_and_names_the_bad_entry)
{
    /* loom_param_int_list: entries in [lo, hi] with spaces around them,
     * the count even past cap, and the first bad entry by number and text */
    int64_t v[3] = {0, 0, 0};
    const char *bad = NULL;
    size_t len = 0;
    ck_assert_int_eq(loom_param_int_list("12, 4,8", 1, 100, v, 3, &bad, &len), 3);
    ck_assert_int_eq(v[0], 12);
    ck_assert_int_eq(v[1], 4);
    ck_assert_int_eq(v[2], 8);
    ck_assert_int_eq(loom_param_int_list("1,2,3,4", 1, 100, v, 2, &bad, &len), 4);
    ck_assert_int_eq(v[1], 2);
    ck_assert_int_eq(v[2], 8); /* past cap: not written */
    ck_assert_int_eq(loom_param_int_list("-3,-1", -5, 5, v, 3, &bad, &len), 2);
    ck_assert_int_eq(v[0], -3);
    static const struct {
        const char *text;
        int64_t rc;
        const char *entry;
    } cases[] = {
        {"1,,2", -2, ""},      {"4x", -1, "4x"},        {"7, 0 ,4", -2, "0"},
        {"1,2,", -3, ""},      {"", -1, ""},            {"+5", -1, "+5"},
        {"1,101", -2, "101"},  {"99999999999999999999", -1, "99999999999999999999"},
        {"1, 2 3", -2, "2 3"}, {"-1", -1, "-1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_assert_int_eq(loom_param_int_list(cases[i].text, 1, 100, v, 3, &bad, &len),
                         cases[i].rc);
        ck_assert_int_eq(len, strlen(cases[i].entry));
        ck_assert(strncmp(bad, cases[i].entry, len) == 0);
    }
}
END_TEST

START_TEST(safety_budget_follows_ranker_h)
{
    ck_assert_double_eq(loom_ranker_safety_budget_ms(1000, LOOM_NO_MAX), 60000);
    ck_assert_double_eq(loom_ranker_safety_budget_ms(30000, LOOM_NO_MAX), 300000);
    ck_assert_double_eq(loom_ranker_safety_budget_ms(30000, 100000), 100000);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("param_tables");
    TCase *tc = tcase_create("tables");
    tcase_add_test(tc, every_shipped_plugin_agrees);
    tcase_add_test(tc, the_template_agrees);
    tcase_add_test(tc, the_template_creates_from_its_table);
    tcase_add_test(tc, a_disagreement_is_named);
    tcase_add_test(tc, read_gives_the_table_defaults);
    tcase_add_test(tc, read_checks_the_host_values);
    tcase_add_test(tc, safety_budget_follows_ranker_h);
    tcase_add_test(tc, int_list_reads_and_names_the_bad_entry);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
