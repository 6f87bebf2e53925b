/* test_ilp.c - the exact "ilp" interleaver: equal to a brute-force
 * optimum over every per-rank order (simulated with the core simulator)
 * on small non-uniform instances, with and without a memory cap and with
 * split backward; never beaten by 1f1b, gpipe or dual-queue; the P = 4,
 * M = 8 closed form; the uneven-microbatch DynaPipe case proven at 29.1;
 * params and errors. */
#include <loom/mock_host.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <loom/kits/graph.h>
#include <loom/mock_sim.h>
#include "ilp.h"
#include "testutil.h"

const loom_plugin_info *loom_static_ilp(void);
const loom_plugin_info *loom_static_1f1b(void);
const loom_plugin_info *loom_static_gpipe(void);
const loom_plugin_info *loom_static_zero_bubble(void);
/* dual-queue is another engineer's plugin: used when it is linked in */
const loom_plugin_info *loom_static_dual_queue(void) __attribute__((weak));

/* ---- instances ------------------------------------------------------------ */

static double FWD[16], BWD[16], IG[16], WG[16], ACT[16], SCALE[16];
static int UNIFORM; /* 1: every microbatch scale 1 (identical microbatches) */

/* A stage-times graph with dyadic, seed-dependent times (so sums are
 * exact): forward 1..2.75 ms, backward 1.5..3.25 ms per position,
 * microbatch scales 0.75..1.5, P2P 0.25 ms. */
static loom_stage_graph *instance(int P, int M, int split, uint64_t seed,
                                  double cap)
{
    uint64_t st = seed * 0x9e3779b97f4a7c15ULL + 1;
    for (int s = 0; s < P; s++) {
        FWD[s] = 1.0 + 0.25 * (double)(loom_mock_splitmix64(&st) % 8);
        BWD[s] = 1.5 + 0.25 * (double)(loom_mock_splitmix64(&st) % 8);
        IG[s] = BWD[s] / 2;
        WG[s] = BWD[s] - IG[s];
        ACT[s] = 100.0 + 10.0 * (double)(loom_mock_splitmix64(&st) % 4);
    }
    for (int mb = 0; mb < M; mb++)
        SCALE[mb] = UNIFORM ? 1.0 : 0.75 + 0.25 * (double)(loom_mock_splitmix64(&st) % 4);
    loom_stage_times t;
    memset(&t, 0, sizeof t);
    t.ranks = P;
    t.microbatches = M;
    t.virtual_stages = 1;
    t.split_backward = split;
    t.forward_ms = FWD;
    t.backward_ms = BWD;
    t.input_grad_ms = IG;
    t.weight_grad_ms = WG;
    t.microbatch_scale = SCALE;
    t.activation_bytes = ACT;
    t.p2p_ms = 0.25;
    t.memory_cap_bytes = cap;
    loom_stage_graph *g = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_graph_from_stage_times(&t, split, &g, &err), LOOM_OK);
    return g;
}

/* Runs an interleaver vtable on a fresh mock host with params ("key",
 * "value", ..., NULL); the schedule goes to *out (caller frees). */
static int run(const loom_plugin_info *info, const char *const *params,
               const loom_stage_graph *g, loom_schedule **out,
               loom_error *err)
{
    const loom_interleaver_vtable *vt =
        (const loom_interleaver_vtable *)info->role(LOOM_ROLE_INTERLEAVER);
    ck_assert_ptr_nonnull(vt);
    loom_mock_host *h = loom_test_mock_host(info); /* the plugin's own params */
    for (int i = 0; params && params[i]; i += 2)
        loom_mock_host_set_param(h, params[i], params[i + 1]);
    void *self = NULL;
    ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h),
                                NULL, &self, err), LOOM_OK);
    *out = loom_schedule_new(g->n_ranks, g->n_stages);
    int rc = vt->interleave(self, g, NULL, *out, err);
    vt->destroy(self);
    loom_mock_host_free(h);
    return rc;
}

