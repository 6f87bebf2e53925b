/*
 * loom/cost_model.h - the cost_model role: time and memory of one layer
 * for a shape, a TP degree and a memory policy.
 *
 * Ownership: `out` is caller-provided; the shape and problem are read-only.
 * Units: milliseconds, bytes, FLOPs.
 */
#ifndef LOOM_COST_MODEL_H
#define LOOM_COST_MODEL_H

#include <string.h>
#include <loom/plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_COST_MODEL_VERSION 1u

/* What one layer processes in one stage. Size-prefixed: whoever allocates
 * a shape sets struct_size (LOOM_SHAPE_INIT / loom_shape_init()); the
 * "loom.cost" service rejects a shape or an output shape below
 * LOOM_SHAPE_SIZE_V1 with LOOM_EABI. */
typedef struct loom_shape {
    uint32_t struct_size; /* sizeof(loom_shape) of its allocator */
    int64_t tokens;      /* tokens through the layer (all sequences) */
    double seq_sq_sum;   /* sum over sequences of length^2 (attention) */
    int64_t sequences;   /* number of sequences (items) */
    int32_t tp;          /* tensor-parallel degree */
    int32_t trainable_upstream; /* 1: some earlier layer needs gradients,
                                   so this layer pays input gradients */
    /* Appended in Loom 0.4: context parallelism. tokens and seq_sq_sum
     * stay the whole microbatch's; a cost model splits them over cp GPUs
     * (0 or 1: none). cp_attention_scale is the slowest CP GPU's attention
     * work over the mean (1: balanced; 0 read as 1). */
    int32_t cp;
    double cp_attention_scale;
    /* Appended in Loom 0.4: per-module layouts. The data-parallel
     * replicas of the layer's module, over which (times cp) its optimizer
     * states shard; 0: the problem's parallel.dp and cp. */
    int32_t dp;
    int32_t reserved;
} loom_shape;

#define LOOM_SHAPE_SIZE_V1 ((uint32_t)LOOM_STRUCT_END(loom_shape, trainable_upstream))
#define LOOM_SHAPE_INIT { .struct_size = (uint32_t)sizeof(loom_shape) }
#define LOOM_SHAPE_HAS(s, member) LOOM_STRUCT_HAS(s, loom_shape, member)

/* The GPUs a layer's optimizer states shard over: the shape's dp x cp
 * when it carries a module dp, else the problem's dp x cp. */
static inline int32_t loom_shape_state_shards(const loom_shape *s, const loom_problem *pb)
{
    if (s && LOOM_SHAPE_HAS(s, dp) && s->dp > 0)
        return s->dp * (s->cp > 1 ? s->cp : 1);
    return (pb && pb->parallel.dp > 0 ? pb->parallel.dp : 1) *
           loom_parallel_cp(pb ? &pb->parallel : NULL);
}

static inline void loom_shape_init(loom_shape *s)
{
    *s = (loom_shape)LOOM_SHAPE_INIT;
}

/* Cost of one layer. Size-prefixed: the caller allocates it and sets
 * struct_size (LOOM_LAYER_COST_INIT / loom_layer_cost_init()); whoever
 * fills it writes only the members struct_size covers (a cost model clears
 * it with loom_layer_cost_clear(), not memset). The "loom.cost" service
 * rejects one below LOOM_LAYER_COST_SIZE_V1 with LOOM_EABI. */
typedef struct loom_layer_cost {
    uint32_t struct_size;      /* sizeof(loom_layer_cost) of the caller */
    double forward_ms;
    double input_grad_ms;      /* 0 when nothing upstream is trainable */
    double weight_grad_ms;     /* 0 when the layer is frozen */
    double recompute_ms;       /* extra backward time under the policy */
    int64_t activation_bytes;  /* stored from F until backward, per GPU */
    int64_t transient_bytes;   /* peak scratch during the stage, per GPU */
    int64_t param_bytes;       /* this layer's weights, per GPU (TP-split) */
    int64_t state_bytes;       /* grads + optimizer states, per GPU */
    double flops;              /* model FLOPs fwd+bwd (no recompute), all TP */
    /* Appended in Loom 0.4: the FLOPs recomputation adds under the policy
     * (all TP ranks); model FLOPs plus these are the hardware FLOPs. */
    double recompute_flops;
    /* Appended: the parts of forward_ms and of input_grad_ms that are
     * exposed TP collectives (the compute stream idles, another stage's
     * compute can run: loom_schedule.fill_hosts). 0: none or unknown. */
    double forward_comm_ms;
    double input_grad_comm_ms;
    /* Appended: bytes of one element of the activations the layer hands
     * on and keeps for its weight gradient (2: bf16 or fp16, 4: fp32 or
     * TF32 training); the host sizes pipeline transfers with it. 0: 2. */
    double element_bytes;
    /* Appended: the GPUs this layer's weights are sharded over between
     * uses (FSDP2, ZeRO-3: the data-parallel replicas times cp). A GPU
     * keeps param_bytes / param_shards of them; the gathered whole is
     * transient_bytes. param_bytes stays the whole TP-split weight, the
     * parameter count. 0 or 1: not sharded. */
    int32_t param_shards;
} loom_layer_cost;

