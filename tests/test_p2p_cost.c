/* test_p2p_cost.c - cross-rank transfer times come from the cost model:
 * roofline's p2p_ms and the host default (a cost model without one) give
 * the same edge times; a cost model with its own p2p_ms changes every
 * cross-rank edge of the built graph and the plan's makespan; its errors
 * and bad values are reported with its id; the default formula's value. */
#include <math.h>
#include <string.h>
#include "testutil.h"
#include "engine_api.h"
#include "pipeline.h"
#include <loom/sys/session.h>
#include "run_priv.h"

static loom_session s;

/* The megatron-1f1b manifest (roofline cost model) on vlm-s, pp=4 over
 * two nodes of h800 (tp=4: ranks 0-1 on node 0, 2-3 on node 1), with one
 * --param when `param` is not NULL. */
static void open_session_with(const char *param)
{
    loom_session_args a;
    loom_session_args_init(&a);
    a.manifest = loom_test_src("examples/manifests/megatron-1f1b.json");
    a.model = "vlm-s";
    a.parallel = "tp=4,pp=4";
    a.iterations = 1;
    if (param)
        a.params[a.n_params++] = param;
    loom_error err = {0};
    int rc = loom_session_init(&s, &a, &err);
    ck_assert_msg(rc == LOOM_OK, "%s", err.message);
}

/* open_session_with no param. */
static void open_session(void)
{
    open_session_with(NULL);
}

/* The cost step's host copy of the cost model vtable. */
static loom_cost_model_vtable *cost_vt(void)
{
    return &s.pl->steps[s.pl->cost_model].vt.cost_model;
}

/* Plans iteration 0 into *plan (asserting success). */
static void plan_it(loom_plan *plan)
{
    loom_error err = {0};
    int rc = loom_session_plan(&s, 0, plan, &err);
    ck_assert_msg(rc == LOOM_OK, "%s", err.message);
}

/* A cost model's own transfer time: 7 ms per transfer; records what the
 * host asked. */
static int calls, bad_link;
static int constant_p2p(void *self, const loom_problem *problem, const loom_p2p_link *link,
                        double bytes, double *ms, loom_error *err)
{
    (void)self, (void)err;
    calls++;
    if (!problem || !problem->cluster || link->struct_size < LOOM_P2P_LINK_SIZE_V1 ||
        link->src_rank == link->dst_rank || !(bytes > 0) ||
        link->same_node != (link->src_gpu / 8 == link->dst_gpu / 8))
        bad_link++;
    *ms = 7.0;
    return LOOM_OK;
}

/* The roofline's own transfer time, recording the bytes of every call. */
static double bytes_seen;
static int (*roofline_p2p)(void *, const loom_problem *, const loom_p2p_link *, double,
                           double *, loom_error *);
static int recording_p2p(void *self, const loom_problem *problem, const loom_p2p_link *link,
                         double bytes, double *ms, loom_error *err)
{
    bytes_seen += bytes;
    return roofline_p2p(self, problem, link, bytes, ms, err);
}

static int failing_p2p(void *self, const loom_problem *problem, const loom_p2p_link *link,
                       double bytes, double *ms, loom_error *err)
{
    (void)self, (void)problem, (void)bytes, (void)ms;
    (void)link;
    err->code = LOOM_EINVAL;
    snprintf(err->message, sizeof err->message, "no route from rank %d", link->src_rank);
    return LOOM_EINVAL;
}

static int nan_p2p(void *self, const loom_problem *problem, const loom_p2p_link *link,
                   double bytes, double *ms, loom_error *err)
{
    (void)self, (void)problem, (void)link, (void)bytes, (void)err;
    *ms = NAN;
    return LOOM_OK;
}

START_TEST(roofline_and_default_agree)
{
    open_session();
    ck_assert(cost_vt()->p2p_ms != NULL); /* roofline has one */
    loom_plan a, b;
    plan_it(&a);
    cost_vt()->p2p_ms = NULL; /* a cost model without one: the host default */
    plan_it(&b);
    ck_assert_int_eq(a.graph->n_edges, b.graph->n_edges);
    int cross = 0;
    for (int32_t v = 0; v < a.graph->n_stages; v++)
        for (int32_t e = a.graph->pred_off[v]; e < a.graph->pred_off[v + 1]; e++) {
            ck_assert_double_eq(a.graph->pred_p2p_ms[e], b.graph->pred_p2p_ms[e]);
            int32_t q = a.graph->pred[e];
            if (a.graph->rank[q] != a.graph->rank[v]) {
                cross++;
                ck_assert(a.graph->pred_p2p_ms[e] >= s.problem.cluster->p2p_latency_ms);
            } else {
                ck_assert_double_eq(a.graph->pred_p2p_ms[e], 0);
            }
        }
    ck_assert_int_gt(cross, 0);
    ck_assert_double_eq(a.metrics.makespan_ms, b.metrics.makespan_ms);
    loom_plan_clear(&a);
    loom_plan_clear(&b);
    loom_session_release(&s);
}
END_TEST

