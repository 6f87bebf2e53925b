/* registry.c - plugin discovery: manifest folders, the default search path,
 * static registration, duplicate ids and lookup. */
#define _GNU_SOURCE /* dladdr */
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "registry_priv.h"
#include "trust.h"

struct loom_registry {
    loom_plugin **plugins; /* owned, n entries */
    int n, cap;
    int allow_untrusted;   /* 1: skip the ownership/permission rules (trust.h) */
    int skipped;           /* manifests skipped with a warning */
};

/* An object inside libloom, used to find the library's own path. */
static const char loom_registry_anchor = 0;

loom_registry *loom_registry_new(void)
{
    return calloc(1, sizeof(loom_registry));
}

/* See loom/sys/registry.h: new, trust, the given folders, the defaults. */
int loom_registry_open(const char *const *dirs, int n_dirs, int allow_untrusted,
                       loom_registry **out, loom_error *err)
{
    *out = NULL;
    loom_registry *reg = loom_registry_new();
    if (!reg)
        return loom_set_error(err, LOOM_ENOMEM, "out of memory");
    loom_registry_set_trust(reg, allow_untrusted);
    int rc = LOOM_OK;
    for (int i = 0; i < n_dirs && rc == LOOM_OK; i++)
        rc = loom_registry_add_dir(reg, dirs[i], err);
    if (rc == LOOM_OK)
        rc = loom_registry_add_default_dirs(reg, err);
    if (rc != LOOM_OK) {
        loom_registry_free(reg);
        return rc;
    }
    *out = reg;
    return LOOM_OK;
}

void loom_registry_free(loom_registry *reg)
{
    if (!reg)
        return;
    for (int i = reg->n - 1; i >= 0; i--) {
        loom_plugin *p = reg->plugins[i];
        if (p->state == LOOM_PLUGIN_LOADED && p->info && p->info->fini)
            p->info->fini(p->plugin_state);
        loom_plugin_manifest_clear(&p->m);
        free(p);
    }
    free(reg->plugins);
    free(reg);
}

void loom_registry_set_trust(loom_registry *reg, int allow_untrusted)
{
    if (reg)
        reg->allow_untrusted = allow_untrusted != 0;
}

int loom_registry_count(const loom_registry *reg)
{
    return reg ? reg->n : 0;
}

int loom_registry_skipped(const loom_registry *reg)
{
    return reg ? reg->skipped : 0;
}

loom_plugin *loom_registry_at(loom_registry *reg, int i)
{
    if (!reg || i < 0 || i >= reg->n)
        return NULL;
    return reg->plugins[i];
}

loom_plugin *loom_registry_find(loom_registry *reg, const char *role,
                                const char *id_or_name)
{
    if (!reg || !id_or_name)
        return NULL;
    for (int i = 0; i < reg->n; i++) {
        loom_plugin *p = reg->plugins[i];
        if (!strcmp(p->m.id, id_or_name) && (!role || !strcmp(p->m.role, role)))
            return p;
    }
    for (int i = 0; i < reg->n; i++) {
        loom_plugin *p = reg->plugins[i];
        if (!strcmp(p->m.name, id_or_name) && (!role || !strcmp(p->m.role, role)))
            return p;
    }
    return NULL;
}

/* 1 when two manifests point at the same binary file (by realpath when the
 * files exist, else by path). */
static int same_binary(const loom_plugin_manifest *a, const loom_plugin_manifest *b)
{
    char *ra = realpath(a->binary_path, NULL);
    char *rb = realpath(b->binary_path, NULL);
    int same = strcmp(ra ? ra : a->binary_path, rb ? rb : b->binary_path) == 0;
    free(ra);
    free(rb);
    return same;
}

