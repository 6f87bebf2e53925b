/* test_frozen_aware.c - Cornstarch's frozen-aware partitioning: the min-max
 * DP oracles of both digests, the toy MLLM (16.3 aware vs the naive
 * split), Eq. 3.3 across a module DAG (both rules), the plugin end to end
 * with a mock cost service, and the roofline cost model charging input and
 * weight gradients the way the digest's frozen patterns require. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <loom/mock_host.h>
#include <loom/mock_sim.h>
#include "frozen_aware.h"
#include "testutil.h"

const loom_plugin_info *loom_static_frozen_aware(void);
const loom_plugin_info *loom_static_roofline(void);

/* Runs the DP and checks bottleneck and stage sizes. */
static void check_dp(const double *t, int n, int s, double want,
                     const int32_t *sizes)
{
    int32_t got[16];
    double b = 0;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_frozen_minmax(t, n, s, got, &b, &err), LOOM_OK);
    ck_assert_double_eq_tol(b, want, 1e-9);
    for (int k = 0; k < s; k++)
        ck_assert_int_eq(got[k], sizes[k]);
}

START_TEST(minmax_oracles)
{
    const double a[5] = {1, 2, 3, 4, 5};
    const int32_t a2[2] = {3, 2}, a3[3] = {3, 1, 1};
    check_dp(a, 5, 2, 9, a2);  /* [0,3),[3,5) */
    check_dp(a, 5, 3, 6, a3);  /* [0,3),[3,4),[4,5) */
    /* the Entrain digest's Eq. 4.1 oracles: the same DP */
    const double b[6] = {1, 2, 3, 4, 5, 6};
    const int32_t b3[3] = {3, 2, 1};
    check_dp(b, 6, 3, 9, b3);  /* tau = [6, 9, 6] */
    const double c[4] = {4, 4, 4, 4};
    const int32_t c2[2] = {2, 2};
    check_dp(c, 4, 2, 8, c2);
    const double d[4] = {10, 1, 1, 1};
    int32_t sz[4];
    double bn = 0;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_frozen_minmax(d, 4, 2, sz, &bn, &err), LOOM_OK);
    ck_assert_double_eq(bn, 10);
    const double e[4] = {1, 1, 1, 10};
    const int32_t e4[4] = {1, 1, 1, 1};
    check_dp(e, 4, 4, 10, e4);
    ck_assert_int_eq(loom_frozen_minmax(e, 4, 5, sz, &bn, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "4 layers into 5 stages"));
}
END_TEST

START_TEST(toy_mllm_split)
{
    /* 4 frozen encoder layers (F = B_w = B_d = 1), a trainable projector
     * (0.1 each), 4 frozen LLM layers (3 each): T = [1,1,1,1,0.3,6,6,6,6]
     * splits [0,7),[7,9) at 16.3; naive all-trainable costs split at 6 */
    const double aware[9] = {1, 1, 1, 1, 0.3, 6, 6, 6, 6};
    const int32_t s_aware[2] = {7, 2};
    check_dp(aware, 9, 2, 16.3, s_aware);
    const double naive[9] = {3, 3, 3, 3, 0.3, 9, 9, 9, 9};
    const int32_t s_naive[2] = {6, 3};
    check_dp(naive, 9, 2, 27, s_naive);
}
END_TEST

/* ---- Eq. 3.3 across the module DAG ------------------------------------- */

static loom_layer one_layer = {64, 256, 4, 4, 0, 0, 0, 0};
static const int32_t in_ab[2] = {0, 1}, in_c[1] = {2};

/* Encoders A, B -> LLM C -> head D with the given frozen flags. */
static void dag(loom_module *m, loom_model *model, int fa, int fb, int fc,
                int fd)
{
    m[0] = (loom_module){"a", LOOM_MODULE_ENCODER, LOOM_MODALITY_IMAGE, 2,
                         &one_layer, 4, 0, fa, 0, NULL, 0};
    m[1] = (loom_module){"b", LOOM_MODULE_ENCODER, LOOM_MODALITY_AUDIO, 2,
                         &one_layer, 4, 0, fb, 0, NULL, 0};
    m[2] = (loom_module){"c", LOOM_MODULE_BACKBONE, LOOM_MODALITY_TEXT, 2,
                         &one_layer, 1, 0, fc, 2, in_ab, 0};
    m[3] = (loom_module){"d", LOOM_MODULE_BACKBONE, LOOM_MODALITY_TEXT, 1,
                         &one_layer, 1, 0, fd, 1, in_c, 0};
    *model = (loom_model){"dag", 4, m};
}