START_TEST(own_transfer_cost_changes_cross_rank_edges)
{
    open_session();
    loom_plan base, own;
    plan_it(&base);
    calls = bad_link = 0;
    cost_vt()->p2p_ms = constant_p2p;
    plan_it(&own);
    ck_assert_int_gt(calls, 0);
    ck_assert_int_eq(bad_link, 0);
    int cross = 0;
    for (int32_t v = 0; v < own.graph->n_stages; v++)
        for (int32_t e = own.graph->pred_off[v]; e < own.graph->pred_off[v + 1]; e++) {
            int32_t q = own.graph->pred[e];
            if (own.graph->rank[q] != own.graph->rank[v]) {
                cross++;
                ck_assert_double_eq(own.graph->pred_p2p_ms[e], 7.0);
                ck_assert(base.graph->pred_p2p_ms[e] != 7.0);
            } else {
                ck_assert_double_eq(own.graph->pred_p2p_ms[e], 0);
            }
        }
    ck_assert_int_eq(calls, cross); /* once per cross-rank edge */
    ck_assert(own.metrics.makespan_ms > base.metrics.makespan_ms);
    loom_plan_clear(&base);
    loom_plan_clear(&own);
    loom_session_release(&s);
}
END_TEST

START_TEST(fp32_elements_double_the_transfers)
{
    /* the cost model's element_bytes sizes pipeline transfers: with the
     * roofline's element_bytes 4 every cross-rank edge moves twice the
     * bytes of the bf16 run, on the same edges */
    double sent[2], gather[2][4], step[2][4];
    int32_t edges[2];
    for (int k = 0; k < 2; k++) {
        open_session_with(k ? "cost_model.element_bytes=4" : NULL);
        roofline_p2p = cost_vt()->p2p_ms;
        cost_vt()->p2p_ms = recording_p2p;
        bytes_seen = 0;
        loom_plan plan;
        plan_it(&plan);
        sent[k] = bytes_seen;
        edges[k] = plan.graph->n_edges;
        ck_assert_int_eq(plan.graph->n_ranks, 4);
        for (int r = 0; r < 4; r++) {
            gather[k][r] = plan.graph->tail_param_gather_ms[r];
            step[k][r] = plan.graph->tail_optimizer_ms[r];
        }
        loom_plan_clear(&plan);
        loom_session_release(&s);
    }
    ck_assert_int_eq(edges[0], edges[1]);
    ck_assert(sent[0] > 0);
    ck_assert_double_eq_tol(sent[1], 2 * sent[0], 1e-9 * sent[0]);
    /* the same parameters in the tail: vlm-s at dp 1 gathers nothing, and
     * the Adam step moves 32 bytes a parameter against bf16's 34 */
    for (int r = 0; r < 4; r++) {
        ck_assert_double_eq(gather[0][r], 0);
        ck_assert_double_eq(gather[1][r], 0);
        ck_assert(step[0][r] > 0);
        ck_assert_double_eq_tol(step[1][r], step[0][r] * 32 / 34, 1e-9 * step[0][r]);
    }
}
END_TEST

START_TEST(transfer_cost_errors_name_the_plugin)
{
    open_session();
    loom_plan plan;
    loom_error err = {0};
    cost_vt()->p2p_ms = failing_p2p;
    ck_assert_int_ne(loom_session_plan(&s, 0, &plan, &err), LOOM_OK);
    ck_assert_ptr_nonnull(strstr(err.message, "plugin org.loom.roofline: no route from rank"));
    memset(&err, 0, sizeof err);
    cost_vt()->p2p_ms = nan_p2p;
    ck_assert_int_eq(loom_session_plan(&s, 0, &plan, &err), LOOM_EPLUGIN);
    ck_assert_ptr_nonnull(strstr(err.message, "plugin org.loom.roofline: returned a negative, "
                                              "infinite or NaN transfer time from rank"));
    loom_session_release(&s);
}
END_TEST

START_TEST(default_formula)
{
    loom_cluster c;
    memset(&c, 0, sizeof c);
    c.p2p_latency_ms = 0.01;
    c.nvlink_bytes_per_s = 200e9;
    c.net_bytes_per_s = 25e9;
    c.eff_collective = 0.8;
    loom_p2p_link link = {(uint32_t)sizeof link, 0, 1, 1, 0, 4};
    /* 0.01 ms + 1e9 B / (200e9 B/s x 0.8) */
    ck_assert_double_eq_tol(loom_p2p_link_ms(&c, &link, 1e9), 0.01 + 6.25, 1e-12);
    link.same_node = 0;
    ck_assert_double_eq_tol(loom_p2p_link_ms(&c, &link, 1e9), 0.01 + 50.0, 1e-12);
    c.eff_collective = 0; /* unset: 1 */
    ck_assert_double_eq_tol(loom_p2p_link_ms(&c, &link, 1e9), 0.01 + 40.0, 1e-12);
    c.net_bytes_per_s = 0; /* no bandwidth: the latency only */
    ck_assert_double_eq(loom_p2p_link_ms(&c, &link, 1e9), 0.01);
    link.dst_rank = 0;
    ck_assert_double_eq(loom_p2p_link_ms(&c, &link, 1e9), 0);
    ck_assert_double_eq(loom_p2p_link_ms(NULL, &link, 1e9), 0);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("p2p_cost");
    TCase *tc = tcase_create("p2p");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, roofline_and_default_agree);
    tcase_add_test(tc, own_transfer_cost_changes_cross_rank_edges);
    tcase_add_test(tc, fp32_elements_double_the_transfers);
    tcase_add_test(tc, transfer_cost_errors_name_the_plugin);
    tcase_add_test(tc, default_formula);
    suite_add_tcase(su, tc);
    return loom_test_main(su);
}