/* Simulated makespan of a schedule (asserting it runs and fits). */
static double makespan(const loom_stage_graph *g, const loom_schedule *s)
{
    loom_metrics m = LOOM_METRICS_INIT;
    loom_error err = {0};
    ck_assert_msg(loom_mock_simulate(g, s, &m, &err) == LOOM_OK, "%s", err.message);
    ck_assert_int_eq(m.cap_violations, 0);
    return m.makespan_ms;
}

/* ---- brute force ------------------------------------------------------------ */

/* Every permutation of one rank's stages that lists no stage before one
 * it depends on (others deadlock), as rows of `len` stage ids. */
typedef struct perms {
    int32_t len, count, cap;
    int32_t *rows;
} perms;

/* 1 when v depends on u (depth-first search over predecessors). */
static int depends(const loom_stage_graph *g, int32_t v, int32_t u)
{
    for (int32_t k = g->pred_off[v]; k < g->pred_off[v + 1]; k++)
        if (g->pred[k] == u || depends(g, g->pred[k], u))
            return 1;
    return 0;
}

/* Extends the prefix a[0..k) with every remaining stage in turn. */
static void permute(const loom_stage_graph *g, int32_t *a, int32_t k,
                    int32_t len, perms *out)
{
    if (k == len) {
        if (out->count == out->cap) {
            out->cap = out->cap ? 2 * out->cap : 64;
            out->rows = realloc(out->rows,
                                (size_t)out->cap * (size_t)len * sizeof(int32_t));
        }
        memcpy(&out->rows[(size_t)out->count++ * (size_t)len], a,
               (size_t)len * sizeof(int32_t));
        return;
    }
    for (int32_t i = k; i < len; i++) {
        int32_t t = a[k];
        a[k] = a[i];
        a[i] = t;
        int ok = 1; /* a[k] must not depend on anything placed after it */
        for (int32_t j = k + 1; j < len && ok; j++)
            ok = !depends(g, a[k], a[j]);
        if (ok)
            permute(g, a, k + 1, len, out);
        a[i] = a[k];
        a[k] = t;
    }
}

/* The smallest simulated makespan over every combination of per-rank
 * orders that runs (and fits the cap). */
static double brute_force(const loom_stage_graph *g)
{
    int32_t P = g->n_ranks;
    perms pr[8];
    memset(pr, 0, sizeof pr);
    loom_schedule *s = loom_schedule_new(P, g->n_stages);
    int32_t k = 0;
    for (int32_t r = 0; r < P; r++) {
        int32_t a[32], len = 0;
        for (int32_t v = 0; v < g->n_stages; v++)
            if (g->rank[v] == r)
                a[len++] = v;
        pr[r].len = len;
        permute(g, a, 0, len, &pr[r]);
        s->rank_off[r] = k;
        k += len;
    }
    s->rank_off[P] = k;
    int32_t pick[8] = {0};
    loom_sim_scratch *scratch = loom_mock_simulator()->scratch_new();
    double best = HUGE_VAL;
    for (;;) {
        for (int32_t r = 0; r < P; r++)
            memcpy(&s->order[s->rank_off[r]],
                   &pr[r].rows[(size_t)pick[r] * (size_t)pr[r].len],
                   (size_t)pr[r].len * sizeof(int32_t));
        loom_metrics m = LOOM_METRICS_INIT;
        loom_error err = {0};
        if (loom_mock_simulator()->simulate(scratch, g, s, &m, &err) == LOOM_OK &&
            m.cap_violations == 0 && m.makespan_ms < best)
            best = m.makespan_ms;
        int32_t r = 0;
        while (r < P && ++pick[r] == pr[r].count)
            pick[r++] = 0;
        if (r == P)
            break;
    }
    for (int32_t r = 0; r < P; r++)
        free(pr[r].rows);
    loom_mock_simulator()->scratch_free(scratch);
    loom_schedule_free(s);
    return best;
}

/* The best of the plugin's own list schedules (to see that the solver,
 * not only the incumbent, is exercised). */
