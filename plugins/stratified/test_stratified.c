/* test_stratified.c - Entrain's stratified assignment: the digest's
 * constructed oracle (8 samples, K = 4), the K_eff oracles, the Graham
 * bound, the S_f counter-example, replica assignment, and the plugin on a
 * layout from the uniform partitioner with a mock cost service. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <loom/mock_host.h>
#include <loom/mock_sim.h>
#include "stratified.h"
#include "testutil.h"

const loom_plugin_info *loom_static_stratified(void);
const loom_plugin_info *loom_static_uniform(void);

START_TEST(digest_oracle)
{
    /* a(4,1) b(3,6) c(3,1) d(2,5) e(2,1) f(2,2) g(1,4) h(1,1); S_c by the
     * mean rule (w_LLM > 21/8) = {b, d, g} as the digest's "llm > 3" */
    const double enc[8] = {4, 3, 3, 2, 2, 2, 1, 1};
    const double llm[8] = {1, 6, 1, 5, 1, 2, 4, 1};
    ck_assert_int_eq(loom_strat_keff(enc, NULL, 8, 4), 4);
    int32_t mb[8];
    unsigned char coarse[8];
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_strat_assign(enc, llm, NULL, 8, 4, LOOM_STRAT_MEAN, mb,
                                       coarse, &err), LOOM_OK);
    const unsigned char want_c[8] = {0, 1, 0, 1, 0, 0, 1, 0};
    /* MB0 = b, f; MB1 = d, e, h; MB2 = g, c; MB3 = a */
    const int32_t want_mb[8] = {3, 0, 2, 1, 1, 0, 2, 1};
    for (int s = 0; s < 8; s++) {
        ck_assert_int_eq(coarse[s], want_c[s]);
        ck_assert_int_eq(mb[s], want_mb[s]);
    }
    double e[4] = {0}, l[4] = {0};
    for (int s = 0; s < 8; s++) {
        e[mb[s]] += enc[s];
        l[mb[s]] += llm[s];
    }
    const double we[4] = {5, 5, 4, 4}, wl[4] = {8, 7, 5, 1};
    for (int k = 0; k < 4; k++) {
        ck_assert_double_eq(e[k], we[k]);
        ck_assert_double_eq(l[k], wl[k]);
    }
    /* the other rules pick other coarse sets */
    ck_assert_int_eq(loom_strat_assign(enc, llm, NULL, 8, 4, LOOM_STRAT_TOP_KEFF,
                                       mb, coarse, &err), LOOM_OK);
    ck_assert_int_eq(coarse[5], 1); /* f (llm 2) is among the 4 heaviest */
    ck_assert_int_eq(loom_strat_assign(enc, llm, NULL, 8, 4, LOOM_STRAT_MEDIAN,
                                       mb, coarse, &err), LOOM_OK);
    ck_assert_int_eq(coarse[5], 1); /* 2 > median 1.5 */
    ck_assert_int_eq(loom_strat_assign(enc, llm, NULL, 8, 0, LOOM_STRAT_MEAN, mb,
                                       coarse, &err), LOOM_EINVAL);
}
END_TEST

