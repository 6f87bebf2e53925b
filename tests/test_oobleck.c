/* test_oobleck.c - Oobleck's planning algorithms (core/oobleck*.c): node
 * specification, the divide-and-conquer template planner, the coin-change
 * enumeration of plans (digest Fig. 2.7 examples), batch distribution and
 * reinstantiation after failures (every path of §2.5). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <loom/algorithms/oobleck.h>
#include "testutil.h"

/* ---- node specification -------------------------------------------------- */

START_TEST(node_spec_ranges)
{
    int32_t lo = 0, hi = 0;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_oobleck_node_spec(8, 2, 2, &lo, &hi, &err), LOOM_OK);
    ck_assert_int_eq(lo, 2); /* digest: N=8, f=2, n0=2 -> {2,3,4} */
    ck_assert_int_eq(hi, 4);
    ck_assert_int_eq(loom_oobleck_node_spec(8, 0, 3, &lo, &hi, &err), LOOM_OK);
    ck_assert_int_eq(hi, 8); /* f = 0: one pipeline may use every node */
    ck_assert_int_eq(loom_oobleck_node_spec(30, 1, 1, &lo, &hi, &err), LOOM_OK);
    ck_assert_int_eq(lo, 1); /* n0 = 1: range [1, N - f] */
    ck_assert_int_eq(hi, 29);
    ck_assert_int_eq(loom_oobleck_node_spec(5, 2, 2, &lo, &hi, &err),
                     LOOM_EINFEASIBLE);
    ck_assert_ptr_nonnull(strstr(err.message, "need 6"));
    ck_assert_int_eq(loom_oobleck_node_spec(0, 1, 1, &lo, &hi, &err), LOOM_EINVAL);
}
END_TEST

START_TEST(node_spec_covers_every_feasible_count)
{
    /* the digest's brute-force check, here through the enumeration */
    static const int32_t cases[][3] = {{8, 2, 2}, {30, 1, 2}, {30, 2, 3},
                                       {16, 1, 4}, {7, 1, 3}, {9, 3, 2},
                                       {12, 0, 5}, {10, 1, 1}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int32_t n = cases[c][0], f = cases[c][1], n0 = cases[c][2], lo, hi;
        loom_error err = {0, ""};
        ck_assert_int_eq(loom_oobleck_node_spec(n, f, n0, &lo, &hi, &err), LOOM_OK);
        int32_t sizes[64], p = hi - lo + 1;
        for (int32_t j = 0; j < p; j++)
            sizes[j] = lo + j;
        for (int32_t np = (f + 1) * n0; np <= n; np++) {
            int32_t *plans = NULL, count = 0;
            ck_assert_int_eq(loom_oobleck_enumerate(sizes, p, np, f, 0, &plans,
                                                    &count, NULL, &err), LOOM_OK);
            ck_assert_msg(count > 0, "N=%d f=%d n0=%d: N'=%d not coverable",
                          n, f, n0, np);
            for (int32_t i = 0; i < count; i++) {
                int32_t used = 0, pipes = 0;
                for (int32_t j = 0; j < p; j++) {
                    used += plans[i * p + j] * sizes[j];
                    pipes += plans[i * p + j];
                }
                ck_assert_int_eq(used, np);
                ck_assert_int_ge(pipes, f + 1);
            }
            free(plans);
        }
    }
}
END_TEST

/* ---- coin change (Eq. 2.5, Fig. 2.7) --------------------------------------- */

/* Asserts the enumeration of sizes {2,3,4} for `nodes` and f. */
static void check_plans(int32_t nodes, int32_t f, const int32_t *want, int n)
{
    static const int32_t sizes[3] = {2, 3, 4};
    int32_t *plans = NULL, count = -1;
    int trunc = -1;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_oobleck_enumerate(sizes, 3, nodes, f, 0, &plans, &count,
                                            &trunc, &err), LOOM_OK);
    ck_assert_int_eq(count, n);
    ck_assert_int_eq(trunc, 0);
    for (int i = 0; i < 3 * n; i++)
        ck_assert_int_eq(plans[i], want[i]);
    free(plans);
}

START_TEST(coin_change_digest_examples)
{
    const int32_t seven[] = {2, 1, 0, 0, 1, 1};
    check_plans(7, 1, seven, 2);          /* X(3,7) = {(2,1,0), (0,1,1)} */
    const int32_t seven_f2[] = {2, 1, 0};
    check_plans(7, 2, seven_f2, 1);       /* f = 2 keeps only (2,1,0) */
    const int32_t eight[] = {4, 0, 0, 1, 2, 0, 2, 0, 1, 0, 0, 2};
    check_plans(8, 1, eight, 4);          /* N' = 8, in recurrence order */
    check_plans(1, 0, NULL, 0);           /* nothing fits one node */
    /* a cap cuts the list and says so */
    static const int32_t sizes[3] = {2, 3, 4};
    int32_t *plans = NULL, count = 0;
    int trunc = 0;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_oobleck_enumerate(sizes, 3, 8, 1, 2, &plans, &count,
                                            &trunc, &err), LOOM_OK);
    ck_assert_int_eq(count, 2);
    ck_assert_int_eq(trunc, 1);
    ck_assert_int_eq(plans[3], 1); /* second plan is still (1,2,0) */
    free(plans);
    const int32_t bad[2] = {2, 0};
    ck_assert_int_eq(loom_oobleck_enumerate(bad, 2, 8, 1, 0, &plans, &count,
                                            NULL, &err), LOOM_EINVAL);
}
END_TEST