static double best_list(const loom_stage_graph *g)
{
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    const loom_host_api *host = loom_mock_host_api(h);
    loom_ilpi_problem pb;
    loom_error err = {0};
    ck_assert_int_eq(loom_ilpi_analyse(host, &pb, g, &err), LOOM_OK);
    int32_t rank_off[9], order[64];
    double best = HUGE_VAL;
    for (int rule = 0; rule < LOOM_ILPI_RULES; rule++) {
        double span = loom_ilpi_list(&pb, rule, rank_off, order);
        if (span >= 0.0 && span < best)
            best = span;
    }
    loom_ilpi_free(host, &pb);
    loom_mock_host_free(h);
    return best;
}

/* ---- tests ------------------------------------------------------------------- */

/* Exact equality with the brute-force optimum; heuristics never win. */
static void check_instance(loom_stage_graph *g, int *solver_won)
{
    loom_schedule *s = NULL;
    loom_error err = {0};
    ck_assert_msg(run(loom_static_ilp(), NULL, g, &s, &err) == LOOM_OK, "%s",
                  err.message);
    double got = makespan(g, s);
    double want = brute_force(g);
    ck_assert_double_eq(got, want);
    if (got < best_list(g))
        (*solver_won)++;
    const loom_plugin_info *others[4] = {loom_static_1f1b(), loom_static_gpipe(),
                                         loom_static_zero_bubble(),
                                         loom_static_dual_queue
                                             ? loom_static_dual_queue()
                                             : NULL};
    for (int i = 0; i < 4; i++) {
        loom_schedule *h = NULL;
        if (!others[i])
            continue;
        if (run(others[i], NULL, g, &h, &err) == LOOM_OK) {
            loom_metrics m = LOOM_METRICS_INIT;
            if (loom_mock_simulate(g, h, &m, &err) == LOOM_OK &&
                m.cap_violations == 0)
                ck_assert_msg(m.makespan_ms >= got, "%s beat ilp: %g < %g",
                              others[i]->id, m.makespan_ms, got);
        }
        loom_schedule_free(h);
    }
    loom_schedule_free(s);
}

START_TEST(matches_brute_force)
{
    int solver_won = 0;
    for (uint64_t seed = 1; seed <= 6; seed++) {
        for (int M = 2; M <= 3; M++) {
            loom_stage_graph *g = instance(2, M, 0, seed * 10 + (uint64_t)M, 0);
            check_instance(g, &solver_won);
            loom_graph_free(g);
        }
        loom_stage_graph *g3 = instance(3, 2, 0, seed, 0);
        check_instance(g3, &solver_won);
        loom_graph_free(g3);
    }
    /* the list schedules alone are not always optimal here */
    ck_assert_int_gt(solver_won, 0);
}
END_TEST

START_TEST(matches_brute_force_with_split_backward)
{
    int solver_won = 0;
    for (uint64_t seed = 1; seed <= 4; seed++) {
        loom_stage_graph *g = instance(2, 2, 1, seed, 0);
        check_instance(g, &solver_won);
        loom_graph_free(g);
    }
}
END_TEST

/* With a cap of about one activation per rank: the optimum among orders
 * that fit, found by brute force. */
START_TEST(matches_brute_force_under_a_memory_cap)
{
    int solver_won = 0, cap_binds = 0;
    for (uint64_t seed = 1; seed <= 6; seed++) {
        loom_stage_graph *g = instance(2, 3, 0, seed, 0);
        double free_best = brute_force(g);
        int64_t big = 0; /* room for about one activation per rank */
        for (int32_t v = 0; v < g->n_stages; v++)
            if (g->mem_delta_bytes[v] > big)
                big = g->mem_delta_bytes[v];
        g->memory_cap_bytes = (double)big + (double)(seed % 3) * 40.0;
        check_instance(g, &solver_won);
        cap_binds += brute_force(g) > free_best;
        loom_graph_free(g);
    }
    ck_assert_int_gt(cap_binds, 0); /* the cap changes some optimum */
}
END_TEST

/* Identical microbatches (first-in first-out symmetry in use), with
 * and without a cap, split and not: still the brute-force optimum. */
