/* test_ilp_memory.c - the "ilp" memory tuner: never over a feasible cap,
 * never slower than the greedy and knapsack tuners, optimal over the
 * knapsack candidates on instances small enough to enumerate, its warm
 * start past the host's deadline, infeasible caps and params. */
#include <math.h>
#include <stdio.h>

#include <loom/kits/memtune.h>
#include <loom/mock_memtune.h>
#include <loom/kits/mckp.h>
#include "ilp_memory.h"
#include <loom/mock_sim.h>

const loom_plugin_info *loom_static_ilp_memory(void);
const loom_plugin_info *loom_static_greedy(void);
const loom_plugin_info *loom_static_knapsack(void);

/* A seeded instance with a cap `frac` of the way from the most frugal
 * peak to the NONE peak, and static bytes that differ per rank. */
static loom_stage_graph *instance(uint64_t seed, int P, int M, int E,
                                  int split, int gpipe, double frac,
                                  loom_schedule **s_out)
{
    loom_stage_graph *g = mtt_chain(P, M, E, split, seed);
    loom_schedule *s = mtt_order(P, M, split, gpipe);
    for (int r = 0; r < P; r++)
        g->static_bytes[r] = 1500 * ((r + (int)seed) % P);
    int64_t lo = mtt_uniform_peak(g, s, LOOM_POLICY_FULL);
    int64_t hi = mtt_uniform_peak(g, s, LOOM_POLICY_NONE);
    g->memory_cap_bytes = floor((double)lo + (double)(hi - lo) * frac);
    *s_out = s;
    return g;
}

START_TEST(never_slower_than_greedy_or_knapsack)
{
    const loom_memory_tuner_vtable *ilp = mtt_vtable(loom_static_ilp_memory());
    const loom_memory_tuner_vtable *gr = mtt_vtable(loom_static_greedy());
    const loom_memory_tuner_vtable *ks = mtt_vtable(loom_static_knapsack());
    loom_error err = {0};
    for (uint64_t seed = 1; seed <= 20; seed++) {
        loom_schedule *s = NULL;
        int P = 2 + (int)(seed % 3);
        loom_stage_graph *g =
            instance(seed, P, 3 + (int)(seed % 4), 1 + (int)(seed % 4),
                     (int)(seed / 2 % 2), (int)(seed / 4 % 2),
                     0.15 + 0.1 * (double)(seed % 7), &s);
        size_t n = (size_t)g->n_layer_entries;
        uint8_t *a = malloc(n), *b = malloc(n), *c = malloc(n);
        ck_assert_int_eq(mtt_tune(ilp, NULL, (int)(seed % 2), g, s, a, &err),
                         LOOM_OK);
        ck_assert_int_eq(mtt_tune(gr, NULL, 1, g, s, b, &err), LOOM_OK);
        ck_assert_int_eq(mtt_tune(ks, NULL, 1, g, s, c, &err), LOOM_OK);
        loom_metrics m = mtt_simulate(g, s, a, NULL);
        ck_assert_int_eq(m.cap_violations, 0);
        double la = mtt_latency(g, a), lb = mtt_latency(g, b),
               lc = mtt_latency(g, c);
        ck_assert_msg(la <= lb + 1e-9 && la <= lc + 1e-9,
                      "seed %llu: ilp %.9g greedy %.9g knapsack %.9g",
                      (unsigned long long)seed, la, lb, lc);
        free(a);
        free(b);
        free(c);
        loom_schedule_free(s);
        loom_graph_free(g);
    }
}
END_TEST

/* A clone of g and a simulator scratch for evaluating many choices. */
typedef struct evaluator {
    loom_stage_graph *c;
    loom_sim_scratch *scratch;
    const loom_schedule *s;
} evaluator;

