/* test_1f1b.c - the 1f1b interleaver against closed forms (makespan,
 * bubble ratio, peak activations), its exact per-rank order, split
 * backward, priorities, input errors, and deadlock-freedom over many
 * pipeline shapes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <loom/mock_host.h>
#include <loom/kits/graph.h>
#include <loom/mock_sim.h>
#include "testutil.h"
#include <loom/mock_interleaver.h>

/* Static twins of the plugins under test (linked into every suite). */
const loom_plugin_info *loom_static_1f1b(void);

/* Runs the 1f1b interleaver over g into a fresh schedule (*out). */
static int interleave(const loom_stage_graph *g, const float *prio,
                      loom_schedule **out, loom_error *err)
{
    return ik_interleave(loom_static_1f1b(), g, prio, out, err);
}

/* Interleaves, checks and simulates g with 1f1b. */
static void plan(const loom_stage_graph *g, const float *prio,
                 loom_metrics *m, int64_t *peak)
{
    ik_plan(loom_static_1f1b(), g, prio, m, peak);
}

START_TEST(makespan_p4_m8)
{
    loom_stage_graph *g = ik_st_graph(4, 8, 1, NULL, NULL, 0);
    loom_metrics m = LOOM_METRICS_INIT;
    int64_t peak[4];
    plan(g, NULL, &m, peak);
    /* (M + P - 1) (F + B) = 11 * 3 */
    ck_assert_double_eq_tol(m.makespan_ms, 33.0, 1e-9);
    /* bubble (P - 1) / (M + P - 1) */
    ck_assert_double_eq_tol(m.bubble_ratio, 3.0 / 11.0, 1e-12);
    /* peak activations on rank r: min(P - r, M) microbatches of 1 byte */
    for (int r = 0; r < 4; r++)
        ck_assert_int_eq(peak[r], 4 - r);
    loom_graph_free(g);
}
END_TEST

START_TEST(bubble_and_peak_closed_forms)
{
    for (int P = 1; P <= 6; P++)
        for (int M = 1; M <= 12; M++) {
            loom_stage_graph *g = ik_st_graph(P, M, 1, NULL, NULL, 0);
            loom_metrics m = LOOM_METRICS_INIT;
            int64_t peak[6];
            plan(g, NULL, &m, peak);
            ck_assert_double_eq_tol(m.makespan_ms, 3.0 * (M + P - 1), 1e-9);
            ck_assert_double_eq_tol(m.bubble_ratio,
                                    (double)(P - 1) / (M + P - 1), 1e-12);
            for (int r = 0; r < P; r++)
                ck_assert_int_eq(peak[r], (P - r) < M ? (P - r) : M);
            loom_graph_free(g);
        }
}
END_TEST

START_TEST(exact_order_rank0_and_last)
{
    loom_stage_graph *g = ik_st_graph(4, 8, 1, NULL, NULL, 0);
    loom_schedule *s = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(interleave(g, NULL, &s, &err), LOOM_OK);
    /* rank 0: 3 warm-up forwards, then (F, B) pairs, then 3 backwards */
    static const char want0[] = "F0F1F2F3B0F4B1F5B2F6B3F7B4B5B6B7";
    static const char want3[] = "F0B0F1B1F2B2F3B3F4B4F5B5F6B6F7B7";
    const char *want[4] = {want0, NULL, NULL, want3};
    for (int r = 0; r < 4; r += 3) {
        char got[64] = "";
        for (int i = s->rank_off[r]; i < s->rank_off[r + 1]; i++) {
            int v = s->order[i];
            char item[8];
            snprintf(item, sizeof item, "%c%d",
                     g->kind[v] == LOOM_STAGE_F ? 'F' : 'B', g->microbatch[v]);
            strcat(got, item);
        }
        ck_assert_str_eq(got, want[r]);
    }
    loom_schedule_free(s);
    loom_graph_free(g);
}
END_TEST

START_TEST(non_uniform_stage_times)
{
    /* t = [1,3,2,2] forward, B = 2F: per-stage F+B = [3,9,6,6]. GPipe-style
     * latency sum(t) + (M-1) max(t) = 24 + 9 (M-1) is only an upper bound
     * for 1F1B. The exact makespan: the bottleneck rank k = 1 starts at
     * F_0 = 1, is busy M (F_1 + B_1) = 9 M, idles once while microbatch 0
     * goes down and back (sum_{i>1}(F_i+B_i) - w_1 F_1 = 12 - 2*3 = 6),
     * and rank 0 then finishes with B_0 = 2: 9 M + 9 for M >= 3. */
    const double f[4] = {1, 3, 2, 2}, b[4] = {2, 6, 4, 4};
    for (int M = 3; M <= 10; M++) {
        loom_stage_graph *g = ik_st_graph(4, M, 1, f, b, 0);
        loom_metrics m = LOOM_METRICS_INIT;
        int64_t peak[4];
        plan(g, NULL, &m, peak);
        ck_assert_double_eq_tol(m.makespan_ms, 9.0 * M + 9.0, 1e-9);
        ck_assert(m.makespan_ms < 24.0 + 9.0 * (M - 1));
        loom_graph_free(g);
    }
    loom_stage_graph *g = ik_st_graph(4, 1, 1, f, b, 0);
    loom_metrics m = LOOM_METRICS_INIT;
    int64_t peak[4];
    plan(g, NULL, &m, peak);
    ck_assert_double_eq_tol(m.makespan_ms, 24.0, 1e-9); /* M = 1: sum(t) */
    loom_graph_free(g);
}
END_TEST

