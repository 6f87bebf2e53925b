/* test_simulator.c - the core simulator on stage-times graphs: closed-form
 * makespans, memory peaks, bubble ratio, and the errors it must report. */
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "engine_api.h"

static double fwd[64], bwd[64], act[64], scale[64];

/* A uniform stage-times problem: P ranks, M microbatches, V chunks. */
static loom_stage_times uniform(int P, int M, int V, double f, double b)
{
    for (int i = 0; i < P * V; i++) {
        fwd[i] = f;
        bwd[i] = b;
        act[i] = 1;
    }
    for (int i = 0; i < M; i++)
        scale[i] = 1;
    loom_stage_times st = {0};
    st.ranks = P;
    st.microbatches = M;
    st.virtual_stages = V;
    st.forward_ms = fwd;
    st.backward_ms = bwd;
    st.activation_bytes = act;
    st.microbatch_scale = scale;
    return st;
}

/* Stage id of (mb, position, kind) in a non-split stage-times graph. */
static int32_t sid(int P, int V, int mb, int s, int backward)
{
    int S = P * V;
    return mb * 2 * S + (backward ? S + (S - 1 - s) : s);
}

/* Megatron 1F1B order for V = 1, written independently of the plugin. */
static loom_schedule *one_f_one_b(int P, int M)
{
    loom_schedule *sc = loom_schedule_new(P, 2 * P * M);
    int k = 0;
    for (int r = 0; r < P; r++) {
        sc->rank_off[r] = k;
        int warm = P - r - 1 < M ? P - r - 1 : M, f = 0, b = 0;
        for (; f < warm; f++)
            sc->order[k++] = sid(P, 1, f, r, 0);
        while (f < M) {
            sc->order[k++] = sid(P, 1, f++, r, 0);
            sc->order[k++] = sid(P, 1, b++, r, 1);
        }
        while (b < M)
            sc->order[k++] = sid(P, 1, b++, r, 1);
    }
    sc->rank_off[P] = k;
    return sc;
}

static loom_schedule *gpipe(int P, int M)
{
    loom_schedule *sc = loom_schedule_new(P, 2 * P * M);
    int k = 0;
    for (int r = 0; r < P; r++) {
        sc->rank_off[r] = k;
        for (int mb = 0; mb < M; mb++)
            sc->order[k++] = sid(P, 1, mb, r, 0);
        for (int mb = 0; mb < M; mb++)
            sc->order[k++] = sid(P, 1, mb, r, 1);
    }
    sc->rank_off[P] = k;
    return sc;
}

START_TEST(test_1f1b_closed_form)
{
    loom_stage_times st = uniform(4, 8, 1, 1, 2);
    loom_stage_graph *g = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_graph_from_stage_times(&st, 0, &g, &err), LOOM_OK);
    loom_schedule *sc = one_f_one_b(4, 8);
    int64_t peak[4];
    loom_metrics m = LOOM_METRICS_INIT;
    m.peak_bytes = peak;
    ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_OK);
    ck_assert_double_eq_tol(m.makespan_ms, 33.0, 1e-9);
    ck_assert_double_eq_tol(m.bubble_ratio, 3.0 / 11.0, 1e-12);
    for (int r = 0; r < 4; r++)
        ck_assert_int_eq(peak[r], 4 - r); /* min(P - r, M) */
    loom_schedule_free(sc);

    sc = gpipe(4, 8);
    ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_OK);
    ck_assert_double_eq_tol(m.makespan_ms, 33.0, 1e-9);
    for (int r = 0; r < 4; r++)
        ck_assert_int_eq(peak[r], 8);
    loom_schedule_free(sc);
    loom_graph_free(g);
}
END_TEST

START_TEST(test_p2p_and_scale)
{
    /* P=2, M=1: F0 -> F1 -> B1 -> B0 with 0.5 ms per hop, scale 2. */
    loom_stage_times st = uniform(2, 1, 1, 1, 2);
    scale[0] = 2;
    st.p2p_ms = 0.5;
    loom_stage_graph *g = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_graph_from_stage_times(&st, 0, &g, &err), LOOM_OK);
    loom_schedule *sc = one_f_one_b(2, 1);
    double start[4], end[4];
    loom_metrics m = LOOM_METRICS_INIT;
    m.start_ms = start;
    m.end_ms = end;
    ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_OK);
    /* 2 + 0.5 + 2 + 4 + 0.5 + 4 */
    ck_assert_double_eq_tol(m.makespan_ms, 13.0, 1e-9);
    ck_assert_double_eq_tol(start[sid(2, 1, 0, 1, 0)], 2.5, 1e-12);
    loom_schedule_free(sc);
    loom_graph_free(g);
}
END_TEST

START_TEST(test_deadlock_names_stages)
{
    loom_stage_times st = uniform(2, 2, 1, 1, 2);
    loom_stage_graph *g = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_graph_from_stage_times(&st, 0, &g, &err), LOOM_OK);
    loom_schedule *sc = gpipe(2, 2);
    /* rank 0 runs B0 before its own F0: nothing can start on rank 0. */
    int32_t tmp = sc->order[0];
    sc->order[0] = sc->order[2];
    sc->order[2] = tmp;
    loom_metrics m = LOOM_METRICS_INIT;
    ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_EDEADLOCK);
    ck_assert_ptr_nonnull(strstr(err.message, "deadlock"));
    ck_assert_ptr_nonnull(strstr(err.message, "rank 0 blocked at B(mb 0.0"));
    loom_schedule_free(sc);
    loom_graph_free(g);
}
END_TEST

START_TEST(test_invalid_schedules)
{
    loom_stage_times st = uniform(2, 2, 1, 1, 2);
    loom_stage_graph *g = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_graph_from_stage_times(&st, 0, &g, &err), LOOM_OK);
    loom_schedule *sc = gpipe(2, 2);
    loom_metrics m = LOOM_METRICS_INIT;
    sc->order[1] = sc->order[0];
    ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "scheduled twice"));
    loom_schedule_free(sc);
    sc = gpipe(2, 2);
    int32_t tmp = sc->order[0];
    sc->order[0] = sc->order[4];
    sc->order[4] = tmp;
    ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "belongs to rank"));
    loom_schedule_free(sc);
    loom_graph_free(g);
}
END_TEST

START_TEST(test_alpa_formula)
{
    /* Uniform microbatches, stage times t_i = F_i + B_i: 1F1B latency is
     * sum t_i + (M - 1) * max t_i when the slowest stage is last. */
    loom_stage_times st = uniform(4, 6, 1, 1, 2);
    double f[4] = {1, 2, 1.5, 3};
    for (int i = 0; i < 4; i++) {
        fwd[i] = f[i];
        bwd[i] = 2 * f[i];
    }
    loom_stage_graph *g = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_graph_from_stage_times(&st, 0, &g, &err), LOOM_OK);
    loom_schedule *sc = one_f_one_b(4, 6);
    loom_metrics m = LOOM_METRICS_INIT;
    ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_OK);
    double sum = 0, mx = 0;
    for (int i = 0; i < 4; i++) {
        sum += 3 * f[i];
        mx = 3 * f[i] > mx ? 3 * f[i] : mx;
    }
    ck_assert_double_eq_tol(m.makespan_ms, sum + 5 * mx, 1e-9);
    loom_schedule_free(sc);
    loom_graph_free(g);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("simulator");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_1f1b_closed_form);
    tcase_add_test(tc, test_p2p_and_scale);
    tcase_add_test(tc, test_deadlock_names_stages);
    tcase_add_test(tc, test_invalid_schedules);
    tcase_add_test(tc, test_alpa_formula);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(suite());
}
