/* test_oobleck_instantiate.c - the oobleck-instantiate ranker over
 * template candidates (digest's N = 8, f = 2, templates {2,3,4}) with a
 * mock evaluator: per-share simulated times, the coin-change plans, batch
 * distribution, the slowest pipeline as the chosen candidate, the linear
 * fallback for full-batch candidates, and the contract checks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <loom/mock_host.h>
#include <loom/kits/graph.h>
#include "testutil.h"

const loom_plugin_info *loom_static_oobleck_instantiate(void);

/* The mock evaluator: an S-stage template runs s microbatches in
 * (s + S - 1) * 12 / S ms (1F1B with balanced stages). */
static int ev_create(loom_ctx *ctx, const loom_stage_graph *graph,
                     loom_evaluator **out, loom_error *err)
{
    (void)ctx;
    (void)err;
    *out = (loom_evaluator *)(void *)graph;
    return LOOM_OK;
}

/* Stage count whose templates fail to evaluate (0: none). */
static int32_t ev_fail_stages;

/* Stage count whose templates exceed the memory cap from ev_over_from
 * microbatches on (0: none; -1: every template). */
static int32_t ev_over_stages, ev_over_from;

static int ev_run(loom_evaluator *ev, const float *priorities, loom_metrics *out,
                  loom_error *err)
{
    (void)priorities;
    const loom_stage_graph *g = (const loom_stage_graph *)(void *)ev;
    loom_metrics_init(out);
    if (g->n_ranks == ev_fail_stages) {
        err->code = LOOM_EINFEASIBLE;
        snprintf(err->message, sizeof err->message,
                 "mock: rank %d cannot fit the memory cap", g->n_ranks - 1);
        return LOOM_EINFEASIBLE;
    }
    out->makespan_ms = (g->n_microbatches + g->n_ranks - 1) * 12.0 / g->n_ranks;
    if ((ev_over_stages == -1 || g->n_ranks == ev_over_stages) &&
        g->n_microbatches >= ev_over_from)
        out->cap_violations = 1;
    return LOOM_OK;
}

static void ev_destroy(loom_evaluator *ev)
{
    (void)ev;
}

static const loom_evaluator_service mock_ev = {sizeof(loom_evaluator_service), 1,
                                               ev_create, ev_run, ev_destroy, NULL, NULL};

/* Candidate graphs: templates of 2, 3, 4 stages (one GPU per node), for
 * shares 1..12 (all) or only 12. */
static int make_graphs(loom_stage_graph **g, int all)
{
    int n = 0;
    for (int t = 2; t <= 4; t++)
        for (int s = all ? 1 : 12; s <= 12; s++) {
            g[n] = loom_graph_alloc(1, 0, t, s, 1, 1);
            g[n]->n_microbatches = s;
            g[n]->n_groups = s;
            n++;
        }
    return n;
}

/* Runs the ranker with the given params ("k", "v" pairs, NULL-ended). */
static int run_rank(loom_stage_graph **g, int n, const char *const *params,
                    loom_ranking *out, loom_error *err)
{
    static loom_cluster cl;
    memset(&cl, 0, sizeof cl);
    cl.gpus_per_node = 1;
    loom_problem pb;
    memset(&pb, 0, sizeof pb);
    pb.struct_size = sizeof pb;
    pb.kind = LOOM_PROBLEM_MODEL;
    pb.cluster = &cl;
    pb.parallel = (loom_parallel){1, 8, 1, 1, 12, 0};
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    loom_mock_host_set_problem(h, &pb);
    loom_mock_host_add_service(h, LOOM_SERVICE_EVALUATOR, 1, &mock_ev);
    for (int i = 0; params && params[i]; i += 2)
        loom_mock_host_set_param(h, params[i], params[i + 1]);
    const loom_ranker_vtable *vt = (const loom_ranker_vtable *)
        loom_static_oobleck_instantiate()->role(LOOM_ROLE_RANKER);
    void *self = NULL;
    ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h), NULL,
                                &self, err), LOOM_OK);
    static float prio[64];
    *out = (loom_ranking)LOOM_RANKING_INIT;
    out->cap_priorities = 64;
    out->priorities = prio;
    int rc = vt->rank(self, (const loom_stage_graph *const *)g, n, out, err);
    if (rc == LOOM_OK)
        ck_assert_ptr_nonnull(strstr(loom_mock_host_last_log(h), "plan "));
    vt->destroy(self);
    loom_mock_host_free(h);
    return rc;
}

