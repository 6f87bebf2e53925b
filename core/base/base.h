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
#include <loom/sys/json.h>
#include <loom/sys/util.h>

/* ---- internal helpers of the tooling API's files ---------------------- */

/* Writes `s` into buf (always NUL-terminated) so that it prints as one
 * harmless line: printable ASCII is kept, '"' and '\\' are escaped, and
 * every other byte (newlines, escape sequences, bytes >= 0x7f) is written
 * as \n, \r, \t or \xHH; a text that does not fit ends in "...". Used
 * for every name or string from file content that a message echoes.
 * Returns buf. */
const char *loom_escape(const char *s, char *buf, size_t size);

/* For a path that does not exist: the closest entry of its folder, as a
 * path into buf ("examples/manifests/pipeweaver.json" for
 * "examples/manifests/pipewaever.json"); 1 when one is that close. */
int loom_closest_file(const char *path, char *buf, size_t size);

/* A byte count with an optional unit into *out: plain bytes, B, KB, MB,
 * GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024), case
 * insensitive, e.g. "80GiB", "80GB", "1.5TiB", "85899345920". Returns 0,
 * or -1 for anything else (negative, non-finite, above 1e18 bytes, another
 * unit). */
int loom_parse_bytes(const char *text, double *out);

/* Parses `text` (name used in messages: `file`). On a syntax error, reports
 * line and column of the offending byte; also rejects an empty document.
 * Caller frees the result with cJSON_Delete. */
int loom_json_parse(const char *file, const char *text, size_t len,
                    cJSON **out, loom_error *err);

/* ---- helpers ------------------------------------------------------------ */


/* Prefixes err->message with "plugin <id>: " (keeps the code); first
 * NUL-terminates the message, which a plugin may have filled to the end. */
void loom_error_prefix_plugin(loom_error *err, const char *plugin_id);

/* Rewrites control characters, C1 controls and malformed UTF-8 in
 * err->message as \n, \r, \t or \xHH, so that the message prints as one
 * line that cannot move the cursor or change colours (loom_set_error and
 * loom_error_prefix_plugin call it; so does every path that copies a
 * message a plugin wrote itself). */
void loom_error_sanitize(loom_error *err);




/* ---- names (names.c) ---------------------------------------------------- */

/* Rewrites err's message as "<prefix>: <message>" with code `code`;
 * returns code. */
int loom_error_prefix(loom_error *err, int code, const char *prefix);

/* Loads `spec` as a JSON file; a spec that names no file and does not
 * look like a path gets an error listing the `what` presets. */
int loom_load_spec_json(const char *what, const char *spec, const char *const *presets,
                        cJSON **root, loom_error *err);

/* Checks that a free text from a file (a description, a param's doc or
 * default) has no control character, so printing it cannot forge a line
 * or change the terminal: LOOM_EINVAL naming file and JSON path. */
int loom_check_text(const char *file, const char *path, const char *text, loom_error *err);

/* "a string \"abc\"" style description of a JSON value for messages. */
const char *loom_json_describe(const cJSON *item, char *buf, size_t size);


#endif
