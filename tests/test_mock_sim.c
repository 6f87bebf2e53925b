/* test_mock_sim.c - the mock simulator (sdk/mock/loom/mock_sim.h) through
 * its own header only: a simulated closed form, the simulator table, a
 * planner's problem, graph, partition score and plan, and its errors; and
 * the mock host's splitmix64. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <loom/mock_host.h>
#include <loom/mock_sim.h>
#include <loom/kits/graph.h>
#include "testutil.h"

/* A P-rank, M-microbatch stage-times graph, F = 1 ms and B = 2 ms. */
static loom_stage_graph *st_graph(int P, int M)
{
    double f[8], b[8];
    for (int s = 0; s < P; s++) {
        f[s] = 1.0;
        b[s] = 2.0;
    }
    loom_stage_times st;
    memset(&st, 0, sizeof st);
    st.ranks = P;
    st.microbatches = M;
    st.virtual_stages = 1;
    st.forward_ms = f;
    st.backward_ms = b;
    loom_stage_graph *g = NULL;
    loom_error err = {0, ""};
    ck_assert_msg(loom_graph_from_stage_times(&st, 0, &g, &err) == LOOM_OK, "%s", err.message);
    return g;
}

/* GPipe's order on every rank: all forwards, then all backwards. */
static loom_schedule *gpipe_order(const loom_stage_graph *g)
{
    loom_schedule *s = loom_schedule_new(g->n_ranks, g->n_stages);
    int32_t k = 0;
    for (int32_t r = 0; r < g->n_ranks; r++) {
        s->rank_off[r] = k;
        for (int kind = 0; kind < 2; kind++)
            for (int32_t v = 0; v < g->n_stages; v++)
                if (g->rank[v] == r && (g->kind[v] == LOOM_STAGE_F) == (kind == 0))
                    s->order[k++] = v;
    }
    s->rank_off[g->n_ranks] = k;
    return s;
}

START_TEST(simulates_gpipe_closed_form)
{
    /* GPipe, P ranks, M microbatches: (M + P - 1)(F + B) */
    loom_stage_graph *g = st_graph(4, 8);
    loom_schedule *s = gpipe_order(g);
    loom_metrics m = LOOM_METRICS_INIT;
    loom_error err = {0, ""};
    ck_assert_msg(loom_mock_simulate(g, s, &m, &err) == LOOM_OK, "%s", err.message);
    ck_assert_double_eq_tol(m.makespan_ms, 33.0, 1e-9);
    ck_assert_int_eq(m.cap_violations, 0);
    /* the table gives the same figure with a reused scratch */
    const loom_simulator_service *sim = loom_mock_simulator();
    ck_assert_str_eq(LOOM_SERVICE_SIMULATOR, "loom.simulator");
    ck_assert_int_eq(sim->version, 1);
    loom_sim_scratch *scratch = sim->scratch_new();
    for (int i = 0; i < 2; i++) {
        loom_metrics again = LOOM_METRICS_INIT;
        ck_assert_int_eq(sim->simulate(scratch, g, s, &again, &err), LOOM_OK);
        ck_assert_double_eq(again.makespan_ms, m.makespan_ms);
    }
    sim->scratch_free(scratch);
    /* a stage left out: LOOM_EINVAL */
    s->rank_off[1] -= 1;
    ck_assert_int_eq(loom_mock_simulate(g, s, &m, &err), LOOM_EINVAL);
    loom_schedule_free(s);
    loom_graph_free(g);
}
END_TEST

/* Opens a planner on the default manifest (megatron-1f1b), vlm-s, one
 * iteration. */
static loom_mock_planner *open_vlm_s(void)
{
    const char *const opts[] = {"model=vlm-s", "iterations=1", NULL};
    loom_mock_planner *pl = NULL;
    loom_error err = {0, ""};
    ck_assert_msg(loom_mock_planner_open(opts, &pl, &err) == LOOM_OK, "%s", err.message);
    return pl;
}

