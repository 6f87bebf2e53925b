/*
 * test_determinism.c - the same inputs and seed give the same plan: across
 * runs of `loom plan`, and across MCTS with threads=1 and its deterministic
 * multi-threaded mode. plan.json is compared byte for byte except for the
 * value of "plan_time_ms" (wall-clock time of the search); schedule.csv,
 * trace.json and timeline.svg are compared byte for byte.
 */
#define _DEFAULT_SOURCE /* mkdtemp */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <loom/sys/json.h>
#include "testutil.h"

/* MCTS stopped by an evaluation count, never by its (huge) time budget. */
#define MCTS_ARGS                                                              \
    "--manifest '" LOOM_TEST_SOURCE_DIR "/examples/manifests/pipeweaver.json' "   \
    "--param ranker.max_evaluations=120 --param ranker.budget_ms=3600000 "     \
    "--param ranker.deterministic=true"

typedef struct outdir {
    char path[256];
} outdir;

/* A fresh empty output folder. */
static void outdir_init(outdir *o)
{
    snprintf(o->path, sizeof o->path, "/tmp/loom-determinism-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(o->path));
}

/* Removes an output folder and its files. */
static void outdir_done(const outdir *o)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", o->path);
    ck_assert_int_eq(system(cmd), 0);
}

/* Runs `loom plan <args> --out <o>` and asserts it succeeds. */
static void plan_into(const outdir *o, const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "LOOM_PLUGIN_PATH= '%s' plan --quiet %s --out '%s'",
             loom_test_bin("bin/loom"), args, o->path);
    char *out = NULL;
    int rc = loom_test_run(cmd, &out);
    ck_assert_msg(rc == 0, "exit %d\n$ %s\n%s", rc, cmd, out);
    free(out);
}

/* Reads <dir>/<name> (must exist). Caller frees. */
static char *slurp(const outdir *o, const char *name, size_t *len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", o->path, name);
    char *text = NULL;
    loom_error err = {0, ""};
    ck_assert_msg(loom_read_file(path, &text, len, &err) == LOOM_OK, "%s", err.message);
    return text;
}

/* Blanks the number after every "plan_time_ms": in place; returns how many
 * values it blanked. */
static int blank_plan_time(char *text)
{
    static const char key[] = "\"plan_time_ms\": ";
    int n = 0;
    for (char *p = strstr(text, key); p; p = strstr(p, key)) {
        p += sizeof key - 1;
        char *q = p + strspn(p, "0123456789.eE+-");
        ck_assert_ptr_ne(p, q);
        *p = '#';
        memmove(p + 1, q, strlen(q) + 1);
        n++;
    }
    return n;
}

/* Asserts that a/<name> and b/<name> hold the same bytes (plan.json: but
 * for plan_time_ms). */
static void same_file(const outdir *a, const outdir *b, const char *name)
{
    size_t la = 0, lb = 0;
    char *x = slurp(a, name, &la);
    char *y = slurp(b, name, &lb);
    if (strstr(name, "plan.json")) {
        ck_assert_int_le(blank_plan_time(x), 1);
        ck_assert_int_le(blank_plan_time(y), 1);
        la = strlen(x);
        lb = strlen(y);
        ck_assert_msg(strstr(x, "\"actions\"") != NULL, "%s/%s has no actions", a->path, name);
    }
    ck_assert_int_gt((long)la, 100);
    size_t at = 0;
    while (at < la && at < lb && x[at] == y[at])
        at++;
    ck_assert_msg(la == lb && at == la,
                  "%s differs between %s and %s at byte %zu (lengths %zu, %zu): ...%.60s... vs "
                  "...%.60s...",
                  name, a->path, b->path, at, la, lb, x + (at > 20 ? at - 20 : 0),
                  y + (at > 20 ? at - 20 : 0));
    free(x);
    free(y);
}

/* 1 when <dir>/<name> exists. */
static int present(const outdir *o, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", o->path, name);
    return access(path, F_OK) == 0;
}

/* Compares every output file of one planned iteration under `sub`;
 * schedule.csv is absent from both or the same in both (plans PyTorch's
 * rules cannot express have none). */
static void same_outputs(const outdir *a, const outdir *b, const char *sub)
{
    static const char *const files[] = {"plan.json", "schedule.csv", "trace.json",
                                        "timeline.svg"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char name[128];
        snprintf(name, sizeof name, "%s%s", sub, files[i]);
        if (i == 1) {
            ck_assert_int_eq(present(a, name), present(b, name));
            if (!present(a, name))
                continue;
        }
        same_file(a, b, name);
    }
}

START_TEST(mcts_single_thread_repeats)
{
    outdir a, b;
    outdir_init(&a);
    outdir_init(&b);
    plan_into(&a, MCTS_ARGS " --param ranker.threads=1 --iterations 1 --seed 7");
    plan_into(&b, MCTS_ARGS " --param ranker.threads=1 --iterations 1 --seed 7");
    same_outputs(&a, &b, "");
    outdir_done(&a);
    outdir_done(&b);
}
END_TEST

START_TEST(mcts_threads_do_not_change_the_plan)
{
    outdir a, b, c;
    outdir_init(&a);
    outdir_init(&b);
    outdir_init(&c);
    plan_into(&a, MCTS_ARGS " --param ranker.threads=1 --iterations 1 --seed 11");
    plan_into(&b, MCTS_ARGS " --param ranker.threads=2 --iterations 1 --seed 11");
    plan_into(&c, MCTS_ARGS " --param ranker.threads=3 --iterations 1 --seed 11");
    same_outputs(&a, &b, "");
    same_outputs(&a, &c, "");
    outdir_done(&a);
    outdir_done(&b);
    outdir_done(&c);
}
END_TEST

