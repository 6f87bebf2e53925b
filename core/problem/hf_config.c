/* hf_config.c - a model from a Hugging Face `config.json` as published:
 * decoder-only language models (Llama, Mistral, Qwen2, InternLM2; Mixtral
 * and Qwen2-MoE as dense models of the experts a token runs through),
 * vision-language models (LLaVA, Qwen2-VL, Qwen2.5-VL, InternVL) and CLIP /
 * SigLIP vision encoders. A field the file leaves out takes its config
 * class's default (hf_defaults.c), as transformers' AutoConfig does. The
 * rules and their limits are in docs/formats.md ("Hugging Face
 * config.json"). */
#include <stdio.h>
#include <string.h>
#include "hf_defaults.h"
#include "problem_io_priv.h"

/* Qwen-VL and InternVL size images dynamically; this many pixels a side is
 * assumed (one InternVL tile). */
#define LOOM_HF_IMAGE_PX 448

/* What a config becomes: an optional vision tower feeding an optional
 * language model. */
typedef struct hf_model {
    int has_vision, has_text, vision_backbone;
    loom_layer_group vision, text;
    int64_t tokens, patches; /* per image: to the LM, inside the tower */
    int64_t vocab;
} hf_model;

/* An empty object: a sub-config that is absent takes every default. */
static const cJSON EMPTY = {.type = cJSON_Object};

/* "path.key", or "key" at the root. */
static const char *sep(const char *path)
{
    return *path ? "." : "";
}

/* An integer member of obj in [1, max]; `dflt` when absent. */
static int opt_int(const char *file, const cJSON *obj, const char *path, const char *key,
                   int64_t max, int64_t dflt, int64_t *out, loom_error *err)
{
    *out = dflt;
    return loom_json_get_int(file, obj, path, key, 0, 1, max, out, err);
}

/* A sub-config object (`key` of root); *out NULL when absent or null (the
 * class then builds its default sub-config). */
static int sub_config(const char *file, const cJSON *root, const char *key, const cJSON **out,
                      loom_error *err)
{
    *out = NULL;
    if (cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(root, key)))
        return LOOM_OK;
    return loom_json_get_object(file, root, "", key, 0, out, err);
}

/* The model_type of sub-config cfg at `path` (dflt when cfg or the member
 * is absent). */
static int sub_type(const char *file, const cJSON *cfg, const char *path, const char *dflt,
                    const char **out, loom_error *err)
{
    *out = dflt;
    return cfg ? loom_json_get_string(file, cfg, path, "model_type", 0, out, err) : LOOM_OK;
}

/* The error for an unsupported model_type at `path`. */
static int unsupported(const char *file, const char *path, const char *what,
                       const char *supported, const char *type, loom_error *err)
{
    return loom_set_error(err, LOOM_EINVAL, "%s: %s%smodel_type: expected %s (%s), found \"%.60s\"",
                          file, path, sep(path), what, supported, type);
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
                              file, path, sep(path),
                              step != 1 ? "decoder_sparse_step" : "mlp_only_layers",
                              step != 1 ? "a step above 1" : "dense layers");
    *ffn = moe * top_k + shared;
    return LOOM_OK;
}

/* The decoder stack of config cfg at `path` with class defaults d:
 * hidden_size, intermediate_size, num_hidden_layers, num_attention_heads,
 * num_key_value_heads (null: the heads), vocab_size; SwiGLU, causal. */
static int text_layers(const char *file, const cJSON *cfg, const char *path,
                       const loom_hf_text_defaults *d, hf_model *m, loom_error *err)
{
    int64_t hidden = 0, ffn = 0, layers = 0, heads = 0, kv = 0;
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
                              file, path, sep(path), (long long)kv, (long long)hidden,
                              (long long)heads);
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
static void vision_group(hf_model *m, int64_t count, int64_t hidden, int64_t ffn, int64_t heads,
                         int gated)
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
static int vit_layers(const char *file, const cJSON *cfg, const char *path,
                      const loom_hf_vit_defaults *d, int64_t image_px, hf_model *m,
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
                              file, path, sep(path), (long long)hidden, (long long)heads);
    if (patch > image)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s%spatch_size: expected at most image_size (%lld), found "
                              "%lld",
                              file, path, sep(path), (long long)image, (long long)patch);
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
static int qwen_vit_layers(const char *file, const cJSON *cfg, const char *path,
                           const loom_hf_qwen_vit_defaults *d, hf_model *m, loom_error *err)
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

