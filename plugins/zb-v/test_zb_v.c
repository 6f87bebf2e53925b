/* test_zb_v.c - the V-shape interleavers: the ZB-V oracle (P=4, M=8,
 * chunk F=I=W=0.5 on the V placement -> 25.5 ms within 1F1B's activation
 * memory), the controllable-memory relations (V-Half at most half and
 * V-Min at most a third of 1F1B's peak, bubbles V-ZB <= V-Half <= V-Min),
 * memory per phase, the memory cap, random problems (dependencies, the
 * budget and the cap) and params. */
#include <loom/mock_host.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <loom/kits/graph.h>
#include <loom/mock_sim.h>
#include "testutil.h"

const loom_plugin_info *loom_static_zb_v(void);
const loom_plugin_info *loom_static_1f1b(void);
const loom_plugin_info *loom_static_interleaved_1f1b(void);

#define MAXS 128
static double fwd[MAXS], igr[MAXS], wgr[MAXS], bwd[MAXS], act[MAXS], held[MAXS];
static double scale[MAXS];
static int32_t map[MAXS];

/* A split stage-times problem of P ranks, V chunks each, uniform times. */
static loom_stage_times times(int P, int M, int V, double f, double i, double w, double a)
{
    for (int k = 0; k < P * V; k++) {
        fwd[k] = f;
        igr[k] = i;
        wgr[k] = w;
        bwd[k] = i + w;
        act[k] = a;
    }
    for (int k = 0; k < M; k++)
        scale[k] = 1;
    loom_stage_times st = {0};
    st.ranks = P;
    st.microbatches = M;
    st.virtual_stages = V;
    st.split_backward = 1;
    st.forward_ms = fwd;
    st.input_grad_ms = igr;
    st.weight_grad_ms = wgr;
    st.activation_bytes = act;
    st.microbatch_scale = scale;
    return st;
}

/* The V placement of P ranks (two chunks each) into map. */
static const int32_t *v_map(int P)
{
    for (int s = 0; s < 2 * P; s++)
        map[s] = loom_placement_rank(LOOM_PLACEMENT_V, s, P);
    return map;
}

static loom_stage_graph *graph_of(const loom_stage_times *st, int split)
{
    loom_stage_graph *g = NULL;
    loom_error err = {0};
    ck_assert_msg(loom_graph_from_stage_times(st, split, &g, &err) == LOOM_OK, "%s",
                  err.message);
    return g;
}

/* Interleaves g with `info` (variant NULL: the manifest's default) and
 * simulates it; returns the interleaver's status (metrics only on OK). */
static int plan_prio(const loom_plugin_info *info, const char *variant,
                     const loom_stage_graph *g, const float *prio, loom_metrics *m,
                     int64_t *peaks, loom_error *err);

static int plan(const loom_plugin_info *info, const char *variant, const loom_stage_graph *g,
                loom_metrics *m, int64_t *peaks, loom_error *err)
{
    return plan_prio(info, variant, g, NULL, m, peaks, err);
}

/* plan() with group priorities (NULL: group order). */
static int plan_prio(const loom_plugin_info *info, const char *variant,
                     const loom_stage_graph *g, const float *prio, loom_metrics *m,
                     int64_t *peaks, loom_error *err)
{
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    if (variant)
        loom_mock_host_set_param(h, "variant", variant);
    const loom_interleaver_vtable *vt =
        (const loom_interleaver_vtable *)info->role(LOOM_ROLE_INTERLEAVER);
    ck_assert_ptr_nonnull(vt);
    void *self = NULL;
    int rc = vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h), NULL, &self, err);
    ck_assert_msg(rc == LOOM_OK, "create: %s", err->message);
    loom_schedule *sc = loom_schedule_new(g->n_ranks, g->n_stages);
    rc = vt->interleave(self, g, prio, sc, err);
    if (rc == LOOM_OK) {
        loom_metrics_init(m);
        m->peak_bytes = peaks;
        m->start_ms = malloc((size_t)g->n_stages * sizeof(double));
        m->end_ms = malloc((size_t)g->n_stages * sizeof(double));
        ck_assert_msg(loom_mock_simulate(g, sc, m, err) == LOOM_OK, "simulate: %s", err->message);
        /* every dependency honoured: a stage starts after its inputs */
        for (int32_t v = 0; v < g->n_stages; v++)
            for (int32_t e = g->pred_off[v]; e < g->pred_off[v + 1]; e++)
                ck_assert(m->start_ms[v] + 1e-9 >= m->end_ms[g->pred[e]] + g->pred_p2p_ms[e]);
        free(m->start_ms);
        free(m->end_ms);
        m->start_ms = m->end_ms = NULL;
    }
    loom_schedule_free(sc);
    vt->destroy(self);
    loom_mock_host_free(h);
    return rc;
}

