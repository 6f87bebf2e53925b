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
#include "hf_stacks.h"

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
                          file, path, loom_hf_sep(path), what, supported, type);
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
                    loom_hf_model *m, loom_error *err)
{
    if (!is_llm(type)) {
        char names[128];
        loom_join_names(LLMS, names, sizeof names);
        return unsupported(file, key, "a supported language model", names, type, err);
    }
    return loom_hf_text_layers(file, tc, key, loom_hf_text_defaults_for(type), m, err);
}

/* llama, mistral, mixtral, qwen2, qwen2_moe, internlm2: one `llm`. */
static int read_llm(const char *file, const cJSON *root, const char *type, loom_hf_model *m,
                    loom_error *err)
{
    return loom_hf_text_layers(file, root, "", loom_hf_text_defaults_for(type), m, err);
}

/* LLaVA (LlavaConfig): a CLIP or SigLIP vision_config (model_type default
 * clip_vision_model; absent: LlavaConfig's CLIP ViT-L/14 at 336 px) and a
 * text_config (model_type default llama). The LM gets the patch features:
 * the class token is dropped under vision_feature_select_strategy
 * "default", kept under "full". */
static int read_llava(const char *file, const cJSON *root, const char *type, loom_hf_model *m,
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
    rc = loom_hf_vit_layers(file, vc, "vision_config", d, 0, m, &side, err);
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
static int read_qwen_vl(const char *file, const cJSON *root, const char *type, loom_hf_model *m,
                        loom_error *err)
{
    const cJSON *vc = NULL, *tc = NULL;
    int rc = sub_config(file, root, "vision_config", &vc, err);
    if (!rc)
        rc = loom_hf_qwen_vit_layers(file, vc, "vision_config",
                                     loom_hf_qwen_vit_defaults_for(type), m, err);
    if (!rc)
        rc = sub_config(file, root, "text_config", &tc, err);
    if (rc)
        return rc;
    const loom_hf_text_defaults *d = loom_hf_text_defaults_for(type);
    return tc ? loom_hf_text_layers(file, tc, "text_config", d, m, err)
              : loom_hf_text_layers(file, root, "", d, m, err);
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
static int read_internvl(const char *file, const cJSON *root, const char *type, loom_hf_model *m,
                         loom_error *err)
{
    (void)type;
    const cJSON *vc = NULL, *lc = NULL;
    int64_t image = 0, side = 0;
    double ratio = LOOM_HF_INTERNVL_DOWNSAMPLE;
    const char *ltype = NULL;
    int rc = sub_config(file, root, "vision_config", &vc, err);
    if (!rc && !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(root, "force_image_size")))
        rc = loom_json_get_int(file, root, "", "force_image_size", 0, 1, 1 << 16, &image, err);
    if (!rc)
        rc = loom_json_get_double(file, root, "", "downsample_ratio", 0, 0.0625, 1, &ratio, err);
    if (!rc)
        rc = loom_hf_vit_layers(file, vc, "vision_config",
                                loom_hf_vit_defaults_for(LOOM_HF_INTERNVL_VISION), image, m,
                                &side, err);
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
static int read_vision(const char *file, const cJSON *root, const char *type, loom_hf_model *m,
                       loom_error *err)
{
    int whole = !strstr(type, "_vision_model");
    char tower[32];
    snprintf(tower, sizeof tower, "%s%s", type, whole ? "_vision_model" : "");
    const cJSON *vc = root;
    int rc = whole ? sub_config(file, root, "vision_config", &vc, err) : LOOM_OK;
    int64_t side = 0;
    if (!rc)
        rc = loom_hf_vit_layers(file, vc, whole ? "vision_config" : "",
                                loom_hf_vit_defaults_for(tower), 0, m, &side, err);
    m->vision_backbone = 1;
    return rc;
}

typedef int (*hf_reader)(const char *file, const cJSON *root, const char *type, loom_hf_model *m,
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
static int build(const char *file, const char *name, const loom_hf_model *m, loom_model_data **out,
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
        loom_hf_model m;
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
