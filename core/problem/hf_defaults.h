/*
 * hf_defaults.h - the defaults of the Hugging Face config classes Loom
 * reads (not installed): the value AutoConfig gives a field that a
 * config.json leaves out, one table per model_type, each naming the class
 * and source file it restates (docs/formats.md, "Defaults").
 */
#ifndef LOOM_HF_DEFAULTS_H
#define LOOM_HF_DEFAULTS_H

#include <stdint.h>

/* How a decoder layer's MLP is built. */
enum loom_hf_mlp {
    LOOM_HF_MLP_DENSE = 0,  /* one SwiGLU MLP of intermediate_size */
    LOOM_HF_MLP_MIXTRAL,    /* num_local_experts, num_experts_per_tok of them per token */
    LOOM_HF_MLP_QWEN2_MOE   /* num_experts of moe_intermediate_size plus a shared expert */
};

/* A decoder-only language model's config class. */
typedef struct loom_hf_text_defaults {
    const char *model_type;
    const char *source; /* the config class and its file */
    int64_t hidden_size;
    int64_t intermediate_size;
    int64_t num_hidden_layers;
    int64_t num_attention_heads;
    int64_t num_key_value_heads; /* 0: None, which means num_attention_heads */
    int64_t vocab_size;
    int32_t mlp;                 /* enum loom_hf_mlp */
    int64_t num_experts;         /* num_local_experts (Mixtral), num_experts (Qwen2-MoE) */
    int64_t num_experts_per_tok;
    int64_t moe_intermediate_size;           /* Qwen2-MoE */
    int64_t shared_expert_intermediate_size; /* Qwen2-MoE */
} loom_hf_text_defaults;

/* A ViT-style vision tower: CLIP, SigLIP, InternViT. */
typedef struct loom_hf_vit_defaults {
    const char *model_type;
    const char *source;
    int64_t hidden_size;
    int64_t intermediate_size;
    int64_t num_hidden_layers;
    int64_t num_attention_heads;
    int64_t image_size;
    int64_t patch_size;
    int32_t class_token; /* 1: the embeddings prepend a class token */
} loom_hf_vit_defaults;

/* The vision tower of Qwen2-VL (GELU MLP of mlp_ratio x embed_dim) or
 * Qwen2.5-VL (SwiGLU MLP of intermediate_size, width hidden_size). */
typedef struct loom_hf_qwen_vit_defaults {
    const char *model_type;
    const char *source;
    const char *width_key; /* "embed_dim" or "hidden_size" */
    int64_t depth;
    int64_t width;
    int64_t num_heads;
    double mlp_ratio;          /* Qwen2-VL */
    int64_t intermediate_size; /* Qwen2.5-VL; 0: mlp_ratio x width, GELU */
    int64_t patch_size;
    int64_t spatial_merge_size;
} loom_hf_qwen_vit_defaults;

/* InternVLChatConfig (OpenGVLab/InternVL internvl_chat/internvl/model/
 * internvl_chat/configuration_internvl_chat.py):
 * downsample_ratio=0.5 (pixel shuffle keeps a quarter of the patches);
 * no llm_config means InternLM2ForCausalLM, no vision_config
 * InternVisionConfig's defaults. */
#define LOOM_HF_INTERNVL_DOWNSAMPLE 0.5
#define LOOM_HF_INTERNVL_LLM "internlm2"
#define LOOM_HF_INTERNVL_VISION "intern_vit_6b"

/* The decoder defaults of `model_type` (the text part of qwen2_vl and
 * qwen2_5_vl included); NULL when unknown. */
const loom_hf_text_defaults *loom_hf_text_defaults_for(const char *model_type);
/* The ViT defaults of `model_type` ("llava": the tower LlavaConfig builds
 * when vision_config is absent); NULL when unknown. */
const loom_hf_vit_defaults *loom_hf_vit_defaults_for(const char *model_type);
/* The Qwen-VL vision tower defaults of "qwen2_vl" or "qwen2_5_vl"; NULL
 * otherwise. */
const loom_hf_qwen_vit_defaults *loom_hf_qwen_vit_defaults_for(const char *model_type);

#endif
