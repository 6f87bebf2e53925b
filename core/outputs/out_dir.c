/* out_dir.c - output folders that replace the previous set as a whole
 * (loom_out_dir): a staging folder beside the target (or inside it when it
 * cannot be renamed) receives the run's files and is put in place at the
 * end. Every folder involved is opened once, in loom_out_dir_begin, before
 * any plugin code runs, and every later step is an *at() call on those
 * descriptors: a plugin's chdir() cannot move the output, and the staging
 * folder can be removed on every way out, even after a plugin lowered
 * RLIMIT_NOFILE (the limit Loom started with is restored first). */
#define _GNU_SOURCE /* syscall */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>
#include "output.h"

#define OUT_PATH_MAX 4096
#define NAME_BYTES 256
#define TEMP_ATTEMPTS 64
#define INSIDE_NAME "loom-out" /* staging inside the folder: .loom-out.tmp-... */
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

struct loom_out_dir {
    char target[OUT_PATH_MAX];  /* the folder as given, no trailing '/' (messages) */
    char parent[OUT_PATH_MAX];  /* the folder holding it (messages) */
    char base[OUT_PATH_MAX];    /* its last component */
    char staging[OUT_PATH_MAX]; /* the staging folder's path (messages) */
    char staging_name[NAME_BYTES]; /* its name in home_fd */
    int parent_fd;              /* the folder holding target */
    int target_fd;              /* target itself, when staging lies inside it, else -1 */
    int home_fd;                /* the folder holding staging: parent_fd or target_fd */
    int staging_fd;             /* the staging folder */
    unsigned dir_mode;          /* of the folders Loom creates */
    struct rlimit nofile;       /* RLIMIT_NOFILE when the run began */
    int inside;                 /* staging lies inside target */
    volatile sig_atomic_t done; /* committed */
};

/* 1 for the name of one of the files of a set (loom_out_set_format). */
static int is_set_file(const char *name)
{
    for (size_t i = 0; i < loom_out_set_size(); i++)
        if (strcmp(name, loom_out_set_format(i)->name) == 0)
            return 1;
    return 0;
}

