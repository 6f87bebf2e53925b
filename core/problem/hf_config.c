/* hf_config.c - a model from a Hugging Face `config.json`: decoder-only
 * language models (Llama, Mistral, Qwen2; Mixtral-style MoE as a dense
 * model of its active experts), vision-language models with a vision tower
 * (LLaVA, Qwen2-VL), and CLIP / SigLIP vision encoders. The rules and
 * their limits are in docs/formats.md ("Hugging Face config.json"). */
#include <stdio.h>
#include <string.h>
#include "problem_io_priv.h"

/* The model_type values understood, for messages. */
#define LOOM_HF_SUPPORTED                                                      \
    "llama, mistral, qwen2, mixtral, llava, qwen2_vl, clip, clip_vision_model, " \
    "siglip, siglip_vision_model"

/* Qwen2-VL sizes images dynamically; this many pixels a side is assumed. */
#define LOOM_HF_QWEN2VL_IMAGE_PX 448

/* Reads an integer member of obj (at JSON path `path`) in 1..max. */
static int get_int(const char *file, const cJSON *obj, const char *path, const char *key,
                   int required, int64_t max, int64_t *out, loom_error *err)
{
    return loom_json_get_int(file, obj, path, key, required, 1, max, out, err);
}

/* The text stack of a decoder-only language model config at `path`:
 * hidden_size, intermediate_size, num_hidden_layers, num_attention_heads,
 * num_key_value_heads (default: heads), vocab_size; for MoE configs
 * (num_local_experts) the FFN of num_experts_per_tok experts. */
static int text_layers(const char *file, const cJSON *cfg, const char *path,
                       loom_layer_group *g, int64_t *vocab, loom_error *err)
{
    int64_t hidden = 0, ffn = 0, layers = 0, heads = 0, kv = 0, experts = 0, top_k = 1;
    int rc = get_int(file, cfg, path, "hidden_size", 1, 1 << 20, &hidden, err);
    if (!rc)
        rc = get_int(file, cfg, path, "intermediate_size", 1, 1 << 22, &ffn, err);
    if (!rc)
        rc = get_int(file, cfg, path, "num_hidden_layers", 1, LOOM_MAX_LAYERS_PER_MODULE,
                     &layers, err);
    if (!rc)
        rc = get_int(file, cfg, path, "num_attention_heads", 1, 1 << 16, &heads, err);
    kv = heads;
    if (!rc)
        rc = get_int(file, cfg, path, "num_key_value_heads", 0, heads, &kv, err);
    if (!rc)
        rc = get_int(file, cfg, path, "vocab_size", 1, (int64_t)1 << 24, vocab, err);
    if (!rc)
        rc = get_int(file, cfg, path, "num_local_experts", 0, 1 << 12, &experts, err);
    if (!rc && experts > 0)
        rc = get_int(file, cfg, path, "num_experts_per_tok", 1, experts, &top_k, err);
    if (rc)
        return rc;
    if (heads % kv || hidden % heads)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s%snum_attention_heads: expected a multiple of "
                              "num_key_value_heads (%lld) that divides hidden_size (%lld), "
                              "found %lld",
                              file, path, *path ? "." : "", (long long)kv, (long long)hidden,
                              (long long)heads);
    memset(g, 0, sizeof *g);
    g->count = (int32_t)layers;
    g->layer.hidden = hidden;
    g->layer.ffn_hidden = ffn * top_k; /* the experts a token runs through */
    g->layer.heads = (int32_t)heads;
    g->layer.kv_heads = (int32_t)kv;
    g->layer.gated_ffn = 1; /* SwiGLU in every supported family */
    g->layer.causal = 1;
    return LOOM_OK;
}

/* A CLIP or SigLIP vision tower at `path`: its layers and the tokens one
 * image gives ((image_size / patch_size)^2 patches, rounded down as the
 * convolution does, plus the class token when `cls`). */
