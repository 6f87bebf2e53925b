/* test_gpipe.c - the gpipe interleaver against closed forms (makespan with
 * and without virtual stages, Alpa's latency formula, peak activations),
 * its exact order, split backward, a two-flow graph whose input flow has
 * the higher index, and deadlock-freedom over many pipeline shapes. */
#include <stdlib.h>
#include <string.h>
#include <loom/mock_host.h>
#include <loom/kits/graph.h>
#include <loom/mock_sim.h>
#include "testutil.h"
#include <loom/mock_interleaver.h>

/* Static twins of the plugins under test (linked into every suite). */
const loom_plugin_info *loom_static_gpipe(void);

/* Id of stage (flow f, position p, microbatch mb, backward?) in the
 * two-flow graph below: per microbatch 2 flows x P positions x {F, B}. */
static int32_t tf_id(int P, int f, int p, int mb, int back)
{
    return ((mb * 2 + f) * 2 + back) * P + p;
}

/* A two-flow graph: flow 1 (an encoder, P positions on ranks 0..P-1)
 * feeds flow 0 (a backbone, P positions on ranks 0..P-1); the input flow
 * has the higher index on purpose. F = 1 ms, B = 2 ms, 1 byte each. */
static loom_stage_graph *two_flow_graph(int P, int M)
{
    int32_t n = 4 * P * M;
    loom_graph_builder *b = loom_graph_builder_new(P);
    ck_assert_ptr_nonnull(b);
    for (int32_t v = 0; v < n; v++) {
        int p = v % P, back = (v / P) % 2, f = (v / (2 * P)) % 2;
        int mb = v / (4 * P);
        loom_graph_stage st;
        memset(&st, 0, sizeof st);
        st.rank = p;
        st.kind = back ? LOOM_STAGE_B : LOOM_STAGE_F;
        st.module = f;
        st.flow = f;
        st.position = p;
        st.microbatch = mb;
        st.group = mb * 2 + f;
        st.pair = (mb * 2 + f) * P + p;
        ck_assert_int_eq(loom_graph_builder_add_stage(b, &st), v);
        if (!back) {
            if (p > 0)
                loom_graph_builder_add_edge(b, tf_id(P, f, p - 1, mb, 0), v, 0);
            else if (f == 0)
                loom_graph_builder_add_edge(b, tf_id(P, 1, P - 1, mb, 0), v, 0);
        } else {
            if (p < P - 1)
                loom_graph_builder_add_edge(b, tf_id(P, f, p + 1, mb, 1), v, 0);
            else
                loom_graph_builder_add_edge(b, tf_id(P, f, P - 1, mb, 0), v, 0);
            if (p == P - 1 && f == 1)
                loom_graph_builder_add_edge(b, tf_id(P, 0, 0, mb, 1), v, 0);
        }
    }
    for (int32_t pr = 0; pr < 2 * P * M; pr++) { /* one layer entry per pair */
        loom_policy_option o[LOOM_POLICY_COUNT];
        memset(o, 0, sizeof o);
        for (int pol = 0; pol < LOOM_POLICY_COUNT; pol++) {
            o[pol].forward_ms = 1.0;
            o[pol].backward_ms = 2.0;
            o[pol].activation_bytes = 1;
        }
        loom_graph_builder_add_entry(b, pr, o);
    }
    loom_stage_graph *g = NULL;
    loom_error err = {0, ""};
    ck_assert_msg(loom_graph_builder_finish(b, &g, &err) == LOOM_OK, "%s", err.message);
    loom_graph_builder_free(b);
    loom_graph_apply_policies(g);
    ck_assert_msg(loom_graph_check(g, &err) == LOOM_OK, "%s", err.message);
    return g;
}

/* Runs the gpipe interleaver over g into a fresh schedule (*out); gpipe
 * provides no other role. */
static int interleave(const loom_stage_graph *g, const float *prio,
                      loom_schedule **out, loom_error *err)
{
    ck_assert_ptr_null(loom_static_gpipe()->role(LOOM_ROLE_RANKER));
    return ik_interleave(loom_static_gpipe(), g, prio, out, err);
}

