/* test_interval_fill.c - DistTrain's inter-microbatch reordering: the 1F1B
 * recurrence against the digest's oracles ((l+p-1)(tf+tb) = 27 and 33;
 * encoder-bottleneck 51 and 108 where Eq. 1 + 5 says 57 and 117; 31.5 when
 * a downstream stage is the bottleneck) and against the core simulator,
 * the interval-fill order's shape (smallest first, p-1 smallest last, a
 * permutation for any l, including Fig. 12's p=4, l=6), its quality
 * against brute force, and the ranker over a test evaluator. */
#include <stdlib.h>
#include <string.h>
#include <loom/mock_host.h>
#include <loom/kits/graph.h>
#include <loom/mock_sim.h>
#include <cjson/cJSON.h>
#include "testutil.h"
#include "ifill.h"

const loom_plugin_info *loom_static_interval_fill(void);
const loom_plugin_info *loom_static_1f1b(void);

#define MAXL 16
#define MAXP 8

/* Times of l microbatches on p stages: stage s takes f[s] * scale[j]
 * forward and twice that backward. */
typedef struct inst {
    int32_t p, l;
    double fwd[MAXL * MAXP], bwd[MAXL * MAXP];
} inst;

/* Fills in from per-stage forward times and per-microbatch scales. */
static void make(inst *in, int32_t p, int32_t l, const double *f,
                 const double *scale)
{
    in->p = p;
    in->l = l;
    for (int32_t j = 0; j < l; j++)
        for (int32_t s = 0; s < p; s++) {
            double t = f[s] * (scale ? scale[j] : 1.0);
            in->fwd[j * p + s] = t;
            in->bwd[j * p + s] = 2 * t;
        }
}

/* Makespan of `order` (NULL: identity). */
static double span(const inst *in, const int32_t *order)
{
    double scratch[2 * MAXL * MAXP + MAXP];
    int32_t cursor[MAXP], ident[MAXL];
    for (int32_t k = 0; k < in->l; k++)
        ident[k] = k;
    return loom_ifill_makespan(in->p, in->l, order ? order : ident, in->fwd,
                               in->bwd, scratch, cursor);
}

/* The interval-fill order of in. */
static void fill_order(const inst *in, int32_t *order)
{
    double scratch[2 * MAXL * MAXP + MAXP], key_size[MAXL], key_fwd0[MAXL];
    int32_t iscratch[3 * MAXL + MAXP];
    loom_ifill_order(in->p, in->l, in->fwd, in->bwd, order, scratch, iscratch,
                     key_size, key_fwd0);
}

START_TEST(uniform_stages_closed_form)
{
    static const double f[4] = {1, 1, 1, 1};
    inst in;
    make(&in, 4, 6, f, NULL);
    ck_assert_double_eq(span(&in, NULL), 27); /* (6 + 4 - 1) * 3 */
    make(&in, 4, 8, f, NULL);
    ck_assert_double_eq(span(&in, NULL), 33);
    int32_t order[MAXL];
    fill_order(&in, order);
    ck_assert_double_eq(span(&in, order), 33); /* any order */
    make(&in, 1, 5, f, NULL);
    ck_assert_double_eq(span(&in, NULL), 15);
}
END_TEST

START_TEST(encoder_bottleneck_simulated)
{
    /* 1 encoder stage, 3 LLM stages at tf 1, tb = 2 tf */
    double f[4] = {2, 1, 1, 1};
    inst in;
    make(&in, 4, 8, f, NULL);
    ck_assert_double_eq(span(&in, NULL), 51); /* Eq. 1 + 5: 57 */
    f[0] = 3;
    make(&in, 4, 12, f, NULL);
    ck_assert_double_eq(span(&in, NULL), 108); /* Eq. 1 + 5: 117 */
    f[0] = 0.5;
    make(&in, 4, 8, f, NULL);
    ck_assert_double_eq(span(&in, NULL), 31.5); /* both agree */
}
END_TEST

/* Deterministic pseudo-random numbers. */
static uint64_t rs = 7;
static uint32_t rnd(uint32_t n)
{
    rs = rs * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rs >> 33) % n;
}

