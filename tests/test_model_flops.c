/* test_model_flops.c - the one rule for a layer's model FLOPs
 * (<loom/model_flops.h>): closed forms for a GQA SwiGLU layer (two FLOPs a
 * weight a token), a GPT MLP layer (24 h^2 a token), the
 * attention core with and without a causal mask, cross-attention's two
 * extra projections, a layer with no heads given, the passes a layer runs
 * as it trains or is frozen, and the LM head. */
#include <loom/model_flops.h>
#include "testutil.h"

/* Llama 3.1 8B: h 4096, f 14336, 32 heads, 8 KV heads, SwiGLU, causal. */
static const loom_layer llama_8b = {4096, 14336, 32, 8, 1, 1, 0, 0};

START_TEST(gqa_swiglu_layer_is_two_flops_a_weight)
{
    /* weights: Q and O 4096^2 each, K and V 4096 x 1024 each, MLP 3 x
     * 4096 x 14336: 218,103,808; a token multiplies and adds each once */
    loom_layer_flop_rates r = loom_layer_flop_rates_of(&llama_8b);
    ck_assert_double_eq(r.gemm_per_token, 436207616.0);
    ck_assert_double_eq(r.gemm_per_token,
                        2.0 * (2.0 * 4096 * 4096 + 2.0 * 4096 * 1024 + 3.0 * 4096 * 14336));
    /* causal: half of QK^T and PV's 2 x 2 h s^2 */
    ck_assert_double_eq(r.attention_per_seq_sq, 2.0 * 4096);
    loom_layer full = llama_8b;
    full.causal = 0;
    ck_assert_double_eq(loom_layer_flop_rates_of(&full).attention_per_seq_sq, 4.0 * 4096);
}
END_TEST

START_TEST(gpt_layer_is_24_h_squared)
{
    /* GPT-3 2.7B's layer: h 2560, f 4h, MHA, GELU MLP: 24 h^2 a token
     * of the forward, without the logits */
    loom_layer gpt = {2560, 10240, 32, 32, 0, 1, 0, 0};
    ck_assert_double_eq(loom_layer_flop_rates_of(&gpt).gemm_per_token, 24.0 * 2560 * 2560);
    /* no heads given: K and V as wide as Q */
    gpt.heads = 0;
    gpt.kv_heads = 0;
    ck_assert_double_eq(loom_layer_flop_rates_of(&gpt).gemm_per_token, 24.0 * 2560 * 2560);
}
END_TEST

START_TEST(cross_attention_adds_two_projections)
{
    loom_layer dit = {1152, 4608, 16, 16, 0, 0, 0, 0};
    double self_only = loom_layer_flop_rates_of(&dit).gemm_per_token;
    dit.cross_attention = 1;
    loom_layer_flop_rates r = loom_layer_flop_rates_of(&dit);
    ck_assert_double_eq(r.gemm_per_token - self_only, 4.0 * 1152 * 1152);
    ck_assert_double_eq(r.attention_per_seq_sq, 4.0 * 1152);
}
END_TEST

START_TEST(passes_follow_what_trains)
{
    loom_layer_flop_rates f = loom_layer_flop_rates_of(&llama_8b);
    /* trains, something upstream trains: forward, input and weight
     * gradients, three times the forward */
    loom_layer_flop_rates r = loom_layer_flop_rates_passes(&llama_8b, 1, 1);
    ck_assert_double_eq(r.gemm_per_token, 3.0 * f.gemm_per_token);
    ck_assert_double_eq(r.attention_per_seq_sq, 3.0 * f.attention_per_seq_sq);
    /* frozen below something trainable: input gradients only, the GEMMs
     * twice, the attention core three times */
    r = loom_layer_flop_rates_passes(&llama_8b, 1, 0);
    ck_assert_double_eq(r.gemm_per_token, 2.0 * f.gemm_per_token);
    ck_assert_double_eq(r.attention_per_seq_sq, 3.0 * f.attention_per_seq_sq);
    /* a module's first trainable layer with nothing upstream: weight
     * gradients only */
    r = loom_layer_flop_rates_passes(&llama_8b, 0, 1);
    ck_assert_double_eq(r.gemm_per_token, 2.0 * f.gemm_per_token);
    ck_assert_double_eq(r.attention_per_seq_sq, f.attention_per_seq_sq);
    /* frozen with nothing upstream: forward only */
    r = loom_layer_flop_rates_passes(&llama_8b, 0, 0);
    ck_assert_double_eq(r.gemm_per_token, f.gemm_per_token);
    ck_assert_double_eq(r.attention_per_seq_sq, f.attention_per_seq_sq);
}
END_TEST

START_TEST(lm_head_is_two_h_v_a_pass)
{
    /* Llama 3 8B's head: 4096 x 128256, 1,050,673,152 FLOPs a token forward */
    ck_assert_double_eq(loom_lm_head_flops_per_token(4096, 128256, 0, 0), 1050673152.0);
    ck_assert_double_eq(loom_lm_head_flops_per_token(4096, 128256, 1, 0), 2.0 * 1050673152.0);
    ck_assert_double_eq(loom_lm_head_flops_per_token(4096, 128256, 1, 1), 3.0 * 1050673152.0);
    loom_module m = {0};
    m.kind = LOOM_MODULE_BACKBONE;
    m.vocab = 128256;
    ck_assert_int_eq(loom_module_has_lm_head(&m), 1);
    m.kind = LOOM_MODULE_DECODER;
    ck_assert_int_eq(loom_module_has_lm_head(&m), 1);
    m.kind = LOOM_MODULE_ENCODER;
    ck_assert_int_eq(loom_module_has_lm_head(&m), 0);
    m.kind = LOOM_MODULE_BACKBONE;
    m.vocab = 0;
    ck_assert_int_eq(loom_module_has_lm_head(&m), 0);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("model_flops");
    TCase *tc = tcase_create("rule");
    tcase_add_test(tc, gqa_swiglu_layer_is_two_flops_a_weight);
    tcase_add_test(tc, gpt_layer_is_24_h_squared);
    tcase_add_test(tc, cross_attention_adds_two_projections);
    tcase_add_test(tc, passes_follow_what_trains);
    tcase_add_test(tc, lm_head_is_two_h_v_a_pass);
    suite_add_tcase(su, tc);
    return loom_test_main(su);
}
