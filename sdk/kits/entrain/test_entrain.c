/* test_entrain.c - the Entrain work kit (<loom/kits/entrain.h>) on its
 * own: upstream trainability through the module DAG, finding the cost
 * service, and per-sample encoder / backbone work from a hand-written
 * cost service (exact values, identical layers costed once, samples
 * without encoder tokens, errors passed on). */
#include <stddef.h>
#include <string.h>
#include <loom/kits/entrain.h>
#include <loom/mock_host.h>
#include "testutil.h"

/* vision encoder (frozen, 2 identical layers) -> llm (trainable, layers 0
 * and 1 identical, layer 2 wider). */
static const loom_layer vit[2] = {{64, 256, 4, 4, 0, 0, 0, 0},
                                  {64, 256, 4, 4, 0, 0, 0, 0}};
static const loom_layer gpt[3] = {{128, 512, 8, 8, 1, 1, 0, 0},
                                  {128, 512, 8, 8, 1, 1, 0, 0},
                                  {256, 512, 8, 8, 1, 1, 0, 0}};
static const int32_t from_vision[1] = {0};
static const loom_module two_modules[2] = {
    {"vision", LOOM_MODULE_ENCODER, 0, 2, vit, 10, 0, 1, 0, NULL, 0},
    {"llm", LOOM_MODULE_BACKBONE, 0, 3, gpt, 1, 0, 0, 1, from_vision, 0},
};
static const loom_model two = {"vlm", 2, two_modules};

static int layer_calls;
static int fail_module = -1;

/* module_shape: the vision module sees 10 tokens per image, the llm the
 * text tokens plus the image tokens of the one sample it is given. */
static int fake_shape(loom_ctx *ctx, int32_t module, const loom_iteration *it,
                      int32_t microbatches, int32_t microbatch, int32_t subs,
                      loom_shape *out, loom_error *err)
{
    (void)ctx;
    ck_assert_int_eq(it->n_samples, 1);
    ck_assert_int_eq(it->samples[0].microbatch, 0);
    ck_assert_int_eq(microbatches, 1);
    ck_assert_int_eq(microbatch, 0);
    ck_assert_int_eq(subs, 1);
    if (module == fail_module) {
        err->code = LOOM_EINVAL;
        strcpy(err->message, "no shape");
        return LOOM_EINVAL;
    }
    int64_t img = 10 * (int64_t)it->samples[0].images;
    out->tokens = module == 0 ? img : it->samples[0].text_tokens + img;
    out->sequences = 1;
    out->tp = 1;
    return LOOM_OK;
}

/* layer: forward tokens / 4 * (layer + 1) ms, input gradients equal to
 * the forward when something upstream trains, weight gradients half the
 * forward except in the frozen vision module. */
static int fake_layer(loom_ctx *ctx, int32_t module, int32_t layer,
                      const loom_shape *shape, int32_t policy,
                      loom_layer_cost *out, loom_error *err)
{
    (void)ctx;
    (void)err;
    ck_assert_int_eq(policy, LOOM_POLICY_NONE);
    layer_calls++;
    out->forward_ms = (double)shape->tokens * 0.25 * (layer + 1);
    out->input_grad_ms = shape->trainable_upstream ? out->forward_ms : 0;
    out->weight_grad_ms = module == 0 ? 0 : out->forward_ms / 2;
    return LOOM_OK;
}

static const loom_cost_service fake_cost = {
    sizeof(loom_cost_service), 1, fake_layer, fake_shape, NULL, NULL, NULL};

START_TEST(upstream_trainable_through_the_dag)
{
    /* 0 frozen -> 1 trainable -> 2 frozen -> 3 frozen; 4 frozen alone */
    static const int32_t in0[1] = {0}, in1[1] = {1}, in2[1] = {2};
    const loom_module mods[5] = {
        {"a", LOOM_MODULE_ENCODER, 0, 0, NULL, 1, 0, 1, 0, NULL, 0},
        {"b", LOOM_MODULE_ENCODER, 0, 0, NULL, 1, 0, 0, 1, in0, 0},
        {"c", LOOM_MODULE_BACKBONE, 0, 0, NULL, 1, 0, 1, 1, in1, 0},
        {"d", LOOM_MODULE_DECODER, 0, 0, NULL, 1, 0, 1, 1, in2, 0},
        {"e", LOOM_MODULE_ENCODER, 0, 0, NULL, 1, 0, 1, 0, NULL, 0},
    };
    const loom_model m = {"dag", 5, mods};
    ck_assert_int_eq(loom_module_upstream_trainable(&m, 0), 0);
    ck_assert_int_eq(loom_module_upstream_trainable(&m, 1), 0);
    ck_assert_int_eq(loom_module_upstream_trainable(&m, 2), 1);
    ck_assert_int_eq(loom_module_upstream_trainable(&m, 3), 1);
    ck_assert_int_eq(loom_module_upstream_trainable(&m, 4), 0);
    ck_assert_int_eq(loom_module_upstream_trainable(&two, 1), 0);
}
END_TEST

