/*
 * test_signals.c - SIGINT during a long search: `loom plan` stops within
 * seconds, exits 1, keeps the best plan found so far, writes it with
 * --out (complete files only) and says so; also for Ctrl-C (SIGINT to the
 * process group) on an --isolate run. SIGTERM and SIGHUP to `loom plan
 * --isolate` or `loom ab` end the parent and the child's whole process
 * group at once; SIGTERM to `loom plan` leaves the previous --out set as
 * it was and no temporary folder.
 */
#define _DEFAULT_SOURCE /* mkdtemp, usleep */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <loom/sys/json.h>
#include "testutil.h"

/* A search that would run for ten minutes per iteration. */
#define LONG_SEARCH_BUDGET_MS "600000"

/* Seconds on the monotonic clock. */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* 1 when process `pid` runs loom (it has exec'd: between fork and exec it
 * is a copy of this test, with the test runner's handlers) and has a
 * handler installed for SIGINT. */
static int catches_sigint(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int is_loom = 0, yes = 0;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "Name:", 5))
            is_loom = !strcmp(line + 5 + strspn(line + 5, " \t"), "loom\n");
        if (!strncmp(line, "SigCgt:", 7)) {
            unsigned long long mask = strtoull(line + 7, NULL, 16);
            yes = (mask >> (SIGINT - 1)) & 1;
        }
    }
    fclose(f);
    return is_loom && yes;
}

/* Starts bin/loom with argv (NULL-terminated), output to `log`, in a
 * process group of its own (as a terminal job is). */
static pid_t start_loom(char *const argv[], const char *log)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        signal(SIGINT, SIG_DFL); /* not the test runner's handler */
        setpgid(0, 0);
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0)
            _exit(126);
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
        setenv("LOOM_PLUGIN_PATH", "", 1);
        execv(argv[0], argv);
        _exit(127);
    }
    return pid;
}

/* Waits up to `limit_s` for pid; returns its wait status, or -1 (after
 * killing it) when it did not stop in time. */
