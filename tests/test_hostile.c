/* test_hostile.c - plugins that misbehave without crashing, and output that
 * cannot be written: a plugin that forks a process outliving the run (the
 * run still ends at once with its own result and the process group is
 * gone afterwards), a plugin that prints to stdout (the JSON stays
 * intact; the chatter goes to stderr), a plugin that calls exit() (exit
 * code 3 naming it, in-process, isolated and under `validate` and `ab`),
 * stdout on a full device or closed (exit 2 for plan, plugins, validate
 * and ab), and `--out` folders that appear as a whole (a rerun with fewer
 * iterations, a failed write, two runs sharing one folder). */
#define _DEFAULT_SOURCE /* mkdtemp */
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include <loom/sys/json.h>
#include "testutil.h"

#define PLANNERS LOOM_TEST_BINARY_DIR "/tests/isolation-fixtures/planners/"
#define PROBLEM "--model vlm-s --parallel tp=4,pp=4,mb=8"

/* Asserts that `text` contains `frag`. */
static void has(const char *text, const char *frag)
{
    ck_assert_msg(strstr(text, frag) != NULL, "missing \"%s\" in:\n%s", frag, text);
}

/* The suite runner's pid: every folder a test makes is named after it,
 * so the runner removes them even after a test failed half-way. */
static long owner;

static void note_owner(void)
{
    owner = (long)getpid();
}

/* Removes every folder the tests made (unchecked teardown, in the runner). */
static void remove_all(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf /tmp/loom-hostile-%ld-*", owner);
    if (system(cmd) != 0)
        fprintf(stderr, "test_hostile: could not remove /tmp/loom-hostile-%ld-*\n", owner);
}

/* A fresh folder under /tmp (static storage per call slot). */
static const char *fresh_dir(void)
{
    static char dirs[4][64];
    static int next;
    char *d = dirs[next++ % 4];
    snprintf(d, 64, "/tmp/loom-hostile-%ld-XXXXXX", owner);
    ck_assert_ptr_nonnull(mkdtemp(d));
    return d;
}

/* rm -rf dir. */
static void remove_dir(const char *dir)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* Whole content of a file (malloc'd; "" when it cannot be read). */
static char *slurp(const char *path)
{
    char *text = NULL;
    loom_error err = {0, ""};
    if (loom_read_file(path, &text, NULL, &err) != LOOM_OK) {
        text = malloc(1);
        text[0] = 0;
    }
    return text;
}

/* Runs `loom <args>` with stderr, and stdout unless `redirect` says
 * otherwise (">/dev/full", ">&-"), in files; returns the exit code
 * (-1 when it did not exit) and the two texts (malloc'd). */
static int run(const char *args, const char *redirect, char **out, char **err)
{
    const char *dir = fresh_dir();
    char cmd[8192];
    snprintf(cmd, sizeof cmd,
             "LOOM_PLUGIN_PATH= ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0\" "
             "'%s/bin/loom' %s %s 2>'%s/err'",
             LOOM_TEST_BINARY_DIR, args, redirect ? redirect : "", dir);
    if (!redirect) {
        size_t n = strlen(cmd);
        snprintf(cmd + n, sizeof cmd - n, " >'%s/out'", dir);
    }
    int st = system(cmd);
    char path[128];
    snprintf(path, sizeof path, "%s/out", dir);
    *out = slurp(path);
    snprintf(path, sizeof path, "%s/err", dir);
    *err = slurp(path);
    remove_dir(dir);
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* ---- a plugin that forks ------------------------------------------------ */

/* Plans with fork-rank in `mode` under --isolate and checks the run ends
 * with its own result and leaves no process of the child's group. */
static void check_forking_plugin(const char *mode)
{
    const char *dir = fresh_dir();
    char args[2048], pid_file[128];
    snprintf(pid_file, sizeof pid_file, "%s/pid", dir);
    snprintf(args, sizeof args,
             "plan --manifest " PLANNERS "fork.json " PROBLEM " --iterations 2 --isolate "
             "--timeout-ms 30000 --json --quiet --param ranker.mode=%s --param ranker.pid_file=%s",
             mode, pid_file);
    char *out, *err;
    int code = run(args, NULL, &out, &err);
    char *pids = slurp(pid_file);
    long pid = 0, pgid = 0;
    int got = sscanf(pids, "%ld %ld", &pid, &pgid);
    free(pids);
    int gone = got == 2 ? loom_test_group_gone(pgid, 20) : 1;
    remove_dir(dir);
    ck_assert_msg(code == 0, "mode %s: exit %d, expected 0\n%s", mode, code, err);
    ck_assert_msg(got == 2, "mode %s: the plugin did not record the forked process", mode);
    ck_assert_msg(gone, "mode %s: process group %ld still had processes after the run", mode,
                  pgid);
    cJSON *json = cJSON_Parse(out);
    ck_assert_msg(cJSON_IsObject(json), "mode %s: stdout is not one JSON object:\n%s", mode, out);
    ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(json, "makespan_ms")));
    cJSON_Delete(json);
    ck_assert_ptr_null(strstr(err, "time limit"));
    free(out);
    free(err);
}

