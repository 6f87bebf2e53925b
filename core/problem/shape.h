/*
 * shape.h - what one module sees of an iteration: the shape of a
 * (sub-)microbatch from the samples assigned to it (not installed).
 */
#ifndef LOOM_SHAPE_H
#define LOOM_SHAPE_H

#include <loom/loom.h>

/* ---- shapes and costs (shape.c) ----------------------------- */

/* The shape module `module` sees for the samples of `it` assigned to
 * microbatch `mb` by `sample_mb` (n_samples entries for this module; NULL:
 * even contiguous split into `microbatches`, or the samples' own
 * microbatch fields), divided into `subs` sub-microbatches. A sample's
 * tokens are loom_sample_tokens() (<loom/tokens.h>); image items are
 * sequences of tokens_per_item tokens, any other module sees one sequence
 * per sample. */
void loom_shape_for(const loom_problem *problem, int32_t module,
                    const loom_iteration *it, const int32_t *sample_mb,
                    int32_t microbatches, int32_t mb, int32_t subs,
                    loom_shape *out);

/* Microbatch of sample i when the partition gives none: the sample's own
 * field when >= 0, else the even contiguous split. */
int32_t loom_default_microbatch(const loom_iteration *it, int32_t i,
                                int32_t microbatches);

/* 1 when some module upstream of `module` (transitively) is trainable. */
int loom_upstream_trainable(const loom_model *model, int32_t module);

#endif
