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

void loom_shape_for(const loom_problem *problem, int32_t module,
                    const loom_iteration *it, const int32_t *sample_mb,
                    int32_t microbatches, int32_t mb, int32_t subs,
                    loom_shape *out)
{
    const loom_model *model = problem->model;
    const loom_module *mod = &model->modules[module];
    double tokens = 0, seq_sq = 0, seqs = 0;
    for (int32_t i = 0; i < it->n_samples; i++) {
        int32_t m = sample_mb ? sample_mb[i]
                              : loom_default_microbatch(it, i, microbatches);
        if (m != mb)
            continue;
        const loom_sample *s = &it->samples[i];
        double len = (double)loom_sample_tokens(model, module, s);
        if (mod->modality == LOOM_MODALITY_IMAGE) {
            double t = (double)mod->tokens_per_item;
            tokens += len; /* one sequence of tokens_per_item per image */
            seq_sq += s->images * t * t;
            seqs += s->images;
        } else {
            tokens += len;
            seq_sq += len * len;
            seqs += len > 0;
        }
    }
    if (subs < 1)
        subs = 1;
    out->struct_size = (uint32_t)sizeof *out;
    out->tokens = (int64_t)llround(tokens / subs);
    out->seq_sq_sum = seq_sq / subs;
    out->sequences = (int64_t)ceil(seqs / subs);
    out->tp = problem->parallel.tp > 0 ? problem->parallel.tp : 1;
    out->trainable_upstream = 0;
}

int loom_upstream_trainable(const loom_model *model, int32_t module)
{
    const loom_module *mod = &model->modules[module];
    for (int32_t k = 0; k < mod->n_inputs; k++) {
        int32_t j = mod->inputs[k];
        if (!model->modules[j].frozen || loom_upstream_trainable(model, j))
            return 1;
    }
    return 0;
}
