/*
 * loom/sample_groups.h - an iteration's samples grouped by microbatch, so
 * that a plugin pricing every microbatch's shape asks the cost service
 * once per microbatch for that microbatch's samples alone
 * (module_shape(ctx, m, &group, 1, 0, subs, ...)) instead of passing the
 * whole iteration each time, which scans every sample per call.
 * Header-only, so plugins use it without linking the core.
 *
 * Ownership: the caller provides off (microbatches + 1 ints) and out
 * (it->n_samples samples); nothing is allocated.
 */
#ifndef LOOM_SAMPLE_GROUPS_H
#define LOOM_SAMPLE_GROUPS_H

#include <loom/problem.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The microbatch of sample i of `it` among `microbatches`: its own, else
 * the even spread the host's shape builder uses. */
static inline int32_t loom_sample_microbatch(const loom_iteration *it, int32_t i,
                                             int32_t microbatches)
{
    int32_t mb = it->samples[i].microbatch;
    return mb >= 0 ? mb : (int32_t)((int64_t)i * microbatches / it->n_samples);
}

/* Groups it's samples by microbatch: microbatch mb's are out[off[mb]] ..
 * out[off[mb + 1] - 1], in sample order, each a copy with microbatch -1,
 * so that {it->index, off[mb + 1] - off[mb], out + off[mb]} is an
 * iteration of that microbatch alone (one microbatch, 0). Samples of no
 * microbatch below `microbatches` are left out. A counting sort: two
 * passes over the samples. */
static inline void loom_group_samples(const loom_iteration *it, int32_t microbatches,
                                      int32_t *off, loom_sample *out)
{
    int32_t n = it->n_samples;
    for (int32_t mb = 0; mb <= microbatches; mb++)
        off[mb] = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t mb = loom_sample_microbatch(it, i, microbatches);
        if (mb < microbatches)
            off[mb + 1]++;
    }
    for (int32_t mb = 1; mb <= microbatches; mb++) /* off[mb]: where mb starts */
        off[mb] += off[mb - 1];
    for (int32_t i = 0; i < n; i++) {
        int32_t mb = loom_sample_microbatch(it, i, microbatches);
        if (mb >= microbatches)
            continue;
        loom_sample *at = &out[off[mb]++]; /* off[mb] ends where mb ends */
        *at = it->samples[i];
        at->microbatch = -1;
    }
    for (int32_t mb = microbatches; mb > 0; mb--)
        off[mb] = off[mb - 1];
    off[0] = 0;
}

#ifdef __cplusplus
}
#endif
#endif