/* Language models a VLM's text part may be (also top-level types). */
static const char *const LLMS[] = {"llama", "mistral", "mixtral", "qwen2", "qwen2_moe",
                                   "internlm2", NULL};

/* 1 when `type` is one of LLMS. */
static int is_llm(const char *type)
{
    for (const char *const *t = LLMS; *t; t++)
        if (!strcmp(*t, type))
            return 1;
    return 0;
}

/* The text part of a VLM: sub-config tc at `key` (NULL: the defaults of
 * the language model `type`, which the caller has resolved). */
static int llm_part(const char *file, const cJSON *tc, const char *key, const char *type,
                    hf_model *m, loom_error *err)
{
    if (!is_llm(type)) {
        char names[128];
        loom_join_names(LLMS, names, sizeof names);
        return unsupported(file, key, "a supported language model", names, type, err);
    }
    return text_layers(file, tc ? tc : &EMPTY, key, loom_hf_text_defaults_for(type), m, err);
}

/* llama, mistral, mixtral, qwen2, qwen2_moe, internlm2: one `llm`. */
static int read_llm(const char *file, const cJSON *root, const char *type, hf_model *m,
                    loom_error *err)
{
    return text_layers(file, root, "", loom_hf_text_defaults_for(type), m, err);
}

/* LLaVA (LlavaConfig): a CLIP or SigLIP vision_config (model_type default
 * clip_vision_model; absent: LlavaConfig's CLIP ViT-L/14 at 336 px) and a
 * text_config (model_type default llama). The LM gets the patch features:
 * the class token is dropped under vision_feature_select_strategy
 * "default", kept under "full". */
static int read_llava(const char *file, const cJSON *root, const char *type, hf_model *m,
                      loom_error *err)
{
    (void)type;
    const cJSON *vc = NULL;
    const char *vtype = "clip_vision_model", *strategy = "default";
    int rc = sub_config(file, root, "vision_config", &vc, err);
    if (!rc)
        rc = sub_type(file, vc, "vision_config", vtype, &vtype, err);
    if (!rc)
        rc = loom_json_get_string(file, root, "", "vision_feature_select_strategy", 0,
                                  &strategy, err);
    if (rc)
        return rc;
    if (strcmp(strategy, "default") && strcmp(strategy, "full"))
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: vision_feature_select_strategy: expected \"default\" or "
                              "\"full\", found \"%.60s\"", file, strategy);
    if (strcmp(vtype, "clip_vision_model") && strcmp(vtype, "siglip_vision_model"))
        return unsupported(file, "vision_config", "a supported vision tower",
                           "clip_vision_model, siglip_vision_model", vtype, err);
    const loom_hf_vit_defaults *d = loom_hf_vit_defaults_for(vc ? vtype : "llava");
    int64_t side = 0;
    const cJSON *tc = NULL;
    const char *ttype = "llama";
    rc = vit_layers(file, vc, "vision_config", d, 0, m, &side, err);
    if (!rc && !strcmp(strategy, "default"))
        m->tokens = m->patches - 1; /* LLaVA drops the first feature */
    if (!rc)
        rc = sub_config(file, root, "text_config", &tc, err);
    if (!rc)
        rc = sub_type(file, tc, "text_config", ttype, &ttype, err);
    return rc ? rc : llm_part(file, tc, "text_config", ttype, m, err);
}

/* Qwen2-VL and Qwen2.5-VL: vision_config and the language model, either a
 * text_config or (as published) the top-level fields. */
