/* test_pairwise_deferral.c - Entrain's pairwise deferral: subset sums, the
 * digest's Figure 4.10 matching (threshold 6: MB6-MB1, MB3-MB2, MB4-MB5),
 * the constructed oracles (continuation of the stratified example, the
 * greedy-pairing counter-example 11 vs 10, non-critical pairs), odd K,
 * K = 1, zero-work samples, invariants on random inputs against brute
 * force, and the plugin after uniform + stratified with a mock cost. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <loom/mock_host.h>
#include "deferral.h"
#include <loom/mock_sim.h>
#include "testutil.h"

const loom_plugin_info *loom_static_pairwise_deferral(void);
const loom_plugin_info *loom_static_stratified(void);
const loom_plugin_info *loom_static_uniform(void);

START_TEST(subset_sum_choices)
{
    unsigned char take[4];
    double sum = 0;
    loom_error err = {0, ""};
    const double a[2] = {6, 2};
    ck_assert_int_eq(loom_defer_subset(a, 2, 1.5, 1, take, &sum, &err), LOOM_OK);
    ck_assert_double_eq(sum, 2);
    ck_assert_int_eq(take[1], 1);
    ck_assert_int_eq(loom_defer_subset(a, 2, 3.5, 1, take, &sum, &err), LOOM_OK);
    ck_assert_double_eq(sum, 2);
    const double b[3] = {5, 1, 1};
    ck_assert_int_eq(loom_defer_subset(b, 3, 3, 1, take, &sum, &err), LOOM_OK);
    ck_assert_double_eq(sum, 2); /* 1+1 (off by 1) beats 5 (off by 2) */
    /* a tie between 3 and 4 goes to the smaller total */
    const double c[3] = {6, 3, 4};
    ck_assert_int_eq(loom_defer_subset(c, 3, 3.5, 1, take, &sum, &err), LOOM_OK);
    ck_assert_double_eq(sum, 3);
    ck_assert_int_eq(take[1], 1);
    /* nothing to move, zero-work items, bad input */
    ck_assert_int_eq(loom_defer_subset(c, 3, 0, 1, take, &sum, &err), LOOM_OK);
    ck_assert_double_eq(sum, 0);
    const double z[2] = {0, 0};
    ck_assert_int_eq(loom_defer_subset(z, 2, 2, 1, take, &sum, &err), LOOM_OK);
    ck_assert_double_eq(sum, 0);
    ck_assert_int_eq(loom_defer_subset(c, 3, 1, 0, take, &sum, &err), LOOM_EINVAL);
    const double neg[1] = {-1};
    ck_assert_int_eq(loom_defer_subset(neg, 1, 1, 1, take, &sum, &err), LOOM_EINVAL);
}
END_TEST

START_TEST(figure_4_10_matching)
{
    /* S_ol = {MB3, MB4, MB6}, S_ul = {MB1, MB2, MB5}; V from the table;
     * standalone loads consistent with it (MB1 = 2): MB3 9, MB4 7, MB6 10 */
    const double V[9] = {6, 6, 8,   /* MB3 */
                         6, 6, 6,   /* MB4 */
                         6, 7, 9};  /* MB6 */
    const double L[3] = {9, 7, 10};
    for (int binary = 0; binary < 2; binary++) {
        double t = 0;
        int32_t match[3];
        unsigned char crit[3];
        loom_error err = {0, ""};
        ck_assert_int_eq(loom_defer_match(V, L, 3, 3, binary, &t, match, crit, &err),
                         LOOM_OK);
        ck_assert_double_eq(t, 6);
        ck_assert_int_eq(match[2], 0); /* MB6 - MB1 */
        ck_assert_int_eq(match[0], 1); /* MB3 - MB2 */
        ck_assert_int_eq(match[1], 2); /* MB4 - MB5 */
        for (int i = 0; i < 3; i++)
            ck_assert_int_eq(crit[i], 1);
    }
}
END_TEST