/* Total latency of `pol` when it fits the cap, else HUGE_VAL. */
static double evaluate(evaluator *ev, const uint8_t *pol)
{
    memcpy(ev->c->layer_policy, pol, (size_t)ev->c->n_layer_entries);
    loom_graph_apply_policies(ev->c);
    loom_metrics m = LOOM_METRICS_INIT;
    loom_error err = {0};
    ck_assert_int_eq(loom_mock_simulator()->simulate(ev->scratch, ev->c, ev->s, &m, &err),
                     LOOM_OK);
    return m.cap_violations == 0 ? mtt_latency(ev->c, pol) : HUGE_VAL;
}

/* Smallest total latency over every choice of one candidate per pair
 * that fits the cap (odometer over the candidate sets). */
static double best_over_candidates(evaluator *ev, const loom_mckp_set *set)
{
    const loom_stage_graph *g = ev->c;
    int32_t n = g->n_pairs;
    int32_t *pick = calloc((size_t)n, sizeof *pick);
    uint8_t *pol = malloc((size_t)g->n_layer_entries);
    double best = HUGE_VAL;
    for (;;) {
        for (int32_t p = 0; p < n; p++)
            loom_mckp_apply(set, g, p, set->cand_off[p] + pick[p], pol);
        double lat = evaluate(ev, pol);
        if (lat < best)
            best = lat;
        int32_t p = 0;
        while (p < n && ++pick[p] == set->cand_off[p + 1] - set->cand_off[p])
            pick[p++] = 0;
        if (p == n)
            break;
    }
    free(pick);
    free(pol);
    return best;
}

/* Smallest total latency over every per-layer choice that fits. */
static double best_over_layers(evaluator *ev)
{
    int32_t n = ev->c->n_layer_entries;
    uint8_t *pol = calloc((size_t)n, 1);
    double best = HUGE_VAL;
    for (;;) {
        double lat = evaluate(ev, pol);
        if (lat < best)
            best = lat;
        int32_t e = 0;
        while (e < n && ++pol[e] == LOOM_POLICY_COUNT)
            pol[e++] = 0;
        if (e == n)
            break;
    }
    free(pol);
    return best;
}

/* With gap 0, the result is at least as good as the best choice over the
 * candidates, and no better than the best choice over single layers. The
 * ILP must beat both greedy warm starts on some of these instances. On a
 * host already past its deadline the tuner skips the ILP and returns its
 * warm start: within the cap, no slower than greedy or knapsack, and on
 * some instances slower than the ILP's result. */
