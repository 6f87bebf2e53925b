/* test_interleaved_1f1b.c - Megatron's interleaved 1F1B against closed
 * forms (makespans for V = 2 and 4, the general (M V + P - 1)(f + b)),
 * its exact chunk/microbatch sequence, V = 1 equal to 1f1b order for order,
 * the M % P requirement, placement errors, split backward, and
 * deadlock-freedom over many (P, M, V). */
#include <stdlib.h>
#include <string.h>
#include <loom/mock_host.h>
#include <loom/kits/graph.h>
#include <loom/mock_sim.h>
#include "testutil.h"
#include <loom/mock_interleaver.h>

/* Static twins of the plugins under test (linked into every suite). */
const loom_plugin_info *loom_static_interleaved_1f1b(void);
const loom_plugin_info *loom_static_1f1b(void);

/* A stage-times graph of P ranks, V chunks, M microbatches with f ms
 * forward and b ms backward on every stage. */
static loom_stage_graph *st_graph(int P, int M, int V, double f, double b,
                                  int split)
{
    double fw[IK_MAX_POS], bw[IK_MAX_POS];
    ck_assert_int_le(P * V, IK_MAX_POS);
    for (int s = 0; s < P * V; s++) {
        fw[s] = f;
        bw[s] = b;
    }
    return ik_st_graph(P, M, V, fw, bw, split);
}

/* Runs interleaved-1f1b over g. */
static int interleave(const loom_stage_graph *g, const float *prio,
                      loom_schedule **out, loom_error *err)
{
    return ik_interleave(loom_static_interleaved_1f1b(), g, prio, out, err);
}

/* Interleaves, checks and simulates g; returns the makespan in ms. */
static double makespan(const loom_stage_graph *g, const float *prio)
{
    loom_metrics m = LOOM_METRICS_INIT;
    ik_plan(loom_static_interleaved_1f1b(), g, prio, &m, NULL);
    return m.makespan_ms;
}

START_TEST(makespan_v2_and_v4)
{
    /* P = 4, M = 8, each rank's work per microbatch F = 1, B = 2 split
     * over V chunks: (M V + P - 1)(F + B) / V */
    loom_stage_graph *g = st_graph(4, 8, 2, 0.5, 1.0, 0);
    ck_assert_double_eq_tol(makespan(g, NULL), 28.5, 1e-9);
    loom_graph_free(g);
    g = st_graph(4, 8, 4, 0.25, 0.5, 0);
    ck_assert_double_eq_tol(makespan(g, NULL), 26.25, 1e-9);
    loom_graph_free(g);
    g = st_graph(4, 8, 1, 1.0, 2.0, 0);
    ck_assert_double_eq_tol(makespan(g, NULL), 33.0, 1e-9);
    loom_graph_free(g);
}
END_TEST

START_TEST(closed_form_many_shapes)
{
    for (int P = 1; P <= 6; P++)
        for (int V = 1; V <= 4; V++)
            for (int M = P; M <= 4 * P; M += P) {
                loom_stage_graph *g = st_graph(P, M, V, 1.0, 2.0, 0);
                ck_assert_double_eq_tol(makespan(g, NULL),
                                        3.0 * (M * V + P - 1), 1e-9);
                loom_graph_free(g);
            }
}
END_TEST

START_TEST(exact_sequence_rank0)
{
    /* P = 2, V = 2, M = 4 on rank 0: warm-up 2 (P-1) + (V-1) P = 4
     * forwards: chunks 0,0,1,1 of microbatches 0,1,0,1; backwards start
     * with chunk 1 (the last virtual stage) */
    loom_stage_graph *g = st_graph(2, 4, 2, 0.5, 1.0, 0);
    loom_schedule *s = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(interleave(g, NULL, &s, &err), LOOM_OK);
    char got[128] = "";
    for (int i = s->rank_off[0]; i < s->rank_off[1]; i++) {
        int v = s->order[i];
        char item[16];
        snprintf(item, sizeof item, "%c%d.%d ",
                 g->kind[v] == LOOM_STAGE_F ? 'F' : 'B', g->microbatch[v],
                 g->chunk[v]);
        strcat(got, item);
    }
    ck_assert_str_eq(got, "F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 "
                          "B0.0 F3.1 B1.0 B2.1 B3.1 B2.0 B3.0 ");
    loom_schedule_free(s);
    loom_graph_free(g);
}
END_TEST

