/* test_random.c - the random ranker on a non-uniform stage-times graph
 * with the dual-queue mock evaluator: bounded by the brute-force optimum,
 * reproducible per seed and thread count, precedence always respected. */
#include <loom/mock_search.h>
#include <loom/kits/search.h>

const loom_plugin_info *loom_static_random(void);

START_TEST(bounded_by_optimum_and_reproducible)
{
    loom_stage_graph *g = mock_graph(3, 7);
    static const int pairs[] = {6, 0, 2, 4};
    mock_precede(g, pairs, 2);
    mock_ranker r = mock_ranker_open(loom_static_random());
    int64_t n_valid = 0;
    double best = mock_optimum(r.h, g, &n_valid);
    ck_assert_int_eq(n_valid, 5040 / 4);

    loom_mock_host_set_param(r.h, "max_evaluations", "300");
    loom_mock_host_set_param(r.h, "seed", "11");
    loom_mock_host_set_param(r.h, "budget_ms", "60000");
    float p1[8], p2[8], p3[8];
    loom_ranking o1 = LOOM_RANKING_INIT, o2 = LOOM_RANKING_INIT, o3 = LOOM_RANKING_INIT;
    loom_error err = {0};
    const loom_stage_graph *gs[1] = {g};
    ck_assert_int_eq(mock_rank(&r, gs, 1, p1, &o1, &err), LOOM_OK);
    ck_assert_int_eq(o1.evaluations, 300);
    ck_assert_double_ge(o1.best_makespan_ms, best - 1e-9);
    ck_assert(mock_valid(g, p1));

    ck_assert_int_eq(mock_rank(&r, gs, 1, p2, &o2, &err), LOOM_OK);
    ck_assert_mem_eq(p1, p2, 7 * sizeof(float));
    ck_assert_double_eq(o2.best_makespan_ms, o1.best_makespan_ms);

    loom_mock_host_set_param(r.h, "threads", "3");
    ck_assert_int_eq(mock_rank(&r, gs, 1, p3, &o3, &err), LOOM_OK);
    ck_assert_mem_eq(p1, p3, 7 * sizeof(float));
    ck_assert_int_eq(o3.evaluations, 300);
    mock_ranker_close(&r);
    loom_graph_free(g);
}
END_TEST

START_TEST(time_budget_stops)
{
    loom_stage_graph *g = mock_graph(3, 8);
    mock_ranker r = mock_ranker_open(loom_static_random());
    loom_mock_host_set_param(r.h, "budget_ms", "30");
    float prio[8];
    loom_ranking out = LOOM_RANKING_INIT;
    loom_error err = {0};
    const loom_stage_graph *gs[1] = {g};
    double t0 = loom_mock_host_api(r.h)->now_ms();
    ck_assert_int_eq(mock_rank(&r, gs, 1, prio, &out, &err), LOOM_OK);
    double spent = loom_mock_host_api(r.h)->now_ms() - t0;
    ck_assert_double_lt(spent, 2000);
    ck_assert_int_gt(out.evaluations, 1);
    ck_assert_int_ge(loom_mock_host_progress_calls(r.h), 1);
    ck_assert_double_eq(loom_mock_host_best_makespan_ms(r.h),
                            out.best_makespan_ms);
    mock_ranker_close(&r);
    loom_graph_free(g);
}
END_TEST

/* budget_iterations: a budget far below one reference iteration ends
 * the search after the screening run; with max_evaluations set (as in
 * deterministic mode) the count decides instead. */
START_TEST(iteration_budget_stops)
{
    loom_stage_graph *g = mock_graph(3, 8);
    mock_ranker r = mock_ranker_open(loom_static_random());
    loom_mock_host_set_param(r.h, "budget_ms", "60000");
    loom_mock_host_set_param(r.h, "max_evaluations", "200");
    loom_mock_host_set_param(r.h, "budget_iterations", "0.000001");
    float prio[8];
    loom_ranking out = LOOM_RANKING_INIT;
    loom_error err = {0};
    const loom_stage_graph *gs[1] = {g};
    ck_assert_int_eq(mock_rank(&r, gs, 1, prio, &out, &err), LOOM_OK);
    ck_assert_int_eq(out.evaluations, 200);
    loom_mock_host_set_param(r.h, "max_evaluations", "0");
    double t0 = loom_mock_host_api(r.h)->now_ms();
    ck_assert_int_eq(mock_rank(&r, gs, 1, prio, &out, &err), LOOM_OK);
    ck_assert_int_eq(out.evaluations, 1);
    ck_assert_double_lt(loom_mock_host_api(r.h)->now_ms() - t0, 2000);
    ck_assert(mock_valid(g, prio));
    mock_ranker_close(&r);
    loom_graph_free(g);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("random");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, bounded_by_optimum_and_reproducible);
    tcase_add_test(tc, time_budget_stops);
    tcase_add_test(tc, iteration_budget_stops);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(suite());
}
