/* test_small_things.c - what a new user notices in the first hour:
 * `loom help plan`, a planner manifest named like a preset, did-you-mean
 * for commands, plugin ids, presets, manifests and files, no empty table
 * header above a failed plan, the P2P transfers of trace.json as flow
 * events (Perfetto's arrows between ranks), and a warning for an unknown
 * LOOM_LOG value. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

#define has loom_test_has

START_TEST(help_names_a_command)
{
    char *out = loom_test_cli_expect(0, "help plan");
    ck_assert_msg(!strncmp(out, "usage: loom plan [options]\n", 27), "%s", out);
    free(out);
    out = loom_test_cli_expect(0, "help ab");
    has(out, "usage: loom ab A.json B.json");
    free(out);
    out = loom_test_cli_expect(2, "help plna");
    has(out, "loom help: unknown command 'plna'; did you mean 'plan'?\n");
    free(out);
    out = loom_test_cli_expect(2, "plna");
    has(out, "loom: unknown command 'plna'; did you mean 'plan'?\n");
    free(out);
}
END_TEST

/* `--manifest pipeweaver` is examples/manifests/pipeweaver.json, from any
 * folder (the source tree's copy when the working folder has none). */
START_TEST(manifest_by_name)
{
    char *out = loom_test_cli_expect(0, "plan --manifest megatron-balanced --model vlm-s "
                                        "--iterations 1 --quiet --json");
    char *file = loom_test_cli_expect(0, "plan --manifest %s --model vlm-s --iterations 1 "
                                         "--quiet --json",
                                      loom_test_src("examples/manifests/megatron-balanced.json"));
    has(out, "\"makespan_ms\"");
    /* the same plan either way, but for the plan time */
    const char *a = strstr(out, "\"makespan_ms\""), *b = strstr(file, "\"makespan_ms\"");
    ck_assert_int_eq(strncmp(a, b, 40), 0);
    free(out);
    free(file);
    out = loom_test_cli_expect(0, "validate pipeweaver");
    free(out);
    out = loom_test_cli_expect(0, "ab megatron-1f1b megatron-balanced --model vlm-s "
                                  "--iterations 1 --quiet --markdown -");
    has(out, "## loom ab: `megatron-1f1b` (A) vs `megatron-balanced` (B)");
    free(out);
    out = loom_test_cli_expect(2, "plan --manifest pipewaever --quiet");
    has(out, "loom plan: manifest \"pipewaever\": expected a shipped manifest name "
             "(examples/manifests/NAME.json) or a path to a planner manifest, found neither; "
             "did you mean pipeweaver?\n");
    free(out);
}
END_TEST

START_TEST(did_you_mean)
{
    char *out = loom_test_cli_expect(2, "plan --model vlm-ss --quiet");
    has(out, "found neither; did you mean vlm-s?\n");
    free(out);
    out = loom_test_cli_expect(2, "plan --cluster a10 --quiet");
    has(out, "found neither; did you mean a100?\n");
    free(out);
    out = loom_test_cli_expect(2, "plan --use ranker=mctss --quiet");
    has(out, "loom plan: --use ranker=mctss: no ranker plugin \"mctss\"; did you mean \"mcts\"? "
             "(available: ");
    free(out);
    out = loom_test_cli_expect(2, "plugins inspect org.loom.mctss");
    has(out, "no plugin \"org.loom.mctss\" (by id or name); did you mean \"org.loom.mcts\"?");
    free(out);
    out = loom_test_cli_expect(2, "plan --manifest %s --quiet",
                               loom_test_src("examples/manifests/pipewaever.json"));
    has(out, "pipewaever.json: cannot open: No such file or directory; did you mean ");
    has(out, "examples/manifests/pipeweaver.json?\n");
    free(out);
    /* nothing close: no suggestion */
    out = loom_test_cli_expect(2, "plan --model zzzzzzzz --quiet");
    ck_assert_ptr_null(strstr(out, "did you mean"));
    free(out);
}
END_TEST

/* A plan that fails in its first iteration prints the error, not the
 * header of an empty table. */
START_TEST(failed_plan_prints_no_header)
{
    char *out = loom_test_cli_expect(1, "plan --model %s --iterations 1",
                                     loom_test_src("examples/models/hf/qwen2-vl-7b.json"));
    has(out, "cannot fit the memory cap");
    ck_assert_ptr_null(strstr(out, "makespan_ms"));
    free(out);
    out = loom_test_cli_expect(0, "plan --model vlm-s --iterations 1");
    has(out, "iter   makespan_ms   bubble      mfu    plan_ms  candidate\n0 ");
    free(out);
}
END_TEST

/* vlm-s under megatron-1f1b: pp 4, 16 microbatches, one chunk per rank,
 * so each microbatch crosses 3 rank boundaries forward and 3 backward:
 * 2 x 3 x 16 = 96 transfers, each an "s" on the sender and an "f" on the
 * receiver one rank further (forward) or back (backward), later. */
