/* test_descendants.c - nothing a plugin starts outlives `loom`: the
 * fork-rank fixture forks a sleeper (mode sleep) or orphans a grandchild
 * that calls setsid() and sleeps (mode setsid), in-process and under
 * --isolate; when `loom plan` has exited, that process is gone - killed
 * and reaped by Loom, which is a child subreaper - not reparented to
 * init. Also when the plugin calls exit() after forking (exit-rank is not
 * needed: `loom ab --no-isolate` covers a second command).
 *
 * Signals: while the ranker hangs (mode setsid-hang) after orphaning a
 * grandchild in a session of its own, `loom ab` (in-process and isolated),
 * `loom plan` (both ways) and `loom tune --jobs 2` are sent SIGTERM, SIGHUP
 * or SIGINT (twice where the first only asks the run to stop). Loom must
 * end by that signal (a shell reports 128 + its number) - or, for a first
 * SIGINT that stops the run, exit 1 - and every orphan must be gone; plan's
 * unfinished --out folder too. */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "testutil.h"

#define PLANNERS LOOM_TEST_BINARY_DIR "/tests/isolation-fixtures/planners/"
#define PROBLEM "--model vlm-s --parallel tp=4,pp=4,mb=8 --iterations 2 --quiet"

/* The runs: command and mode. */
static const char *const runs[][2] = {
    {"plan --manifest " PLANNERS "fork.json " PROBLEM " --no-isolate", "sleep"},
    {"plan --manifest " PLANNERS "fork.json " PROBLEM " --no-isolate", "setsid"},
    {"plan --manifest " PLANNERS "fork.json " PROBLEM " --isolate", "sleep"},
    {"plan --manifest " PLANNERS "fork.json " PROBLEM " --isolate", "setsid"},
    {"ab " PLANNERS "fork.json " PLANNERS "fork.json " PROBLEM " --no-isolate", "setsid"},
    {"ab " PLANNERS "fork.json " PLANNERS "fork.json " PROBLEM " --isolate", "setsid"},
};

