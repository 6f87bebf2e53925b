/* test_run_choice.c - "choose": "run" in a planner manifest: one candidate
 * (split kind, virtual-stage count) for every iteration of the run, as a
 * Megatron-LM job is configured once. The choice is the candidate with the
 * least total makespan among those that fit the memory cap in every
 * iteration; the per-iteration choice can only match or beat it; a
 * partitioner whose candidates change from iteration to iteration is an
 * error naming both labels. */
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "engine_api.h"
#include "pipeline.h"
#include <loom/sys/problem.h>
#include <loom/sys/session.h>
#include "run_priv.h"

static loom_session s;

/* Opens `manifest` on `model` with `iterations` generated iterations
 * (seed 7). */
static void open_run(const char *manifest, const char *model, int iterations)
{
    loom_session_args a;
    loom_session_args_init(&a);
    a.manifest = manifest;
    a.model = model;
    a.iterations = iterations;
    a.seed = 7;
    a.has_seed = 1;
    loom_error err = {0};
    int rc = loom_session_init(&s, &a, &err);
    ck_assert_msg(rc == LOOM_OK, "%s", err.message);
}

/* Makespan of iteration k with candidate c forced; -1 when it cannot be
 * planned, and *over set when it exceeds the memory cap. */
static double forced_ms(int32_t c, int32_t k, int *over)
{
    loom_plan plan;
    loom_error err = {0};
    s.pl->fixed_candidate = c;
    int rc = loom_engine_plan(s.pl, &s.problem, &s.workload->iterations[k], &plan, &err);
    s.pl->fixed_candidate = -1;
    if (rc != LOOM_OK)
        return -1.0;
    double ms = plan.metrics.makespan_ms;
    *over |= plan.metrics.cap_violations > 0;
    loom_plan_clear(&plan);
    return ms;
}

enum { ITERATIONS = 4, MAX_CANDIDATES = 32 };

/* The least total makespan, over the first `iterations` iterations, of
 * the n candidates that can be planned and fit the memory cap in every
 * one of them (forced one at a time); -1 when none can. */
static double best_total_by_hand(int32_t n, int32_t iterations)
{
    double best = -1.0;
    for (int32_t c = 0; c < n; c++) {
        double total = 0.0;
        int over = 0, planned = 1;
        for (int32_t k = 0; k < iterations && planned; k++) {
            double ms = forced_ms(c, k, &over);
            planned = ms >= 0.0;
            total += ms;
        }
        if (planned && !over && (best < 0.0 || total < best))
            best = total;
    }
    return best;
}

/* Plans the first `iterations` iterations of session s and checks that
 * every one uses one candidate (label and index among all offered) under
 * the memory cap; returns the total makespan, the candidate in *chosen,
 * the number offered in *n and, when ms is not NULL, each iteration's
 * makespan in ms[]. */
static double run_total(int32_t iterations, int32_t *chosen, int32_t *n, double *ms)
{
    char label[64] = "";
    double total = 0.0;
    for (int32_t k = 0; k < iterations; k++) {
        loom_plan plan;
        loom_error err = {0};
        int rc = loom_session_plan(&s, k, &plan, &err);
        ck_assert_msg(rc == LOOM_OK, "%s", err.message);
        if (k == 0) {
            snprintf(label, sizeof label, "%s", plan.label);
            *chosen = plan.candidate;
            *n = plan.n_candidates;
        }
        ck_assert_str_eq(plan.label, label);
        ck_assert_int_eq(plan.candidate, *chosen);
        ck_assert_int_eq(plan.n_candidates, *n);
        ck_assert_int_eq(plan.metrics.cap_violations, 0);
        if (ms)
            ms[k] = plan.metrics.makespan_ms;
        total += plan.metrics.makespan_ms;
        loom_plan_clear(&plan);
    }
    return total;
}

