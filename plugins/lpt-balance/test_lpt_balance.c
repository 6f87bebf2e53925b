/* test_lpt_balance.c - DistTrain's intra-microbatch reordering: the
 * digest's vectors ({1,2,3,4} -> [1,3,2,4]; {1,4,4,7} -> 11 ascending, 8
 * LPT; {1,1,2} -> 3 ascending, 2 LPT), equal group sizes with zero-size
 * samples, round-robin for equal sizes, identity for one group, Graham's
 * 4/3 - 1/(3m) bound against brute force, and the plugin modelling the
 * most loaded DP group. */
#include <stdlib.h>
#include <string.h>
#include <loom/mock_host.h>
#include <loom/mock_sim.h>
#include <cjson/cJSON.h>
#include <loom/sample_groups.h>
#include "testutil.h"
#include "lpt.h"

const loom_plugin_info *loom_static_lpt_balance(void);

/* Runs loom_lpt_assign on up to 16 items. */
static double deal(const double *sizes, int32_t n, int32_t m, int desc,
                   int32_t cap, int32_t *group_of, int32_t *perm, double *loads)
{
    int32_t scratch[32];
    return loom_lpt_assign(sizes, n, m, desc, cap, scratch, group_of, perm, loads);
}

START_TEST(paper_example_order)
{
    /* Fig. 11: samples 1..4 of sizes 1..4 over 2 groups -> [1, 3, 2, 4] */
    const double s[4] = {1, 2, 3, 4};
    int32_t g[4], perm[4];
    double loads[2];
    ck_assert_double_eq(deal(s, 4, 2, 0, 0, g, perm, loads), 6);
    static const int32_t want[4] = {0, 2, 1, 3};
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(perm[i], want[i]);
    ck_assert_double_eq(loads[0], 4);
    ck_assert_double_eq(loads[1], 6);
    /* LPT balances it 5 / 5 */
    ck_assert_double_eq(deal(s, 4, 2, 1, 2, g, perm, loads), 5);
}
END_TEST

START_TEST(lpt_beats_the_published_order)
{
    const double a[4] = {1, 4, 4, 7};
    int32_t g[4], perm[4];
    double loads[2];
    ck_assert_double_eq(deal(a, 4, 2, 0, 0, g, perm, loads), 11); /* {1,4},{4,7} */
    ck_assert_double_eq(deal(a, 4, 2, 0, 2, g, perm, loads), 11);
    ck_assert_double_eq(deal(a, 4, 2, 1, 2, g, perm, loads), 8);  /* {7,1},{4,4} */
    ck_assert_int_eq(g[3], g[0]);
    ck_assert_int_eq(g[1], g[2]);
    const double b[3] = {1, 1, 2};
    ck_assert_double_eq(deal(b, 3, 2, 0, 0, g, perm, loads), 3);
    ck_assert_double_eq(deal(b, 3, 2, 1, 0, g, perm, loads), 2); /* optimum */
    ck_assert_double_eq(deal(b, 3, 2, 1, 2, g, perm, loads), 2);
}
END_TEST

START_TEST(equal_group_sizes_with_zero_sizes)
{
    /* text-only samples (size 0) pile up in one group without the cap */
    double s[16];
    for (int i = 0; i < 16; i++)
        s[i] = i < 9 ? 0 : i;
    int32_t g[16], perm[16], count[4];
    double loads[4];
    deal(s, 16, 4, 0, 0, g, perm, loads);
    memset(count, 0, sizeof count);
    for (int i = 0; i < 16; i++)
        count[g[i]]++;
    ck_assert_int_ne(count[0], 4);
    for (int desc = 0; desc < 2; desc++) {
        deal(s, 16, 4, desc, 4, g, perm, loads);
        memset(count, 0, sizeof count);
        for (int i = 0; i < 16; i++)
            count[g[i]]++;
        for (int j = 0; j < 4; j++)
            ck_assert_int_eq(count[j], 4);
        /* perm is a permutation, group by group */
        int seen[16] = {0};
        for (int i = 0; i < 16; i++) {
            seen[perm[i]]++;
            if (i > 0)
                ck_assert_int_le(g[perm[i - 1]], g[perm[i]]);
        }
        for (int i = 0; i < 16; i++)
            ck_assert_int_eq(seen[i], 1);
    }
}
END_TEST

START_TEST(round_robin_identity_and_errors)
{
    const double e[6] = {1, 1, 1, 1, 1, 1};
    int32_t g[6], perm[6];
    double loads[4];
    ck_assert_double_eq(deal(e, 6, 3, 1, 2, g, perm, loads), 2);
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(g[i], i % 3);
    const double s[5] = {3, 9, 1, 4, 2};
    ck_assert_double_eq(deal(s, 5, 1, 1, 0, g, perm, loads), 19);
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(perm[i], i); /* one group: the identity */
    ck_assert_double_eq(deal(s, 2, 4, 1, 1, g, perm, loads), 9); /* n < m */
    ck_assert_int_eq(g[1], 0);
    ck_assert_int_eq(g[0], 1);
    ck_assert_double_eq(loads[2], 0);
    ck_assert_double_eq(deal(s, 5, 0, 1, 0, g, perm, loads), -1);
    ck_assert_double_eq(deal(s, 5, 2, 1, 2, g, perm, loads), -1); /* 2*2 < 5 */
    ck_assert_double_eq(deal(s, 0, 2, 1, 0, g, perm, loads), 0);
}
END_TEST

