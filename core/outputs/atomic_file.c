/* atomic_file.c - all-or-nothing output files. A destination is resolved
 * once (loom_out_target_open: the folder that holds it opened as a
 * descriptor, its last component kept as a name), so a later chdir()
 * cannot move it; a write goes to a temporary file in that folder
 * (openat), is flushed, fsynced and renamed over the name (renameat). A
 * failure at any step removes the temporary file, so readers see either
 * the old file or the complete new one. Modes are set explicitly from the
 * umask the process had when output was first resolved, so a later
 * umask() cannot loosen them. Also creates the folders of an output path
 * (loom_out_make_dirs_upto). */
#define _GNU_SOURCE
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
static _Atomic int umask_known;
static _Atomic unsigned umask_saved;

struct loom_out_target {
    int dirfd;     /* the folder that holds the file; -1 for stdout */
    unsigned mode; /* of a new file */
    char *name;    /* the file's last component */
    char *path;    /* as given, for messages */
};

unsigned loom_out_umask(void)
{
    if (!atomic_load(&umask_known)) {
        mode_t m = umask(022);
        umask(m);
        atomic_store(&umask_saved, (unsigned)m);
        atomic_store(&umask_known, 1);
    }
    return atomic_load(&umask_saved);
}

unsigned loom_out_next_serial(void)
{
    return atomic_fetch_add(&temp_counter, 1u) + 1u;
}

/* Creates a fresh temporary file ".<name>.tmp-<pid>-<n>" in folder dirfd,
 * private until its mode is set; fills tmp. Returns the fd or -1 with
 * errno set. */