START_TEST(recurrence_matches_core_simulator)
{
    for (int trial = 0; trial < 40; trial++) {
        int32_t p = 1 + (int32_t)rnd(5), l = 1 + (int32_t)rnd(10);
        double f[MAXP], scale[MAXL];
        for (int32_t s = 0; s < p; s++)
            f[s] = 0.5 + rnd(8) * 0.25;
        for (int32_t j = 0; j < l; j++)
            scale[j] = 0.25 + rnd(12) * 0.25;
        inst in;
        make(&in, p, l, f, scale);
        double fw[MAXP], bw[MAXP];
        for (int32_t s = 0; s < p; s++) {
            fw[s] = f[s];
            bw[s] = 2 * f[s];
        }
        loom_stage_times st;
        memset(&st, 0, sizeof st);
        st.ranks = p;
        st.microbatches = l;
        st.virtual_stages = 1;
        st.forward_ms = fw;
        st.backward_ms = bw;
        st.microbatch_scale = scale;
        loom_stage_graph *g = NULL;
        loom_error err = {0, ""};
        ck_assert_int_eq(loom_graph_from_stage_times(&st, 0, &g, &err), LOOM_OK);
        const loom_interleaver_vtable *vt =
            (const loom_interleaver_vtable *)loom_static_1f1b()->role(LOOM_ROLE_INTERLEAVER);
        loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
        void *self = NULL;
        ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h),
                                    NULL, &self, &err), LOOM_OK);
        loom_schedule *sch = loom_schedule_new(g->n_ranks, g->n_stages);
        ck_assert_int_eq(vt->interleave(self, g, NULL, sch, &err), LOOM_OK);
        loom_metrics m = LOOM_METRICS_INIT;
        ck_assert_int_eq(loom_mock_simulate(g, sch, &m, &err), LOOM_OK);
        ck_assert_double_eq_tol(span(&in, NULL), m.makespan_ms, 1e-9);
        loom_schedule_free(sch);
        vt->destroy(self);
        loom_mock_host_free(h);
        loom_graph_free(g);
    }
}
END_TEST

/* 1 when order is a permutation of 0..l-1. */
static int is_perm(const int32_t *order, int32_t l)
{
    int seen[MAXL] = {0};
    for (int32_t k = 0; k < l; k++) {
        if (order[k] < 0 || order[k] >= l || seen[order[k]]++)
            return 0;
    }
    return 1;
}

START_TEST(order_shape)
{
    /* sizes 1..9 in shuffled order, p = 3: smallest first, the 2 next
     * smallest last (largest of them first) */
    static const double scale[9] = {5, 9, 2, 7, 1, 8, 3, 6, 4};
    static const double f[3] = {1, 1, 1};
    inst in;
    make(&in, 3, 9, f, scale);
    int32_t order[MAXL];
    fill_order(&in, order);
    ck_assert(is_perm(order, 9));
    ck_assert_int_eq(order[0], 4);  /* scale 1 */
    ck_assert_int_eq(order[7], 6);  /* scale 3 */
    ck_assert_int_eq(order[8], 2);  /* scale 2, the very end */
    /* every (p, l), including Fig. 12's p = 4, l = 6 < 2p - 1 */
    for (int32_t p = 1; p <= 6; p++)
        for (int32_t l = 1; l <= 12; l++) {
            double fs[MAXP], sc[MAXL];
            for (int32_t s = 0; s < p; s++)
                fs[s] = 1;
            for (int32_t j = 0; j < l; j++)
                sc[j] = 1 + (j * 7) % 5;
            make(&in, p, l, fs, sc);
            fill_order(&in, order);
            ck_assert_msg(is_perm(order, l), "p %d l %d", p, l);
        }
}
END_TEST

/* Stable insertion sort of idx[0..n) ascending by key[idx] (ties: index). */
static void ref_sort(int32_t *idx, int32_t n, const double *key)
{
    for (int32_t i = 1; i < n; i++)
        for (int32_t j = i; j > 0 && (key[idx[j]] < key[idx[j - 1]] ||
                                      (key[idx[j]] == key[idx[j - 1]] && idx[j] < idx[j - 1]));
             j--) {
            int32_t t = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = t;
        }
}

/* Algorithm 3 as the header states it, each interval measured by
 * simulating the whole order so far with zero-time placeholders
 * (loom_ifill_makespan): what loom_ifill_order must equal. */