START_TEST(input_grad_rule_across_modules)
{
    loom_module m[4];
    loom_model model;
    /* a trainable layer in encoder A: A's layers and everything after it
     * pay B_d; the other encoder B stays at p = 0 */
    dag(m, &model, 0, 1, 1, 1);
    ck_assert_int_eq(loom_frozen_pays_input(&model, 0, 0, LOOM_FROZEN_EQ33), 1);
    ck_assert_int_eq(loom_frozen_pays_input(&model, 0, 0, LOOM_FROZEN_STRICT), 0);
    ck_assert_int_eq(loom_frozen_pays_input(&model, 0, 1, LOOM_FROZEN_STRICT), 1);
    ck_assert_int_eq(loom_frozen_pays_input(&model, 1, 0, LOOM_FROZEN_EQ33), 0);
    ck_assert_int_eq(loom_frozen_pays_input(&model, 1, 1, LOOM_FROZEN_EQ33), 0);
    ck_assert_int_eq(loom_frozen_pays_input(&model, 2, 0, LOOM_FROZEN_STRICT), 1);
    ck_assert_int_eq(loom_frozen_pays_input(&model, 3, 0, LOOM_FROZEN_STRICT), 1);
    /* everything frozen: pure forward */
    dag(m, &model, 1, 1, 1, 1);
    for (int32_t k = 0; k < 4; k++)
        ck_assert_int_eq(loom_frozen_pays_input(&model, k, 0, LOOM_FROZEN_EQ33), 0);
    /* a trainable layer deep in the model (the head after a frozen LLM):
     * every earlier layer has B = 0 */
    dag(m, &model, 1, 1, 1, 0);
    ck_assert_int_eq(loom_frozen_pays_input(&model, 2, 1, LOOM_FROZEN_EQ33), 0);
    ck_assert_int_eq(loom_frozen_pays_input(&model, 3, 0, LOOM_FROZEN_EQ33), 1);
    ck_assert_int_eq(loom_frozen_pays_input(&model, 3, 0, LOOM_FROZEN_STRICT), 0);
    /* only the first module trainable: every later layer pays */
    dag(m, &model, 0, 1, 1, 1);
    ck_assert_int_eq(loom_frozen_upstream(&model, 3), 1);
}
END_TEST

/* ---- the plugin with the toy MLLM ---------------------------------------- */

static const double toy_f[3] = {1, 0.1, 3}, toy_bw[3] = {1, 0.1, 3},
                    toy_bd[3] = {1, 0.1, 3};

/* One sample per microbatch: the shape is irrelevant to the toy costs. */
static int toy_shape(loom_ctx *ctx, int32_t module, const loom_iteration *it,
                     int32_t microbatches, int32_t mb, int32_t subs,
                     loom_shape *out, loom_error *err)
{
    (void)ctx;
    (void)module;
    (void)it;
    (void)microbatches;
    (void)mb;
    (void)subs;
    (void)err;
    memset(out, 0, sizeof *out);
    out->tokens = 1;
    out->tp = 1;
    return LOOM_OK;
}

/* Eq. 3.2 costs as a frozen-aware cost model charges them. */
static int toy_layer(loom_ctx *ctx, int32_t module, int32_t layer,
                     const loom_shape *shape, int32_t policy,
                     loom_layer_cost *out, loom_error *err)
{
    (void)layer;
    (void)policy;
    (void)err;
    memset(out, 0, sizeof *out);
    const loom_problem *pb = loom_mock_host_api(loom_mock_host_from_ctx(ctx))->problem(ctx);
    out->forward_ms = toy_f[module];
    out->weight_grad_ms = pb->model->modules[module].frozen ? 0 : toy_bw[module];
    out->input_grad_ms = shape->trainable_upstream ? toy_bd[module] : 0;
    return LOOM_OK;
}

static const loom_cost_service toy_cost = {sizeof(loom_cost_service), 1,
                                           toy_layer, toy_shape, NULL, NULL, NULL};

