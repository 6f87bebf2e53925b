/* test_cli_plugins.c - `loom plugins list|inspect` and `loom validate`
 * run as a subprocess: output, JSON shape and exit codes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "testutil.h"

/* Runs `loom <args>` with stdout only (stderr dropped), for JSON. */
static int loom_stdout(const char *args, char **out)
{
    char cmd[8192];
    /* a subshell, so the 2>&1 loom_test_run appends does not undo 2>/dev/null */
    snprintf(cmd, sizeof cmd, "(%s/bin/loom %s 2>/dev/null)", LOOM_TEST_BINARY_DIR, args);
    return loom_test_run(cmd, out);
}

/* Asserts that `text` contains `frag`. */
static void has(const char *text, const char *frag)
{
    ck_assert_msg(strstr(text, frag) != NULL, "missing \"%s\" in:\n%s", frag, text);
}

#define FIX LOOM_TEST_BINARY_DIR "/tests/fixtures"
#define PLANNERS FIX "/planners/"

START_TEST(list_text)
{
    char *out = NULL;
    ck_assert_int_eq(loom_test_cli("plugins list --path " FIX, &out), 0);
    has(out, "ID");
    has(out, "STATUS");
    has(out, "fixture.good-rank");
    has(out, "fixture-good-rank.so  found");
    has(out, "ranker");
    has(out, "1.2.0");
    ck_assert_ptr_null(strstr(out, "loaded"));
    free(out);
}
END_TEST

START_TEST(list_load_status)
{
    char *out = NULL;
    /* The fixtures include plugins that fail: the listing is printed, each
     * failure is named on stderr, and the exit code says so. */
    ck_assert_int_eq(loom_test_cli("plugins list --load --path " FIX, &out), 3);
    has(out, "fixture-good-rank.so  loaded");
    has(out, "failed: fixture.abi: ");
    has(out, "ABI mismatch: host ABI 1, plugin ABI 2");
    has(out, "failed: plugin fixture.init-fails: cannot start: calibration table missing");
    has(out, "loom plugins: fixture.init-fails failed to load: plugin fixture.init-fails: "
             "cannot start: calibration table missing");
    free(out);
    /* A folder of plugins that all load exits 0. */
    ck_assert_int_eq(loom_test_cli("plugins list --load --path " FIX "/good-rank --path " FIX
                          "/good-mem", &out), 0);
    ck_assert_ptr_null(strstr(out, "failed to load"));
    free(out);
    /* inspect --load of a failing plugin: its status, and exit code 3. */
    ck_assert_int_eq(loom_test_cli("plugins inspect fixture.init-fails --load --path " FIX, &out),
                     3);
    has(out, "status:       failed: plugin fixture.init-fails: cannot start");
    has(out, "loom plugins: fixture.init-fails failed to load");
    ck_assert_ptr_null(strstr(out, "fixture.abi failed"));
    free(out);
    /* The trust waiver is accepted by plugins and validate alike. */
    ck_assert_int_eq(loom_test_cli("plugins list --allow-untrusted-plugins --path " FIX "/good-rank",
                          &out), 0);
    has(out, "fixture.good-rank");
    free(out);
    ck_assert_int_eq(loom_test_cli("validate --help", &out), 0);
    has(out, "--allow-untrusted-plugins");
    free(out);
}
END_TEST

/* Copies the good-rank fixture into folder `dir` with its manifest made
 * mode `mode` or replaced by `text` (when not NULL). */
static void copy_good_rank(const char *dir, unsigned mode, const char *text)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cp -r '%s/good-rank' '%s/p' && chmod %o '%s/p/manifest.json'",
             FIX, dir, mode, dir);
    ck_assert_int_eq(loom_test_run(cmd, NULL), 0);
    if (text) {
        snprintf(cmd, sizeof cmd, "%s/p/manifest.json", dir);
        FILE *f = fopen(cmd, "w");
        ck_assert_ptr_nonnull(f);
        fputs(text, f);
        ck_assert_int_eq(fclose(f), 0);
    }
}

