/* atomic_file.c - all-or-nothing output files: write a temporary file
 * beside the target, flush and fsync it, rename it over the target. A
 * failure at any step removes the temporary file, so readers see either
 * the old file or the complete new one. Also writes the six plan outputs
 * into a directory. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include "output.h"

#define TEMP_ATTEMPTS 64

static _Atomic unsigned temp_counter; /* distinguishes concurrent writers */

/* Creates a fresh temporary file beside `path` (directory `dir`, file
 * name `base`); fills tmp (tmp_size bytes) with its name. Returns the fd
 * or -1 with errno set. Mode 0666 minus the umask, like any new file. */
static int open_temp(const char *dir, const char *base, char *tmp, size_t tmp_size)
{
    for (int attempt = 0; attempt < TEMP_ATTEMPTS; attempt++) {
        unsigned n = atomic_fetch_add(&temp_counter, 1u) + 1u;
        snprintf(tmp, tmp_size, "%s/.%s.tmp-%ld-%u", dir, base, (long)getpid(), n);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    errno = EEXIST;
    return -1;
}

/* Makes the written data and the rename durable; failures to sync the
 * directory are not errors (some file systems refuse it). */
static void sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

/* Prefixes err's message with "path: " (keeps the code). */
static int prefix_path(loom_error *err, const char *path, int rc)
{
    if (!err)
        return rc;
    char msg[LOOM_ERROR_MSG_BYTES];
    snprintf(msg, sizeof msg, "%s", err->message);
    loom_set_error(err, rc, "%s: %s", path, msg);
    return rc;
}

/* Writes straight to stdout (path "-"). */
static int write_stdout(int (*writer)(void *ctx, FILE *out, loom_error *err),
                        void *ctx, loom_error *err)
{
    int rc = writer(ctx, stdout, err);
    if (rc != LOOM_OK)
        return rc;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        int e = errno ? errno : EIO;
        return loom_set_error(err, LOOM_EIO, "cannot write to standard output: %s",
                              strerror(e));
    }
    return LOOM_OK;
}

int loom_write_atomic(const char *path,
                      int (*writer)(void *ctx, FILE *out, loom_error *err),
                      void *ctx, loom_error *err)
{
    if (!path || !*path || !writer)
        return loom_set_error(err, LOOM_EINVAL, "output: no path or no writer given");
    if (strcmp(path, "-") == 0)
        return write_stdout(writer, ctx, err);
    struct stat target; /* renaming over a device node (/dev/null) would replace it */
    if (stat(path, &target) == 0 && !S_ISREG(target.st_mode))
        return loom_set_error(err, LOOM_EIO, "cannot write %s: it exists and is not a regular "
                              "file (outputs replace their file by a rename)", path);

    size_t len = strlen(path);
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (!*base)
        return loom_set_error(err, LOOM_EIO, "cannot write %s: %s", path,
                              strerror(EISDIR));
    char *dir = malloc(len + 2);
    char *tmp = malloc(2 * len + 64);
    if (!dir || !tmp) {
        free(dir);
        free(tmp);
        return loom_set_error(err, LOOM_ENOMEM, "cannot write %s: out of memory", path);
    }
    if (!slash)
        strcpy(dir, ".");
    else if (slash == path)
        strcpy(dir, "/");
    else {
        memcpy(dir, path, (size_t)(slash - path));
        dir[slash - path] = 0;
    }

    int rc = LOOM_OK, fd = open_temp(dir, base, tmp, 2 * len + 64);
    FILE *f = NULL;
    if (fd < 0) {
        rc = loom_set_error(err, LOOM_EIO, "cannot write %s: creating a temporary file "
                            "in %s failed: %s", path, dir, strerror(errno));
        goto done;
    }
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
        (void)fchmod(fd, st.st_mode & 07777); /* keep the replaced file's mode */
    f = fdopen(fd, "w");
    if (!f) {
        rc = loom_set_error(err, LOOM_EIO, "cannot write %s: %s", path, strerror(errno));
        close(fd);
        goto fail;
    }
    errno = 0;
    rc = writer(ctx, f, err);
    int e = errno; /* a failed buffered write leaves its errno here */
    int flushed = fflush(f);
    if (flushed != 0)
        e = errno;
    if (flushed != 0 || ferror(f)) {
        rc = loom_set_error(err, LOOM_EIO, "cannot write %s: %s", path,
                            strerror(e ? e : EIO));
    } else if (rc != LOOM_OK) {
        prefix_path(err, path, rc);
    } else if (fsync(fileno(f)) != 0) {
        rc = loom_set_error(err, LOOM_EIO, "cannot write %s: fsync failed: %s", path,
                            strerror(errno));
    }
    if (fclose(f) != 0 && rc == LOOM_OK)
        rc = loom_set_error(err, LOOM_EIO, "cannot write %s: %s", path, strerror(errno));
    if (rc != LOOM_OK)
        goto fail;
    if (rename(tmp, path) != 0) {
        rc = loom_set_error(err, LOOM_EIO, "cannot write %s: renaming %s over it failed: %s",
                            path, tmp, strerror(errno));
        goto fail;
    }
    sync_dir(dir);
    goto done;
fail:
    unlink(tmp);
done:
    free(dir);
    free(tmp);
    return rc;
}

