/* shape.c - what a module processes for a set of samples: tokens, number
 * of sequences and the sum of squared sequence lengths (attention). */
#include <math.h>
#include <loom/tokens.h>
#include "shape.h"

int32_t loom_default_microbatch(const loom_iteration *it, int32_t i,
                                int32_t microbatches)
{
    int32_t own = it->samples[i].microbatch;
    if (own >= 0)
        return own;
    return (int32_t)(((int64_t)i * microbatches) / it->n_samples);
}

void loom_shape_sums_add(const loom_model *model, int32_t module, const loom_sample *s,
                         loom_shape_sums *sum)
{
    const loom_module *mod = &model->modules[module];
    double len = (double)loom_sample_tokens(model, module, s);
    if (mod->modality == LOOM_MODALITY_IMAGE) {
        double t = (double)loom_module_patches(mod);
        sum->tokens += len; /* one sequence of the item's patches per image */
        sum->seq_sq += s->images * t * t;
        sum->seqs += s->images;
    } else {
        sum->tokens += len;
        sum->seq_sq += len * len;
        sum->seqs += len > 0;
    }
}

void loom_shape_sums_for(const loom_problem *problem, int32_t module,
                         const loom_iteration *it, const int32_t *sample_mb,
                         int32_t microbatches, loom_shape_sums *sums)
{
    for (int32_t m = 0; m < microbatches; m++)
        sums[m] = (loom_shape_sums){0, 0, 0};
    for (int32_t i = 0; i < it->n_samples; i++) {
        int32_t m = sample_mb ? sample_mb[i]
                              : loom_default_microbatch(it, i, microbatches);
        if (m >= 0 && m < microbatches)
            loom_shape_sums_add(problem->model, module, &it->samples[i], &sums[m]);
    }
}

void loom_shape_from_sums(const loom_problem *problem, const loom_shape_sums *sum,
                          int32_t subs, loom_shape *out)
{
    if (subs < 1)
        subs = 1;
    out->struct_size = (uint32_t)sizeof *out;
    out->tokens = (int64_t)llround(sum->tokens / subs);
    out->seq_sq_sum = sum->seq_sq / subs;
    out->sequences = (int64_t)ceil(sum->seqs / subs);
    out->tp = problem->parallel.tp > 0 ? problem->parallel.tp : 1;
    out->trainable_upstream = 0;
    out->cp = loom_parallel_cp(&problem->parallel);
    out->cp_attention_scale = 1.0;
    out->dp = 0; /* the problem's: a per-module layout sets its own */
    out->reserved = 0;
}

void loom_shape_for(const loom_problem *problem, int32_t module,
                    const loom_iteration *it, const int32_t *sample_mb,
                    int32_t microbatches, int32_t mb, int32_t subs,
                    loom_shape *out)
{
    loom_shape_sums sum = {0, 0, 0};
    for (int32_t i = 0; i < it->n_samples; i++) {
        int32_t m = sample_mb ? sample_mb[i]
                              : loom_default_microbatch(it, i, microbatches);
        if (m == mb)
            loom_shape_sums_add(problem->model, module, &it->samples[i], &sum);
    }
    loom_shape_from_sums(problem, &sum, subs, out);
}