START_TEST(optimal_over_candidates_on_small_instances)
{
    const loom_memory_tuner_vtable *ilp = mtt_vtable(loom_static_ilp_memory());
    const loom_memory_tuner_vtable *gr = mtt_vtable(loom_static_greedy());
    const loom_memory_tuner_vtable *ks = mtt_vtable(loom_static_knapsack());
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    loom_mckp_set set;
    memset(&set, 0, sizeof set);
    loom_error err = {0};
    const char *exact[] = {"gap", "0", "k", "4", NULL};
    const char *k4[] = {"k", "4", NULL};
    int beat_both = 0, late_slower = 0;
    for (uint64_t seed = 1; seed <= 24; seed++) {
        loom_schedule *s = NULL;
        loom_stage_graph *g = instance(seed, 2, 2, 2, (int)(seed % 2), 0,
                                       0.1 + 0.05 * (double)(seed % 10), &s);
        size_t n = (size_t)g->n_layer_entries;
        uint8_t *a = malloc(n), *b = malloc(n), *c = malloc(n),
                *late = malloc(n);
        ck_assert_int_eq(mtt_tune(ilp, exact, 1, g, s, a, &err), LOOM_OK);
        ck_assert_int_eq(mtt_tune(gr, NULL, 1, g, s, b, &err), LOOM_OK);
        ck_assert_int_eq(mtt_tune(ks, k4, 1, g, s, c, &err), LOOM_OK);
        /* past the host's deadline: no ILP, the warm start (per rank the
         * better of greedy and knapsack), within the cap */
        ck_assert_int_eq(mtt_tune_budget(ilp, exact, 1, 0, g, s, late, &err),
                         LOOM_OK);
        ck_assert_int_eq(loom_mckp_build(loom_mock_host_api(h), &set, g, 4, 64,
                                         &err), LOOM_OK);
        double la = mtt_latency(g, a);
        evaluator ev = {loom_graph_clone(g), loom_mock_simulator()->scratch_new(), s};
        double cand = best_over_candidates(&ev, &set);
        double layers = best_over_layers(&ev);
        loom_mock_simulator()->scratch_free(ev.scratch);
        loom_graph_free(ev.c);
        ck_assert_msg(la <= cand + 1e-9, "seed %llu: ilp %.9g, candidates %.9g",
                      (unsigned long long)seed, la, cand);
        ck_assert(la >= layers - 1e-9);
        ck_assert_int_eq(mtt_simulate(g, s, a, NULL).cap_violations, 0);
        if (la < mtt_latency(g, b) - 1e-9 && la < mtt_latency(g, c) - 1e-9)
            beat_both++;
        double ll = mtt_latency(g, late);
        ck_assert_int_eq(mtt_simulate(g, s, late, NULL).cap_violations, 0);
        ck_assert(ll >= la - 1e-9);
        ck_assert(ll <= mtt_latency(g, b) + 1e-9 && ll <= mtt_latency(g, c) + 1e-9);
        if (ll > la + 1e-9)
            late_slower++; /* the ILP would have beaten the warm start */
        free(a);
        free(b);
        free(c);
        free(late);
        loom_schedule_free(s);
        loom_graph_free(g);
    }
    ck_assert_int_gt(beat_both, 0);
    ck_assert_int_gt(late_slower, 0);
    loom_mckp_free(loom_mock_host_api(h), &set);
    loom_mock_host_free(h);
}
END_TEST

/* The window bound never exceeds the true extra latency a rank must pay
 * over all-fastest (brute force over the candidates of its pairs). */
START_TEST(window_bound_is_a_lower_bound)
{
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    const loom_host_api *host = loom_mock_host_api(h);
    loom_mckp_set set;
    loom_mt_timeline t;
    loom_ilpm_work w;
    memset(&set, 0, sizeof set);
    memset(&t, 0, sizeof t);
    memset(&w, 0, sizeof w);
    loom_error err = {0};
    int positive = 0;
    for (uint64_t seed = 1; seed <= 12; seed++) {
        loom_schedule *s = NULL;
        loom_stage_graph *g = instance(seed, 2, 3 + (int)(seed % 2), 1,
                                       (int)(seed % 2), (int)(seed / 2 % 2),
                                       0.2 + 0.05 * (double)(seed % 6), &s);
        ck_assert_int_eq(loom_mckp_build(host, &set, g, 4, 64, &err), LOOM_OK);
        ck_assert_int_eq(loom_mt_timeline_build(host, &t, g, s, &err), LOOM_OK);
        int32_t rows = loom_ilpm_rows(host, &w, &t, g, &set);
        ck_assert_int_ge(rows, 0);
        for (int32_t lo = 0; lo < rows;) {
            int32_t r = w.row_rank[lo], hi = lo;
            while (hi < rows && w.row_rank[hi] == r)
                hi++;
            double bound = loom_ilpm_window_bound(host, &w, &t, g, &set, r,
                                                  lo, hi);
            /* brute force over the rank's pairs' candidates */
            int32_t a = t.rank_pair_off[r], b = t.rank_pair_off[r + 1];
            int32_t pick[16] = {0};
            int64_t bytes[64];
            double best = HUGE_VAL, fast = 0.0;
            for (int32_t i = a; i < b; i++)
                fast += set.cand_ms[set.cand_off[t.rank_pairs[i]]];
            for (;;) {
                double ms = 0.0;
                for (int32_t i = a; i < b; i++) {
                    int32_t p = t.rank_pairs[i];
                    int32_t c = set.cand_off[p] + pick[i - a];
                    bytes[p] = set.cand_bytes[c];
                    ms += set.cand_ms[c];
                }
                int64_t peak = loom_mt_rank_peak(&t, r, bytes);
                if ((double)(peak + g->static_bytes[r]) <= g->memory_cap_bytes &&
                    ms < best)
                    best = ms;
                int32_t i = a;
                while (i < b && ++pick[i - a] == set.cand_off[t.rank_pairs[i] + 1] -
                                                     set.cand_off[t.rank_pairs[i]])
                    pick[i++ - a] = 0;
                if (i == b)
                    break;
            }
            ck_assert_msg(bound <= best - fast + 1e-9,
                          "seed %llu rank %d: bound %.9g > extra %.9g",
                          (unsigned long long)seed, r, bound, best - fast);
            positive += bound > 0.0;
            lo = hi;
        }
        loom_schedule_free(s);
        loom_graph_free(g);
    }
    ck_assert_int_gt(positive, 0);
    loom_ilpm_free(host, &w);
    loom_mt_timeline_free(host, &t);
    loom_mckp_free(host, &set);
    loom_mock_host_free(h);
}
END_TEST