START_TEST(list_load_fails_on_a_skipped_manifest)
{
    /* a check fails when what it checks fails: a malformed or untrusted
     * manifest is skipped with a warning by a listing (exit 0), but makes
     * `plugins list --load` exit 3 */
    const unsigned modes[] = {0644, 0646, 0644};
    const char *texts[] = {NULL, NULL, "{\"loom_plugin\": 1, \"id\": "};
    const int load_codes[] = {0, 3, 3};
    for (int i = 0; i < 3; i++) {
        char dir[256], args[1024], *out = NULL;
        loom_test_mkdtemp(dir, sizeof dir, "skipped");
        copy_good_rank(dir, modes[i], texts[i]);
        snprintf(args, sizeof args, "plugins list --path %s/p", dir);
        ck_assert_int_eq(loom_test_cli(args, &out), 0);
        free(out);
        snprintf(args, sizeof args, "plugins list --load --path %s/p", dir);
        int rc = loom_test_cli(args, &out);
        ck_assert_msg(rc == load_codes[i], "case %d: exit %d:\n%s", i, rc, out);
        if (load_codes[i])
            has(out, "loom plugins: 1 plugin manifest(s) could not be checked: malformed or "
                     "untrusted (see the warnings above)");
        free(out);
        loom_test_rmdir(dir);
    }
}
END_TEST

START_TEST(list_json)
{
    char *out = NULL;
    ck_assert_int_eq(loom_stdout("plugins list --json --load --path=" FIX, &out), 3);
    cJSON *arr = cJSON_Parse(out);
    ck_assert_msg(cJSON_IsArray(arr), "not a JSON array:\n%s", out);
    int seen = 0;
    for (cJSON *o = arr->child; o; o = o->next) {
        static const char *const keys[] = {"id", "role", "name", "version", "path", "status"};
        for (int k = 0; k < 6; k++)
            ck_assert(cJSON_IsString(cJSON_GetObjectItem(o, keys[k])));
        const char *id = cJSON_GetObjectItem(o, "id")->valuestring;
        const char *status = cJSON_GetObjectItem(o, "status")->valuestring;
        if (!strcmp(id, "fixture.good-rank")) {
            seen++;
            ck_assert_str_eq(cJSON_GetObjectItem(o, "role")->valuestring, "ranker");
            ck_assert_str_eq(cJSON_GetObjectItem(o, "name")->valuestring, "good-rank");
            ck_assert_str_eq(cJSON_GetObjectItem(o, "version")->valuestring, "1.2.0");
            has(cJSON_GetObjectItem(o, "path")->valuestring,
                "/tests/fixtures/good-rank/fixture-good-rank.so");
            ck_assert_str_eq(status, "loaded");
        } else if (!strcmp(id, "fixture.signature")) {
            seen++;
            has(status, "failed: fixture.signature: ");
            char want[64];
            snprintf(want, sizeof want, "pointer_bytes host %u, plugin 4",
                     (unsigned)sizeof(void *));
            has(status, want);
        }
    }
    ck_assert_int_eq(seen, 2);
    cJSON_Delete(arr);
    free(out);
}
END_TEST

START_TEST(inspect)
{
    char *out = NULL;
    ck_assert_int_eq(loom_test_cli("plugins inspect fixture.good-rank --path " FIX, &out), 0);
    has(out, "id:           fixture.good-rank\n");
    has(out, "role:         ranker (role_version 1)\n");
    has(out, "thread_safe:  yes\n");
    has(out, "status:       found\n");
    has(out, "  budget_ms (int) default 1000, min 0, max 3600000\n      search time budget\n");
    has(out, "  mode (enum) default fast, values fast, exact\n");
    has(out, "  alpha (float) default 1, min 0\n");
    has(out, "  file (string) default \"\"\n");
    free(out);

    /* By provides.name, loading, as JSON. */
    ck_assert_int_eq(loom_stdout("plugins inspect good-rank --load --json --path " FIX, &out), 0);
    cJSON *o = cJSON_Parse(out);
    ck_assert_ptr_nonnull(o);
    ck_assert_str_eq(cJSON_GetObjectItem(o, "id")->valuestring, "fixture.good-rank");
    ck_assert_str_eq(cJSON_GetObjectItem(o, "status")->valuestring, "loaded");
    ck_assert_str_eq(cJSON_GetObjectItem(o, "entry")->valuestring, "loom_plugin_entry");
    cJSON *params = cJSON_GetObjectItem(o, "params");
    ck_assert_int_eq(cJSON_GetArraySize(params), 6);
    cJSON *b = cJSON_GetArrayItem(params, 0);
    ck_assert_str_eq(cJSON_GetObjectItem(b, "name")->valuestring, "budget_ms");
    ck_assert_str_eq(cJSON_GetObjectItem(b, "type")->valuestring, "int");
    ck_assert_double_eq(cJSON_GetObjectItem(b, "default")->valuedouble, 1000);
    ck_assert_double_eq(cJSON_GetObjectItem(b, "max")->valuedouble, 3600000);
    cJSON *mode = cJSON_GetArrayItem(params, 1);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(mode, "values")), 2);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(params, 3), "default")));
    cJSON_Delete(o);
    free(out);

    ck_assert_int_eq(loom_test_cli("plugins inspect no.such.plugin --path " FIX, &out), 2);
    has(out, "no plugin \"no.such.plugin\"");
    free(out);
}
END_TEST