START_TEST(split_backward_i_then_w)
{
    /* B = 2 split as I = W = 1: the backward chain only waits on I, so
     * M (F + I + W) + (P - 1) (F + I) = 24 + 6 */
    loom_stage_graph *g = ik_st_graph(4, 8, 1, NULL, NULL, 1);
    loom_schedule *s = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(interleave(g, NULL, &s, &err), LOOM_OK);
    ik_check_complete(g, s);
    for (int r = 0; r < 4; r++)
        for (int i = s->rank_off[r]; i < s->rank_off[r + 1]; i++) {
            int v = s->order[i];
            ck_assert_int_ne(g->kind[v], LOOM_STAGE_B);
            if (g->kind[v] == LOOM_STAGE_I) {
                ck_assert_int_lt(i + 1, s->rank_off[r + 1]);
                ck_assert_int_eq(s->order[i + 1], g->pair_weight[g->pair[v]]);
            }
        }
    loom_metrics m = LOOM_METRICS_INIT;
    ck_assert_int_eq(loom_mock_simulate(g, s, &m, &err), LOOM_OK);
    ck_assert_double_eq_tol(m.makespan_ms, 30.0, 1e-9);
    loom_schedule_free(s);
    loom_graph_free(g);
}
END_TEST

START_TEST(priorities_order_microbatches)
{
    /* reversed priorities: the last microbatch goes first everywhere */
    loom_stage_graph *g = ik_st_graph(3, 5, 1, NULL, NULL, 0);
    float prio[5];
    for (int i = 0; i < 5; i++)
        prio[i] = (float)i;
    loom_schedule *s = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(interleave(g, prio, &s, &err), LOOM_OK);
    for (int r = 0; r < 3; r++) {
        int v = s->order[s->rank_off[r]];
        ck_assert_int_eq(g->kind[v], LOOM_STAGE_F);
        ck_assert_int_eq(g->microbatch[v], 4);
    }
    loom_metrics m = LOOM_METRICS_INIT;
    ck_assert_int_eq(loom_mock_simulate(g, s, &m, &err), LOOM_OK);
    ck_assert_double_eq_tol(m.makespan_ms, 3.0 * 7, 1e-9);
    loom_schedule_free(s);
    loom_graph_free(g);
}
END_TEST

START_TEST(priority_ties_zero_and_nan)
{
    /* higher first; equal priorities (and -0, +0) by microbatch; NaN last */
    loom_stage_graph *g = ik_st_graph(3, 8, 1, NULL, NULL, 0);
    const float prio[8] = {2.0f, 2.0f, -0.0f, 0.0f, NAN, 5.0f, 2.0f, -1.0f};
    loom_schedule *s = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(interleave(g, prio, &s, &err), LOOM_OK);
    char got[96] = "";
    for (int i = s->rank_off[2]; i < s->rank_off[3]; i++) {
        int v = s->order[i];
        char item[8];
        snprintf(item, sizeof item, "%c%d", g->kind[v] == LOOM_STAGE_F ? 'F' : 'B',
                 g->microbatch[v]);
        strcat(got, item);
    }
    ck_assert_str_eq(got, "F5B5F0B0F1B1F6B6F2B2F3B3F7B7F4B4");
    loom_schedule_free(s);
    loom_graph_free(g);
}
END_TEST

START_TEST(rejects_virtual_stages)
{
    loom_stage_graph *g = ik_st_graph(2, 4, 2, NULL, NULL, 0);
    loom_schedule *s = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(interleave(g, NULL, &s, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "one position per rank"));
    ck_assert_ptr_nonnull(strstr(err.message, "interleaved-1f1b"));
    loom_schedule_free(s);
    loom_graph_free(g);
}
END_TEST

START_TEST(rejects_several_flows)
{
    loom_stage_graph *g = ik_st_graph(2, 2, 1, NULL, NULL, 0);
    g->flow[g->n_stages - 1] = 1;
    loom_schedule *s = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(interleave(g, NULL, &s, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "single-flow"));
    ck_assert_ptr_nonnull(strstr(err.message, "flow 1"));
    loom_schedule_free(s);
    loom_graph_free(g);
}
END_TEST

START_TEST(deadlock_free_many_shapes)
{
    for (int P = 1; P <= 8; P++)
        for (int M = 1; M <= 2 * P + 3; M++)
            for (int split = 0; split < 2; split++) {
                loom_stage_graph *g = ik_st_graph(P, M, 1, NULL, NULL, split);
                float prio[32];
                for (int i = 0; i < M; i++) /* a scrambled priority order */
                    prio[i] = (float)((i * 7 + 3) % M);
                loom_metrics m = LOOM_METRICS_INIT;
                int64_t peak[8];
                plan(g, prio, &m, peak);
                ck_assert(m.makespan_ms > 0);
                for (int r = 0; r < P; r++)
                    ck_assert_int_eq(peak[r], (P - r) < M ? (P - r) : M);
                loom_graph_free(g);
            }
}
END_TEST

/* The 1f1b suite. */
static Suite *suite(void)
{
    Suite *s = suite_create("1f1b");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, makespan_p4_m8);
    tcase_add_test(tc, bubble_and_peak_closed_forms);
    tcase_add_test(tc, exact_order_rank0_and_last);
    tcase_add_test(tc, non_uniform_stage_times);
    tcase_add_test(tc, split_backward_i_then_w);
    tcase_add_test(tc, priorities_order_microbatches);
    tcase_add_test(tc, priority_ties_zero_and_nan);
    tcase_add_test(tc, rejects_virtual_stages);
    tcase_add_test(tc, rejects_several_flows);
    tcase_add_test(tc, deadlock_free_many_shapes);
    suite_add_tcase(s, tc);
    return s;
}

/* Runs the suite; exits non-zero when a check fails. */
int main(void)
{
    return loom_test_main(suite());
}
