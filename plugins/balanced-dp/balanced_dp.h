/*
 * balanced_dp.h - the min-max layer split behind the balanced-dp
 * partitioner (Megatron-LM balanced baseline, Optimus appendix B), exposed
 * as a pure function so it can be tested on its own.
 *
 * Ownership: every pointer is caller-provided; nothing here allocates.
 * Units: layer times in milliseconds (any consistent unit works).
 */
#ifndef LOOM_BALANCED_DP_H
#define LOOM_BALANCED_DP_H

#include <stddef.h>
#include <stdint.h>

/* Bytes of scratch loom_balanced_dp_split needs for this problem size. */
size_t loom_balanced_dp_scratch_bytes(int32_t n_layers, int32_t n_stages);

/* Cuts layers 0..n_layers-1 (times layer_ms) into n_stages contiguous runs
 * of at least one layer each, minimising the largest run's total time:
 * F(l, m) = min_j max(F(j, m-1), t_{j+1} + ... + t_l), ties broken towards
 * the smallest j. Writes the run lengths to sizes[n_stages] and the
 * largest run's time to *bottleneck_ms. `scratch` holds at least
 * loom_balanced_dp_scratch_bytes(n_layers, n_stages) bytes, aligned for
 * double. Returns LOOM_OK, or LOOM_EINVAL when n_stages < 1 or
 * n_layers < n_stages (sizes untouched). */
int loom_balanced_dp_split(const double *layer_ms, int32_t n_layers,
                           int32_t n_stages, void *scratch, int32_t *sizes,
                           double *bottleneck_ms);

#endif
