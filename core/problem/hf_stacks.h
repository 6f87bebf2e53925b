/*
 * hf_stacks.h - reading the layer stacks of a Hugging Face config (not
 * installed): hf_stacks.c reads a decoder, a ViT-style tower or a Qwen-VL
 * tower into an loom_hf_model, which hf_config.c turns into modules.
 * Messages name the file and the JSON path, expected and found.
 */
#ifndef LOOM_HF_STACKS_H
#define LOOM_HF_STACKS_H

#include "hf_defaults.h"
#include "problem_io_priv.h"

/* Qwen-VL and InternVL size images dynamically; this many pixels a side is
 * assumed (one InternVL tile). */
#define LOOM_HF_IMAGE_PX 448

/* What a config becomes: an optional vision tower feeding an optional
 * language model. */
typedef struct loom_hf_model {
    int has_vision, has_text, vision_backbone;
    loom_layer_group vision, text;
    int64_t tokens, patches; /* per image: to the LM, inside the tower */
    int64_t vocab;
} loom_hf_model;

/* "." between a JSON path and a key, or "" at the root. */
static inline const char *loom_hf_sep(const char *path)
{
    return *path ? "." : "";
}

/* The decoder stack of cfg at `path` (NULL: every default of d) into
 * m->text and m->vocab: hidden_size, intermediate_size, num_hidden_layers,
 * num_attention_heads, num_key_value_heads (null: the heads), vocab_size,
 * the experts of the MoE types; head_dim only hidden_size / heads. */
int loom_hf_text_layers(const char *file, const cJSON *cfg, const char *path,
                        const loom_hf_text_defaults *d, loom_hf_model *m, loom_error *err);

/* A CLIP, SigLIP or InternViT tower at `path` (cfg NULL: defaults d) into
 * m->vision, m->patches (side^2 plus the class token when the class has
 * one; m->tokens the same) and *side = image_size / patch_size, with
 * image_px > 0 overriding image_size. */
int loom_hf_vit_layers(const char *file, const cJSON *cfg, const char *path,
                       const loom_hf_vit_defaults *d, int64_t image_px, loom_hf_model *m,
                       int64_t *side, loom_error *err);

/* The Qwen2-VL / Qwen2.5-VL tower at `path` (cfg NULL: defaults d) for a
 * LOOM_HF_IMAGE_PX square image into m->vision, m->patches (the patches
 * the blocks run on) and m->tokens (merged spatial_merge_size^2 to one). */
int loom_hf_qwen_vit_layers(const char *file, const cJSON *cfg, const char *path,
                            const loom_hf_qwen_vit_defaults *d, loom_hf_model *m,
                            loom_error *err);

#endif
