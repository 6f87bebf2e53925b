/* roofline_ops.c - operator counts of a transformer layer and their
 * roofline times (PipeWeaver section 4.1, SEMU's analytical model). */
#include "roofline_model.h"

#include <loom/model_flops.h>
#include <string.h>

/* bf16 / fp16 element size in bytes: the counts below; 4-byte elements
 * (LOOM_ROOFLINE_FP32) scale their bytes by rf_wide(). */
#define RF_ELEM_BYTES 2.0

/* Scales the bytes of ops[0..n) for 4-byte elements under `flags`. */
static void rf_wide(loom_roofline_op *ops, int n, unsigned flags)
{
    double k = loom_roofline_element_bytes(flags) / RF_ELEM_BYTES;
    for (int i = 0; k != 1.0 && i < n; i++) {
        ops[i].mem_bytes *= k;
        ops[i].net_bytes *= k;
    }
}

/* Appends one operator to ops[*n]. */
static void rf_push(loom_roofline_op *ops, int *n, const char *name, int unit,
                    double flops, double mem_bytes, double net_bytes)
{
    if (*n >= LOOM_ROOFLINE_MAX_OPS)
        return;
    ops[*n].name = name;
    ops[*n].unit = unit;
    ops[*n].flops = flops;
    ops[*n].mem_bytes = mem_bytes;
    ops[*n].net_bytes = net_bytes;
    ops[*n].in_elems = ops[*n].out_elems = ops[*n].weight_elems = 0.0;
    ops[*n].high_precision = 0;
    ops[*n].grad_explicit = 0;
    ops[*n].grad_mem_bytes = 0.0;
    (*n)++;
}

/* Appends a GEMM [tokens x in] * [in x out] whose weight (in x out) is
 * split over tp ranks along `out` (column parallel) or `in` (row
 * parallel); the unsplit side's activation is full on every rank. */
static void rf_gemm(loom_roofline_op *ops, int *n, const char *name,
                    double tokens, double in, double out, double tp,
                    int row_parallel)
{
    double flops = 2.0 * tokens * in * out / tp;
    double weights = in * out / tp;
    double x = row_parallel ? tokens * in / tp : tokens * in;
    double y = row_parallel ? tokens * out : tokens * out / tp;
    int before = *n;
    rf_push(ops, n, name, LOOM_ROOFLINE_GEMM, flops,
            RF_ELEM_BYTES * (weights + x + y), 0.0);
    if (*n > before) {
        ops[*n - 1].in_elems = x;
        ops[*n - 1].out_elems = y;
        ops[*n - 1].weight_elems = weights;
    }
}

/* Appends a ring collective over tp ranks whose full buffer has `elems`
 * elements, in `passes` passes: each GPU sends passes * (tp - 1) / tp of
 * the buffer (1 for an all-gather or reduce-scatter, 2 for an all-reduce).
 * Nothing when tp == 1. */
static void rf_ring(loom_roofline_op *ops, int *n, const char *name,
                    double elems, double tp, double passes)
{
    if (tp <= 1.0)
        return;
    rf_push(ops, n, name, LOOM_ROOFLINE_COLLECTIVE, 0.0, 0.0,
            passes * (tp - 1.0) / tp * RF_ELEM_BYTES * elems);
}

/* Appends the collective that follows a row-parallel GEMM (an all-reduce,
 * or a reduce-scatter with sequence parallelism). */
static void rf_reduce(loom_roofline_op *ops, int *n, const char *allreduce,
                      const char *scatter, double elems, double tp, int sp)
{
    if (sp)
        rf_ring(ops, n, scatter, elems, tp, 1.0);
    else
        rf_ring(ops, n, allreduce, elems, tp, 2.0);
}

/* Appends an element-wise operator moving `elems_moved` elements. */
static void rf_memop(loom_roofline_op *ops, int *n, const char *name,
                     double elems_moved)
{
    rf_push(ops, n, name, LOOM_ROOFLINE_MEMORY, 0.0,
            RF_ELEM_BYTES * elems_moved, 0.0);
}

/* Appends an eager element-wise operator moving `elems_moved` elements
 * forward and `grad_elems` in its input-gradient pass (autograd's kernels
 * for it; 0 when the gradient passes through untouched). */
