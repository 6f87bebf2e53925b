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

/* What loom_shape_for adds up over the samples of one microbatch. */
typedef struct loom_shape_sums {
    double tokens, seq_sq, seqs;
} loom_shape_sums;

/* Adds sample s to the sums of module `module`: its tokens, its
 * sequences (one per image item of an image module, else one) and their
 * squared lengths. */
void loom_shape_sums_add(const loom_model *model, int32_t module, const loom_sample *s,
                         loom_shape_sums *sum);

/* The sums of every microbatch 0..microbatches-1 at once, in one pass over
 * the samples (sums has `microbatches` entries): loom_shape_for of every
 * microbatch costs O(samples) instead of O(microbatches * samples).
 * Samples assigned outside [0, microbatches) are left out. */
void loom_shape_sums_for(const loom_problem *problem, int32_t module,
                         const loom_iteration *it, const int32_t *sample_mb,
                         int32_t microbatches, loom_shape_sums *sums);

/* The shape of one microbatch from its sums, split into `subs`
 * sub-microbatches: exactly what loom_shape_for returns for it. */
void loom_shape_from_sums(const loom_problem *problem, const loom_shape_sums *sum,
                          int32_t subs, loom_shape *out);

/* Microbatch of sample i when the partition gives none: the sample's own
 * field when >= 0, else the even contiguous split. */
int32_t loom_default_microbatch(const loom_iteration *it, int32_t i,
                                int32_t microbatches);


#endif