/* 1F1B's peak for the same model on P ranks, one chunk each: a rank's
 * chunks merged into one stage of activation a * V. */
static int64_t peak_1f1b(int P, int M, double f, double i, double w, double a, int V)
{
    loom_stage_times st = times(P, M, 1, f * V, i * V, w * V, a * V);
    st.split_backward = 0;
    st.backward_ms = bwd;
    loom_stage_graph *g = graph_of(&st, 0);
    loom_metrics m;
    int64_t peaks[64];
    loom_error err = {0};
    ck_assert_int_eq(plan(loom_static_1f1b(), NULL, g, &m, peaks, &err), LOOM_OK);
    loom_graph_free(g);
    return m.max_peak_bytes;
}

START_TEST(oracle_zb_v)
{
    /* P = 4, M = 8, chunk F = I = W = 0.5 ms: the last rank starts at
     * 3 * 0.5 and then never idles (8 * 2 * 1.5 = 24 ms of work): 25.5. */
    loom_stage_times st = times(4, 8, 2, 0.5, 0.5, 0.5, 1);
    st.stage_rank = v_map(4);
    loom_stage_graph *g = graph_of(&st, 1);
    loom_metrics m;
    int64_t peaks[4];
    loom_error err = {0};
    ck_assert_int_eq(plan(loom_static_zb_v(), NULL, g, &m, peaks, &err), LOOM_OK);
    ck_assert_double_eq_tol(m.makespan_ms, 25.5, 1e-9);
    /* 1F1B on the same layers: 4 microbatches of 2 bytes on rank 0 = 8 */
    int64_t ref = peak_1f1b(4, 8, 0.5, 0.5, 0.5, 1, 2);
    ck_assert_int_eq(ref, 8);
    ck_assert_int_le(m.max_peak_bytes, ref);
    ck_assert_int_eq(m.cap_violations, 0);
    /* the v-zb name is the same budget */
    loom_metrics m2;
    ck_assert_int_eq(plan(loom_static_zb_v(), "v-zb", g, &m2, peaks, &err), LOOM_OK);
    ck_assert_double_eq_tol(m2.makespan_ms, 25.5, 1e-9);
    loom_graph_free(g);
}
END_TEST

START_TEST(family_relations)
{
    /* Uniform problems on the V placement: the peaks stay within 1, 1/2
     * and 1/3 of 1F1B's (rounded up to whole bytes), and the bubbles
     * order V-ZB <= V-Half <= V-Min, as published. */
    static const int cases[][2] = {{4, 8}, {4, 16}, {6, 12}, {8, 16}, {8, 32}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int P = cases[c][0], M = cases[c][1];
        loom_stage_times st = times(P, M, 2, 1, 1, 1, 1);
        st.stage_rank = v_map(P);
        loom_stage_graph *g = graph_of(&st, 1);
        int64_t ref = peak_1f1b(P, M, 1, 1, 1, 1, 2), peaks[8];
        ck_assert_int_eq(ref, 2 * P);
        static const char *const names[] = {"v-zb", "v-half", "v-min"};
        static const int den[] = {1, 2, 3};
        double bubble[3];
        for (int k = 0; k < 3; k++) {
            loom_metrics m;
            loom_error err = {0};
            ck_assert_int_eq(plan(loom_static_zb_v(), names[k], g, &m, peaks, &err), LOOM_OK);
            ck_assert_int_le(m.max_peak_bytes, (ref + den[k] - 1) / den[k]);
            bubble[k] = m.bubble_ratio;
        }
        ck_assert_msg(bubble[0] <= bubble[1] + 1e-12 && bubble[1] <= bubble[2] + 1e-12,
                      "P=%d M=%d: bubbles %g %g %g", P, M, bubble[0], bubble[1], bubble[2]);
        loom_graph_free(g);
    }
}
END_TEST