/* Runs the deferral over samples given as per-microbatch lists. */
typedef struct scenario {
    double llm[32];
    int32_t mb[32];
    int32_t n, k;
    int32_t order[16], llm_mb[32];
    double t, after;
    int32_t moved;
} scenario;

/* Adds microbatch `m` holding the listed workloads (terminated by -1). */
static void add_mb(scenario *s, const double *w)
{
    for (int i = 0; w[i] >= 0; i++) {
        s->llm[s->n] = w[i];
        s->mb[s->n++] = s->k;
    }
    s->k++;
}

/* Backbone load of position `pos` of the execution order after deferral. */
static double load_at(const scenario *s, int pos)
{
    double l = 0;
    for (int i = 0; i < s->n; i++)
        if (s->llm_mb[i] == s->order[pos])
            l += s->llm[i];
    return l;
}

/* Runs loom_defer_run on s with quantum 1. */
static void run(scenario *s)
{
    loom_error err = {0, ""};
    ck_assert_msg(loom_defer_run(s->llm, s->mb, s->n, s->k, 1, s->order,
                                 s->llm_mb, &s->t, &s->after, &s->moved, &err) ==
                      LOOM_OK, "%s", err.message);
}

START_TEST(constructed_oracle_1)
{
    /* the stratified example: MB0 [6,2], MB1 [5,1,1], MB2 [4,1], MB3 [1];
     * T* = 6 with MB0 -> MB3 and MB1 -> MB2: order MB0, MB3, MB1, MB2 with
     * backbone loads 6, 3, 6, 6 (max 8 -> 6) */
    scenario s;
    memset(&s, 0, sizeof s);
    const double m0[] = {6, 2, -1}, m1[] = {5, 1, 1, -1}, m2[] = {4, 1, -1},
                 m3[] = {1, -1};
    add_mb(&s, m0);
    add_mb(&s, m1);
    add_mb(&s, m2);
    add_mb(&s, m3);
    run(&s);
    ck_assert_double_eq(s.t, 6);
    const int32_t order[4] = {0, 3, 1, 2};
    const double loads[4] = {6, 3, 6, 6};
    for (int p = 0; p < 4; p++) {
        ck_assert_int_eq(s.order[p], order[p]);
        ck_assert_double_eq(load_at(&s, p), loads[p]);
    }
    ck_assert_double_eq(s.after, 6);
    ck_assert_int_eq(s.moved, 2);
    ck_assert_int_eq(s.llm_mb[1], 3); /* the 2 of MB0 runs in MB3 */
    for (int i = 0; i < s.n; i++)
        ck_assert_int_eq(s.mb[i], i < 2 ? 0 : i < 5 ? 1 : i < 7 ? 2 : 3);
}
END_TEST

START_TEST(greedy_pairing_counterexample)
{
    /* M0 [3,1] = 4, M1 [6] = 6, M2 [6,3,4] = 13, M3 [5,6,1] = 12: greedy
     * pairs M2-M0 and M3-M1 (11), bottleneck matching M2-M1, M3-M0 (10) */
    scenario s;
    memset(&s, 0, sizeof s);
    const double m0[] = {3, 1, -1}, m1[] = {6, -1}, m2[] = {6, 3, 4, -1},
                 m3[] = {5, 6, 1, -1};
    add_mb(&s, m0);
    add_mb(&s, m1);
    add_mb(&s, m2);
    add_mb(&s, m3);
    ck_assert_double_eq(loom_defer_greedy(s.llm, s.mb, s.n, s.k, 1), 11);
    run(&s);
    ck_assert_double_eq(s.t, 10);
    ck_assert_double_eq(s.after, 10);
    ck_assert_int_eq(s.order[0], 2);
    ck_assert_int_eq(s.order[1], 1);
    ck_assert_int_eq(s.order[2], 3);
    ck_assert_int_eq(s.order[3], 0);
}
END_TEST

