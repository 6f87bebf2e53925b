/*
 * roofline_model.h - the operator-level (SEMU-style) cost model behind the
 * `roofline` plugin: operator counts of a transformer layer, their roofline
 * times, and the layer's parameter / activation sizes.
 *
 * Everything here is pure arithmetic on caller-provided structs; nothing
 * allocates. Counts are per GPU of a TP group of degree shape->tp, with
 * 2-byte (bf16) elements, or 4-byte ones under LOOM_ROOFLINE_FP32. Units:
 * FLOPs, bytes, milliseconds.
 */
#ifndef LOOM_ROOFLINE_MODEL_H
#define LOOM_ROOFLINE_MODEL_H

#include <loom/loom.h>

/* Which efficiency factor an operator's compute term uses. */
enum loom_roofline_unit {
    LOOM_ROOFLINE_GEMM = 0,       /* eff_gemm x gemm_efficiency_scale */
    LOOM_ROOFLINE_ATTENTION = 1,  /* eff_attention: the attention core */
    LOOM_ROOFLINE_MEMORY = 2,     /* element-wise: no FLOPs counted */
    LOOM_ROOFLINE_COLLECTIVE = 3  /* TP all-reduce: link bytes only */
};

/* One forward operator of a layer, per GPU. */
typedef struct loom_roofline_op {
    const char *name;  /* "qkv", "attn_core", "softmax", ... (static) */
    int unit;          /* enum loom_roofline_unit */
    double flops;      /* FLOPs on this GPU */
    double mem_bytes;  /* HBM bytes read + written on this GPU */
    double net_bytes;  /* bytes this GPU sends over its link */
    /* A GEMM's operands on this GPU, in elements (0 for other units):
     * its input x, its output y and its weight w. Under fp8 they size the
     * casts to float8 (loom_roofline_fp8_cast_ms). */
    double in_elems, out_elems, weight_elems;
    int high_precision; /* a GEMM kept in bf16 under fp8 (the LM head) */
    /* An element-wise operator whose input-gradient pass moves other than
     * 1.5x its forward bytes (the eager kernels of LOOM_ROOFLINE_EAGER):
     * grad_explicit 1 and the pass's HBM bytes in grad_mem_bytes. */
    int grad_explicit;
    double grad_mem_bytes;
} loom_roofline_op;

/* Options of the operator and activation counts, as bit flags. */
#define LOOM_ROOFLINE_FLASH 1u        /* fused attention core */
#define LOOM_ROOFLINE_SEQ_PARALLEL 2u /* Megatron sequence parallelism */
#define LOOM_ROOFLINE_FP32 4u         /* 4-byte elements: fp32 / TF32 training */
/* One kernel per PyTorch operator, as Hugging Face transformers' eager GPT-2
 * and BERT layers run (with their default dropouts, 0.1): the unfused
 * attention's scores are scaled, masked (the causal mask for a causal layer,
 * then the padding mask), soft-maxed and dropped out by separate kernels, and
 * the attention output and the MLP output each pass a dropout kernel. */
#define LOOM_ROOFLINE_EAGER 8u
/* With LOOM_ROOFLINE_EAGER: the MLP activation is GPT-2's tanh GELU written
 * as eight element-wise operators (transformers' NewGELUActivation). */
#define LOOM_ROOFLINE_GELU_TANH 16u

/* Bytes of one activation or weight element under `flags`. */
static inline double loom_roofline_element_bytes(unsigned flags)
{
    return (flags & LOOM_ROOFLINE_FP32) ? 4.0 : 2.0;
}

/* Upper bound on the forward operators of one layer. */
#define LOOM_ROOFLINE_MAX_OPS 32