/* Smallest possible largest load over every assignment (brute force). */
static double optimum(const double *s, int n, int m)
{
    int total = 1;
    for (int i = 0; i < n; i++)
        total *= m;
    double best = 1e300;
    for (int code = 0; code < total; code++) {
        double loads[4] = {0, 0, 0, 0};
        int c = code;
        for (int i = 0; i < n; i++, c /= m)
            loads[c % m] += s[i];
        double w = 0;
        for (int j = 0; j < m; j++)
            w = loads[j] > w ? loads[j] : w;
        best = w < best ? w : best;
    }
    return best;
}

START_TEST(graham_bound_against_brute_force)
{
    uint64_t st = 99;
    for (int trial = 0; trial < 300; trial++) {
        int m = 2 + trial % 2, n = 2 + trial % 7;
        double s[8];
        for (int i = 0; i < n; i++) {
            st = st * 6364136223846793005ull + 1442695040888963407ull;
            s[i] = 1 + (double)((st >> 33) % 20);
        }
        int32_t g[8], perm[8];
        double loads[4];
        double lpt = deal(s, n, m, 1, 0, g, perm, loads);
        double opt = optimum(s, n, m);
        ck_assert_double_le(opt, lpt);
        ck_assert_double_le(lpt, (4.0 / 3.0 - 1.0 / (3.0 * m)) * opt + 1e-9);
    }
}
END_TEST

/* vit -> llm, 8 samples in 4 microbatches (2 per microbatch). */
static loom_layer tl[4];
static const int32_t llm_in[1] = {0};
typedef struct fixture {
    loom_module modules[2];
    loom_model model;
    loom_problem problem;
    loom_sample samples[8];
    loom_iteration it;
} fixture;

/* Images per microbatch: 1, 9, 4, 6 (sizes through the fake cost). */
static void setup(fixture *f)
{
    memset(f, 0, sizeof *f);
    for (int i = 0; i < 4; i++) {
        tl[i].hidden = 64;
        tl[i].ffn_hidden = 256;
        tl[i].heads = 4;
        tl[i].kv_heads = 4;
    }
    f->modules[0] = (loom_module){"vit", LOOM_MODULE_ENCODER, LOOM_MODALITY_IMAGE,
                                  2, tl, 16, 0, 0, 0, NULL, 0};
    f->modules[1] = (loom_module){"llm", LOOM_MODULE_BACKBONE, LOOM_MODALITY_TEXT,
                                  4, tl, 1, 0, 0, 1, llm_in, 0};
    f->model = (loom_model){"toy", 2, f->modules};
    f->problem.struct_size = sizeof f->problem;
    f->problem.kind = LOOM_PROBLEM_MODEL;
    f->problem.model = &f->model;
    f->problem.parallel = (loom_parallel){1, 2, 2, 1, 4, 0};
    static const int images[8] = {1, 0, 5, 4, 2, 2, 3, 3};
    for (int i = 0; i < 8; i++) {
        f->samples[i].text_tokens = 10;
        f->samples[i].images = images[i];
        f->samples[i].microbatch = i / 2;
    }
    f->it = (loom_iteration){0, 8, f->samples};
}

/* Fake "loom.cost": a module sees 16 tokens per image of the microbatch;
 * a layer takes tokens / 16 ms forward and as much backward. */
static const loom_iteration *fake_it;
static int fake_layer(loom_ctx *ctx, int32_t module, int32_t layer,
                      const loom_shape *shape, int32_t policy,
                      loom_layer_cost *out, loom_error *err)
{
    (void)ctx, (void)module, (void)layer, (void)policy, (void)err;
    memset(out, 0, sizeof *out);
    out->forward_ms = (double)shape->tokens / 16.0;
    out->input_grad_ms = out->forward_ms;
    return LOOM_OK;
}
static int fake_shape(loom_ctx *ctx, int32_t module, const loom_iteration *it,
                      int32_t microbatches, int32_t microbatch, int32_t subs,
                      loom_shape *out, loom_error *err)
{
    (void)ctx, (void)module, (void)subs, (void)err;
    memset(out, 0, sizeof *out);
    for (int32_t i = 0; i < it->n_samples; i++) /* own microbatch, else the even spread */
        if (loom_sample_microbatch(it, i, microbatches) == microbatch)
            out->tokens += 16 * it->samples[i].images;
    out->tp = 1;
    return LOOM_OK;
}
static const loom_cost_service fake_cost = {
    sizeof(loom_cost_service), 1, fake_layer, fake_shape, NULL, NULL, NULL,
};