static void rf_eager_op(loom_roofline_op *ops, int *n, const char *name,
                        double elems_moved, double grad_elems)
{
    int before = *n;
    rf_memop(ops, n, name, elems_moved);
    if (*n > before) {
        ops[*n - 1].grad_explicit = 1;
        ops[*n - 1].grad_mem_bytes = RF_ELEM_BYTES * grad_elems;
    }
}

/* Appends an eager dropout over `elems` elements: it reads its input and
 * writes its output and a one-byte mask; the backward reads the gradient
 * and the mask and writes the gradient. The mask's bytes, which do not
 * grow with the element size, are added by rf_add_masks after rf_wide. */
static void rf_dropout(loom_roofline_op *ops, int *n, const char *name,
                       double elems, double *mask_elems)
{
    int before = *n;
    rf_eager_op(ops, n, name, 2.0 * elems, 2.0 * elems);
    if (*n > before)
        mask_elems[before] = elems;
}

/* Adds each dropout's one-byte mask to its forward and backward bytes. */
static void rf_add_masks(loom_roofline_op *ops, int n, const double *mask_elems)
{
    for (int i = 0; i < n; i++) {
        ops[i].mem_bytes += mask_elems[i];
        ops[i].grad_mem_bytes += mask_elems[i];
    }
}

/* Appends the eager kernels that follow the score GEMM: the scale by
 * 1/sqrt(d), the causal mask (torch.where, causal layers only), the
 * padding mask (an add), the softmax and the dropout, each over the
 * `scores` elements on this GPU. Backward: the scale and the causal mask
 * read and write the gradient, the padding mask passes it through, the
 * softmax reads its output beside it (the 1.5x rule), the dropout as
 * rf_dropout. */
static void rf_eager_scores(loom_roofline_op *ops, int *n, double scores, int causal,
                            double *mask_elems)
{
    rf_eager_op(ops, n, "scores_scale", 2.0 * scores, 2.0 * scores);
    if (causal)
        rf_eager_op(ops, n, "scores_causal_mask", 2.0 * scores, 2.0 * scores);
    rf_eager_op(ops, n, "scores_padding_mask", 2.0 * scores, 0.0);
    rf_memop(ops, n, "softmax", 2.0 * scores);
    rf_dropout(ops, n, "probs_dropout", scores, mask_elems);
}

/* Appends the MLP activation over `elems` elements on this GPU. Fused
 * (and BERT's erf GELU): one kernel reading its m inputs and writing one
 * output. GPT-2's tanh GELU under LOOM_ROOFLINE_EAGER is
 * 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), eight kernels:
 * pow, mul, add, mul, tanh, add, mul, mul, 18 passes over the elements;
 * its backward, autograd's kernels for them (the two products' grads 6,
 * tanh_backward 3, two constant scales 4, pow_backward 7, the half 2, the
 * two adds that sum x's three gradients 6), 28. */
static void rf_activation(loom_roofline_op *ops, int *n, double elems, double m,
                          unsigned flags)
{
    if ((flags & LOOM_ROOFLINE_EAGER) && (flags & LOOM_ROOFLINE_GELU_TANH))
        rf_eager_op(ops, n, "activation", 18.0 * elems, 28.0 * elems);
    else
        rf_memop(ops, n, "activation", (m + 1.0) * elems);
}