#define LOOM_LAYER_COST_SIZE_V1 ((uint32_t)LOOM_STRUCT_END(loom_layer_cost, flops))
#define LOOM_LAYER_COST_INIT { .struct_size = (uint32_t)sizeof(loom_layer_cost) }
#define LOOM_LAYER_COST_HAS(c, member) LOOM_STRUCT_HAS(c, loom_layer_cost, member)

static inline void loom_layer_cost_init(loom_layer_cost *c)
{
    *c = (loom_layer_cost)LOOM_LAYER_COST_INIT;
}

/* Bytes of one activation or weight element of the layer *c describes:
 * its element_bytes when the cost model set it, else 2 (bf16). The one
 * rule for sizing transfers and for counting parameters from param_bytes. */
static inline double loom_layer_cost_element_bytes(const loom_layer_cost *c)
{
    return LOOM_LAYER_COST_HAS(c, element_bytes) && c->element_bytes > 0 ? c->element_bytes
                                                                          : 2.0;
}

/* The GPUs *c's weights are sharded over: param_shards when the cost
 * model set it above 1, else 1. */
static inline int32_t loom_layer_cost_param_shards(const loom_layer_cost *c)
{
    return LOOM_LAYER_COST_HAS(c, param_shards) && c->param_shards > 1 ? c->param_shards : 1;
}

/* Bytes one GPU keeps for the layer *c describes for the whole step: its
 * share of the weights (param_bytes / param_shards) and state_bytes. The
 * one rule for a layer's static memory. */
static inline int64_t loom_layer_cost_static_bytes(const loom_layer_cost *c)
{
    return c->param_bytes / loom_layer_cost_param_shards(c) + c->state_bytes;
}

/* Zeroes every member of a caller's *c that its struct_size covers and
 * keeps struct_size: how an estimate() starts filling its output. */
static inline void loom_layer_cost_clear(loom_layer_cost *c)
{
    uint32_t size = c->struct_size;
    loom_layer_cost zero = LOOM_LAYER_COST_INIT;
    size_t n = size < sizeof zero ? size : sizeof zero;
    if (n > sizeof zero.struct_size)
        memcpy((char *)c + sizeof zero.struct_size,
               (const char *)&zero + sizeof zero.struct_size,
               n - sizeof zero.struct_size);
}

/* One point-to-point transfer between two pipeline ranks, each a TP group
 * laid out on consecutive GPUs. Size-prefixed: the host fills it; a cost
 * model reads only the members struct_size covers. */
typedef struct loom_p2p_link {
    uint32_t struct_size;  /* sizeof(loom_p2p_link) of the host */
    int32_t src_rank;      /* the rank that sends */
    int32_t dst_rank;      /* the rank that receives (!= src_rank) */
    int32_t same_node;     /* 1: the two ranks' first GPUs share a node */
    int64_t src_gpu;       /* first GPU of the sending rank's TP group */
    int64_t dst_gpu;       /* first GPU of the receiving rank's TP group */
} loom_p2p_link;

#define LOOM_P2P_LINK_SIZE_V1 ((uint32_t)LOOM_STRUCT_END(loom_p2p_link, dst_gpu))

/* The default transfer time in ms of `bytes` over `link` on cluster c:
 * the cluster's p2p_latency_ms plus bytes over the link's bandwidth
 * (nvlink_bytes_per_s within a node, net_bytes_per_s across nodes) scaled
 * by eff_collective (1 when unset); 0 without a cluster or within a rank.
 * What the host uses for a cost model without p2p_ms. */