/* Hardware rates an operator is timed against (per GPU, per second). */
typedef struct loom_roofline_hw {
    double peak_flops;        /* FLOP/s */
    double hbm_bytes_per_s;
    double link_bytes_per_s;  /* NVLink when tp <= gpus_per_node, else net */
    double eff_gemm;          /* already multiplied by the calibration scale */
    double eff_attention;
    double eff_memory;
    double eff_collective;
    double launch_ms;         /* fixed overhead per kernel (launch, tail) */
    double gemm_half_flops;   /* size curve of eff_gemm (0: flat) */
    double attention_half_flops; /* size curve of eff_attention (0: flat) */
    double tp_overlap_share;  /* the share of a TP collective its neighbouring GEMM
                                 can hide that is hidden: 0 none, 1 all */
    int32_t cp;               /* context-parallel degree (<= 1: none) */
    double cp_link_bytes_per_s; /* the CP group's link (ring attention) */
    double p2p_latency_ms;    /* latency of one ring step */
    double attention_backward; /* attention core backward / forward FLOPs (0: 2) */
    /* The bf16 peak, FLOP/s, where the run's matmuls run at another
     * precision: the attention core and the GEMMs kept in bf16 run at it
     * under fp8 (0: peak_flops). */
    double high_peak_flops;
    int fp8_casts; /* 1: fp8 GEMMs pay the casts of their operands */
} loom_roofline_hw;

/* Fills ops[] (capacity LOOM_ROOFLINE_MAX_OPS) with the forward operators
 * of `layer` for `shape`, in execution order, and returns their count.
 * LOOM_ROOFLINE_FLASH in `flags` fuses the softmax into the attention core
 * (scores never reach HBM); without it LOOM_ROOFLINE_EAGER adds the eager
 * score, dropout and activation kernels (a cross-attention block keeps the
 * fused counts). Collectives appear only when shape->tp > 1:
 * an all-reduce after each row-parallel GEMM, or, with
 * LOOM_ROOFLINE_SEQ_PARALLEL, an all-gather before each column-parallel
 * GEMM and a reduce-scatter after each row-parallel one, the norms and
 * residuals then running on tokens / tp. A shape with no tokens has no
 * operators. */
int loom_roofline_forward_ops(const loom_layer *layer, const loom_shape *shape,
                              unsigned flags, loom_roofline_op *ops);

/* Roofline time of one operator in ms: the max of its compute, HBM and
 * link terms, each against the rate times its efficiency, plus the fixed
 * per-kernel overhead (launch_ms) when the operator does any work. */
double loom_roofline_op_ms(const loom_roofline_op *op,
                           const loom_roofline_hw *hw);

/* Compute efficiency of an operator: eff_gemm (GEMMs) or eff_attention
 * (the attention core) times F / (F + half), F the operator's FLOPs on
 * one GPU and half the cluster's gemm_half_flops / attention_half_flops
 * (the size at which it reaches half its peak efficiency; 0: no curve). */
double loom_roofline_eff(const loom_roofline_op *op, const loom_roofline_hw *hw);

/* Model FLOPs of one layer's forward pass over all TP ranks, split into
 * GEMMs and the attention core. */
void loom_roofline_forward_flops(const loom_layer *layer,
                                 const loom_shape *shape, double *gemm_flops,
                                 double *attention_flops);

/* Parameters of one layer: QKV, attention output, MLP, optional
 * cross-attention query/output, and two norms (4*hidden). */
double loom_roofline_layer_params(const loom_layer *layer);

/* Activation bytes one GPU stores from forward to backward under `policy`
 * (enum loom_mem_policy), after Korthikanti et al. 2022; `flags` as for
 * loom_roofline_forward_ops. */
double loom_roofline_activation_bytes(const loom_layer *layer,
                                      const loom_shape *shape, int policy,
                                      unsigned flags);

/* What a GPU's gradient and optimizer bytes shard over dp:
 * loom_roofline_state_bytes' `sharding`. */
enum {
    LOOM_ROOFLINE_SHARD_NONE,        /* every GPU keeps everything */
    LOOM_ROOFLINE_SHARD_OPTIMIZER,   /* the distributed optimizer (ZeRO-1) */
    LOOM_ROOFLINE_SHARD_ALL,         /* fsdp: FSDP2, ZeRO-3 */
    LOOM_ROOFLINE_SHARD_ALL_WHOLE_GRADS /* fsdp under pipeline parallelism, which
                                           syncs gradients once a step */
};

