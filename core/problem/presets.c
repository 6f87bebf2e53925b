/* presets.c - built-in models (PipeWeaver Table 3 shapes and the Table 4 /
 * Table 6 combinations with their parallel configs) and clusters (H800,
 * H100, A100, A40). */
#include <stdio.h>
#include <string.h>
#include "problem_io_priv.h"

#define GIB(n) ((int64_t)(n) * 1024 * 1024 * 1024)

/* Latent video tokens per second of video: 16 FPS / 8x temporal
 * compression = 2 latent frames; 768 px / 8x spatial = 96x96 latents in
 * 2x2 patches = 2304 tokens per latent frame. */
#define VIDEO_TOKENS_PER_SECOND (2 * 48 * 48)
#define IMAGE_TOKENS 169 /* 768 px image through the ViT */

/* One pretrained network: its module shape (a single layer group). */
typedef struct base_model {
    const char *preset;   /* "vit-5b" */
    const char *module;   /* module name when used alone */
    int32_t kind;
    int32_t modality;
    int64_t tokens_per_item;
    int64_t vocab;
    loom_layer_group group;
} base_model;

/* count, {hidden, ffn_hidden, heads, kv_heads, gated_ffn, causal, cross_attention} */
static const base_model bases[] = {
    {"vit-5b", "vit", LOOM_MODULE_ENCODER, LOOM_MODALITY_IMAGE, IMAGE_TOKENS, 0,
     {63, {1792, 15360, 16, 16, 0, 0, 0, 0}}},
    {"vit-22b", "vit", LOOM_MODULE_ENCODER, LOOM_MODALITY_IMAGE, IMAGE_TOKENS, 0,
     {48, {6144, 24576, 48, 48, 0, 0, 0, 0}}},
    {"llama3-8b", "llm", LOOM_MODULE_BACKBONE, LOOM_MODALITY_TEXT, 1, 128256,
     {32, {4096, 14336, 32, 8, 1, 1, 0, 0}}},
    {"qwen2-32b", "llm", LOOM_MODULE_BACKBONE, LOOM_MODALITY_TEXT, 1, 152064,
     {64, {5120, 27648, 40, 8, 1, 1, 0, 0}}},
    {"qwen2-72b", "llm", LOOM_MODULE_BACKBONE, LOOM_MODALITY_TEXT, 1, 152064,
     {80, {8192, 29568, 64, 8, 1, 1, 0, 0}}},
    {"dit-5b", "dit", LOOM_MODULE_DECODER, LOOM_MODALITY_VIDEO, VIDEO_TOKENS_PER_SECOND, 0,
     {28, {3584, 10240, 28, 28, 0, 0, 1, 0}}},
    {"dit-30b", "dit", LOOM_MODULE_DECODER, LOOM_MODALITY_VIDEO, VIDEO_TOKENS_PER_SECOND, 0,
     {48, {6144, 24576, 48, 48, 0, 0, 1, 0}}},
    {"gpt-175b", "llm", LOOM_MODULE_BACKBONE, LOOM_MODALITY_TEXT, 1, 50257,
     {96, {12288, 49152, 96, 96, 0, 1, 0, 0}}},
};
#define N_BASES ((int)(sizeof bases / sizeof bases[0]))

/* A two-module combination: upstream -> downstream. */
typedef struct combo_model {
    const char *preset;
    const char *up, *down;       /* base presets */
    int t2v;                     /* 1: text encoder -> DiT; 0: ViT -> LLM */
    int32_t tp, pp, dp;
} combo_model;

static const combo_model combos[] = {
    {"vlm-s", "vit-5b", "llama3-8b", 0, 4, 4, 1},
    {"vlm-m", "vit-5b", "qwen2-32b", 0, 8, 4, 1},
    {"vlm-l", "vit-22b", "qwen2-72b", 0, 8, 8, 1},
    {"t2v-s", "llama3-8b", "dit-5b", 1, 4, 4, 1},
    {"t2v-l", "qwen2-32b", "dit-30b", 1, 8, 8, 1},
    {"vlm-xl", "vit-22b", "gpt-175b", 0, 8, 8, 128},
    {"t2v-xl", "qwen2-72b", "dit-30b", 1, 8, 4, 96},
};
#define N_COMBOS ((int)(sizeof combos / sizeof combos[0]))

