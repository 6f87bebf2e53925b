/* test_colocated.c - the colocated-order kit (<loom/kits/colocated.h>)
 * on its own: the coarse encoder-first order of a small graph worked out
 * by hand (with and without priorities), the shape errors, and the
 * scheduling efficiency metric. */
#include <string.h>
#include <loom/kits/colocated.h>
#include <loom/mock_host.h>
#include <loom/mock_colocated.h>
#include "testutil.h"

/* An encoder flow (1 position on rank 0) feeding a 2-position backbone
 * on ranks 0 and 1, two microbatches. Stage ids (co_tg_id): microbatch 0:
 * encoder F 0, B 1; backbone F 2 (rank 0), 3 (rank 1), B 4 (rank 1), 5
 * (rank 0); microbatch 1: the same plus 6. */
static loom_stage_graph *small_graph(void)
{
    co_tg_flow fl[2];
    memset(fl, 0, sizeof fl);
    fl[0].n_pos = 1;
    fl[0].rank[0] = 0;
    fl[0].f_ms[0] = 0.5;
    fl[0].b_ms[0] = 1;
    fl[1].n_pos = 2;
    fl[1].n_inputs = 1;
    fl[1].inputs[0] = 0;
    fl[1].module = 1;
    for (int p = 0; p < 2; p++) {
        fl[1].rank[p] = p;
        fl[1].f_ms[p] = 1;
        fl[1].b_ms[p] = 2;
    }
    return co_tg_build(fl, 2, 2, 2);
}

/* Runs prepare + coarse; returns the status. */
static int coarse(loom_mock_host *h, const loom_stage_graph *g,
                  const float *prio, loom_schedule *s, loom_error *err)
{
    loom_co co;
    memset(&co, 0, sizeof co);
    co.host = loom_mock_host_api(h);
    int rc = loom_co_prepare(&co, g, NULL, prio, err);
    if (rc == LOOM_OK) {
        ck_assert_int_eq(co.main_flow, 1);
        ck_assert_int_eq(co.is_encoder[0], 1);
        ck_assert_int_eq(co.P, 2);
        ck_assert_int_eq(co.V, 1);
        ck_assert_int_eq(loom_co_stage(&co, co.mb_base[1 * co.M + 1], 1, 1), 10);
        ck_assert_int_eq(loom_co_stage(&co, co.mb_base[0], 0, 0), 0);
        rc = loom_co_coarse(&co, g, LOOM_CO_WARMUP_MEGATRON, s, err);
    }
    loom_co_free(&co);
    ck_assert_ptr_null(co.units);
    return rc;
}

/* Rank 0: encoder forwards (mb 0, 1), the backbone in 1F1B with one
 * warm-up forward (F0 F1 B0 B1), encoder backwards; rank 1: F0 B0 F1 B1.
 * With microbatch 1's groups ranked higher, microbatch 1 goes first. */
START_TEST(coarse_order_by_hand)
{
    loom_mock_host *h = loom_mock_host_new();
    loom_stage_graph *g = small_graph();
    ck_assert_int_eq(g->n_stages, 12);
    loom_schedule *s = loom_schedule_new(2, g->n_stages);
    loom_error err = {0};
    ck_assert_int_eq(coarse(h, g, NULL, s, &err), LOOM_OK);
    ck_assert_int_eq(s->n_stages, 12);
    ck_assert_int_eq(s->rank_off[1], 8);
    static const int32_t fifo[12] = {0, 6, 2, 8, 5, 11, 1, 7, 3, 4, 9, 10};
    ck_assert_mem_eq(s->order, fifo, sizeof fifo);

    const float prio[4] = {0, 0, 1, 1}; /* groups: mb * 2 + flow */
    ck_assert_int_eq(coarse(h, g, prio, s, &err), LOOM_OK);
    static const int32_t late_first[12] = {6, 0, 8, 2, 11, 5, 7, 1, 9, 10, 3, 4};
    ck_assert_mem_eq(s->order, late_first, sizeof late_first);

    loom_schedule_free(s);
    loom_graph_free(g);
    loom_mock_host_free(h);
}
END_TEST

START_TEST(shape_errors)
{
    loom_mock_host *h = loom_mock_host_new();
    co_tg_flow fl[2];
    memset(fl, 0, sizeof fl);
    for (int f = 0; f < 2; f++) { /* two flows, neither consumed */
        fl[f].n_pos = 1;
        fl[f].rank[0] = f;
        fl[f].f_ms[0] = 1;
        fl[f].b_ms[0] = 2;
    }
    loom_stage_graph *g = co_tg_build(fl, 2, 2, 1);
    loom_schedule *s = loom_schedule_new(2, g->n_stages);
    loom_error err = {0};
    ck_assert_int_eq(coarse(h, g, NULL, s, &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "expects one backbone flow and encoder flows, "
                                  "found non-encoder flows 0 and 1");
    loom_schedule_free(s);
    loom_graph_free(g);

    /* a backbone whose third position is back on rank 0 after ranks 0, 1
     * is not P x V: 3 positions over 2 ranks */
    memset(fl, 0, sizeof fl);
    fl[0].n_pos = 3;
    for (int p = 0; p < 3; p++) {
        fl[0].rank[p] = p % 2;
        fl[0].f_ms[p] = 1;
        fl[0].b_ms[p] = 2;
    }
    g = co_tg_build(fl, 1, 2, 1);
    s = loom_schedule_new(2, g->n_stages);
    ck_assert_int_eq(coarse(h, g, NULL, s, &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "expects the backbone flow as P x V positions, "
                                  "found 3 positions over 2 ranks");
    loom_schedule_free(s);
    loom_graph_free(g);
    loom_mock_host_free(h);
}
END_TEST

START_TEST(efficiency_metric)
{
    ck_assert_double_eq_tol(loom_co_efficiency(10, 100, 104), 0.6, 1e-12);
    ck_assert_double_eq(loom_co_efficiency(10, 100, 100), 1);
    ck_assert_double_eq(loom_co_efficiency(10, 100, 110), 0);
    ck_assert_double_eq(loom_co_efficiency(10, 100, 120), 0);
    ck_assert_double_eq(loom_co_efficiency(0, 100, 100), 1);
}
END_TEST

/* The suite: every test in one case. */
static Suite *suite(void)
{
    Suite *s = suite_create("kit-colocated");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, coarse_order_by_hand);
    tcase_add_test(tc, shape_errors);
    tcase_add_test(tc, efficiency_metric);
    suite_add_tcase(s, tc);
    return s;
}

/* Runs the suite. */
int main(void)
{
    return loom_test_main(suite());
}