/* ---- divide and conquer (Eqs. 2.1-2.4) ------------------------------------- */

/* Costs of n layers, `ms` each (F = ms/3, B = 2ms/3) on 1..gpus GPUs, with
 * d GPUs taking ms / (d * eff) (eff applied for d > 1). */
typedef struct cost_table {
    double f[64 * 8], b[64 * 8];
    loom_oobleck_costs c;
} cost_table;

static void costs_from(cost_table *t, const double *ms, int n, int gpus,
                       double eff)
{
    for (int d = 1; d <= gpus; d++)
        for (int l = 0; l < n; l++) {
            double v = ms[l] / (d > 1 ? d * eff : 1.0);
            t->f[(d - 1) * n + l] = v / 3;
            t->b[(d - 1) * n + l] = 2 * v / 3;
        }
    t->c.n_layers = n;
    t->c.max_gpus = gpus;
    t->c.forward_ms = t->f;
    t->c.backward_ms = t->b;
}

/* Costs of 1024 layers on up to 8 GPUs. */
typedef struct cost_table_big {
    double f[1024 * 8], b[1024 * 8];
} cost_table_big;

/* Recomputes T1, T2, T3 of a template from its stages and checks them. */
static void check_terms(const loom_oobleck_template *t, int32_t n_layers)
{
    double t1 = 0, cmax = -1;
    int32_t kstar = 0, next = 0;
    for (int32_t k = 0; k < t->n_stages; k++) {
        ck_assert_int_eq(t->stages[k].first_layer, next);
        next += t->stages[k].n_layers;
        t1 += t->stages[k].cost_ms;
        if (t->stages[k].cost_ms > cmax) { /* first maximum, as the DC */
            cmax = t->stages[k].cost_ms;
            kstar = k;
        }
    }
    ck_assert_int_eq(next, n_layers);
    double t3 = 0;
    for (int32_t k = kstar; k < t->n_stages; k++)
        t3 += t->stages[k].cost_ms;
    ck_assert_int_eq(t->slowest, kstar);
    ck_assert_double_eq_tol(t->t1_ms, t1, 1e-9);
    ck_assert_double_eq_tol(t->t3_ms, t3, 1e-9);
    int32_t s = t->n_stages;
    ck_assert_double_eq_tol(t->iteration_ms,
                            t1 + (4 * s - s + kstar - 1) * cmax + t3, 1e-9);
}

START_TEST(dc_single_stage_and_equal_stages)
{
    double ms[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    cost_table ct;
    costs_from(&ct, ms, 8, 4, 1.0);
    loom_oobleck_planner *p = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_oobleck_planner_new(&ct.c, 4, 1, &p, &err), LOOM_OK);
    loom_oobleck_template t;
    /* base case (Eq. 2.4): T1 = c, T2 = 2c, T3 = c on all 4 GPUs */
    ck_assert_int_eq(loom_oobleck_plan_stages(p, 1, 1, &t, &err), LOOM_OK);
    ck_assert_int_eq(t.n_stages, 1);
    ck_assert_int_eq(t.stages[0].gpus, 4);
    ck_assert_double_eq_tol(t.iteration_ms, 4 * 2.0, 1e-12);
    loom_oobleck_template_clear(&t);
    /* S equal stages: T = (N_b + S - 1) c with N_b = 4S, the exact 1F1B */
    ck_assert_int_eq(loom_oobleck_plan_stages(p, 1, 4, &t, &err), LOOM_OK);
    ck_assert_int_eq(t.n_stages, 4);
    for (int k = 0; k < 4; k++) {
        ck_assert_int_eq(t.stages[k].n_layers, 2);
        ck_assert_int_eq(t.stages[k].gpus, 1);
        ck_assert_int_eq(t.stages[k].first_gpu, k);
    }
    ck_assert_double_eq_tol(t.iteration_ms, (16 + 4 - 1) * 2.0, 1e-9);
    ck_assert_double_eq_tol(loom_oobleck_template_time_ms(&t, 10),
                            (10 + 4 - 1) * 2.0, 1e-9);
    check_terms(&t, 8);
    loom_oobleck_template_clear(&t);
    loom_oobleck_planner_free(p);
}
END_TEST

