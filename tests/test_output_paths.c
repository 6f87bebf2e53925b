/* test_output_paths.c - every output option of every command goes through
 * the one output path (core/outputs/atomic_file.c, out_dir.c): for each
 * option a normal run writes a regular file with mode 0644 under umask
 * 022; a FIFO, /dev/full and a symbolic link in its place are refused at
 * once with a message naming them (the link's target is left alone); a
 * write past a file size limit (ulimit -f, EFBIG) is an error, not a
 * SIGXFSZ death, and keeps the previous file with no temporary file left;
 * a run that fails after its outputs were resolved (a plugin crash, an
 * input that cannot be planned, a report that cannot be printed) keeps
 * the previous file. */
#define _DEFAULT_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "testutil.h"

#define SRC LOOM_TEST_SOURCE_DIR
#define MANIFESTS SRC "/examples/manifests/"
#define PLAN "plan --model vlm-s --parallel tp=4,pp=4,mb=8 --iterations 1 --quiet"
#define AB "ab " MANIFESTS "megatron-1f1b.json " MANIFESTS "megatron-1f1b.json --model vlm-s " \
           "--parallel tp=4,pp=4,mb=8 --iterations 1 --quiet --no-isolate"
/* ab made to fail after planning: its Markdown summary (printed without
 * --quiet) goes to a full device */
#define AB_FULL "ab " MANIFESTS "megatron-1f1b.json " MANIFESTS "megatron-1f1b.json --model vlm-s " \
                "--parallel tp=4,pp=4,mb=8 --iterations 1 --no-isolate"
#define CAL "calibrate --cluster h800 --model vlm-s"
#define TUNE "tune --model " SRC "/tests/fixtures/models/tune-tiny.json --seq-len 2048 --gpus 4 " \
             "--global-batch 16 --top 4 --memory-cap 3GiB --quiet --manifest " MANIFESTS       \
             "megatron-tuned.json"
#define PLANNERS LOOM_TEST_BINARY_DIR "/tests/isolation-fixtures/planners/"

/* One file output: the command with %s for the file, and the same
 * command made to fail after its outputs were resolved (%s likewise). */
typedef struct out_case {
    const char *ok, *failing;
} out_case;

static char work[256]; /* this run's folder: inputs made once */

/* Every file output option of every command. */
static const out_case cases[] = {
    {PLAN " --progress-csv %s",
     "plan --manifest " PLANNERS "crash.json --model vlm-s --parallel tp=4,pp=4,mb=8 "
     "--iterations 1 --quiet --isolate --param ranker.crash_on_call=1 --progress-csv %s"},
    {AB " --markdown %s", AB_FULL " --markdown %s >/dev/full"},
    {AB " --json %s", AB_FULL " --json %s >/dev/full"},
    {AB " --junit %s", AB_FULL " --junit %s >/dev/full"},
    {AB " --html %s", AB_FULL " --html %s >/dev/full"},
    {AB " --shard 1/1 --json %s", AB_FULL " --shard 1/1 --json %s >/dev/full"},
    {"ab merge @/shard.json --quiet --markdown %s", "ab merge @/missing.json --markdown %s"},
    {"ab merge @/shard.json --quiet --json %s", "ab merge @/missing.json --json %s"},
    {"ab merge @/shard.json --quiet --junit %s", "ab merge @/missing.json --junit %s"},
    {CAL " --profile " SRC "/examples/calibration/profile.csv --out %s",
     CAL " --profile " SRC "/examples/calibration/profile.csv --out %s --max-residual 0"},
    {CAL " --profile @/p4.csv --table %s", CAL " --profile @/p4.csv --table %s --max-residual 0"},
    {"replan --job " SRC "/examples/replan/two-node-pipelines.json --out %s",
     "replan --job " SRC "/examples/replan/two-node-pipelines.json --out %s --failed-nodes 99"},
    {TUNE " --json %s", TUNE " --json %s --manifest @/missing.json"},
    {TUNE " --shard 1/1 --json %s", TUNE " --shard 1/1 --json %s --manifest @/missing.json"},
    {"tune merge @/tshard.json --quiet --json %s", "tune merge @/missing.json --json %s"},
    {"workload generate --family text --iterations 1 --out %s",
     "workload generate --family nosuch --iterations 1 --out %s"},
};