START_TEST(memory_per_phase)
{
    /* W keeps a quarter of each chunk's 4 bytes: F adds 4, I frees 3, W 1. */
    loom_stage_times st = times(4, 8, 2, 0.5, 0.5, 0.5, 4);
    for (int k = 0; k < 8; k++)
        held[k] = 1;
    st.weight_grad_bytes = held;
    st.stage_rank = v_map(4);
    loom_stage_graph *g = graph_of(&st, 1);
    for (int32_t p = 0; p < g->n_pairs; p++) {
        ck_assert_int_eq(g->mem_delta_bytes[g->pair_forward[p]], 4);
        ck_assert_int_eq(g->mem_delta_bytes[g->pair_backward[p]], -3);
        ck_assert_int_eq(g->mem_delta_bytes[g->pair_weight[p]], -1);
    }
    loom_metrics m;
    int64_t peaks[4];
    loom_error err = {0};
    ck_assert_int_eq(plan(loom_static_zb_v(), NULL, g, &m, peaks, &err), LOOM_OK);
    ck_assert_double_eq_tol(m.makespan_ms, 25.5, 1e-9);
    ck_assert_int_le(m.max_peak_bytes, 4 * peak_1f1b(4, 8, 0.5, 0.5, 0.5, 1, 2));
    loom_graph_free(g);
}
END_TEST

START_TEST(per_phase_doc_example)
{
    /* docs/memory-and-ilp.md: oracle-zbv with 2 bytes per chunk; W keeps
     * 0 or 2 of them. zb-v: 25.5 either way, peaks 10 12 14 16 or 16 on
     * every rank; v-half (budget 8): 27.5 or 30.5. */
    static const int64_t none[4] = {10, 12, 14, 16};
    for (int keep = 0; keep <= 2; keep += 2) {
        loom_stage_times st = times(4, 8, 2, 0.5, 0.5, 0.5, 2);
        for (int k = 0; k < 8; k++)
            held[k] = keep;
        st.weight_grad_bytes = held;
        st.stage_rank = v_map(4);
        loom_stage_graph *g = graph_of(&st, 1);
        loom_metrics m;
        int64_t peaks[4];
        loom_error err = {0};
        ck_assert_int_eq(plan(loom_static_zb_v(), "zb-v", g, &m, peaks, &err), LOOM_OK);
        ck_assert_double_eq_tol(m.makespan_ms, 25.5, 1e-9);
        for (int r = 0; r < 4; r++)
            ck_assert_int_eq(peaks[r], keep ? 16 : none[r]);
        ck_assert_int_eq(plan(loom_static_zb_v(), "v-half", g, &m, peaks, &err), LOOM_OK);
        ck_assert_double_eq_tol(m.makespan_ms, (keep ? 30.5 : 27.5), 1e-9);
        ck_assert_int_le(m.max_peak_bytes, 8);
        loom_graph_free(g);
    }
}
END_TEST

START_TEST(loop_interleavers_refuse_v)
{
    /* docs/baselines.md: 1f1b and interleaved-1f1b name the placement
     * they need instead of scheduling a V graph wrongly. */
    loom_stage_times st = times(4, 8, 2, 0.5, 0.5, 0.5, 1);
    st.stage_rank = v_map(4);
    loom_stage_graph *g = graph_of(&st, 0);
    loom_metrics m;
    int64_t peaks[4];
    loom_error err = {0};
    ck_assert_int_ne(plan(loom_static_1f1b(), NULL, g, &m, peaks, &err), LOOM_OK);
    ck_assert_ptr_nonnull(strstr(err.message, "found rank 3 holding positions 3 and 4"));
    ck_assert_int_ne(plan(loom_static_interleaved_1f1b(), NULL, g, &m, peaks, &err), LOOM_OK);
    ck_assert_ptr_nonnull(strstr(err.message, "needs position s on rank s % 4"));
    loom_graph_free(g);
}
END_TEST

START_TEST(memory_cap)
{
    /* A cap of 5 bytes: never exceeded, though the budget is 8. */
    loom_stage_times st = times(4, 8, 2, 0.5, 0.5, 0.5, 1);
    st.stage_rank = v_map(4);
    st.memory_cap_bytes = 5;
    loom_stage_graph *g = graph_of(&st, 1);
    loom_metrics m;
    int64_t peaks[4];
    loom_error err = {0};
    ck_assert_int_eq(plan(loom_static_zb_v(), NULL, g, &m, peaks, &err), LOOM_OK);
    ck_assert_int_le(m.max_peak_bytes, 5);
    ck_assert_int_eq(m.cap_violations, 0);
    ck_assert_double_gt(m.makespan_ms, 25.5);
    loom_graph_free(g);
    /* one microbatch needs 2 bytes on every rank: a cap of 1 is infeasible */
    st.memory_cap_bytes = 1;
    g = graph_of(&st, 1);
    ck_assert_int_eq(plan(loom_static_zb_v(), NULL, g, &m, peaks, &err), LOOM_EINFEASIBLE);
    ck_assert_str_eq(err.message, "zb-v: rank 0: the memory cap leaves 1 bytes for "
                                  "activations, one microbatch needs 2 there");
    loom_graph_free(g);
}
END_TEST

