/* test_atomic_file.c - loom_write_atomic: whole replacement, the file mode
 * kept, and every failure (no directory, read-only directory, a full or
 * size-limited disk, a failing writer) leaving the old file intact, no
 * temporary file behind and LOOM_EIO naming the path. loom_out_dir: a
 * folder's set replaced as a whole, files Loom did not write kept, an
 * uncommitted set discarded (also the async-signal-safe way), staging
 * folders of dead runs swept, a link written through. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "testutil.h"
#include "output.h"

/* Writer that prints the NUL-terminated text in ctx. */
static int put_text(void *ctx, FILE *out, loom_error *err)
{
    (void)err;
    fputs(ctx, out);
    return LOOM_OK;
}

/* Writer that prints a little and then fails. */
static int put_then_fail(void *ctx, FILE *out, loom_error *err)
{
    (void)ctx;
    fputs("partial output", out);
    return loom_set_error(err, LOOM_EINVAL, "bad plan: stage 7 is missing");
}

/* Writer that prints `*(size_t *)ctx` bytes. */
static int put_many(void *ctx, FILE *out, loom_error *err)
{
    (void)err;
    size_t n = *(size_t *)ctx;
    for (size_t i = 0; i < n; i++)
        fputc('a' + (int)(i % 26), out);
    return LOOM_OK;
}

/* A fresh empty directory under /tmp (static storage). */
static const char *fresh_dir(void)
{
    static char dir[4][64];
    static int next;
    char *d = dir[next++ % 4];
    snprintf(d, 64, "/tmp/loom-atomic-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(d));
    return d;
}

/* Number of entries in dir besides . and .. */
static int entries(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

/* Whole content of a file (malloc'd). */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    char *buf = malloc(1 << 20);
    size_t n = fread(buf, 1, (1 << 20) - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

/* Creates or truncates path with text. */
static void put_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* Removes the files in dir and dir itself. */
static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char path[512];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

START_TEST(test_replaces_whole_file_and_keeps_mode)
{
    const char *dir = fresh_dir();
    char path[128];
    snprintf(path, sizeof path, "%s/out.txt", dir);
    put_file(path, "a much longer previous content that must vanish entirely\n");
    ck_assert_int_eq(chmod(path, 0640), 0);
    loom_error err = {0};
    ck_assert_int_eq(loom_write_atomic(path, put_text, "short\n", &err), LOOM_OK);
    char *text = slurp(path);
    ck_assert_str_eq(text, "short\n");
    free(text);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0640);
    ck_assert_int_eq(entries(dir), 1);

    /* A new file gets 0666 minus the umask. */
    snprintf(path, sizeof path, "%s/new.txt", dir);
    mode_t old = umask(022);
    ck_assert_int_eq(loom_write_atomic(path, put_text, "new\n", &err), LOOM_OK);
    umask(old);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0644);
    ck_assert_int_eq(entries(dir), 2);
    remove_dir(dir);
}
END_TEST

START_TEST(test_dev_full_subpath_fails)
{
    loom_error err = {0};
    ck_assert_int_eq(loom_write_atomic("/dev/full/x", put_text, "data", &err), LOOM_EIO);
    ck_assert_int_eq(err.code, LOOM_EIO);
    ck_assert_ptr_nonnull(strstr(err.message, "/dev/full/x"));
    ck_assert_ptr_nonnull(strstr(err.message, strerror(ENOTDIR)));
}
END_TEST

START_TEST(test_missing_directory_fails)
{
    const char *dir = fresh_dir();
    char path[128];
    snprintf(path, sizeof path, "%s/no/such/dir/plan.json", dir);
    loom_error err = {0};
    ck_assert_int_eq(loom_write_atomic(path, put_text, "data", &err), LOOM_EIO);
    ck_assert_ptr_nonnull(strstr(err.message, path));
    ck_assert_ptr_nonnull(strstr(err.message, strerror(ENOENT)));
    ck_assert_int_eq(entries(dir), 0);
    remove_dir(dir);
}
END_TEST

/* Runs the write in a child process that cannot write into dir (as an
 * unprivileged user when the suite runs as root, since root ignores
 * directory permissions); returns the status and copies the message. */
static int write_unprivileged(const char *dir, const char *path, char *msg, size_t size)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
            _exit(100);
        (void)dir;
        loom_error err = {0};
        int rc = loom_write_atomic(path, put_text, "data", &err);
        ssize_t w = write(fds[1], err.message, strlen(err.message) + 1);
        _exit(w > 0 ? -rc : 101);
    }
    close(fds[1]);
    ssize_t n = read(fds[0], msg, size - 1);
    msg[n > 0 ? n : 0] = 0;
    close(fds[0]);
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    ck_assert_int_ne(WEXITSTATUS(status), 100);
    ck_assert_int_ne(WEXITSTATUS(status), 101);
    return -WEXITSTATUS(status);
}

