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
 * The passes a layer runs (loom_layer_flop_rates_passes): the forward;
 * input gradients, once more the GEMMs and twice the attention core,
 * when something upstream trains (loom_shape.trainable_upstream); weight
 * gradients, once more the GEMMs, when the layer trains. A module's LM
 * head adds 2 h V a token each pass it runs (loom_lm_head_flops_per_token).
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

/* The FLOP rates of `layer` summed over the passes it runs: its forward,
 * plus input gradients when pays_input_grad (the GEMMs once more, the
 * attention core twice: scores and values) and weight gradients when
 * pays_weight_grad (the GEMMs once more). A trainable layer with
 * something trainable upstream runs 3x its forward. */
static inline loom_layer_flop_rates loom_layer_flop_rates_passes(const loom_layer *layer,
                                                                 int pays_input_grad,
                                                                 int pays_weight_grad)
{
    loom_layer_flop_rates f = loom_layer_flop_rates_of(layer);
    loom_layer_flop_rates r = f;
    if (pays_input_grad) {
        r.gemm_per_token += f.gemm_per_token;
        r.attention_per_seq_sq += 2.0 * f.attention_per_seq_sq;
    }
    if (pays_weight_grad)
        r.gemm_per_token += f.gemm_per_token;
    return r;
}

/* 1 when `module` ends in an LM head: a backbone or decoder with a
 * vocabulary (its last layer carries the head; its first, the embedding). */
static inline int loom_module_has_lm_head(const loom_module *module)
{
    return module->vocab > 0 &&
           (module->kind == LOOM_MODULE_BACKBONE || module->kind == LOOM_MODULE_DECODER);
}

/* The LM head's FLOPs per token over its passes (h hidden, V the
 * vocabulary): 2 h V forward, as much again for the input gradient when
 * any backward runs, and again for the weight gradient when it trains. */
static inline double loom_lm_head_flops_per_token(double hidden, double vocab,
                                                  int pays_any_backward, int pays_weight_grad)
{
    double f = 2.0 * hidden * vocab;
    return f + (pays_any_backward ? f : 0.0) + (pays_weight_grad ? f : 0.0);
}

#ifdef __cplusplus
}
#endif

#endif