START_TEST(k_eff_oracles)
{
    const double a[5] = {8, 1, 1, 1, 1};
    ck_assert_int_eq(loom_strat_keff(a, NULL, 5, 8), 1);     /* 12/8 -> 1 */
    const double b[6] = {4, 4, 4, 3, 3, 2};
    ck_assert_int_eq(loom_strat_keff(b, NULL, 6, 8), 5);     /* 20/4 -> 5 */
    const double c[6] = {3, 3, 3, 3, 3, 3};
    ck_assert_int_eq(loom_strat_keff(c, NULL, 6, 4), 4);     /* K binds */
    const double text[3] = {0, 0, 0};
    ck_assert_int_eq(loom_strat_keff(text, NULL, 3, 8), 3);  /* all text */
    ck_assert_int_eq(loom_strat_keff(text, NULL, 3, 1), 1);  /* K = 1 */
    const int32_t idx[2] = {1, 2};
    ck_assert_int_eq(loom_strat_keff(b, idx, 2, 8), 2);
    /* an all-text batch balances the backbone instead: 5,4,3,3 -> 8, 7;
     * zero-work samples are still placed */
    const double none[6] = {0, 0, 0, 0, 0, 0}, llm[6] = {5, 4, 3, 3, 0, 0};
    int32_t mb[6];
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_strat_keff(none, NULL, 6, 2), 2);
    ck_assert_int_eq(loom_strat_assign(none, llm, NULL, 6, 2, LOOM_STRAT_MEAN, mb,
                                       NULL, &err), LOOM_OK);
    double load[2] = {0, 0};
    for (int i = 0; i < 6; i++) {
        ck_assert(mb[i] == 0 || mb[i] == 1);
        load[mb[i]] += llm[i];
    }
    ck_assert_double_eq(load[0], 8);
    ck_assert_double_eq(load[1], 7);
    /* K = 1: everything in one microbatch */
    ck_assert_int_eq(loom_strat_assign(b, b, NULL, 6, 1, LOOM_STRAT_MEAN, mb, NULL,
                                       &err), LOOM_OK);
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(mb[i], 0);
}
END_TEST

START_TEST(graham_bound_and_counterexample)
{
    /* max microbatch encoder load <= sum / K_eff + (1 - 1/K_eff) max */
    uint64_t s = 99;
    for (int t = 0; t < 200; t++) {
        int n = 1 + (int)(loom_mock_splitmix64(&s) % 30);
        int k = 1 + (int)(loom_mock_splitmix64(&s) % 8);
        double enc[30], llm[30], sum = 0, mx = 0;
        for (int i = 0; i < n; i++) {
            enc[i] = (double)(loom_mock_splitmix64(&s) % 20);
            llm[i] = (double)(loom_mock_splitmix64(&s) % 20);
            sum += enc[i];
            mx = enc[i] > mx ? enc[i] : mx;
        }
        int32_t keff = loom_strat_keff(enc, NULL, n, k), mb[30];
        loom_error err = {0, ""};
        ck_assert_int_eq(loom_strat_assign(enc, llm, NULL, n, keff, LOOM_STRAT_MEAN,
                                           mb, NULL, &err), LOOM_OK);
        double load[8] = {0};
        for (int i = 0; i < n; i++) {
            ck_assert_int_ge(mb[i], 0);
            ck_assert_int_lt(mb[i], keff);
            load[mb[i]] += enc[i];
        }
        double worst = 0;
        for (int j = 0; j < keff; j++)
            worst = load[j] > worst ? load[j] : worst;
        if (mx > 0)
            ck_assert(worst <= sum / keff + (1 - 1.0 / keff) * mx + 1e-9);
    }
    /* "every microbatch gets S_f samples" can fail: K = 2, S_c = one
     * sample of encoder 10, S_f = three of encoder 1 - all go to MB1 */
    const double enc[4] = {10, 1, 1, 1}, llm[4] = {9, 1, 1, 1};
    int32_t mb[4];
    unsigned char coarse[4];
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_strat_assign(enc, llm, NULL, 4, 2, LOOM_STRAT_MEAN, mb,
                                       coarse, &err), LOOM_OK);
    ck_assert_int_eq(coarse[0], 1);
    ck_assert_int_eq(mb[0], 0);
    ck_assert_int_eq(mb[1], 1);
    ck_assert_int_eq(mb[2], 1);
    ck_assert_int_eq(mb[3], 1);
}
END_TEST

START_TEST(replica_assignment)
{
    /* by decreasing encoder work onto the least backbone work, at most
     * ceil(n/dp) samples per replica */
    const double enc[4] = {5, 4, 3, 2}, llm[4] = {1, 10, 1, 1};
    int32_t rep[4];
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_strat_replicas(enc, llm, 4, 2, rep, &err), LOOM_OK);
    ck_assert_int_eq(rep[0], 0);
    ck_assert_int_eq(rep[1], 1);
    ck_assert_int_eq(rep[2], 0);
    ck_assert_int_eq(rep[3], 1); /* replica 0 is full */
    ck_assert_int_eq(loom_strat_replicas(enc, llm, 4, 0, rep, &err), LOOM_EINVAL);
}
END_TEST