START_TEST(no_cap_and_loose_cap_take_the_fastest)
{
    const loom_memory_tuner_vtable *ilp = mtt_vtable(loom_static_ilp_memory());
    loom_schedule *s = NULL;
    loom_stage_graph *g = instance(3, 3, 4, 2, 0, 0, 2.0, &s);
    uint8_t *a = malloc((size_t)g->n_layer_entries);
    loom_error err = {0};
    ck_assert_int_eq(mtt_tune(ilp, NULL, 1, g, s, a, &err), LOOM_OK);
    for (int32_t e = 0; e < g->n_layer_entries; e++)
        ck_assert_int_eq(a[e], LOOM_POLICY_NONE);
    g->memory_cap_bytes = 0;
    ck_assert_int_eq(mtt_tune(ilp, NULL, 0, g, s, a, &err), LOOM_OK);
    for (int32_t e = 0; e < g->n_layer_entries; e++)
        ck_assert_int_eq(a[e], LOOM_POLICY_NONE);
    free(a);
    loom_schedule_free(s);
    loom_graph_free(g);
}
END_TEST

START_TEST(infeasible_cap_names_rank_and_bytes)
{
    const loom_memory_tuner_vtable *ilp = mtt_vtable(loom_static_ilp_memory());
    loom_schedule *s = NULL;
    loom_stage_graph *g = instance(11, 3, 5, 2, 1, 0, 0.5, &s);
    int64_t peaks[3];
    uint8_t *a = malloc((size_t)g->n_layer_entries);
    memset(a, LOOM_POLICY_FULL, (size_t)g->n_layer_entries);
    mtt_simulate(g, s, a, peaks);
    int worst = 0;
    for (int r = 1; r < 3; r++)
        if (peaks[r] > peaks[worst])
            worst = r;
    g->memory_cap_bytes = (double)(peaks[worst] - 123);
    loom_error err = {0};
    ck_assert_int_eq(mtt_tune(ilp, NULL, 1, g, s, a, &err), LOOM_EINFEASIBLE);
    char want[64];
    snprintf(want, sizeof want, "ilp: rank %d is 123 bytes short", worst);
    ck_assert_msg(strstr(err.message, want), "%s", err.message);
    free(a);
    loom_schedule_free(s);
    loom_graph_free(g);
}
END_TEST