/* `fmt` with %s -> path and every "@/" -> this run's folder. */
static void expand(char *buf, size_t size, const char *fmt, const char *path)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, fmt, path);
    size_t n = 0;
    for (const char *p = tmp; *p && n + 1 < size; p++) {
        if (p[0] == '@' && p[1] == '/') {
            n += (size_t)snprintf(buf + n, size - n, "%s/", work);
            p++;
        } else {
            buf[n++] = *p;
        }
    }
    buf[n < size ? n : size - 1] = 0;
}

/* Runs `loom <args>` from folder `dir` after the shell commands `pre`
 * (umask, ulimit), at most 120 s; returns the exit code and the output. */
static int run_in(const char *dir, const char *pre, const char *args, char **out)
{
    char cmd[16384];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && %s; LOOM_PLUGIN_PATH= ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}"
             "handle_segv=0\" timeout 120 '%s' %s",
             dir, pre, loom_test_bin("bin/loom"), args);
    return loom_test_run(cmd, out);
}

/* Fails unless folder dir holds exactly `n` entries (no temporary file
 * or folder left). */
static void count_entries(const char *dir, int n, const char *what)
{
    char cmd[512], *out = NULL;
    snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", dir);
    ck_assert_int_eq(loom_test_run(cmd, &out), 0);
    ck_assert_msg(atoi(out) == n, "%s: %s holds %d entries, expected %d", what, dir, atoi(out),
                  n);
    free(out);
}

/* Writes `text` into path. */
static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

/* Makes the inputs the cases share (a shard of each kind, a profile
 * with one degree per layer). */
static void make_inputs(void)
{
    loom_test_mkdtemp(work, sizeof work, "outpaths");
    char args[4096], *out = NULL;
    snprintf(args, sizeof args, AB " --shard 1/1 --json %s/shard.json", work);
    ck_assert_int_eq(run_in(work, "true", args, &out), 0);
    free(out);
    snprintf(args, sizeof args, TUNE " --shard 1/1 --json %s/tshard.json", work);
    ck_assert_int_eq(run_in(work, "true", args, &out), 0);
    free(out);
    snprintf(args, sizeof args, "awk -F, '/^#/||/^module/||$4==4' %s > '%s/p4.csv'",
             SRC "/examples/calibration/profile.csv", work);
    ck_assert_int_eq(loom_test_run(args, NULL), 0);
}

/* Every check of one case, in a fresh folder. */
static void check_case(const out_case *c)
{
    char dir[256], path[512], args[8192], *out = NULL;
    loom_test_mkdtemp(dir, sizeof dir, "outcase");
    snprintf(path, sizeof path, "%s/o", dir);

    /* a normal run: a regular file, 0644 under umask 022, nothing else */
    expand(args, sizeof args, c->ok, path);
    int rc = run_in(dir, "umask 022", args, &out);
    ck_assert_msg(rc == 0 || rc == 1, "loom %s: exit %d:\n%s", args, rc, out);
    free(out);
    struct stat st;
    ck_assert_msg(lstat(path, &st) == 0 && S_ISREG(st.st_mode), "loom %s: no file", args);
    ck_assert_msg((st.st_mode & 0777) == 0644, "loom %s: mode %o", args, st.st_mode & 0777);
    count_entries(dir, 1, args);

    /* a failing run keeps the previous file */
    put(path, "previous\n");
    expand(args, sizeof args, c->failing, path);
    rc = run_in(dir, "true", args, &out);
    ck_assert_msg(rc != 0 && rc != 124, "loom %s: exit %d, expected a failure:\n%s", args, rc,
                  out);
    free(out);
    char *kept = loom_test_slurp(path);
    ck_assert_msg(strcmp(kept, "previous\n") == 0, "loom %s: the previous file changed", args);
    free(kept);
    count_entries(dir, 1, args);

    /* past the file size limit: EFBIG is an error (exit 2), not SIGXFSZ */
    expand(args, sizeof args, c->ok, path);
    rc = run_in(dir, "ulimit -f 0", args, &out);
    ck_assert_msg(rc == 2, "loom %s under ulimit -f 0: exit %d:\n%s", args, rc, out);
    loom_test_has(out, "File too large");
    free(out);
    kept = loom_test_slurp(path);
    ck_assert_msg(strcmp(kept, "previous\n") == 0, "loom %s: the previous file changed", args);
    free(kept);
    count_entries(dir, 1, args);

    /* a FIFO, /dev/full and a link are refused, at once */
    unlink(path);
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    rc = run_in(dir, "true", args, &out);
    ck_assert_msg(rc == 2, "loom %s on a FIFO: exit %d:\n%s", args, rc, out);
    loom_test_has(out, "is a FIFO, not a regular file");
    free(out);
    expand(args, sizeof args, c->ok, "/dev/full");
    rc = run_in(dir, "true", args, &out);
    ck_assert_msg(rc == 2, "loom %s: exit %d:\n%s", args, rc, out);
    loom_test_has(out, "/dev/full: it exists and is a device");
    free(out);
    unlink(path);
    char victim[512];
    snprintf(victim, sizeof victim, "%s/victim", dir);
    put(victim, "untouched\n");
    ck_assert_int_eq(symlink("victim", path), 0);
    expand(args, sizeof args, c->ok, path);
    rc = run_in(dir, "true", args, &out);
    ck_assert_msg(rc == 2, "loom %s on a link: exit %d:\n%s", args, rc, out);
    loom_test_has(out, "is a symbolic link, not a regular file");
    free(out);
    kept = loom_test_slurp(victim);
    ck_assert_str_eq(kept, "untouched\n");
    free(kept);
    count_entries(dir, 2, args);
    loom_test_rmdir(dir);
}