/* ---- the plugin, with a mock cost service ------------------------------ */

/* Tokens a module sees for the samples of microbatch `mb` of `it`. */
static int mock_shape(loom_ctx *ctx, int32_t module, const loom_iteration *it,
                      int32_t microbatches, int32_t mb, int32_t subs,
                      loom_shape *out, loom_error *err)
{
    (void)ctx;
    (void)microbatches;
    (void)subs;
    (void)err;
    memset(out, 0, sizeof *out);
    for (int32_t i = 0; i < it->n_samples; i++) {
        if (it->samples[i].microbatch != mb)
            continue;
        const loom_sample *s = &it->samples[i];
        out->tokens += module == 0 ? s->images * 10 : s->text_tokens + s->images * 10;
        out->sequences += 1;
    }
    out->tp = 1;
    return LOOM_OK;
}

/* 1 ms per 100 tokens forward, twice that backward when upstream trains. */
static int mock_layer(loom_ctx *ctx, int32_t module, int32_t layer,
                      const loom_shape *shape, int32_t policy,
                      loom_layer_cost *out, loom_error *err)
{
    (void)ctx;
    (void)module;
    (void)layer;
    (void)policy;
    (void)err;
    memset(out, 0, sizeof *out);
    out->forward_ms = (double)shape->tokens / 100;
    out->input_grad_ms = shape->trainable_upstream ? out->forward_ms : 0;
    return LOOM_OK;
}

static const loom_cost_service mock_cost = {
    sizeof(loom_cost_service), 1, mock_layer, mock_shape, NULL, NULL, NULL};

static loom_layer layers[8];
static const int32_t llm_inputs[1] = {0};

/* A two-module VLM problem: 2 encoder layers, 2 backbone layers. */
static void make_problem(loom_module *mods, loom_model *model, loom_problem *pb,
                         int32_t dp, int32_t mbs)
{
    memset(mods, 0, 2 * sizeof *mods);
    for (int i = 0; i < 8; i++) {
        layers[i].hidden = 64;
        layers[i].ffn_hidden = 256;
        layers[i].heads = 4;
        layers[i].kv_heads = 4;
    }
    mods[0] = (loom_module){"vit", LOOM_MODULE_ENCODER, LOOM_MODALITY_IMAGE, 2,
                            layers, 10, 0, 0, 0, NULL, 0};
    mods[1] = (loom_module){"llm", LOOM_MODULE_BACKBONE, LOOM_MODALITY_TEXT, 2,
                            layers, 1, 0, 1, 1, llm_inputs, 0};
    *model = (loom_model){"toy", 2, mods};
    memset(pb, 0, sizeof *pb);
    pb->struct_size = sizeof *pb;
    pb->kind = LOOM_PROBLEM_MODEL;
    pb->model = model;
    pb->parallel = (loom_parallel){1, 2, dp, 1, mbs, 0};
}

/* Runs a partitioner plugin's partition() with the mock host. */
static int run_part(const loom_plugin_info *info, loom_mock_host *h,
                    const loom_problem *pb, const loom_iteration *it,
                    loom_candidates *set, loom_error *err)
{
    const loom_partitioner_vtable *vt =
        (const loom_partitioner_vtable *)info->role(LOOM_ROLE_PARTITIONER);
    void *self = NULL;
    ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h), NULL,
                                &self, err), LOOM_OK);
    int rc = vt->partition(self, pb, it, set, err);
    vt->destroy(self);
    return rc;
}