START_TEST(test_read_only_directory_fails)
{
    const char *dir = fresh_dir();
    char path[128], msg[LOOM_ERROR_MSG_BYTES];
    snprintf(path, sizeof path, "%s/plan.json", dir);
    put_file(path, "old plan\n");
    ck_assert_int_eq(chmod(path, 0644), 0);
    ck_assert_int_eq(chmod(dir, 0555), 0);
    int rc = write_unprivileged(dir, path, msg, sizeof msg);
    ck_assert_int_eq(chmod(dir, 0755), 0);
    ck_assert_int_eq(rc, LOOM_EIO);
    ck_assert_ptr_nonnull(strstr(msg, path));
    ck_assert_ptr_nonnull(strstr(msg, strerror(EACCES)));
    ck_assert_int_eq(entries(dir), 1);
    char *text = slurp(path);
    ck_assert_str_eq(text, "old plan\n");
    free(text);
    remove_dir(dir);
}
END_TEST

START_TEST(test_failing_writer_leaves_old_file)
{
    const char *dir = fresh_dir();
    char path[128];
    snprintf(path, sizeof path, "%s/trace.json", dir);
    put_file(path, "old trace\n");
    loom_error err = {0};
    ck_assert_int_eq(loom_write_atomic(path, put_then_fail, NULL, &err), LOOM_EINVAL);
    ck_assert_int_eq(err.code, LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, path));
    ck_assert_ptr_nonnull(strstr(err.message, "bad plan: stage 7 is missing"));
    ck_assert_int_eq(entries(dir), 1);
    char *text = slurp(path);
    ck_assert_str_eq(text, "old trace\n");
    free(text);
    remove_dir(dir);
}
END_TEST

/* A disk that runs out mid-write: RLIMIT_FSIZE makes writes past 4 KiB fail
 * (EFBIG), in a child so the limit does not leak into other tests. */
START_TEST(test_disk_full_mid_write_leaves_old_file)
{
    const char *dir = fresh_dir();
    char path[128];
    snprintf(path, sizeof path, "%s/schedule.csv", dir);
    put_file(path, "old,csv\n");
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit lim = {4096, 4096};
        if (setrlimit(RLIMIT_FSIZE, &lim) != 0)
            _exit(100);
        size_t n = 1 << 20;
        loom_error err = {0};
        int rc = loom_write_atomic(path, put_many, &n, &err);
        ssize_t w = write(fds[1], err.message, strlen(err.message) + 1);
        _exit(w > 0 ? -rc : 101);
    }
    close(fds[1]);
    char msg[LOOM_ERROR_MSG_BYTES];
    ssize_t got = read(fds[0], msg, sizeof msg - 1);
    msg[got > 0 ? got : 0] = 0;
    close(fds[0]);
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    ck_assert_int_eq(-WEXITSTATUS(status), LOOM_EIO);
    ck_assert_ptr_nonnull(strstr(msg, path));
    ck_assert_ptr_nonnull(strstr(msg, strerror(EFBIG)));
    ck_assert_int_eq(entries(dir), 1);
    char *text = slurp(path);
    ck_assert_str_eq(text, "old,csv\n");
    free(text);

    /* Without the limit the same write succeeds and replaces the file. */
    size_t n = 1 << 20;
    loom_error err = {0};
    ck_assert_int_eq(loom_write_atomic(path, put_many, &n, &err), LOOM_OK);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq((long)st.st_size, 1L << 20);
    remove_dir(dir);
}
END_TEST

START_TEST(test_dash_writes_stdout)
{
    const char *dir = fresh_dir();
    char path[128];
    snprintf(path, sizeof path, "%s/stdout.txt", dir);
    fflush(stdout);
    int saved = dup(1);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_ge(dup2(fd, 1), 0);
    close(fd);
    loom_error err = {0};
    int rc = loom_write_atomic("-", put_text, "to stdout\n", &err);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    ck_assert_int_eq(rc, LOOM_OK);
    char *text = slurp(path);
    ck_assert_str_eq(text, "to stdout\n");
    free(text);
    ck_assert_int_eq(entries(dir), 1);
    remove_dir(dir);
}
END_TEST

