/* test_process_state.c - a plugin that changes the process state cannot
 * redirect or spoil Loom's outputs: the state-rank fixture calls chdir(),
 * umask(0) or lowers RLIMIT_NOFILE so that no descriptor can be opened,
 * in create() or while ranking, in-process and under --isolate. After a
 * chdir the relative --out and --progress-csv land where they were given
 * and nothing lands in the folder the plugin moved to; after umask(0) the
 * outputs keep the modes of Loom's own umask (022: files 0644, folders
 * 0755); with no descriptor left the run fails with a clear error and no
 * staging folder stays. */
#define _DEFAULT_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "testutil.h"

#define PLANNERS LOOM_TEST_BINARY_DIR "/tests/isolation-fixtures/planners/"

/* The 8 runs of the loops: bit 0 --isolate, bit 1 in create(), bit 2
 * on a later rank() call too (iteration 2 of 2). */
static const char *mode_args(int i, char *buf, size_t size)
{
    snprintf(buf, size, "%s --param ranker.in_create=%s --param ranker.on_call=%d",
             i & 1 ? "--isolate" : "--no-isolate", i & 2 ? "true" : "false", i & 4 ? 2 : 1);
    return buf;
}

/* Runs the state-rank planner with `action` from a fresh folder (work,
 * which gets --out rel and --progress-csv rel.csv) under umask 022, the
 * plugin's chdir going to a second fresh folder (away); returns the exit
 * code and the output. */
static int run_state(const char *action, int mode, char *work, char *away, size_t size,
                     char **out)
{
    loom_test_mkdtemp(work, size, "state-work");
    loom_test_mkdtemp(away, size, "state-away");
    char modes[256], cmd[8192];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && umask 022 && LOOM_PLUGIN_PATH= timeout 120 '%s' plan --manifest "
             PLANNERS "state.json --model vlm-s --parallel tp=4,pp=4,mb=8 --iterations 2 "
             "--quiet --param ranker.action=%s --param ranker.dir='%s' %s --out rel "
             "--progress-csv rel.csv",
             work, loom_test_bin("bin/loom"), action, away, mode_args(mode, modes, sizeof modes));
    return loom_test_run(cmd, out);
}

/* The entries of folder dir, sorted, one line each (malloc'd). */
static char *entries(const char *dir)
{
    char cmd[512], *out = NULL;
    snprintf(cmd, sizeof cmd, "ls -A '%s'", dir);
    ck_assert_int_eq(loom_test_run(cmd, &out), 0);
    return out;
}

/* The permission bits of path. */
static unsigned mode_of(const char *dir, const char *rel)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    struct stat st;
    ck_assert_msg(stat(path, &st) == 0, "%s is missing", path);
    return st.st_mode & 07777;
}

START_TEST(chdir_does_not_move_the_outputs)
{
    char work[256], away[256], *out = NULL;
    int rc = run_state("chdir", _i, work, away, sizeof work, &out);
    ck_assert_msg(rc == 0, "mode %d: exit %d:\n%s", _i, rc, out);
    free(out);
    char *w = entries(work), *a = entries(away);
    ck_assert_msg(strcmp(w, "rel\nrel.csv\n") == 0, "mode %d: %s holds:\n%s", _i, work, w);
    ck_assert_msg(strcmp(a, "") == 0, "mode %d: %s holds:\n%s", _i, away, a);
    free(w);
    free(a);
    char sub[600];
    snprintf(sub, sizeof sub, "%s/rel/iter-001", work);
    w = entries(sub);
    loom_test_has(w, "plan.json\n");
    free(w);
    loom_test_rmdir(work);
    loom_test_rmdir(away);
}
END_TEST

START_TEST(umask_does_not_loosen_the_outputs)
{
    char work[256], away[256], *out = NULL;
    int rc = run_state("umask", _i, work, away, sizeof work, &out);
    ck_assert_msg(rc == 0, "mode %d: exit %d:\n%s", _i, rc, out);
    free(out);
    ck_assert_uint_eq(mode_of(work, "rel"), 0755);
    ck_assert_uint_eq(mode_of(work, "rel/iter-000"), 0755);
    ck_assert_uint_eq(mode_of(work, "rel/iter-001"), 0755);
    ck_assert_uint_eq(mode_of(work, "rel/iter-001/plan.json"), 0644);
    ck_assert_uint_eq(mode_of(work, "rel/iter-001/report.html"), 0644);
    ck_assert_uint_eq(mode_of(work, "rel.csv"), 0644);
    loom_test_rmdir(work);
    loom_test_rmdir(away);
}
END_TEST

START_TEST(no_descriptor_left_is_a_clean_error_without_staging)
{
    char work[256], away[256], *out = NULL;
    int rc = run_state("nofile", _i, work, away, sizeof work, &out);
    /* planning fails where the next descriptor is needed: a plugin not yet
     * loaded (3) or the first output file (2) */
    ck_assert_msg(rc == 2 || rc == 3, "mode %d: exit %d:\n%s", _i, rc, out);
    loom_test_has(out, "Too many open files");
    free(out);
    char *w = entries(work);
    ck_assert_msg(strcmp(w, "") == 0, "mode %d: %s holds:\n%s", _i, work, w);
    free(w);
    loom_test_rmdir(work);
    loom_test_rmdir(away);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("process_state");
    TCase *tc = tcase_create("state");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, chdir_does_not_move_the_outputs, 0, 8);
    tcase_add_loop_test(tc, umask_does_not_loosen_the_outputs, 0, 8);
    tcase_add_loop_test(tc, no_descriptor_left_is_a_clean_error_without_staging, 0, 8);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(make_suite());
}