static int wait_for(pid_t pid, double limit_s)
{
    double end = now_s() + limit_s;
    int status = 0;
    while (now_s() < end) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return status;
        usleep(20000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

/* Interrupts a long MCTS search of a 3-iteration workload once the CLI
 * has installed its handler and searched for a moment: SIGINT to the
 * process, or with `isolate` (--isolate) to its whole process group, as
 * Ctrl-C in a terminal does. Returns the output (caller frees) and the
 * exit code in *code. */
static char *interrupt_search(const char *out_dir, int isolate, int *code)
{
    char loom[4096], manifest[4096], log[] = "/tmp/loom-sigint-XXXXXX";
    snprintf(loom, sizeof loom, "%s", loom_test_bin("bin/loom"));
    snprintf(manifest, sizeof manifest, "%s", loom_test_src("examples/manifests/pipeweaver.json"));
    int fd = mkstemp(log);
    ck_assert_int_ge(fd, 0);
    close(fd);
    char *argv[20];
    int n = 0;
    argv[n++] = loom;
    argv[n++] = "plan";
    argv[n++] = "--manifest";
    argv[n++] = manifest;
    argv[n++] = "--iterations";
    argv[n++] = "3";
    argv[n++] = "--param";
    argv[n++] = "ranker.budget_ms=" LONG_SEARCH_BUDGET_MS;
    if (out_dir) {
        argv[n++] = "--out";
        argv[n++] = (char *)out_dir;
    }
    if (isolate)
        argv[n++] = "--isolate";
    argv[n] = NULL;
    pid_t pid = start_loom(argv, log);
    double give_up = now_s() + 120;
    while (!catches_sigint(pid) && now_s() < give_up) {
        ck_assert_int_eq(waitpid(pid, NULL, WNOHANG), 0); /* still running */
        usleep(20000);
    }
    ck_assert_msg(catches_sigint(pid), "loom plan never installed its SIGINT handler");
    usleep(1000000); /* let the search run */
    double sent = now_s();
    ck_assert_int_eq(kill(isolate ? -pid : pid, SIGINT), 0);
    int status = wait_for(pid, 60);
    double took = now_s() - sent;
    ck_assert_msg(status != -1, "loom plan did not stop within 60 s of SIGINT");
    ck_assert_msg(WIFEXITED(status), "loom plan died of signal %d instead of stopping cleanly",
                  WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    ck_assert_msg(took < 30, "loom plan took %.1f s to stop after SIGINT", took);
    *code = WEXITSTATUS(status);
    char *text = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_read_file(log, &text, NULL, &err), LOOM_OK);
    unlink(log);
    return text;
}

/* Interrupts a run writing to a fresh folder and checks the message and
 * the files: iteration 0 complete, nothing else, no temporary file. */
static void check_interrupted_outputs(int isolate)
{
    char dir[] = "/tmp/loom-sigint-out-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    int code = -1;
    char *out = interrupt_search(dir, isolate, &code);
    ck_assert_msg(code == 1, "exit %d, expected 1 (interrupted)\n%s", code, out);
    char want[512];
    snprintf(want, sizeof want,
             "loom plan: interrupted: kept the best plan found so far; 1 iteration(s) "
             "planned, written to %s", dir);
    ck_assert_msg(strstr(out, want) != NULL, "output lacks \"%s\":\n%s", want, out);
    free(out);

    /* The interrupted iteration's outputs are complete; nothing else. */
    char path[600];
    snprintf(path, sizeof path, "%s/iter-000/plan.json", dir);
    cJSON *plan = NULL;
    loom_error err = {0, ""};
    ck_assert_msg(loom_json_load(path, &plan, &err) == LOOM_OK, "%s", err.message);
    ck_assert_ptr_nonnull(cJSON_GetObjectItemCaseSensitive(plan, "metrics"));
    /* schedule.csv is written only for plans PyTorch's schedule rules express */
    const cJSON *csv = cJSON_GetObjectItemCaseSensitive(plan, "schedule_csv");
    int want_files = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(csv, "written")) ? 6 : 5;
    cJSON_Delete(plan);
    snprintf(path, sizeof path, "%s/iter-001", dir);
    struct stat st;
    ck_assert_int_ne(stat(path, &st), 0);
    snprintf(path, sizeof path, "%s/iter-000", dir);
    DIR *d = opendir(path);
    ck_assert_ptr_nonnull(d);
    int files = 0;
    for (struct dirent *de = readdir(d); de; de = readdir(d)) {
        if (de->d_name[0] == '.' && (!de->d_name[1] || !strcmp(de->d_name, "..")))
            continue;
        ck_assert_msg(strstr(de->d_name, "tmp") == NULL && de->d_name[0] != '.',
                      "left-over temporary file %s/%s", path, de->d_name);
        files++;
    }
    closedir(d);
    ck_assert_int_eq(files, want_files); /* plan, trace, (CSV,) SVG, summary, report.html */
    char rm[200];
    snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(rm), 0);
}

START_TEST(sigint_writes_the_best_plan_so_far)
{
    check_interrupted_outputs(0);
}
END_TEST

START_TEST(ctrl_c_on_an_isolated_run_writes_the_best_plan_so_far)
{
    check_interrupted_outputs(1);
}
END_TEST

START_TEST(sigint_without_out_still_reports)
{
    int code = -1;
    char *out = interrupt_search(NULL, 0, &code);
    ck_assert_msg(code == 1, "exit %d, expected 1 (interrupted)\n%s", code, out);
    ck_assert_msg(strstr(out, "loom plan: interrupted: kept the best plan found so far; 1 "
                              "iteration(s) planned\n") != NULL,
                  "%s", out);
    /* The summary row of the interrupted iteration is printed. */
    ck_assert_msg(strstr(out, "\n0 ") != NULL, "%s", out);
    free(out);
}
END_TEST

/* ---- SIGTERM and SIGHUP ---------------------------------------------------- */

