/* test_descendants.c - nothing a plugin starts outlives `loom`: the
 * fork-rank fixture forks a sleeper (mode sleep) or orphans a grandchild
 * that calls setsid() and sleeps (mode setsid), in-process and under
 * --isolate; when `loom plan` has exited, that process is gone - killed
 * and reaped by Loom, which is a child subreaper - not reparented to
 * init. Also when the plugin calls exit() after forking (exit-rank is not
 * needed: `loom ab --no-isolate` covers a second command). */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
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
    char *pids = loom_test_slurp(pid_file);
    long pid = 0, group = 0;
    ck_assert_msg(sscanf(pids, "%ld %ld", &pid, &group) == 2 && pid > 1, "pid file: %s", pids);
    free(pids);
    if (!strcmp(runs[_i][1], "setsid"))
        ck_assert_msg(group == pid, "the grandchild %ld did not leave the session (%ld)", pid,
                      group);
    int alive = exists(pid);
    if (alive)
        kill((pid_t)pid, SIGKILL);
    ck_assert_msg(!alive, "loom %s: process %ld outlived it", args, pid);
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
    return s;
}

int main(void)
{
    return loom_test_main(make_suite());
}