START_TEST(matches_brute_force_with_identical_microbatches)
{
    int solver_won = 0;
    UNIFORM = 1;
    for (uint64_t seed = 1; seed <= 4; seed++) {
        loom_stage_graph *g = instance(2, 3, 0, seed, 0);
        check_instance(g, &solver_won);
        int64_t big = 0;
        for (int32_t v = 0; v < g->n_stages; v++)
            big = g->mem_delta_bytes[v] > big ? g->mem_delta_bytes[v] : big;
        g->memory_cap_bytes = (double)big * (1.0 + (double)(seed % 2));
        check_instance(g, &solver_won);
        loom_graph_free(g);
        g = instance(2, 2, 1, seed, 0);
        check_instance(g, &solver_won);
        loom_graph_free(g);
    }
    UNIFORM = 0;
}
END_TEST

/* Two virtual stages per rank (stage s on rank s % 2), caps of 3 to 6
 * bytes with 1- or 2-byte activations (some infeasible: then
 * LOOM_EINFEASIBLE), transfer times 0 to 0.75 ms, identical or uneven
 * microbatches: the brute-force optimum, proven. */
START_TEST(matches_brute_force_with_two_virtual_stages)
{
    int feasible = 0;
    for (uint64_t seed = 1; seed <= 12; seed++) {
        uint64_t st = seed * 77 + 3;
        double f[4], b[4], iw[4], ww[4], act[4], sc[2];
        for (int k = 0; k < 4; k++) {
            f[k] = 0.5 + 0.25 * (double)(loom_mock_splitmix64(&st) % 4);
            b[k] = 1.0 + 0.25 * (double)(loom_mock_splitmix64(&st) % 6);
            iw[k] = b[k] / 2; ww[k] = b[k] - iw[k];
            act[k] = (double)(1 + loom_mock_splitmix64(&st) % 2);
        }
        sc[0] = 1.0; sc[1] = (seed % 2) ? 1.0 : 1.5;
        loom_stage_times t;
        memset(&t, 0, sizeof t);
        t.ranks = 2; t.microbatches = 2; t.virtual_stages = 2;
        t.forward_ms = f; t.backward_ms = b; t.input_grad_ms = iw; t.weight_grad_ms = ww;
        t.activation_bytes = act; t.microbatch_scale = sc; t.p2p_ms = (seed % 4) * 0.25;
        t.memory_cap_bytes = (double)(3 + seed % 4);
        loom_stage_graph *g = NULL;
        loom_error err = {0};
        ck_assert_int_eq(loom_graph_from_stage_times(&t, t.split_backward, &g, &err), LOOM_OK);
        double want = brute_force(g);
        loom_schedule *s2 = NULL;
        int rc = run(loom_static_ilp(), NULL, g, &s2, &err);
        if (want == HUGE_VAL) {
            ck_assert_int_eq(rc, LOOM_EINFEASIBLE);
        } else {
            ck_assert_msg(rc == LOOM_OK, "%s", err.message);
            ck_assert_double_eq(makespan(g, s2), want);
            ck_assert_double_eq(s2->lower_bound_ms, want);
            feasible++;
        }
        loom_schedule_free(s2);
        loom_graph_free(g);
    }
    ck_assert_int_gt(feasible, 3);
}
END_TEST

/* A split-backward stage-times graph: F, I, W per stage, activation 1
 * byte, room for `cap` activations per rank. */
static loom_stage_graph *zb_graph(int P, int M, const double *f, const double *i,
                                  const double *w, double cap)
{
    loom_stage_times t;
    memset(&t, 0, sizeof t);
    double act[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    t.ranks = P;
    t.microbatches = M;
    t.virtual_stages = 1;
    t.split_backward = 1;
    t.forward_ms = f;
    t.input_grad_ms = i;
    t.weight_grad_ms = w;
    t.activation_bytes = act;
    t.memory_cap_bytes = cap;
    loom_stage_graph *g = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_graph_from_stage_times(&t, 1, &g, &err), LOOM_OK);
    return g;
}

