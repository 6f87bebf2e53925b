/* test_refine.c - the layout kit's simulated split refinement
 * (loom_lk_refine_split) with scorers in closed form: the heaviest
 * position's boundary layers move first, the budget and the stop hook
 * end the search, a plateau keeps the first split, memory violations
 * rank before makespan, and the scratch partition's room. */
#include <string.h>
#include <loom/kits/layout.h>
#include <loom/mock_host.h>
#include "testutil.h"

static const double unit[6] = {1, 1, 1, 1, 1, 1};

typedef struct scorer {
    int calls;
    int (*rule)(const int32_t *sizes, loom_lk_split_score *out);
    int stop_after; /* stop() says 1 once calls reach it (0: never) */
} scorer;

/* Sum of squared position loads of unit layers. */
static int squares(const int32_t *sizes, loom_lk_split_score *out)
{
    out->cap_violations = 0;
    out->makespan_ms = 0;
    for (int s = 0; s < 3; s++)
        out->makespan_ms += (double)sizes[s] * sizes[s];
    return LOOM_OK;
}

/* The largest load: a plateau around most splits. */
static int largest(const int32_t *sizes, loom_lk_split_score *out)
{
    out->cap_violations = 0;
    out->makespan_ms = 0;
    for (int s = 0; s < 3; s++)
        if (sizes[s] > out->makespan_ms)
            out->makespan_ms = sizes[s];
    return LOOM_OK;
}

/* A position of over 3 layers breaks the memory cap; else the time is
 * the first position's size (so [4, 1, 1] is fast but over the cap). */
static int capped(const int32_t *sizes, loom_lk_split_score *out)
{
    out->cap_violations = 0;
    for (int s = 0; s < 3; s++)
        out->cap_violations += sizes[s] > 3;
    out->makespan_ms = sizes[0];
    return LOOM_OK;
}

static int score(void *user, const int32_t *sizes, loom_lk_split_score *out, loom_error *err)
{
    (void)err;
    scorer *sc = user;
    sc->calls++;
    return sc->rule(sizes, out);
}

static int stop(void *user)
{
    scorer *sc = user;
    return sc->stop_after > 0 && sc->calls >= sc->stop_after;
}

/* Refines sizes[3] of six unit layers with `rule` and a budget. */
static loom_lk_refine run(int32_t *sizes, int (*rule)(const int32_t *, loom_lk_split_score *),
                          int32_t budget, int stop_after)
{
    scorer sc = {0, rule, stop_after};
    loom_lk_refine r = {0};
    r.max_evaluations = budget;
    r.score = score;
    r.stop = stop;
    r.user = &sc;
    int32_t order[3];
    double load[3];
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_lk_refine_split(unit, 3, sizes, order, load, &r, &err), LOOM_OK);
    ck_assert_int_eq(sc.calls, r.evaluations);
    return r;
}

START_TEST(heaviest_position_moves_first)
{
    /* [1,1,4] (squares 18): the heaviest, position 2, gives its first
     * layer to position 1: [1,2,3] (14, kept; 2 calls). From there
     * position 2 to 1 gives [1,3,2] (14, not better; 3), position 1 to 0
     * [2,1,3] (14; 4), position 1 to 2 would undo the kept move and
     * position 0 has one layer: the search ends on [1,2,3] though
     * [2,2,2] (12) is two moves away, a local optimum of single moves */
    int32_t sizes[3] = {1, 1, 4};
    loom_lk_refine r = run(sizes, squares, 100, 0);
    ck_assert_int_eq(sizes[0], 1);
    ck_assert_int_eq(sizes[1], 2);
    ck_assert_int_eq(sizes[2], 3);
    ck_assert_double_eq(r.initial.makespan_ms, 18.0);
    ck_assert_double_eq(r.best.makespan_ms, 14.0);
    ck_assert_int_eq(r.moves, 1);
    ck_assert_int_eq(r.evaluations, 4);
}
END_TEST

START_TEST(plateau_keeps_the_first_split)
{
    /* [2,2,2] under the largest load: no single move is strictly better,
     * every boundary move is tried once (4 moves + the start) */
    int32_t sizes[3] = {2, 2, 2};
    loom_lk_refine r = run(sizes, largest, 100, 0);
    ck_assert_int_eq(r.evaluations, 5);
    ck_assert_int_eq(r.moves, 0);
    ck_assert_int_eq(sizes[0], 2);
    ck_assert_int_eq(sizes[2], 2);
}
END_TEST