START_TEST(test_bad_arguments)
{
    loom_error err = {0};
    ck_assert_int_eq(loom_write_atomic("", put_text, "x", &err), LOOM_EINVAL);
    ck_assert_int_eq(loom_write_atomic("/tmp/x", NULL, "x", &err), LOOM_EINVAL);
    ck_assert_int_eq(loom_write_atomic("/tmp/", put_text, "x", &err), LOOM_EIO);
    ck_assert_ptr_nonnull(strstr(err.message, "/tmp/"));
}
END_TEST

/* ---- loom_out_dir ------------------------------------------------------ */

/* The entries of dir, sorted, joined by spaces (static storage). */
static const char *listing(const char *dir)
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

/* rm -rf dir. */
static void remove_tree(const char *dir)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* Writes `text` as file `name` (a path below the staging folder) of d. */
static void stage(const loom_out_dir *d, const char *name, const char *text)
{
    char path[4300];
    snprintf(path, sizeof path, "%s/%s", loom_out_dir_path(d), name);
    char *slash = strrchr(path, '/');
    *slash = 0;
    mkdir(path, 0755);
    *slash = '/';
    loom_error err = {0};
    ck_assert_int_eq(loom_write_atomic(path, put_text, (void *)text, &err), LOOM_OK);
}

/* Begins a set for dir, stages the NULL-terminated (name, text) pairs and
 * commits it. */
static void write_set(const char *dir, const char *const *files)
{
    loom_out_dir *d = NULL;
    loom_error err = {0};
    ck_assert_msg(loom_out_dir_begin(dir, &d, &err) == LOOM_OK, "%s", err.message);
    for (int i = 0; files[i]; i += 2)
        stage(d, files[i], files[i + 1]);
    ck_assert_msg(loom_out_dir_commit(d, &err) == LOOM_OK, "%s", err.message);
    loom_out_dir_close(d);
}

START_TEST(test_out_dir_appears_whole)
{
    const char *dir = fresh_dir();
    char out[128], path[256];
    snprintf(out, sizeof out, "%s/deep/o", dir);
    loom_out_dir *d = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_out_dir_begin(out, &d, &err), LOOM_OK);
    /* the staging folder lies beside the target; the target is not there yet */
    ck_assert_ptr_nonnull(strstr(loom_out_dir_path(d), "/deep/.o.tmp-"));
    stage(d, "plan.json", "{}\n");
    ck_assert_str_eq(listing(dir), "deep ");
    snprintf(path, sizeof path, "%s/deep", dir);
    ck_assert_int_eq(strncmp(listing(path), ".o.tmp-", 7), 0);
    ck_assert_int_eq(loom_out_dir_commit(d, &err), LOOM_OK);
    loom_out_dir_close(d);
    ck_assert_str_eq(listing(path), "o ");
    ck_assert_str_eq(listing(out), "plan.json ");
    /* a later set replaces it whole: no stale iter-NNN */
    static const char *const three[] = {"iter-000/plan.json", "a", "iter-001/plan.json", "b",
                                        "iter-002/plan.json", "c", NULL};
    static const char *const two[] = {"iter-000/plan.json", "x", "iter-001/plan.json", "y", NULL};
    write_set(out, three);
    ck_assert_str_eq(listing(out), "iter-000 iter-001 iter-002 ");
    write_set(out, two);
    ck_assert_str_eq(listing(out), "iter-000 iter-001 ");
    snprintf(path, sizeof path, "%s/iter-001/plan.json", out);
    char *text = slurp(path);
    ck_assert_str_eq(text, "y");
    free(text);
    snprintf(path, sizeof path, "%s/deep", dir);
    ck_assert_str_eq(listing(path), "o ");
    remove_tree(dir);
}
END_TEST

START_TEST(test_out_dir_keeps_what_loom_did_not_write)
{
    const char *dir = fresh_dir();
    char out[128], path[256];
    snprintf(out, sizeof out, "%s/o", dir);
    static const char *const old_set[] = {"iter-000/plan.json", "a", "iter-005/trace.json", "b",
                                          NULL};
    write_set(out, old_set);
    snprintf(path, sizeof path, "%s/notes.txt", out);
    put_file(path, "mine");
    static const char *const new_set[] = {"plan.json", "p", "summary.txt", "s", NULL};
    write_set(out, new_set);
    ck_assert_str_eq(listing(out), "notes.txt plan.json summary.txt ");
    ck_assert_str_eq(listing(dir), "o ");
    remove_tree(dir);
}
END_TEST

