/*
 * loom/sys/util.h - small helpers of libloom that tools share: filling an
 * error object, case-insensitive names, name lists, the monotonic clock
 * and the run's RNG step.
 *
 * Part of the tooling API (loom/sys/): stable within a minor version.
 *
 * Layer: base (core/base).
 */
#ifndef LOOM_SYS_UTIL_H
#define LOOM_SYS_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <loom/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Fills err (when non-NULL) with code and a formatted message; returns
 * code, so `return loom_set_error(err, LOOM_EINVAL, "...")` works. Control
 * characters in the message (a newline or an escape sequence echoed from
 * file content) are written as \n, \xHH, ..., so a message is one line. */
LOOM_EXPORT int loom_set_error(loom_error *err, int code, const char *fmt, ...)
    LOOM_PRINTF(3, 4);

/* One splitmix64 step over a caller-owned state. */
LOOM_EXPORT uint64_t loom_splitmix64(uint64_t *state);

/* Monotonic clock in milliseconds. */
LOOM_EXPORT double loom_now_ms(void);

/* 1 when a and b are equal ignoring ASCII case. */
LOOM_EXPORT int loom_name_eq(const char *a, const char *b);

/* "a, b, c" from a NULL-terminated list into buf (truncated to size). */
LOOM_EXPORT void loom_join_names(const char *const *names, char *buf, size_t size);

/* Checks a user-given name (printable, bounded length): LOOM_EINVAL naming
 * file and JSON path otherwise. */
LOOM_EXPORT int loom_check_name(const char *file, const char *path, const char *name,
                                loom_error *err);

/* ---- did you mean (suggest.c) ------------------------------------------ */

/* The name among names[0..n) closest to `want` (case-insensitive edit
 * distance, at most a third of its length and at least 2), or NULL when
 * none is that close or want is among them. */
LOOM_EXPORT const char *loom_closest_name(const char *want, const char *const *names, int n);

#ifdef __cplusplus
}
#endif

#endif
