/*
 * loom/sys/registry.h - the plugin registry as tools see it: the plugins
 * found in plugin folders, their manifests and declared params, loading
 * one (`loom plugins`). Manifest parsing, param resolution and role
 * tables are the core's own (core/host/registry_priv.h).
 *
 * Ownership: the registry owns every loom_plugin and its manifest; the
 * pointers it hands out stay valid until loom_registry_free(). Loaded
 * plugins are never dlclosed. Destroy every pipeline built on a registry
 * before freeing the registry (fini() runs in loom_registry_free).
 *
 * Layer: host (core/host).
 */
#ifndef LOOM_SYS_REGISTRY_H
#define LOOM_SYS_REGISTRY_H

#include <cjson/cJSON.h>
#include <loom/loom.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- parameters ------------------------------------------------------- */

enum loom_param_type {
    LOOM_PARAM_INT = 0,
    LOOM_PARAM_DOUBLE = 1,
    LOOM_PARAM_BOOL = 2,
    LOOM_PARAM_STRING = 3,
    LOOM_PARAM_ENUM = 4
};

/* A resolved parameter value of one pipeline step (manifest default or the
 * planner manifest's value, already validated). Strings are owned by the
 * pipeline that holds the value. */
typedef struct loom_param_value {
    const char *name;
    int type;        /* enum loom_param_type */
    int64_t i;       /* INT, BOOL (0/1) */
    double d;        /* DOUBLE (and INT as double) */
    const char *s;   /* STRING, ENUM */
} loom_param_value;


/* One declared parameter of a plugin (manifest "params" member). */
typedef struct loom_param_spec {
    char *name;          /* owned */
    int type;            /* enum loom_param_type (above) */
    int has_min, has_max;
    double min, max;     /* inclusive bounds (INT and DOUBLE only) */
    loom_param_value def; /* default; def.name aliases name, def.s owned */
    char **values;       /* ENUM: allowed values (owned), n_values > 0 */
    int n_values;
    char *doc;           /* owned, "" when absent */
} loom_param_spec;

/* A parsed and validated manifest.json. Every string is owned. */
typedef struct loom_plugin_manifest {
    char *id, *version, *description;
    char *dir;           /* absolute folder holding manifest.json */
    char *manifest_path; /* absolute path of manifest.json */
    char *binary_path;   /* absolute: dir + "/" + binary */
    char *entry;         /* entry symbol (default LOOM_PLUGIN_ENTRY_SYMBOL) */
    char *role;          /* a LOOM_ROLE_* name */
    char *name;          /* provides.name */
    int abi;             /* ABI the manifest declares */
    uint32_t role_version;
    int thread_safe;
    loom_param_spec *params;
    int n_params;
} loom_plugin_manifest;

enum loom_plugin_state { LOOM_PLUGIN_FOUND, LOOM_PLUGIN_LOADED, LOOM_PLUGIN_FAILED };

/* A plugin known to the registry. `info`, `vtable` and `plugin_state` are
 * set by a successful load; `load_error` holds the failure otherwise. */
typedef struct loom_plugin {
    loom_plugin_manifest m;
    int state;                       /* enum loom_plugin_state */
    int is_static;                   /* registered in-process, no dlopen */
    const loom_plugin_info *info;    /* plugin's static data */
    void *plugin_state;              /* from info->init, released by fini */
    const loom_role_header *vtable;  /* plugin's static vtable for m.role */
    loom_error load_error;
    loom_plugin_entry_fn static_entry; /* static plugins only */
} loom_plugin;

typedef struct loom_registry loom_registry;

/* ---- the registry --------------------------------------------------------- */

/* Opens a registry of the plugins in `dirs` (n_dirs of them, in order),
 * then in every dir of LOOM_PLUGIN_PATH (colon-separated),
 * <dir of libloom>/../plugins and <dir of libloom>/loom/plugins (missing
 * ones skipped silently). A folder is itself a plugin folder
 * (dir/manifest.json) or holds them (dir/<x>/manifest.json); only
 * manifests are read (no dlopen), and a malformed one is skipped with a
 * warning on stderr. allow_untrusted 0 skips, with a warning naming the
 * file and why, plugins whose files others could have changed; 1
 * (--allow-untrusted-plugins) registers them; a binary resolving outside
 * its plugin folder is skipped either way. LOOM_ENOTFOUND when one of
 * `dirs` does not exist, LOOM_EINVAL for two binaries with the same id and
 * version, LOOM_ENOMEM; *out is NULL on failure, else the caller's
 * (loom_registry_free). */
LOOM_EXPORT int loom_registry_open(const char *const *dirs, int n_dirs, int allow_untrusted,
                                   loom_registry **out, loom_error *err);

/* Calls fini() of every loaded plugin and frees everything; never dlcloses. */
LOOM_EXPORT void loom_registry_free(loom_registry *reg);

/* Number of plugins and the i-th one (registry-owned; NULL out of range).
 * Order: registration order. */
LOOM_EXPORT int loom_registry_count(const loom_registry *reg);

/* How many manifests the directory scans skipped with a warning (malformed,
 * or failing the trust rules): a check such as `loom plugins list --load`
 * fails on them. */
LOOM_EXPORT int loom_registry_skipped(const loom_registry *reg);
LOOM_EXPORT loom_plugin *loom_registry_at(loom_registry *reg, int i);

/* Finds a plugin by id, or by provides.name within `role` (role may be
 * NULL: any role). NULL when absent. */
LOOM_EXPORT loom_plugin *loom_registry_find(loom_registry *reg, const char *role,
                                const char *id_or_name);

/* ---- loading ------------------------------------------------------------ */

/* Loads `plugin` once (dlopen RTLD_NOW|RTLD_LOCAL, or its static entry),
 * runs the handshake and init(). Later calls return the stored outcome.
 * Errors (message starts with the plugin id): LOOM_EPLUGIN (dlopen, entry
 * symbol, id/version, missing vtable or member, init), LOOM_EABI (struct
 * sizes, ABI version, build signature, role version). */
LOOM_EXPORT int loom_plugin_load(loom_registry *reg, loom_plugin *plugin, loom_error *err);

/* Name of a param type as written in manifests ("int", "float", ...). */
LOOM_EXPORT const char *loom_param_type_name(int type);

#ifdef __cplusplus
}
#endif

#endif
