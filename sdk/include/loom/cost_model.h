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
} loom_shape;

#define LOOM_SHAPE_SIZE_V1 ((uint32_t)LOOM_STRUCT_END(loom_shape, trainable_upstream))
#define LOOM_SHAPE_INIT { .struct_size = (uint32_t)sizeof(loom_shape) }
#define LOOM_SHAPE_HAS(s, member) LOOM_STRUCT_HAS(s, loom_shape, member)

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
} loom_layer_cost;

#define LOOM_LAYER_COST_SIZE_V1 ((uint32_t)LOOM_STRUCT_END(loom_layer_cost, flops))
#define LOOM_LAYER_COST_INIT { .struct_size = (uint32_t)sizeof(loom_layer_cost) }
#define LOOM_LAYER_COST_HAS(c, member) LOOM_STRUCT_HAS(c, loom_layer_cost, member)

static inline void loom_layer_cost_init(loom_layer_cost *c)
{
    *c = (loom_layer_cost)LOOM_LAYER_COST_INIT;
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
} loom_cost_model_vtable;

#ifdef __cplusplus
}
#endif
#endif