/* The process group of process pid (from /proc), or -1. */
static long pgrp_of(long pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char state;
    long ppid, pgrp;
    const char *p = strrchr(buf, ')');
    return p && sscanf(p + 1, " %c %ld %ld", &state, &ppid, &pgrp) == 3 ? pgrp : -1;
}

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

/* The suite runner's pid: the files and folders the SIGTERM tests make
 * are named after it, so the runner removes them even after a failure. */
static long owner;

static void note_owner(void)
{
    owner = (long)getpid();
}

/* Removes what the SIGTERM tests made (unchecked teardown, in the runner). */
static void remove_all(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf /tmp/loom-sigterm-%ld-*", owner);
    if (system(cmd) != 0)
        fprintf(stderr, "test_signals: could not remove /tmp/loom-sigterm-%ld-*\n", owner);
}

/* 1 once some folder in dir (dir/o or a hidden one) holds a finished
 * iter-001. */
static int second_iteration_written(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int found = 0;
    for (struct dirent *e = readdir(d); e && !found; e = readdir(d)) {
        char path[1024];
        struct stat st;
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(path, sizeof path, "%s/%s/iter-001/summary.txt", dir, e->d_name);
        found = stat(path, &st) == 0;
    }
    closedir(d);
    return found;
}

/* Starts a long search - `loom plan` (into dir/o, after a quick plan that
 * wrote the previous set there) or, with `ab`, `loom ab` - kills loom
 * with `sig` once it plans (under isolation: once its child plans;
 * in-process: once iterations 0 and 1 are written and the hang-rank
 * fixture hangs in iteration 2), and checks that loom dies of the signal
 * within 30 s, that no process of the child's group outlives it, and that
 * dir/o still holds the previous set and dir nothing else. */