START_TEST(dc_slowest_stage_terms)
{
    /* three layers 1, 3, 2 on three single-GPU stages: the only layout.
     * T1 = 6, k* = 1, T2 = (12 - 3 + 1 - 1) * 3 = 27, T3 = 3 + 2 = 5 */
    double ms[3] = {1, 3, 2};
    cost_table ct;
    costs_from(&ct, ms, 3, 3, 1.0);
    loom_oobleck_planner *p = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_oobleck_planner_new(&ct.c, 3, 0, &p, &err), LOOM_OK);
    loom_oobleck_template t;
    ck_assert_int_eq(loom_oobleck_plan_stages(p, 1, 3, &t, &err), LOOM_OK);
    ck_assert_int_eq(t.slowest, 1);
    ck_assert_double_eq_tol(t.t1_ms, 6, 1e-12);
    ck_assert_double_eq_tol(t.t3_ms, 5, 1e-12);
    ck_assert_double_eq_tol(t.iteration_ms, 6 + 27 + 5, 1e-9);
    loom_oobleck_template_clear(&t);
    /* more stages than layers, or than GPUs of the single node */
    ck_assert_int_eq(loom_oobleck_plan_stages(p, 1, 4, &t, &err), LOOM_EINFEASIBLE);
    loom_oobleck_planner_free(p);
}
END_TEST

START_TEST(dc_stages_never_span_nodes)
{
    /* Fig. 2.6 shape: 6 layers on 3 nodes; every stage inside one node,
     * every GPU of every node used */
    double ms[6] = {1, 2, 1, 2, 1, 2};
    cost_table ct;
    costs_from(&ct, ms, 6, 2, 0.8);
    loom_oobleck_planner *p = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_oobleck_planner_new(&ct.c, 2, 1, &p, &err), LOOM_OK);
    for (int32_t s = 3; s <= 6; s++) {
        loom_oobleck_template t;
        ck_assert_int_eq(loom_oobleck_plan_stages(p, 3, s, &t, &err), LOOM_OK);
        int used[3] = {0, 0, 0};
        for (int32_t k = 0; k < t.n_stages; k++) {
            const loom_oobleck_stage *st = &t.stages[k];
            ck_assert_int_ge(st->node, 0);
            ck_assert_int_lt(st->node, 3);
            ck_assert_int_le(st->first_gpu + st->gpus, 2);
            used[st->node] += st->gpus;
        }
        for (int n = 0; n < 3; n++)
            ck_assert_int_eq(used[n], 2);
        check_terms(&t, 6);
        loom_oobleck_template_clear(&t);
    }
    loom_oobleck_template t;
    /* fewer stages than nodes would make a stage span nodes */
    ck_assert_int_eq(loom_oobleck_plan_stages(p, 3, 2, &t, &err), LOOM_EINFEASIBLE);
    /* more nodes than layers: no template at all */
    ck_assert_int_eq(loom_oobleck_plan_template(p, 7, 0, &t, &err), LOOM_EINFEASIBLE);
    ck_assert_ptr_nonnull(strstr(err.message, "7 nodes"));
    loom_oobleck_planner_free(p);
}
END_TEST

START_TEST(dc_compares_stage_counts_at_common_batch)
{
    /* 2 layers of 1 ms; on 2 GPUs a layer takes 1 / (2 * 0.8333) = 0.6.
     * Raw T would pick S = 1 (4 * 1.2 = 4.8 vs 9 at N_b = 8), but at the
     * common N_b = 8 S = 1 takes 1.2 + 1.2 + 6 * 1.2 = 9.6 > 9. */
    double ms[2] = {1, 1};
    cost_table ct;
    costs_from(&ct, ms, 2, 2, 1.0 / 1.2);
    loom_oobleck_planner *p = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_oobleck_planner_new(&ct.c, 2, 1, &p, &err), LOOM_OK);
    loom_oobleck_template one, best;
    ck_assert_int_eq(loom_oobleck_plan_stages(p, 1, 1, &one, &err), LOOM_OK);
    ck_assert_double_eq_tol(one.iteration_ms, 4.8, 1e-9);
    ck_assert_int_eq(loom_oobleck_plan_template(p, 1, 0, &best, &err), LOOM_OK);
    ck_assert_int_eq(best.n_stages, 2);
    ck_assert_double_eq_tol(best.iteration_ms, 9.0, 1e-9);
    ck_assert_double_eq_tol(loom_oobleck_template_time_ms(&one, 8), 9.6, 1e-9);
    loom_oobleck_template_clear(&one);
    loom_oobleck_template_clear(&best);
    loom_oobleck_planner_free(p);
}
END_TEST

START_TEST(dc_memo_shared_across_templates)
{
    double ms[12];
    for (int i = 0; i < 12; i++)
        ms[i] = 1 + (i % 3);
    cost_table ct;
    costs_from(&ct, ms, 12, 2, 0.9);
    loom_oobleck_planner *p = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_oobleck_planner_new(&ct.c, 2, 1, &p, &err), LOOM_OK);
    loom_oobleck_template t;
    ck_assert_int_eq(loom_oobleck_plan_template(p, 2, 0, &t, &err), LOOM_OK);
    loom_oobleck_template_clear(&t);
    int64_t entries = loom_oobleck_memo_entries(p);
    int64_t hits = loom_oobleck_memo_hits(p);
    ck_assert_int_gt(entries, 0);
    ck_assert_int_eq(loom_oobleck_plan_template(p, 3, 0, &t, &err), LOOM_OK);
    loom_oobleck_template_clear(&t);
    ck_assert_int_gt(loom_oobleck_memo_hits(p), hits);
    /* planning the same template again is served from the memo only */
    entries = loom_oobleck_memo_entries(p);
    ck_assert_int_eq(loom_oobleck_plan_template(p, 3, 0, &t, &err), LOOM_OK);
    ck_assert_int_eq(loom_oobleck_memo_entries(p), entries);
    check_terms(&t, 12);
    loom_oobleck_template_clear(&t);
    loom_oobleck_planner_free(p);
}
END_TEST

