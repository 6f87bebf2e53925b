/* atomic_file.c - all-or-nothing output files: write a temporary file
 * beside the target, flush and fsync it, rename it over the target. A
 * failure at any step removes the temporary file, so readers see either
 * the old file or the complete new one. Also writes the six plan outputs
 * into a directory, and output folders that replace the previous set as a
 * whole (loom_out_dir). */
#define _GNU_SOURCE /* syscall */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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

/* Creates the folders of the first `upto` characters of dir (dir and its
 * missing parents, or only its parents) with mode 0755; errors name dir. */
static int make_dirs_upto(const char *dir, size_t upto, loom_error *err)
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

/* Creates dir and its missing parents with mode 0755. */
static int make_dirs(const char *dir, loom_error *err)
{
    return make_dirs_upto(dir, strlen(dir), err);
}

/* loom_write_atomic's callback for one file of the set (ctx: put_ctx). */
struct put_ctx {
    const loom_plan *plan;
    const loom_out_file *file;
};

static int put_file(void *ctx, FILE *out, loom_error *err)
{
    const struct put_ctx *p = ctx;
    return p->file->write(p->plan, out, err);
}

int loom_write_outputs(const loom_plan *plan, const char *dir, loom_error *err)
{
    if (!dir || !*dir)
        return loom_set_error(err, LOOM_EINVAL, "outputs: no directory given");
    int rc = make_dirs(dir, err);
    size_t len = strlen(dir);
    char *path = malloc(len + 32);
    if (rc == LOOM_OK && !path)
        rc = loom_set_error(err, LOOM_ENOMEM, "outputs: out of memory");
    for (size_t i = 0; rc == LOOM_OK && i < loom_out_n_files; i++) {
        const loom_out_file *f = &loom_out_files[i];
        snprintf(path, len + 32, "%s%s%s", dir, dir[len - 1] == '/' ? "" : "/", f->name);
        int fits = 1;
        char reason[LOOM_OUT_REASON_MAX];
        if (f->export && (rc = f->export->fits(plan, &fits, reason, err)) != LOOM_OK)
            break;
        if (!fits) {
            /* the consumer cannot take the plan: no file, and no stale one */
            if (unlink(path) != 0 && errno != ENOENT)
                rc = loom_set_error(err, LOOM_EIO, "cannot remove %s: %s", path,
                                    strerror(errno));
            continue;
        }
        struct put_ctx ctx = {plan, f};
        rc = loom_write_atomic(path, put_file, &ctx, err);
    }
    free(path);
    return rc;
}

/* ---- output folders replaced as a whole --------------------------------- */

#define OUT_PATH_MAX 4096
#define INSIDE_NAME "loom-out" /* staging inside the folder: .loom-out.tmp-... */
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

struct loom_out_dir {
    char target[OUT_PATH_MAX];  /* the folder as given, no trailing '/' */
    char parent[OUT_PATH_MAX];  /* the folder holding it */
    char base[OUT_PATH_MAX];    /* its last component */
    char staging[OUT_PATH_MAX]; /* where the run writes */
    int inside;                 /* staging lies inside target */
    volatile sig_atomic_t done; /* committed */
};

/* 1 for the name of one of the files of a set (loom_out_files). */
static int is_set_file(const char *name)
{
    for (size_t i = 0; i < loom_out_n_files; i++)
        if (strcmp(name, loom_out_files[i].name) == 0)
            return 1;
    return 0;
}

/* 1 for ".<output file>.tmp-..." (an interrupted loom_write_atomic). */
static int is_temp_file(const char *name)
{
    if (name[0] != '.')
        return 0;
    for (size_t i = 0; i < loom_out_n_files; i++) {
        size_t n = strlen(loom_out_files[i].name);
        if (strncmp(name + 1, loom_out_files[i].name, n) == 0 &&
            strncmp(name + 1 + n, ".tmp-", 5) == 0)
            return 1;
    }
    return 0;
}