START_TEST(v1_equals_1f1b)
{
    for (int P = 1; P <= 6; P++)
        for (int M = 1; M <= 2 * P + 2; M++)
            for (int split = 0; split < 2; split++) {
                loom_stage_graph *g = st_graph(P, M, 1, 1.0, 2.0, split);
                float prio[16];
                for (int i = 0; i < M; i++)
                    prio[i] = (float)((i * 5 + 1) % M);
                loom_schedule *a = NULL, *b = NULL;
                loom_error err = {0, ""};
                ck_assert_int_eq(interleave(g, prio, &a, &err), LOOM_OK);
                ck_assert_int_eq(ik_interleave(loom_static_1f1b(), g, prio,
                                                 &b, &err), LOOM_OK);
                ck_assert_int_eq(memcmp(a->rank_off, b->rank_off,
                                        (size_t)(P + 1) * sizeof(int32_t)), 0);
                ck_assert_int_eq(memcmp(a->order, b->order,
                                        (size_t)g->n_stages * sizeof(int32_t)),
                                 0);
                loom_schedule_free(a);
                loom_schedule_free(b);
                loom_graph_free(g);
            }
}
END_TEST

START_TEST(requires_m_multiple_of_p)
{
    loom_stage_graph *g = st_graph(4, 6, 2, 0.5, 1.0, 0);
    loom_schedule *s = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(interleave(g, NULL, &s, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "6 microbatches"));
    ck_assert_ptr_nonnull(strstr(err.message, "multiple of the 4"));
    ck_assert_ptr_nonnull(strstr(err.message, "M % P == 0"));
    loom_schedule_free(s);
    loom_graph_free(g);
}
END_TEST

START_TEST(rejects_other_placement_and_flows)
{
    loom_stage_graph *g = st_graph(2, 2, 2, 0.5, 1.0, 0);
    g->chunk[0] = 1; /* position 0 claims to be chunk 1 */
    loom_schedule *s = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(interleave(g, NULL, &s, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "position 0 on rank 0 chunk 1"));
    loom_schedule_free(s);
    g->chunk[0] = 0;
    g->flow[3] = 2;
    ck_assert_int_eq(interleave(g, NULL, &s, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "single-flow"));
    loom_schedule_free(s);
    loom_graph_free(g);
}
END_TEST

START_TEST(split_backward_i_then_w)
{
    loom_stage_graph *g = st_graph(4, 8, 2, 0.5, 1.0, 1);
    loom_schedule *s = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(interleave(g, NULL, &s, &err), LOOM_OK);
    ik_check_complete(g, s);
    for (int r = 0; r < 4; r++)
        for (int i = s->rank_off[r]; i < s->rank_off[r + 1]; i++) {
            int v = s->order[i];
            ck_assert_int_ne(g->kind[v], LOOM_STAGE_B);
            if (g->kind[v] == LOOM_STAGE_I)
                ck_assert_int_eq(s->order[i + 1], g->pair_weight[g->pair[v]]);
        }
    loom_metrics m = LOOM_METRICS_INIT;
    ck_assert_int_eq(loom_mock_simulate(g, s, &m, &err), LOOM_OK);
    /* never slower than with a fused backward */
    ck_assert(m.makespan_ms <= 28.5 + 1e-9);
    loom_schedule_free(s);
    loom_graph_free(g);
}
END_TEST

START_TEST(deadlock_free_many_shapes)
{
    for (int P = 1; P <= 6; P++)
        for (int V = 1; V <= 4; V++)
            for (int M = 1; M <= 3 * P; M++)
                for (int split = 0; split < 2; split++) {
                    if (V > 1 && M % P != 0)
                        continue;
                    loom_stage_graph *g = st_graph(P, M, V, 1.0, 2.0, split);
                    float prio[32];
                    for (int i = 0; i < M; i++)
                        prio[i] = (float)((i * 7 + 2) % M);
                    ck_assert(makespan(g, prio) > 0);
                    loom_graph_free(g);
                }
}
END_TEST

/* The interleaved-1f1b suite. */
static Suite *suite(void)
{
    Suite *s = suite_create("interleaved-1f1b");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, makespan_v2_and_v4);
    tcase_add_test(tc, closed_form_many_shapes);
    tcase_add_test(tc, exact_sequence_rank0);
    tcase_add_test(tc, v1_equals_1f1b);
    tcase_add_test(tc, requires_m_multiple_of_p);
    tcase_add_test(tc, rejects_other_placement_and_flows);
    tcase_add_test(tc, split_backward_i_then_w);
    tcase_add_test(tc, deadlock_free_many_shapes);
    suite_add_tcase(s, tc);
    return s;
}

/* Runs the suite; exits non-zero when a check fails. */
int main(void)
{
    return loom_test_main(suite());
}