/* Runs the plugin on the toy MLLM (pp = 2) and returns the candidate. */
static loom_partition *run_toy(loom_candidates **set, const char *mode,
                               const char *rule, loom_problem *pb)
{
    static loom_module m[3];
    static loom_model model;
    static const int32_t in0[1] = {0}, in1[1] = {1};
    m[0] = (loom_module){"enc", LOOM_MODULE_ENCODER, LOOM_MODALITY_IMAGE, 4,
                         &one_layer, 4, 0, 1, 0, NULL, 0};
    m[1] = (loom_module){"proj", LOOM_MODULE_ENCODER, LOOM_MODALITY_TEXT, 1,
                         &one_layer, 1, 0, 0, 1, in0, 0};
    m[2] = (loom_module){"llm", LOOM_MODULE_BACKBONE, LOOM_MODALITY_TEXT, 4,
                         &one_layer, 1, 0, 1, 1, in1, 0};
    model = (loom_model){"toy-mllm", 3, m};
    memset(pb, 0, sizeof *pb);
    pb->struct_size = sizeof *pb;
    pb->kind = LOOM_PROBLEM_MODEL;
    pb->model = &model;
    pb->parallel = (loom_parallel){1, 2, 1, 1, 2, 0};
    static loom_sample smp[2] = {{10, 1, -1, 0, 0}, {20, 2, -1, 0, 0}};
    static loom_iteration it = {0, 2, smp};
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    loom_mock_host_set_problem(h, pb);
    loom_mock_host_add_service(h, LOOM_SERVICE_COST, 1, &toy_cost);
    if (mode)
        loom_mock_host_set_param(h, "mode", mode);
    if (rule)
        loom_mock_host_set_param(h, "input_grad_rule", rule);
    const loom_partitioner_vtable *vt = (const loom_partitioner_vtable *)
        loom_static_frozen_aware()->role(LOOM_ROLE_PARTITIONER);
    void *self = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h), NULL,
                                &self, &err), LOOM_OK);
    *set = loom_mock_candidates_new(pb, &it);
    ck_assert_msg(vt->partition(self, pb, &it, *set, &err) == LOOM_OK, "%s",
                  err.message);
    vt->destroy(self);
    loom_mock_host_free(h);
    ck_assert_int_eq((*set)->n, 1);
    return (*set)->items[0];
}

START_TEST(plugin_toy_mllm)
{
    loom_candidates *set = NULL;
    loom_problem pb;
    loom_partition *p = run_toy(&set, NULL, NULL, &pb);
    /* aware: stage 0 = enc 0..3, proj, llm 0..1; stage 1 = llm 2..3 */
    ck_assert_int_eq(p->n_positions, 2);
    ck_assert_int_eq(p->positions[0].rank, 0);
    ck_assert_int_eq(p->positions[1].rank, 1);
    ck_assert_int_eq(p->positions[0].n_spans, 3);
    ck_assert_int_eq(p->spans[2].module, 2);
    ck_assert_int_eq(p->spans[2].n_layers, 2);
    ck_assert_int_eq(p->spans[3].first_layer, 2);
    ck_assert_ptr_nonnull(strstr(p->label, "frozen-aware S=2 max=16.30ms"));
    ck_assert_int_eq(p->n_microbatches, 2);
    loom_mock_candidates_free(set);
    /* strict: the projector pays no B_d of its own: 16.2 */
    p = run_toy(&set, NULL, "strict", &pb);
    ck_assert_ptr_nonnull(strstr(p->label, "max=16.20ms"));
    loom_mock_candidates_free(set);
    /* unaware (B = 2F): the naive split, one LLM layer on stage 0 */
    p = run_toy(&set, "unaware", NULL, &pb);
    ck_assert_ptr_nonnull(strstr(p->label, "frozen-unaware S=2 max=27.00ms"));
    ck_assert_int_eq(p->spans[2].n_layers, 1);
    loom_mock_candidates_free(set);
}
END_TEST

/* ---- the roofline cost model under the rule ------------------------------- */

