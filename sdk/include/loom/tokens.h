/*
 * loom/tokens.h - how many tokens one sample gives a module: the one rule
 * the core's shape builder, its workload models and every plugin use.
 * Header-only, so plugins call it without linking the core.
 *
 * A module's own tokens for a sample (what it hands a text module
 * downstream):
 *   image: images x tokens_per_item (each image one sequence);
 *   video: video_seconds x tokens_per_item, audio: audio_seconds x
 *          tokens_per_item, each rounded to the nearest integer with halves
 *          up (floor(x + 0.5); 1.25 s x 2 tokens/s gives 3 tokens);
 *   text:  text_tokens.
 * A non-text module processes the same counts with loom_module_patches()
 * per item in place of tokens_per_item (its patches before a merge).
 * A text module's sequence for a sample is its text_tokens plus the own
 * tokens of each of its upstream modules (loom_module.inputs). What
 * crosses a pipeline boundary is a span's sequence, except after a
 * non-text module's last layer: its merged own tokens
 * (loom_sample_span_out_tokens).
 *
 * Ownership: nothing is allocated; the model and sample are read-only.
 * Sample fields are the validated ones of a workload (counts and seconds
 * >= 0); a negative product counts as 0 tokens.
 */
#ifndef LOOM_TOKENS_H
#define LOOM_TOKENS_H

#include <loom/problem.h>

#ifdef __cplusplus
extern "C" {
#endif

/* x rounded to the nearest integer, halves up, for x >= 0 (0 below). */
static inline int64_t loom_round_tokens(double x)
{
    return x > 0 ? (int64_t)(x + 0.5) : 0;
}

/* The tokens sample s gives module `mod` at `per_item` tokens an item. */
static inline int64_t loom_sample_items_tokens(const loom_module *mod, const loom_sample *s,
                                               int64_t per_item)
{
    switch (mod->modality) {
    case LOOM_MODALITY_IMAGE:
        return (int64_t)s->images * per_item;
    case LOOM_MODALITY_VIDEO:
        return loom_round_tokens(s->video_seconds * (double)per_item);
    case LOOM_MODALITY_AUDIO:
        return loom_round_tokens(s->audio_seconds * (double)per_item);
    default:
        return s->text_tokens;
    }
}

/* The tokens module `mod` hands downstream for sample s (see above). */
static inline int64_t loom_sample_output_tokens(const loom_module *mod,
                                                const loom_sample *s)
{
    return loom_sample_items_tokens(mod, s, mod->tokens_per_item);
}

/* The tokens sample s gives module `module` of `model`: its own tokens,
 * and for a text module its text_tokens plus every upstream module's. */
static inline int64_t loom_sample_tokens(const loom_model *model, int32_t module,
                                         const loom_sample *s)
{
    const loom_module *mod = &model->modules[module];
    if (mod->modality != LOOM_MODALITY_TEXT)
        return loom_sample_items_tokens(mod, s, loom_module_patches(mod));
    int64_t len = s->text_tokens;
    for (int32_t k = 0; k < mod->n_inputs; k++)
        len += loom_sample_output_tokens(&model->modules[mod->inputs[k]], s);
    return len;
}

/* 1 when a span of `mod` ending before layer `end_layer` hands on the
 * module's merged output (a non-text module's last layer), 0 when it
 * hands on the sequence its layers run on. */
static inline int loom_span_hands_merged(const loom_module *mod, int32_t end_layer)
{
    return mod->modality != LOOM_MODALITY_TEXT && end_layer >= mod->n_layers;
}

/* The tokens that leave a span of module `module` ending before layer
 * `end_layer` (first layer + layer count) for sample s: where a non-text
 * module's span ends at its last layer, the module's merged output
 * (loom_sample_output_tokens: its patches pooled to tokens_per_item an
 * item); anywhere else the sequence its layers run on
 * (loom_sample_tokens). */
static inline int64_t loom_sample_span_out_tokens(const loom_model *model, int32_t module,
                                                  int32_t end_layer, const loom_sample *s)
{
    const loom_module *mod = &model->modules[module];
    if (loom_span_hands_merged(mod, end_layer))
        return loom_sample_output_tokens(mod, s);
    return loom_sample_tokens(model, module, s);
}

#ifdef __cplusplus
}
#endif
#endif