/* 1 while process pid exists (a zombie counts: nobody reaped it). */
static int exists(long pid)
{
    return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

/* Checks every "<pid> <group or session>" line of pid_file: the process
 * is gone (and, with `setsid`, it had left its session: group == pid). */
static void check_all_gone(const char *pid_file, int setsid, const char *args)
{
    char *pids = loom_test_slurp(pid_file);
    int n = 0;
    for (const char *line = pids; line && *line; n++) {
        long pid = 0, group = 0;
        ck_assert_msg(sscanf(line, "%ld %ld", &pid, &group) == 2 && pid > 1, "pid file: %s",
                      pids);
        if (setsid)
            ck_assert_msg(group == pid, "the grandchild %ld did not leave the session (%ld)",
                          pid, group);
        int alive = exists(pid);
        if (alive)
            kill((pid_t)pid, SIGKILL);
        ck_assert_msg(!alive, "loom %s: process %ld outlived it", args, pid);
        line = strchr(line, '\n');
        line = line ? line + 1 : NULL;
    }
    ck_assert_msg(n > 0, "loom %s: the pid file is empty", args);
    free(pids);
}

START_TEST(what_a_plugin_forks_does_not_outlive_loom)
{
    char dir[256], pid_file[512], args[4096], *out = NULL;
    loom_test_mkdtemp(dir, sizeof dir, "descendants");
    snprintf(pid_file, sizeof pid_file, "%s/pid", dir);
    snprintf(args, sizeof args, "%s --timeout-ms 30000 --param ranker.mode=%s "
             "--param ranker.pid_file=%s", runs[_i][0], runs[_i][1], pid_file);
    int rc = loom_test_cli(args, &out);
    ck_assert_msg(rc == 0 || rc == 1, "loom %s: exit %d:\n%s", args, rc, out);
    free(out);
    check_all_gone(pid_file, !strcmp(runs[_i][1], "setsid"), args);
    loom_test_rmdir(dir);
}
END_TEST

/* ---- signals ---------------------------------------------------------------- */

#define HANG "--param ranker.mode=setsid-hang"

/* The signal runs: loom arguments (pid_file appended), the signal, how
 * many times it is sent, the expected end: 0 death by the signal, else
 * that exit code. */
static const struct {
    const char *args;
    int sig, times, exit_code;
} signal_runs[] = {
    {"ab " PLANNERS "fork.json " PLANNERS "fork.json " PROBLEM " --no-isolate " HANG, SIGTERM, 1, 0},
    {"ab " PLANNERS "fork.json " PLANNERS "fork.json " PROBLEM " --no-isolate " HANG, SIGINT, 2, 0},
    {"ab " PLANNERS "fork.json " PLANNERS "fork.json " PROBLEM " --isolate " HANG, SIGTERM, 1, 0},
    {"ab " PLANNERS "fork.json " PLANNERS "fork.json " PROBLEM " --isolate " HANG, SIGHUP, 1, 0},
    /* the first Ctrl-C: the isolated child stops, ab reports it, exit 1 */
    {"ab " PLANNERS "fork.json " PLANNERS "fork.json " PROBLEM " --isolate " HANG, SIGINT, 1, 1},
    {"plan --manifest " PLANNERS "fork.json " PROBLEM " --isolate " HANG, SIGTERM, 1, 0},
    {"plan --manifest " PLANNERS "fork.json " PROBLEM " --isolate " HANG, SIGINT, 2, 0},
    {"plan --manifest " PLANNERS "fork.json " PROBLEM " --no-isolate " HANG, SIGINT, 2, 0},
    {"tune --model vlm-s --gpus 4 --global-batch 8 --quiet --jobs 2 --manifest " PLANNERS
     "fork.json " HANG, SIGTERM, 1, 0},
    {"tune --model vlm-s --gpus 4 --global-batch 8 --quiet --jobs 2 --manifest " PLANNERS
     "fork.json " HANG, SIGINT, 1, 0},
};

/* Seconds on the monotonic clock. */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Starts `loom ARGS` through the shell (exec: the pid is loom's) in a
 * process group of its own, with default SIGINT and SIGQUIT (a background
 * job would have them ignored) and its output in log. */
static pid_t start_loom(const char *args, const char *log)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "exec '%s' %s >'%s' 2>&1", loom_test_bin("bin/loom"), args, log);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        signal(SIGINT, SIG_DFL);
        signal(SIGQUIT, SIG_DFL);
        setpgid(0, 0);
        setenv("LOOM_PLUGIN_PATH", "", 1);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* The number of lines in file path (0 when it does not exist). */
static int lines_in(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return 0;
    char buf[4096];
    int n = 0;
    ssize_t r;
    while ((r = read(fd, buf, sizeof buf)) > 0)
        for (ssize_t k = 0; k < r; k++)
            n += buf[k] == '\n';
    close(fd);
    return n;
}

START_TEST(a_signal_leaves_no_descendant)
{
    char dir[256], pid_file[512], log[512], args[4096];
    loom_test_mkdtemp(dir, sizeof dir, "descendants-signal");
    snprintf(pid_file, sizeof pid_file, "%s/pid", dir);
    snprintf(log, sizeof log, "%s/log", dir);
    snprintf(args, sizeof args, "%s --param ranker.pid_file=%s", signal_runs[_i].args, pid_file);
    int plan = !strncmp(args, "plan ", 5);
    if (plan) /* its staging folder must go too */
        snprintf(args + strlen(args), sizeof args - strlen(args), " --out %s/o", dir);
    int jobs = strstr(args, "--jobs 2") ? 2 : 1; /* tune: both jobs orphan one */
    pid_t pid = start_loom(args, log);
    int status = 0;
    double give_up = now_s() + 60;
    while (lines_in(pid_file) < jobs && now_s() < give_up) {
        ck_assert_msg(waitpid(pid, &status, WNOHANG) == 0, "loom %s ended first (0x%x):\n%s",
                      args, status, loom_test_slurp(log));
        usleep(10000);
    }
    ck_assert_msg(lines_in(pid_file) >= jobs, "loom %s: no orphan within 60 s", args);
    usleep(100000); /* into the hang */
    for (int k = 0; k < signal_runs[_i].times; k++) {
        if (k)
            usleep(200000); /* the first has been handled */
        ck_assert_int_eq(kill(pid, signal_runs[_i].sig), 0);
    }
    double end = now_s() + 20;
    pid_t r;
    while ((r = waitpid(pid, &status, WNOHANG)) == 0 && now_s() < end)
        usleep(10000);
    if (r == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    ck_assert_msg(r == pid, "loom %s: still running 20 s after signal %d", args,
                  signal_runs[_i].sig);
    if (signal_runs[_i].exit_code)
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == signal_runs[_i].exit_code,
                      "loom %s: expected exit %d, got status 0x%x", args,
                      signal_runs[_i].exit_code, status);
    else
        ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == signal_runs[_i].sig,
                      "loom %s: expected death by signal %d, got status 0x%x", args,
                      signal_runs[_i].sig, status);
    check_all_gone(pid_file, 1, args);
    char ls[600], *left = NULL;
    snprintf(ls, sizeof ls, "ls -A '%s' | tr '\\n' ' '", dir);
    ck_assert_int_eq(loom_test_run(ls, &left), 0);
    ck_assert_msg(!strcmp(left, "log pid "), "loom %s left %s", args, left);
    free(left);
    loom_test_rmdir(dir);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("descendants");
    TCase *tc = tcase_create("reap");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, what_a_plugin_forks_does_not_outlive_loom, 0,
                        (int)(sizeof runs / sizeof runs[0]));
    suite_add_tcase(s, tc);
    TCase *sig = tcase_create("signals");
    tcase_set_timeout(sig, 300);
    tcase_add_loop_test(sig, a_signal_leaves_no_descendant, 0,
                        (int)(sizeof signal_runs / sizeof signal_runs[0]));
    suite_add_tcase(s, sig);
    return s;
}

int main(void)
{
    return loom_test_main(make_suite());
}