START_TEST(trace_has_p2p_flows)
{
    char dir[256];
    loom_test_mkdtemp(dir, sizeof dir, "flows");
    char *out = loom_test_cli_expect(0, "plan --model vlm-s --iterations 1 --quiet --out %s/p",
                                     dir);
    free(out);
    char path[512];
    snprintf(path, sizeof path, "%s/p/trace.json", dir);
    char *text = loom_test_slurp(path);
    cJSON *root = cJSON_Parse(text);
    ck_assert_ptr_nonnull(root);
    cJSON *ev = cJSON_GetObjectItem(root, "traceEvents");
    static const cJSON *start[200];
    int n_s = 0, n_f = 0;
    cJSON *e;
    cJSON_ArrayForEach(e, ev)
    {
        const char *ph = cJSON_GetObjectItem(e, "ph")->valuestring;
        if (strcmp(ph, "s") && strcmp(ph, "f"))
            continue;
        ck_assert_str_eq(cJSON_GetObjectItem(e, "cat")->valuestring, "p2p");
        int id = cJSON_GetObjectItem(e, "id")->valueint;
        ck_assert(id >= 1 && id < 200);
        if (!strcmp(ph, "s")) {
            ck_assert_ptr_null(start[id]);
            start[id] = e;
            n_s++;
            continue;
        }
        n_f++;
        const cJSON *s = start[id];
        ck_assert_ptr_nonnull(s); /* the start comes first */
        ck_assert_str_eq(cJSON_GetObjectItem(e, "bp")->valuestring, "e");
        int from = cJSON_GetObjectItem(s, "pid")->valueint;
        int to = cJSON_GetObjectItem(e, "pid")->valueint;
        ck_assert_int_eq(abs(to - from), 1);
        ck_assert(cJSON_GetObjectItem(e, "ts")->valuedouble >
                  cJSON_GetObjectItem(s, "ts")->valuedouble);
        ck_assert(cJSON_GetObjectItem(cJSON_GetObjectItem(e, "args"), "transfer_ms")->valuedouble >
                  0);
    }
    ck_assert_int_eq(n_s, 96);
    ck_assert_int_eq(n_f, 96);
    cJSON_Delete(root);
    free(text);
    loom_test_rmdir(dir);
}
END_TEST

/* LOOM_LOG takes error, warn, info or debug; anything else warns once
 * (with the closest level) and keeps warn. */
START_TEST(unknown_loom_log_warns)
{
    char cmd[1024], *out = NULL;
    snprintf(cmd, sizeof cmd, "LOOM_LOG=debg '%s' plan --model vlm-s --iterations 2 --quiet",
             loom_test_bin("bin/loom"));
    ck_assert_int_eq(loom_test_run(cmd, &out), 0);
    const char *w = "loom: warning: LOOM_LOG=debg: expected error, warn, info or debug (did you "
                    "mean debug?); using warn\n";
    const char *first = strstr(out, w);
    ck_assert_msg(first != NULL, "%s", out);
    ck_assert_ptr_null(strstr(first + 1, w)); /* once */
    free(out);
    snprintf(cmd, sizeof cmd, "LOOM_LOG=error '%s' plan --model vlm-s --iterations 1 --quiet",
             loom_test_bin("bin/loom"));
    ck_assert_int_eq(loom_test_run(cmd, &out), 0);
    ck_assert_ptr_null(strstr(out, "LOOM_LOG"));
    free(out);
}
END_TEST

/* README's calibrate example as printed: the H200 preset's residuals over
 * the measured vlm-s layers, rms 11.61 %, pass at --max-residual 15 and
 * fail (exit 1) at the default 10, as its comment says. */
START_TEST(readme_calibrate_example)
{
    const char *args = "calibrate --cluster h200 --model %s --profile %s --fit none";
    char fmt[512];
    snprintf(fmt, sizeof fmt, "%s --max-residual 15", args);
    const char *model = loom_test_src("examples/models/vlm-s.json");
    const char *csv = loom_test_src("tests/fidelity/measured/h200/profile-vlm-s.csv");
    char *out = loom_test_cli_expect(0, fmt, model, csv);
    has(out, "44 measurements, 0 factors, 0 steps: rms residual 11.61 %");
    free(out);
    out = loom_test_cli_expect(1, args, model, csv);
    has(out, "rms residual 11.61 %");
    free(out);
}
END_TEST

static Suite *small_suite(void)
{
    Suite *s = suite_create("small_things");
    TCase *tc = tcase_create("cli");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, help_names_a_command);
    tcase_add_test(tc, manifest_by_name);
    tcase_add_test(tc, did_you_mean);
    tcase_add_test(tc, failed_plan_prints_no_header);
    tcase_add_test(tc, trace_has_p2p_flows);
    tcase_add_test(tc, unknown_loom_log_warns);
    tcase_add_test(tc, readme_calibrate_example);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(small_suite());
}