static int open_temp(int dirfd, const char *name, char *tmp, size_t tmp_size)
{
    for (int attempt = 0; attempt < TEMP_ATTEMPTS; attempt++) {
        int len = snprintf(tmp, tmp_size, ".%s.tmp-%ld-%u", name, (long)getpid(),
                           loom_out_next_serial());
        if (len < 0 || (size_t)len >= tmp_size) {
            errno = ENAMETOOLONG;
            return -1;
        }
        int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    errno = EEXIST;
    return -1;
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
static int write_stdout(loom_out_writer writer, void *ctx, loom_error *err)
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

/* LOOM_OK when entry `name` of dirfd is absent or a regular file (its
 * permission bits then in *mode); a link, folder, FIFO, device or socket
 * is refused: a rename would replace it, and a link would have been
 * followed by a plain open. */
static int check_existing(int dirfd, const char *name, const char *shown, unsigned *mode,
                          loom_error *err)
{
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? LOOM_OK
                               : loom_set_error(err, LOOM_EIO, "cannot write %s: %s", shown,
                                                strerror(errno));
    if (S_ISREG(st.st_mode)) {
        if (mode)
            *mode = st.st_mode & 07777;
        return LOOM_OK;
    }
    const char *what = S_ISLNK(st.st_mode)    ? "a symbolic link"
                       : S_ISDIR(st.st_mode)  ? "a folder"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "a device";
    return loom_set_error(err, LOOM_EIO, "cannot write %s: it exists and is %s, not a regular "
                          "file (outputs replace their file by a rename and never follow links)",
                          shown, what);
}

/* Flushes, checks and syncs f after `writer` returned rc; closes f.
 * Returns the first failure, naming `shown`. */
static int finish_stream(FILE *f, int rc, int e, const char *shown, loom_error *err)
{
    int flushed = fflush(f);
    if (flushed != 0)
        e = errno;
    if (flushed != 0 || ferror(f))
        rc = loom_set_error(err, LOOM_EIO, "cannot write %s: %s", shown, strerror(e ? e : EIO));
    else if (rc != LOOM_OK)
        prefix_path(err, shown, rc);
    else if (fsync(fileno(f)) != 0)
        rc = loom_set_error(err, LOOM_EIO, "cannot write %s: fsync failed: %s", shown,
                            strerror(errno));
    if (fclose(f) != 0 && rc == LOOM_OK)
        rc = loom_set_error(err, LOOM_EIO, "cannot write %s: %s", shown, strerror(errno));
    return rc;
}

int loom_write_atomic_at(int dirfd, const char *name, const char *shown, unsigned mode,
                         loom_out_writer writer, void *ctx, loom_error *err)
{
    int rc = check_existing(dirfd, name, shown, &mode, err); /* keep a replaced file's mode */
    if (rc != LOOM_OK)
        return rc;
    char tmp[512];
    int fd = open_temp(dirfd, name, tmp, sizeof tmp);
    if (fd < 0)
        return loom_set_error(err, LOOM_EIO, "cannot write %s: creating a temporary file "
                              "beside it failed: %s", shown, strerror(errno));
    FILE *f = NULL;
    if (fchmod(fd, (mode_t)mode) != 0 || !(f = fdopen(fd, "w"))) {
        rc = loom_set_error(err, LOOM_EIO, "cannot write %s: %s", shown, strerror(errno));
        close(fd);
        goto fail;
    }
    errno = 0;
    rc = writer(ctx, f, err);
    rc = finish_stream(f, rc, errno, shown, err); /* a failed buffered write left errno */
    if (rc != LOOM_OK)
        goto fail;
    if (renameat(dirfd, tmp, dirfd, name) != 0) {
        rc = loom_set_error(err, LOOM_EIO, "cannot write %s: renaming %s over it failed: %s",
                            shown, tmp, strerror(errno));
        goto fail;
    }
    (void)fsync(dirfd); /* some file systems refuse it: not an error */
    return LOOM_OK;
fail:
    unlinkat(dirfd, tmp, 0);
    return rc;
}

/* Splits path into its folder (malloc'd into *dir) and last component. */
static const char *split_path(const char *path, char **dir)
{
    const char *slash = strrchr(path, '/');
    size_t dlen = !slash ? 1 : slash == path ? 1 : (size_t)(slash - path);
    *dir = malloc(dlen + 1);
    if (!*dir)
        return NULL;
    if (!slash)
        strcpy(*dir, ".");
    else if (slash == path)
        strcpy(*dir, "/");
    else {
        memcpy(*dir, path, dlen);
        (*dir)[dlen] = 0;
    }
    return slash ? slash + 1 : path;
}

int loom_out_target_open(const char *path, loom_out_target **out, loom_error *err)
{
    *out = NULL;
    if (!path || !*path)
        return loom_set_error(err, LOOM_EINVAL, "output: no path given");
    loom_out_target *t = calloc(1, sizeof *t);
    char *dir = NULL;
    if (!t || !(t->path = strdup(path))) {
        free(t);
        return loom_set_error(err, LOOM_ENOMEM, "cannot write %s: out of memory", path);
    }
    t->dirfd = -1;
    t->mode = 0666u & ~loom_out_umask();
    int rc = LOOM_OK;
    if (strcmp(path, "-") == 0)
        goto done;
    const char *base = split_path(path, &dir);
    if (!base || !(t->name = strdup(base)))
        rc = loom_set_error(err, LOOM_ENOMEM, "cannot write %s: out of memory", path);
    else if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
        rc = loom_set_error(err, LOOM_EIO, "cannot write %s: %s", path, strerror(EISDIR));
    else if ((t->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        rc = loom_set_error(err, LOOM_EIO, "cannot write %s: its folder %s: %s", path, dir,
                            strerror(errno));
    else
        rc = check_existing(t->dirfd, t->name, path, NULL, err);
done:
    free(dir);
    if (rc != LOOM_OK) {
        loom_out_target_close(t);
        return rc;
    }
    *out = t;
    return LOOM_OK;
}

int loom_out_target_write(const loom_out_target *t, loom_out_writer writer, void *ctx,
                          loom_error *err)
{
    if (!t || !writer)
        return loom_set_error(err, LOOM_EINVAL, "output: no target or no writer given");
    if (t->dirfd < 0)
        return write_stdout(writer, ctx, err);
    return loom_write_atomic_at(t->dirfd, t->name, t->path, t->mode, writer, ctx, err);
}

const char *loom_out_target_path(const loom_out_target *t)
{
    return t ? t->path : NULL;
}

int loom_out_target_remove(const loom_out_target *t)
{
    if (!t || t->dirfd < 0 || unlinkat(t->dirfd, t->name, 0) == 0 || errno == ENOENT)
        return LOOM_OK;
    return LOOM_EIO;
}

void loom_out_target_close(loom_out_target *t)
{
    if (!t)
        return;
    if (t->dirfd >= 0)
        close(t->dirfd);
    free(t->name);
    free(t->path);
    free(t);
}

int loom_write_atomic(const char *path, loom_out_writer writer, void *ctx, loom_error *err)
{
    if (!path || !*path || !writer)
        return loom_set_error(err, LOOM_EINVAL, "output: no path or no writer given");
    loom_out_target *t = NULL;
    int rc = loom_out_target_open(path, &t, err);
    if (rc == LOOM_OK)
        rc = loom_out_target_write(t, writer, ctx, err);
    loom_out_target_close(t);
    return rc;
}

/* ---- folders ------------------------------------------------------------- */

/* Creates the folders of the first `upto` characters of dir (dir and its
 * missing parents, or only its parents) with mode 0777 minus the saved
 * umask; errors name dir. */
int loom_out_make_dirs_upto(const char *dir, size_t upto, loom_error *err)
{
    size_t len = strlen(dir);
    char *p = malloc(len + 1);
    if (!p)
        return loom_set_error(err, LOOM_ENOMEM, "cannot create directory %s: out of memory",
                              dir);
    memcpy(p, dir, len + 1);
    int rc = LOOM_OK;
    for (size_t i = 1; i <= upto && i <= len && rc == LOOM_OK; i++) {
        if (p[i] != '/' && p[i] != 0)
            continue;
        char c = p[i];
        p[i] = 0;
        struct stat st;
        if (mkdir(p, 0700) == 0)
            (void)chmod(p, 0777u & ~loom_out_umask());
        else if (errno != EEXIST)
            rc = loom_set_error(err, LOOM_EIO, "cannot create directory %s: %s", p,
                                strerror(errno));
        if (rc == LOOM_OK && (stat(p, &st) != 0 || !S_ISDIR(st.st_mode)))
            rc = loom_set_error(err, LOOM_EIO, "cannot create directory %s: %s exists "
                                "and is not a directory", dir, p);
        p[i] = c;
    }
    free(p);
    return rc;
}