/* Interleaves, checks and simulates g with gpipe. */
static void plan(const loom_stage_graph *g, const float *prio,
                 loom_metrics *m, int64_t *peak)
{
    ik_plan(loom_static_gpipe(), g, prio, m, peak);
}

START_TEST(makespan_p4_m8)
{
    loom_stage_graph *g = ik_st_graph(4, 8, 1, NULL, NULL, 0);
    loom_metrics m = LOOM_METRICS_INIT;
    int64_t peak[4];
    plan(g, NULL, &m, peak);
    ck_assert_double_eq_tol(m.makespan_ms, 33.0, 1e-9); /* (M+P-1)(F+B) */
    ck_assert_double_eq_tol(m.bubble_ratio, 3.0 / 11.0, 1e-12);
    for (int r = 0; r < 4; r++)
        ck_assert_int_eq(peak[r], 8); /* every microbatch held at once */
    loom_graph_free(g);
}
END_TEST

START_TEST(exact_order)
{
    loom_stage_graph *g = ik_st_graph(3, 4, 1, NULL, NULL, 0);
    loom_schedule *s = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(interleave(g, NULL, &s, &err), LOOM_OK);
    for (int r = 0; r < 3; r++) {
        char got[64] = "";
        for (int i = s->rank_off[r]; i < s->rank_off[r + 1]; i++) {
            int v = s->order[i];
            char item[8];
            snprintf(item, sizeof item, "%c%d",
                     g->kind[v] == LOOM_STAGE_F ? 'F' : 'B', g->microbatch[v]);
            strcat(got, item);
        }
        ck_assert_str_eq(got, "F0F1F2F3B0B1B2B3");
    }
    loom_schedule_free(s);
    loom_graph_free(g);
}
END_TEST

START_TEST(alpa_latency_formula)
{
    /* per-stage F = [1,3,2,2], B = 2F, so F+B = [3,9,6,6]: GPipe's latency
     * is exactly sum(t) + (M - 1) max(t) = 24 + 9 (M - 1) */
    const double f[4] = {1, 3, 2, 2}, b[4] = {2, 6, 4, 4};
    for (int M = 1; M <= 8; M++) {
        loom_stage_graph *g = ik_st_graph(4, M, 1, f, b, 0);
        loom_metrics m = LOOM_METRICS_INIT;
        int64_t peak[4];
        plan(g, NULL, &m, peak);
        ck_assert_double_eq_tol(m.makespan_ms, 24.0 + 9.0 * (M - 1), 1e-9);
        loom_graph_free(g);
    }
}
END_TEST

START_TEST(virtual_stages_closed_form)
{
    /* chunk-major GPipe over V chunks: (M V + P - 1)(f + b) for M >= P,
     * with all M V activations held at the peak */
    for (int P = 1; P <= 5; P++)
        for (int V = 1; V <= 3; V++)
            for (int M = P; M <= 3 * P; M++) {
                loom_stage_graph *g = ik_st_graph(P, M, V, NULL, NULL, 0);
                loom_metrics m = LOOM_METRICS_INIT;
                int64_t peak[5];
                plan(g, NULL, &m, peak);
                ck_assert_double_eq_tol(m.makespan_ms, 3.0 * (M * V + P - 1),
                                        1e-9);
                for (int r = 0; r < P; r++)
                    ck_assert_int_eq(peak[r], M * V);
                loom_graph_free(g);
            }
}
END_TEST

START_TEST(split_backward_i_then_w)
{
    /* I = W = 1: M F + (P-1) F + M (I + W) + (P-1) I = 8 + 3 + 16 + 3 */
    loom_stage_graph *g = ik_st_graph(4, 8, 1, NULL, NULL, 1);
    loom_schedule *s = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(interleave(g, NULL, &s, &err), LOOM_OK);
    ik_check_complete(g, s);
    for (int r = 0; r < 4; r++)
        for (int i = s->rank_off[r]; i < s->rank_off[r + 1]; i++) {
            int v = s->order[i];
            if (g->kind[v] == LOOM_STAGE_I)
                ck_assert_int_eq(s->order[i + 1], g->pair_weight[g->pair[v]]);
            if (g->kind[v] == LOOM_STAGE_W)
                ck_assert_int_eq(g->kind[s->order[i - 1]], LOOM_STAGE_I);
        }
    loom_metrics m = LOOM_METRICS_INIT;
    ck_assert_int_eq(loom_mock_simulate(g, s, &m, &err), LOOM_OK);
    ck_assert_double_eq_tol(m.makespan_ms, 30.0, 1e-9);
    loom_schedule_free(s);
    loom_graph_free(g);
}
END_TEST