static int clip_layers(const char *file, const cJSON *cfg, const char *path, int cls,
                       loom_layer_group *g, int64_t *tokens, loom_error *err)
{
    int64_t hidden = 0, ffn = 0, layers = 0, heads = 0, image = 224, patch = 32;
    int rc = get_int(file, cfg, path, "hidden_size", 1, 1 << 20, &hidden, err);
    if (!rc)
        rc = get_int(file, cfg, path, "intermediate_size", 1, 1 << 22, &ffn, err);
    if (!rc)
        rc = get_int(file, cfg, path, "num_hidden_layers", 1, LOOM_MAX_LAYERS_PER_MODULE,
                     &layers, err);
    if (!rc)
        rc = get_int(file, cfg, path, "num_attention_heads", 1, 1 << 16, &heads, err);
    if (!rc)
        rc = get_int(file, cfg, path, "image_size", 0, 1 << 16, &image, err);
    if (!rc)
        rc = get_int(file, cfg, path, "patch_size", 0, 1 << 12, &patch, err);
    if (rc)
        return rc;
    if (hidden % heads)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s%snum_attention_heads: expected a divisor of hidden_size "
                              "(%lld), found %lld",
                              file, path, *path ? "." : "", (long long)hidden, (long long)heads);
    if (patch > image)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s%spatch_size: expected at most image_size (%lld), found "
                              "%lld",
                              file, path, *path ? "." : "", (long long)image, (long long)patch);
    memset(g, 0, sizeof *g);
    g->count = (int32_t)layers;
    g->layer.hidden = hidden;
    g->layer.ffn_hidden = ffn;
    g->layer.heads = (int32_t)heads;
    g->layer.kv_heads = (int32_t)heads;
    *tokens = (image / patch) * (image / patch) + (cls ? 1 : 0);
    return LOOM_OK;
}

/* Qwen2-VL's vision tower (vision_config: depth, embed_dim, num_heads,
 * mlp_ratio, patch_size, spatial_merge_size) for a square image of
 * LOOM_HF_QWEN2VL_IMAGE_PX pixels; *patches is what the tower's blocks
 * run on, *tokens what the language model receives (the patches merged
 * spatial_merge_size^2 to one). */
static int qwen2vl_layers(const char *file, const cJSON *cfg, const char *path,
                          loom_layer_group *g, int64_t *patches, int64_t *tokens,
                          loom_error *err)
{
    int64_t depth = 0, dim = 0, heads = 0, patch = 14, merge = 2;
    double ratio = 4;
    int rc = get_int(file, cfg, path, "depth", 1, LOOM_MAX_LAYERS_PER_MODULE, &depth, err);
    if (!rc)
        rc = get_int(file, cfg, path, "embed_dim", 1, 1 << 20, &dim, err);
    if (!rc)
        rc = get_int(file, cfg, path, "num_heads", 1, 1 << 16, &heads, err);
    if (!rc)
        rc = loom_json_get_double(file, cfg, path, "mlp_ratio", 0, 0.25, 64, &ratio, err);
    if (!rc)
        rc = get_int(file, cfg, path, "patch_size", 0, 1 << 12, &patch, err);
    if (!rc)
        rc = get_int(file, cfg, path, "spatial_merge_size", 0, 64, &merge, err);
    if (rc)
        return rc;
    if (dim % heads)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s.num_heads: expected a divisor of embed_dim (%lld), "
                              "found %lld", file, path, (long long)dim, (long long)heads);
    memset(g, 0, sizeof *g);
    g->count = (int32_t)depth;
    g->layer.hidden = dim;
    g->layer.ffn_hidden = (int64_t)(dim * ratio + 0.5);
    g->layer.heads = (int32_t)heads;
    g->layer.kv_heads = (int32_t)heads;
    int64_t side = LOOM_HF_QWEN2VL_IMAGE_PX / patch / merge;
    *tokens = side > 0 ? side * side : 1;
    *patches = *tokens * merge * merge;
    return LOOM_OK;
}

/* The vision tower of a LLaVA config (vision_config, CLIP or SigLIP). */
static int llava_vision(const char *file, const cJSON *vc, loom_layer_group *g,
                        int64_t *tokens, loom_error *err)
{
    /* LLaVA feeds the language model the patch features, not the class token. */
    return clip_layers(file, vc, "vision_config", 0, g, tokens, err);
}