static inline double loom_p2p_link_ms(const loom_cluster *c, const loom_p2p_link *link,
                                      double bytes)
{
    if (!c || link->src_rank == link->dst_rank)
        return 0;
    double bw = link->same_node ? c->nvlink_bytes_per_s : c->net_bytes_per_s;
    double eff = c->eff_collective > 0 ? c->eff_collective : 1;
    return c->p2p_latency_ms + (bw > 0 ? bytes / (bw * eff) * 1e3 : 0);
}

/* Host memory bandwidth per GPU of cluster c in bytes/s: what activation
 * offload copies at; 0 without a cluster or without host_bytes_per_s. */
static inline double loom_cluster_host_bytes_per_s(const loom_cluster *c)
{
    return c && c->host_bytes_per_s > 0 ? c->host_bytes_per_s : 0;
}

/* The offload option of one layer (LOOM_POLICY_OFFLOAD; docs/memory-and-
 * ilp.md, "Offload"), derived from its `none` and `full` options on
 * cluster c. What `none` stores beyond what `full` keeps (the layer
 * input, which stays on the GPU) is copied to host memory after the
 * forward and back before the backward at the cluster's host bandwidth,
 * each copy on its own copy engine overlapped with the layer's compute
 * (device to host with its forward, host to device with its backward),
 * so only the excess is exposed:
 *   copy_ms        = (none.bytes - full.bytes) / host_bytes_per_s * 1e3
 *   forward_ms     = none.forward_ms  + max(0, copy_ms - none.forward_ms)
 *   backward_ms    = none.backward_ms + max(0, copy_ms - none.backward_ms)
 *   weight_grad_ms = none.weight_grad_ms (the exposed prefetch precedes I)
 *   activation_bytes = full.bytes.
 * Without host bandwidth, or when `full` keeps no less than `none`, the
 * option is `none`'s: nothing moves and nothing is saved, so no tuner
 * gains by choosing it. */
static inline loom_policy_option loom_offload_option(const loom_cluster *c,
                                                     const loom_policy_option *none,
                                                     const loom_policy_option *full)
{
    loom_policy_option o = *none;
    double bw = loom_cluster_host_bytes_per_s(c);
    if (!(bw > 0) || full->activation_bytes >= none->activation_bytes)
        return o;
    double copy_ms = (double)(none->activation_bytes - full->activation_bytes) / bw * 1e3;
    if (copy_ms > none->forward_ms)
        o.forward_ms += copy_ms - none->forward_ms;
    if (copy_ms > none->backward_ms)
        o.backward_ms += copy_ms - none->backward_ms;
    o.activation_bytes = full->activation_bytes;
    return o;
}

/* What one pipeline rank holds, for the iteration's tail: the gradient
 * sync over data-parallel replicas and the optimizer step. Size-prefixed:
 * the host fills it; a cost model reads only what struct_size covers. */
typedef struct loom_rank_state {
    uint32_t struct_size;     /* sizeof(loom_rank_state) of the host */
    int32_t rank;             /* pipeline rank */
    int32_t tp;               /* TP degree of the rank's group */
    int32_t dp;               /* data-parallel replicas of the rank */
    int32_t chunks;           /* virtual stages (model chunks) on the rank */
    int32_t dp_same_node;     /* 1: a DP group (stride tp) fits in one node */
    double params;            /* parameters held by one GPU of the rank */
    double trainable_params;  /* of those, the ones with gradients */
} loom_rank_state;

#define LOOM_RANK_STATE_SIZE_V1 ((uint32_t)LOOM_STRUCT_END(loom_rank_state, trainable_params))

/* The tail of one rank's iteration, per GPU, in ms. Size-prefixed: the
 * host allocates it; a cost model writes only what struct_size covers. */
typedef struct loom_rank_tail {
    uint32_t struct_size;     /* sizeof(loom_rank_tail) of the host */
    int32_t overlap_grad_reduce; /* 1: buckets reduce during the last backward */
    double grad_sync_ms;      /* reduce-scatter (or all-reduce) of all grads */
    double grad_bucket_ms;    /* one bucket's share: what overlap cannot hide */
    double param_gather_ms;   /* distributed optimizer's all-gather, exposed */
    double optimizer_ms;      /* the optimizer step (memory-bound) */
    /* Appended: the Megatron-LM settings the cost model's times assume,
     * LOOM_ASSUMED_* bits (<loom/graph.h>); 0: it does not say. The host
     * sets 0; loom_rank_tail_compute() fills the tail's, a cost model adds
     * LOOM_ASSUMED_SEQUENCE_PARALLEL when its estimates assume it. Written
     * only when struct_size covers it. */
    uint32_t assumed;
    uint32_t reserved_assumed;
    /* Appended: with --overlap-param-gather, the all-gather that runs
     * from the next step's start, chunk by chunk, before each chunk's
     * first forward (param_gather_ms is then 0); 0 otherwise. The host
     * sets 0; written only when struct_size covers it. */
    double param_prefetch_ms;
} loom_rank_tail;