/* Moves manifest `m` into plugin slot `p` (which must not be loaded). */
static void take_manifest(loom_plugin *p, loom_plugin_manifest *m,
                          loom_plugin_entry_fn entry)
{
    loom_plugin_manifest_clear(&p->m);
    p->m = *m;
    memset(m, 0, sizeof *m);
    p->is_static = entry != NULL;
    p->static_entry = entry;
    p->state = LOOM_PLUGIN_FOUND;
    memset(&p->load_error, 0, sizeof p->load_error);
}

/* Adds a parsed manifest, resolving duplicate ids. Takes ownership of *m
 * (cleared on return). */
static int add_manifest(loom_registry *reg, loom_plugin_manifest *m,
                        loom_plugin_entry_fn entry, loom_error *err)
{
    int rc = LOOM_OK;
    loom_plugin *old = loom_registry_find(reg, NULL, m->id);
    if (old && strcmp(old->m.id, m->id))
        old = NULL; /* matched a provides.name, not the id */
    if (!old) {
        if (reg->n == reg->cap) {
            int ncap = reg->cap ? reg->cap * 2 : 16;
            loom_plugin **np = realloc(reg->plugins, (size_t)ncap * sizeof *np);
            if (!np) {
                loom_plugin_manifest_clear(m);
                return loom_set_error(err, LOOM_ENOMEM, "out of memory");
            }
            reg->plugins = np;
            reg->cap = ncap;
        }
        loom_plugin *p = calloc(1, sizeof *p);
        if (!p) {
            loom_plugin_manifest_clear(m);
            return loom_set_error(err, LOOM_ENOMEM, "out of memory");
        }
        take_manifest(p, m, entry);
        reg->plugins[reg->n++] = p;
        return LOOM_OK;
    }
    int cmp = loom_version_compare(m->version, old->m.version);
    int replaceable = old->state == LOOM_PLUGIN_FOUND;
    if (cmp > 0 && replaceable) {
        fprintf(stderr,
                "loom: warning: plugin %s: %s (version %s) replaces %s (version %s)\n",
                m->id, m->manifest_path, m->version, old->m.manifest_path,
                old->m.version);
        take_manifest(old, m, entry);
    } else if (cmp != 0) {
        fprintf(stderr,
                "loom: warning: plugin %s: ignoring %s (version %s); using %s "
                "(version %s)%s\n",
                m->id, m->manifest_path, m->version, old->m.manifest_path,
                old->m.version, cmp > 0 ? ", already loaded" : "");
    } else if (entry && !old->is_static && replaceable) {
        take_manifest(old, m, entry); /* in-process twin wins, no dlopen */
    } else if (!entry && !old->is_static && !same_binary(m, &old->m)) {
        rc = loom_set_error(err, LOOM_EINVAL,
                            "plugin %s version %s is provided by two different "
                            "binaries: %s (%s) and %s (%s)",
                            m->id, m->version, old->m.manifest_path,
                            old->m.binary_path, m->manifest_path, m->binary_path);
    }
    loom_plugin_manifest_clear(m);
    return rc;
}

/* Parses path and adds it; a malformed manifest is skipped with a warning
 * when `lenient`, else its error is returned. */
static int add_manifest_file(loom_registry *reg, const char *path,
                             loom_plugin_entry_fn entry, int lenient,
                             loom_error *err)
{
    loom_plugin_manifest m;
    loom_error perr = {0};
    int rc = loom_parse_plugin_manifest(path, &m, &perr);
    if (!rc && !entry)
        rc = loom_trust_check_plugin(&m, reg->allow_untrusted, &perr);
    if (rc) {
        loom_plugin_manifest_clear(&m);
        if (lenient && rc != LOOM_ENOMEM) {
            fprintf(stderr, "loom: warning: skipping plugin: %s\n", perr.message);
            reg->skipped++;
            return LOOM_OK;
        }
        if (err)
            *err = perr;
        return rc;
    }
    return add_manifest(reg, &m, entry, err);
}