/* ---- the divide and conquer against a plain recursion ---------------------- */

/* A direct transcription of T(S', u, v, nodes x g) (Eqs. 2.1-2.4), memoised
 * per (S', u, v, nodes, g), trying the splits in the order s, m, k and
 * keeping the first strictly better one: the planner must agree with it
 * bit for bit, whatever it skips or reorders. At most 14 layers, 4 GPUs
 * per node and 4 nodes. */
typedef struct ref_cell {
    double t1, t3, c, total;
    int kstar, k, s, m, known;
} ref_cell;

typedef struct ref_dc {
    int n_layers, gpus, pow2;
    double pre[4][15];
    int bad[4][15];
    ref_cell memo[15][15][15][5][5]; /* [S'][u][v][nodes][g] */
} ref_dc;

static void ref_init(ref_dc *x, const loom_oobleck_costs *c, int gpus, int pow2)
{
    memset(x, 0, sizeof *x);
    x->n_layers = c->n_layers;
    x->gpus = gpus;
    x->pow2 = pow2;
    for (int d = 0; d < gpus; d++)
        for (int l = 0; l < c->n_layers; l++) {
            double f = c->forward_ms[d * c->n_layers + l];
            double b = c->backward_ms[d * c->n_layers + l];
            int ok = isfinite(f + b) && f >= 0 && b >= 0;
            x->pre[d][l + 1] = x->pre[d][l] + (ok ? f + b : 0);
            x->bad[d][l + 1] = x->bad[d][l] + !ok;
        }
}

static double ref_cost(const ref_dc *x, int u, int v, int d)
{
    if (x->bad[d - 1][v] != x->bad[d - 1][u])
        return INFINITY;
    return x->pre[d - 1][v] - x->pre[d - 1][u];
}

static ref_cell ref_solve(ref_dc *x, int S, int u, int v, int nodes, int g)
{
    ref_cell best = {INFINITY, INFINITY, INFINITY, INFINITY, 0, -1, 0, 0, 1};
    if (S > v - u || (nodes == 1 && g < S) || (nodes > 1 && nodes > S))
        return best;
    ref_cell *cell = &x->memo[S][u][v][nodes][g];
    if (cell->known)
        return *cell;
    if (S == 1) {
        double c = x->pow2 && (g & (g - 1)) ? INFINITY : ref_cost(x, u, v, g);
        if (isfinite(c) && isfinite(4 * c))
            best = (ref_cell){c, c, c, 4 * c, 0, -1, 0, 0, 1};
        return *cell = best;
    }
    for (int s = 1; s < S; s++) {
        int lo = nodes > 1 ? (nodes - (S - s) > 1 ? nodes - (S - s) : 1) : s;
        int hi = nodes > 1 ? (nodes - 1 < s ? nodes - 1 : s)
                           : (g - (S - s) < g - 1 ? g - (S - s) : g - 1);
        for (int m = lo; m <= hi; m++)
            for (int k = u + s; k <= v - (S - s); k++) {
                ref_cell l = nodes > 1 ? ref_solve(x, s, u, k, m, g)
                                       : ref_solve(x, s, u, k, 1, m);
                ref_cell r = nodes > 1 ? ref_solve(x, S - s, k, v, nodes - m, g)
                                       : ref_solve(x, S - s, k, v, 1, g - m);
                if (!isfinite(l.total) || !isfinite(r.total))
                    continue;
                int left = l.c >= r.c;
                double t1 = l.t1 + r.t1;
                double t3 = left ? l.t3 + r.t1 : r.t3;
                double c = left ? l.c : r.c;
                int kstar = left ? l.kstar : s + r.kstar;
                double total = t1 + (double)(4 * S - S + kstar - 1) * c + t3;
                if (total < best.total)
                    best = (ref_cell){t1, t3, c, total, kstar, k, s, m, 1};
            }
    }
    return *cell = best;
}