/* Fills ops[] with the forward operators of one layer (see header). */
int loom_roofline_forward_ops(const loom_layer *layer, const loom_shape *shape,
                              unsigned flags, loom_roofline_op *ops)
{
    double N = (double)shape->tokens;
    double h = (double)layer->hidden;
    double f = (double)layer->ffn_hidden;
    double a = (double)layer->heads;
    double kv = layer->heads > 0 ? h * layer->kv_heads / a : h;
    double S = shape->seq_sq_sum;
    double t = shape->tp > 1 ? (double)shape->tp : 1.0;
    double causal = layer->causal ? 0.5 : 1.0;
    double fc1_mult = layer->gated_ffn ? 2.0 : 1.0;
    int flash = (flags & LOOM_ROOFLINE_FLASH) != 0;
    int eager = (flags & LOOM_ROOFLINE_EAGER) != 0;
    int sp = (flags & LOOM_ROOFLINE_SEQ_PARALLEL) && t > 1.0;
    double Nl = sp ? N / t : N; /* tokens of the norms and residuals */
    double mask_elems[LOOM_ROOFLINE_MAX_OPS] = {0}; /* dropout masks, per op */
    int n = 0;
    if (shape->tokens <= 0)
        return 0; /* no kernel runs for an empty shape */

    /* Self-attention block. */
    rf_memop(ops, &n, "norm1", 2.0 * Nl * h);
    if (sp)
        rf_ring(ops, &n, "allgather_attn", N * h, t, 1.0);
    rf_gemm(ops, &n, "qkv", N, h, h + 2.0 * kv, t, 0);
    {
        /* Q, K, V read and O written; unfused kernels also write the
         * scores and read the probabilities back (a * S elements each),
         * and compute every score: a causal mask applies after the GEMM,
         * so only a fused kernel skips the masked half. */
        double qkvo = (2.0 * N * h + 2.0 * N * kv) / t;
        double scores = flash ? 0.0 : 2.0 * a * S / t;
        rf_push(ops, &n, "attn_core", LOOM_ROOFLINE_ATTENTION,
                4.0 * h * S * (flash ? causal : 1.0) / t,
                RF_ELEM_BYTES * (qkvo + scores), 0.0);
    }
    if (!flash && eager)
        rf_eager_scores(ops, &n, a * S / t, layer->causal != 0, mask_elems);
    else if (!flash)
        rf_memop(ops, &n, "softmax", 2.0 * a * S / t);
    rf_gemm(ops, &n, "attn_out", N, h, h, t, 1);
    rf_reduce(ops, &n, "allreduce_attn", "reducescatter_attn", N * h, t, sp);
    if (eager)
        rf_dropout(ops, &n, "attn_out_dropout", Nl * h, mask_elems);
    rf_memop(ops, &n, "residual1", 3.0 * Nl * h);

    /* Cross-attention block: query and output projections only; the
     * conditioning context is short, so its K/V cost is ignored. */
    if (layer->cross_attention) {
        rf_memop(ops, &n, "norm_cross", 2.0 * Nl * h);
        if (sp)
            rf_ring(ops, &n, "allgather_cross", N * h, t, 1.0);
        rf_gemm(ops, &n, "cross_q", N, h, h, t, 0);
        rf_gemm(ops, &n, "cross_out", N, h, h, t, 1);
        rf_reduce(ops, &n, "allreduce_cross", "reducescatter_cross", N * h, t,
                  sp);
        rf_memop(ops, &n, "residual_cross", 3.0 * Nl * h);
    }

    /* MLP block: fc1 (gate and up fused when gated), activation, fc2. */
    rf_memop(ops, &n, "norm2", 2.0 * Nl * h);
    if (sp)
        rf_ring(ops, &n, "allgather_mlp", N * h, t, 1.0);
    rf_gemm(ops, &n, "fc1", N, h, fc1_mult * f, t, 0);
    rf_activation(ops, &n, N * f / t, fc1_mult, flags);
    rf_gemm(ops, &n, "fc2", N, f, h, t, 1);
    rf_reduce(ops, &n, "allreduce_mlp", "reducescatter_mlp", N * h, t, sp);
    if (eager)
        rf_dropout(ops, &n, "mlp_dropout", Nl * h, mask_elems);
    rf_memop(ops, &n, "residual2", 3.0 * Nl * h);
    rf_wide(ops, n, flags);
    rf_add_masks(ops, n, mask_elems);
    return n;
}

/* Returns rate * eff in units per ms, or 0 when either is not positive. */
static double rf_rate_per_ms(double rate, double eff)
{
    return (rate > 0 && eff > 0) ? rate * eff / 1e3 : 0.0;
}

/* Time of `amount` at `rate_per_ms`; an amount with no rate costs 0. */
static double rf_term_ms(double amount, double rate_per_ms)
{
    return (amount > 0 && rate_per_ms > 0) ? amount / rate_per_ms : 0.0;
}

/* Compute efficiency of one operator: the cluster's factor for its unit,
 * scaled by the saturating size curve F / (F + half) (see header). */
