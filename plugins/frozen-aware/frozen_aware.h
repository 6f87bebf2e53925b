/*
 * frozen_aware.h - Cornstarch's frozen-status-aware costs and contiguous
 * min-max partitioning (dissertation §3.3.1, §3.4.1, Eqs. 3.1-3.5) as pure
 * functions for the frozen-aware partitioner and its tests.
 *
 * Ownership: arrays are caller-provided; the model is borrowed.
 */
#ifndef LOOM_FROZEN_AWARE_H
#define LOOM_FROZEN_AWARE_H

#include <loom/loom.h>

/* Which layers pay input gradients (B_d). */
enum loom_frozen_rule {
    LOOM_FROZEN_EQ33 = 0,  /* Eq. 3.3 as written: p(l) = p(l-1) or trainable
                              (a trainable layer pays B_d itself) */
    LOOM_FROZEN_STRICT = 1 /* only when some earlier layer is trainable */
};

/* 1 when some module upstream of `module` (transitively) is trainable. */
int loom_frozen_upstream(const loom_model *model, int32_t module);

/* p of layer `layer` of `module` under the rule: across the module DAG a
 * trainable layer anywhere upstream (any branch feeding it) counts. */
int loom_frozen_pays_input(const loom_model *model, int32_t module,
                           int32_t layer, int rule);

/* Eq. 3.5: contiguous split of t[0..n-1] into s stages minimising the
 * largest stage sum (prefix sums, argmin table, backtracking; ties: the
 * earliest cut). sizes[s] get the layer counts. LOOM_EINVAL when s < 1 or
 * n < s. */
int loom_frozen_minmax(const double *t, int32_t n, int32_t s, int32_t *sizes,
                       double *bottleneck, loom_error *err);

#endif