/* Appends the stages of (S, u, v, nodes, g) as the planner lays them out. */
static int ref_emit(ref_dc *x, int S, int u, int v, int nodes, int g,
                    int node0, int gpu0, loom_oobleck_stage *out, int at)
{
    ref_cell r = ref_solve(x, S, u, v, nodes, g);
    if (r.k < 0) {
        out[at] = (loom_oobleck_stage){u, v - u, g, node0, gpu0, ref_cost(x, u, v, g)};
        return at + 1;
    }
    if (nodes > 1) {
        at = ref_emit(x, r.s, u, r.k, r.m, g, node0, 0, out, at);
        return ref_emit(x, S - r.s, r.k, v, nodes - r.m, g, node0 + r.m, 0, out, at);
    }
    at = ref_emit(x, r.s, u, r.k, 1, r.m, node0, gpu0, out, at);
    return ref_emit(x, S - r.s, r.k, v, 1, g - r.m, node0, gpu0 + r.m, out, at);
}

/* Checks one planned template against the recursion, field by field. */
static void ref_check(ref_dc *x, int rc, const loom_oobleck_template *t,
                      int nodes, int S)
{
    ref_cell r = ref_solve(x, S, 0, x->n_layers, nodes, x->gpus);
    ck_assert_int_eq(rc, isfinite(r.total) ? LOOM_OK : LOOM_EINFEASIBLE);
    if (rc != LOOM_OK)
        return;
    loom_oobleck_stage st[16];
    ck_assert_int_eq(ref_emit(x, S, 0, x->n_layers, nodes, x->gpus, 0, 0, st, 0),
                     t->n_stages);
    ck_assert_int_eq(t->n_stages, S);
    for (int i = 0; i < S; i++) {
        const loom_oobleck_stage *a = &st[i], *b = &t->stages[i];
        ck_assert(a->first_layer == b->first_layer && a->n_layers == b->n_layers);
        ck_assert(a->gpus == b->gpus && a->node == b->node);
        ck_assert(a->first_gpu == b->first_gpu && a->cost_ms == b->cost_ms);
    }
    ck_assert_int_eq(t->slowest, r.kstar);
    ck_assert(t->t1_ms == r.t1 && t->t3_ms == r.t3);
    ck_assert(t->slowest_ms == r.c && t->iteration_ms == r.total);
}

START_TEST(dc_matches_plain_recursion)
{
    static ref_dc ref;
    static double f[4 * 14], b[4 * 14];
    uint32_t seed = 12345;
    for (int trial = 0; trial < 24; trial++) {
        int L = 6 + trial % 9, gpus = 1 + trial % 4, pow2 = (trial / 4) % 2;
        int nodes = 1 + trial % 3 + (gpus == 1);
        for (int d = 1; d <= gpus; d++)
            for (int l = 0; l < L; l++) {
                seed = seed * 1103515245u + 12345u;
                /* a few small integers: many ties between splits */
                double ms = 1 + (seed >> 16) % 4;
                f[(d - 1) * L + l] = ms / (d * (trial % 2 ? 0.7 : 1.0));
                b[(d - 1) * L + l] = 2 * f[(d - 1) * L + l];
                if (trial % 5 == 0 && d == 2 && l == 1)
                    f[(d - 1) * L + l] = -1; /* layer 1 unusable on 2 GPUs */
            }
        loom_oobleck_costs c = {L, gpus, f, b};
        ref_init(&ref, &c, gpus, pow2);
        loom_oobleck_planner *p = NULL;
        loom_error err = {0, ""};
        ck_assert_int_eq(loom_oobleck_planner_new(&c, gpus, pow2, &p, &err), LOOM_OK);
        /* whole templates first (the memo then holds partly filled blocks),
         * then every stage count on its own, largest node count first */
        for (int n = 1; n <= nodes; n++) {
            loom_oobleck_template t;
            if (loom_oobleck_plan_template(p, n, 0, &t, &err) == LOOM_OK) {
                ref_check(&ref, LOOM_OK, &t, n, t.n_stages);
                loom_oobleck_template_clear(&t);
            }
        }
        for (int n = nodes; n >= 1; n--)
            for (int S = n; S <= L && S <= n * gpus; S++) {
                loom_oobleck_template t;
                int rc = loom_oobleck_plan_stages(p, n, S, &t, &err);
                ref_check(&ref, rc, &t, n, S);
                loom_oobleck_template_clear(&t);
            }
        loom_oobleck_planner_free(p);
    }
}
END_TEST

/* Plans every template of 1..nodes on a planner with `threads` threads
 * into out[] (cleared by the caller) and returns its memo counts. */
static void plan_all(const cost_table *ct, int gpus, int nodes, int threads,
                     loom_oobleck_template *out, int64_t *entries, int64_t *hits)
{
    loom_oobleck_planner *p = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_oobleck_planner_new(&ct->c, gpus, 0, &p, &err), LOOM_OK);
    loom_oobleck_planner_set_threads(p, threads);
    for (int n = 1; n <= nodes; n++)
        ck_assert_int_eq(loom_oobleck_plan_template(p, n, 0, &out[n - 1], &err), LOOM_OK);
    *entries = loom_oobleck_memo_entries(p);
    *hits = loom_oobleck_memo_hits(p);
    loom_oobleck_planner_free(p);
}

/* Levels big enough to be filled on several threads give the templates
 * and memo counts of one thread, bit for bit. */
