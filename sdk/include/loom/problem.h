/*
 * loom/problem.h - the validated, immutable planning problem as plugins see
 * it: model (modules of layers, module DAG), cluster, parallel config and
 * the sample metadata of one iteration.
 *
 * Ownership: every pointer in these structs is owned by the host and stays
 * valid for the whole planning call it is passed to. Plugins never write
 * through them and never free them.
 * Units: times in milliseconds, sizes in bytes, rates per second.
 */
#ifndef LOOM_PROBLEM_H
#define LOOM_PROBLEM_H

#include <loom/common.h>

#ifdef __cplusplus
extern "C" {
#endif

enum loom_module_kind {
    LOOM_MODULE_ENCODER = 0,
    LOOM_MODULE_BACKBONE = 1,
    LOOM_MODULE_DECODER = 2
};

/* What a module's input items are, i.e. which sample field feeds it. */
enum loom_modality {
    LOOM_MODALITY_TEXT = 0,  /* items = text tokens (+ upstream tokens)   */
    LOOM_MODALITY_IMAGE = 1, /* items = images                           */
    LOOM_MODALITY_VIDEO = 2, /* items = video seconds                     */
    LOOM_MODALITY_AUDIO = 3  /* items = audio seconds                     */
};

/* One transformer layer's shape. */
typedef struct loom_layer {
    int64_t hidden;     /* embedding dimension */
    int64_t ffn_hidden; /* FFN inner dimension */
    int32_t heads;      /* attention heads */
    int32_t kv_heads;   /* key/value heads (groups); == heads without GQA */
    int32_t gated_ffn;  /* 1: SwiGLU (3 matrices), 0: GELU MLP (2) */
    int32_t causal;     /* 1: causal attention (half the score FLOPs) */
    int32_t cross_attention; /* 1: extra cross-attention block (DiT) */
    int32_t reserved;
} loom_layer;

typedef struct loom_module {
    const char *name;          /* unique within the model */
    int32_t kind;              /* enum loom_module_kind */
    int32_t modality;          /* enum loom_modality */
    int32_t n_layers;
    const loom_layer *layers;  /* n_layers entries */
    int64_t tokens_per_item;   /* e.g. 169 per 768-px image; 1 for text */
    int64_t vocab;             /* embedding rows (0: no embedding) */
    int32_t frozen;            /* 1: no weight gradients */
    int32_t n_inputs;          /* upstream modules in the module DAG */
    const int32_t *inputs;     /* indices into loom_model.modules */
    /* Appended in Loom 0.4: tokens one item occupies inside this module's
     * own layers, when they differ from what it hands downstream (a vision
     * tower runs a 768-px image as 54 x 54 = 2916 patches and merges them
     * into the 169 tokens the LM sees); 0 means tokens_per_item. */
    int64_t patches_per_item;
} loom_module;

/* The tokens one item occupies inside module m's own layers. */
static inline int64_t loom_module_patches(const loom_module *m)
{
    return m->patches_per_item > 0 ? m->patches_per_item : m->tokens_per_item;
}

typedef struct loom_model {
    const char *name;
    int32_t n_modules;
    const loom_module *modules; /* in topological order of the DAG */
} loom_model;

typedef struct loom_cluster {
    const char *name;
    double peak_flops;            /* bf16 FLOP/s per GPU */
    double hbm_bytes_per_s;       /* HBM bandwidth per GPU */
    int64_t hbm_bytes;            /* HBM capacity per GPU */
    int32_t gpus_per_node;
    int32_t reserved;
    double nvlink_bytes_per_s;    /* intra-node bandwidth per GPU */
    double net_bytes_per_s;       /* inter-node bandwidth per GPU */
    double eff_gemm;              /* efficiency factors in (0,1] */
    double eff_attention;
    double eff_memory;
    double eff_collective;
    double p2p_latency_ms;        /* fixed latency of one P2P transfer */
    /* Appended in Loom 0.4: size-aware efficiency. An operator of F FLOPs
     * on one GPU runs at eff * F / (F + half), half = the FLOPs at which
     * it reaches half its efficiency; 0 turns the curve off. */
    double gemm_half_flops;
    double attention_half_flops;
    /* Appended in Loom 0.4: device<->host copy bandwidth per GPU and per
     * direction (PCIe), what activation offload moves at; 0: unknown, so
     * nothing can be offloaded. */
    double host_bytes_per_s;
    /* Appended in Loom 0.4: a fixed overhead per operator that does work
     * (kernel launch and tail effects), in microseconds; 0: none. */
    double kernel_launch_us;
    /* Appended in Loom 0.4: the attention core's backward FLOPs as a
     * multiple of its forward's; 0 means 2 (the plain product's dQ, dK,
     * dV). A fused kernel that rebuilds the scores in its backward, as
     * FlashAttention does, does more. */
    double attention_backward;
    /* Appended in Loom 0.4: the efficiency of the optimizer step's HBM
     * traffic (a fused multi-tensor Adam), in (0, 1]; 0 means eff_memory. */
    double eff_optimizer;
    /* Appended: the dense matmul peak per GPU at precisions other than
     * peak_flops's bf16 (datasheet figures), in FLOP/s; 0: not given. The
     * run's matmul precision picks one (the roofline's matmul_precision;
     * docs/cost-models.md, "Matmul precision"). */
    double peak_flops_tf32;
    double peak_flops_fp32;
    double peak_flops_fp8;
    /* Appended: the attention core's efficiency under FlashAttention-2
     * (PyTorch's SDPA flash backend), for runs whose runtime picks that
     * kernel where eff_attention is the fused kernel Transformer Engine
     * picks (cuDNN's on Hopper); in (0, 1], 0 means eff_attention (before
     * Hopper FlashAttention-2 is that kernel). The roofline's
     * attention_kernel chooses (docs/cost-models.md, "Attention kernels"). */
    double eff_attention_flash2;
} loom_cluster;

typedef struct loom_parallel {
    int32_t tp;           /* tensor-parallel degree */
    int32_t pp;           /* pipeline ranks P */
    int32_t dp;           /* data-parallel replicas */
    int32_t vpp;          /* virtual stages per rank V */
    int32_t microbatches; /* microbatches per iteration M (per replica) */
    int32_t cp;           /* context-parallel degree (Loom 0.4, in the slot
                             that was reserved; 0 from older hosts = 1) */
} loom_parallel;

/* The context-parallel degree of p: 1 when unset. */
static inline int32_t loom_parallel_cp(const loom_parallel *p)
{
    return p && p->cp > 1 ? p->cp : 1;
}

/* One training sample's metadata (what a prefetching data loader sees). */
typedef struct loom_sample {
    int64_t text_tokens;
    int32_t images;
    int32_t microbatch;  /* packing given by the workload, -1 when none */
    double video_seconds;
    double audio_seconds;
} loom_sample;

typedef struct loom_iteration {
    int32_t index;             /* iteration number in the workload */
    int32_t n_samples;
    const loom_sample *samples;
} loom_iteration;

/* Stage-times problem: profiled per-stage times instead of a model. Stage
 * s (0 <= s < ranks*virtual_stages) runs on rank stage_rank[s], or on rank
 * s % ranks (the loop placement) when stage_rank is NULL. */
typedef struct loom_stage_times {
    int32_t ranks, microbatches, virtual_stages;
    int32_t split_backward;          /* 1: input_grad_ms + weight_grad_ms given */
    const double *forward_ms;        /* ranks*virtual_stages entries */
    const double *backward_ms;       /* when !split_backward */
    const double *input_grad_ms;     /* when split_backward */
    const double *weight_grad_ms;    /* when split_backward */
    const double *microbatch_scale;  /* microbatches entries (1.0 default) */
    const double *activation_bytes;  /* ranks*virtual_stages entries */
    double p2p_ms;
    double memory_cap_bytes;         /* 0: no cap */
    /* Appended: per-stage transfer times (ranks*virtual_stages entries),
     * or NULL for p2p_ms everywhere. Entry s is the time of every transfer
     * out of stage s: its forward output to stage s + 1 and its input
     * gradient to stage s - 1. */
    const double *p2p_stage_ms;
    /* Appended. ranks*virtual_stages entries: the rank of every stage,
     * each rank holding virtual_stages of them; NULL: s % ranks. */
    const int32_t *stage_rank;
    /* Appended. ranks*virtual_stages entries: of activation_bytes, the
     * bytes still held after the stage's I until its W (split backward);
     * NULL: all of them. */
    const double *weight_grad_bytes;
} loom_stage_times;

/* Named stage-to-rank placements of P*V stages (chunk c = s / P, i = s % P):
 *   loop:   rank i (Megatron's interleaved placement);
 *   zigzag: rank i on even chunks, P-1-i on odd ones, so consecutive
 *           chunks meet on the same rank at the turns;
 *   v:      zigzag with exactly two chunks per rank (ZB-V, DualPipeV). */
enum loom_placement {
    LOOM_PLACEMENT_LOOP = 0,
    LOOM_PLACEMENT_V = 1,
    LOOM_PLACEMENT_ZIGZAG = 2
};

/* The rank of stage s (0 <= s < P*V) under a named placement. */
static inline int32_t loom_placement_rank(int32_t placement, int32_t s, int32_t P)
{
    int32_t c = s / P, i = s % P;
    return placement != LOOM_PLACEMENT_LOOP && c % 2 ? P - 1 - i : i;
}

/* Where a module with its own layout runs (loom_module_layout.placement). */
enum loom_module_placement {
    LOOM_LAYOUT_TOP = 0,       /* not listed: the top-level layout's GPUs */
    LOOM_LAYOUT_DISJOINT = 1,  /* its own GPUs, after every earlier set */
    LOOM_LAYOUT_COLOCATED = 2  /* time-shares the GPUs of colocated_with
                                     (-1: the top-level layout's) */
};

/* One module's parallel layout (Loom 0.4), resolved by the host: every
 * module has one; a module the parallel config does not list has the
 * top-level tp, cp, pp, dp and LOOM_LAYOUT_TOP. GPUs are numbered
 * 0 .. total-1: the top-level layout's tp*cp*pp*dp first, then each
 * disjoint module's tp*cp*pp*dp in model order. Size-prefixed: read one
 * with loom_problem_module_layout(), never by indexing past struct_size. */
typedef struct loom_module_layout {
    uint32_t struct_size;
    int32_t tp, cp, pp, dp;
    int32_t placement;      /* enum loom_module_placement */
    int32_t colocated_with; /* module index, or -1 (the top-level GPUs) */
    int32_t first_gpu;      /* first GPU of the set the module runs on */
    int32_t gpus;           /* GPUs in that set (tp*cp*pp*dp of its owner) */
    int32_t listed;         /* 1: the parallel config lists the module */
} loom_module_layout;

#define LOOM_MODULE_LAYOUT_SIZE_V1 ((uint32_t)LOOM_STRUCT_END(loom_module_layout, listed))

enum loom_problem_kind {
    LOOM_PROBLEM_MODEL = 0,       /* model + cluster + parallel + workload */
    LOOM_PROBLEM_STAGE_TIMES = 1  /* loom_stage_times */
};

typedef struct loom_problem {
    uint32_t struct_size;
    int32_t kind;                      /* enum loom_problem_kind */
    const loom_model *model;           /* NULL for stage-times problems */
    const loom_cluster *cluster;       /* NULL for stage-times problems */
    loom_parallel parallel;
    const loom_stage_times *stage_times; /* NULL for model problems */
    double memory_cap_bytes;           /* per-rank cap for activations +
                                          static memory; 0 = no cap */
    /* Appended in Loom 0.4: per-module layouts, NULL (and 0) when the
     * parallel config lists no module (a single-layout problem); else
     * model->n_modules entries, each module_layout_size bytes apart. */
    const loom_module_layout *module_layouts;
    int32_t n_module_layouts;
    uint32_t module_layout_size;       /* sizeof(loom_module_layout) of the host */
    int32_t total_gpus;                /* GPUs over every set; 0: tp*cp*pp*dp */
    int32_t reserved_layout;
    /* Appended in Loom 0.4: every iteration this run plans, in order (the
     * iteration a step is handed is one of them), so that a step can fix
     * one choice for the whole run, as a real job splits its layers once.
     * Owned by the host; NULL (and 0) when the host gives none. Read them
     * with loom_problem_iterations(). */
    const loom_iteration *iterations;
    int32_t n_iterations;
    /* In the slot that was reserved: sequences one microbatch packs (the
     * micro-batch size K of --micro-batch-size), so that the global batch
     * is micro_batch_size x parallel.microbatches x parallel.dp; 0 from
     * older hosts means 1 (loom_problem_micro_batch_size). */
    int32_t micro_batch_size;
} loom_problem;

/* Module m's layout, or NULL when the problem has none (a single-layout
 * problem, or a host older than Loom 0.4). */
static inline const loom_module_layout *loom_problem_module_layout(const loom_problem *pb,
                                                                    int32_t m)
{
    if (!pb || !LOOM_STRUCT_HAS(pb, loom_problem, reserved_layout) || !pb->module_layouts ||
        m < 0 || m >= pb->n_module_layouts ||
        pb->module_layout_size < LOOM_MODULE_LAYOUT_SIZE_V1)
        return NULL;
    return (const loom_module_layout *)(const void *)((const char *)pb->module_layouts +
                                                      (size_t)m * pb->module_layout_size);
}

/* The TP degree module m runs at: its layout's, else the problem's. */
static inline int32_t loom_problem_module_tp(const loom_problem *pb, int32_t m)
{
    const loom_module_layout *l = loom_problem_module_layout(pb, m);
    if (l && l->tp > 0)
        return l->tp;
    return pb && pb->parallel.tp > 0 ? pb->parallel.tp : 1;
}

/* The context-parallel degree module m runs at: its layout's, else the
 * problem's (1 when unset). */
static inline int32_t loom_problem_module_cp(const loom_problem *pb, int32_t m)
{
    const loom_module_layout *l = loom_problem_module_layout(pb, m);
    if (l && l->cp > 0)
        return l->cp;
    return loom_parallel_cp(pb ? &pb->parallel : NULL);
}

/* 1 when some module upstream of `module` (transitively) has trainable
 * weights, so `module` must compute input gradients even when frozen. */
static inline int loom_module_upstream_trainable(const loom_model *model, int32_t module)
{
    const loom_module *mod = &model->modules[module];
    for (int32_t k = 0; k < mod->n_inputs; k++) {
        int32_t j = mod->inputs[k];
        if (!model->modules[j].frozen || loom_module_upstream_trainable(model, j))
            return 1;
    }
    return 0;
}

/* loom_layer_trainable_upstream's rule (below) for a caller that already
 * knows whether anything upstream of the module trains (the result of
 * loom_module_upstream_trainable, hoisted out of a layer loop): 1 when it
 * does, or `module` trains and `layer` > 0. */
static inline int loom_layer_trainable_upstream_from(int upstream_trains,
                                                     const loom_module *module,
                                                     int32_t layer)
{
    return upstream_trains || (!module->frozen && layer > 0);
}

/* 1 when layer `layer` of `module` pays input gradients: something
 * upstream of the module trains, or the module trains and the layer is not
 * its first (loom_shape.trainable_upstream). */
static inline int loom_layer_trainable_upstream(const loom_model *model, int32_t module,
                                                int32_t layer)
{
    return loom_layer_trainable_upstream_from(loom_module_upstream_trainable(model, module),
                                              &model->modules[module], layer);
}

/* The iterations the run plans (loom_problem.iterations), with their
 * count in *n; NULL and 0 when the host gives none (a host older than
 * Loom 0.4, or one planning a lone iteration). */
static inline const loom_iteration *loom_problem_iterations(const loom_problem *pb, int32_t *n)
{
    if (!pb || !LOOM_STRUCT_HAS(pb, loom_problem, micro_batch_size) || !pb->iterations ||
        pb->n_iterations < 1) {
        *n = 0;
        return NULL;
    }
    *n = pb->n_iterations;
    return pb->iterations;
}

/* Sequences one microbatch of the problem packs: its micro_batch_size, 1
 * when unset (or from a host older than the field). */
static inline int32_t loom_problem_micro_batch_size(const loom_problem *pb)
{
    return pb && LOOM_STRUCT_HAS(pb, loom_problem, micro_batch_size) && pb->micro_batch_size > 1
               ? pb->micro_batch_size
               : 1;
}

#ifdef __cplusplus
}
#endif
#endif
