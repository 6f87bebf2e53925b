/* test_atomic_file.c - loom_write_atomic: whole replacement, the file mode
 * kept, and every failure (no directory, read-only directory, a full or
 * size-limited disk, a failing writer) leaving the old file intact, no
 * temporary file behind and LOOM_EIO naming the path. */
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
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(suite());
}