static void ref_order(const inst *in, int32_t *order)
{
    int32_t p = in->p, l = in->l, idx[MAXL], pool[MAXL], rear[MAXL], ident[MAXL], cursor[MAXP];
    double size[MAXL], fwd0[MAXL], wf[MAXL * MAXP], wb[MAXL * MAXP];
    double scratch[2 * MAXL * MAXP + MAXP];
    for (int32_t j = 0; j < l; j++) {
        size[j] = 0;
        for (int32_t q = 0; q < p; q++)
            size[j] += in->fwd[j * p + q] + in->bwd[j * p + q];
        fwd0[j] = in->fwd[j * p];
        idx[j] = j;
        ident[j] = j;
    }
    ref_sort(idx, l, size);
    order[0] = idx[0];
    int32_t n_rear = p - 1 < l - 1 ? p - 1 : l - 1, n_pool = l - 1 - n_rear, filled = 1;
    for (int32_t t = 0; t < n_rear; t++)
        rear[t] = idx[1 + t];
    for (int32_t t = 0; t < n_pool; t++)
        pool[t] = idx[1 + n_rear + t];
    ref_sort(pool, n_pool, fwd0);
    while (n_pool > 0) {
        int32_t k = filled == 1 ? (p - 1 < n_pool ? p - 1 : n_pool) : 1;
        k = k < 1 ? 1 : k;
        for (int32_t j = 0; j < l; j++)
            for (int32_t q = 0; q < p; q++) {
                wf[j * p + q] = j < filled ? in->fwd[order[j] * p + q] : 0;
                wb[j * p + q] = j < filled ? in->bwd[order[j] * p + q] : 0;
            }
        loom_ifill_makespan(p, l, ident, wf, wb, scratch, cursor);
        int32_t at = filled == 1 ? 0 : filled - p + 1;
        double ready = p > 1 ? scratch[l * p + at * p + 1] : scratch[at * p];
        double from = filled == 1 ? scratch[0] : scratch[l * p + (at - 1) * p];
        double v = ready > from ? ready - from : 0, best_gap = -1;
        int32_t best = 0;
        for (int32_t a = 0; a + k <= n_pool; a++) {
            double sum = 0;
            for (int32_t t = 0; t < k; t++)
                sum += in->fwd[pool[a + t] * p];
            double gap = sum > v ? sum - v : v - sum;
            if (best_gap < 0 || gap < best_gap) {
                best_gap = gap;
                best = a;
            }
        }
        for (int32_t t = 0; t < k; t++)
            order[filled++] = pool[best + t];
        memmove(pool + best, pool + best + k, (size_t)(n_pool - best - k) * sizeof *pool);
        n_pool -= k;
    }
    for (int32_t t = n_rear - 1; t >= 0; t--)
        order[filled++] = rear[t];
}

/* loom_ifill_order measures each interval on a simulation it keeps and
 * rolls back only past the newly filled positions, and finds each later
 * interval's item by links through the sorted pool; its order equals the
 * whole re-simulation's window scan for every p and l, with random, tied
 * and small integer times. */
START_TEST(order_matches_full_resimulation)
{
    uint64_t rng = 11;
    for (int32_t p = 1; p <= MAXP; p++)
        for (int32_t l = 1; l <= MAXL; l++)
            for (int rep = 0; rep < 6; rep++) {
                /* reps 0-1 random, 2 tied, 3-5 small integers (intervals
                 * halfway between two items' times) */
                double fs[MAXP], sc[MAXL];
                for (int32_t q = 0; q < p; q++) {
                    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
                    fs[q] = rep == 2 ? 1
                            : rep > 2 ? (double)(1 + (rng >> 40) % 2)
                                      : 0.5 + (double)(rng >> 40) / (double)(1 << 24);
                }
                for (int32_t j = 0; j < l; j++) {
                    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
                    sc[j] = rep == 2 ? (double)(1 + j % 3)
                            : rep > 2 ? (double)(1 + (rng >> 40) % 5)
                                      : 0.25 + 3 * (double)(rng >> 40) / (double)(1 << 24);
                }
                inst in;
                make(&in, p, l, fs, sc);
                int32_t got[MAXL], want[MAXL];
                fill_order(&in, got);
                ref_order(&in, want);
                ck_assert_msg(!memcmp(got, want, (size_t)l * sizeof *got),
                              "p %d l %d rep %d: the orders differ", p, l, rep);
            }
}
END_TEST

