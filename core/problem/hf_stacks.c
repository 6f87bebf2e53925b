/* hf_stacks.c - the layer stacks of Hugging Face configs: a decoder-only
 * language model (dense, Mixtral or Qwen2-MoE experts as the FFN a token
 * runs through), a ViT-style tower (CLIP, SigLIP, InternViT) and the
 * Qwen-VL vision tower, each member defaulting to its config class's value
 * (hf_defaults.c). Used by hf_config.c. */
#include <string.h>
#include "hf_stacks.h"

/* An empty object: a sub-config that is absent takes every default. */
static const cJSON EMPTY = {.type = cJSON_Object};

/* An integer member of obj (at `path`) in [1, max]; `dflt` when absent. */
static int opt_int(const char *file, const cJSON *obj, const char *path, const char *key,
                   int64_t max, int64_t dflt, int64_t *out, loom_error *err)
{
    *out = dflt;
    return loom_json_get_int(file, obj, path, key, 0, 1, max, out, err);
}

/* The FFN width a token runs through under the config's MLP kind: the
 * dense width, num_experts_per_tok experts (Mixtral), or those plus the
 * shared expert (Qwen2-MoE, every layer sparse). */
static int active_ffn(const char *file, const cJSON *cfg, const char *path,
                      const loom_hf_text_defaults *d, int64_t *ffn, loom_error *err)
{
    if (d->mlp == LOOM_HF_MLP_DENSE)
        return LOOM_OK;
    int qwen = d->mlp == LOOM_HF_MLP_QWEN2_MOE;
    int64_t experts = 0, top_k = 0, moe = 0, shared = d->shared_expert_intermediate_size;
    int64_t step = 1;
    int rc = opt_int(file, cfg, path, qwen ? "num_experts" : "num_local_experts", 1 << 12,
                     d->num_experts, &experts, err);
    if (!rc)
        rc = opt_int(file, cfg, path, "num_experts_per_tok", experts, d->num_experts_per_tok,
                     &top_k, err);
    if (rc || !qwen) {
        *ffn *= top_k;
        return rc;
    }
    rc = opt_int(file, cfg, path, "moe_intermediate_size", 1 << 22, d->moe_intermediate_size,
                 &moe, err);
    if (!rc)
        rc = loom_json_get_int(file, cfg, path, "shared_expert_intermediate_size", 0, 0,
                               1 << 22, &shared, err);
    if (!rc)
        rc = opt_int(file, cfg, path, "decoder_sparse_step", 1 << 16, 1, &step, err);
    const cJSON *dense = NULL;
    if (!rc)
        rc = loom_json_get_array(file, cfg, path, "mlp_only_layers", 0, &dense, err);
    if (rc)
        return rc;
    if (step != 1 || cJSON_GetArraySize(dense) > 0)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s%s%s: expected every layer sparse (decoder_sparse_step 1, "
                              "mlp_only_layers empty; Loom reads no mixed dense and MoE "
                              "stacks), found %s",
                              file, path, loom_hf_sep(path),
                              step != 1 ? "decoder_sparse_step" : "mlp_only_layers",
                              step != 1 ? "a step above 1" : "dense layers");
    *ffn = moe * top_k + shared;
    return LOOM_OK;
}

/* Refuses a head_dim (null or absent: hidden_size / num_attention_heads)
 * other than `width`: a layer's heads are hidden_size wide in Loom. */
static int head_width(const char *file, const cJSON *cfg, const char *path, int64_t width,
                      loom_error *err)
{
    int64_t dim = width;
    if (cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(cfg, "head_dim")))
        return LOOM_OK;
    int rc = opt_int(file, cfg, path, "head_dim", 1 << 16, width, &dim, err);
    if (rc || dim == width)
        return rc;
    return loom_set_error(err, LOOM_EINVAL,
                          "%s: %s%shead_dim: expected hidden_size / num_attention_heads = %lld "
                          "(Loom models no other head width), found %lld",
                          file, path, loom_hf_sep(path), (long long)width, (long long)dim);
}