double loom_roofline_eff(const loom_roofline_op *op, const loom_roofline_hw *hw)
{
    int attn = op->unit == LOOM_ROOFLINE_ATTENTION;
    double eff = attn ? hw->eff_attention : hw->eff_gemm;
    double half = attn ? hw->attention_half_flops : hw->gemm_half_flops;
    if (half > 0 && op->flops > 0)
        eff *= op->flops / (op->flops + half);
    return eff;
}

/* Roofline time of one operator: max of compute, HBM and link terms. */
double loom_roofline_op_ms(const loom_roofline_op *op,
                           const loom_roofline_hw *hw)
{
    double eff = loom_roofline_eff(op, hw);
    int high = op->unit == LOOM_ROOFLINE_ATTENTION || op->high_precision;
    double peak = high && hw->high_peak_flops > 0 ? hw->high_peak_flops : hw->peak_flops;
    double compute = rf_term_ms(op->flops, rf_rate_per_ms(peak, eff));
    double memory = rf_term_ms(op->mem_bytes,
                               rf_rate_per_ms(hw->hbm_bytes_per_s,
                                              hw->eff_memory));
    double network = rf_term_ms(op->net_bytes,
                                rf_rate_per_ms(hw->link_bytes_per_s,
                                               hw->eff_collective));
    double ms = compute;
    if (memory > ms)
        ms = memory;
    if (network > ms)
        ms = network;
    return ms > 0 ? ms + hw->launch_ms : 0.0;
}

/* Time of one memory-bound kernel moving `bytes` (0 bytes: no kernel). */
static double rf_cast_kernel_ms(double bytes, const loom_roofline_hw *hw)
{
    loom_roofline_op k = {"fp8_cast", LOOM_ROOFLINE_MEMORY, 0.0, bytes, 0.0, 0, 0, 0, 0, 0, 0.0};
    return loom_roofline_op_ms(&k, hw);
}

double loom_roofline_fp8_cast_ms(const loom_roofline_op *op, const loom_roofline_hw *hw,
                                 int backward)
{
    if (!hw->fp8_casts || op->unit != LOOM_ROOFLINE_GEMM || op->high_precision)
        return 0.0;
    if (backward)
        return rf_cast_kernel_ms(4.0 * op->out_elems, hw) +
               rf_cast_kernel_ms(3.0 * op->weight_elems, hw);
    return rf_cast_kernel_ms(4.0 * op->in_elems, hw) +
           rf_cast_kernel_ms(2.0 * op->weight_elems, hw) +
           rf_cast_kernel_ms(3.0 * op->weight_elems, hw);
}

/* Forward model FLOPs over all TP ranks, by <loom/model_flops.h>'s rule. */
void loom_roofline_forward_flops(const loom_layer *layer,
                                 const loom_shape *shape, double *gemm_flops,
                                 double *attention_flops)
{
    loom_layer_flop_rates r = loom_layer_flop_rates_of(layer);
    *gemm_flops = r.gemm_per_token * (double)shape->tokens;
    *attention_flops = r.attention_per_seq_sq * shape->seq_sq_sum;
}

/* Time of one operator's backward input-gradient part: GEMM dgrad equals
 * the forward GEMM, the attention core costs hw->attention_backward times
 * its forward FLOPs (2 for dQ, dK and dV; 2.5 when a fused kernel also
 * rebuilds the scores) and twice its bytes, an element-wise op moves 1.5x
 * its forward bytes (the saved input is read next to the incoming
 * gradient) unless it states its own (grad_explicit), an all-reduce is
 * repeated as is. */
static double rf_input_grad_ms(const loom_roofline_op *op,
                               const loom_roofline_hw *hw)
{
    loom_roofline_op b = *op;
    if (op->grad_explicit) {
        b.mem_bytes = op->grad_mem_bytes;
    } else if (op->unit == LOOM_ROOFLINE_ATTENTION) {
        b.flops *= hw->attention_backward > 0 ? hw->attention_backward : 2.0;
        b.mem_bytes *= 2.0;
    } else if (op->unit == LOOM_ROOFLINE_MEMORY) {
        b.mem_bytes *= 1.5;
    }
    return loom_roofline_op_ms(&b, hw);
}