static void check_killed(int sig, int isolate, int ab)
{
    char loom[4096], manifest[4096], log[64], out[128], prev[256], dir[64];
    snprintf(log, sizeof log, "/tmp/loom-sigterm-%ld-log-XXXXXX", owner);
    snprintf(dir, sizeof dir, "/tmp/loom-sigterm-%ld-out-XXXXXX", owner);
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(out, sizeof out, "%s/o", dir);
    snprintf(loom, sizeof loom, "%s", loom_test_bin("bin/loom"));
    if (isolate)
        snprintf(manifest, sizeof manifest, "%s",
                 loom_test_src("examples/manifests/pipeweaver.json"));
    else
        snprintf(manifest, sizeof manifest, "%s",
                 loom_test_bin("tests/isolation-fixtures/planners/hang.json"));
    char *before = NULL;
    if (!ab) {
        char cmd[8192];
        snprintf(cmd, sizeof cmd, "LOOM_PLUGIN_PATH= '%s' plan --quiet --iterations 1 --out '%s'",
                 loom, out);
        ck_assert_int_eq(loom_test_run(cmd, NULL), 0);
        snprintf(prev, sizeof prev, "%s/plan.json", out);
        loom_error err = {0, ""};
        ck_assert_int_eq(loom_read_file(prev, &before, NULL, &err), LOOM_OK);
    }
    int fd = mkstemp(log);
    ck_assert_int_ge(fd, 0);
    close(fd);
    char *argv[20];
    int n = 0;
    argv[n++] = loom;
    argv[n++] = ab ? "ab" : "plan";
    if (ab)
        argv[n++] = manifest;
    argv[n++] = ab ? manifest : "--manifest";
    if (!ab)
        argv[n++] = manifest;
    argv[n++] = "--iterations";
    argv[n++] = "3";
    if (isolate) {
        argv[n++] = "--param";
        argv[n++] = "ranker.budget_ms=" LONG_SEARCH_BUDGET_MS;
        if (ab) /* the long search, not ab's default evaluation count */
            argv[n++] = "--wall-clock";
    } else {
        argv[n++] = "--model";
        argv[n++] = "vlm-s";
        argv[n++] = "--parallel";
        argv[n++] = "tp=4,pp=4,mb=8";
    }
    if (!ab) {
        argv[n++] = "--out";
        argv[n++] = out;
    }
    argv[n++] = isolate ? "--isolate" : "--no-isolate";
    argv[n] = NULL;
    pid_t pid = start_loom(argv, log);
    double give_up = now_s() + 120;
    long child = 0;
    while (now_s() < give_up) { /* loom (and its child) started */
        ck_assert_int_eq(waitpid(pid, NULL, WNOHANG), 0);
        if (catches_sigint(pid) && (isolate ? (child = loom_test_child_of(pid)) > 0
                                            : second_iteration_written(dir)))
            break;
        usleep(20000);
    }
    ck_assert_msg(catches_sigint(pid), "loom never installed its SIGINT handler");
    ck_assert_msg(!isolate || child > 0, "loom --isolate never started its child");
    ck_assert_msg(isolate || second_iteration_written(dir), "loom never wrote iteration 1");
    usleep(isolate ? 1000000 : 200000); /* let the search run, or the ranker hang */
    long group = isolate ? pgrp_of(child) : -1;
    ck_assert_msg(!isolate || group > 0, "the child %ld ended before the signal", child);
    ck_assert_int_eq(kill(pid, sig), 0);
    int status = wait_for(pid, 30);
    int gone = group > 0 ? loom_test_group_gone(group, 20) : 1;
    ck_assert_msg(status != -1, "loom did not stop within 30 s of signal %d", sig);
    ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == sig,
                  "loom %s: expected death by signal %d, got status 0x%x", argv[1], sig, status);
    ck_assert_msg(gone, "the child's process group %ld outlived loom (signal %d)", group, sig);
    if (!ab) {
        char *after = NULL;
        loom_error err = {0, ""};
        ck_assert_int_eq(loom_read_file(prev, &after, NULL, &err), LOOM_OK);
        ck_assert_str_eq(after, before);
        free(after);
        ck_assert_str_eq(entries(out),
                         "plan.json report.html schedule.csv summary.txt timeline.svg trace.json ");
        ck_assert_str_eq(entries(dir), "o "); /* no temporary folder */
    }
    free(before);
    unlink(log);
    char rm[200];
    snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(rm), 0);
}

START_TEST(sigterm_to_an_isolated_plan_ends_its_child_group)
{
    check_killed(SIGTERM, 1, 0);
}
END_TEST

START_TEST(sighup_to_an_isolated_plan_ends_its_child_group)
{
    check_killed(SIGHUP, 1, 0);
}
END_TEST

START_TEST(sigterm_to_ab_ends_its_child_group)
{
    check_killed(SIGTERM, 1, 1);
}
END_TEST

START_TEST(sigterm_to_a_plan_mid_way_keeps_the_previous_outputs)
{
    check_killed(SIGTERM, 0, 0);
}
END_TEST

/* The signals suite. */
static Suite *suite(void)
{
    Suite *s = suite_create("signals");
    TCase *tc = tcase_create("sigint");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, sigint_writes_the_best_plan_so_far);
    tcase_add_test(tc, sigint_without_out_still_reports);
    tcase_add_test(tc, ctrl_c_on_an_isolated_run_writes_the_best_plan_so_far);
    suite_add_tcase(s, tc);
    TCase *term = tcase_create("sigterm");
    tcase_set_timeout(term, 300);
    tcase_add_unchecked_fixture(term, note_owner, remove_all);
    tcase_add_test(term, sigterm_to_an_isolated_plan_ends_its_child_group);
    tcase_add_test(term, sighup_to_an_isolated_plan_ends_its_child_group);
    tcase_add_test(term, sigterm_to_ab_ends_its_child_group);
    tcase_add_test(term, sigterm_to_a_plan_mid_way_keeps_the_previous_outputs);
    suite_add_tcase(s, term);
    return s;
}

int main(void)
{
    return loom_test_main(suite());
}