/* ---- the six outputs of a plan ---------------------------------------- */

/* Creates dir and its missing parents with mode 0755. */
static int make_dirs(const char *dir, loom_error *err)
{
    size_t len = strlen(dir);
    char *p = malloc(len + 1);
    if (!p)
        return loom_set_error(err, LOOM_ENOMEM, "cannot create directory %s: out of memory",
                              dir);
    memcpy(p, dir, len + 1);
    int rc = LOOM_OK;
    for (size_t i = 1; i <= len && rc == LOOM_OK; i++) {
        if (p[i] != '/' && p[i] != 0)
            continue;
        char c = p[i];
        p[i] = 0;
        struct stat st;
        if (mkdir(p, 0755) != 0 && errno != EEXIST)
            rc = loom_set_error(err, LOOM_EIO, "cannot create directory %s: %s", p,
                                strerror(errno));
        else if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode))
            rc = loom_set_error(err, LOOM_EIO, "cannot create directory %s: %s exists "
                                "and is not a directory", dir, p);
        p[i] = c;
    }
    free(p);
    return rc;
}

/* Adapters from loom_write_atomic's callback to the writers (ctx: plan). */
static int put_plan(void *ctx, FILE *out, loom_error *err)
{
    return loom_write_plan_json(ctx, out, err);
}

static int put_trace(void *ctx, FILE *out, loom_error *err)
{
    return loom_write_trace_json(ctx, out, err);
}

static int put_csv(void *ctx, FILE *out, loom_error *err)
{
    return loom_write_schedule_csv(ctx, out, err);
}

static int put_svg(void *ctx, FILE *out, loom_error *err)
{
    return loom_write_svg(ctx, out, err);
}

static int put_summary(void *ctx, FILE *out, loom_error *err)
{
    return loom_write_summary(ctx, out, err);
}

static int put_html(void *ctx, FILE *out, loom_error *err)
{
    return loom_write_html_report(ctx, out, err);
}

int loom_write_outputs(const loom_plan *plan, const char *dir, loom_error *err)
{
    static const struct {
        const char *name;
        int (*put)(void *ctx, FILE *out, loom_error *err);
    } files[] = {
        {"plan.json", put_plan},     {"trace.json", put_trace},
        {"schedule.csv", put_csv},   {"timeline.svg", put_svg},
        {"summary.txt", put_summary}, {"report.html", put_html},
    };
    if (!dir || !*dir)
        return loom_set_error(err, LOOM_EINVAL, "outputs: no directory given");
    int rc = make_dirs(dir, err);
    size_t len = strlen(dir);
    char *path = malloc(len + 32);
    if (rc == LOOM_OK && !path)
        rc = loom_set_error(err, LOOM_ENOMEM, "outputs: out of memory");
    for (size_t i = 0; rc == LOOM_OK && i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, len + 32, "%s%s%s", dir, dir[len - 1] == '/' ? "" : "/",
                 files[i].name);
        rc = loom_write_atomic(path, files[i].put, (void *)plan, err);
    }
    free(path);
    return rc;
}