/* Runs ilp (timeout 60 s) and checks the makespan and that it is proven:
 * the schedule's lower bound equals it. */
static void check_proven(loom_stage_graph *g, double want)
{
    loom_schedule *s = NULL;
    loom_error err = {0};
    const char *params[] = {"timeout_ms", "60000", NULL};
    ck_assert_msg(run(loom_static_ilp(), params, g, &s, &err) == LOOM_OK, "%s", err.message);
    ck_assert_double_eq(makespan(g, s), want);
    ck_assert_double_eq(s->lower_bound_ms, want);
    loom_schedule_free(s);
}

/* The ZB paper's settings (Qi et al., ICLR 2024, section 3: F = I = W =
 * 1, at most P microbatches' activations per rank): 27 at P = 4, M = 8
 * and 55 at P = 8, M = 16 (both (P - 1) + 3M, ZB-H1's makespan); with
 * F = [2,1,1,1], I = [2,1,1,2], W = 1 at P = 4, M = 8 the optimum is 41:
 * rank 0 holds 4 activations after its fourth forward at 8 ms, and its
 * first input gradient cannot start before 2 + 3 + 2 + 2 = 9 ms. */
START_TEST(zero_bubble_paper_instances_are_proven)
{
    double one[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    loom_stage_graph *g = zb_graph(4, 8, one, one, one, 4);
    ck_assert_int_eq(g->n_stages, 96);
    check_proven(g, 27.0);
    loom_graph_free(g);
    double f[4] = {2, 1, 1, 1}, i[4] = {2, 1, 1, 2};
    g = zb_graph(4, 8, f, i, one, 4);
    check_proven(g, 41.0);
    loom_graph_free(g);
    g = zb_graph(8, 16, one, one, one, 8);
    ck_assert_int_eq(g->n_stages, 384);
    check_proven(g, 55.0);
    loom_graph_free(g);
}
END_TEST

/* One solve per graph: the answer waits in the plugin state for the next
 * instance (the engine's final replay), keyed by the graph and timeout. */
START_TEST(one_solve_per_graph)
{
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    const loom_host_api *host = loom_mock_host_api(h);
    void *state = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_static_ilp()->init(host, &state, &err), LOOM_OK);
    const loom_interleaver_vtable *vt =
        (const loom_interleaver_vtable *)loom_static_ilp()->role(LOOM_ROLE_INTERLEAVER);
    loom_stage_graph *g = instance(2, 3, 0, 5, 0);
    loom_schedule *s[2];
    for (int k = 0; k < 2; k++) {
        void *self = NULL;
        ck_assert_int_eq(vt->create(host, loom_mock_host_ctx(h), state, &self, &err), LOOM_OK);
        s[k] = loom_schedule_new(g->n_ranks, g->n_stages);
        ck_assert_int_eq(vt->interleave(self, g, NULL, s[k], &err), LOOM_OK);
        vt->destroy(self);
        if (k == 0) { /* the cache holds the first answer */
            int32_t ro[3], ord[64];
            loom_ilpi_result res;
            ck_assert(loom_ilpi_cache_get(state, loom_ilpi_digest(g, 10000.0), g, ro, ord,
                                          &res));
            ck_assert_int_eq(memcmp(ord, s[0]->order, (size_t)g->n_stages * sizeof *ord), 0);
            ck_assert_double_eq(res.lower_bound_ms, s[0]->lower_bound_ms);
            ck_assert(!loom_ilpi_cache_get(state, loom_ilpi_digest(g, 9999.0), g, ro, ord,
                                           &res));
        }
    }
    ck_assert_int_eq(memcmp(s[0]->order, s[1]->order, (size_t)g->n_stages * sizeof(int32_t)),
                     0);
    ck_assert_double_eq(s[0]->lower_bound_ms, s[1]->lower_bound_ms);
    ck_assert_double_eq(s[0]->lower_bound_ms, brute_force(g));
    loom_schedule_free(s[0]);
    loom_schedule_free(s[1]);
    loom_graph_free(g);
    loom_static_ilp()->fini(state);
    loom_mock_host_free(h);
}
END_TEST