START_TEST(test_out_dir_uncommitted_sets_vanish)
{
    const char *dir = fresh_dir();
    char out[128];
    snprintf(out, sizeof out, "%s/o", dir);
    static const char *const set[] = {"plan.json", "old", NULL};
    write_set(out, set);
    for (int safe = 0; safe < 2; safe++) {
        loom_out_dir *d = NULL;
        loom_error err = {0};
        ck_assert_int_eq(loom_out_dir_begin(out, &d, &err), LOOM_OK);
        stage(d, "iter-000/plan.json", "new");
        stage(d, "iter-001/plan.json", "new");
        if (safe) /* as a SIGTERM handler does */
            loom_out_dir_discard_signal_safe(d);
        loom_out_dir_close(d);
        ck_assert_str_eq(listing(dir), "o ");
        ck_assert_str_eq(listing(out), "plan.json ");
    }
    remove_tree(dir);
}
END_TEST

START_TEST(test_out_dir_sweeps_what_dead_runs_left)
{
    const char *dir = fresh_dir();
    char out[128], name[4200], dead_dir[4300];
    snprintf(out, sizeof out, "%s/o", dir);
    loom_out_dir *d = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_out_dir_begin(out, &d, &err), LOOM_OK);
    /* ".o.tmp-<host>-<pid>-<n>": the same name with the pid of a dead process */
    const char *base = strrchr(loom_out_dir_path(d), '/') + 1;
    unsigned host = 0;
    ck_assert_int_eq(sscanf(base, ".o.tmp-%8x-", &host), 1);
    loom_out_dir_close(d);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        _exit(0);
    ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
    snprintf(name, sizeof name, ".o.tmp-%08x-%ld-7", host, (long)pid);
    snprintf(dead_dir, sizeof dead_dir, "%s/%s", dir, name);
    ck_assert_int_eq(mkdir(dead_dir, 0755), 0);
    snprintf(dead_dir, sizeof dead_dir, "%s/%s/iter-000", dir, name);
    ck_assert_int_eq(mkdir(dead_dir, 0755), 0);
    snprintf(dead_dir, sizeof dead_dir, "%s/%s/iter-000/.plan.json.tmp-1-1", dir, name);
    put_file(dead_dir, "half");
    /* one of a live run (this one) stays */
    snprintf(dead_dir, sizeof dead_dir, "%s/.o.tmp-%08x-%ld-9", dir, host, (long)getpid());
    ck_assert_int_eq(mkdir(dead_dir, 0755), 0);
    static const char *const set[] = {"plan.json", "p", NULL};
    write_set(out, set);
    char want[256];
    snprintf(want, sizeof want, ".o.tmp-%08x-%ld-9 o ", host, (long)getpid());
    ck_assert_str_eq(listing(dir), want);
    remove_tree(dir);
}
END_TEST

START_TEST(test_out_dir_writes_through_a_link)
{
    const char *dir = fresh_dir();
    char real[128], link[128];
    snprintf(real, sizeof real, "%s/real", dir);
    snprintf(link, sizeof link, "%s/link", dir);
    ck_assert_int_eq(mkdir(real, 0755), 0);
    ck_assert_int_eq(symlink("real", link), 0);
    static const char *const one[] = {"iter-000/plan.json", "a", "iter-001/plan.json", "b", NULL};
    static const char *const two[] = {"plan.json", "p", NULL};
    write_set(link, one);
    write_set(link, two);
    struct stat st;
    ck_assert_int_eq(lstat(link, &st), 0);
    ck_assert(S_ISLNK(st.st_mode));
    ck_assert_str_eq(listing(real), "plan.json ");
    ck_assert_str_eq(listing(dir), "link real ");
    /* a file in the way is an error naming it */
    char file[128];
    snprintf(file, sizeof file, "%s/file", dir);
    put_file(file, "x");
    loom_out_dir *d = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_out_dir_begin(file, &d, &err), LOOM_EIO);
    ck_assert_ptr_nonnull(strstr(err.message, "exists and is not a directory"));
    ck_assert_ptr_null(d);
    remove_tree(dir);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("atomic_file");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_replaces_whole_file_and_keeps_mode);
    tcase_add_test(tc, test_dev_full_subpath_fails);
    tcase_add_test(tc, test_missing_directory_fails);
    tcase_add_test(tc, test_read_only_directory_fails);
    tcase_add_test(tc, test_failing_writer_leaves_old_file);
    tcase_add_test(tc, test_disk_full_mid_write_leaves_old_file);
    tcase_add_test(tc, test_dash_writes_stdout);
    tcase_add_test(tc, test_bad_arguments);
    tcase_add_test(tc, test_out_dir_appears_whole);
    tcase_add_test(tc, test_out_dir_keeps_what_loom_did_not_write);
    tcase_add_test(tc, test_out_dir_uncommitted_sets_vanish);
    tcase_add_test(tc, test_out_dir_sweeps_what_dead_runs_left);
    tcase_add_test(tc, test_out_dir_writes_through_a_link);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(suite());
}