START_TEST(non_critical_pairs_defer_nothing)
{
    /* A [5,3,1] = 9, B [4,2] = 6, C [2,1] = 3, D [1,1,1] = 3: T* = 6;
     * A defers its 3 to C; B (6 <= T*) pairs with D and defers nothing */
    scenario s;
    memset(&s, 0, sizeof s);
    const double a[] = {5, 3, 1, -1}, b[] = {4, 2, -1}, c[] = {2, 1, -1},
                 d[] = {1, 1, 1, -1};
    add_mb(&s, a);
    add_mb(&s, b);
    add_mb(&s, c);
    add_mb(&s, d);
    run(&s);
    ck_assert_double_eq(s.t, 6);
    const int32_t order[4] = {0, 2, 1, 3};
    const double loads[4] = {6, 6, 6, 3};
    for (int p = 0; p < 4; p++) {
        ck_assert_int_eq(s.order[p], order[p]);
        ck_assert_double_eq(load_at(&s, p), loads[p]);
    }
    ck_assert_int_eq(s.moved, 1);
    ck_assert_int_eq(s.llm_mb[1], 2);
}
END_TEST

START_TEST(degenerate_inputs)
{
    /* odd K: the middle microbatch is unpaired and runs last */
    scenario s;
    memset(&s, 0, sizeof s);
    const double m0[] = {5, 5, -1}, m1[] = {9, -1}, empty[] = {-1};
    add_mb(&s, m0);
    add_mb(&s, m1);
    add_mb(&s, empty);
    run(&s);
    ck_assert_int_eq(s.order[0], 0);
    ck_assert_int_eq(s.order[1], 2);
    ck_assert_int_eq(s.order[2], 1);
    ck_assert_double_eq(s.t, 5);
    ck_assert_double_eq(s.after, 9); /* the middle one bounds the result */
    /* K = 1: nothing to pair */
    memset(&s, 0, sizeof s);
    const double one[] = {3, 4, -1};
    add_mb(&s, one);
    run(&s);
    ck_assert_int_eq(s.order[0], 0);
    ck_assert_int_eq(s.moved, 0);
    ck_assert_double_eq(s.after, 7);
    /* zero-work samples and samples outside the microbatches */
    memset(&s, 0, sizeof s);
    const double zeros[] = {0, 0, -1};
    add_mb(&s, zeros);
    add_mb(&s, zeros);
    s.llm[s.n] = 5;
    s.mb[s.n++] = -1;
    run(&s);
    ck_assert_int_eq(s.moved, 0);
    ck_assert_int_eq(s.llm_mb[4], -1);
    ck_assert_double_eq(s.after, 0);
    /* bad input */
    loom_error err = {0, ""};
    s.mb[0] = 7;
    ck_assert_int_eq(loom_defer_run(s.llm, s.mb, s.n, s.k, 1, s.order, s.llm_mb,
                                    NULL, NULL, NULL, &err), LOOM_EINVAL);
    ck_assert_int_eq(loom_defer_run(s.llm, s.mb, s.n, 0, 1, s.order, s.llm_mb,
                                    NULL, NULL, NULL, &err), LOOM_EINVAL);
}
END_TEST

/* min over pairings of max_i min(L_i, V[i][pi(i)]) by brute force. */
static double brute(const double *V, const double *L, int h, int *perm, int at,
                    unsigned used)
{
    if (at == h) {
        double w = 0;
        for (int i = 0; i < h; i++) {
            double c = fmin(L[i], V[i * h + perm[i]]);
            w = c > w ? c : w;
        }
        return w;
    }
    double best = INFINITY;
    for (int j = 0; j < h; j++) {
        if (used & (1u << j))
            continue;
        perm[at] = j;
        double v = brute(V, L, h, perm, at + 1, used | (1u << j));
        best = v < best ? v : best;
    }
    return best;
}