START_TEST(usage_and_help)
{
    char *out = NULL;
    ck_assert_int_eq(loom_test_cli("plugins --help", &out), 0);
    has(out, "usage: loom plugins list");
    free(out);
    ck_assert_int_eq(loom_test_cli("plugins list --help", &out), 0);
    has(out, "--load");
    free(out);
    ck_assert_int_eq(loom_test_cli("validate --help", &out), 0);
    has(out, "usage: loom validate MANIFEST");
    free(out);
    ck_assert_int_eq(loom_test_cli("plugins", &out), 2);
    free(out);
    ck_assert_int_eq(loom_test_cli("plugins frobnicate", &out), 2);
    has(out, "unknown subcommand 'frobnicate'");
    free(out);
    ck_assert_int_eq(loom_test_cli("plugins list --bogus", &out), 2);
    has(out, "loom plugins list: unknown option '--bogus'");
    free(out);
    ck_assert_int_eq(loom_test_cli("plugins inspect", &out), 2);
    free(out);
    ck_assert_int_eq(loom_test_cli("validate", &out), 2);
    has(out, "expected a planner manifest");
    free(out);
    ck_assert_int_eq(loom_test_cli("plugins list --path /nonexistent/dir", &out), 2);
    has(out, "plugin directory /nonexistent/dir: expected a directory, found nothing");
    free(out);
}
END_TEST

START_TEST(validate_good)
{
    char *out = NULL;
    ck_assert_int_eq(loom_test_cli("validate " PLANNERS "good.json", &out), 0);
    has(out, "pipeline good (");
    has(out, "  [2] ranker       fixture.good-rank 1.2.0 ");
    has(out, "params: budget_ms=250 mode=exact alpha=1");
    has(out, "good.json: valid (5 steps)");
    free(out);
    ck_assert_int_eq(loom_test_cli("validate " PLANNERS "good.json --param ranker.budget_ms=9 "
                          "--use memory_tuner=good-mem",
                          &out),
                     0);
    has(out, "params: budget_ms=9 mode=exact");
    free(out);
}
END_TEST

