/*
 * loom/cost_model.h - the cost_model role: time and memory of one layer
 * for a shape, a TP degree and a memory policy.
 *
 * Ownership: `out` is caller-provided; the shape and problem are read-only.
 * Units: milliseconds, bytes, FLOPs.
 */
#ifndef LOOM_COST_MODEL_H
#define LOOM_COST_MODEL_H

#include <loom/plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_COST_MODEL_VERSION 1u

/* What one layer processes in one stage. */
typedef struct loom_shape {
    int64_t tokens;      /* tokens through the layer (all sequences) */
    double seq_sq_sum;   /* sum over sequences of length^2 (attention) */
    int64_t sequences;   /* number of sequences (items) */
    int32_t tp;          /* tensor-parallel degree */
    int32_t trainable_upstream; /* 1: some earlier layer needs gradients,
                                   so this layer pays input gradients */
} loom_shape;

typedef struct loom_layer_cost {
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
} loom_cost_model_vtable;

#ifdef __cplusplus
}
#endif
#endif
