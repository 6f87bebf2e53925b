/* hf_defaults.c - the defaults of the Hugging Face config classes, one
 * table per model_type. Each entry restates the keyword defaults of the
 * class's __init__ in the file named beside it (transformers'
 * src/transformers/models/<name>/configuration_<name>.py unless another
 * repository is named); docs/formats.md lists the same values. */
#include <string.h>
#include "hf_defaults.h"

#define TF "transformers models/"

static const loom_hf_text_defaults TEXT[] = {
    /* type, source, hidden, ffn, layers, heads, kv (0: heads), vocab, mlp, experts,
     * experts per token, expert ffn, shared expert ffn */
    {"llama", "LlamaConfig (" TF "llama/configuration_llama.py)",
     4096, 11008, 32, 32, 0, 32000, LOOM_HF_MLP_DENSE, 0, 0, 0, 0},
    {"mistral", "MistralConfig (" TF "mistral/configuration_mistral.py)",
     4096, 14336, 32, 32, 8, 32000, LOOM_HF_MLP_DENSE, 0, 0, 0, 0},
    {"mixtral", "MixtralConfig (" TF "mixtral/configuration_mixtral.py)",
     4096, 14336, 32, 32, 8, 32000, LOOM_HF_MLP_MIXTRAL, 8, 2, 0, 0},
    {"qwen2", "Qwen2Config (" TF "qwen2/configuration_qwen2.py)",
     4096, 22016, 32, 32, 32, 151936, LOOM_HF_MLP_DENSE, 0, 0, 0, 0},
    {"qwen2_moe", "Qwen2MoeConfig (" TF "qwen2_moe/configuration_qwen2_moe.py)",
     2048, 5632, 24, 16, 16, 151936, LOOM_HF_MLP_QWEN2_MOE, 60, 4, 1408, 5632},
    {"internlm2", "InternLM2Config (OpenGVLab/InternVL internvl_chat/internvl/model/internlm2/"
     "configuration_internlm2.py, as internlm/internlm2-chat-7b ships it)",
     4096, 11008, 32, 32, 0, 103168, LOOM_HF_MLP_DENSE, 0, 0, 0, 0},
    /* the language model of the Qwen VL configs: their 72B defaults */
    {"qwen2_vl", "Qwen2VLConfig / Qwen2VLTextConfig (" TF "qwen2_vl/configuration_qwen2_vl.py)",
     8192, 29568, 80, 64, 8, 152064, LOOM_HF_MLP_DENSE, 0, 0, 0, 0},
    {"qwen2_5_vl",
     "Qwen2_5_VLConfig / Qwen2_5_VLTextConfig (" TF "qwen2_5_vl/configuration_qwen2_5_vl.py)",
     8192, 29568, 80, 64, 8, 152064, LOOM_HF_MLP_DENSE, 0, 0, 0, 0},
};

static const loom_hf_vit_defaults VIT[] = {
    /* type, source, hidden, ffn, layers, heads, image px, patch px, class token */
    {"clip_vision_model", "CLIPVisionConfig (" TF "clip/configuration_clip.py)",
     768, 3072, 12, 12, 224, 32, 1},
    {"siglip_vision_model", "SiglipVisionConfig (" TF "siglip/configuration_siglip.py)",
     768, 3072, 12, 12, 224, 16, 0},
    {"intern_vit_6b",
     "InternVisionConfig (OpenGVLab/InternVL internvl_chat/internvl/model/internvl_chat/"
     "configuration_intern_vit.py)",
     3200, 12800, 48, 25, 224, 14, 1},
    /* LlavaConfig builds this CLIP tower when vision_config is absent */
    {"llava", "LlavaConfig (" TF "llava/configuration_llava.py)",
     1024, 4096, 24, 16, 336, 14, 1},
};

static const loom_hf_qwen_vit_defaults QWEN_VIT[] = {
    /* type, source, width key, depth, width, heads, mlp ratio, SwiGLU ffn, patch, merge */
    {"qwen2_vl", "Qwen2VLVisionConfig (" TF "qwen2_vl/configuration_qwen2_vl.py)",
     "embed_dim", 32, 1280, 16, 4.0, 0, 14, 2},
    {"qwen2_5_vl", "Qwen2_5_VLVisionConfig (" TF "qwen2_5_vl/configuration_qwen2_5_vl.py)",
     "hidden_size", 32, 3584, 16, 0.0, 3420, 14, 2},
};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

const loom_hf_text_defaults *loom_hf_text_defaults_for(const char *model_type)
{
    for (size_t i = 0; model_type && i < N_OF(TEXT); i++)
        if (!strcmp(TEXT[i].model_type, model_type))
            return &TEXT[i];
    return NULL;
}

const loom_hf_vit_defaults *loom_hf_vit_defaults_for(const char *model_type)
{
    for (size_t i = 0; model_type && i < N_OF(VIT); i++)
        if (!strcmp(VIT[i].model_type, model_type))
            return &VIT[i];
    return NULL;
}

const loom_hf_qwen_vit_defaults *loom_hf_qwen_vit_defaults_for(const char *model_type)
{
    for (size_t i = 0; model_type && i < N_OF(QWEN_VIT); i++)
        if (!strcmp(QWEN_VIT[i].model_type, model_type))
            return &QWEN_VIT[i];
    return NULL;
}