START_TEST(validate_errors)
{
    char *out = NULL;
    ck_assert_int_eq(loom_test_cli("validate " PLANNERS "bad-param-type.json", &out), 2);
    has(out, "pipeline[2].params.budget_ms: expected an integer in [0, 3600000], found \"fast\"");
    free(out);
    ck_assert_int_eq(loom_test_cli("validate " PLANNERS "abi.json", &out), 3);
    has(out, "fixture.abi: ");
    has(out, "host ABI 1, plugin ABI 2");
    free(out);
    ck_assert_int_eq(loom_test_cli("validate " PLANNERS "missing-member.json", &out), 3);
    has(out, "interleaver vtable member interleave is NULL");
    free(out);
    ck_assert_int_eq(loom_test_cli("validate " PLANNERS "create-fails.json", &out), 3);
    has(out, "plugin fixture.good-rank: create refused: fail_create is internal");
    free(out);
    ck_assert_int_eq(loom_test_cli("validate " PLANNERS "good.json --param ranker.fail_create=input", &out),
                     2);
    has(out, "plugin fixture.good-rank: create refused: fail_create is input");
    free(out);
    ck_assert_int_eq(loom_test_cli("validate " PLANNERS "bad-order.json", &out), 2);
    has(out, "pipeline[1].role: expected \"partitioner\", found \"ranker\"");
    free(out);
    ck_assert_int_eq(loom_test_cli("validate " PLANNERS "unknown-plugin.json", &out), 2);
    has(out, "pipeline[3].use: no interleaver plugin \"nope\" (available: ");
    has(out, "good-inter (fixture.good-inter)");
    free(out);
    ck_assert_int_eq(loom_test_cli("validate " PLANNERS "good.json --param ranker.budget_ms=abc", &out),
                     2);
    /* a bad value from the command line names the flag typed, not the manifest */
    has(out, "loom validate: --param ranker.budget_ms=abc: expected an integer in [0, 3600000], "
             "found \"abc\"");
    free(out);
    ck_assert_int_eq(loom_test_cli("validate " PLANNERS "good.json --use sched=x", &out), 2);
    free(out);
    ck_assert_int_eq(loom_test_cli("validate /nonexistent/planner.json", &out), 2);
    has(out, "/nonexistent/planner.json: cannot open");
    free(out);
    const char *p = loom_test_tmpfile(".json", "{\"loom_planner\": 1,\n \"pipeline\": [}\n");
    char args[4200];
    snprintf(args, sizeof args, "validate %s", p);
    ck_assert_int_eq(loom_test_cli(args, &out), 2);
    has(out, ":2:15: malformed JSON: unexpected '}'");
    free(out);
    remove(p);
}
END_TEST

/* Builds the suite. */
/* The option conventions every command shares: --name=value, one name for
 * the plugin folder option (--plugin-path, --path as an alias), sizes with
 * units. */
START_TEST(shared_option_conventions)
{
    char *out = NULL;
    ck_assert_int_eq(loom_test_cli("plan --model=vlm-s --iterations=1 --memory-cap=80GiB --quiet --json",
                          &out), 0);
    has(out, "\"makespan_ms\"");
    has(out, "\"layout\": {\"tp\": 4, \"cp\": 1, \"pp\": 4, \"dp\": 1, \"vpp\": 1, "
             "\"microbatches\": 16, \"micro_batch_size\": 1, \"global_batch\": 16, "
             "\"gpus\": 16}");
    free(out);
    ck_assert_int_eq(loom_test_cli("validate " PLANNERS "good.json --plugin-path=" PLANNERS "..", &out),
                     0);
    has(out, "valid (5 steps)");
    free(out);
    ck_assert_int_eq(loom_test_cli("validate " PLANNERS "good.json --path " PLANNERS "..", &out),
                     0);
    free(out);
    ck_assert_int_eq(loom_test_cli("plugins list --plugin-path " PLANNERS "..", &out), 0);
    has(out, "fixture.good-rank");
    free(out);
    ck_assert_int_eq(loom_test_cli("plugins inspect good-rank --path=" PLANNERS "..", &out), 0);
    has(out, "fixture.good-rank");
    free(out);
    ck_assert_int_eq(loom_test_cli("plan --iterations=1 --quiet --json --path " PLANNERS "..", &out),
                     0);
    free(out);
    ck_assert_int_eq(loom_test_cli("plan --memory-cap=80XB", &out), 2);
    has(out, "--memory-cap: expected a size such as 80GiB");
    free(out);
    ck_assert_int_eq(loom_test_cli("ab " PLANNERS "good.json " PLANNERS "good.json --threshold=2", &out),
                     2);
    has(out, "--threshold");
    free(out);
}
END_TEST

static Suite *cli_suite(void)
{
    Suite *s = suite_create("cli_plugins");
    TCase *tc = tcase_create("cli");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, list_text);
    tcase_add_test(tc, list_load_status);
    tcase_add_test(tc, list_load_fails_on_a_skipped_manifest);
    tcase_add_test(tc, list_json);
    tcase_add_test(tc, inspect);
    tcase_add_test(tc, usage_and_help);
    tcase_add_test(tc, validate_good);
    tcase_add_test(tc, validate_errors);
    tcase_add_test(tc, shared_option_conventions);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(cli_suite());
}