static int read_qwen_vl(const char *file, const cJSON *root, const char *type, hf_model *m,
                        loom_error *err)
{
    const cJSON *vc = NULL, *tc = NULL;
    int rc = sub_config(file, root, "vision_config", &vc, err);
    if (!rc)
        rc = qwen_vit_layers(file, vc, "vision_config", loom_hf_qwen_vit_defaults_for(type), m,
                             err);
    if (!rc)
        rc = sub_config(file, root, "text_config", &tc, err);
    if (rc)
        return rc;
    const loom_hf_text_defaults *d = loom_hf_text_defaults_for(type);
    return tc ? text_layers(file, tc, "text_config", d, m, err)
              : text_layers(file, root, "", d, m, err);
}

/* The llm_config's language model as InternVLChatConfig picks it: by
 * architectures[0] (InternLM2, Llama, Qwen2), else by model_type; no
 * llm_config: InternLM2. Another architecture without a model_type is an
 * error. */
static int internvl_llm_type(const char *file, const cJSON *lc, const char **type,
                             loom_error *err)
{
    static const char *const ARCH[][2] = {{"InternLM2ForCausalLM", "internlm2"},
                                          {"LlamaForCausalLM", "llama"},
                                          {"Qwen2ForCausalLM", "qwen2"}};
    *type = LOOM_HF_INTERNVL_LLM;
    const cJSON *arch = lc ? cJSON_GetObjectItemCaseSensitive(lc, "architectures") : NULL;
    const cJSON *first = cJSON_IsArray(arch) ? cJSON_GetArrayItem(arch, 0) : NULL;
    if (!cJSON_IsString(first))
        return sub_type(file, lc, "llm_config", *type, type, err);
    for (size_t i = 0; i < sizeof ARCH / sizeof ARCH[0]; i++)
        if (!strcmp(first->valuestring, ARCH[i][0])) {
            *type = ARCH[i][1];
            return LOOM_OK;
        }
    if (cJSON_GetObjectItemCaseSensitive(lc, "model_type"))
        return sub_type(file, lc, "llm_config", *type, type, err);
    return loom_set_error(err, LOOM_EINVAL,
                          "%s: llm_config.architectures[0]: expected InternLM2ForCausalLM, "
                          "LlamaForCausalLM or Qwen2ForCausalLM (or a model_type beside it), "
                          "found \"%.60s\"", file, first->valuestring);
}

/* InternVL 2 / 2.5 (InternVLChatConfig): an InternViT vision_config and an
 * llm_config. One 448-px tile per image (force_image_size, else the
 * tower's image_size): the tower runs on its patches and the class token,
 * and pixel shuffle hands (patches x downsample_ratio^2) tokens to the LM. */
static int read_internvl(const char *file, const cJSON *root, const char *type, hf_model *m,
                         loom_error *err)
{
    (void)type;
    const cJSON *vc = NULL, *lc = NULL;
    int64_t image = 0, side = 0;
    double ratio = LOOM_HF_INTERNVL_DOWNSAMPLE;
    const char *ltype = NULL;
    int rc = sub_config(file, root, "vision_config", &vc, err);
    if (!rc && !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(root, "force_image_size")))
        rc = opt_int(file, root, "", "force_image_size", 1 << 16, 0, &image, err);
    if (!rc)
        rc = loom_json_get_double(file, root, "", "downsample_ratio", 0, 0.0625, 1, &ratio, err);
    if (!rc)
        rc = vit_layers(file, vc, "vision_config",
                        loom_hf_vit_defaults_for(LOOM_HF_INTERNVL_VISION), image, m, &side, err);
    if (!rc)
        rc = sub_config(file, root, "llm_config", &lc, err);
    if (!rc)
        rc = internvl_llm_type(file, lc, &ltype, err);
    if (rc)
        return rc;
    int64_t tokens = (int64_t)((double)(side * side) * ratio * ratio);
    m->tokens = tokens > 0 ? tokens : 1;
    return llm_part(file, lc, "llm_config", ltype, m, err);
}

/* clip, siglip (a vision_config) and clip_vision_model,
 * siglip_vision_model: the tower alone, class token included. */