START_TEST(exact_shares)
{
    /* N = 8, f = 2: plans (4,0,0) 24 ms, (1,2,0) 28 ms, (2,0,1) 27 ms;
     * four 2-node pipelines with 3 microbatches each win */
    loom_stage_graph *g[36];
    int n = make_graphs(g, 1);
    const char *const params[] = {"fault_tolerance", "2", NULL};
    loom_ranking r = LOOM_RANKING_INIT;
    loom_error err = {0, ""};
    ck_assert_msg(run_rank(g, n, params, &r, &err) == LOOM_OK, "%s", err.message);
    ck_assert_int_eq(r.candidate, 2); /* 2-node template, share 3 */
    ck_assert_double_eq_tol(r.best_makespan_ms, 24, 1e-9);
    /* only the shares the batch distribution asks for are simulated */
    ck_assert_int_gt(r.evaluations, 0);
    ck_assert_int_lt(r.evaluations, 36);
    ck_assert_float_eq(r.priorities[0], 3);
    ck_assert_float_eq(r.priorities[2], 1);
    /* the mismatch checks: 9 nodes cannot give 3 templates with f = 2 */
    const char *const bad[] = {"fault_tolerance", "2", "nodes", "9", NULL};
    ck_assert_int_eq(run_rank(g, n, bad, &r, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "do not fit 9 nodes"));
    /* f = 1: 3 templates over 8 nodes would start at n0 = 3, but the first
     * candidate has 2 stages - not a 3-node template */
    const char *const f1[] = {"fault_tolerance", "1", NULL};
    ck_assert_int_eq(run_rank(g, n, f1, &r, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "not a template of 3 node(s)"));
    for (int i = 0; i < n; i++)
        loom_graph_free(g[i]);
}
END_TEST

START_TEST(shares_over_the_cap_are_not_given)
{
    /* the 2-node template holds at most 2 microbatches within the memory
     * cap: (4,0,0) at 24 ms would give each pipeline 3, so (1,2,0) wins
     * with 2 / 5 / 5 microbatches, 28 ms, the 3-node template's share 5 */
    loom_stage_graph *g[36];
    int n = make_graphs(g, 1);
    const char *const params[] = {"fault_tolerance", "2", NULL};
    loom_ranking r = LOOM_RANKING_INIT;
    loom_error err = {0, ""};
    ev_over_stages = 2;
    ev_over_from = 3;
    ck_assert_msg(run_rank(g, n, params, &r, &err) == LOOM_OK, "%s", err.message);
    ck_assert_int_eq(r.candidate, 12 + 4);
    ck_assert_double_eq_tol(r.best_makespan_ms, 28, 1e-9);
    /* when every template is over the cap, the fastest plan regardless */
    ev_over_stages = -1;
    ev_over_from = 1;
    ck_assert_msg(run_rank(g, n, params, &r, &err) == LOOM_OK, "%s", err.message);
    ck_assert_int_eq(r.candidate, 2);
    ck_assert_double_eq_tol(r.best_makespan_ms, 24, 1e-9);
    ev_over_stages = 0;
    for (int i = 0; i < n; i++)
        loom_graph_free(g[i]);
}
END_TEST

START_TEST(full_batch_linear)
{
    /* one candidate per template: per-microbatch 78/12, 56/12, 45/12 ms;
     * (4,0,0) -> 19.5, (1,2,0) -> 23.33, (2,0,1) -> 22.5 */
    loom_stage_graph *g[3];
    int n = make_graphs(g, 0);
    const char *const params[] = {"fault_tolerance", "2", NULL};
    loom_ranking r = LOOM_RANKING_INIT;
    loom_error err = {0, ""};
    ck_assert_int_eq(run_rank(g, n, params, &r, &err), LOOM_OK);
    ck_assert_int_eq(r.candidate, 0);
    ck_assert_double_eq_tol(r.best_makespan_ms, 19.5, 1e-9);
    ck_assert_int_eq(r.evaluations, 3);
    for (int i = 0; i < n; i++)
        loom_graph_free(g[i]);
}
END_TEST

