/* roofline_memory.c - parameter counts, stored activations (Korthikanti et
 * al. 2022) and gradient / optimizer state sizes of a transformer layer. */
#include "roofline_model.h"

/* Parameters of one layer (see header). */
double loom_roofline_layer_params(const loom_layer *layer)
{
    double h = (double)layer->hidden;
    double f = (double)layer->ffn_hidden;
    double kv = layer->heads > 0
                    ? h * (double)layer->kv_heads / (double)layer->heads
                    : h;
    double p = h * (h + 2.0 * kv)                     /* QKV */
               + h * h                                /* attention output */
               + (layer->gated_ffn ? 3.0 : 2.0) * h * f /* MLP */
               + 4.0 * h;                             /* two norms */
    if (layer->cross_attention)
        p += 2.0 * h * h; /* cross-attention query and output */
    return p;
}

/* Stored activation bytes per GPU under a policy (see header). With s*b =
 * N tokens, t the TP degree and a the heads, per layer (Korthikanti et
 * al. 2022, section 4.2, Table 2):
 *   none:      N*h*(10 + 24/t) + 5*a*seq_sq_sum/t
 *   selective: N*h*(10 + 24/t)          (attention core recomputed)
 *   full:      2*N*h                    (the layer input only)
 * A cross-attention block adds N*h*(4 + 4/t) to none and selective (its
 * norm input and query-projection input, full; its query and context, /t).
 * With sequence parallelism (t > 1) the norm, dropout and GEMM inputs that
 * were full on every TP rank are split too: N*h*34/t, cross-attention
 * N*h*8/t, and full keeps 2*N*h/t.
 * With flash_attention the scores are never stored: none == selective.
 * These are bytes of 2-byte elements; LOOM_ROOFLINE_FP32 doubles them. */
double loom_roofline_activation_bytes(const loom_layer *layer,
                                      const loom_shape *shape, int policy,
                                      unsigned flags)
{
    double N = (double)shape->tokens;
    double h = (double)layer->hidden;
    double t = shape->tp > 1 ? (double)shape->tp : 1.0;
    int sp = (flags & LOOM_ROOFLINE_SEQ_PARALLEL) && t > 1.0;
    double wide = loom_roofline_element_bytes(flags) / 2.0;
    if (policy == LOOM_POLICY_FULL)
        return wide * (sp ? 2.0 * N * h / t : 2.0 * N * h);
    double bytes = sp ? N * h * 34.0 / t : N * h * (10.0 + 24.0 / t);
    if (layer->cross_attention)
        bytes += sp ? N * h * 8.0 / t : N * h * (4.0 + 4.0 / t);
    if (policy == LOOM_POLICY_NONE && !(flags & LOOM_ROOFLINE_FLASH))
        bytes += 5.0 * (double)layer->heads * shape->seq_sq_sum / t;
    return wide * bytes;
}

/* Gradient + optimizer bytes per GPU (see header). */
double loom_roofline_state_bytes(double params, int32_t tp, int32_t dp,
                                 int sharding, int frozen,
                                 double grad_bytes, double optimizer_bytes)
{
    if (frozen)
        return 0.0;
    double t = tp > 1 ? (double)tp : 1.0;
    double d = (sharding != LOOM_ROOFLINE_SHARD_NONE && dp > 1) ? (double)dp : 1.0;
    double w = params / t;
    int grads_sharded = sharding >= LOOM_ROOFLINE_SHARD_ALL && d > 1.0; /* fsdp over dp > 1 */
    double whole_grad =
        grads_sharded && sharding == LOOM_ROOFLINE_SHARD_ALL ? 0.0 : grad_bytes * w;
    double shard = optimizer_bytes + (grads_sharded ? grad_bytes : 0.0);
    return whole_grad + shard * w / d;
}