START_TEST(ignores_priorities)
{
    loom_stage_graph *g = ik_st_graph(3, 5, 1, NULL, NULL, 0);
    float prio[5] = {0, 1, 2, 3, 4};
    loom_schedule *a = NULL, *b = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(interleave(g, NULL, &a, &err), LOOM_OK);
    ck_assert_int_eq(interleave(g, prio, &b, &err), LOOM_OK);
    ck_assert_int_eq(memcmp(a->order, b->order,
                            (size_t)g->n_stages * sizeof(int32_t)), 0);
    loom_schedule_free(a);
    loom_schedule_free(b);
    loom_graph_free(g);
}
END_TEST

START_TEST(two_flows_input_flow_first)
{
    /* the encoder flow (index 1) must run before the backbone (index 0):
     * the chain of 2P positions behaves like V = 2 virtual stages */
    for (int P = 1; P <= 4; P++)
        for (int M = P; M <= 2 * P + 1; M++) {
            loom_stage_graph *g = two_flow_graph(P, M);
            loom_schedule *s = NULL;
            loom_error err = {0, ""};
            ck_assert_msg(interleave(g, NULL, &s, &err) == LOOM_OK, "%s",
                          err.message);
            ik_check_complete(g, s);
            ck_assert_int_eq(g->flow[s->order[0]], 1);
            ck_assert_int_eq(g->kind[s->order[0]], LOOM_STAGE_F);
            int last = s->order[s->rank_off[1] - 1];
            ck_assert_int_eq(g->flow[last], 1);
            ck_assert_int_eq(g->kind[last], LOOM_STAGE_B);
            loom_metrics m = LOOM_METRICS_INIT;
            ck_assert_msg(loom_mock_simulate(g, s, &m, &err) == LOOM_OK, "%s",
                          err.message);
            ck_assert_double_eq_tol(m.makespan_ms, 3.0 * (2 * M + P - 1), 1e-9);
            loom_schedule_free(s);
            loom_graph_free(g);
        }
}
END_TEST

START_TEST(rejects_i_without_w)
{
    loom_stage_graph *g = ik_st_graph(2, 2, 1, NULL, NULL, 1);
    g->pair_weight[1] = -1;
    loom_schedule *s = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(interleave(g, NULL, &s, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "no W stage"));
    loom_schedule_free(s);
    loom_graph_free(g);
}
END_TEST

START_TEST(deadlock_free_many_shapes)
{
    for (int P = 1; P <= 6; P++)
        for (int V = 1; V <= 3; V++)
            for (int M = 1; M <= 2 * P + 1; M++)
                for (int split = 0; split < 2; split++) {
                    loom_stage_graph *g = ik_st_graph(P, M, V, NULL, NULL, split);
                    loom_metrics m = LOOM_METRICS_INIT;
                    int64_t peak[6];
                    plan(g, NULL, &m, peak);
                    for (int r = 0; r < P; r++)
                        ck_assert_int_eq(peak[r], M * V);
                    loom_graph_free(g);
                }
}
END_TEST

/* The gpipe suite. */
static Suite *suite(void)
{
    Suite *s = suite_create("gpipe");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, makespan_p4_m8);
    tcase_add_test(tc, exact_order);
    tcase_add_test(tc, alpa_latency_formula);
    tcase_add_test(tc, virtual_stages_closed_form);
    tcase_add_test(tc, split_backward_i_then_w);
    tcase_add_test(tc, ignores_priorities);
    tcase_add_test(tc, two_flows_input_flow_first);
    tcase_add_test(tc, rejects_i_without_w);
    tcase_add_test(tc, deadlock_free_many_shapes);
    suite_add_tcase(s, tc);
    return s;
}

/* Runs the suite; exits non-zero when a check fails. */
int main(void)
{
    return loom_test_main(suite());
}