START_TEST(large_batch_shares)
{
    /* 400 microbatches: each template comes with shares 1..128 and 400
     * (oobleck-templates above OOBLECK_MAX_SHARES). Four 2-node pipelines
     * with 100 microbatches each, (100 + 1) * 6 = 606 ms, beat (1,2,0)
     * (608 ms at 100 / 150 / 150) and (2,0,1); the chosen candidate is the
     * 2-node template's share 100, simulated, not the whole batch. */
    enum { PER = 129, MBS = 400 };
    static loom_stage_graph *g[3 * PER];
    int n = 0;
    for (int t = 2; t <= 4; t++)
        for (int k = 0; k < PER; k++) {
            int s = k < 128 ? k + 1 : MBS;
            g[n] = loom_graph_alloc(1, 0, t, 1, 1, 1);
            g[n]->n_microbatches = s;
            g[n]->n_groups = 1;
            n++;
        }
    const char *const params[] = {"fault_tolerance", "2", NULL};
    loom_ranking r = LOOM_RANKING_INIT;
    loom_error err = {0, ""};
    ck_assert_msg(run_rank(g, n, params, &r, &err) == LOOM_OK, "%s", err.message);
    ck_assert_int_eq(r.candidate, 99);
    ck_assert_double_eq_tol(r.best_makespan_ms, 606, 1e-9);
    ck_assert_int_lt(r.evaluations, n);
    for (int i = 0; i < n; i++)
        loom_graph_free(g[i]);
}
END_TEST

START_TEST(not_templates)
{
    /* candidates from another partitioner: share counts that do not form
     * templates */
    loom_stage_graph *g[2];
    g[0] = loom_graph_alloc(1, 0, 2, 3, 1, 1);
    g[0]->n_microbatches = 3;
    g[1] = loom_graph_alloc(1, 0, 2, 5, 1, 1);
    g[1]->n_microbatches = 5;
    loom_ranking r = LOOM_RANKING_INIT;
    loom_error err = {0, ""};
    ck_assert_int_eq(run_rank(g, 2, NULL, &r, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "oobleck-templates"));
    ck_assert_int_eq(run_rank(g, 0, NULL, &r, &err), LOOM_EINVAL);
    loom_graph_free(g[0]);
    loom_graph_free(g[1]);
}
END_TEST

START_TEST(failed_evaluation_is_reported)
{
    /* every template fails to evaluate: the evaluation's own error, not
     * the batch split's (which used to read past its arrays) */
    loom_stage_graph *g[36];
    int n = make_graphs(g, 1);
    loom_ranking r = LOOM_RANKING_INIT;
    loom_error err = {0, ""};
    const char *const p[] = {"nodes", "4", "fault_tolerance", "0", NULL};
    ev_fail_stages = 4;
    ck_assert_int_eq(run_rank(g, n, p, &r, &err), LOOM_EINFEASIBLE);
    ck_assert_str_eq(err.message, "mock: rank 3 cannot fit the memory cap");
    ev_fail_stages = 0;
    ck_assert_int_eq(run_rank(g, n, p, &r, &err), LOOM_OK);
    for (int i = 0; i < n; i++)
        loom_graph_free(g[i]);
}
END_TEST

/* The suite of this file. */
static Suite *oi_suite(void)
{
    Suite *s = suite_create("oobleck_instantiate");
    TCase *tc = tcase_create("ranker");
    tcase_add_test(tc, exact_shares);
    tcase_add_test(tc, shares_over_the_cap_are_not_given);
    tcase_add_test(tc, full_batch_linear);
    tcase_add_test(tc, large_batch_shares);
    tcase_add_test(tc, not_templates);
    tcase_add_test(tc, failed_evaluation_is_reported);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(oi_suite());
}