/* Smallest makespan over every order (l <= 7). */
static double brute(const inst *in)
{
    int32_t a[MAXL];
    for (int32_t k = 0; k < in->l; k++)
        a[k] = k;
    double best = span(in, a);
    /* Heap's algorithm */
    int32_t c[MAXL] = {0};
    int32_t i = 0;
    while (i < in->l) {
        if (c[i] < i) {
            int32_t j = i % 2 == 0 ? 0 : c[i];
            int32_t t = a[j];
            a[j] = a[i];
            a[i] = t;
            double v = span(in, a);
            best = v < best ? v : best;
            c[i]++;
            i = 0;
        } else {
            c[i] = 0;
            i++;
        }
    }
    return best;
}

START_TEST(quality_against_brute_force)
{
    /* the digest's setting: p 3, l 7, stage-1 times from {0.2, 0.5, 1,
     * 1.5, 3}, LLM stages 1, tb = 2 tf */
    static const double pick[5] = {0.2, 0.5, 1, 1.5, 3};
    double sum_fill = 0, sum_ident = 0;
    int n = 60;
    for (int trial = 0; trial < n; trial++) {
        inst in;
        in.p = 3;
        in.l = 7;
        for (int32_t j = 0; j < 7; j++) {
            double t0 = pick[rnd(5)];
            for (int32_t s = 0; s < 3; s++) {
                in.fwd[j * 3 + s] = s == 0 ? t0 : 1;
                in.bwd[j * 3 + s] = 2 * in.fwd[j * 3 + s];
            }
        }
        int32_t order[MAXL];
        fill_order(&in, order);
        double opt = brute(&in), got = span(&in, order), id = span(&in, NULL);
        ck_assert_double_ge(got, opt - 1e-9);
        sum_fill += got / opt;
        sum_ident += id / opt;
    }
    ck_assert_double_lt(sum_fill / n, sum_ident / n);
    ck_assert_double_le(sum_fill / n, 1.10);
}
END_TEST

/* Test evaluator: the 1f1b interleaver plus the core simulator; it
 * fails on ev_fail_graph as a memory tuner over the cap would. */
static const loom_stage_graph *ev_fail_graph;
static int ev_create(loom_ctx *ctx, const loom_stage_graph *graph,
                     loom_evaluator **out, loom_error *err)
{
    (void)ctx, (void)err;
    *out = (loom_evaluator *)(uintptr_t)graph;
    return LOOM_OK;
}
static int ev_run(loom_evaluator *e, const float *prio, loom_metrics *out,
                  loom_error *err)
{
    const loom_stage_graph *g = (const loom_stage_graph *)(uintptr_t)e;
    if (g == ev_fail_graph) {
        snprintf(err->message, sizeof err->message, "test: over the cap");
        return err->code = LOOM_EINFEASIBLE;
    }
    const loom_interleaver_vtable *vt =
        (const loom_interleaver_vtable *)loom_static_1f1b()->role(LOOM_ROLE_INTERLEAVER);
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    void *self = NULL;
    int rc = vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h), NULL, &self, err);
    loom_schedule *s = loom_schedule_new(g->n_ranks, g->n_stages);
    if (rc == LOOM_OK)
        rc = vt->interleave(self, g, prio, s, err);
    if (rc == LOOM_OK)
        rc = loom_mock_simulate(g, s, out, err);
    vt->destroy(self);
    loom_mock_host_free(h);
    loom_schedule_free(s);
    return rc;
}
static void ev_destroy(loom_evaluator *e)
{
    (void)e;
}
/* The graph an evaluator of test_ev runs: the evaluator is its graph. */
static const loom_stage_graph *ev_graph(const loom_evaluator *e)
{
    return (const loom_stage_graph *)(uintptr_t)e;
}

static const loom_evaluator_service test_ev = {
    sizeof(loom_evaluator_service), 1, ev_create, ev_run, ev_destroy, NULL, ev_graph,
};

/* A stage-times graph: p ranks, microbatch scales `scale` (l of them). */
static loom_stage_graph *graph(int32_t p, int32_t l, const double *f,
                               const double *scale)
{
    double bw[MAXP];
    for (int32_t s = 0; s < p; s++)
        bw[s] = 2 * f[s];
    loom_stage_times st;
    memset(&st, 0, sizeof st);
    st.ranks = p;
    st.microbatches = l;
    st.virtual_stages = 1;
    st.forward_ms = f;
    st.backward_ms = bw;
    st.microbatch_scale = scale;
    loom_stage_graph *g = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_graph_from_stage_times(&st, 0, &g, &err), LOOM_OK);
    return g;
}

