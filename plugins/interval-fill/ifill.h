/*
 * ifill.h - DistTrain's inter-microbatch reordering (DistTrain §6.2,
 * Algorithm 3) as pure functions: the 1F1B timing recurrence of a linear
 * pipeline (digest §2.7) and the interval-filling order.
 *
 * Times are per (microbatch j, stage s) at [j * p + s]. A microbatch's
 * "size" is its total forward + backward time over all stages.
 *
 * Ownership: every array is caller-provided; nothing here allocates.
 * Units: milliseconds.
 */
#ifndef LOOM_IFILL_H
#define LOOM_IFILL_H

#include <stdint.h>

/* Doubles of scratch loom_ifill_makespan needs: 2 * l * p + p. */
#define LOOM_IFILL_SIM_DOUBLES(l, p) (2 * (size_t)(l) * (size_t)(p) + (size_t)(p))

/* Replays non-interleaved 1F1B (Megatron order: stage s runs
 * min(p - s - 1, l) warm-up forwards, then one forward one backward, then
 * the remaining backwards) with microbatches entering in `order` (l
 * entries, a permutation of 0..l-1). F(k, s) waits for F(k, s-1), B(k, s)
 * for B(k, s+1) (the last stage's B for its own F). Returns the makespan.
 * scratch: LOOM_IFILL_SIM_DOUBLES(l, p) doubles; on return scratch[k*p+s]
 * is the end of position k's F at stage s and scratch[l*p + k*p + s] that
 * of its B. cursor_scratch: p ints. */
double loom_ifill_makespan(int32_t p, int32_t l, const int32_t *order,
                           const double *fwd, const double *bwd,
                           double *scratch, int32_t *cursor_scratch);

/* Ints of scratch loom_ifill_order needs: 3 * l + p. */
#define LOOM_IFILL_ORDER_INTS(l, p) (3 * (size_t)(l) + (size_t)(p))

/* The interval-filling order (Algorithm 3 with the digest's fixes): the
 * smallest microbatch first; the p - 1 next smallest last (largest of them
 * first, the smallest at the very end); every 1F1B interval at stage 0 in
 * between (interval 1 between F and B of the first microbatch takes p - 1
 * microbatches, each later one takes one) filled with the microbatches
 * whose stage-0 forward times sum closest to the interval (a window of
 * consecutive items in forward-time order; ties: the earlier window).
 * Intervals are measured by simulating the order so far with zero-time
 * placeholders in the unfilled positions (one simulation, kept and rolled
 * back from interval to interval); each later interval's item is found by
 * binary search in the forward-time order and links past the items taken
 * (no pass over the pool per interval). Works for any l >= 1 (fewer fillers
 * when l < 2p - 1). Writes order[l]. scratch: as for loom_ifill_makespan;
 * iscratch: LOOM_IFILL_ORDER_INTS(l, p) ints; key_size / key_fwd0: l
 * doubles each (the sort keys). */
void loom_ifill_order(int32_t p, int32_t l, const double *fwd,
                      const double *bwd, int32_t *order, double *scratch,
                      int32_t *iscratch, double *key_size, double *key_fwd0);

#endif