/* Stopped by the time limit: the best order so far with a proven lower
 * bound below it (the gap), never above the order's makespan. */
START_TEST(timeout_reports_the_gap)
{
    loom_stage_graph *g = instance(4, 4, 1, 3, 0); /* 48 stages, uneven */
    loom_schedule *s = NULL;
    loom_error err = {0};
    const char *params[] = {"timeout_ms", "1", NULL};
    ck_assert_int_eq(run(loom_static_ilp(), params, g, &s, &err), LOOM_OK);
    double span = makespan(g, s);
    ck_assert(s->lower_bound_ms > 0.0);
    ck_assert(s->lower_bound_ms <= span);
    loom_schedule_free(s);
    loom_graph_free(g);
}
END_TEST

START_TEST(uniform_4x8_is_33)
{
    loom_stage_times t;
    memset(&t, 0, sizeof t);
    double f[4] = {1, 1, 1, 1}, b[4] = {2, 2, 2, 2};
    t.ranks = 4;
    t.microbatches = 8;
    t.virtual_stages = 1;
    t.forward_ms = f;
    t.backward_ms = b;
    loom_stage_graph *g = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_graph_from_stage_times(&t, 0, &g, &err), LOOM_OK);
    ck_assert_int_eq(g->n_stages, 64);
    loom_schedule *s = NULL;
    ck_assert_int_eq(run(loom_static_ilp(), NULL, g, &s, &err), LOOM_OK);
    ck_assert_double_eq(makespan(g, s), 33.0);
    loom_schedule_free(s);
    loom_graph_free(g);
}
END_TEST

/* P = 4, M = 8 with the DynaPipe microbatch scales (1, .8, 1.2, .9, 1.1,
 * .7, 1.4, .6): F = 1, B = 2 unsplit and no cap (split 0), or F = I = W
 * = 1 with a cap of 4 one-byte activations (split 1). */
static loom_stage_graph *scaled_graph(int split)
{
    static double scale[8] = {1, 0.8, 1.2, 0.9, 1.1, 0.7, 1.4, 0.6};
    double f[4] = {1, 1, 1, 1}, b[4] = {2, 2, 2, 2}, one[4] = {1, 1, 1, 1}, act[4] = {1, 1, 1, 1};
    loom_stage_times t;
    memset(&t, 0, sizeof t);
    t.ranks = 4;
    t.microbatches = 8;
    t.virtual_stages = 1;
    t.split_backward = split;
    t.forward_ms = f;
    t.backward_ms = b;
    t.input_grad_ms = one;
    t.weight_grad_ms = one;
    t.microbatch_scale = scale;
    t.activation_bytes = act;
    t.memory_cap_bytes = split ? 4.0 : 0.0;
    loom_stage_graph *g = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_graph_from_stage_times(&t, split, &g, &err), LOOM_OK);
    return g;
}

/* The warm start over every microbatch priority order, replayed and
 * simulated; returns its makespan, and the best plain list schedule's in
 * *list_ms. */
static double warm_prio(loom_stage_graph *g, double *list_ms)
{
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    const loom_host_api *host = loom_mock_host_api(h);
    loom_ilpi_problem pb;
    loom_error err = {0};
    ck_assert_int_eq(loom_ilpi_analyse(host, &pb, g, &err), LOOM_OK);
    loom_schedule *s = loom_schedule_new(g->n_ranks, g->n_stages);
    int32_t *ro = malloc(((size_t)g->n_ranks + 1) * sizeof *ro);
    int32_t *ord = malloc((size_t)g->n_stages * sizeof *ord);
    double best = -1.0;
    ck_assert_int_eq(loom_ilpi_warm_prio(host, &pb, INFINITY, ro, ord, s->rank_off, s->order,
                                         &best, &err), LOOM_OK);
    ck_assert_double_eq_tol(loom_ilpi_replay(&pb, s->rank_off, s->order, NULL), best, 1e-12);
    ck_assert_double_eq_tol(makespan(g, s), best, 1e-12);
    double listed = INFINITY; /* the plain list schedules always run first */
    for (int rule = 0; rule < LOOM_ILPI_RULES; rule++) {
        double x = loom_ilpi_list(&pb, rule, ro, ord);
        listed = x >= 0.0 && x < listed ? x : listed;
    }
    *list_ms = listed;
    free(ro);
    free(ord);
    loom_schedule_free(s);
    loom_ilpi_free(host, &pb);
    loom_mock_host_free(h);
    return best;
}

