/*
 * loom/mock_search.h - test fixtures for the search kit
 * (<loom/kits/search.h>) and the mcts, random and exhaustive suites: the
 * evaluator service of <loom/mock_evaluator.h>, small graphs with non-uniform microbatches and optional group
 * precedence, and a brute-force optimum over every valid assignment.
 *
 * Test-only code: static inline functions, included by one suite each.
 * In-tree test code: it builds graphs with the graph kit
 * (<loom/kits/graph.h>), simulates with the mock simulator
 * (<loom/mock_sim.h>, which links the core) and uses Check through
 * testutil.h, so it is not installed with the SDK.
 */
#ifndef LOOM_MOCK_SEARCH_H
#define LOOM_MOCK_SEARCH_H

#include <loom/mock_host.h>

#include <stdlib.h>
#include <string.h>

#include <loom/kits/graph.h>
#include <loom/mock_evaluator.h>
#include <loom/mock_sim.h>
#include "testutil.h"

/* P ranks, M groups (one per microbatch), F=1, B=2, scales cycling
 * through a non-uniform pattern. */
static inline loom_stage_graph *mock_graph(int P, int M)
{
    static const double pattern[] = {1, 3, 0.5, 2, 1, 1.5, 2.5, 0.75};
    double scales[16];
    for (int i = 0; i < M && i < 16; i++)
        scales[i] = pattern[i % 8];
    loom_error err = {0};
    loom_stage_graph *g = mock_fb_graph(P, M, scales, &err);
    ck_assert_msg(g, "%s", err.message);
    return g;
}

/* Adds group precedence: pairs[2k] must rank above pairs[2k+1]. */
static inline void mock_precede(loom_stage_graph *g, const int *pairs,
                                int n_pairs)
{
    int n = g->n_groups, k = 0;
    free(g->group_pred);
    g->group_pred = malloc((size_t)(n_pairs > 0 ? n_pairs : 1) * sizeof(int32_t));
    for (int v = 0; v < n; v++) {
        g->group_pred_off[v] = k;
        for (int i = 0; i < n_pairs; i++)
            if (pairs[2 * i + 1] == v)
                g->group_pred[k++] = pairs[2 * i];
    }
    g->group_pred_off[n] = k;
}

/* 1 when prio honours g's group precedence. */
static inline int mock_valid(const loom_stage_graph *g, const float *prio)
{
    for (int v = 0; v < g->n_groups; v++)
        for (int e = g->group_pred_off[v]; e < g->group_pred_off[v + 1]; e++)
            if (!(prio[g->group_pred[e]] > prio[v]))
                return 0;
    return 1;
}

/* State of the brute-force enumeration. */
typedef struct mock_brute {
    const loom_stage_graph *g;
    loom_evaluator *ev;
    float prio[8];
    int used[9];
    double best;
    int64_t n_valid;
} mock_brute;

/* Gives group `depth` every unused value in turn; evaluates full ones. */
static inline void mock_brute_at(mock_brute *b, int depth)
{
    int n = b->g->n_groups;
    if (depth == n) {
        if (!mock_valid(b->g, b->prio))
            return;
        loom_metrics m = LOOM_METRICS_INIT;
        loom_error err = {0};
        ck_assert_int_eq(mock_ev_run(b->ev, b->prio, &m, &err), LOOM_OK);
        b->n_valid++;
        if (b->best < 0 || m.makespan_ms < b->best)
            b->best = m.makespan_ms;
        return;
    }
    for (int v = 1; v <= n; v++) {
        if (b->used[v])
            continue;
        b->used[v] = 1;
        b->prio[depth] = (float)v;
        mock_brute_at(b, depth + 1);
        b->used[v] = 0;
    }
}

/* Brute force over all permutations: the best makespan of a valid
 * assignment and how many valid assignments there are. */
static inline double mock_optimum(loom_mock_host *h, const loom_stage_graph *g,
                                  int64_t *n_valid)
{
    mock_brute b;
    loom_error err = {0};
    memset(&b, 0, sizeof b);
    ck_assert_int_le(g->n_groups, 8);
    b.g = g;
    b.best = -1;
    ck_assert_int_eq(mock_ev_create(loom_mock_host_ctx(h), g, &b.ev, &err), LOOM_OK);
    mock_brute_at(&b, 0);
    mock_ev_destroy(b.ev);
    *n_valid = b.n_valid;
    return b.best;
}

/* A ranker instance on a mock host that offers MOCK_EVALUATOR. */
typedef struct mock_ranker {
    loom_mock_host *h;
    const loom_ranker_vtable *vt;
    void *self;
} mock_ranker;

static inline mock_ranker mock_ranker_open(const loom_plugin_info *info)
{
    mock_ranker r;
    r.h = loom_test_mock_host(info);
    loom_mock_host_add_service(r.h, LOOM_SERVICE_EVALUATOR, 1, &MOCK_EVALUATOR);
    r.vt = (const loom_ranker_vtable *)info->role(LOOM_ROLE_RANKER);
    ck_assert_ptr_nonnull(r.vt);
    r.self = NULL;
    return r;
}

/* Creates the ranker (after the test set its params) and ranks g. */
static inline int mock_rank(mock_ranker *r,
                            const loom_stage_graph *const *graphs,
                            int n_graphs, float *prio, loom_ranking *out,
                            loom_error *err)
{
    int rc = r->vt->create(loom_mock_host_api(r->h), loom_mock_host_ctx(r->h),
                           NULL, &r->self, err);
    if (rc != LOOM_OK)
        return rc;
    *out = (loom_ranking)LOOM_RANKING_INIT;
    out->cap_priorities = 8;
    out->priorities = prio;
    rc = r->vt->rank(r->self, graphs, n_graphs, out, err);
    r->vt->destroy(r->self);
    r->self = NULL;
    return rc;
}

static inline void mock_ranker_close(mock_ranker *r)
{
    loom_mock_host_free(r->h);
}

#endif