START_TEST(finds_a_usable_cost_service)
{
    loom_mock_host *h = loom_mock_host_new();
    ck_assert_ptr_null(loom_ew_cost_service(loom_mock_host_api(h), loom_mock_host_ctx(h)));
    loom_mock_host_free(h);

    /* a table too old to have module_shape */
    loom_cost_service old = fake_cost;
    old.struct_size = (uint32_t)offsetof(loom_cost_service, module_shape);
    h = loom_mock_host_new();
    loom_mock_host_add_service(h, LOOM_SERVICE_COST, 1, &old);
    ck_assert_ptr_null(loom_ew_cost_service(loom_mock_host_api(h), loom_mock_host_ctx(h)));
    loom_mock_host_free(h);

    loom_cost_service no_layer = fake_cost;
    no_layer.layer = NULL;
    h = loom_mock_host_new();
    loom_mock_host_add_service(h, LOOM_SERVICE_COST, 1, &no_layer);
    ck_assert_ptr_null(loom_ew_cost_service(loom_mock_host_api(h), loom_mock_host_ctx(h)));
    loom_mock_host_free(h);

    h = loom_mock_host_new();
    loom_mock_host_add_service(h, LOOM_SERVICE_COST, 1, &fake_cost);
    ck_assert_ptr_eq(loom_ew_cost_service(loom_mock_host_api(h), loom_mock_host_ctx(h)), &fake_cost);
    loom_mock_host_free(h);
}
END_TEST

/* Sample 0 (100 text tokens, 2 images): vision 20 tokens, 5 ms per layer
 * (layer 1 reuses layer 0's cost) = 10; llm 120 tokens: layer 0 30 + 15
 * (nothing upstream trains), layer 1 60 + 60 + 30, layer 2 90 + 90 + 45
 * = 420. Sample 1 (50 text tokens, no image): no vision work; llm 50
 * tokens: 18.75 + 62.5 + 93.75 = 175. */
START_TEST(sample_work_by_hand)
{
    loom_mock_host *h = loom_mock_host_new();
    loom_mock_host_add_service(h, LOOM_SERVICE_COST, 1, &fake_cost);
    const loom_host_api *host = loom_mock_host_api(h);
    const loom_cost_service *cost = loom_ew_cost_service(host, loom_mock_host_ctx(h));
    ck_assert_ptr_nonnull(cost);
    loom_problem pb;
    memset(&pb, 0, sizeof pb);
    pb.struct_size = sizeof pb;
    pb.kind = LOOM_PROBLEM_MODEL;
    pb.model = &two;
    loom_sample s[2];
    memset(s, 0, sizeof s);
    s[0].text_tokens = 100;
    s[0].images = 2;
    s[0].microbatch = 3; /* costed on its own as microbatch 0 */
    s[1].text_tokens = 50;
    s[1].microbatch = -1;
    loom_iteration it = {4, 2, s};
    double enc[2] = {-1, -1}, llm[2] = {-1, -1};
    loom_error err = {0};
    layer_calls = 0;
    fail_module = -1;
    ck_assert_int_eq(loom_ew_sample_work(host, loom_mock_host_ctx(h), cost, &pb,
                                         &it, enc, llm, &err), LOOM_OK);
    ck_assert_double_eq(enc[0], 10.0);
    ck_assert_double_eq(llm[0], 420.0);
    ck_assert_double_eq(enc[1], 0.0);
    ck_assert_double_eq(llm[1], 175.0);
    ck_assert_int_eq(layer_calls, 7); /* 1 + 3, then 0 + 3 */
    ck_assert_int_eq(s[0].microbatch, 3); /* the iteration is not touched */

    fail_module = 1;
    ck_assert_int_eq(loom_ew_sample_work(host, loom_mock_host_ctx(h), cost, &pb,
                                         &it, enc, llm, &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "no shape");
    fail_module = -1;
    loom_mock_host_free(h);
}
END_TEST

/* The suite: every test in one case. */
static Suite *suite(void)
{
    Suite *s = suite_create("kit-entrain");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, upstream_trainable_through_the_dag);
    tcase_add_test(tc, finds_a_usable_cost_service);
    tcase_add_test(tc, sample_work_by_hand);
    suite_add_tcase(s, tc);
    return s;
}

/* Runs the suite. */
int main(void)
{
    return loom_test_main(suite());
}
