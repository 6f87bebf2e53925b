/* trust.c - refuses plugin files that someone other than root or the user
 * running Loom could have changed, and binaries resolving outside their
 * plugin folder (rules in trust.h). */
#define _DEFAULT_SOURCE /* realpath, S_ISVTX */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "trust.h"

#define LOOM_TRUST_HINT "; pass --allow-untrusted-plugins to load it anyway"

/* 1 when files owned by `uid` may decide which code Loom runs. */
static int trusted_owner(uid_t uid)
{
    return uid == 0 || uid == geteuid();
}

/* 1 when nobody but root or the user running Loom can be in group `gid`:
 * the group exists, every listed member is root or that user, and no other
 * account has it as its primary group. */
static int private_group(gid_t gid)
{
    struct group gr, *g = NULL;
    char buf[16384];
    if (getgrgid_r(gid, &gr, buf, sizeof buf, &g) != 0 || !g)
        return 0;
    uid_t me = geteuid();
    for (char **m = g->gr_mem; *m; m++) {
        struct passwd pw, *p = NULL;
        char pbuf[4096];
        if (getpwnam_r(*m, &pw, pbuf, sizeof pbuf, &p) != 0 || !p ||
            (p->pw_uid != 0 && p->pw_uid != me))
            return 0;
    }
    int ok = 1;
    setpwent();
    for (struct passwd *p; ok && (p = getpwent()) != NULL;)
        if (p->pw_gid == gid && p->pw_uid != 0 && p->pw_uid != me)
            ok = 0;
    endpwent();
    return ok;
}

/* Writes "gid 100 (users)" (or "gid 100") into buf. */
static void describe_group(gid_t gid, char *buf, size_t size)
{
    struct group gr, *g = NULL;
    char names[16384];
    if (getgrgid_r(gid, &gr, names, sizeof names, &g) == 0 && g)
        snprintf(buf, size, "gid %u (%s)", (unsigned)gid, g->gr_name);
    else
        snprintf(buf, size, "gid %u", (unsigned)gid);
}

/* Writes "uid 1000 (alice)" (or "uid 1000") into buf. */
static void describe_owner(uid_t uid, char *buf, size_t size)
{
    struct passwd pw, *found = NULL;
    char names[1024];
    if (getpwuid_r(uid, &pw, names, sizeof names, &found) == 0 && found)
        snprintf(buf, size, "uid %u (%s)", (unsigned)uid, found->pw_name);
    else
        snprintf(buf, size, "uid %u", (unsigned)uid);
}

/* Sets the "owned by another user" error for `path` (a `what`). */
static int owner_error(const char *path, const char *what, uid_t uid, loom_error *err)
{
    char owner[160];
    describe_owner(uid, owner, sizeof owner);
    return loom_set_error(err, LOOM_EPLUGIN,
                          "%s: the %s is owned by %s, neither root nor the user running "
                          "loom (uid %u)",
                          path, what, owner, (unsigned)geteuid());
}

int loom_trust_check_file(const char *path, const char *what, loom_error *err)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return loom_set_error(err, LOOM_EPLUGIN, "%s: cannot check the %s: %s", path, what,
                              strerror(errno));
    if (!S_ISREG(st.st_mode))
        return loom_set_error(err, LOOM_EPLUGIN, "%s: the %s is not a regular file", path, what);
    if (st.st_mode & S_IWOTH)
        return loom_set_error(err, LOOM_EPLUGIN, "%s: the %s is world-writable (mode %04o)", path,
                              what, (unsigned)(st.st_mode & 07777));
    if (!trusted_owner(st.st_uid))
        return owner_error(path, what, st.st_uid, err);
    if ((st.st_mode & S_IWGRP) && !private_group(st.st_gid)) {
        char group[160];
        describe_group(st.st_gid, group, sizeof group);
        return loom_set_error(err, LOOM_EPLUGIN,
                              "%s: the %s is group-writable (mode %04o) and %s may have members "
                              "other than root and the user running loom",
                              path, what, (unsigned)(st.st_mode & 07777), group);
    }
    return LOOM_OK;
}