#define LOOM_RANK_TAIL_SIZE_V1 ((uint32_t)LOOM_STRUCT_END(loom_rank_tail, optimizer_ms))

/* Megatron-LM's defaults for the tail (docs/cost-models.md, "Iteration
 * tail"): distributed optimizer, gradients accumulated and reduced in
 * fp32, reduce overlapped with the backward in buckets of
 * max(40e6, 1e6 * dp) parameters, parameter all-gather not overlapped. */
#define LOOM_TAIL_GRAD_BYTES 4.0        /* fp32 gradient per parameter */
#define LOOM_TAIL_PARAM_BYTES 2.0       /* bf16 weight per parameter */
#define LOOM_TAIL_OPTIMIZER_BYTES 34.0  /* HBM bytes per parameter of one Adam step */

/* Tail knobs a cost model may set (what loom_rank_tail_compute reads). */
typedef struct loom_tail_knobs {
    int distributed_optimizer;  /* shard states, reduce-scatter + all-gather */
    int overlap_grad_reduce;    /* bucketed reduce overlapped with backward */
    int overlap_param_gather;   /* all-gather before each chunk's next forward */
    double grad_bytes;          /* bytes per gradient element (4: fp32) */
    double bucket_params;       /* parameters per bucket; <= 0: Megatron's */
    /* Appended: bytes per weight the all-gather moves and HBM bytes per
     * parameter of one optimizer step; <= 0: LOOM_TAIL_PARAM_BYTES and
     * LOOM_TAIL_OPTIMIZER_BYTES (bf16 weights over fp32 masters). */
    double param_bytes;
    double optimizer_bytes;
    /* Appended: weights and gradients sharded over dp x cp as well (FSDP2,
     * ZeRO-3; implies distributed_optimizer): gathered layer by layer
     * around each use and reduce-scattered layer by layer during every
     * backward, so the tail keeps only the last gradient bucket's
     * reduce-scatter and no parameter all-gather. */
    int shard_params;
} loom_tail_knobs;

/* HBM bytes per parameter of one Adam step on fp32 weights, which are
 * their own master copy: weight, gradient, m and v read, weight, m and v
 * written, 4 bytes each. */
#define LOOM_TAIL_OPTIMIZER_BYTES_FP32 32.0

/* Sets k's all-gather and Adam-step bytes for weights of `element_bytes`:
 * 4 (fp32, TF32) moves 4 bytes a weight and steps
 * LOOM_TAIL_OPTIMIZER_BYTES_FP32; anything else is bf16 over fp32 masters
 * (2 and LOOM_TAIL_OPTIMIZER_BYTES). */
static inline void loom_tail_knobs_set_element(loom_tail_knobs *k, int64_t element_bytes)
{
    int fp32 = element_bytes == 4;
    k->param_bytes = fp32 ? 4.0 : LOOM_TAIL_PARAM_BYTES;
    k->optimizer_bytes = fp32 ? LOOM_TAIL_OPTIMIZER_BYTES_FP32 : LOOM_TAIL_OPTIMIZER_BYTES;
}

/* Ring collective time in ms over `n` members sending `bytes_per_member`
 * (already scaled by (n-1)/n or 2(n-1)/n) on cluster c, on NVLink when
 * same_node else the network, at eff_collective, plus (n-1) latencies. */
static inline double loom_ring_ms(const loom_cluster *c, int same_node, int32_t n,
                                  double bytes_per_member, double steps)
{
    if (!c || n <= 1)
        return 0;
    double bw = same_node ? c->nvlink_bytes_per_s : c->net_bytes_per_s;
    double eff = c->eff_collective > 0 ? c->eff_collective : 1;
    return steps * (double)(n - 1) * c->p2p_latency_ms +
           (bw > 0 ? bytes_per_member / (bw * eff) * 1e3 : 0);
}