START_TEST(budget_and_stop_end_the_search)
{
    int32_t sizes[3] = {1, 1, 4};
    loom_lk_refine r = run(sizes, squares, 2, 0); /* the start and one move */
    ck_assert_int_eq(r.evaluations, 2);
    ck_assert_int_eq(r.moves, 1);
    ck_assert_int_eq(sizes[1], 2);
    ck_assert_int_eq(sizes[2], 3);
    int32_t again[3] = {1, 1, 4};
    r = run(again, squares, 100, 1); /* stop() after the first score */
    ck_assert_int_eq(r.evaluations, 1);
    ck_assert_int_eq(again[2], 4);
    int32_t none[3] = {1, 1, 4};
    r = run(none, squares, 0, 0); /* no budget: nothing scored */
    ck_assert_int_eq(r.evaluations, 0);
    ck_assert_int_eq(none[2], 4);
}
END_TEST

START_TEST(cap_violations_rank_first)
{
    /* [1,1,4] breaks the cap; [1,2,3] fits though its first position is
     * no faster; then [2,1,3] is slower (2 > 1), so the search keeps
     * [1,2,3] */
    int32_t sizes[3] = {1, 1, 4};
    loom_lk_refine r = run(sizes, capped, 100, 0);
    ck_assert_int_eq(r.initial.cap_violations, 1);
    ck_assert_int_eq(r.best.cap_violations, 0);
    ck_assert_int_eq(sizes[0], 1);
    ck_assert_int_eq(sizes[1], 2);
    ck_assert_int_eq(sizes[2], 3);
}
END_TEST

START_TEST(scratch_partition_room)
{
    static const loom_module mods[2] = {
        {"vision", LOOM_MODULE_ENCODER, 0, 3, NULL, 1, 0, 0, 0, NULL, 0},
        {"llm", LOOM_MODULE_BACKBONE, 0, 5, NULL, 1, 0, 0, 0, NULL, 0},
    };
    static const loom_model model = {"m", 2, mods};
    loom_problem pb;
    memset(&pb, 0, sizeof pb);
    pb.struct_size = sizeof pb;
    pb.kind = LOOM_PROBLEM_MODEL;
    pb.model = &model;
    pb.parallel.tp = 2;
    pb.parallel.pp = 2;
    pb.parallel.microbatches = 4;
    loom_mock_host *h = loom_mock_host_new();
    const loom_host_api *host = loom_mock_host_api(h);
    loom_partition *p = loom_lk_partition_new(host, &pb, 4, 7);
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(p->cap_positions, 4);
    ck_assert_int_eq(p->cap_spans, 6);
    ck_assert_int_eq(p->cap_microbatches, 4);
    ck_assert_int_eq(p->tp, 2);
    ck_assert_int_eq(p->sample_mb[2 * 7 - 1], -1);
    ck_assert_int_eq(p->subs[3], 1);
    ck_assert_double_eq(p->cp_attention_scale[3], 1.0);
    /* 8 layers over 4 positions, spans across the module boundary */
    const int32_t sizes[4] = {2, 2, 2, 2};
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_lk_layout(host, "t", &model, 2, 4, sizes, p, &err), LOOM_OK);
    ck_assert_int_eq(p->n_spans, 5);
    loom_lk_partition_free(host, p);
    loom_lk_partition_free(host, NULL);
    loom_mock_host_free(h);
}
END_TEST

/* The refinement suite of the layout kit. */
static Suite *suite(void)
{
    Suite *s = suite_create("kit-layout-refine");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, heaviest_position_moves_first);
    tcase_add_test(tc, plateau_keeps_the_first_split);
    tcase_add_test(tc, budget_and_stop_end_the_search);
    tcase_add_test(tc, cap_violations_rank_first);
    tcase_add_test(tc, scratch_partition_room);
    suite_add_tcase(s, tc);
    return s;
}

/* Runs the suite; exits non-zero when a check fails. */
int main(void)
{
    return loom_test_main(suite());
}