/* Forward time of ring attention's K/V hops on one GPU of a CP group of
 * hw->cp: cp - 1 hops of its tokens' K and V (2 x tokens x kv/tp
 * elements of loom_roofline_element_bytes(flags)) over the CP link at
 * eff_collective, plus a latency each. */
static double rf_ring_attention_ms(const loom_layer *layer, const loom_shape *shape,
                                   const loom_roofline_hw *hw, unsigned flags)
{
    double t = shape->tp > 1 ? (double)shape->tp : 1.0;
    double kv = layer->heads > 0 ? (double)layer->hidden * layer->kv_heads / layer->heads
                                 : (double)layer->hidden;
    double hops = (double)(hw->cp - 1);
    double bytes = hops * 2.0 * (double)shape->tokens * kv / t *
                   loom_roofline_element_bytes(flags);
    double rate = hw->cp_link_bytes_per_s * hw->eff_collective;
    return hops * hw->p2p_latency_ms + (rate > 0 ? bytes / rate * 1e3 : 0.0);
}

/* 1 for the element-wise operators on the attention scores (the softmax,
 * and the eager scale, masks and dropout), which selective recomputation
 * reruns with the attention core. */
static int rf_on_scores(const char *name)
{
    return !strcmp(name, "softmax") || !strncmp(name, "scores_", 7) ||
           !strcmp(name, "probs_dropout");
}

/* Fills *out with the times, FLOPs and memory of one layer (see header). */
void loom_roofline_layer_costs(const loom_layer *layer,
                               const loom_shape *shape,
                               const loom_roofline_hw *hw, int policy,
                               unsigned flags, int pays_input_grad,
                               int pays_weight_grad, loom_roofline_costs *out)
{
    loom_roofline_op ops[LOOM_ROOFLINE_MAX_OPS];
    int n = loom_roofline_forward_ops(layer, shape, flags, ops);
    double fwd = 0, ig = 0, wg = 0, attn_fwd = 0, biggest = 0, fcomm = 0, icomm = 0;
    for (int i = 0; i < n; i++) {
        double ms = loom_roofline_op_ms(&ops[i], hw);
        double back = rf_input_grad_ms(&ops[i], hw);
        double cast_fwd = loom_roofline_fp8_cast_ms(&ops[i], hw, 0);
        double cast_back = loom_roofline_fp8_cast_ms(&ops[i], hw, 1);
        if (ops[i].unit == LOOM_ROOFLINE_ATTENTION && hw->cp > 1) {
            /* ring attention overlaps each K/V hop with a block's compute:
             * the slower of the two; the backward moves K, V and dK, dV */
            double ring = rf_ring_attention_ms(layer, shape, hw, flags);
            ms = ms > ring ? ms : ring;
            back = back > 2.0 * ring ? back : 2.0 * ring;
        }
        if (hw->tp_overlap_share > 0 && ops[i].unit == LOOM_ROOFLINE_COLLECTIVE) {
            /* split into chunks overlapped with the neighbouring GEMM: of
             * what that GEMM can hide, the share the runtime achieves is
             * off the critical path (all of it at share 1) */
            double gemm = 0, share = hw->tp_overlap_share;
            for (int j = i - 1; j <= i + 1; j += 2)
                if (j >= 0 && j < n && ops[j].unit == LOOM_ROOFLINE_GEMM) {
                    double g = loom_roofline_op_ms(&ops[j], hw);
                    gemm = g > gemm ? g : gemm;
                }
            ms -= share * (ms < gemm ? ms : gemm);
            back -= share * (back < gemm ? back : gemm);
        }
        fwd += ms + cast_fwd;
        ig += back + cast_back;
        if (ops[i].unit == LOOM_ROOFLINE_COLLECTIVE) {
            fcomm += ms;
            icomm += back;
        }
        if (ops[i].unit == LOOM_ROOFLINE_GEMM)
            wg += ms;
        if (ops[i].unit == LOOM_ROOFLINE_ATTENTION || rf_on_scores(ops[i].name))
            attn_fwd += ms;
        if (ops[i].mem_bytes > biggest)
            biggest = ops[i].mem_bytes;
    }

    double gemm_flops, attention_flops;
    loom_roofline_forward_flops(layer, shape, &gemm_flops, &attention_flops);
    int any_backward = pays_input_grad || pays_weight_grad;

    memset(out, 0, sizeof *out);
    out->forward_ms = fwd;
    out->input_grad_ms = pays_input_grad ? ig : 0.0;
    out->weight_grad_ms = pays_weight_grad ? wg : 0.0;
    out->forward_comm_ms = fcomm;
    out->input_grad_comm_ms = pays_input_grad ? icomm : 0.0;
    loom_layer_flop_rates passes =
        loom_layer_flop_rates_passes(layer, pays_input_grad, pays_weight_grad);
    out->flops = passes.gemm_per_token * (double)shape->tokens +
                 passes.attention_per_seq_sq * shape->seq_sq_sum;

    out->transient_bytes = biggest;
    if (!any_backward)
        return; /* nothing stored for a backward that never runs */

    double stored_all = loom_roofline_activation_bytes(
        layer, shape, LOOM_POLICY_NONE, flags);
    out->activation_bytes = loom_roofline_activation_bytes(
        layer, shape, policy, flags);
    if (policy == LOOM_POLICY_SELECTIVE) {
        out->recompute_ms = attn_fwd;
        out->recompute_flops = attention_flops;
    } else if (policy == LOOM_POLICY_FULL) {
        out->recompute_ms = fwd;
        out->recompute_flops = gemm_flops + attention_flops;
    }
    /* Recomputation rebuilds what was not stored, live during backward. */
    double rebuilt = stored_all - out->activation_bytes;
    if (rebuilt > out->transient_bytes)
        out->transient_bytes = rebuilt;
}