START_TEST(plugin_refines_layout)
{
    loom_module mods[2];
    loom_model model;
    loom_problem pb;
    make_problem(mods, &model, &pb, 1, 4);
    loom_sample smp[8];
    const int imgs[8] = {4, 3, 3, 2, 2, 2, 1, 1};
    const int text[8] = {10, 600, 100, 500, 100, 200, 400, 100};
    for (int i = 0; i < 8; i++)
        smp[i] = (loom_sample){text[i], imgs[i], -1, 0, 0};
    loom_iteration it = {3, 8, smp};
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    loom_mock_host_set_problem(h, &pb);
    loom_mock_host_add_service(h, LOOM_SERVICE_COST, 1, &mock_cost);
    loom_candidates *set = loom_mock_candidates_new(&pb, &it);
    loom_error err = {0, ""};
    /* without a layout first it refuses */
    ck_assert_int_eq(run_part(loom_static_stratified(), h, &pb, &it, set, &err),
                     LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "layout partitioner"));
    ck_assert_int_eq(run_part(loom_static_uniform(), h, &pb, &it, set, &err), LOOM_OK);
    ck_assert_msg(run_part(loom_static_stratified(), h, &pb, &it, set, &err) == LOOM_OK,
                  "%s", err.message);
    loom_partition *p = set->items[0];
    ck_assert_int_eq(p->n_microbatches, 4);
    ck_assert_ptr_nonnull(strstr(p->label, "+strat K4"));
    double enc[4] = {0};
    for (int s = 0; s < 8; s++) {
        int32_t mb = p->sample_mb[s];
        ck_assert_int_eq(p->sample_mb[8 + s], mb); /* same for both modules */
        ck_assert_int_ge(mb, 0);
        enc[mb] += imgs[s];
    }
    /* encoder work (images) balanced as in the oracle: 5, 5, 4, 4 */
    double sorted[4];
    memcpy(sorted, enc, sizeof enc);
    for (int a = 0; a < 4; a++)
        for (int b = a + 1; b < 4; b++)
            if (sorted[b] > sorted[a]) {
                double t = sorted[a];
                sorted[a] = sorted[b];
                sorted[b] = t;
            }
    ck_assert_double_eq(sorted[0], 5);
    ck_assert_double_eq(sorted[3], 4);
    loom_mock_candidates_free(set);

    /* dp = 2: the iteration is the global batch; replica 1 only */
    make_problem(mods, &model, &pb, 2, 2);
    loom_mock_host_set_param(h, "replica", "1");
    set = loom_mock_candidates_new(&pb, &it);
    ck_assert_int_eq(run_part(loom_static_uniform(), h, &pb, &it, set, &err), LOOM_OK);
    ck_assert_int_eq(run_part(loom_static_stratified(), h, &pb, &it, set, &err), LOOM_OK);
    p = set->items[0];
    int inside = 0;
    for (int s = 0; s < 8; s++)
        inside += p->sample_mb[s] >= 0;
    ck_assert_int_eq(inside, 4);
    ck_assert_ptr_nonnull(strstr(p->label, "r1"));
    loom_mock_host_set_param(h, "replica", "2");
    ck_assert_int_eq(run_part(loom_static_stratified(), h, &pb, &it, set, &err),
                     LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "params.replica"));
    loom_mock_candidates_free(set);

    /* stage-times problems are declined */
    loom_problem st;
    memset(&st, 0, sizeof st);
    st.kind = LOOM_PROBLEM_STAGE_TIMES;
    ck_assert_int_eq(run_part(loom_static_stratified(), h, &st, &it, NULL, &err),
                     LOOM_DECLINED);
    loom_mock_host_free(h);
}
END_TEST

/* The suite of this file. */
static Suite *stratified_suite(void)
{
    Suite *s = suite_create("stratified");
    TCase *tc = tcase_create("stratified");
    tcase_add_test(tc, digest_oracle);
    tcase_add_test(tc, k_eff_oracles);
    tcase_add_test(tc, graham_bound_and_counterexample);
    tcase_add_test(tc, replica_assignment);
    tcase_add_test(tc, plugin_refines_layout);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(stratified_suite());
}
