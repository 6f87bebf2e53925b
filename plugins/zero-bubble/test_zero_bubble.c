/* test_zero_bubble.c - the zero-bubble interleaver: the ZB-H1 exactness
 * oracle (P=4, M=8, F=I=W=1, cap 4 -> 27 against 1F1B's 33), the closed
 * form 3M + P - 1 on uniform pipelines, ZB-H2 never slower than ZB-H1, the
 * memory cap, random graphs without deadlock, params. */
#include <loom/mock_host.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <loom/kits/graph.h>
#include <loom/mock_sim.h>
#include "testutil.h"

const loom_plugin_info *loom_static_zero_bubble(void);
const loom_plugin_info *loom_static_1f1b(void);

static double fwd[256], igr[256], wgr[256], act[256], scale[256];

/* A split stage-times problem: F, I, W per position, unit activations. */
static loom_stage_times times(int P, int M, int V, double f, double i,
                              double w)
{
    for (int k = 0; k < P * V; k++) {
        fwd[k] = f;
        igr[k] = i;
        wgr[k] = w;
        act[k] = 1;
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

typedef struct inst {
    loom_mock_host *h;
    const loom_interleaver_vtable *vt;
    void *self;
} inst;

/* An instance of a static interleaver; max_inflight < 0 leaves it unset. */
static inst open_inst(const loom_plugin_info *info, int max_inflight)
{
    inst in;
    loom_error err = {0};
    in.h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    if (max_inflight >= 0) {
        char buf[32];
        snprintf(buf, sizeof buf, "%d", max_inflight);
        loom_mock_host_set_param(in.h, "max_inflight", buf);
    }
    in.vt = (const loom_interleaver_vtable *)info->role(LOOM_ROLE_INTERLEAVER);
    ck_assert_ptr_nonnull(in.vt);
    int rc = in.vt->create(loom_mock_host_api(in.h), loom_mock_host_ctx(in.h),
                           NULL, &in.self, &err);
    ck_assert_msg(rc == LOOM_OK, "create: %s", err.message);
    return in;
}

static void close_inst(inst *in)
{
    in->vt->destroy(in->self);
    loom_mock_host_free(in->h);
}

/* Interleaves and simulates g; asserts both succeed. */
static void run(inst *in, const loom_stage_graph *g, loom_metrics *m,
                int64_t *peaks)
{
    loom_error err = {0};
    loom_schedule *sc = loom_schedule_new(g->n_ranks, g->n_stages);
    int rc = in->vt->interleave(in->self, g, NULL, sc, &err);
    ck_assert_msg(rc == LOOM_OK, "interleave: %s", err.message);
    loom_metrics_init(m);
    m->peak_bytes = peaks;
    rc = loom_mock_simulate(g, sc, m, &err);
    ck_assert_msg(rc == LOOM_OK, "simulate: %s", err.message);
    loom_schedule_free(sc);
}

START_TEST(oracle_zb_h1)
{
    /* examples/stage-times/oracle-zb.json: ZB-H1's bubble is
     * (P-1)(F + I - W) = 3, so 3M + 3 = 27; 1F1B needs (M+P-1)(F+I+W) = 33. */
    loom_stage_times st = times(4, 8, 1, 1, 1, 1);
    st.memory_cap_bytes = 4;
    loom_stage_graph *g = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_graph_from_stage_times(&st, 1, &g, &err), LOOM_OK);
    inst zb = open_inst(loom_static_zero_bubble(), -1);
    ck_assert_int_eq(zb.vt->wants_split_backward(zb.self), 1);
    loom_metrics m = LOOM_METRICS_INIT;
    int64_t peaks[4];
    run(&zb, g, &m, peaks);
    ck_assert_double_eq_tol(m.makespan_ms, 27.0, 1e-9);
    ck_assert_int_eq(m.cap_violations, 0);
    ck_assert_int_le(m.max_peak_bytes, 4);

    /* 1F1B with the backward as one B = I + W stage. */
    loom_stage_graph *fused = NULL;
    double b[4] = {2, 2, 2, 2};
    st.split_backward = 0;
    st.backward_ms = b;
    ck_assert_int_eq(loom_graph_from_stage_times(&st, 0, &fused, &err), LOOM_OK);
    inst ob = open_inst(loom_static_1f1b(), -1);
    run(&ob, fused, &m, peaks);
    ck_assert_double_eq_tol(m.makespan_ms, 33.0, 1e-9);
    close_inst(&ob);
    close_inst(&zb);
    loom_graph_free(fused);
    loom_graph_free(g);
}
END_TEST

START_TEST(uniform_closed_form)
{
    /* F = I = W = 1, M >= P, limit P: the last rank starts at P - 1 and is
     * never idle again, so 3M + P - 1 (the lower bound). */
    static const int cases[][2] = {{2, 2}, {2, 4}, {3, 6}, {4, 4}, {4, 12},
                                   {6, 9}, {8, 16}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int P = cases[c][0], M = cases[c][1];
        loom_stage_times st = times(P, M, 1, 1, 1, 1);
        loom_stage_graph *g = NULL;
        loom_error err = {0};
        ck_assert_int_eq(loom_graph_from_stage_times(&st, 1, &g, &err), LOOM_OK);
        inst h1 = open_inst(loom_static_zero_bubble(), P);
        inst h2 = open_inst(loom_static_zero_bubble(), 2 * P);
        inst dflt = open_inst(loom_static_zero_bubble(), 0); /* no cap: P */
        loom_metrics m1 = LOOM_METRICS_INIT, m2 = LOOM_METRICS_INIT, m0 = LOOM_METRICS_INIT;
        int64_t p1[8], p2[8], p0[8];
        run(&h1, g, &m1, p1);
        run(&h2, g, &m2, p2);
        run(&dflt, g, &m0, p0);
        ck_assert_double_eq_tol(m1.makespan_ms, 3.0 * M + P - 1, 1e-9);
        ck_assert_double_le(m2.makespan_ms, m1.makespan_ms);
        ck_assert_double_eq_tol(m0.makespan_ms, m1.makespan_ms, 1e-9);
        for (int r = 0; r < P; r++) {
            ck_assert_int_le(p1[r], P);
            ck_assert_int_le(p2[r], 2 * P);
        }
        close_inst(&dflt);
        close_inst(&h2);
        close_inst(&h1);
        loom_graph_free(g);
    }
}
END_TEST

START_TEST(h2_not_slower_than_h1)
{
    /* Uneven F / I / W times: ZB-H2's doubled limit never hurts here. */
    static const double t[][3] = {{1, 1, 1}, {1, 2, 1}, {2, 1, 1}, {1, 1, 2},
                                  {1, 1.5, 0.5}, {2, 3, 1}};
    for (size_t c = 0; c < sizeof t / sizeof t[0]; c++) {
        for (int P = 2; P <= 6; P += 2) {
            int M = 3 * P;
            loom_stage_times st = times(P, M, 1, t[c][0], t[c][1], t[c][2]);
            loom_stage_graph *g = NULL;
            loom_error err = {0};
            ck_assert_int_eq(loom_graph_from_stage_times(&st, 1, &g, &err), LOOM_OK);
            inst h1 = open_inst(loom_static_zero_bubble(), P);
            inst h2 = open_inst(loom_static_zero_bubble(), 2 * P);
            loom_metrics m1 = LOOM_METRICS_INIT, m2 = LOOM_METRICS_INIT;
            int64_t pk[8];
            run(&h1, g, &m1, pk);
            run(&h2, g, &m2, pk);
            ck_assert_msg(m2.makespan_ms <= m1.makespan_ms + 1e-9,
                          "F/I/W %g/%g/%g P=%d: H2 %g > H1 %g", t[c][0],
                          t[c][1], t[c][2], P, m2.makespan_ms, m1.makespan_ms);
            /* Bounded below by the busiest rank's work. */
            double work = M * (t[c][0] + t[c][1] + t[c][2]);
            ck_assert_double_ge(m2.makespan_ms, work);
            close_inst(&h2);
            close_inst(&h1);
            loom_graph_free(g);
        }
    }
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

START_TEST(random_graphs_respect_cap)
{
    uint64_t seed = 3;
    inst zb = open_inst(loom_static_zero_bubble(), -1);
    int refused = 0, capped = 0;
    for (int it = 0; it < 200; it++) {
        int P = 1 + (int)(rnd(&seed) % 6), V = 1 + (int)(rnd(&seed) % 3);
        int M = 1 + (int)(rnd(&seed) % 12);
        loom_stage_times st = times(P, M, V, 1, 1, 1);
        for (int k = 0; k < P * V; k++) {
            fwd[k] = 0.5 + (double)(rnd(&seed) % 8) / 4;
            igr[k] = 0.5 + (double)(rnd(&seed) % 8) / 4;
            wgr[k] = 0.25 + (double)(rnd(&seed) % 8) / 4;
            act[k] = 1 + (double)(rnd(&seed) % 3);
        }
        for (int k = 0; k < M; k++)
            scale[k] = 0.5 * (double)(1 + rnd(&seed) % 6);
        st.p2p_ms = (double)(rnd(&seed) % 3) / 4;
        st.memory_cap_bytes = (rnd(&seed) % 3) ? (double)(3 + rnd(&seed) % 10) : 0;
        loom_stage_graph *g = NULL;
        loom_error err = {0};
        ck_assert_int_eq(loom_graph_from_stage_times(&st, 1, &g, &err), LOOM_OK);
        loom_metrics m = LOOM_METRICS_INIT;
        int64_t peaks[8];
        /* the largest bytes one microbatch's forwards hold on one rank:
         * no order fits a cap below it, every order may start from it */
        int64_t most = 0;
        for (int r = 0; r < P; r++)
            for (int k = 0; k < M; k++) {
                int64_t b = 0;
                for (int s = 0; s < P * V; s++)
                    if (loom_placement_rank(LOOM_PLACEMENT_LOOP, s, P) == r)
                        b += llround(act[s] * scale[k]);
                most = b > most ? b : most;
            }
        if (g->memory_cap_bytes > 0 && (double)most > g->memory_cap_bytes) {
            /* refused before ordering, with the reason */
            loom_schedule *sc = loom_schedule_new(g->n_ranks, g->n_stages);
            ck_assert_int_eq(zb.vt->interleave(zb.self, g, NULL, sc, &err), LOOM_EINFEASIBLE);
            ck_assert_msg(strstr(err.message, "cannot run within the memory cap") != NULL, "%s",
                          err.message);
            loom_schedule_free(sc);
            refused++;
        } else {
            run(&zb, g, &m, peaks); /* every stage once, no deadlock */
            if (g->memory_cap_bytes > 0) { /* the cap is never exceeded */
                ck_assert_int_eq(m.cap_violations, 0);
                capped++;
            }
        }
        loom_graph_free(g);
    }
    close_inst(&zb);
    ck_assert_int_gt(refused, 0); /* both sides of the rule were exercised */
    ck_assert_int_gt(capped, 0);
}
END_TEST

START_TEST(v_placement_within_the_cap)
{
    /* examples/stage-times/oracle-zbv.json (P 4, M 8, V 2 on the V, one
     * byte per forward): rank 0 holds chunks 0 and 7, so one microbatch
     * needs 2 bytes there. Every cap from 2P = 8 down to 2 is kept on
     * every rank; below 2 the interleaver refuses, naming the rank */
    int32_t vrank[8];
    for (int s = 0; s < 8; s++)
        vrank[s] = loom_placement_rank(LOOM_PLACEMENT_V, s, 4);
    inst zb = open_inst(loom_static_zero_bubble(), -1);
    for (int cap = 8; cap >= 1; cap--) {
        loom_stage_times st = times(4, 8, 2, 0.5, 0.5, 0.5);
        st.stage_rank = vrank;
        st.memory_cap_bytes = cap;
        loom_stage_graph *g = NULL;
        loom_error err = {0};
        ck_assert_int_eq(loom_graph_from_stage_times(&st, 1, &g, &err), LOOM_OK);
        if (cap >= 2) {
            loom_metrics m = LOOM_METRICS_INIT;
            int64_t peaks[4];
            run(&zb, g, &m, peaks);
            ck_assert_int_eq(m.cap_violations, 0);
            for (int r = 0; r < 4; r++)
                ck_assert_int_le(peaks[r], cap);
        } else {
            loom_schedule *sc = loom_schedule_new(g->n_ranks, g->n_stages);
            ck_assert_int_eq(zb.vt->interleave(zb.self, g, NULL, sc, &err), LOOM_EINFEASIBLE);
            ck_assert_str_eq(err.message,
                             "zero-bubble: rank 0 cannot run within the memory cap of 1 bytes "
                             "in any order: microbatch 0's forwards through its chunks there "
                             "hold 2 bytes together, with 0 static; raise the cap or add a "
                             "memory tuner");
            loom_schedule_free(sc);
        }
        loom_graph_free(g);
    }
    close_inst(&zb);
}
END_TEST

START_TEST(unsplit_graph_and_params)
{
    /* Given B stages (no split), it still schedules: F and B alternate
     * under the in-flight limit, like 1F1B: (M + P - 1)(F + B). */
    loom_stage_times st = times(4, 8, 1, 1, 1, 1);
    st.split_backward = 0;
    double b[4] = {2, 2, 2, 2};
    st.backward_ms = b;
    loom_stage_graph *g = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_graph_from_stage_times(&st, 0, &g, &err), LOOM_OK);
    inst zb = open_inst(loom_static_zero_bubble(), 4);
    loom_metrics m = LOOM_METRICS_INIT;
    int64_t peaks[4];
    run(&zb, g, &m, peaks);
    ck_assert_double_eq_tol(m.makespan_ms, 33.0, 1e-9);
    close_inst(&zb);
    loom_graph_free(g);

    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    loom_mock_host_set_param(h, "max_inflight", "-2");
    const loom_interleaver_vtable *vt = (const loom_interleaver_vtable *)
        loom_static_zero_bubble()->role(LOOM_ROLE_INTERLEAVER);
    void *self = NULL;
    ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h),
                                NULL, &self, &err),
                     LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "max_inflight"));
    ck_assert_ptr_nonnull(strstr(err.message, "found -2"));
    loom_mock_host_set_param(h, "max_inflight", "many");
    ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h),
                                NULL, &self, &err),
                     LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "expected an integer"));
    loom_mock_host_free(h);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("zero-bubble");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, oracle_zb_h1);
    tcase_add_test(tc, uniform_closed_form);
    tcase_add_test(tc, h2_not_slower_than_h1);
    tcase_add_test(tc, random_graphs_respect_cap);
    tcase_add_test(tc, v_placement_within_the_cap);
    tcase_add_test(tc, unsplit_graph_and_params);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(suite());
}
