/*
 * loom/model_flops.h - the model FLOPs of one transformer layer's forward
 * pass: the one rule the core (which replica of a global batch is the
 * heaviest) and the cost models (a layer's `flops`, and from it MFU) use.
 * Header-only, so plugins call it without linking the core.
 *
 * Over all TP ranks, for N tokens in sequences whose squared lengths sum
 * to S2 (h hidden, f the MLP's width, kv = h x kv_heads / heads):
 *   GEMMs:     2 N h (h + 2 kv)  QKV projection
 *            + 2 N h h           output projection
 *            + 4 N h f           MLP (6 N h f when gated: SwiGLU's 3 matrices)
 *            + 4 N h h           cross-attention's Q and output projections
 *                                (its K and V read the encoder's states);
 *   attention: 4 h S2            scores and their product with V, halved
 *                                when causal.
 * A backward pass costs twice the forward (input and weight gradients).
 *
 * Ownership: nothing is allocated; the layer is read-only.
 */
#ifndef LOOM_MODEL_FLOPS_H
#define LOOM_MODEL_FLOPS_H

#include <loom/problem.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A layer's forward FLOPs per token (GEMMs) and per squared sequence
 * length (attention core). */
typedef struct loom_layer_flop_rates {
    double gemm_per_token;
    double attention_per_seq_sq;
} loom_layer_flop_rates;

/* The forward FLOP rates of `layer`, over all TP ranks. */
static inline loom_layer_flop_rates loom_layer_flop_rates_of(const loom_layer *layer)
{
    double h = (double)layer->hidden;
    double f = (double)layer->ffn_hidden;
    double kv = layer->heads > 0 ? h * layer->kv_heads / layer->heads : h;
    loom_layer_flop_rates r;
    r.gemm_per_token = 2.0 * h * (h + 2.0 * kv) + 2.0 * h * h +
                       (layer->gated_ffn ? 6.0 : 4.0) * h * f +
                       (layer->cross_attention ? 4.0 * h * h : 0.0);
    r.attention_per_seq_sq = 4.0 * h * (layer->causal ? 0.5 : 1.0);
    return r;
}

#ifdef __cplusplus
}
#endif

#endif