/* 1 when a data-parallel group of `members` GPUs `tp` apart (Megatron-LM's
 * tp-dp-pp rank order) stays inside one node of cluster c: tp x members
 * GPUs fit its gpus_per_node (1 when unknown). */
static inline int loom_dp_group_same_node(const loom_cluster *c, int32_t tp, int32_t members)
{
    int32_t gpn = c && c->gpus_per_node > 0 ? c->gpus_per_node : 1;
    return (int64_t)(tp > 0 ? tp : 1) * (members > 0 ? members : 1) <= gpn;
}

/* Records in out->assumed (when struct_size covers it) the tail settings
 * of `k` as LOOM_ASSUMED_* bits, LOOM_ASSUMED_KNOWN included. */
static inline void loom_rank_tail_assume(const loom_tail_knobs *k, loom_rank_tail *out)
{
    if (!LOOM_STRUCT_HAS(out, loom_rank_tail, assumed))
        return;
    out->assumed = LOOM_ASSUMED_KNOWN |
                   (k->distributed_optimizer ? LOOM_ASSUMED_DISTRIBUTED_OPTIMIZER : 0u) |
                   (k->overlap_grad_reduce ? LOOM_ASSUMED_OVERLAP_GRAD_REDUCE : 0u) |
                   (k->overlap_param_gather ? LOOM_ASSUMED_OVERLAP_PARAM_GATHER : 0u) |
                   (k->grad_bytes > 0.0 && k->grad_bytes < 4.0 ? LOOM_ASSUMED_GRAD_REDUCE_BF16
                                                                : 0u) |
                   (k->shard_params ? LOOM_ASSUMED_SHARDED_PARAMS | LOOM_ASSUMED_DISTRIBUTED_OPTIMIZER
                                    : 0u);
}

/* Fills *out (struct_size kept) with one rank's tail on cluster c under
 * `k`: gradient reduce-scatter ((dp-1)/dp of the grads) and parameter
 * all-gather ((dp-1)/dp of the weights, k->param_bytes each; as
 * param_prefetch_ms with k->overlap_param_gather) with the distributed
 * optimizer, an all-reduce (2(dp-1)/dp) without; an Adam step
 * moving k->optimizer_bytes (LOOM_TAIL_OPTIMIZER_BYTES) per parameter this GPU updates (1/dp of them
 * with the distributed optimizer) at eff_optimizer (eff_memory when 0). Frozen parameters are
 * neither reduced nor stepped. With k->shard_params: the reduce-scatter of
 * the last bucket only, after the rank's last stage, no all-gather, and
 * the step over 1/dp. What the host uses for a cost model without
 * rank_tail_ms, with Megatron-LM's defaults. */
static inline void loom_rank_tail_compute(const loom_cluster *c, const loom_rank_state *st,
                                          const loom_tail_knobs *k, loom_rank_tail *out)
{
    out->overlap_grad_reduce = k->overlap_grad_reduce != 0;
    out->grad_sync_ms = out->grad_bucket_ms = out->param_gather_ms = out->optimizer_ms = 0;
    int prefetch = LOOM_STRUCT_HAS(out, loom_rank_tail, param_prefetch_ms);
    if (prefetch)
        out->param_prefetch_ms = 0;
    double n = st->trainable_params;
    if (!c || !(n > 0))
        return;
    int32_t dp = st->dp > 1 ? st->dp : 1;
    double frac = (double)(dp - 1) / dp;
    double grads = n * k->grad_bytes;
    double bucket = k->bucket_params > 0 ? k->bucket_params
                    : (1e6 * dp > 4e7 ? 1e6 * dp : 4e7);
    double eff = c->eff_optimizer > 0 ? c->eff_optimizer : c->eff_memory;
    double bw = c->hbm_bytes_per_s * (eff > 0 ? eff : 1);
    double step = k->optimizer_bytes > 0 ? k->optimizer_bytes : LOOM_TAIL_OPTIMIZER_BYTES;
    if (k->shard_params) {
        /* every backward reduce-scatters its layers' gradients as it goes
         * (priced per layer by the cost model); after the rank's last
         * backward only the last bucket's is left. The next step gathers
         * weights layer by layer, so no all-gather follows the step. */
        double last = bucket < n ? bucket : n;
        out->overlap_grad_reduce = 0;
        out->grad_sync_ms = loom_ring_ms(c, st->dp_same_node, dp, frac * last * k->grad_bytes, 1);
        out->grad_bucket_ms = out->grad_sync_ms;
        out->optimizer_ms = bw > 0 ? n / dp * step / bw * 1e3 : 0;
        loom_rank_tail_assume(k, out);
        return;
    }
    if (k->distributed_optimizer) {
        out->grad_sync_ms = loom_ring_ms(c, st->dp_same_node, dp, frac * grads, 1);
        double weight = k->param_bytes > 0 ? k->param_bytes : LOOM_TAIL_PARAM_BYTES;
        double gather = loom_ring_ms(c, st->dp_same_node, dp, frac * n * weight, 1);
        if (!k->overlap_param_gather)
            out->param_gather_ms = gather;
        else if (prefetch)
            out->param_prefetch_ms = gather;
    } else {
        out->grad_sync_ms = loom_ring_ms(c, st->dp_same_node, dp, 2 * frac * grads, 2);
    }
    double share = bucket < n ? bucket / n : 1;
    out->grad_bucket_ms = out->grad_sync_ms * share;
    double stepped = k->distributed_optimizer ? n / dp : n;
    out->optimizer_ms = bw > 0 ? stepped * step / bw * 1e3 : 0;
    loom_rank_tail_assume(k, out);
}

