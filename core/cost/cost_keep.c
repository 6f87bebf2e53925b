/* cost_keep.c - what a layer's weight-gradient (W) step keeps once its
 * input-gradient (I) step has run (zero-bubble schedules split B so). */
#include "cost_rules.h"

/* The inputs of the weight matmuls (QKV and FFN-in read the normed hidden
 * state, the output projection the attention output, FFN-out the FFN
 * activation; a cross-attention block adds its query and output
 * projections' inputs), `element` bytes each, split by TP, at most what
 * the policy stores. The output gradients W also reads are produced by I
 * and not counted. */
int64_t loom_cost_weight_kept_bytes(const loom_layer *ly, int64_t tokens, int32_t tp,
                                    double element, int64_t stored)
{
    double per_token = 3.0 * (double)ly->hidden + (double)ly->ffn_hidden +
                       (ly->cross_attention ? 2.0 * (double)ly->hidden : 0.0);
    double bytes = (double)tokens * per_token * element / (tp > 0 ? tp : 1);
    int64_t in = bytes > 4e18 ? (int64_t)4e18 : (int64_t)bytes;
    return in < stored ? in : stored;
}
