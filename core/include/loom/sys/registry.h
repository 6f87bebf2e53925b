/*
 * registry.h - plugin manifests, the plugin registry, the loader and
 * parameter resolution (internal, not installed).
 *
 *   manifest.c  loom_parse_plugin_manifest, loom_plugin_manifest_clear
 *   registry.c  loom_registry_* (discovery, duplicates, lookup)
 *   loader.c    loom_plugin_load (dlopen + handshake), role tables
 *   params.c    loom_params_* (manifest params -> typed values)
 *
 * Ownership: the registry owns every loom_plugin and its manifest; the
 * pointers it hands out stay valid until loom_registry_free(). Loaded
 * plugins are never dlclosed. Destroy every pipeline built on a registry
 * before freeing the registry (fini() runs in loom_registry_free).
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

/* ---- registry.c --------------------------------------------------------- */

/* Creates an empty registry (NULL on allocation failure). */
LOOM_EXPORT loom_registry *loom_registry_new(void);

/* Calls fini() of every loaded plugin and frees everything; never dlcloses. */
LOOM_EXPORT void loom_registry_free(loom_registry *reg);

/* Registers dir/manifest.json (when dir is itself a plugin folder) and every
 * dir/<x>/manifest.json. Reads manifests only (no dlopen). A malformed
 * manifest is skipped with a warning on stderr. LOOM_ENOTFOUND when dir does
 * not exist; LOOM_EINVAL for two binaries with the same id and version. */
LOOM_EXPORT int loom_registry_add_dir(loom_registry *reg, const char *dir, loom_error *err);

/* Adds every dir of LOOM_PLUGIN_PATH (colon-separated), then
 * <dir of libloom>/../plugins and <dir of libloom>/loom/plugins. Missing
 * dirs are skipped silently. */
LOOM_EXPORT int loom_registry_add_default_dirs(loom_registry *reg, loom_error *err);

/* Registers a plugin linked into the process: its manifest at
 * manifest_path and its static registration function (loom_static_<x>). */
LOOM_EXPORT int loom_registry_add_static(loom_registry *reg, const char *manifest_path,
                             loom_plugin_entry_fn entry, loom_error *err);

/* Trust rules for manifests added from now on (trust.h): 0 (the default)
 * skips, with a warning naming the file and why, plugins whose files others
 * could have changed; 1 (--allow-untrusted-plugins) registers them. A
 * binary resolving outside its plugin folder is skipped either way. */
LOOM_EXPORT void loom_registry_set_trust(loom_registry *reg, int allow_untrusted);

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

/* ---- loader.c ------------------------------------------------------------ */

/* Loads `plugin` once (dlopen RTLD_NOW|RTLD_LOCAL, or its static entry),
 * runs the handshake and init(). Later calls return the stored outcome.
 * Errors (message starts with the plugin id): LOOM_EPLUGIN (dlopen, entry
 * symbol, id/version, missing vtable or member, init), LOOM_EABI (struct
 * sizes, ABI version, build signature, role version). */
LOOM_EXPORT int loom_plugin_load(loom_registry *reg, loom_plugin *plugin, loom_error *err);

/* Host sizeof of a role's vtable, and the smallest struct_size a plugin's
 * vtable may have (the end of its last required member). */
LOOM_EXPORT size_t loom_role_vtable_bytes(int index);
LOOM_EXPORT size_t loom_role_vtable_min_bytes(int index);

/* Copies a plugin's vtable for role `index` into dst (host-sized, zeroed
 * past the plugin's struct_size). Returns the name of the first required
 * member that is NULL, or NULL when all are present. */
LOOM_EXPORT const char *loom_role_copy_vtable(int index, const loom_role_header *vt, void *dst);

/* ---- manifest.c ---------------------------------------------------------- */

/* Parses and validates a plugin manifest.json into *out (zeroed first;
 * clear it with loom_plugin_manifest_clear even on failure). LOOM_EIO /
 * LOOM_EINVAL with file, JSON path or line:column. */
LOOM_EXPORT int loom_parse_plugin_manifest(const char *path, loom_plugin_manifest *out,
                               loom_error *err);

/* Frees every member and zeroes *m. */
LOOM_EXPORT void loom_plugin_manifest_clear(loom_plugin_manifest *m);

/* Role name <-> index in the order cost_model, partitioner, ranker,
 * interleaver, memory_tuner (enum loom_role_id in pipeline.h); -1 / NULL
 * when unknown. */
LOOM_EXPORT int loom_role_index(const char *role);
LOOM_EXPORT const char *loom_role_name(int index);

/* Parses "MAJOR.MINOR.PATCH" into three numbers; LOOM_EINVAL otherwise. */
LOOM_EXPORT int loom_version_parse(const char *version, unsigned long v[3]);

/* Compares two valid versions: <0, 0, >0. */
LOOM_EXPORT int loom_version_compare(const char *a, const char *b);

/* Name of a param type as written in manifests ("int", "float", ...). */
LOOM_EXPORT const char *loom_param_type_name(int type);

/* ---- params.c ------------------------------------------------------------ */

/* Resolves the params object of one pipeline step against the manifest:
 * every declared param gets the given value or its default, in manifest
 * order. `params` may be NULL. Unknown keys, wrong types, out-of-range
 * numbers and unlisted enum values are LOOM_EINVAL naming
 * "<file>: <json_path>.<key>". *out (n_params entries) owns its strings;
 * free with loom_params_free. */
LOOM_EXPORT int loom_params_resolve(const loom_plugin_manifest *m, const cJSON *params,
                        const char *file, const char *json_path,
                        loom_param_value **out, int *n_out, loom_error *err);

/* Frees an array from loom_params_resolve (NULL allowed). */
LOOM_EXPORT void loom_params_free(loom_param_value *v, int n);

/* Sets values[key] (an array from loom_params_resolve for manifest m) from
 * command-line text, parsed according to the param's type and checked
 * against its bounds / enum values. LOOM_ENOTFOUND for an undeclared key,
 * LOOM_EINVAL for a bad value ("<id>.<key>: expected ..., found ..."). */
LOOM_EXPORT int loom_params_set_from_string(const loom_plugin_manifest *m,
                                loom_param_value *values, int n_values,
                                const char *key, const char *text,
                                loom_error *err);

/* Writes "key=value" pairs separated by spaces into buf (for describe). */
LOOM_EXPORT void loom_params_format(const loom_param_value *v, int n, char *buf,
                        size_t size);

#ifdef __cplusplus
}
#endif

#endif