static const char *const model_names[] = {
    "vlm-s", "vlm-m", "vlm-l", "t2v-s", "t2v-l", "vlm-xl", "t2v-xl",
    "vit-5b", "vit-22b", "llama3-8b", "qwen2-32b", "qwen2-72b", "dit-5b",
    "dit-30b", "gpt-175b", NULL};

/* Efficiency factors and P2P latency shared by every cluster preset. */
#define DEFAULTS LOOM_DEFAULT_EFF_GEMM, LOOM_DEFAULT_EFF_ATTENTION, LOOM_DEFAULT_EFF_MEMORY, \
    LOOM_DEFAULT_EFF_COLLECTIVE, LOOM_DEFAULT_P2P_LATENCY_MS

/* Size curves (gemm_half_flops, attention_half_flops) of the GPU
 * generations, the same as examples/clusters/ (docs/cost-models.md,
 * "Size-aware efficiency"). */
#define H_HALF 4e9, 4e9
#define A_HALF 0.0, 0.0

/* Efficiency factors of the Hopper presets (h800, h100), fitted once to
 * the fidelity table's H800 rows (docs/benchmarks.md, "Fidelity"). */
#define H_EFF 0.6, 0.45, LOOM_DEFAULT_EFF_MEMORY, LOOM_DEFAULT_EFF_COLLECTIVE, \
    LOOM_DEFAULT_P2P_LATENCY_MS

/* The H200's factors, fitted by `loom calibrate` to the layer times
 * measured on one (tests/fidelity/measured/h200/, docs/benchmarks.md,
 * "Measured layer times"): efficiencies, collective (not measured: the
 * Hopper default), latency, size curve; its launch overhead, the fused
 * attention's backward FLOPs and the Adam step's HBM efficiency (the
 * median of four measured steps) follow GEN5_HOST in the table below. */
#define H200_EFF 0.692791, 0.413583, 1.0, LOOM_DEFAULT_EFF_COLLECTIVE, LOOM_DEFAULT_P2P_LATENCY_MS
#define H200_SHAPE 10.5236, 2.5, 0.661

/* Device<->host copy bandwidth per GPU and direction (activation
 * offload): PCIe Gen5 x16 (64 GB/s per direction) on the Hopper presets
 * and Gen4 x16 (32 GB/s) on the others, at the 80% of it that pinned
 * copies reach (docs/memory-and-ilp.md, "Offload"). */
#define GEN5_HOST 51.2e9
#define GEN4_HOST 25.6e9

/* Dense matmul peaks other than bf16, TF32, FP32 and FP8 (0: none), from
 * NVIDIA's datasheets: H100 SXM (the H800 and H200 have its compute) 494.7,
 * 66.9 and 1978.9 TFLOP/s; A100 156 and 19.5; A40 74.8 and 37.4. */
#define H_PEAKS 494.7e12, 66.9e12, 1978.9e12

/* The attention core's efficiency under FlashAttention-2 on the Hopper
 * presets (eff_attention_flash2): their fused-attention factor times 0.62,
 * FlashAttention-2's speed over cuDNN's on an H100 at head dimension 128
 * (Shah et al., FlashAttention-3, 2024, Figures 5-6: 335 against 539
 * TFLOP/s forward, causal, and 322 against 516 backward at 16k tokens;
 * docs/cost-models.md, "Attention kernels"). Before Hopper it is the
 * fused kernel: 0. */
#define H_FLASH2 0.279    /* 0.45 x 0.62 */
#define H200_FLASH2 0.2564 /* 0.413583 x 0.62 */
#define A100_PEAKS 156e12, 19.5e12, 0.0
#define A40_PEAKS 74.8e12, 37.4e12, 0.0

/* Cluster presets: bf16 dense peak, HBM bandwidth and size, GPUs per node,
 * NVLink (PCIe for the A40) and per-GPU network bandwidth, then the host
 * copy bandwidth, and the other precisions' peaks. */