START_TEST(a_forked_sleeper_neither_holds_the_run_nor_survives_it)
{
    check_forking_plugin("sleep");
}
END_TEST

START_TEST(a_forked_writer_neither_holds_the_run_nor_survives_it)
{
    check_forking_plugin("write");
}
END_TEST

/* ---- a plugin that prints to stdout -------------------------------------- */

START_TEST(plugin_chatter_stays_off_stdout)
{
    static const char *const modes[] = {"", " --isolate"};
    for (int m = 0; m < 2; m++) {
        char args[1024];
        snprintf(args, sizeof args,
                 "plan --manifest " PLANNERS "chatty.json " PROBLEM " --iterations 2 --json%s",
                 modes[m]);
        char *out, *err;
        ck_assert_msg(run(args, NULL, &out, &err) == 0, "%s:\n%s", args, err);
        cJSON *json = cJSON_Parse(out);
        ck_assert_msg(cJSON_IsObject(json), "%s: stdout is not one JSON object:\n%s", args, out);
        ck_assert(cJSON_IsArray(cJSON_GetObjectItem(json, "iterations")));
        cJSON_Delete(json);
        ck_assert_ptr_null(strstr(out, "chatty-rank"));
        has(err, "chatty-rank: printf in create");
        has(err, "chatty-rank: printf in rank");
        has(err, "chatty-rank: write(1) says hello");
        free(out);
        free(err);
    }
    /* the table and `validate` (create runs) keep their stdout too */
    char *out, *err;
    ck_assert_int_eq(run("plan --manifest " PLANNERS "chatty.json " PROBLEM " --iterations 2",
                         NULL, &out, &err), 0);
    ck_assert_ptr_null(strstr(out, "chatty-rank"));
    has(out, "mean iteration ");
    free(out);
    free(err);
    ck_assert_int_eq(run("validate " PLANNERS "chatty.json", NULL, &out, &err), 0);
    ck_assert_ptr_null(strstr(out, "chatty-rank:"));
    has(out, "valid (5 steps)");
    has(err, "chatty-rank: printf in create");
    free(out);
    free(err);
}
END_TEST

/* ---- stdout that cannot be written --------------------------------------- */

START_TEST(failed_writes_to_stdout_are_errors)
{
    static const char *const cmds[] = {
        "plan --iterations 1",
        "plan --iterations 1 --json",
        "plan --iterations 1 --isolate",
        "plugins list",
        "plugins list --json",
        "validate " PLANNERS "base.json",
        "ab " PLANNERS "base.json " PLANNERS "base.json " PROBLEM " --iterations 1 --quiet "
        "--markdown -",
    };
    static const char *const redirects[] = {">/dev/full", ">&-"};
    for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
        char *out, *err;
        ck_assert_msg(run(cmds[c], NULL, &out, &err) == 0, "%s:\n%s", cmds[c], err);
        ck_assert_msg(out[0] != 0, "%s printed nothing", cmds[c]);
        free(out);
        free(err);
        for (int r = 0; r < 2; r++) {
            if (r == 0 && access("/dev/full", W_OK) != 0)
                continue;
            int code = run(cmds[c], redirects[r], &out, &err);
            ck_assert_msg(code == 2, "%s %s: exit %d, expected 2\n%s", cmds[c], redirects[r], code,
                          err);
            has(err, ": cannot write to standard output: ");
            has(err, r == 0 ? "No space left on device" : "it is closed");
            free(out);
            free(err);
        }
    }
}
END_TEST

/* ---- a plugin that calls exit() -------------------------------------------- */