/* splitmix64 for the random cases. */
static uint64_t rnd(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

START_TEST(random_problems)
{
    /* Random times, sizes, scales, placements (explicit maps), held
     * bytes, caps, priorities and now and then unsplit backward: every
     * stage once on its rank, dependencies honoured (plan()), no cap
     * violation, and each rank's peak within the variant's budget. */
    uint64_t seed = 11;
    static const char *const names[] = {"zb-v", "v-half", "v-min"};
    static const int den[] = {1, 2, 3};
    for (int it = 0; it < 150; it++) {
        int P = 1 + (int)(rnd(&seed) % 6), V = 1 + (int)(rnd(&seed) % 3);
        int M = 1 + (int)(rnd(&seed) % 12), k = it % 3;
        loom_stage_times st = times(P, M, V, 1, 1, 1, 1);
        int32_t left[8];
        for (int r = 0; r < P; r++)
            left[r] = V;
        for (int s = 0; s < P * V; s++) {
            fwd[s] = 0.5 + (double)(rnd(&seed) % 8) / 4;
            igr[s] = 0.5 + (double)(rnd(&seed) % 8) / 4;
            wgr[s] = 0.25 + (double)(rnd(&seed) % 8) / 4;
            act[s] = 1 + (double)(rnd(&seed) % 3);
            held[s] = (double)(rnd(&seed) % ((uint64_t)act[s] + 1));
            int r = (int)(rnd(&seed) % (uint64_t)P);
            while (!left[r])
                r = (r + 1) % P;
            left[r]--;
            map[s] = r;
        }
        for (int j = 0; j < M; j++)
            scale[j] = 0.5 * (double)(1 + rnd(&seed) % 6);
        st.stage_rank = map;
        st.weight_grad_bytes = held;
        st.p2p_ms = (double)(rnd(&seed) % 3) / 4;
        st.memory_cap_bytes = (rnd(&seed) % 2) ? (double)(4 + rnd(&seed) % 30) : 0;
        if (it % 5 == 4) { /* a full backward (B stages) */
            st.split_backward = 0;
            st.backward_ms = bwd;
        }
        loom_stage_graph *g = graph_of(&st, it % 5 != 4);
        float prio[16];
        for (int j = 0; j < M; j++) /* random group priorities, now and then a NaN */
            prio[j] = rnd(&seed) % 7 ? (float)(rnd(&seed) % 100) : NAN;
        loom_metrics m;
        int64_t peaks[8];
        loom_error err = {0};
        int rc = plan_prio(loom_static_zb_v(), names[k], g, it % 2 ? prio : NULL, &m, peaks, &err);
        if (rc == LOOM_EINFEASIBLE) { /* only when one microbatch exceeds the cap */
            ck_assert(g->memory_cap_bytes > 0);
            ck_assert_ptr_nonnull(strstr(err.message, "one microbatch needs"));
            loom_graph_free(g);
            continue;
        }
        ck_assert_msg(rc == LOOM_OK, "%s", err.message);
        ck_assert_int_eq(m.cap_violations, 0);
        for (int r = 0; r < P; r++) {
            int64_t share = 0;
            for (int j = 0; j < M; j++) {
                int64_t sum = 0;
                for (int s = 0; s < P * V; s++)
                    if (map[s] == r)
                        sum += llround(act[s] * scale[j]);
                share = sum > share ? sum : share;
            }
            int64_t budget = (P * share + den[k] - 1) / den[k];
            ck_assert_int_le(peaks[r], budget > share ? budget : share);
        }
        loom_graph_free(g);
    }
}
END_TEST

START_TEST(params)
{
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    loom_mock_host_set_param(h, "variant", "v-third");
    const loom_interleaver_vtable *vt =
        (const loom_interleaver_vtable *)loom_static_zb_v()->role(LOOM_ROLE_INTERLEAVER);
    void *self = NULL;
    loom_error err = {0};
    int rc = vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h), NULL, &self, &err);
    ck_assert_int_ne(rc, LOOM_OK);
    ck_assert_ptr_nonnull(strstr(err.message, "variant"));
    ck_assert_int_eq(vt->wants_split_backward(NULL), 1);
    loom_mock_host_free(h);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("zb-v");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, oracle_zb_v);
    tcase_add_test(tc, family_relations);
    tcase_add_test(tc, memory_per_phase);
    tcase_add_test(tc, memory_cap);
    tcase_add_test(tc, per_phase_doc_example);
    tcase_add_test(tc, loop_interleavers_refuse_v);
    tcase_add_test(tc, random_problems);
    tcase_add_test(tc, params);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(suite());
}