/* Gradient + optimizer bytes per GPU for `params` parameters: grad_bytes
 * of gradient (4 with fp32 accumulation, 2 without) and optimizer_bytes
 * of states (12: fp32 master + Adam m, v beside bf16 weights; 8: m and v
 * when the weights are fp32 themselves), all / tp, the optimizer part
 * further / dp under LOOM_ROOFLINE_SHARD_OPTIMIZER, the gradients too
 * under LOOM_ROOFLINE_SHARD_ALL; LOOM_ROOFLINE_SHARD_ALL_WHOLE_GRADS keeps
 * whole gradients beside the sharded copy. 0 when `frozen`. */
double loom_roofline_state_bytes(double params, int32_t tp, int32_t dp,
                                 int sharding, int frozen,
                                 double grad_bytes, double optimizer_bytes);

/* Everything estimate() reports, before rounding to the output struct. */
typedef struct loom_roofline_costs {
    double forward_ms, input_grad_ms, weight_grad_ms, recompute_ms;
    double activation_bytes, transient_bytes, flops;
    double recompute_flops; /* all TP ranks, under the policy */
    /* the exposed TP collectives inside forward_ms / input_grad_ms */
    double forward_comm_ms, input_grad_comm_ms;
} loom_roofline_costs;

/* Times, model FLOPs and activation / transient bytes of one layer.
 * pays_input_grad / pays_weight_grad are the frozen-aware switches
 * (Cornstarch): a part not paid costs 0 ms and 0 FLOPs, and a layer that
 * pays no backward at all stores no activations and recomputes nothing. */
void loom_roofline_layer_costs(const loom_layer *layer,
                               const loom_shape *shape,
                               const loom_roofline_hw *hw, int policy,
                               unsigned flags, int pays_input_grad,
                               int pays_weight_grad, loom_roofline_costs *out);

/* Time in ms of casting one fp8 GEMM's operands to float8 with dynamic
 * tensorwise scaling (torchao.float8's recipe, as torchtitan and its
 * roofline model run it under torch.compile), each cast a memory-bound
 * kernel against HBM at eff_memory plus launch_ms: in the forward
 * (backward 0) the input's cast (read bf16, write the row- and the
 * column-major fp8 copy: 4 bytes an element; its max_abs fuses into the
 * op that produced it), the weight's max_abs (2 bytes an element) and
 * its forward cast (3 bytes); in the input gradient (backward 1) the
 * incoming gradient's cast (4 bytes, max_abs fused) and the weight's
 * backward cast (3 bytes). The weight gradient reuses those copies. 0
 * for other operators and when hw->fp8_casts is 0. */
double loom_roofline_fp8_cast_ms(const loom_roofline_op *op, const loom_roofline_hw *hw,
                                 int backward);

/* Adds a vocabulary's work to *c: with `embedding` the vocab-parallel
 * lookup of N rows (a memory-bound gather, then the TP all-reduce or
 * reduce-scatter) in the forward and its scatter-add in the weight
 * gradient; with `head` the LM head GEMM (N x hidden x vocab/tp, column
 * parallel, after the sequence-parallel all-gather) and the cross-entropy
 * over the logits (memory-bound, 3 bf16 elements' worth per logit), whose
 * backward repeats the loss pass and the GEMM's dgrad (and wgrad when
 * trainable), with 2 N hidden vocab FLOPs per GEMM pass; the fp32 logits
 * and their gradients are transient. */
void loom_roofline_vocab_costs(double hidden, double vocab, const loom_shape *shape,
                               const loom_roofline_hw *hw, unsigned flags, int embedding,
                               int head, int pays_input_grad, int pays_weight_grad,
                               loom_roofline_costs *c);

#endif
