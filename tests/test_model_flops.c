/* test_model_flops.c - the one rule for a layer's model FLOPs
 * (<loom/model_flops.h>): closed forms for a GQA SwiGLU layer (two FLOPs a
 * weight a token), a GPT MLP layer (24 h^2 a token), the
 * attention core with and without a causal mask, cross-attention's two
 * extra projections, and a layer with no heads given. */
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

int main(void)
{
    Suite *su = suite_create("model_flops");
    TCase *tc = tcase_create("rule");
    tcase_add_test(tc, gqa_swiglu_layer_is_two_flops_a_weight);
    tcase_add_test(tc, gpt_layer_is_24_h_squared);
    tcase_add_test(tc, cross_attention_adds_two_projections);
    suite_add_tcase(su, tc);
    return loom_test_main(su);
}