START_TEST(dc_threads_change_nothing)
{
    enum { L = 48, G = 8, NODES = 5 };
    double ms[L];
    for (int l = 0; l < L; l++) /* an embedding, a head, a repeating pattern */
        ms[l] = l == 0 ? 5 : l == L - 1 ? 11 : 3 + (l % 5) * 0.75 + (l % 3) * 0.5;
    static cost_table ct;
    costs_from(&ct, ms, L, G, 0.8);
    loom_oobleck_template one[NODES], many[NODES];
    int64_t e1, h1, e2, h2;
    plan_all(&ct, G, NODES, 1, one, &e1, &h1);
    for (int threads = 2; threads <= 9; threads += 7) { /* 9 is clamped to 8 */
        plan_all(&ct, G, NODES, threads, many, &e2, &h2);
        ck_assert(e2 == e1 && h2 == h1);
        for (int n = 0; n < NODES; n++) {
            ck_assert_int_eq(many[n].n_stages, one[n].n_stages);
            ck_assert(many[n].iteration_ms == one[n].iteration_ms);
            ck_assert(many[n].slowest_ms == one[n].slowest_ms && many[n].slowest == one[n].slowest);
            ck_assert_mem_eq(many[n].stages, one[n].stages,
                             (size_t)one[n].n_stages * sizeof *one[n].stages);
            loom_oobleck_template_clear(&many[n]);
        }
    }
    for (int n = 0; n < NODES; n++)
        loom_oobleck_template_clear(&one[n]);
}
END_TEST

START_TEST(dc_rejects_bad_input)
{
    double ms[2] = {1, 1};
    cost_table ct;
    costs_from(&ct, ms, 2, 2, 1.0);
    loom_oobleck_planner *p = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_oobleck_planner_new(&ct.c, 4, 1, &p, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "up to 2 GPUs"));
    ck_assert_int_eq(loom_oobleck_planner_new(&ct.c, 0, 1, &p, &err), LOOM_EINVAL);
    ct.c.n_layers = 0;
    ck_assert_int_eq(loom_oobleck_planner_new(&ct.c, 2, 1, &p, &err), LOOM_EINVAL);
    /* an unusable GPU count (e.g. TP not dividing the heads) is skipped */
    costs_from(&ct, ms, 2, 2, 1.0);
    ct.f[2] = -1; /* layer 0 on 2 GPUs */
    ck_assert_int_eq(loom_oobleck_planner_new(&ct.c, 2, 1, &p, &err), LOOM_OK);
    loom_oobleck_template t;
    ck_assert_int_eq(loom_oobleck_plan_stages(p, 1, 1, &t, &err), LOOM_EINFEASIBLE);
    ck_assert_int_eq(loom_oobleck_plan_template(p, 1, 0, &t, &err), LOOM_OK);
    ck_assert_int_eq(t.n_stages, 2);
    loom_oobleck_template_clear(&t);
    loom_oobleck_planner_free(p);
}
END_TEST

START_TEST(dc_work_is_bounded_before_planning)
{
    /* the bound, worked by hand for one node of 2 GPUs and 3 layers:
     * only S' = 2 splits, (2-1)(2-2+1) = 1 (s, m) pair, and the k loops of
     * its cells sum to K(K+1)(K+2)/6 with K = 3 - 2 + 1 = 2: 4 */
    ck_assert_int_eq(loom_oobleck_work(3, 2, 1, 0), 4);
    ck_assert_int_eq(loom_oobleck_work(3, 1, 1, 0), 0); /* one stage: no split */
    /* it grows with nodes, stages and layers, and max_stages caps it */
    ck_assert_int_gt(loom_oobleck_work(96, 8, 8, 0), loom_oobleck_work(96, 8, 4, 0));
    ck_assert_int_gt(loom_oobleck_work(96, 8, 8, 0), loom_oobleck_work(96, 8, 8, 16));
    /* the dissertation's 96 layers on up to 8 nodes of 8 GPUs fits ... */
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_oobleck_check_work(96, 8, 8, 0, &err), LOOM_OK);
    /* ... 1024 layers on 3 nodes of 8 GPUs does not (minutes of work) */
    ck_assert_int_eq(loom_oobleck_check_work(1024, 8, 3, 0, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "at most 2147483648"));
    /* plan_template refuses before planning */
    static double ms[1024];
    static cost_table_big big;
    for (int l = 0; l < 1024; l++)
        ms[l] = 1;
    for (int d = 1; d <= 8; d++)
        for (int l = 0; l < 1024; l++) {
            big.f[(d - 1) * 1024 + l] = ms[l] / 3 / d;
            big.b[(d - 1) * 1024 + l] = 2 * ms[l] / 3 / d;
        }
    loom_oobleck_costs c = {1024, 8, big.f, big.b};
    loom_oobleck_planner *p = NULL;
    ck_assert_int_eq(loom_oobleck_planner_new(&c, 8, 1, &p, &err), LOOM_OK);
    loom_oobleck_template t;
    ck_assert_int_eq(loom_oobleck_plan_template(p, 1, 0, &t, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "layer splits of the divide and conquer"));
    ck_assert_int_eq(loom_oobleck_memo_entries(p), 0);
    loom_oobleck_planner_free(p);
}
END_TEST