static int read_vision(const char *file, const cJSON *root, const char *type, hf_model *m,
                       loom_error *err)
{
    int whole = !strstr(type, "_vision_model");
    char tower[32];
    snprintf(tower, sizeof tower, "%s%s", type, whole ? "_vision_model" : "");
    const cJSON *vc = root;
    int rc = whole ? sub_config(file, root, "vision_config", &vc, err) : LOOM_OK;
    int64_t side = 0;
    if (!rc)
        rc = vit_layers(file, vc, whole ? "vision_config" : "", loom_hf_vit_defaults_for(tower),
                        0, m, &side, err);
    m->vision_backbone = 1;
    return rc;
}

typedef int (*hf_reader)(const char *file, const cJSON *root, const char *type, hf_model *m,
                         loom_error *err);

static const struct {
    const char *type;
    hf_reader read;
} READERS[] = {
    {"llama", read_llm},         {"mistral", read_llm},
    {"mixtral", read_llm},       {"qwen2", read_llm},
    {"qwen2_moe", read_llm},     {"internlm2", read_llm},
    {"llava", read_llava},       {"qwen2_vl", read_qwen_vl},
    {"qwen2_5_vl", read_qwen_vl}, {"internvl_chat", read_internvl},
    {"clip", read_vision},       {"siglip", read_vision},
    {"clip_vision_model", read_vision}, {"siglip_vision_model", read_vision},
};
#define N_READERS (sizeof READERS / sizeof READERS[0])

/* The supported model_type values, "a, b, c", for messages. */
static void supported_types(char *buf, size_t size)
{
    const char *names[N_READERS + 1];
    for (size_t i = 0; i < N_READERS; i++)
        names[i] = READERS[i].type;
    names[N_READERS] = NULL;
    loom_join_names(names, buf, size);
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

/* Builds the model of m: `vision` (an encoder feeding `llm`, or the
 * backbone alone) and `llm`. */
static int build(const char *file, const char *name, const hf_model *m, loom_model_data **out,
                 loom_error *err)
{
    static const char *const vit_in[] = {"vision"};
    loom_module_desc mods[2];
    memset(mods, 0, sizeof mods);
    int n = 0;
    if (m->has_vision) {
        mods[0].name = "vision";
        mods[0].kind = m->vision_backbone ? LOOM_MODULE_BACKBONE : LOOM_MODULE_ENCODER;
        mods[0].modality = LOOM_MODALITY_IMAGE;
        mods[0].tokens_per_item = m->tokens;
        mods[0].patches_per_item = m->patches != m->tokens ? m->patches : 0;
        mods[0].n_groups = 1;
        mods[0].groups = &m->vision;
        n = 1;
    }
    if (m->has_text) {
        loom_module_desc *lm = &mods[n];
        lm->name = "llm";
        lm->kind = LOOM_MODULE_BACKBONE;
        lm->modality = LOOM_MODALITY_TEXT;
        lm->tokens_per_item = 1;
        lm->vocab = m->vocab;
        lm->n_groups = 1;
        lm->groups = &m->text;
        lm->n_inputs = n;
        lm->inputs = n ? vit_in : NULL;
    }
    loom_model_desc d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.n_modules = m->has_vision + m->has_text;
    d.modules = mods;
    return loom_model_build(file, &d, out, err);
}

int loom_model_from_hf(const char *file, const cJSON *root, loom_model_data **out,
                       loom_error *err)
{
    const char *type = NULL;
    int rc = loom_json_get_string(file, root, "", "model_type", 1, &type, err);
    if (rc)
        return rc;
    for (size_t i = 0; i < N_READERS; i++) {
        if (strcmp(type, READERS[i].type))
            continue;
        hf_model m;
        memset(&m, 0, sizeof m);
        rc = READERS[i].read(file, root, type, &m, err);
        return rc ? rc : build(file, model_name(root, type), &m, out, err);
    }
    char names[512];
    supported_types(names, sizeof names);
    return loom_set_error(err, LOOM_EINVAL,
                          "%s: model_type: expected a supported Hugging Face architecture "
                          "(%s), found \"%.60s\"",
                          file, names, type);
}