START_TEST(random_invariants)
{
    uint64_t seed = 2024;
    for (int trial = 0; trial < 150; trial++) {
        /* matching: binary search = linear scan = brute force */
        int h = 1 + (int)(loom_mock_splitmix64(&seed) % 4);
        double V[16], L[4];
        for (int i = 0; i < h * h; i++)
            V[i] = (double)(loom_mock_splitmix64(&seed) % 20);
        for (int i = 0; i < h; i++)
            L[i] = (double)(loom_mock_splitmix64(&seed) % 20);
        double tb = 0, tl = 0;
        int32_t match[4];
        loom_error err = {0, ""};
        ck_assert_int_eq(loom_defer_match(V, L, h, h, 1, &tb, match, NULL, &err), LOOM_OK);
        ck_assert_int_eq(loom_defer_match(V, L, h, h, 0, &tl, match, NULL, &err), LOOM_OK);
        ck_assert_double_eq(tb, tl);
        int perm[4];
        ck_assert_double_eq(tb, brute(V, L, h, perm, 0, 0));
        /* a full run keeps encoder membership, moves work only to the next
         * position from an overloaded one, never raises the maximum */
        scenario s;
        memset(&s, 0, sizeof s);
        s.k = 1 + (int)(loom_mock_splitmix64(&seed) % 8);
        s.n = (int)(loom_mock_splitmix64(&seed) % 30);
        double before[8] = {0};
        for (int i = 0; i < s.n; i++) {
            s.llm[i] = (double)(loom_mock_splitmix64(&seed) % 10);
            s.mb[i] = (int32_t)(loom_mock_splitmix64(&seed) % (uint64_t)s.k);
            before[s.mb[i]] += s.llm[i];
        }
        int32_t mb_copy[32];
        memcpy(mb_copy, s.mb, sizeof mb_copy);
        run(&s);
        ck_assert_int_eq(memcmp(mb_copy, s.mb, sizeof mb_copy), 0);
        int pos[8];
        for (int p = 0; p < s.k; p++)
            pos[s.order[p]] = p;
        double mx = 0;
        for (int m = 0; m < s.k; m++)
            mx = before[m] > mx ? before[m] : mx;
        ck_assert(s.after <= mx);
        for (int i = 0; i < s.n; i++) {
            int from = pos[s.mb[i]], to = pos[s.llm_mb[i]];
            ck_assert(to == from || (to == from + 1 && from % 2 == 0));
            if (to != from) /* the last position never defers */
                ck_assert_int_lt(from, s.k - 1);
        }
    }
}
END_TEST

/* ---- the plugin --------------------------------------------------------- */

/* Tokens of a module for microbatch `mb`: images*10 (encoder), text (llm). */
static int mock_shape(loom_ctx *ctx, int32_t module, const loom_iteration *it,
                      int32_t microbatches, int32_t mb, int32_t subs,
                      loom_shape *out, loom_error *err)
{
    (void)ctx;
    (void)microbatches;
    (void)subs;
    (void)err;
    memset(out, 0, sizeof *out);
    for (int32_t i = 0; i < it->n_samples; i++)
        if (it->samples[i].microbatch == mb)
            out->tokens += module == 0 ? it->samples[i].images * 10
                                       : it->samples[i].text_tokens;
    out->tp = 1;
    return LOOM_OK;
}

/* 1 ms per token forward, nothing else. */
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
    out->forward_ms = (double)shape->tokens;
    return LOOM_OK;
}

static const loom_cost_service mock_cost = {
    sizeof(loom_cost_service), 1, mock_layer, mock_shape, NULL, NULL, NULL};

/* Runs one partitioner plugin on the set. */
static int run_part(const loom_plugin_info *info, loom_mock_host *h,
                    const loom_problem *pb, const loom_iteration *it,
                    loom_candidates *set, loom_error *err)
{
    const loom_partitioner_vtable *vt =
        (const loom_partitioner_vtable *)info->role(LOOM_ROLE_PARTITIONER);
    loom_test_mock_manifest(h, info); /* this plugin's param defaults */
    void *self = NULL;
    ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h), NULL,
                                &self, err), LOOM_OK);
    int rc = vt->partition(self, pb, it, set, err);
    vt->destroy(self);
    return rc;
}