/* Uneven microbatch scales. Unsplit (the DynaPipe case): the root bound
 * is rank 3's 3 x .6 + 23.1 + 6 x .6 = 28.5 (the .6 microbatch would both
 * fill and drain it). The priority sweep finds 29.4, the best dual-queue
 * order over every priority order (its exhaustive ranker gives 29.4 as
 * well); the search then finds and proves 29.1 = 3 x .6 + 23.1 + 6 x .7:
 * rank 3 filled by the .6 microbatch, drained by the .7 one, never idle.
 * Split with the cap: a 200 ms solve reports the root bound 24.9 and a
 * makespan between it and the plain list schedules' (which always run). */
START_TEST(uneven_microbatch_scales)
{
    loom_stage_graph *g = scaled_graph(0);
    double listed = 0.0;
    ck_assert_double_eq_tol(warm_prio(g, &listed), 29.4, 1e-9);
    loom_schedule *s = NULL;
    loom_error err = {0};
    /* proves it in about 2 s (about 25 s under the sanitizers); the limit only
     * keeps a slow machine from failing a proof that needs more time */
    const char *params[] = {"timeout_ms", "300000", NULL};
    ck_assert_msg(run(loom_static_ilp(), params, g, &s, &err) == LOOM_OK, "%s", err.message);
    ck_assert_double_eq_tol(makespan(g, s), 29.1, 1e-9);
    ck_assert_double_eq_tol(s->lower_bound_ms, 29.1, 1e-9);
    loom_schedule_free(s);
    loom_graph_free(g);

    g = scaled_graph(1);
    ck_assert_int_eq(g->n_stages, 96);
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    loom_ilpi_problem pb;
    ck_assert_int_eq(loom_ilpi_analyse(loom_mock_host_api(h), &pb, g, &err), LOOM_OK);
    int32_t ro[5], ord[96];
    listed = INFINITY;
    for (int rule = 0; rule < LOOM_ILPI_RULES; rule++) {
        double x = loom_ilpi_list(&pb, rule, ro, ord);
        listed = x >= 0.0 && x < listed ? x : listed;
    }
    loom_ilpi_free(loom_mock_host_api(h), &pb);
    loom_mock_host_free(h);
    const char *short_run[] = {"timeout_ms", "200", NULL};
    ck_assert_msg(run(loom_static_ilp(), short_run, g, &s, &err) == LOOM_OK, "%s", err.message);
    double span = makespan(g, s);
    ck_assert_double_eq_tol(s->lower_bound_ms, 24.9, 1e-9);
    ck_assert(span >= s->lower_bound_ms);
    ck_assert(listed < INFINITY && span <= listed + 1e-9);
    loom_schedule_free(s);
    loom_graph_free(g);
}
END_TEST