/* 1 for ".<output file>.tmp-..." (an interrupted loom_write_atomic). */
static int is_temp_file(const char *name)
{
    if (name[0] != '.')
        return 0;
    for (size_t i = 0; i < loom_out_set_size(); i++) {
        size_t n = strlen(loom_out_set_format(i)->name);
        if (strncmp(name + 1, loom_out_set_format(i)->name, n) == 0 &&
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

/* 1 when entry `name` of dirfd holds nothing but a set Loom wrote (or nothing). */
static int is_pure_set_at(int dirfd, const char *name)
{
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
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

/* Creates a fresh folder ".<base><kind><host>-<pid>-<n>" in dirfd (mode
 * `mode`, set explicitly) and puts its name in buf (NAME_BYTES). 0, or -1
 * with errno. */
static int make_unique_dir(int dirfd, const char *base, const char *kind, unsigned mode,
                           char *buf)
{
    for (int attempt = 0; attempt < TEMP_ATTEMPTS; attempt++) {
        int len = snprintf(buf, NAME_BYTES, ".%s%s%08x-%ld-%u", base, kind, host_tag(),
                           (long)getpid(), loom_out_next_serial());
        if (len < 0 || len >= NAME_BYTES) {
            errno = ENAMETOOLONG;
            return -1;
        }
        if (mkdirat(dirfd, buf, 0700) == 0) {
            (void)fchmodat(dirfd, buf, (mode_t)mode, 0);
            return 0;
        }
        if (errno != EEXIST)
            return -1;
    }
    errno = EEXIST;
    return -1;
}

/* Removes what runs of this host that died before finishing left in
 * folder dirfd: folders ".<base><kind><host>-<pid>-<n>" whose process is
 * gone. */
static void sweep(int dirfd, const char *base, const char *kind)
{
    char prefix[OUT_PATH_MAX];
    int plen = snprintf(prefix, sizeof prefix, ".%s%s%08x-", base, kind, host_tag());
    if (plen < 0 || plen >= (int)sizeof prefix)
        return;
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    for (struct dirent *e = readdir(d); e; e = readdir(d)) {
        if (strncmp(e->d_name, prefix, (size_t)plen) != 0)
            continue;
        char *end = NULL;
        long pid = strtol(e->d_name + plen, &end, 10);
        if (pid <= 0 || !end || *end != '-' || pid == (long)getpid())
            continue;
        if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
            remove_set_at(dirfd, e->d_name);
    }
    closedir(d);
}

/* Splits dir into d->target, d->parent and d->base; creates the missing
 * parents. */
static int split_target(loom_out_dir *d, const char *dir, size_t len, loom_error *err)
{
    memcpy(d->target, dir, len);
    const char *slash = strrchr(d->target, '/');
    snprintf(d->base, sizeof d->base, "%s", slash ? slash + 1 : d->target);
    if (!slash)
        strcpy(d->parent, ".");
    else if (slash == d->target)
        strcpy(d->parent, "/");
    else
        memcpy(d->parent, d->target, (size_t)(slash - d->target));
    return slash && slash != d->target
               ? loom_out_make_dirs_upto(d->target, (size_t)(slash - d->target), err)
               : LOOM_OK;
}

/* Opens the folders of d and decides where staging goes (d->inside). */
static int open_folders(loom_out_dir *d, loom_error *err)
{
    d->parent_fd = open(d->parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d->parent_fd < 0)
        return loom_set_error(err, LOOM_EIO, "cannot write %s: its folder %s: %s", d->target,
                              d->parent, strerror(errno));
    struct stat st, pst;
    if (fstatat(d->parent_fd, d->base, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISLNK(st.st_mode) && fstatat(d->parent_fd, d->base, &st, 0) == 0 &&
            S_ISDIR(st.st_mode))
            d->inside = 1; /* keep the link: write into the folder it names */
        else if (!S_ISDIR(st.st_mode))
            return loom_set_error(err, LOOM_EIO, "cannot write %s: it exists and is not a "
                                  "directory", d->target);
        else if (fstat(d->parent_fd, &pst) == 0 && pst.st_dev != st.st_dev)
            d->inside = 1; /* a mount point cannot be renamed */
    }
    if (!strcmp(d->base, ".") || !strcmp(d->base, "..") || !strcmp(d->base, "/") || !d->base[0])
        d->inside = 1;
    return LOOM_OK;
}

/* Creates the staging folder beside the target, or inside it. */
static int make_staging(loom_out_dir *d, loom_error *err)
{
    if (!d->inside) {
        sweep(d->parent_fd, d->base, ".tmp-");
        sweep(d->parent_fd, d->base, ".old-");
        if (make_unique_dir(d->parent_fd, d->base, ".tmp-", d->dir_mode, d->staging_name) == 0)
            d->home_fd = d->parent_fd;
        else if (errno == EACCES || errno == EPERM || errno == EROFS)
            d->inside = 1; /* the folder may still be writable */
        else
            return loom_set_error(err, LOOM_EIO, "cannot write %s: creating a temporary "
                                  "folder in %s failed: %s", d->target, d->parent,
                                  strerror(errno));
        int n = snprintf(d->staging, sizeof d->staging, "%s/%s", d->parent, d->staging_name);
        if (n < 0 || (size_t)n >= sizeof d->staging)
            return loom_set_error(err, LOOM_EINVAL, "cannot write %s: the path is too long",
                                  d->target);
    }
    if (d->inside) {
        int rc = loom_out_make_dirs_upto(d->target, strlen(d->target), err);
        if (rc != LOOM_OK)
            return rc;
        d->target_fd = openat(d->parent_fd, d->base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (d->target_fd < 0)
            return loom_set_error(err, LOOM_EIO, "cannot write %s: %s", d->target,
                                  strerror(errno));
        sweep(d->target_fd, INSIDE_NAME, ".tmp-");
        if (make_unique_dir(d->target_fd, INSIDE_NAME, ".tmp-", d->dir_mode, d->staging_name))
            return loom_set_error(err, LOOM_EIO, "cannot write %s: creating a temporary "
                                  "folder in it failed: %s", d->target, strerror(errno));
        d->home_fd = d->target_fd;
        int n = snprintf(d->staging, sizeof d->staging, "%s/%s", d->target, d->staging_name);
        if (n < 0 || (size_t)n >= sizeof d->staging)
            return loom_set_error(err, LOOM_EINVAL, "cannot write %s: the path is too long",
                                  d->target);
    }
    d->staging_fd = openat(d->home_fd, d->staging_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
                           O_CLOEXEC);
    if (d->staging_fd < 0)
        return loom_set_error(err, LOOM_EIO, "cannot write %s: %s", d->staging,
                              strerror(errno));
    return LOOM_OK;
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
    d->parent_fd = d->target_fd = d->home_fd = d->staging_fd = -1;
    d->dir_mode = 0777u & ~loom_out_umask();
    if (getrlimit(RLIMIT_NOFILE, &d->nofile) != 0)
        d->nofile.rlim_cur = d->nofile.rlim_max = RLIM_INFINITY;
    int rc = split_target(d, dir, len, err);
    if (rc == LOOM_OK)
        rc = open_folders(d, err);
    if (rc == LOOM_OK)
        rc = make_staging(d, err);
    if (rc != LOOM_OK) {
        loom_out_dir_close(d);
        return rc;
    }
    *out = d;
    return LOOM_OK;
}

const char *loom_out_dir_path(const loom_out_dir *d)
{
    return d ? d->staging : NULL;
}

int loom_out_dir_write(loom_out_dir *d, const loom_plan *plan, const char *sub,
                       loom_error *err)
{
    if (!d || d->done)
        return loom_set_error(err, LOOM_EINVAL, "outputs: no folder being written");
    char shown[OUT_PATH_MAX + NAME_BYTES];
    if (!sub)
        return loom_write_outputs_at(plan, d->staging_fd, d->staging, err);
    snprintf(shown, sizeof shown, "%s/%s", d->staging, sub);
    if (mkdirat(d->staging_fd, sub, 0700) == 0)
        (void)fchmodat(d->staging_fd, sub, (mode_t)d->dir_mode, 0);
    else if (errno != EEXIST)
        return loom_set_error(err, LOOM_EIO, "cannot create directory %s: %s", shown,
                              strerror(errno));
    int fd = openat(d->staging_fd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return loom_set_error(err, LOOM_EIO, "cannot write %s: %s", shown, strerror(errno));
    int rc = loom_write_outputs_at(plan, fd, shown, err);
    close(fd);
    return rc;
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

/* Commits entry by entry into folder tfd, which keeps what Loom did not
 * write (a mount point, a link, or a folder with other files): Loom's
 * entries the new set lacks go, then each new file and iter-NNN folder
 * replaces its namesake. Not atomic as a whole; each entry is. */
static int commit_entries(loom_out_dir *d, int tfd, loom_error *err)
{
    int rc = LOOM_OK, sfd = d->staging_fd;
    char **old = list_names(tfd);
    char **add = list_names(sfd);
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
    if (rc == LOOM_OK) {
        remove_set_at(d->home_fd, d->staging_name);
        (void)fsync(tfd);
    }
    return rc;
}

/* commit_entries into target, which exists in the parent folder. */
static int commit_entries_beside(loom_out_dir *d, loom_error *err)
{
    int tfd = openat(d->parent_fd, d->base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (tfd < 0)
        return loom_set_error(err, LOOM_EIO, "cannot write %s: %s", d->target,
                              strerror(errno));
    int rc = commit_entries(d, tfd, err);
    close(tfd);
    return rc;
}

/* Without an atomic exchange: the previous set steps aside, staging takes
 * its name, the previous set goes. 1 to retry (the target vanished). */
static int commit_by_renames(loom_out_dir *d, loom_error *err, int *rc)
{
    int pfd = d->parent_fd;
    char old[NAME_BYTES];
    if (make_unique_dir(pfd, d->base, ".old-", 0700, old) != 0) {
        *rc = loom_set_error(err, LOOM_EIO, "cannot write %s: %s", d->target, strerror(errno));
        return 0;
    }
    if (renameat(pfd, d->base, pfd, old) != 0) {
        int e = errno;
        unlinkat(pfd, old, AT_REMOVEDIR);
        if (e == ENOENT)
            return 1;
        *rc = loom_set_error(err, LOOM_EIO, "cannot write %s: %s", d->target, strerror(e));
        return 0;
    }
    if (renameat(pfd, d->staging_name, pfd, d->base) != 0) {
        int e = errno;
        (void)renameat(pfd, old, pfd, d->base);
        *rc = loom_set_error(err, LOOM_EIO, "cannot write %s: renaming %s over it failed: %s",
                             d->target, d->staging, strerror(e));
        return 0;
    }
    (void)fsync(pfd);
    remove_set_at(pfd, old);
    *rc = LOOM_OK;
    return 0;
}

/* Replaces target by the staging folder in one rename (or one exchange
 * with the previous set, which then goes). */
static int commit_whole(loom_out_dir *d, loom_error *err)
{
    int pfd = d->parent_fd;
    for (int attempt = 0; attempt < 16; attempt++) {
        struct stat st;
        if (fstatat(pfd, d->base, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno != ENOENT)
                return loom_set_error(err, LOOM_EIO, "cannot write %s: %s", d->target,
                                      strerror(errno));
            if (renameat(pfd, d->staging_name, pfd, d->base) == 0) {
                (void)fsync(pfd);
                return LOOM_OK;
            }
            if (errno == EEXIST || errno == ENOTEMPTY)
                continue; /* another run put its set there first */
            return loom_set_error(err, LOOM_EIO, "cannot write %s: renaming %s over it failed: "
                                  "%s", d->target, d->staging, strerror(errno));
        }
        if (!S_ISDIR(st.st_mode) || !is_pure_set_at(pfd, d->base))
            return commit_entries_beside(d, err); /* what is not Loom's stays */
        (void)fchmod(d->staging_fd, st.st_mode & 07777);
        if (exchange_at(pfd, d->staging_name, pfd, d->base) == 0) {
            (void)fsync(pfd);
            remove_set_at(pfd, d->staging_name); /* the previous set */
            return LOOM_OK;
        }
        if (errno == ENOENT)
            continue;
        if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
            return loom_set_error(err, LOOM_EIO, "cannot write %s: replacing it by %s failed: "
                                  "%s", d->target, d->staging, strerror(errno));
        int rc = LOOM_OK;
        if (!commit_by_renames(d, err, &rc))
            return rc;
    }
    return loom_set_error(err, LOOM_EIO, "cannot write %s: it kept changing while it was being "
                          "replaced", d->target);
}

int loom_out_dir_commit(loom_out_dir *d, loom_error *err)
{
    if (!d || d->done)
        return loom_set_error(err, LOOM_EINVAL, "outputs: nothing to commit");
    (void)fsync(d->staging_fd);
    int rc = d->inside ? commit_entries(d, d->target_fd, err) : commit_whole(d, err);
    if (rc == LOOM_OK)
        d->done = 1;
    return rc;
}

void loom_out_dir_discard_signal_safe(const loom_out_dir *d)
{
    if (!d || d->done || d->home_fd < 0)
        return;
    /* a plugin may have lowered the limit below what removal needs */
    (void)setrlimit(RLIMIT_NOFILE, &d->nofile);
    for (int attempt = 0; attempt < 3; attempt++) /* another thread may still write */
        if (remove_set_at(d->home_fd, d->staging_name) == 0)
            return;
}

void loom_out_dir_close(loom_out_dir *d)
{
    if (!d)
        return;
    loom_out_dir_discard_signal_safe(d);
    int fds[] = {d->staging_fd, d->target_fd, d->parent_fd};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    free(d);
}