START_TEST(generated_workload_and_default_pipeline_repeat)
{
    outdir a, b;
    outdir_init(&a);
    outdir_init(&b);
    plan_into(&a, "--iterations 2 --seed 3 --generate image-pairs");
    plan_into(&b, "--iterations 2 --seed 3 --generate image-pairs");
    same_outputs(&a, &b, "iter-000/");
    same_outputs(&a, &b, "iter-001/");
    outdir_done(&a);
    outdir_done(&b);
}
END_TEST

START_TEST(stage_times_problem_repeats)
{
    outdir a, b;
    outdir_init(&a);
    outdir_init(&b);
    const char *args = "--stage-times '" LOOM_TEST_SOURCE_DIR
                       "/examples/stage-times/oracle-zb.json' --use interleaver=zero-bubble";
    plan_into(&a, args);
    plan_into(&b, args);
    same_outputs(&a, &b, "");
    outdir_done(&a);
    outdir_done(&b);
}
END_TEST

/* Deterministic mode (--evaluations N): every shipped planner manifest,
 * searching or not, gives byte-identical outputs run after run. */
START_TEST(every_shipped_manifest_repeats_in_evaluation_mode)
{
    static const char *const manifests[] = {
        "cornstarch", "disttrain", "entrain", "gpipe", "megatron-1f1b",
        "megatron-balanced", "oobleck", "optimus", "pipeweaver"};
    for (size_t i = 0; i < sizeof manifests / sizeof manifests[0]; i++) {
        char args[512];
        snprintf(args, sizeof args,
                 "--manifest '" LOOM_TEST_SOURCE_DIR "/examples/manifests/%s.json' "
                 "--evaluations 60 --iterations 1 --seed 5",
                 manifests[i]);
        outdir a, b;
        outdir_init(&a);
        outdir_init(&b);
        plan_into(&a, args);
        plan_into(&b, args);
        same_outputs(&a, &b, "");
        outdir_done(&a);
        outdir_done(&b);
    }
}
END_TEST

/* --evaluations N is the ranker's max_evaluations = N, deterministic, with
 * the wall clock only as a safety cap: the same plan as those params. */
START_TEST(evaluations_flag_equals_the_params)
{
    outdir a, b;
    outdir_init(&a);
    outdir_init(&b);
    plan_into(&a, MCTS_ARGS " --iterations 1 --seed 9");
    plan_into(&b, "--manifest '" LOOM_TEST_SOURCE_DIR "/examples/manifests/pipeweaver.json' "
                  "--evaluations 120 --iterations 1 --seed 9");
    same_outputs(&a, &b, "");
    outdir_done(&a);
    outdir_done(&b);
}
END_TEST

/* "max_evaluations" in a planner manifest: the ranker's params as
 * `loom validate` resolves them. */
START_TEST(manifest_max_evaluations_sets_the_ranker)
{
    const char *m = loom_test_tmpfile(".json",
        "{\"loom_planner\": 1, \"max_evaluations\": 50, \"pipeline\": ["
        "{\"role\": \"cost_model\", \"use\": \"roofline\"},"
        "{\"role\": \"partitioner\", \"use\": \"modality-aware\"},"
        "{\"role\": \"ranker\", \"use\": \"mcts\", \"params\": {\"budget_ms\": 500}},"
        "{\"role\": \"interleaver\", \"use\": \"dual-queue\"}]}");
    char cmd[1024], *out = NULL;
    snprintf(cmd, sizeof cmd, "LOOM_PLUGIN_PATH= '%s' validate '%s' 2>&1",
             loom_test_bin("bin/loom"), m);
    ck_assert_msg(loom_test_run(cmd, &out) == 0, "%s", out);
    ck_assert_ptr_nonnull(strstr(out, ": seed 1, max_evaluations 50 (deterministic), "));
    ck_assert_ptr_nonnull(strstr(out, "budget_ms=60000 "));
    ck_assert_ptr_nonnull(strstr(out, "deterministic=true max_evaluations=50"));
    free(out);
}
END_TEST

START_TEST(blanking_touches_only_plan_time)
{
    char text[] = "{\"makespan_ms\": 12.5, \"plan_time_ms\": 1774.40192800015, \"x\": 1}";
    ck_assert_int_eq(blank_plan_time(text), 1);
    ck_assert_str_eq(text, "{\"makespan_ms\": 12.5, \"plan_time_ms\": #, \"x\": 1}");
}
END_TEST

/* The determinism suite. */
static Suite *suite(void)
{
    Suite *s = suite_create("determinism");
    TCase *tc = tcase_create("plans");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, blanking_touches_only_plan_time);
    tcase_add_test(tc, mcts_single_thread_repeats);
    tcase_add_test(tc, mcts_threads_do_not_change_the_plan);
    tcase_add_test(tc, generated_workload_and_default_pipeline_repeat);
    tcase_add_test(tc, stage_times_problem_repeats);
    tcase_add_test(tc, every_shipped_manifest_repeats_in_evaluation_mode);
    tcase_add_test(tc, evaluations_flag_equals_the_params);
    tcase_add_test(tc, manifest_max_evaluations_sets_the_ranker);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(suite());
}