/* Adds the embedding (first layer) or the LM head and loss (last layer)
 * of a module with a vocabulary to *c (see header). */
void loom_roofline_vocab_costs(double hidden, double vocab, const loom_shape *shape,
                               const loom_roofline_hw *hw, unsigned flags, int embedding,
                               int head, int pays_input_grad, int pays_weight_grad,
                               loom_roofline_costs *c)
{
    double N = (double)shape->tokens;
    double t = shape->tp > 1 ? (double)shape->tp : 1.0;
    int sp = (flags & LOOM_ROOFLINE_SEQ_PARALLEL) && t > 1.0;
    int any = pays_input_grad || pays_weight_grad;
    if (N <= 0 || vocab <= 0 || hidden <= 0)
        return;
    loom_roofline_op ops[4];
    int n = 0;
    if (embedding) {
        /* vocab-parallel lookup: rows read and written, then summed over TP */
        rf_memop(ops, &n, "embedding", 2.0 * N * hidden);
        rf_reduce(ops, &n, "allreduce_embedding", "reducescatter_embedding", N * hidden, t, sp);
        rf_wide(ops, n, flags);
        for (int i = 0; i < n; i++) {
            double ms = loom_roofline_op_ms(&ops[i], hw);
            c->forward_ms += ms;
            if (pays_weight_grad) /* scatter-add of the rows' gradients */
                c->weight_grad_ms += ms;
        }
    }
    if (head) {
        n = 0;
        if (sp)
            rf_ring(ops, &n, "allgather_head", N * hidden, t, 1.0);
        rf_gemm(ops, &n, "lm_head", N, hidden, vocab, t, 0);
        ops[n - 1].high_precision = 1; /* torchtitan's float8 skips "output" */
        /* vocab-parallel cross-entropy over the N x vocab/tp logits: read
         * in bf16, softmax kept in fp32 (3 bf16 elements' worth each) */
        rf_memop(ops, &n, "loss", 3.0 * N * vocab / t);
        rf_wide(ops, n, flags);
        for (int i = 0; i < n; i++) {
            double ms = loom_roofline_op_ms(&ops[i], hw);
            c->forward_ms += ms;
            if (ops[i].unit == LOOM_ROOFLINE_GEMM) {
                if (any)
                    c->input_grad_ms += ms;
                if (pays_weight_grad)
                    c->weight_grad_ms += ms;
            } else if (any) {
                c->input_grad_ms += ms;
            }
        }
        c->flops += N * loom_lm_head_flops_per_token(hidden, vocab, any, pays_weight_grad);
        if (any && 2.0 * N * vocab / t * 4.0 > c->transient_bytes)
            c->transient_bytes = 2.0 * N * vocab / t * 4.0; /* fp32 logits + grads */
    }
}