int loom_trust_check_dirs(const char *dir, loom_error *err)
{
    size_t len = strlen(dir);
    char *buf = malloc(len + 2);
    if (!buf)
        return loom_set_error(err, LOOM_ENOMEM, "out of memory");
    memcpy(buf, dir, len + 1);
    int rc = LOOM_OK;
    for (;;) {
        struct stat st;
        if (stat(buf, &st) != 0) {
            rc = loom_set_error(err, LOOM_EPLUGIN, "%s: cannot check the folder: %s", buf,
                                strerror(errno));
            break;
        }
        if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX)) {
            rc = loom_set_error(err, LOOM_EPLUGIN,
                                "%s: the folder is world-writable without the sticky bit "
                                "(mode %04o), so anybody can replace what is in it",
                                buf, (unsigned)(st.st_mode & 07777));
            break;
        }
        if ((st.st_mode & S_IWGRP) && !(st.st_mode & S_ISVTX) && !private_group(st.st_gid)) {
            char group[160];
            describe_group(st.st_gid, group, sizeof group);
            rc = loom_set_error(err, LOOM_EPLUGIN,
                                "%s: the folder is group-writable without the sticky bit "
                                "(mode %04o) and %s may have members other than root and the "
                                "user running loom, so they can replace what is in it",
                                buf, (unsigned)(st.st_mode & 07777), group);
            break;
        }
        char *slash = strrchr(buf, '/');
        if (!slash || (slash == buf && buf[1] == 0))
            break;
        if (slash == buf)
            slash[1] = 0; /* go on with "/" itself */
        else
            *slash = 0;
    }
    free(buf);
    return rc;
}

/* 1 when the absolute path `path` lies strictly inside folder `dir`. */
static int is_inside(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    if (n == 1 && dir[0] == '/')
        return path[0] == '/' && path[1] != 0;
    return strncmp(path, dir, n) == 0 && path[n] == '/' && path[n + 1] != 0;
}

/* Rule 3: sets *real_out to the binary's resolved path (NULL when the
 * binary does not exist); fails when it resolves outside `dir`. */
static int check_containment(const loom_plugin_manifest *m, const char *dir, char **real_out,
                             loom_error *err)
{
    struct stat lst;
    *real_out = NULL;
    if (lstat(m->binary_path, &lst) != 0)
        return LOOM_OK;
    char *real = realpath(m->binary_path, NULL);
    if (!real)
        return loom_set_error(err, LOOM_EPLUGIN,
                              "untrusted plugin %s: %s: the binary cannot be resolved (%s)%s",
                              m->id, m->binary_path, strerror(errno),
                              S_ISLNK(lst.st_mode) ? ": a symlink to nothing" : "");
    if (!is_inside(real, dir)) {
        loom_set_error(err, LOOM_EPLUGIN,
                       "untrusted plugin %s: %s: the binary resolves to %s, outside the plugin "
                       "folder %s",
                       m->id, m->binary_path, real, dir);
        free(real);
        return LOOM_EPLUGIN;
    }
    *real_out = real;
    return LOOM_OK;
}

/* Rules 1 and 2 for a plugin whose folder is `dir` and whose binary, when
 * it exists, resolves to `bin_real`; the reason goes to why. */
static int check_permissions(const loom_plugin_manifest *m, const char *dir,
                             const char *bin_real, loom_error *why)
{
    struct stat st;
    int rc = loom_trust_check_file(m->manifest_path, "manifest", why);
    if (!rc && bin_real)
        rc = loom_trust_check_file(bin_real, "binary", why);
    if (!rc && stat(dir, &st) == 0 && !trusted_owner(st.st_uid))
        rc = owner_error(dir, "plugin folder", st.st_uid, why);
    if (!rc)
        rc = loom_trust_check_dirs(dir, why);
    if (!rc && bin_real) {
        /* A symlinked binary may sit in a subfolder of the plugin folder. */
        char *copy = strdup(bin_real);
        if (!copy)
            return loom_set_error(why, LOOM_ENOMEM, "out of memory");
        *strrchr(copy, '/') = 0;
        rc = loom_trust_check_dirs(copy, why);
        free(copy);
    }
    return rc;
}

int loom_trust_check_plugin(const loom_plugin_manifest *m, int allow_untrusted,
                            loom_error *err)
{
    if (!m || !m->id || !m->dir || !m->manifest_path || !m->binary_path)
        return loom_set_error(err, LOOM_EINVAL, "trust check: incomplete plugin manifest");
    char *dir = realpath(m->dir, NULL);
    if (!dir)
        return loom_set_error(err, LOOM_EPLUGIN, "untrusted plugin %s: %s: cannot resolve the "
                              "plugin folder: %s", m->id, m->dir, strerror(errno));
    char *bin_real = NULL;
    int rc = check_containment(m, dir, &bin_real, err);
    if (!rc && !allow_untrusted) {
        loom_error why = {0, ""};
        rc = check_permissions(m, dir, bin_real, &why);
        if (rc == LOOM_ENOMEM && err)
            *err = why;
        else if (rc)
            loom_set_error(err, rc, "untrusted plugin %s: %s%s", m->id, why.message,
                           LOOM_TRUST_HINT);
    }
    free(bin_real);
    free(dir);
    return rc;
}
