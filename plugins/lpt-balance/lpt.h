/*
 * lpt.h - DistTrain's intra-microbatch reordering (DistTrain §6.1,
 * Algorithm 2) as a pure function: deal items with sizes to m groups
 * (data-parallel groups), each item to the least-loaded group.
 *
 * The paper sorts ascending but cites the 4/3 bound of LPT, which sorts
 * descending; both orders are offered. A cardinality cap keeps every group
 * at the same item count (each DP group must run BS/DP microbatches),
 * which the published algorithm does not enforce.
 *
 * Ownership: every array is caller-provided; nothing here allocates.
 */
#ifndef LOOM_LPT_H
#define LOOM_LPT_H

#include <stdint.h>

/* Deals items 0..n-1 (sizes[i] >= 0) to m >= 1 groups. Items are taken by
 * size, descending when `descending` (LPT) else ascending (as published),
 * ties by index; each goes to the group with the least load among those
 * holding fewer than `cap` items (cap <= 0: no limit), ties to the lowest
 * group. Writes group_of[n], perm[n] (the groups concatenated, each in
 * item order: group j's items become DP group j's samples; with m = 1
 * the identity) and
 * loads[m]; `scratch` holds 2n ints. Returns the largest load, or -1 when
 * the arguments are invalid (m < 1, n < 0, or cap * m < n). */
double loom_lpt_assign(const double *sizes, int32_t n, int32_t m,
                       int descending, int32_t cap, int32_t *scratch,
                       int32_t *group_of, int32_t *perm, double *loads);

#endif