START_TEST(instantiation_work_is_bounded)
{
    /* Fig. 2.7: templates {2,3,4} give 2 plans of 7 nodes, 4 of 8 */
    const int32_t sizes[3] = {2, 3, 4};
    ck_assert_int_eq(loom_oobleck_plan_count(sizes, 3, 7), 2);
    ck_assert_int_eq(loom_oobleck_plan_count(sizes, 3, 8), 4);
    /* templates of 1..60 nodes: the partitions of 60 */
    int32_t all[60];
    for (int i = 0; i < 60; i++)
        all[i] = i + 1;
    ck_assert_int_eq(loom_oobleck_plan_count(all, 60, 60), 966467);
    /* 4096 nodes in templates of 1..4096: far past any bound, counted at once */
    static int32_t every[LOOM_OOBLECK_MAX_NODES];
    for (int i = 0; i < LOOM_OOBLECK_MAX_NODES; i++)
        every[i] = i + 1;
    ck_assert_int_gt(loom_oobleck_plan_count(every, LOOM_OOBLECK_MAX_NODES,
                                             LOOM_OOBLECK_MAX_NODES), LOOM_OOBLECK_MAX_PLANS);
    int32_t *plans = NULL, n = 0;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_oobleck_enumerate(every, LOOM_OOBLECK_MAX_NODES,
                                            LOOM_OOBLECK_MAX_NODES, 0, 0, &plans, &n, NULL,
                                            &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "instantiation plans"));
    /* a cap keeps the enumeration legal */
    ck_assert_int_eq(loom_oobleck_enumerate(every, LOOM_OOBLECK_MAX_NODES,
                                            LOOM_OOBLECK_MAX_NODES, 0, 10, &plans, &n, NULL,
                                            &err), LOOM_OK);
    ck_assert_int_eq(n, 10);
    free(plans);
    /* choosing among 966467 plans with 1000 microbatches: refused up front */
    double per_mb[60];
    for (int i = 0; i < 60; i++)
        per_mb[i] = 1.0 / (i + 1);
    loom_oobleck_choice ch;
    ck_assert_int_eq(loom_oobleck_choose(all, 60, loom_oobleck_linear_time, per_mb, 60, 0, 1000,
                                         0, &ch, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "at most 2147483648"));
}
END_TEST

/* ---- batch distribution (Eq. 2.6) ------------------------------------------ */

START_TEST(distribute_min_max_then_squares)
{
    /* x = (2,1): template 0's two pipelines share mb0, template 1's one
     * gets mb1 = 16 - mb0; times 2 N and 1.5 N per pipeline:
     * mb0 = 10 -> max(2*5, 1.5*6) = 10; 9 -> max(10, 10.5); 11 -> 12 */
    int32_t x[3] = {2, 1, 0}, mb[3];
    double per[3] = {2.0, 1.5, 1.0}, ms = 0;
    int32_t rec = -1;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_oobleck_distribute(x, 3, loom_oobleck_linear_time, per,
                                             16, mb, &ms, &rec, &err), LOOM_OK);
    ck_assert_int_eq(mb[0], 10);
    ck_assert_int_eq(mb[1], 6);
    ck_assert_int_eq(mb[2], 0);
    ck_assert_double_eq_tol(ms, 10, 1e-12);
    ck_assert_int_eq(rec, 0);
    ck_assert_int_eq(loom_oobleck_share(10, 2, 0), 5);
    ck_assert_int_eq(loom_oobleck_share(7, 2, 0), 4);
    ck_assert_int_eq(loom_oobleck_share(7, 2, 1), 3);
    /* equal times: an even split, three microbatches per pipeline */
    int32_t y[2] = {1, 3};
    double same[2] = {1, 1};
    ck_assert_int_eq(loom_oobleck_distribute(y, 2, loom_oobleck_linear_time, same,
                                             12, mb, &ms, NULL, &err), LOOM_OK);
    ck_assert_int_eq(mb[0], 3);
    ck_assert_int_eq(mb[1], 9);
    /* very skewed times: the slow pipeline keeps its single microbatch */
    double skew[2] = {100, 1};
    ck_assert_int_eq(loom_oobleck_distribute(y, 2, loom_oobleck_linear_time, skew,
                                             12, mb, &ms, NULL, &err), LOOM_OK);
    ck_assert_int_eq(mb[0], 1);
    ck_assert_int_eq(mb[1], 11);
    ck_assert_double_eq_tol(ms, 100, 1e-9);
    /* pipelines of one template may differ by one microbatch: 15 over
     * 2 + 2 equal pipelines is 4,4 and 4,3 (max 4) */
    int32_t z[2] = {2, 2};
    ck_assert_int_eq(loom_oobleck_distribute(z, 2, loom_oobleck_linear_time, same,
                                             15, mb, &ms, NULL, &err), LOOM_OK);
    ck_assert_int_eq(mb[0], 8);
    ck_assert_int_eq(mb[1], 7);
    ck_assert_double_eq_tol(ms, 4, 1e-12);
}
END_TEST