/* 1 for "iter-" and digits. */
static int is_iter_dir(const char *name)
{
    if (strncmp(name, "iter-", 5) != 0 || !name[5])
        return 0;
    for (const char *p = name + 5; *p; p++)
        if (*p < '0' || *p > '9')
            return 0;
    return 1;
}

/* One record of getdents64. */
struct raw_dirent {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

static int clear_set(int fd, int depth, int remove);

/* The type (DT_*) of entry `name` of folder fd. */
static int entry_type(int fd, const char *name, int type)
{
    struct stat st;
    if (type != DT_UNKNOWN || fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return type;
    return S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_LNK;
}

/* Removes (or with !remove only looks at) the entries of set folder fd
 * that Loom writes: the output files, temporary files of atomic writes
 * and, at depth 0, iter-NNN folders of them. Returns the number of other
 * entries (-1 when fd cannot be read); *removed counts what went. Only
 * async-signal-safe calls. */
static int visit_set(int fd, int depth, int remove, int *removed)
{
    _Alignas(8) char buf[2048];
    int foreign = 0;
    for (;;) {
        long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
        if (n < 0)
            return -1;
        if (n == 0)
            return foreign;
        for (long off = 0; off < n;) {
            const struct raw_dirent *e = (const void *)(buf + off);
            off += e->d_reclen;
            const char *name = e->d_name;
            if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
                continue;
            int type = entry_type(fd, name, e->d_type);
            if ((is_set_file(name) || is_temp_file(name)) && type == DT_REG) {
                if (!remove)
                    continue;
                if (unlinkat(fd, name, 0) == 0)
                    ++*removed;
                else if (errno != ENOENT)
                    foreign++;
            } else if (depth == 0 && is_iter_dir(name) && type == DT_DIR) {
                int sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                int left = sub < 0 ? -1 : clear_set(sub, 1, remove);
                if (sub >= 0)
                    close(sub);
                if (left != 0)
                    foreign++;
                else if (remove && unlinkat(fd, name, AT_REMOVEDIR) == 0)
                    ++*removed;
                else if (remove && errno != ENOENT)
                    foreign++;
            } else {
                foreign++;
            }
        }
    }
}

/* visit_set until a pass removes nothing (a folder changed while it is
 * read may hide entries from one pass). Async-signal-safe. */
static int clear_set(int fd, int depth, int remove)
{
    int foreign = 0;
    for (int pass = 0; pass < 4; pass++) {
        int removed = 0;
        foreign = visit_set(fd, depth, remove, &removed);
        if (foreign < 0 || !remove || removed == 0)
            break;
        lseek(fd, 0, SEEK_SET);
    }
    return foreign;
}

/* Removes Loom's entries of set folder `name` (relative to dirfd) and the
 * folder when nothing else is left in it. 0 when it is gone; -1 when it
 * holds something else or cannot be read. Async-signal-safe. */
static int remove_set_at(int dirfd, const char *name)
{
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -1;
    int foreign = clear_set(fd, 0, 1);
    close(fd);
    if (foreign != 0)
        return -1;
    return unlinkat(dirfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT ? 0 : -1;
}

/* 1 when folder `path` holds nothing but a set Loom wrote (or nothing). */
static int is_pure_set(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return 0;
    int foreign = clear_set(fd, 0, 0);
    close(fd);
    return foreign == 0;
}

/* Swaps two paths atomically (renameat2 RENAME_EXCHANGE); -1 with errno
 * ENOSYS or EINVAL where the system or file system cannot. */
static int exchange_at(int fd_a, const char *a, int fd_b, const char *b)
{
#ifdef SYS_renameat2
    return (int)syscall(SYS_renameat2, fd_a, a, fd_b, b, RENAME_EXCHANGE);
#else
    (void)fd_a, (void)a, (void)fd_b, (void)b;
    errno = ENOSYS;
    return -1;
#endif
}

/* This host's tag in staging names (FNV-1a of the host name), so runs on
 * other hosts sharing the folder are never mistaken for dead ones. */
static unsigned host_tag(void)
{
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    uint32_t h = 2166136261u;
    for (const char *p = host; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    return h;
}

/* Creates a fresh folder "<dir>/.<base><kind><host>-<pid>-<n>" (mode 0755
 * minus the umask) and puts its path in buf. 0, or -1 with errno. */
static int make_unique_dir(const char *dir, const char *base, const char *kind, char *buf)
{
    for (int attempt = 0; attempt < TEMP_ATTEMPTS; attempt++) {
        unsigned n = atomic_fetch_add(&temp_counter, 1u) + 1u;
        int len = snprintf(buf, OUT_PATH_MAX, "%s/.%s%s%08x-%ld-%u", dir, base, kind, host_tag(),
                           (long)getpid(), n);
        if (len < 0 || len >= OUT_PATH_MAX) {
            errno = ENAMETOOLONG;
            return -1;
        }
        if (mkdir(buf, 0755) == 0)
            return 0;
        if (errno != EEXIST)
            return -1;
    }
    errno = EEXIST;
    return -1;
}

/* Removes what runs of this host that died before finishing left in dir:
 * folders ".<base><kind><host>-<pid>-<n>" whose process is gone. */
static void sweep(const char *dir, const char *base, const char *kind)
{
    char prefix[OUT_PATH_MAX];
    int plen = snprintf(prefix, sizeof prefix, ".%s%s%08x-", base, kind, host_tag());
    if (plen < 0 || plen >= (int)sizeof prefix)
        return;
    DIR *d = opendir(dir);
    if (!d)
        return;
    int dfd = dirfd(d);
    for (struct dirent *e = readdir(d); e; e = readdir(d)) {
        if (strncmp(e->d_name, prefix, (size_t)plen) != 0)
            continue;
        char *end = NULL;
        long pid = strtol(e->d_name + plen, &end, 10);
        if (pid <= 0 || !end || *end != '-' || pid == (long)getpid())
            continue;
        if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
            remove_set_at(dfd, e->d_name);
    }
    closedir(d);
}

int loom_out_dir_begin(const char *dir, loom_out_dir **out, loom_error *err)
{
    *out = NULL;
    if (!dir || !*dir)
        return loom_set_error(err, LOOM_EINVAL, "outputs: no directory given");
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/')
        len--;
    if (len + 80 >= OUT_PATH_MAX)
        return loom_set_error(err, LOOM_EINVAL, "cannot write %s: the path is too long", dir);
    loom_out_dir *d = calloc(1, sizeof *d);
    if (!d)
        return loom_set_error(err, LOOM_ENOMEM, "cannot write %s: out of memory", dir);
    memcpy(d->target, dir, len);
    const char *slash = strrchr(d->target, '/');
    snprintf(d->base, sizeof d->base, "%s", slash ? slash + 1 : d->target);
    if (!slash)
        strcpy(d->parent, ".");
    else if (slash == d->target)
        strcpy(d->parent, "/");
    else
        memcpy(d->parent, d->target, (size_t)(slash - d->target));
    int rc = slash && slash != d->target
                 ? make_dirs_upto(d->target, (size_t)(slash - d->target), err)
                 : LOOM_OK;
    struct stat st, pst;
    if (rc == LOOM_OK && lstat(d->target, &st) == 0) {
        if (S_ISLNK(st.st_mode) && stat(d->target, &st) == 0 && S_ISDIR(st.st_mode))
            d->inside = 1; /* keep the link: write into the folder it names */
        else if (!S_ISDIR(st.st_mode))
            rc = loom_set_error(err, LOOM_EIO, "cannot write %s: it exists and is not a "
                                "directory", d->target);
        else if (stat(d->parent, &pst) == 0 && pst.st_dev != st.st_dev)
            d->inside = 1; /* a mount point cannot be renamed */
    }
    if (!strcmp(d->base, ".") || !strcmp(d->base, "..") || !strcmp(d->base, "/") || !d->base[0])
        d->inside = 1;
    if (rc == LOOM_OK && !d->inside) {
        sweep(d->parent, d->base, ".tmp-");
        sweep(d->parent, d->base, ".old-");
        if (make_unique_dir(d->parent, d->base, ".tmp-", d->staging) != 0) {
            if (errno == EACCES || errno == EPERM || errno == EROFS)
                d->inside = 1; /* the folder may still be writable */
            else
                rc = loom_set_error(err, LOOM_EIO, "cannot write %s: creating a temporary "
                                    "folder in %s failed: %s", d->target, d->parent,
                                    strerror(errno));
        }
    }
    if (rc == LOOM_OK && d->inside) {
        rc = make_dirs(d->target, err);
        if (rc == LOOM_OK) {
            sweep(d->target, INSIDE_NAME, ".tmp-");
            if (make_unique_dir(d->target, INSIDE_NAME, ".tmp-", d->staging) != 0)
                rc = loom_set_error(err, LOOM_EIO, "cannot write %s: creating a temporary "
                                    "folder in it failed: %s", d->target, strerror(errno));
        }
    }
    if (rc != LOOM_OK) {
        free(d);
        return rc;
    }
    *out = d;
    return LOOM_OK;
}

const char *loom_out_dir_path(const loom_out_dir *d)
{
    return d ? d->staging : NULL;
}

/* Names of the entries of folder fd (malloc'd array of malloc'd strings,
 * NULL-terminated), or NULL when out of memory or unreadable. */
static char **list_names(int fd)
{
    int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    DIR *dir = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    if (!dir) {
        if (dup_fd >= 0)
            close(dup_fd);
        return NULL;
    }
    rewinddir(dir);
    size_t n = 0, cap = 16;
    char **names = malloc(cap * sizeof *names);
    for (struct dirent *e = names ? readdir(dir) : NULL; e; e = readdir(dir)) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (n + 1 >= cap) {
            char **p = realloc(names, 2 * cap * sizeof *names);
            if (!p)
                break;
            names = p;
            cap *= 2;
        }
        if (!(names[n] = strdup(e->d_name)))
            break;
        n++;
    }
    closedir(dir);
    if (names)
        names[n] = NULL;
    return names;
}

static void free_names(char **names)
{
    for (size_t i = 0; names && names[i]; i++)
        free(names[i]);
    free(names);
}

/* Commits entry by entry into a folder that keeps what Loom did not write
 * (a mount point, a link, or a folder with other files): Loom's entries
 * the new set lacks go, then each new file and iter-NNN folder replaces
 * its namesake. Not atomic as a whole; each entry is. */
static int commit_entries(loom_out_dir *d, loom_error *err)
{
    int rc = make_dirs(d->target, err);
    if (rc != LOOM_OK)
        return rc;
    int sfd = open(d->staging, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int tfd = open(d->target, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    char **old = tfd >= 0 ? list_names(tfd) : NULL;
    char **add = sfd >= 0 ? list_names(sfd) : NULL;
    if (!old || !add) {
        rc = loom_set_error(err, LOOM_EIO, "cannot write %s: %s", d->target,
                            strerror(errno ? errno : EIO));
        goto done;
    }
    for (size_t i = 0; old[i]; i++) { /* stale entries of a previous set */
        struct stat st;
        if (fstatat(sfd, old[i], &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT)
            continue;
        if (is_set_file(old[i]) && fstatat(tfd, old[i], &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISREG(st.st_mode))
            unlinkat(tfd, old[i], 0);
        else if (is_iter_dir(old[i]))
            remove_set_at(tfd, old[i]);
    }
    for (size_t i = 0; add[i] && rc == LOOM_OK; i++) {
        const char *name = add[i];
        if (!is_set_file(name) && !is_iter_dir(name))
            continue;
        if (renameat(sfd, name, tfd, name) == 0)
            continue;
        if (is_iter_dir(name) && (errno == EEXIST || errno == ENOTEMPTY)) {
            if (exchange_at(sfd, name, tfd, name) == 0) {
                remove_set_at(sfd, name); /* the previous iter-NNN */
                continue;
            }
            if (remove_set_at(tfd, name) == 0 && renameat(sfd, name, tfd, name) == 0)
                continue;
        }
        rc = loom_set_error(err, LOOM_EIO, "cannot write %s/%s: %s", d->target, name,
                            strerror(errno));
    }
done:
    free_names(old);
    free_names(add);
    if (sfd >= 0)
        close(sfd);
    if (tfd >= 0)
        close(tfd);
    if (rc == LOOM_OK) {
        remove_set_at(AT_FDCWD, d->staging);
        sync_dir(d->target);
    }
    return rc;
}

/* Replaces target by the staging folder in one rename (or one exchange
 * with the previous set, which then goes). */
static int commit_whole(loom_out_dir *d, loom_error *err)
{
    for (int attempt = 0; attempt < 16; attempt++) {
        struct stat st;
        if (lstat(d->target, &st) != 0) {
            if (errno != ENOENT)
                return loom_set_error(err, LOOM_EIO, "cannot write %s: %s", d->target,
                                      strerror(errno));
            if (rename(d->staging, d->target) == 0) {
                sync_dir(d->parent);
                return LOOM_OK;
            }
            if (errno == EEXIST || errno == ENOTEMPTY)
                continue; /* another run put its set there first */
            return loom_set_error(err, LOOM_EIO, "cannot write %s: renaming %s over it failed: "
                                  "%s", d->target, d->staging, strerror(errno));
        }
        if (!S_ISDIR(st.st_mode) || !is_pure_set(d->target))
            return commit_entries(d, err); /* what is not Loom's stays */
        (void)chmod(d->staging, st.st_mode & 07777);
        if (exchange_at(AT_FDCWD, d->staging, AT_FDCWD, d->target) == 0) {
            sync_dir(d->parent);
            remove_set_at(AT_FDCWD, d->staging); /* the previous set */
            return LOOM_OK;
        }
        if (errno == ENOENT)
            continue;
        if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
            return loom_set_error(err, LOOM_EIO, "cannot write %s: replacing it by %s failed: "
                                  "%s", d->target, d->staging, strerror(errno));
        /* no exchange here: the previous set steps aside first */
        char old[OUT_PATH_MAX];
        if (make_unique_dir(d->parent, d->base, ".old-", old) != 0)
            return loom_set_error(err, LOOM_EIO, "cannot write %s: %s", d->target,
                                  strerror(errno));
        if (rename(d->target, old) != 0) {
            int e = errno;
            rmdir(old);
            if (e == ENOENT)
                continue;
            return loom_set_error(err, LOOM_EIO, "cannot write %s: %s", d->target, strerror(e));
        }
        if (rename(d->staging, d->target) != 0) {
            int e = errno;
            (void)rename(old, d->target);
            return loom_set_error(err, LOOM_EIO, "cannot write %s: renaming %s over it failed: "
                                  "%s", d->target, d->staging, strerror(e));
        }
        sync_dir(d->parent);
        remove_set_at(AT_FDCWD, old);
        return LOOM_OK;
    }
    return loom_set_error(err, LOOM_EIO, "cannot write %s: it kept changing while it was being "
                          "replaced", d->target);
}

int loom_out_dir_commit(loom_out_dir *d, loom_error *err)
{
    if (!d || d->done)
        return loom_set_error(err, LOOM_EINVAL, "outputs: nothing to commit");
    sync_dir(d->staging);
    int rc = d->inside ? commit_entries(d, err) : commit_whole(d, err);
    if (rc == LOOM_OK)
        d->done = 1;
    return rc;
}

void loom_out_dir_discard_signal_safe(const loom_out_dir *d)
{
    if (!d || d->done)
        return;
    for (int attempt = 0; attempt < 3; attempt++) /* another thread may still write */
        if (remove_set_at(AT_FDCWD, d->staging) == 0)
            return;
}

void loom_out_dir_close(loom_out_dir *d)
{
    if (!d)
        return;
    loom_out_dir_discard_signal_safe(d);
    free(d);
}