START_TEST(ranker_orders_and_chooses)
{
    static const double f[3] = {1, 1, 1}, f2[3] = {2, 2, 2};
    static const double scale[7] = {3, 1, 0.5, 2, 1.5, 0.2, 1};
    loom_stage_graph *g[2] = {graph(3, 7, f2, scale), graph(3, 7, f, scale)};
    const loom_ranker_vtable *vt =
        (const loom_ranker_vtable *)loom_static_interval_fill()->role(LOOM_ROLE_RANKER);
    ck_assert_ptr_nonnull(vt);
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    loom_mock_host_add_service(h, LOOM_SERVICE_EVALUATOR, 1, &test_ev);
    loom_mock_host_set_param(h, "keep_better", "false");
    void *self = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h), NULL,
                                &self, &err), LOOM_OK);
    float prio[64];
    loom_ranking r = {.struct_size = (uint32_t)sizeof(loom_ranking), .cap_priorities = 64,
                      .priorities = prio};
    ck_assert_msg(vt->rank(self, (const loom_stage_graph *const *)g, 2, &r, &err) == LOOM_OK,
                  "%s", err.message);
    ck_assert_int_eq(r.candidate, 1); /* half the stage times */
    ck_assert_int_eq(r.evaluations, 2);
    /* the priorities follow loom_ifill_order on the graph's times */
    inst in;
    make(&in, 3, 7, f, scale);
    int32_t order[MAXL];
    fill_order(&in, order);
    for (int32_t k = 1; k < 7; k++)
        ck_assert_float_gt(prio[order[k - 1]],
                           prio[order[k]]);
    ck_assert_double_eq_tol(r.best_makespan_ms, span(&in, order), 1e-9);
    ck_assert_double_eq_tol(loom_mock_host_best_makespan_ms(h), r.best_makespan_ms, 1e-9);
    /* keep_better: never worse than the workload order */
    loom_mock_host_set_param(h, "keep_better", "true");
    ck_assert_int_eq(vt->rank(self, (const loom_stage_graph *const *)g, 2, &r, &err), LOOM_OK);
    ck_assert_int_eq(r.evaluations, 4);
    ck_assert_double_le(r.best_makespan_ms, span(&in, NULL) + 1e-9);
    ck_assert_double_le(r.best_makespan_ms, span(&in, order) + 1e-9);
    /* a candidate that cannot be scheduled is skipped */
    ev_fail_graph = g[1];
    ck_assert_int_eq(vt->rank(self, (const loom_stage_graph *const *)g, 2, &r, &err), LOOM_OK);
    ck_assert_int_eq(r.candidate, 0);
    loom_stage_graph *only[1] = {g[1]};
    ck_assert_int_eq(vt->rank(self, (const loom_stage_graph *const *)only, 1, &r, &err),
                     LOOM_EINFEASIBLE);
    ck_assert_ptr_nonnull(strstr(err.message, "none of the 1 candidates could be "
                                              "scheduled; the last: test: over the cap"));
    ev_fail_graph = NULL;
    vt->destroy(self);
    loom_mock_host_free(h);

    /* no evaluator */
    h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h), NULL,
                                &self, &err), LOOM_OK);
    ck_assert_int_eq(vt->rank(self, (const loom_stage_graph *const *)g, 2, &r, &err),
                     LOOM_ENOTFOUND);
    ck_assert_ptr_nonnull(strstr(err.message, "loom.evaluator"));
    ck_assert_int_eq(vt->rank(self, (const loom_stage_graph *const *)g, 0, &r, &err),
                     LOOM_EINVAL);
    vt->destroy(self);
    loom_mock_host_free(h);
    loom_graph_free(g[0]);
    loom_graph_free(g[1]);
}
END_TEST

/* What one ranking over `n` candidates gave, for comparing thread counts. */
typedef struct ranked {
    int rc;
    int32_t candidate;
    int64_t evaluations, logs, progress_calls;
    double best_ms, progress_ms;
    float prio[64];
    char last_log[256], message[LOOM_ERROR_MSG_BYTES];
} ranked;

