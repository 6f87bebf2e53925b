/*
 * alg_util.h - what the paper-algorithm libraries share: filling a
 * loom_error and a splitmix64 step. Header-only, so each library depends
 * on the SDK headers alone.
 */
#ifndef LOOM_ALG_UTIL_H
#define LOOM_ALG_UTIL_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <loom/common.h>

/* Fills err (when non-NULL) with code and a formatted message; returns
 * code, so `return loom_alg_error(err, LOOM_EINVAL, "...")` works. */
static inline int loom_alg_error(loom_error *err, int code, const char *fmt, ...)
    LOOM_PRINTF(3, 4);
static inline int loom_alg_error(loom_error *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* One splitmix64 step over a caller-owned state. */
static inline uint64_t loom_alg_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

#endif
