/*
 * registry_priv.h - the host layer's registry, manifest, role-table and
 * param functions that only the core and its tests call (not exported,
 * not installed). Tools open a registry with loom_registry_open
 * (<loom/sys/registry.h>).
 *
 *   manifest.c  loom_parse_plugin_manifest, loom_plugin_manifest_clear
 *   registry.c  loom_registry_new, loom_registry_add_* (discovery)
 *   loader.c    role tables
 *   params.c    loom_params_* (manifest params -> typed values)
 */
#ifndef LOOM_REGISTRY_PRIV_H
#define LOOM_REGISTRY_PRIV_H

#include <stddef.h>
#include <cjson/cJSON.h>
#include <loom/sys/registry.h>

/* ---- registry.c --------------------------------------------------------- */

/* Creates an empty registry (NULL on allocation failure). */
loom_registry *loom_registry_new(void);

/* Registers dir/manifest.json (when dir is itself a plugin folder) and every
 * dir/<x>/manifest.json. Reads manifests only (no dlopen). A malformed
 * manifest is skipped with a warning on stderr. LOOM_ENOTFOUND when dir does
 * not exist; LOOM_EINVAL for two binaries with the same id and version. */
int loom_registry_add_dir(loom_registry *reg, const char *dir, loom_error *err);

/* Adds every dir of LOOM_PLUGIN_PATH (colon-separated), then
 * <dir of libloom>/../plugins and <dir of libloom>/loom/plugins. Missing
 * dirs are skipped silently. */
int loom_registry_add_default_dirs(loom_registry *reg, loom_error *err);

/* Registers a plugin linked into the process: its manifest at
 * manifest_path and its static registration function (loom_static_<x>). */
int loom_registry_add_static(loom_registry *reg, const char *manifest_path,
                             loom_plugin_entry_fn entry, loom_error *err);

/* Trust rules for manifests added from now on (trust.h): 0 (the default)
 * skips, with a warning naming the file and why, plugins whose files others
 * could have changed; 1 (--allow-untrusted-plugins) registers them. A
 * binary resolving outside its plugin folder is skipped either way. */
void loom_registry_set_trust(loom_registry *reg, int allow_untrusted);

/* ---- loader.c ------------------------------------------------------------ */

/* Host sizeof of a role's vtable, and the smallest struct_size a plugin's
 * vtable may have (the end of its last required member). */
size_t loom_role_vtable_bytes(int index);
size_t loom_role_vtable_min_bytes(int index);

/* Copies a plugin's vtable for role `index` into dst (host-sized, zeroed
 * past the plugin's struct_size). Returns the name of the first required
 * member that is NULL, or NULL when all are present. */
const char *loom_role_copy_vtable(int index, const loom_role_header *vt, void *dst);

/* ---- manifest.c ---------------------------------------------------------- */

/* Parses and validates a plugin manifest.json into *out (zeroed first;
 * clear it with loom_plugin_manifest_clear even on failure). LOOM_EIO /
 * LOOM_EINVAL with file, JSON path or line:column. */
int loom_parse_plugin_manifest(const char *path, loom_plugin_manifest *out, loom_error *err);

/* Frees every member and zeroes *m. */
void loom_plugin_manifest_clear(loom_plugin_manifest *m);

/* Role name <-> index in the order cost_model, partitioner, ranker,
 * interleaver, memory_tuner (enum loom_role_id in pipeline.h); -1 / NULL
 * when unknown. */
int loom_role_index(const char *role);
const char *loom_role_name(int index);

/* Parses "MAJOR.MINOR.PATCH" into three numbers; LOOM_EINVAL otherwise. */
int loom_version_parse(const char *version, unsigned long v[3]);

/* Compares two valid versions: <0, 0, >0. */
int loom_version_compare(const char *a, const char *b);

/* ---- params.c ------------------------------------------------------------ */

/* Resolves the params object of one pipeline step against the manifest:
 * every declared param gets the given value or its default, in manifest
 * order. `params` may be NULL. Unknown keys, wrong types, out-of-range
 * numbers and unlisted enum values are LOOM_EINVAL naming
 * "<file>: <json_path>.<key>". *out (n_params entries) owns its strings;
 * free with loom_params_free. */
int loom_params_resolve(const loom_plugin_manifest *m, const cJSON *params,
                        const char *file, const char *json_path,
                        loom_param_value **out, int *n_out, loom_error *err);

/* Frees an array from loom_params_resolve (NULL allowed). */
void loom_params_free(loom_param_value *v, int n);

/* Sets values[key] (an array from loom_params_resolve for manifest m) from
 * command-line text, parsed according to the param's type and checked
 * against its bounds / enum values. LOOM_ENOTFOUND for an undeclared key,
 * LOOM_EINVAL for a bad value ("<id>.<key>: expected ..., found ..."). */
int loom_params_set_from_string(const loom_plugin_manifest *m,
                                loom_param_value *values, int n_values,
                                const char *key, const char *text,
                                loom_error *err);

/* Writes "key=value" pairs separated by spaces into buf (for describe). */
void loom_params_format(const loom_param_value *v, int n, char *buf,
                        size_t size);

#endif