typedef struct loom_cost_model_vtable {
    loom_role_header header; /* { sizeof(this), LOOM_COST_MODEL_VERSION } */

    /* Required. Creates one instance for one pipeline step; *self is owned
     * by the plugin until destroy(). */
    int (*create)(const loom_host_api *host, loom_ctx *ctx, void *plugin_state,
                  void **self, loom_error *err);
    /* Required. Releases an instance from create(). */
    void (*destroy)(void *self);
    /* Required. Cost of layer `layer` of module `module` under `policy`
     * (enum loom_mem_policy). Fills *out. */
    int (*estimate)(void *self, const loom_problem *problem, int32_t module,
                    int32_t layer, const loom_shape *shape, int32_t policy,
                    loom_layer_cost *out, loom_error *err);
    /* Optional. Embedding / head bytes of a module per GPU (params+states),
     * charged to the rank that holds its first / last layer. */
    int (*module_extra)(void *self, const loom_problem *problem,
                        int32_t module, int32_t tp, int64_t *param_bytes,
                        int64_t *state_bytes, loom_error *err);
    /* Optional, appended in Loom 0.3 (a plugin built before it, whose
     * struct_size does not reach it, has none). Time in ms of one
     * activation or gradient transfer of `bytes` over `link`, the cost of
     * a cross-rank edge of the stage graph; *ms must be finite and >= 0.
     * NULL: the host uses loom_p2p_link_ms() on the problem's cluster. */
    int (*p2p_ms)(void *self, const loom_problem *problem,
                  const loom_p2p_link *link, double bytes, double *ms,
                  loom_error *err);
    /* Optional, appended in Loom 0.4. The tail of one rank's iteration:
     * data-parallel gradient sync, parameter all-gather and optimizer
     * step, into *out (whose struct_size the host set); every time must
     * be finite and >= 0. NULL: the host uses loom_rank_tail_compute()
     * with Megatron-LM's defaults. */
    int (*rank_tail_ms)(void *self, const loom_problem *problem,
                        const loom_rank_state *state, loom_rank_tail *out,
                        loom_error *err);
    /* Appended (a vtable without it reads as LOOM_COST_READS_LAYER_INDEX):
     * what estimate() reads of the layer it prices. See
     * LOOM_COST_READS_LAYER_FIELDS. */
    uint32_t layer_reads;
} loom_cost_model_vtable;

/* Values of loom_cost_model_vtable.layer_reads. */
/* estimate() may depend on anything, the layer's index included (a table
 * of measured layers): the host asks for every layer. */
#define LOOM_COST_READS_LAYER_INDEX 0u
/* estimate() reads the layer only through the members of
 * module->layers[layer] and whether it is the module's first or last
 * layer: two layers of one module with equal members, neither the first
 * nor the last, cost the same for one shape and policy. The graph builder
 * then copies the costs of the last such layer it asked for to a later
 * one priced with an equal shape instead of asking again. */
#define LOOM_COST_READS_LAYER_FIELDS 1u

#ifdef __cplusplus
}
#endif
#endif