START_TEST(errors_and_params)
{
    loom_error err = {0};
    loom_schedule *s = NULL;
    loom_stage_graph *g = instance(4, 9, 0, 1, 0); /* 72 stages */
    const char *small[] = {"max_stages", "64", NULL};
    ck_assert_int_eq(run(loom_static_ilp(), small, g, &s, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "72 stages"));
    ck_assert_ptr_nonnull(strstr(err.message, "max_stages = 64"));
    loom_schedule_free(s);
    const char *raise[] = {"max_stages", "80", "timeout_ms", "200", NULL};
    ck_assert_int_eq(run(loom_static_ilp(), raise, g, &s, &err), LOOM_OK);
    loom_schedule_free(s);
    loom_graph_free(g);

    /* a cap below one activation: no order fits */
    g = instance(2, 2, 0, 3, 50.0);
    ck_assert_int_eq(run(loom_static_ilp(), NULL, g, &s, &err),
                     LOOM_EINFEASIBLE);
    ck_assert_ptr_nonnull(strstr(err.message, "memory cap of 50 bytes"));
    loom_schedule_free(s);
    loom_graph_free(g);

    const loom_interleaver_vtable *vt =
        (const loom_interleaver_vtable *)loom_static_ilp()->role(
            LOOM_ROLE_INTERLEAVER);
    const char *bad[][2] = {{"timeout_ms", "0"}, {"max_stages", "5000"}};
    for (int i = 0; i < 2; i++) {
        loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
        loom_mock_host_set_param(h, bad[i][0], bad[i][1]);
        void *self = NULL;
        ck_assert_int_eq(vt->create(loom_mock_host_api(h),
                                    loom_mock_host_ctx(h), NULL, &self, &err),
                         LOOM_EINVAL);
        ck_assert_ptr_nonnull(strstr(err.message, bad[i][0]));
        loom_mock_host_free(h);
    }
    ck_assert_ptr_null(loom_static_ilp()->role(LOOM_ROLE_MEMORY_TUNER));
}
END_TEST

START_TEST(lower_bound_and_replay)
{
    /* uniform P = 4, M = 8: the last rank's load bound is 3 + 24 + 6 */
    loom_stage_times t;
    memset(&t, 0, sizeof t);
    double f[4] = {1, 1, 1, 1}, b[4] = {2, 2, 2, 2};
    t.ranks = 4;
    t.microbatches = 8;
    t.virtual_stages = 1;
    t.forward_ms = f;
    t.backward_ms = b;
    loom_stage_graph *g = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_graph_from_stage_times(&t, 0, &g, &err), LOOM_OK);
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    loom_ilpi_problem pb;
    ck_assert_int_eq(loom_ilpi_analyse(loom_mock_host_api(h), &pb, g, &err),
                     LOOM_OK);
    ck_assert_double_eq(pb.lower_bound_ms, 33.0);
    ck_assert_double_eq(pb.est_ms[3], 3.0);  /* F of mb 0 at position 3 */
    ck_assert_double_eq(pb.tail_ms[0], 12.0); /* F0 + 3 F + 4 B */
    int32_t rank_off[5], order[64];
    double span = loom_ilpi_list(&pb, LOOM_ILPI_BACKWARD_FIRST, rank_off, order);
    ck_assert_double_eq(span, 33.0);
    double again = loom_ilpi_replay(&pb, rank_off, order, NULL);
    ck_assert_double_eq(again, 33.0);
    int32_t tmp = order[0]; /* a backward before its forward deadlocks */
    order[0] = order[rank_off[1] - 1];
    order[rank_off[1] - 1] = tmp;
    ck_assert(loom_ilpi_replay(&pb, rank_off, order, NULL) < 0.0);
    loom_ilpi_free(loom_mock_host_api(h), &pb);
    loom_mock_host_free(h);
    loom_graph_free(g);
}
END_TEST

/* The suite: every test in one case. */
static Suite *suite(void)
{
    Suite *s = suite_create("ilp");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, lower_bound_and_replay);
    tcase_add_test(tc, matches_brute_force);
    tcase_add_test(tc, matches_brute_force_with_split_backward);
    tcase_add_test(tc, matches_brute_force_under_a_memory_cap);
    tcase_add_test(tc, uniform_4x8_is_33);
    tcase_add_test(tc, matches_brute_force_with_identical_microbatches);
    tcase_add_test(tc, zero_bubble_paper_instances_are_proven);
    tcase_add_test(tc, one_solve_per_graph);
    tcase_add_test(tc, timeout_reports_the_gap);
    tcase_add_test(tc, matches_brute_force_with_two_virtual_stages);
    tcase_add_test(tc, uneven_microbatch_scales);
    tcase_add_test(tc, errors_and_params);
    suite_add_tcase(s, tc);
    return s;
}

/* Runs the suite. */
int main(void)
{
    return loom_test_main(suite());
}