static const loom_cluster clusters[] = {
    {"h800", 989e12, 3.35e12, GIB(80), 8, 0, 200e9, 25e9, H_EFF, H_HALF, GEN5_HOST, 0.0, 0.0, 0.0,
     H_PEAKS, H_FLASH2},
    {"h100", 989e12, 3.35e12, GIB(80), 8, 0, 450e9, 50e9, H_EFF, H_HALF, GEN5_HOST, 0.0, 0.0, 0.0,
     H_PEAKS, H_FLASH2},
    {"h200", 989e12, 4.8e12, 150754820096LL, 8, 0, 450e9, 50e9, H200_EFF, H_HALF, GEN5_HOST,
     H200_SHAPE, H_PEAKS, H200_FLASH2},
    {"a100", 312e12, 2.0e12, GIB(80), 8, 0, 300e9, 25e9, DEFAULTS, A_HALF, GEN4_HOST, 0.0, 0.0, 0.0,
     A100_PEAKS, 0.0},
    {"a40", 149.7e12, 696e9, GIB(48), 8, 0, 32e9, 12.5e9, DEFAULTS, A_HALF, GEN4_HOST, 0.0, 0.0, 0.0,
     A40_PEAKS, 0.0},
};

static const char *const cluster_names[] = {"h800", "h100", "h200", "a100", "a40", NULL};

const char *const *loom_model_preset_names(void)
{
    return model_names;
}

const char *const *loom_cluster_preset_names(void)
{
    return cluster_names;
}

/* The base model named `name` (case-insensitive), or NULL. */
static const base_model *find_base(const char *name)
{
    for (int i = 0; i < N_BASES; i++)
        if (loom_name_eq(bases[i].preset, name))
            return &bases[i];
    return NULL;
}

/* Fills a module description from a base model. */
static void base_desc(const base_model *b, loom_module_desc *md)
{
    memset(md, 0, sizeof *md);
    md->name = b->module;
    md->kind = b->kind;
    md->modality = b->modality;
    md->tokens_per_item = b->tokens_per_item;
    md->vocab = b->vocab;
    md->n_groups = 1;
    md->groups = &b->group;
}

int loom_model_preset(const char *name, loom_model_data **out, loom_error *err)
{
    loom_module_desc mods[2];
    loom_model_desc d;
    loom_parallel par;
    static const char *const vit_input[] = {"vit"};
    static const char *const text_input[] = {"text_encoder"};
    memset(&d, 0, sizeof d);
    memset(&par, 0, sizeof par);
    *out = NULL;
    const base_model *b = find_base(name);
    if (b) {
        base_desc(b, &mods[0]);
        d.name = b->preset;
        d.n_modules = 1;
        d.modules = mods;
        return loom_model_build("preset", &d, out, err);
    }
    for (int i = 0; i < N_COMBOS; i++) {
        const combo_model *c = &combos[i];
        if (!loom_name_eq(c->preset, name))
            continue;
        base_desc(find_base(c->up), &mods[0]);
        base_desc(find_base(c->down), &mods[1]);
        if (c->t2v) {
            mods[0].name = "text_encoder";
            mods[0].kind = LOOM_MODULE_ENCODER;
            mods[1].inputs = text_input;
        } else {
            mods[1].inputs = vit_input;
        }
        mods[1].n_inputs = 1;
        par.tp = c->tp;
        par.pp = c->pp;
        par.dp = c->dp;
        par.vpp = 1;
        par.microbatches = 4 * c->pp;
        d.name = c->preset;
        d.n_modules = 2;
        d.modules = mods;
        d.parallel = &par;
        d.family = c->t2v ? "video" : "interleaved";
        return loom_model_build("preset", &d, out, err);
    }
    return LOOM_ENOTFOUND;
}

int loom_cluster_preset(const char *name, loom_cluster *out)
{
    for (size_t i = 0; i < sizeof clusters / sizeof clusters[0]; i++) {
        if (loom_name_eq(clusters[i].name, name)) {
            *out = clusters[i];
            return 1;
        }
    }
    return 0;
}