START_TEST(exit_in_plugin_code_is_a_plugin_error)
{
    static const struct {
        const char *args, *frag;
    } cases[] = {
        {"plan --manifest " PLANNERS "exit.json " PROBLEM " --iterations 4",
         "loom plan: plugin fixture.exit-rank called exit(0) before the command finished "
         "(pipeline[2])"},
        {"plan --manifest " PLANNERS "exit.json " PROBLEM " --iterations 4 --isolate",
         "loom plan: plugin fixture.exit-rank (pipeline[2]): the planning process exited with "
         "status 0 before finishing at iteration 2"},
        {"plan --manifest " PLANNERS "exit.json " PROBLEM " --param ranker.exit_in_create=1",
         "loom plan: plugin fixture.exit-rank called exit(0) before the command finished "
         "(pipeline[2])"},
        {"plan --manifest " PLANNERS "exit.json " PROBLEM " --param ranker.exit_in_create=1 "
         "--isolate",
         "loom plan: plugin fixture.exit-rank (pipeline[2]): the planning process exited with "
         "status 0 before finishing while opening the session"},
        {"validate " PLANNERS "exit.json --param ranker.exit_in_create=1",
         "loom validate: plugin fixture.exit-rank called exit(0) before the command "
         "finished (pipeline[2])"},
        {"ab " PLANNERS "base.json " PLANNERS "exit.json " PROBLEM " --iterations 4 --quiet "
         "--no-isolate",
         "loom ab: plugin fixture.exit-rank called exit(0) before the command finished "
         "(pipeline[2])"},
        {"ab " PLANNERS "base.json " PLANNERS "exit.json " PROBLEM " --iterations 4 --quiet",
         "plugin fixture.exit-rank (pipeline[2]): the planning process exited with status 0 "
         "before finishing at iteration 2"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out, *err;
        int code = run(cases[i].args, NULL, &out, &err);
        ck_assert_msg(code == 3, "%s: exit %d, expected 3\n%s", cases[i].args, code, err);
        has(err, cases[i].frag);
        free(out);
        free(err);
    }
    /* with --json nothing half-made reaches stdout */
    char *out, *err;
    ck_assert_int_eq(run("plan --manifest " PLANNERS "exit.json " PROBLEM " --json", NULL, &out,
                         &err), 3);
    ck_assert_str_eq(out, "");
    free(out);
    free(err);
}
END_TEST

/* ---- --out folders ----------------------------------------------------------- */

/* The entries of dir, sorted, joined by spaces (static storage). */
static const char *entries(const char *dir)
{
    static char list[4096];
    char cmd[512];
    snprintf(cmd, sizeof cmd, "ls -A '%s' | sort | tr '\\n' ' '", dir);
    char *text = NULL;
    ck_assert_int_eq(loom_test_run(cmd, &text), 0);
    snprintf(list, sizeof list, "%s", text);
    free(text);
    return list;
}

/* `loom plan` of vlm-s with `iterations` and `seed` into dir/o. */
static int plan_into(const char *dir, int iterations, int seed, const char *wrap)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "%s LOOM_PLUGIN_PATH= '%s/bin/loom' plan --quiet " PROBLEM
             " --iterations %d --seed %d --out '%s/o'%s",
             wrap ? wrap : "", LOOM_TEST_BINARY_DIR, iterations, seed, dir, wrap ? ")" : "");
    return loom_test_run(cmd, NULL);
}

START_TEST(a_rerun_replaces_the_whole_set)
{
    const char *dir = fresh_dir();
    char o[128];
    snprintf(o, sizeof o, "%s/o", dir);
    ck_assert_int_eq(plan_into(dir, 3, 1, NULL), 0);
    ck_assert_str_eq(entries(o), "iter-000 iter-001 iter-002 ");
    ck_assert_int_eq(plan_into(dir, 2, 1, NULL), 0);
    ck_assert_str_eq(entries(o), "iter-000 iter-001 ");
    ck_assert_int_eq(plan_into(dir, 1, 1, NULL), 0);
    ck_assert_str_eq(entries(o), "plan.json report.html schedule.csv summary.txt timeline.svg trace.json ");
    ck_assert_str_eq(entries(dir), "o ");
    /* files Loom did not write stay; Loom's stale entries go */
    char path[256];
    snprintf(path, sizeof path, "%s/notes.txt", o);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("mine\n", f);
    fclose(f);
    ck_assert_int_eq(plan_into(dir, 2, 1, NULL), 0);
    ck_assert_str_eq(entries(o), "iter-000 iter-001 notes.txt ");
    ck_assert_str_eq(entries(dir), "o ");
    remove_dir(dir);
}
END_TEST