/* The language model's name: "_name_or_path" or model_type. */
static const char *model_name(const cJSON *root, const char *type)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(root, "_name_or_path");
    return cJSON_IsString(n) && n->valuestring[0] ? n->valuestring : type;
}

int loom_model_is_hf_config(const cJSON *root)
{
    return cJSON_IsObject(root) && !cJSON_GetObjectItemCaseSensitive(root, "modules") &&
           (cJSON_GetObjectItemCaseSensitive(root, "model_type") ||
            cJSON_GetObjectItemCaseSensitive(root, "architectures"));
}

int loom_model_from_hf(const char *file, const cJSON *root, loom_model_data **out,
                       loom_error *err)
{
    const char *type = NULL;
    int rc = loom_json_get_string(file, root, "", "model_type", 1, &type, err);
    if (rc)
        return rc;
    loom_layer_group vision, text;
    int64_t vocab = 0, tokens = 0, patches = 0; /* patches 0: tokens */
    static const char *const vit_in[] = {"vision"};
    loom_module_desc mods[2];
    memset(mods, 0, sizeof mods);
    int n = 0;
    const char *name = model_name(root, type);
    if (!strcmp(type, "llama") || !strcmp(type, "mistral") || !strcmp(type, "qwen2") ||
        !strcmp(type, "mixtral")) {
        rc = text_layers(file, root, "", &text, &vocab, err);
    } else if (!strcmp(type, "llava")) {
        const cJSON *vc = NULL, *tc = NULL;
        rc = loom_json_get_object(file, root, "", "vision_config", 1, &vc, err);
        if (!rc)
            rc = loom_json_get_object(file, root, "", "text_config", 1, &tc, err);
        if (!rc)
            rc = llava_vision(file, vc, &vision, &tokens, err);
        if (!rc)
            rc = text_layers(file, tc, "text_config", &text, &vocab, err);
        n = 1;
    } else if (!strcmp(type, "qwen2_vl")) {
        const cJSON *vc = NULL;
        rc = loom_json_get_object(file, root, "", "vision_config", 1, &vc, err);
        if (!rc)
            rc = qwen2vl_layers(file, vc, "vision_config", &vision, &patches, &tokens, err);
        if (!rc)
            rc = text_layers(file, root, "", &text, &vocab, err);
        n = 1;
    } else if (!strcmp(type, "clip") || !strcmp(type, "siglip")) {
        const cJSON *vc = NULL;
        rc = loom_json_get_object(file, root, "", "vision_config", 1, &vc, err);
        if (!rc)
            rc = clip_layers(file, vc, "vision_config", !strcmp(type, "clip"), &vision,
                             &tokens, err);
        n = -1;
    } else if (!strcmp(type, "clip_vision_model") || !strcmp(type, "siglip_vision_model")) {
        rc = clip_layers(file, root, "", !strcmp(type, "clip_vision_model"), &vision, &tokens,
                         err);
        n = -1;
    } else {
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: model_type: expected a supported Hugging Face architecture "
                              "(%s), found \"%.60s\"",
                              file, LOOM_HF_SUPPORTED, type);
    }
    if (rc)
        return rc;
    if (n != 0) { /* a vision tower */
        mods[0].name = "vision";
        mods[0].kind = n < 0 ? LOOM_MODULE_BACKBONE : LOOM_MODULE_ENCODER;
        mods[0].modality = LOOM_MODALITY_IMAGE;
        mods[0].tokens_per_item = tokens;
        mods[0].patches_per_item = patches;
        mods[0].n_groups = 1;
        mods[0].groups = &vision;
    }
    if (n >= 0) { /* a language model, fed by the tower when there is one */
        loom_module_desc *lm = &mods[n];
        lm->name = "llm";
        lm->kind = LOOM_MODULE_BACKBONE;
        lm->modality = LOOM_MODALITY_TEXT;
        lm->tokens_per_item = 1;
        lm->vocab = vocab;
        lm->n_groups = 1;
        lm->groups = &text;
        lm->n_inputs = n;
        lm->inputs = n ? vit_in : NULL;
    }
    loom_model_desc d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.n_modules = n < 0 ? 1 : n + 1;
    d.modules = mods;
    return loom_model_build(file, &d, out, err);
}