/* The decoder stack of config cfg at `path` with class defaults d:
 * hidden_size, intermediate_size, num_hidden_layers, num_attention_heads,
 * num_key_value_heads (null: the heads), vocab_size, head_dim (only
 * hidden_size / num_attention_heads); SwiGLU, causal. */
int loom_hf_text_layers(const char *file, const cJSON *cfg, const char *path,
                        const loom_hf_text_defaults *d, loom_hf_model *m, loom_error *err)
{
    int64_t hidden = 0, ffn = 0, layers = 0, heads = 0, kv = 0;
    if (!cfg)
        cfg = &EMPTY;
    int rc = opt_int(file, cfg, path, "hidden_size", 1 << 20, d->hidden_size, &hidden, err);
    if (!rc)
        rc = opt_int(file, cfg, path, "intermediate_size", 1 << 22, d->intermediate_size, &ffn,
                     err);
    if (!rc)
        rc = opt_int(file, cfg, path, "num_hidden_layers", LOOM_MAX_LAYERS_PER_MODULE,
                     d->num_hidden_layers, &layers, err);
    if (!rc)
        rc = opt_int(file, cfg, path, "num_attention_heads", 1 << 16, d->num_attention_heads,
                     &heads, err);
    kv = d->num_key_value_heads ? d->num_key_value_heads : heads;
    if (!rc && cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(cfg, "num_key_value_heads")))
        kv = heads; /* None: multi-head attention */
    else if (!rc)
        rc = loom_json_get_int(file, cfg, path, "num_key_value_heads", 0, 1, heads, &kv, err);
    if (!rc)
        rc = opt_int(file, cfg, path, "vocab_size", (int64_t)1 << 24, d->vocab_size, &m->vocab,
                     err);
    if (!rc)
        rc = active_ffn(file, cfg, path, d, &ffn, err);
    if (rc)
        return rc;
    if (kv > heads || heads % kv || hidden % heads)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s%snum_attention_heads: expected a multiple of "
                              "num_key_value_heads (%lld) that divides hidden_size (%lld), "
                              "found %lld",
                              file, path, loom_hf_sep(path), (long long)kv, (long long)hidden,
                              (long long)heads);
    rc = head_width(file, cfg, path, hidden / heads, err);
    if (rc)
        return rc;
    loom_layer_group *g = &m->text;
    memset(g, 0, sizeof *g);
    g->count = (int32_t)layers;
    g->layer.hidden = hidden;
    g->layer.ffn_hidden = ffn;
    g->layer.heads = (int32_t)heads;
    g->layer.kv_heads = (int32_t)kv;
    g->layer.gated_ffn = 1; /* SwiGLU in every supported language model */
    g->layer.causal = 1;
    m->has_text = 1;
    return LOOM_OK;
}

/* The vision tower's layer shape: bidirectional attention. */
static void vision_group(loom_hf_model *m, int64_t count, int64_t hidden, int64_t ffn,
                         int64_t heads, int gated)
{
    loom_layer_group *g = &m->vision;
    memset(g, 0, sizeof *g);
    g->count = (int32_t)count;
    g->layer.hidden = hidden;
    g->layer.ffn_hidden = ffn;
    g->layer.heads = (int32_t)heads;
    g->layer.kv_heads = (int32_t)heads;
    g->layer.gated_ffn = gated;
    m->has_vision = 1;
}

/* A CLIP, SigLIP or InternViT tower at `path` (cfg NULL: all defaults):
 * its layers (GELU MLP) and *side, the patch grid's side of one image
 * (image_size / patch_size, rounded down as the convolution does; an
 * image_px > 0 overrides image_size). The layers run on side^2 patches
 * plus the class token when the class has one. */