START_TEST(the_run_gets_the_best_single_candidate)
{
    open_run(loom_test_src("examples/manifests/megatron-tuned.json"), "t2v-s", ITERATIONS);
    ck_assert(s.cfg->choose_run);
    /* the same candidate in every iteration, reported by its index among
     * all offered */
    int32_t chosen = -1, n = 0;
    double chosen_ms[ITERATIONS];
    double chosen_total = run_total(ITERATIONS, &chosen, &n, chosen_ms);
    ck_assert_int_gt(n, 1);
    ck_assert_int_le(n, MAX_CANDIDATES);

    /* every candidate by hand: none that fits in every iteration has a
     * smaller total, and the chosen one's plans are the forced ones */
    double best_ms[ITERATIONS];
    for (int32_t k = 0; k < ITERATIONS; k++)
        best_ms[k] = -1.0;
    for (int32_t c = 0; c < n; c++) {
        double total = 0.0;
        int over = 0, planned = 1;
        for (int32_t k = 0; k < ITERATIONS && planned; k++) {
            int over_k = 0;
            double ms = forced_ms(c, k, &over_k);
            planned = ms >= 0.0;
            total += ms;
            over |= over_k;
            if (c == chosen)
                ck_assert_double_eq_tol(ms, chosen_ms[k], 1e-9);
            if (planned && !over_k && (best_ms[k] < 0.0 || ms < best_ms[k]))
                best_ms[k] = ms;
        }
        if (planned && !over)
            ck_assert_msg(chosen_total <= total + 1e-6, "candidate %d: %g < chosen %g", c,
                          total, chosen_total);
    }

    /* the ranker's own choice in each iteration can only match or beat
     * one candidate for all: it takes each iteration's fastest */
    s.cfg->choose_run = 0;
    double free_total = 0.0;
    for (int32_t k = 0; k < ITERATIONS; k++) {
        loom_plan plan;
        loom_error err = {0};
        ck_assert_int_eq(loom_session_plan(&s, k, &plan, &err), LOOM_OK);
        ck_assert_double_eq_tol(plan.metrics.makespan_ms, best_ms[k], 1e-6);
        free_total += plan.metrics.makespan_ms;
        loom_plan_clear(&plan);
    }
    ck_assert(free_total <= chosen_total + 1e-6);
    /* and here it beats it: t2v-s's iterations prefer different
     * virtual-stage counts (15, 3, 5 and 5 for seed 7), a run cannot */
    ck_assert_msg(free_total < chosen_total - 1.0, "free %g, run %g", free_total, chosen_total);
    loom_session_release(&s);
}
END_TEST

START_TEST(a_candidate_that_cannot_be_planned_is_skipped)
{
    /* on t2v-l, one candidate does not fit the cap even with full
     * recomputation, so the memory tuner fails it in iteration 0: the
     * choice skips it and still takes the best of the others */
    open_run(loom_test_src("examples/manifests/megatron-tuned.json"), "t2v-l", 2);
    int32_t chosen = -1, n = 0;
    double total = run_total(2, &chosen, &n, NULL);
    ck_assert_int_gt(n, 1);
    int32_t failing = -1;
    for (int32_t c = 0; c < n && failing < 0; c++) {
        int over = 0;
        if (forced_ms(c, 0, &over) < 0.0)
            failing = c;
    }
    ck_assert_msg(failing >= 0, "every one of the %d candidates can be planned", n);
    ck_assert_int_ne(chosen, failing);
    double best = best_total_by_hand(n, 2);
    ck_assert(best > 0.0);
    ck_assert_double_eq_tol(total, best, 1e-6);
    loom_session_release(&s);
}
END_TEST

/* balanced-dp re-splitting on each iteration's mean, choosing once. */
static const char *const RESPLIT =
    "{\"loom_planner\": 1, \"choose\": \"run\", \"pipeline\": ["
    "{\"role\": \"cost_model\", \"use\": \"roofline\"},"
    "{\"role\": \"partitioner\", \"use\": \"balanced-dp\","
    " \"params\": {\"reference\": \"iteration\"}},"
    "{\"role\": \"ranker\", \"use\": \"min-latency\"},"
    "{\"role\": \"interleaver\", \"use\": \"1f1b\"},"
    "{\"role\": \"memory_tuner\", \"use\": \"none\"}]}";

START_TEST(candidates_must_not_change_between_iterations)
{
    /* balanced-dp re-splitting on each iteration's mean offers a
     * different split in every iteration: no choice for the run exists */
    const char *manifest = loom_test_tmpfile(".json", RESPLIT);
    open_run(manifest, "vlm-m", 3);
    loom_plan plan;
    loom_error err = {0};
    ck_assert_int_eq(loom_session_plan(&s, 0, &plan, &err), LOOM_EINVAL);
    const char *head = "choose run: candidate 0 is \"balanced-dp pp=4 vpp=1 max=";
    ck_assert_msg(strncmp(err.message, head, strlen(head)) == 0 &&
                      strstr(err.message, "\" in iteration 1; a choice for the whole run needs "
                                          "partitioners that offer the same candidates every "
                                          "iteration") != NULL,
                  "%s", err.message);
    loom_session_release(&s);
    remove(manifest);

    /* the same manifest with one iteration has nothing to disagree with */
    manifest = loom_test_tmpfile(".json", RESPLIT);
    open_run(manifest, "vlm-m", 1);
    ck_assert_msg(loom_session_plan(&s, 0, &plan, &err) == LOOM_OK, "%s", err.message);
    loom_plan_clear(&plan);
    loom_session_release(&s);
    remove(manifest);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("run_choice");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, the_run_gets_the_best_single_candidate);
    tcase_add_test(tc, candidates_must_not_change_between_iterations);
    tcase_add_test(tc, a_candidate_that_cannot_be_planned_is_skipped);
    suite_add_tcase(su, tc);
    return loom_test_main(su);
}
