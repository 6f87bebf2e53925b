/*
 * alg_util.h - what the paper-algorithm libraries share: a splitmix64
 * step (errors are filled with loom_error_format from <loom/common.h>). Header-only, so each library depends
 * on the SDK headers alone.
 */
#ifndef LOOM_ALG_UTIL_H
#define LOOM_ALG_UTIL_H

#include <stdint.h>
#include <loom/common.h>

/* One splitmix64 step over a caller-owned state. */
static inline uint64_t loom_alg_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

#endif