START_TEST(plugin_after_stratified)
{
    static loom_layer layer = {64, 256, 4, 4, 0, 0, 0, 0};
    static const int32_t in[1] = {0};
    loom_module mods[2] = {
        {"vit", LOOM_MODULE_ENCODER, LOOM_MODALITY_IMAGE, 1, &layer, 10, 0, 1, 0, NULL, 0},
        {"llm", LOOM_MODULE_BACKBONE, LOOM_MODALITY_TEXT, 1, &layer, 1, 0, 1, 1, in, 0}};
    loom_model model = {"toy", 2, mods};
    loom_problem pb;
    memset(&pb, 0, sizeof pb);
    pb.struct_size = sizeof pb;
    pb.kind = LOOM_PROBLEM_MODEL;
    pb.model = &model;
    pb.parallel = (loom_parallel){1, 2, 1, 1, 4, 0};
    /* the stratified oracle: encoder = images, backbone = text tokens */
    const int imgs[8] = {4, 3, 3, 2, 2, 2, 1, 1}, text[8] = {1, 6, 1, 5, 1, 2, 4, 1};
    loom_sample smp[8];
    for (int i = 0; i < 8; i++)
        smp[i] = (loom_sample){text[i], imgs[i], -1, 0, 0};
    loom_iteration it = {0, 8, smp};
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    loom_mock_host_set_problem(h, &pb);
    loom_mock_host_add_service(h, LOOM_SERVICE_COST, 1, &mock_cost);
    loom_candidates *set = loom_mock_candidates_new(&pb, &it);
    loom_error err = {0, ""};
    ck_assert_int_eq(run_part(loom_static_pairwise_deferral(), h, &pb, &it, set, &err),
                     LOOM_EINVAL);
    ck_assert_int_eq(run_part(loom_static_uniform(), h, &pb, &it, set, &err), LOOM_OK);
    ck_assert_int_eq(run_part(loom_static_stratified(), h, &pb, &it, set, &err), LOOM_OK);
    loom_mock_host_set_param(h, "subset_steps", "10");
    ck_assert_msg(run_part(loom_static_pairwise_deferral(), h, &pb, &it, set, &err) ==
                      LOOM_OK, "%s", err.message);
    const loom_partition *p = set->items[0];
    ck_assert_ptr_nonnull(strstr(p->label, "+defer 2"));
    /* new order MB0, MB3, MB1, MB2 of the oracle: encoder positions */
    const int32_t enc_pos[8] = {1, 0, 3, 2, 2, 0, 3, 2};
    double llm[4] = {0};
    for (int s = 0; s < 8; s++) {
        ck_assert_int_eq(p->sample_mb[s], enc_pos[s]);
        int32_t l = p->sample_mb[8 + s];
        ck_assert(l == enc_pos[s] || l == enc_pos[s] + 1);
        llm[l] += text[s];
    }
    ck_assert_double_eq(llm[0], 6);
    ck_assert_double_eq(llm[1], 3);
    ck_assert_double_eq(llm[2], 6);
    ck_assert_double_eq(llm[3], 6);
    loom_mock_candidates_free(set);
    loom_problem st;
    memset(&st, 0, sizeof st);
    st.kind = LOOM_PROBLEM_STAGE_TIMES;
    ck_assert_int_eq(run_part(loom_static_pairwise_deferral(), h, &st, &it, NULL, &err),
                     LOOM_DECLINED);
    loom_mock_host_free(h);
}
END_TEST

/* The suite of this file. */
static Suite *deferral_suite(void)
{
    Suite *s = suite_create("pairwise_deferral");
    TCase *tc = tcase_create("deferral");
    tcase_add_test(tc, subset_sum_choices);
    tcase_add_test(tc, figure_4_10_matching);
    tcase_add_test(tc, constructed_oracle_1);
    tcase_add_test(tc, greedy_pairing_counterexample);
    tcase_add_test(tc, non_critical_pairs_defer_nothing);
    tcase_add_test(tc, degenerate_inputs);
    tcase_add_test(tc, random_invariants);
    tcase_add_test(tc, plugin_after_stratified);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(deferral_suite());
}