START_TEST(plans_scores_and_builds)
{
    loom_mock_planner *pl = open_vlm_s();
    const loom_problem *pb = loom_mock_planner_problem(pl);
    ck_assert_int_eq(pb->kind, LOOM_PROBLEM_MODEL);
    ck_assert_int_eq(pb->n_iterations, 1);
    const loom_iteration *it = loom_mock_planner_iteration(pl, 0);
    ck_assert_ptr_nonnull(it);
    ck_assert_ptr_null(loom_mock_planner_iteration(pl, 1));
    loom_mock_plan plan;
    loom_error err = {0, ""};
    ck_assert_msg(loom_mock_planner_plan(pl, 0, &plan, &err) == LOOM_OK, "%s", err.message);
    ck_assert_ptr_nonnull(plan.partition);
    ck_assert(plan.metrics->makespan_ms > 0);
    /* the plan's own order, simulated again, gives its makespan */
    loom_metrics m = LOOM_METRICS_INIT;
    ck_assert_int_eq(loom_mock_simulate(plan.graph, plan.schedule, &m, &err), LOOM_OK);
    ck_assert_double_eq(m.makespan_ms, plan.metrics->makespan_ms);
    /* the partition's graph has the plan graph's stages on its ranks */
    loom_stage_graph *g = NULL;
    ck_assert_msg(loom_mock_planner_graph(pl, it, plan.partition, &g, &err) == LOOM_OK, "%s",
                  err.message);
    ck_assert_int_eq(g->n_stages, plan.graph->n_stages);
    ck_assert_int_eq(g->n_ranks, plan.graph->n_ranks);
    for (int32_t v = 0; v < g->n_stages; v++)
        ck_assert_int_eq(g->rank[v], plan.graph->rank[v]);
    loom_graph_free(g);
    /* 1F1B's order ignores priorities: the score is the plan's makespan */
    loom_metrics score = LOOM_METRICS_INIT;
    ck_assert_msg(loom_mock_planner_evaluate(pl, it, plan.partition, &score, &err) == LOOM_OK,
                  "%s", err.message);
    ck_assert_double_eq(score.makespan_ms, plan.metrics->makespan_ms);
    /* a candidate set for the problem starts empty */
    loom_candidates *set = loom_mock_candidates_new(pb, it);
    ck_assert_ptr_nonnull(set);
    ck_assert_int_eq(set->n, 0);
    loom_mock_candidates_free(set);
    ck_assert_int_eq(loom_mock_planner_plan(pl, 1, &plan, &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "no iteration 1 (the workload has 1)");
    loom_mock_planner_close(pl);
}
END_TEST

START_TEST(bad_options_are_named)
{
    loom_mock_planner *pl = (loom_mock_planner *)&pl;
    loom_error err = {0, ""};
    const char *const unknown[] = {"model=vlm-s", "colour=red", NULL};
    ck_assert_int_eq(loom_mock_planner_open(unknown, &pl, &err), LOOM_ENOTFOUND);
    ck_assert_ptr_null(pl);
    const char *const bad[] = {"iterations=x", NULL};
    ck_assert_int_eq(loom_mock_planner_open(bad, &pl, &err), LOOM_EINVAL);
    loom_test_has(err.message, "--iterations: expected");
    const char *const missing[] = {"model=no-such-model.json", NULL};
    ck_assert_int_ne(loom_mock_planner_open(missing, &pl, &err), LOOM_OK);
    loom_test_has(err.message, "no-such-model");
    ck_assert_ptr_null(pl);
    loom_mock_planner_close(NULL);
}
END_TEST

START_TEST(splitmix64_sequence)
{
    /* splitmix64 from state 0, the sequence host->rng_next gives too */
    uint64_t state = 0;
    ck_assert_uint_eq(loom_mock_splitmix64(&state), 0xe220a8397b1dcdafull);
    ck_assert_uint_eq(loom_mock_splitmix64(&state), 0x6e789e6aa1b965f4ull);
    loom_mock_host *h = loom_mock_host_new();
    uint64_t again = 0;
    ck_assert_uint_eq(loom_mock_host_api(h)->rng_next(&again), 0xe220a8397b1dcdafull);
    loom_mock_host_free(h);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("mock_sim");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, simulates_gpipe_closed_form);
    tcase_add_test(tc, plans_scores_and_builds);
    tcase_add_test(tc, bad_options_are_named);
    tcase_add_test(tc, splitmix64_sequence);
    suite_add_tcase(s, tc);
    return loom_test_main(s);
}