/* Roofline cost of layer 0 of `module` with trainable_upstream from Eq. 3.3. */
static loom_layer_cost roofline_cost(const loom_problem *pb, int32_t module)
{
    loom_mock_host *h = loom_test_mock_host(loom_static_roofline());
    loom_mock_host_set_problem(h, pb);
    const loom_cost_model_vtable *vt = (const loom_cost_model_vtable *)
        loom_static_roofline()->role(LOOM_ROLE_COST_MODEL);
    void *self = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h), NULL,
                                &self, &err), LOOM_OK);
    loom_shape s = {.struct_size = (uint32_t)sizeof(loom_shape), .tokens = 4096,
                    .seq_sq_sum = 4096.0 * 4096.0, .sequences = 1, .tp = 1,
                    .trainable_upstream =
                        loom_frozen_pays_input(pb->model, module, 0, LOOM_FROZEN_EQ33)};
    loom_layer_cost c = LOOM_LAYER_COST_INIT;
    ck_assert_msg(vt->estimate(self, pb, module, 0, &s, LOOM_POLICY_NONE, &c, &err) ==
                      LOOM_OK, "%s", err.message);
    vt->destroy(self);
    loom_mock_host_free(h);
    return c;
}

START_TEST(roofline_charges_by_frozen_status)
{
    static loom_layer big = {2048, 8192, 16, 16, 0, 0, 0, 0};
    static const int32_t in0[1] = {0};
    loom_module m[2] = {
        {"vit", LOOM_MODULE_ENCODER, LOOM_MODALITY_IMAGE, 4, &big, 256, 0, 1, 0, NULL, 0},
        {"llm", LOOM_MODULE_BACKBONE, LOOM_MODALITY_TEXT, 4, &big, 1, 0, 1, 1, in0, 0}};
    loom_model model = {"vlm", 2, m};
    loom_cluster cl;
    memset(&cl, 0, sizeof cl);
    cl.name = "c";
    cl.peak_flops = 312e12;
    cl.hbm_bytes_per_s = 2e12;
    cl.hbm_bytes = 80LL << 30;
    cl.gpus_per_node = 8;
    cl.nvlink_bytes_per_s = 300e9;
    cl.net_bytes_per_s = 25e9;
    cl.eff_gemm = cl.eff_attention = cl.eff_memory = cl.eff_collective = 0.8;
    loom_problem pb;
    memset(&pb, 0, sizeof pb);
    pb.struct_size = sizeof pb;
    pb.kind = LOOM_PROBLEM_MODEL;
    pb.model = &model;
    pb.cluster = &cl;
    pb.parallel = (loom_parallel){1, 2, 1, 1, 4, 0};
    /* all frozen: no backward at all (Fig. 3.1b's frozen encoder ~0) */
    loom_layer_cost enc = roofline_cost(&pb, 0), llm = roofline_cost(&pb, 1);
    ck_assert_double_eq(enc.input_grad_ms + enc.weight_grad_ms, 0);
    ck_assert_double_eq(llm.input_grad_ms + llm.weight_grad_ms, 0);
    ck_assert_double_gt(llm.forward_ms, 0);
    /* a trainable encoder: it pays both; the frozen backbone pays input
     * gradients only, B/F between 1 and 2 (Fig. 3.1b: 2.06 with
     * checkpointing's extra forward) */
    m[0].frozen = 0;
    enc = roofline_cost(&pb, 0);
    llm = roofline_cost(&pb, 1);
    ck_assert_double_gt(enc.weight_grad_ms, 0);
    ck_assert_double_gt(enc.input_grad_ms, 0);
    ck_assert_double_eq(llm.weight_grad_ms, 0);
    ck_assert_double_gt(llm.input_grad_ms, 0);
    double ratio = llm.input_grad_ms / llm.forward_ms;
    ck_assert(ratio > 0.8 && ratio < 2.0);
    /* everything trainable: B/F near 2 (2.7 measured in Fig. 3.1b) */
    m[1].frozen = 0;
    llm = roofline_cost(&pb, 1);
    ratio = (llm.input_grad_ms + llm.weight_grad_ms) / llm.forward_ms;
    ck_assert(ratio > 1.6 && ratio < 3.0);
}
END_TEST

/* The suite of this file. */
static Suite *frozen_suite(void)
{
    Suite *s = suite_create("frozen_aware");
    TCase *tc = tcase_create("frozen");
    tcase_add_test(tc, minmax_oracles);
    tcase_add_test(tc, toy_mllm_split);
    tcase_add_test(tc, input_grad_rule_across_modules);
    tcase_add_test(tc, plugin_toy_mllm);
    tcase_add_test(tc, roofline_charges_by_frozen_status);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(frozen_suite());
}