START_TEST(distribute_recommends_a_batch)
{
    /* fewer microbatches than pipelines: the smallest total that splits */
    int32_t three[1] = {3}, mb[1], rec = 0;
    double per[1] = {1}, ms = 0;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_oobleck_distribute(three, 1, loom_oobleck_linear_time,
                                             per, 2, mb, &ms, &rec, &err),
                     LOOM_EINFEASIBLE);
    ck_assert_int_eq(rec, 3);
    ck_assert_ptr_nonnull(strstr(err.message, "nearest total that splits: 3"));
    ck_assert_int_eq(loom_oobleck_distribute(three, 1, loom_oobleck_linear_time,
                                             per, 0, mb, &ms, &rec, &err),
                     LOOM_EINVAL);
    int32_t none[1] = {0};
    ck_assert_int_eq(loom_oobleck_distribute(none, 1, loom_oobleck_linear_time,
                                             per, 4, mb, &ms, &rec, &err),
                     LOOM_EINVAL);
}
END_TEST

/* A time function whose every time is infinite (a template whose
 * evaluation failed). */
static double infinite_time(void *user, int32_t template_index, int32_t microbatches)
{
    (void)user;
    (void)template_index;
    (void)microbatches;
    return INFINITY;
}

START_TEST(distribute_rejects_infinite_times)
{
    /* no pipeline can take a second microbatch: infeasible, nothing
     * indexed out of range (this read mb[-1] before) */
    int32_t two[2] = {1, 1}, mb[2], rec = 0;
    double ms = 0;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_oobleck_distribute(two, 2, infinite_time, NULL, 4, mb, &ms, &rec,
                                             &err),
                     LOOM_EINFEASIBLE);
    ck_assert_int_eq(rec, 0);
    ck_assert_ptr_nonnull(strstr(err.message, "no pipeline of the plan can take microbatch 3 "
                                              "of 4: every template's time for one more is "
                                              "infinite"));
}
END_TEST

START_TEST(choose_fastest_plan)
{
    /* templates of 2, 3, 4 nodes; per-microbatch times 4, 3, 2.5 ms;
     * N = 7, f = 1: plans (2,1,0) and (0,1,1) */
    int32_t sizes[3] = {2, 3, 4};
    double per[3] = {4, 3, 2.5};
    loom_oobleck_choice ch;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_oobleck_choose(sizes, 3, loom_oobleck_linear_time, per,
                                         7, 1, 24, 0, &ch, &err), LOOM_OK);
    ck_assert_int_eq(ch.plans, 2);
    /* (2,1,0): the two 2-node pipelines share 14 (7 each, 28 ms), the
     * 3-node one takes 10 (30 ms): 30. (0,1,1): 11 and 13 -> max(33,
     * 32.5) = 33. (2,1,0) wins. */
    ck_assert_int_eq(ch.plan_index, 0);
    ck_assert_int_eq(ch.x[0], 2);
    ck_assert_int_eq(ch.x[1], 1);
    ck_assert_int_eq(ch.mb[0], 14);
    ck_assert_int_eq(ch.mb[1], 10);
    ck_assert_double_eq_tol(ch.iteration_ms, 30, 1e-9);
    loom_oobleck_choice_clear(&ch);
    /* below (f+1) n0 there is no plan */
    ck_assert_int_eq(loom_oobleck_choose(sizes, 3, loom_oobleck_linear_time, per,
                                         3, 1, 24, 0, &ch, &err),
                     LOOM_EINFEASIBLE);
    ck_assert_ptr_nonnull(strstr(err.message, "no plan uses all 3 nodes"));
}
END_TEST

/* The suite of this file. */
static Suite *oobleck_suite(void)
{
    Suite *s = suite_create("oobleck");
    TCase *tc = tcase_create("plan");
    tcase_add_test(tc, node_spec_ranges);
    tcase_add_test(tc, node_spec_covers_every_feasible_count);
    tcase_add_test(tc, coin_change_digest_examples);
    tcase_add_test(tc, dc_single_stage_and_equal_stages);
    tcase_add_test(tc, dc_slowest_stage_terms);
    tcase_add_test(tc, dc_stages_never_span_nodes);
    tcase_add_test(tc, dc_compares_stage_counts_at_common_batch);
    tcase_add_test(tc, dc_memo_shared_across_templates);
    tcase_add_test(tc, dc_matches_plain_recursion);
    tcase_add_test(tc, dc_threads_change_nothing);
    tcase_add_test(tc, dc_rejects_bad_input);
    tcase_add_test(tc, dc_work_is_bounded_before_planning);
    tcase_add_test(tc, instantiation_work_is_bounded);
    tcase_add_test(tc, distribute_min_max_then_squares);
    tcase_add_test(tc, distribute_recommends_a_batch);
    tcase_add_test(tc, distribute_rejects_infinite_times);
    tcase_add_test(tc, choose_fastest_plan);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(oobleck_suite());
}
