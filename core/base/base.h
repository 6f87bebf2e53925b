/*
 * base.h - the core's lowest layer: error objects, names, clock and RNG
 * helpers every other layer uses (not installed).
 */
#ifndef LOOM_BASE_H
#define LOOM_BASE_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include <loom/common.h>

/* ---- helpers ------------------------------------------------------------ */

int loom_set_error(loom_error *err, int code, const char *fmt, ...)
    LOOM_PRINTF(3, 4);

/* Prefixes err->message with "plugin <id>: " (keeps the code). */
void loom_error_prefix_plugin(loom_error *err, const char *plugin_id);

/* splitmix64 step. */
uint64_t loom_splitmix64(uint64_t *state);


/* Monotonic clock in milliseconds (clock.c). */
double loom_now_ms(void);

/* ---- names (names.c) ---------------------------------------------------- */

/* 1 when a and b are equal ignoring ASCII case. */
int loom_name_eq(const char *a, const char *b);

/* "a, b, c" from a NULL-terminated list into buf (truncated to size). */
void loom_join_names(const char *const *names, char *buf, size_t size);

/* Rewrites err's message as "<prefix>: <message>" with code `code`;
 * returns code. */
int loom_error_prefix(loom_error *err, int code, const char *prefix);

/* Loads `spec` as a JSON file; a spec that names no file and does not
 * look like a path gets an error listing the `what` presets. */
int loom_load_spec_json(const char *what, const char *spec, const char *const *presets,
                        cJSON **root, loom_error *err);

/* "a string \"abc\"" style description of a JSON value for messages. */
const char *loom_json_describe(const cJSON *item, char *buf, size_t size);

/* Checks a user-given name (printable, bounded length): LOOM_EINVAL naming
 * file and JSON path otherwise. */
int loom_check_name(const char *file, const char *path, const char *name,
                    loom_error *err);

#endif