int loom_hf_vit_layers(const char *file, const cJSON *cfg, const char *path,
                       const loom_hf_vit_defaults *d, int64_t image_px, loom_hf_model *m,
                       int64_t *side, loom_error *err)
{
    const cJSON *c = cfg ? cfg : &EMPTY;
    int64_t hidden = 0, ffn = 0, layers = 0, heads = 0, image = 0, patch = 0;
    int rc = opt_int(file, c, path, "hidden_size", 1 << 20, d->hidden_size, &hidden, err);
    if (!rc)
        rc = opt_int(file, c, path, "intermediate_size", 1 << 22, d->intermediate_size, &ffn,
                     err);
    if (!rc)
        rc = opt_int(file, c, path, "num_hidden_layers", LOOM_MAX_LAYERS_PER_MODULE,
                     d->num_hidden_layers, &layers, err);
    if (!rc)
        rc = opt_int(file, c, path, "num_attention_heads", 1 << 16, d->num_attention_heads,
                     &heads, err);
    if (!rc)
        rc = opt_int(file, c, path, "image_size", 1 << 16, d->image_size, &image, err);
    if (!rc)
        rc = opt_int(file, c, path, "patch_size", 1 << 12, d->patch_size, &patch, err);
    if (rc)
        return rc;
    if (image_px > 0)
        image = image_px;
    if (hidden % heads)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s%snum_attention_heads: expected a divisor of hidden_size "
                              "(%lld), found %lld",
                              file, path, loom_hf_sep(path), (long long)hidden, (long long)heads);
    if (patch > image)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s%spatch_size: expected at most image_size (%lld), found "
                              "%lld",
                              file, path, loom_hf_sep(path), (long long)image, (long long)patch);
    vision_group(m, layers, hidden, ffn, heads, 0);
    *side = image / patch;
    m->patches = *side * *side + d->class_token;
    m->tokens = m->patches;
    return LOOM_OK;
}

/* The Qwen2-VL / Qwen2.5-VL vision tower (cfg NULL: all defaults) for a
 * square LOOM_HF_IMAGE_PX image: blocks of `width` (embed_dim or
 * hidden_size) with num_heads; Qwen2-VL's MLP is mlp_ratio x width with
 * GELU, Qwen2.5-VL's a SwiGLU of intermediate_size. The blocks run on the
 * patches, and spatial_merge_size^2 of them merge into one LM token. */
int loom_hf_qwen_vit_layers(const char *file, const cJSON *cfg, const char *path,
                            const loom_hf_qwen_vit_defaults *d, loom_hf_model *m,
                            loom_error *err)
{
    const cJSON *c = cfg ? cfg : &EMPTY;
    int64_t depth = 0, width = 0, heads = 0, ffn = d->intermediate_size, patch = 0, merge = 0;
    double ratio = d->mlp_ratio;
    int rc = opt_int(file, c, path, "depth", LOOM_MAX_LAYERS_PER_MODULE, d->depth, &depth, err);
    if (!rc)
        rc = opt_int(file, c, path, d->width_key, 1 << 20, d->width, &width, err);
    if (!rc)
        rc = opt_int(file, c, path, "num_heads", 1 << 16, d->num_heads, &heads, err);
    if (!rc && d->intermediate_size)
        rc = opt_int(file, c, path, "intermediate_size", 1 << 22, d->intermediate_size, &ffn,
                     err);
    else if (!rc)
        rc = loom_json_get_double(file, c, path, "mlp_ratio", 0, 0.25, 64, &ratio, err);
    if (!rc)
        rc = opt_int(file, c, path, "patch_size", 1 << 12, d->patch_size, &patch, err);
    if (!rc)
        rc = opt_int(file, c, path, "spatial_merge_size", 64, d->spatial_merge_size, &merge, err);
    if (rc)
        return rc;
    if (width % heads)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s.num_heads: expected a divisor of %s (%lld), found %lld",
                              file, path, d->width_key, (long long)width, (long long)heads);
    if (!d->intermediate_size)
        ffn = (int64_t)((double)width * ratio + 0.5);
    vision_group(m, depth, width, ffn, heads, d->intermediate_size != 0);
    int64_t side = LOOM_HF_IMAGE_PX / patch / merge;
    m->tokens = side > 0 ? side * side : 1;
    m->patches = m->tokens * merge * merge;
    return LOOM_OK;
}