/* 1 when path names an existing regular file. */
static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Sorts directory entry names. */
static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Scans one directory; `missing_ok` skips a missing dir silently. */
static int add_dir_impl(loom_registry *reg, const char *dir, int missing_ok,
                        loom_error *err)
{
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        if (missing_ok)
            return LOOM_OK;
        return loom_set_error(err, LOOM_ENOTFOUND,
                              "plugin directory %s: expected a directory, found %s",
                              dir, stat(dir, &st) == 0 ? "a file" : "nothing");
    }
    size_t dlen = strlen(dir);
    char *path = malloc(dlen + 2 * 256 + 32);
    if (!path)
        return loom_set_error(err, LOOM_ENOMEM, "out of memory");
    int rc = LOOM_OK;
    sprintf(path, "%s/manifest.json", dir);
    if (is_file(path))
        rc = add_manifest_file(reg, path, NULL, 1, err);
    DIR *d = rc ? NULL : opendir(dir);
    char **names = NULL;
    int n = 0, cap = 0;
    struct dirent *de;
    while (d && !rc && (de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 32;
            char **nn = realloc(names, (size_t)cap * sizeof *nn);
            if (!nn) {
                rc = loom_set_error(err, LOOM_ENOMEM, "out of memory");
                break;
            }
            names = nn;
        }
        if (!(names[n] = strdup(de->d_name))) {
            rc = loom_set_error(err, LOOM_ENOMEM, "out of memory");
            break;
        }
        n++;
    }
    if (d)
        closedir(d);
    if (!rc)
        qsort(names, (size_t)n, sizeof *names, cmp_names);
    for (int i = 0; i < n; i++) {
        if (!rc) {
            sprintf(path, "%s/%.255s/manifest.json", dir, names[i]);
            if (is_file(path))
                rc = add_manifest_file(reg, path, NULL, 1, err);
        }
        free(names[i]);
    }
    free(names);
    free(path);
    return rc;
}

int loom_registry_add_dir(loom_registry *reg, const char *dir, loom_error *err)
{
    return add_dir_impl(reg, dir, 0, err);
}

int loom_registry_add_default_dirs(loom_registry *reg, loom_error *err)
{
    int rc;
    const char *env = getenv("LOOM_PLUGIN_PATH");
    if (env && *env) {
        char *copy = strdup(env);
        if (!copy)
            return loom_set_error(err, LOOM_ENOMEM, "out of memory");
        char *save = NULL;
        for (char *tok = strtok_r(copy, ":", &save); tok;
             tok = strtok_r(NULL, ":", &save)) {
            if ((rc = add_dir_impl(reg, tok, 1, err))) {
                free(copy);
                return rc;
            }
        }
        free(copy);
    }
    Dl_info info;
    if (!dladdr(&loom_registry_anchor, &info) || !info.dli_fname)
        return LOOM_OK;
    char *lib = realpath(info.dli_fname, NULL);
    if (!lib)
        return LOOM_OK;
    char *slash = strrchr(lib, '/');
    if (slash)
        *slash = 0;
    size_t len = strlen(lib) + 32;
    char *dir = malloc(len);
    if (!dir) {
        free(lib);
        return loom_set_error(err, LOOM_ENOMEM, "out of memory");
    }
    snprintf(dir, len, "%s/../plugins", lib);
    char *real = realpath(dir, NULL);
    rc = real ? add_dir_impl(reg, real, 1, err) : LOOM_OK;
    free(real);
    if (!rc) {
        snprintf(dir, len, "%s/loom/plugins", lib);
        rc = add_dir_impl(reg, dir, 1, err);
    }
    free(dir);
    free(lib);
    return rc;
}

int loom_registry_add_static(loom_registry *reg, const char *manifest_path,
                             loom_plugin_entry_fn entry, loom_error *err)
{
    if (!entry)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: static registration needs an entry function",
                              manifest_path);
    return add_manifest_file(reg, manifest_path, entry, 0, err);
}