START_TEST(every_file_output_takes_the_one_path)
{
    make_inputs();
    check_case(&cases[_i]);
    loom_test_rmdir(work);
}
END_TEST

/* The folder outputs (plan --out, tune --out): a FIFO or file in their
 * place is refused; a failed run keeps the previous set and leaves no
 * staging folder; the folder and its files get 0755 / 0644 under 022. */
static void check_folder(const char *fmt, const char *failing)
{
    char dir[256], path[512], args[8192], *out = NULL;
    loom_test_mkdtemp(dir, sizeof dir, "outdir");
    snprintf(path, sizeof path, "%s/o", dir);
    expand(args, sizeof args, fmt, path);
    int rc = run_in(dir, "umask 022", args, &out);
    ck_assert_msg(rc == 0, "loom %s: exit %d:\n%s", args, rc, out);
    free(out);
    struct stat st;
    char file[600];
    snprintf(file, sizeof file, "%s/plan.json", path);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0755);
    ck_assert_int_eq(stat(file, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0644);
    put(file, "previous\n");
    expand(args, sizeof args, failing, path);
    rc = run_in(dir, "true", args, &out);
    ck_assert_msg(rc != 0 && rc != 124, "loom %s: exit %d:\n%s", args, rc, out);
    free(out);
    char *kept = loom_test_slurp(file);
    ck_assert_str_eq(kept, "previous\n");
    free(kept);
    count_entries(dir, 1, args);
    loom_test_rmdir(path);
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    expand(args, sizeof args, fmt, path);
    rc = run_in(dir, "true", args, &out);
    ck_assert_msg(rc == 2, "loom %s on a FIFO: exit %d:\n%s", args, rc, out);
    loom_test_has(out, "it exists and is not a directory");
    free(out);
    loom_test_rmdir(dir);
}

START_TEST(folder_outputs_take_the_one_path)
{
    make_inputs();
    check_folder(PLAN " --out %s", "plan --manifest " PLANNERS "crash.json --model vlm-s "
                 "--parallel tp=4,pp=4,mb=8 --iterations 1 --quiet --isolate --param ranker.crash_on_call=1 --out %s");
    check_folder(TUNE " --out %s", TUNE " --out %s --gpus 3");
    loom_test_rmdir(work);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("output_paths");
    TCase *tc = tcase_create("paths");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, every_file_output_takes_the_one_path, 0,
                        (int)(sizeof cases / sizeof cases[0]));
    tcase_add_test(tc, folder_outputs_take_the_one_path);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(make_suite());
}