START_TEST(params_are_checked)
{
    const loom_memory_tuner_vtable *vt = mtt_vtable(loom_static_ilp_memory());
    const char *bad[][2] = {{"gap", "1.5"}, {"timeout_ms", "0"}, {"k", "1"},
                            {"resolution", "0"}, {"gap", "x"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
        loom_mock_host_set_param(h, bad[i][0], bad[i][1]);
        void *self = NULL;
        loom_error err = {0};
        ck_assert_int_eq(vt->create(loom_mock_host_api(h),
                                    loom_mock_host_ctx(h), NULL, &self, &err),
                         LOOM_EINVAL);
        char want[32];
        snprintf(want, sizeof want, "params.%s", bad[i][0]);
        ck_assert_msg(strstr(err.message, want), "%s", err.message);
        loom_mock_host_free(h);
    }
}
END_TEST

/* Plans VLM-S iteration 0 with the PipeWeaver manifest (ranker fifo),
 * memory tuner `tuner` and the given cap; returns the plan's metrics. */
static loom_metrics plan_with(const char *tuner, double cap, int *rc_out)
{
    char manifest[4200], use[64], mem[64];
    snprintf(manifest, sizeof manifest, "manifest=%s",
             loom_test_src("examples/manifests/pipeweaver.json"));
    snprintf(use, sizeof use, "use=memory_tuner=%s", tuner);
    snprintf(mem, sizeof mem, "memory-cap=%.17g", cap); /* exact round trip */
    const char *const opts[] = {manifest, "model=vlm-s", "iterations=1", mem,
                                "use=ranker=fifo", use, NULL};
    loom_mock_planner *pl = NULL;
    loom_error err = {0};
    ck_assert_msg(loom_mock_planner_open(opts, &pl, &err) == LOOM_OK, "%s",
                  err.message);
    loom_mock_plan plan;
    loom_metrics m = LOOM_METRICS_INIT;
    *rc_out = loom_mock_planner_plan(pl, 0, &plan, &err);
    if (*rc_out == LOOM_OK)
        m = *plan.metrics;
    m.span_ms = NULL;
    m.peak_bytes = NULL;
    m.start_ms = NULL;
    m.end_ms = NULL;
    loom_mock_planner_close(pl);
    return m;
}

/* End to end through the engine: with a cap below the uncapped peak, the
 * greedy, knapsack and ilp-memory tuners all produce plans that fit it. */
START_TEST(engine_plans_fit_the_cap)
{
    int rc = 0;
    loom_metrics free_run = plan_with("none", 0, &rc);
    ck_assert_int_eq(rc, LOOM_OK);
    double cap = 0.9 * (double)free_run.max_peak_bytes;
    const char *tuners[] = {"greedy", "knapsack", "ilp-memory"};
    for (int i = 0; i < 3; i++) {
        loom_metrics m = plan_with(tuners[i], cap, &rc);
        ck_assert_msg(rc == LOOM_OK, "%s failed", tuners[i]);
        ck_assert_int_eq(m.cap_violations, 0);
        ck_assert_msg((double)m.max_peak_bytes <= cap, "%s: peak %lld > %.0f",
                      tuners[i], (long long)m.max_peak_bytes, cap);
    }
}
END_TEST

/* Offload (param offload): caps kept, never slower than recomputation
 * alone, chosen when cheaper, and the missing-bandwidth error. */
START_TEST(offload_is_a_superset)
{
    mtt_check_offload(mtt_vtable(loom_static_ilp_memory()), "ilp");
}
END_TEST

/* The suite: every test in one case. */
static Suite *suite(void)
{
    Suite *s = suite_create("ilp-memory");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, never_slower_than_greedy_or_knapsack);
    tcase_add_test(tc, optimal_over_candidates_on_small_instances);
    tcase_add_test(tc, window_bound_is_a_lower_bound);
    tcase_add_test(tc, no_cap_and_loose_cap_take_the_fastest);
    tcase_add_test(tc, infeasible_cap_names_rank_and_bytes);
    tcase_add_test(tc, params_are_checked);
    tcase_add_test(tc, engine_plans_fit_the_cap);
    tcase_add_test(tc, offload_is_a_superset);
    suite_add_tcase(s, tc);
    return s;
}

/* Runs the suite. */
int main(void)
{
    return loom_test_main(suite());
}