/* Ranks g[0..n) with `threads` threads on a fresh mock host. */
static ranked rank_with(loom_stage_graph *const *g, int32_t n, const char *threads)
{
    const loom_ranker_vtable *vt =
        (const loom_ranker_vtable *)loom_static_interval_fill()->role(LOOM_ROLE_RANKER);
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    loom_mock_host_add_service(h, LOOM_SERVICE_EVALUATOR, 1, &test_ev);
    loom_mock_host_set_param(h, "threads", threads);
    void *self = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h), NULL,
                                &self, &err), LOOM_OK);
    ranked out;
    memset(&out, 0, sizeof out);
    loom_ranking r = {.struct_size = (uint32_t)sizeof(loom_ranking), .cap_priorities = 64,
                      .priorities = out.prio};
    out.rc = vt->rank(self, (const loom_stage_graph *const *)g, n, &r, &err);
    out.candidate = r.candidate;
    out.evaluations = r.evaluations;
    out.best_ms = r.best_makespan_ms;
    out.logs = loom_mock_host_log_count(h);
    out.progress_calls = loom_mock_host_progress_calls(h);
    out.progress_ms = loom_mock_host_best_makespan_ms(h);
    snprintf(out.last_log, sizeof out.last_log, "%s", loom_mock_host_last_log(h));
    memcpy(out.message, err.message, sizeof out.message);
    vt->destroy(self);
    loom_mock_host_free(h);
    return out;
}

/* Candidates scored on several threads give what one thread gives: the
 * same choice (the fastest, ties to the lower index, a candidate that
 * cannot be scheduled skipped), priorities, evaluation count, progress
 * reports and logs, the last of them the last candidate's. */
START_TEST(threads_do_not_change_the_choice)
{
    static const double scale[7] = {3, 1, 0.5, 2, 1.5, 0.2, 1};
    static const double f[9][3] = {{2, 2, 2}, {1, 3, 1}, {1, 1, 1}, {3, 1, 1}, {1, 1, 1},
                                   {0.5, 2, 2}, {2, 1, 2}, {1, 1, 2}, {2, 2, 1}};
    loom_stage_graph *g[9];
    for (int i = 0; i < 9; i++)
        g[i] = graph(3, 7, f[i], scale);
    ev_fail_graph = g[5];
    ranked one = rank_with(g, 9, "1");
    ck_assert_msg(one.rc == LOOM_OK, "%s", one.message);
    ck_assert_int_eq(one.candidate, 2); /* g[4] is as fast: the lower index */
    ck_assert_int_eq(one.evaluations, 17); /* two per candidate, g[5] one (it fails) */
    ck_assert_msg(strncmp(one.last_log, "candidate 8: interval fill ", 27) == 0, "%s",
                  one.last_log);
    for (int t = 2; t <= 4; t++) {
        char threads[8];
        snprintf(threads, sizeof threads, "%d", t);
        ranked many = rank_with(g, 9, threads);
        ck_assert_int_eq(many.rc, LOOM_OK);
        ck_assert_int_eq(many.candidate, one.candidate);
        ck_assert_int_eq(many.evaluations, one.evaluations);
        ck_assert_double_eq(many.best_ms, one.best_ms);
        ck_assert_mem_eq(many.prio, one.prio, 7 * sizeof(float));
        ck_assert_int_eq(many.progress_calls, one.progress_calls);
        ck_assert_double_eq(many.progress_ms, one.progress_ms);
        ck_assert_int_eq(many.logs, one.logs);
        ck_assert_str_eq(many.last_log, one.last_log);
    }
    /* none schedulable: the last one's reason, on any thread count */
    ev_fail_graph = g[8];
    ranked last = rank_with(g + 8, 1, "3");
    ck_assert_int_eq(last.rc, LOOM_EINFEASIBLE);
    ck_assert_str_eq(last.message, "interval-fill: none of the 1 candidates could be "
                                   "scheduled; the last: test: over the cap");
    ev_fail_graph = NULL;
    for (int i = 0; i < 9; i++)
        loom_graph_free(g[i]);
}
END_TEST

/* Outlines of two graphs (counts only) and an evaluator that builds
 * each: the evaluator of outline i is graph i (of a graph, the graph). */
static loom_stage_graph outline_of[2];
static loom_stage_graph *built_of[2];
static int outline_create(loom_ctx *ctx, const loom_stage_graph *graph,
                          loom_evaluator **out, loom_error *err)
{
    for (int i = 0; i < 2; i++)
        if (graph == &outline_of[i])
            graph = built_of[i];
    return ev_create(ctx, graph, out, err);
}

