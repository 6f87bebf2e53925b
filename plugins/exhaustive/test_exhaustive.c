/* test_exhaustive.c - the exhaustive ranker against a brute force over all
 * permutations (dual-queue + simulator on non-uniform stage-times graphs):
 * exact optimum, exact evaluation counts, precedence, max_evaluations,
 * threads, and candidate screening. */
#include <loom/mock_search.h>

const loom_plugin_info *loom_static_exhaustive(void);

START_TEST(finds_true_optimum)
{
    loom_stage_graph *g = mock_graph(3, 6);
    mock_ranker r = mock_ranker_open(loom_static_exhaustive());
    loom_mock_host_set_param(r.h, "budget_ms", "60000");
    int64_t n_valid = 0;
    double best = mock_optimum(r.h, g, &n_valid);
    ck_assert_int_eq(n_valid, 720);

    float prio[8];
    loom_ranking out = LOOM_RANKING_INIT;
    loom_error err = {0};
    const loom_stage_graph *gs[1] = {g};
    int rc = mock_rank(&r, gs, 1, prio, &out, &err);
    ck_assert_msg(rc == LOOM_OK, "%s", err.message);
    ck_assert_double_eq_tol(out.best_makespan_ms, best, 1e-9);
    ck_assert_int_eq(out.evaluations, 720); /* every assignment once */
    ck_assert_int_eq(out.candidate, 0);
    /* The reported priorities reproduce the reported makespan. */
    loom_evaluator *ev = NULL;
    loom_metrics m = LOOM_METRICS_INIT;
    mock_ev_create(loom_mock_host_ctx(r.h), g, &ev, &err);
    mock_ev_run(ev, prio, &m, &err);
    ck_assert_double_eq_tol(m.makespan_ms, best, 1e-9);
    mock_ev_destroy(ev);
    /* A distinct value 1..n per group. */
    int seen[7] = {0};
    for (int i = 0; i < 6; i++) {
        ck_assert(prio[i] >= 1 && prio[i] <= 6 && prio[i] == (int)prio[i]);
        ck_assert_int_eq(seen[(int)prio[i]]++, 0);
    }
    ck_assert_double_eq_tol(loom_mock_host_best_makespan_ms(r.h), best, 1e-9);
    ck_assert_ptr_nonnull(strstr(loom_mock_host_last_log(r.h), "exhausted"));
    mock_ranker_close(&r);
    loom_graph_free(g);
}
END_TEST

START_TEST(precedence_and_threads)
{
    loom_stage_graph *g = mock_graph(3, 6);
    /* group 5 before 0, 3 before 1, 1 before 2 */
    static const int pairs[] = {5, 0, 3, 1, 1, 2};
    mock_precede(g, pairs, 3);
    mock_ranker r = mock_ranker_open(loom_static_exhaustive());
    loom_mock_host_set_param(r.h, "budget_ms", "60000");
    int64_t n_valid = 0;
    double best = mock_optimum(r.h, g, &n_valid);
    ck_assert_int_eq(n_valid, 720 / 2 / 6); /* two independent constraints */

    float p1[8], p2[8];
    loom_ranking o1 = LOOM_RANKING_INIT, o2 = LOOM_RANKING_INIT;
    loom_error err = {0};
    const loom_stage_graph *gs[1] = {g};
    ck_assert_int_eq(mock_rank(&r, gs, 1, p1, &o1, &err), LOOM_OK);
    ck_assert_double_eq_tol(o1.best_makespan_ms, best, 1e-9);
    ck_assert_int_eq(o1.evaluations, n_valid);
    ck_assert(mock_valid(g, p1));

    loom_mock_host_set_param(r.h, "threads", "3");
    ck_assert_int_eq(mock_rank(&r, gs, 1, p2, &o2, &err), LOOM_OK);
    ck_assert_int_eq(o2.evaluations, o1.evaluations);
    ck_assert_double_eq(o2.best_makespan_ms, o1.best_makespan_ms);
    ck_assert_mem_eq(p1, p2, 6 * sizeof(float));
    mock_ranker_close(&r);
    loom_graph_free(g);
}
END_TEST

START_TEST(max_evaluations_and_candidates)
{
    loom_stage_graph *g = mock_graph(3, 6);
    mock_ranker r = mock_ranker_open(loom_static_exhaustive());
    loom_mock_host_set_param(r.h, "max_evaluations", "50");
    float prio[8];
    loom_ranking out = LOOM_RANKING_INIT;
    loom_error err = {0};
    const loom_stage_graph *gs[1] = {g};
    ck_assert_int_eq(mock_rank(&r, gs, 1, prio, &out, &err), LOOM_OK);
    ck_assert_int_eq(out.evaluations, 50);

    /* Two candidates: the second has uniform microbatches (faster under
     * the reference order) and is the one searched. */
    loom_stage_graph *u = mock_graph(3, 6);
    for (int p = 0; p < u->n_pairs; p++)
        for (int k = 0; k < LOOM_POLICY_COUNT; k++) {
            loom_policy_option *o = &u->layer_options[p * LOOM_POLICY_COUNT + k];
            o->forward_ms = 1;
            o->backward_ms = 2;
        }
    loom_graph_apply_policies(u);
    const loom_stage_graph *two[2] = {g, u};
    loom_mock_host_set_param(r.h, "max_evaluations", "10");
    ck_assert_int_eq(mock_rank(&r, two, 2, prio, &out, &err), LOOM_OK);
    ck_assert_int_eq(out.candidate, 1);
    ck_assert_int_eq(out.evaluations, 10); /* 2 screenings + 8 */
    ck_assert_double_eq_tol(out.best_makespan_ms, (6 + 3 - 1) * 3.0, 1e-9);

    /* No evaluator service: a clear error. */
    loom_mock_host *bare = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    mock_ranker_close(&r);
    const loom_ranker_vtable *vt = (const loom_ranker_vtable *)
        loom_static_exhaustive()->role(LOOM_ROLE_RANKER);
    void *self = NULL;
    ck_assert_int_eq(vt->create(loom_mock_host_api(bare), loom_mock_host_ctx(bare),
                                NULL, &self, &err), LOOM_OK);
    out = (loom_ranking)LOOM_RANKING_INIT;
    out.cap_priorities = 8;
    out.priorities = prio;
    ck_assert_int_eq(vt->rank(self, gs, 1, &out, &err), LOOM_ENOTFOUND);
    ck_assert_ptr_nonnull(strstr(err.message, "loom.evaluator"));
    vt->destroy(self);
    loom_mock_host_free(bare);
    loom_graph_free(u);
    loom_graph_free(g);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("exhaustive");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, finds_true_optimum);
    tcase_add_test(tc, precedence_and_threads);
    tcase_add_test(tc, max_evaluations_and_candidates);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(suite());
}