START_TEST(a_failed_write_keeps_the_previous_set)
{
    const char *dir = fresh_dir();
    char o[128], path[256];
    snprintf(o, sizeof o, "%s/o", dir);
    ck_assert_int_eq(plan_into(dir, 1, 1, NULL), 0);
    snprintf(path, sizeof path, "%s/plan.json", o);
    char *before = slurp(path);
    ck_assert_uint_gt(strlen(before), 40000);
    /* files past 16 KiB (32 KiB where ulimit counts KiB) cannot be written:
     * plan.json of iteration 0 fails */
    ck_assert_int_eq(plan_into(dir, 2, 2, "(trap '' XFSZ; ulimit -f 32;"), 2);
    char *after = slurp(path);
    ck_assert_str_eq(after, before);
    ck_assert_str_eq(entries(o), "plan.json report.html schedule.csv summary.txt timeline.svg trace.json ");
    ck_assert_str_eq(entries(dir), "o "); /* no temporary folder */
    free(before);
    free(after);
    remove_dir(dir);
}
END_TEST

START_TEST(two_runs_sharing_out_leave_one_whole_set)
{
    const char *dir = fresh_dir(), *ref_a = fresh_dir(), *ref_b = fresh_dir();
    ck_assert_int_eq(plan_into(ref_a, 3, 1, NULL), 0);
    ck_assert_int_eq(plan_into(ref_b, 2, 2, NULL), 0);
    for (int round = 0; round < 3; round++) {
        char cmd[4096];
        snprintf(cmd, sizeof cmd,
                 "L='%s/bin/loom'; export LOOM_PLUGIN_PATH=; "
                 "$L plan --quiet " PROBLEM " --iterations 3 --seed 1 --out '%s/o' & a=$!; "
                 "$L plan --quiet " PROBLEM " --iterations 2 --seed 2 --out '%s/o' & b=$!; "
                 "wait $a && wait $b",
                 LOOM_TEST_BINARY_DIR, dir, dir);
        ck_assert_int_eq(loom_test_run(cmd, NULL), 0);
        char o[128];
        snprintf(o, sizeof o, "%s/o", dir);
        const char *got = entries(o);
        int is_a = !strcmp(got, "iter-000 iter-001 iter-002 ");
        ck_assert_msg(is_a || !strcmp(got, "iter-000 iter-001 "), "a mixed set: %s", got);
        for (int k = 0; k < (is_a ? 3 : 2); k++) { /* every file from the same run */
            static const char *const same[] = {"plan.json", "trace.json", "schedule.csv",
                                               "timeline.svg"}; /* summary.txt has times */
            for (int f = 0; f < 4; f++) {
                snprintf(cmd, sizeof cmd, "cmp '%s/o/iter-%03d/%s' '%s/o/iter-%03d/%s'", dir, k,
                         same[f], is_a ? ref_a : ref_b, k, same[f]);
                ck_assert_msg(loom_test_run(cmd, NULL) == 0, "iter-%03d/%s is not from run %s",
                              k, same[f], is_a ? "A" : "B");
            }
        }
        ck_assert_str_eq(entries(dir), "o ");
    }
    remove_dir(dir);
    remove_dir(ref_a);
    remove_dir(ref_b);
}
END_TEST

static Suite *hostile_suite(void)
{
    Suite *s = suite_create("hostile");
    TCase *tc = tcase_create("plugins");
    tcase_set_timeout(tc, 240);
    tcase_add_unchecked_fixture(tc, note_owner, remove_all);
    tcase_add_test(tc, a_forked_sleeper_neither_holds_the_run_nor_survives_it);
    tcase_add_test(tc, a_forked_writer_neither_holds_the_run_nor_survives_it);
    tcase_add_test(tc, plugin_chatter_stays_off_stdout);
    tcase_add_test(tc, failed_writes_to_stdout_are_errors);
    tcase_add_test(tc, exit_in_plugin_code_is_a_plugin_error);
    suite_add_tcase(s, tc);
    TCase *out = tcase_create("out");
    tcase_set_timeout(out, 240);
    tcase_add_unchecked_fixture(out, note_owner, remove_all);
    tcase_add_test(out, a_rerun_replaces_the_whole_set);
    tcase_add_test(out, a_failed_write_keeps_the_previous_set);
    tcase_add_test(out, two_runs_sharing_out_leave_one_whole_set);
    suite_add_tcase(s, out);
    return s;
}

int main(void)
{
    return loom_test_main(hostile_suite());
}