START_TEST(ranker_reads_outlines)
{
    static const double f[3] = {1, 1, 1}, f2[3] = {2, 2, 2};
    static const double scale[7] = {3, 1, 0.5, 2, 1.5, 0.2, 1};
    built_of[0] = graph(3, 7, f2, scale);
    built_of[1] = graph(3, 7, f, scale);
    for (int i = 0; i < 2; i++) {
        const loom_stage_graph *b = built_of[i];
        memset(&outline_of[i], 0, sizeof outline_of[i]);
        outline_of[i].n_stages = b->n_stages;
        outline_of[i].n_edges = b->n_edges;
        outline_of[i].n_ranks = b->n_ranks;
        outline_of[i].n_groups = b->n_groups;
        outline_of[i].n_microbatches = b->n_microbatches;
    }
    const loom_ranker_vtable *vt =
        (const loom_ranker_vtable *)loom_static_interval_fill()->role(LOOM_ROLE_RANKER);
    ck_assert_uint_eq(vt->reads, LOOM_RANKER_READS_COUNTS);
    loom_evaluator_service builds = test_ev;
    builds.create = outline_create;
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    loom_mock_host_add_service(h, LOOM_SERVICE_EVALUATOR, 1, &builds);
    void *self = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h), NULL,
                                &self, &err), LOOM_OK);
    float by_graph[64], by_outline[64];
    loom_ranking a = {.struct_size = (uint32_t)sizeof(loom_ranking), .cap_priorities = 64,
                      .priorities = by_graph};
    loom_ranking o = a;
    o.priorities = by_outline;
    ck_assert_int_eq(vt->rank(self, (const loom_stage_graph *const *)built_of, 2, &a, &err),
                     LOOM_OK);
    const loom_stage_graph *outlines[2] = {&outline_of[0], &outline_of[1]};
    ck_assert_msg(vt->rank(self, outlines, 2, &o, &err) == LOOM_OK, "%s", err.message);
    /* the same choice, order and makespan as from the graphs themselves */
    ck_assert_int_eq(o.candidate, a.candidate);
    ck_assert_int_eq(o.evaluations, a.evaluations);
    ck_assert_double_eq(o.best_makespan_ms, a.best_makespan_ms);
    ck_assert_mem_eq(by_outline, by_graph, (size_t)built_of[1]->n_groups * sizeof(float));
    /* an evaluator service without graph() cannot show an outline's arrays */
    builds.struct_size = (uint32_t)offsetof(loom_evaluator_service, graph);
    ck_assert_int_eq(vt->rank(self, outlines, 2, &o, &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "interval-fill: candidate 0: the evaluator gives no graph "
                                  "to read");
    vt->destroy(self);
    loom_mock_host_free(h);
    loom_graph_free(built_of[0]);
    loom_graph_free(built_of[1]);
}
END_TEST

START_TEST(manifest_matches_binary)
{
    const loom_plugin_info *info = loom_static_interval_fill();
    cJSON *m = loom_test_json(loom_test_src("plugins/interval-fill/manifest.json"));
    ck_assert_str_eq(cJSON_GetObjectItem(m, "id")->valuestring, info->id);
    ck_assert_str_eq(cJSON_GetObjectItem(m, "version")->valuestring, info->version);
    ck_assert_ptr_nonnull(info->role(LOOM_ROLE_RANKER));
    cJSON_Delete(m);
}
END_TEST

/* The interval-fill suite. */
static Suite *suite(void)
{
    Suite *s = suite_create("interval-fill");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, uniform_stages_closed_form);
    tcase_add_test(tc, encoder_bottleneck_simulated);
    tcase_add_test(tc, recurrence_matches_core_simulator);
    tcase_add_test(tc, order_shape);
    tcase_add_test(tc, order_matches_full_resimulation);
    tcase_add_test(tc, quality_against_brute_force);
    tcase_add_test(tc, ranker_orders_and_chooses);
    tcase_add_test(tc, ranker_reads_outlines);
    tcase_add_test(tc, threads_do_not_change_the_choice);
    tcase_add_test(tc, manifest_matches_binary);
    suite_add_tcase(s, tc);
    return s;
}

/* Runs the suite; exits non-zero when a check fails. */
int main(void)
{
    return loom_test_main(suite());
}