/* Runs lpt-balance over `set` with an optional param pair. */
static int run(const loom_problem *pb, const loom_iteration *it,
               loom_candidates *set, const char *key, const char *value,
               loom_error *err)
{
    const loom_partitioner_vtable *vt =
        (const loom_partitioner_vtable *)loom_static_lpt_balance()->role(
            LOOM_ROLE_PARTITIONER);
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    loom_mock_host_set_problem(h, pb);
    loom_mock_host_add_service(h, LOOM_SERVICE_COST, 1, &fake_cost);
    if (key)
        loom_mock_host_set_param(h, key, value);
    fake_it = it;
    void *self = NULL;
    ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h),
                                NULL, &self, err), LOOM_OK);
    int rc = vt->partition(self, pb, it, set, err);
    vt->destroy(self);
    loom_mock_host_free(h);
    return rc;
}

/* A candidate modelling 2 of the 4 microbatches (2 DP groups). */
static loom_partition *candidate(loom_candidates *set)
{
    loom_partition *p = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(set->add(set, &p, &err), LOOM_OK);
    p->n_microbatches = 2;
    snprintf(p->label, sizeof p->label, "toy");
    return p;
}

START_TEST(plugin_models_the_most_loaded_group)
{
    fixture f;
    setup(&f);
    loom_candidates *set = loom_mock_candidates_new(&f.problem, &f.it);
    loom_partition *p = candidate(set);
    loom_error err = {0, ""};
    ck_assert_msg(run(&f.problem, &f.it, set, NULL, NULL, &err) == LOOM_OK, "%s",
                  err.message);
    /* microbatch sizes (2 vit layers, fwd + bwd = 2 * images per layer):
     * 4, 36, 16, 24 -> LPT {36, 4} vs {24, 16}: group 0 = units 0 and 1 */
    ck_assert_int_eq(p->n_microbatches, 2);
    static const int want[8] = {0, 0, 1, 1, -1, -1, -1, -1};
    for (int m = 0; m < 2; m++)
        for (int i = 0; i < 8; i++)
            ck_assert_int_eq(p->sample_mb[m * 8 + i], want[i]);
    ck_assert_str_eq(p->label, "toy lpt2");
    /* ascending: {4, 24}, {16, 36} -> the straggler holds units 1 and 2 */
    loom_mock_candidates_free(set);
    set = loom_mock_candidates_new(&f.problem, &f.it);
    candidate(set);
    ck_assert_int_eq(run(&f.problem, &f.it, set, "order", "ascending", &err), LOOM_OK);
    static const int want_asc[8] = {-1, -1, 0, 0, 1, 1, -1, -1};
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(set->items[0]->sample_mb[i], want_asc[i]);
    ck_assert_str_eq(set->items[0]->label, "toy asc2");
    /* one group: everything, in workload order */
    ck_assert_int_eq(run(&f.problem, &f.it, set, "dp", "1", &err), LOOM_OK);
    ck_assert_int_eq(set->items[0]->n_microbatches, 4);
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(set->items[0]->sample_mb[8 + i], i / 2);
    loom_mock_candidates_free(set);
}
END_TEST

START_TEST(plugin_errors)
{
    fixture f;
    setup(&f);
    loom_candidates *set = loom_mock_candidates_new(&f.problem, &f.it);
    loom_error err = {0, ""};
    ck_assert_int_eq(run(&f.problem, &f.it, set, NULL, NULL, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "expected candidates from an earlier partitioner"));
    candidate(set);
    ck_assert_int_eq(run(&f.problem, &f.it, set, "dp", "5", &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "lpt-balance: 5 DP groups for 4 microbatches; "
                                  "expected at most one group per microbatch");
    ck_assert_int_eq(run(&f.problem, NULL, set, NULL, NULL, &err), LOOM_DECLINED);
    loom_mock_candidates_free(set);
}
END_TEST

START_TEST(manifest_matches_binary)
{
    const loom_plugin_info *info = loom_static_lpt_balance();
    cJSON *m = loom_test_json(loom_test_src("plugins/lpt-balance/manifest.json"));
    ck_assert_str_eq(cJSON_GetObjectItem(m, "id")->valuestring, info->id);
    ck_assert_str_eq(cJSON_GetObjectItem(m, "version")->valuestring, info->version);
    ck_assert_ptr_nonnull(info->role(LOOM_ROLE_PARTITIONER));
    cJSON_Delete(m);
}
END_TEST

/* The lpt-balance suite. */
static Suite *suite(void)
{
    Suite *s = suite_create("lpt-balance");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, paper_example_order);
    tcase_add_test(tc, lpt_beats_the_published_order);
    tcase_add_test(tc, equal_group_sizes_with_zero_sizes);
    tcase_add_test(tc, round_robin_identity_and_errors);
    tcase_add_test(tc, graham_bound_against_brute_force);
    tcase_add_test(tc, plugin_models_the_most_loaded_group);
    tcase_add_test(tc, plugin_errors);
    tcase_add_test(tc, manifest_matches_binary);
    suite_add_tcase(s, tc);
    return s;
}

/* Runs the suite; exits non-zero when a check fails. */
int main(void)
{
    return loom_test_main(suite());
}
