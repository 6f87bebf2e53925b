/*
 * loom/sys/json.h - reading JSON files with precise errors.
 *
 * Every error message has the form
 *   "<file>: <json path>: expected <what>, found <what>"
 * or, for syntax errors,
 *   "<file>:<line>:<column>: malformed JSON: <detail>".
 * JSON paths are written like `modules[1].layers` or `pipeline[2].params.budget_ms`.
 *
 * Layer: base (core/base).
 */
#ifndef LOOM_SYS_JSON_H
#define LOOM_SYS_JSON_H

#include <cjson/cJSON.h>
#include <loom/common.h>
#include <loom/sys/util.h> /* loom_set_error */

#ifdef __cplusplus
extern "C" {
#endif

/* Upper bound on the size of any JSON/JSONL input file. */
#define LOOM_MAX_INPUT_BYTES (256u * 1024u * 1024u)

/* Opens `path` for reading without blocking on a FIFO and refuses anything
 * that is not a regular file (a FIFO, a device, a directory, a socket):
 * LOOM_EIO "path: cannot read: expected a regular file, found a FIFO (named
 * pipe)". On success *fd_out is a blocking, close-on-exec descriptor the
 * caller closes; on failure it is -1. Every input file Loom reads is opened
 * through here. */
LOOM_EXPORT int loom_open_input(const char *path, int *fd_out, loom_error *err);

/* Reads a whole file (NUL-terminated); *len_out may be NULL. Caller frees.
 * Opens through loom_open_input. Errors: LOOM_EIO naming the file and
 * strerror (or what the file is when it is not a regular file). */
LOOM_EXPORT int loom_read_file(const char *path, char **text_out, size_t *len_out,
                   loom_error *err);

/* loom_read_file, then parses the text: a syntax error reports the line and
 * column of the offending byte; an empty document is an error too. Caller
 * frees the result with cJSON_Delete. */
LOOM_EXPORT int loom_json_load(const char *path, cJSON **out, loom_error *err);

/* A short description of a JSON value's type for "found ..." messages:
 * "a string", "a number", "an object", "an array", "true", "null", ... */
LOOM_EXPORT const char *loom_json_type_name(const cJSON *item);

/* Typed getters. `obj` must be an object; `path` is the JSON path of obj
 * (e.g. "modules[1]"), `key` the member. When `required` is 0 and the key is
 * absent, *out keeps its value and LOOM_OK is returned. Type errors, range
 * errors (inclusive [min, max]) and non-integral numbers for int getters all
 * return LOOM_EINVAL with "file: path.key: expected ..., found ...". */
LOOM_EXPORT int loom_json_get_int(const char *file, const cJSON *obj, const char *path,
                      const char *key, int required, int64_t min, int64_t max,
                      int64_t *out, loom_error *err);
LOOM_EXPORT int loom_json_get_double(const char *file, const cJSON *obj, const char *path,
                         const char *key, int required, double min, double max,
                         double *out, loom_error *err);
LOOM_EXPORT int loom_json_get_bool(const char *file, const cJSON *obj, const char *path,
                       const char *key, int required, int *out,
                       loom_error *err);
/* *out points into the cJSON tree (valid while it lives). */
LOOM_EXPORT int loom_json_get_string(const char *file, const cJSON *obj, const char *path,
                         const char *key, int required, const char **out,
                         loom_error *err);
/* Fails unless obj[key] is an object / array (when present). *out may be
 * set to NULL when absent and not required. */
LOOM_EXPORT int loom_json_get_object(const char *file, const cJSON *obj, const char *path,
                         const char *key, int required, const cJSON **out,
                         loom_error *err);
LOOM_EXPORT int loom_json_get_array(const char *file, const cJSON *obj, const char *path,
                        const char *key, int required, const cJSON **out,
                        loom_error *err);

/* Rejects members of `obj` not in the NULL-terminated `allowed` list:
 * "file: path: unknown field \"x\" (expected one of: a, b, c)". */
LOOM_EXPORT int loom_json_check_keys(const char *file, const cJSON *obj, const char *path,
                         const char *const *allowed, loom_error *err);

/* Formats "path.key" or "path[i]" into buf (always NUL-terminated). */
LOOM_EXPORT void loom_json_path_key(char *buf, size_t size, const char *path,
                        const char *key);
LOOM_EXPORT void loom_json_path_index(char *buf, size_t size, const char *path, int index);

#ifdef __cplusplus
}
#endif

#endif
