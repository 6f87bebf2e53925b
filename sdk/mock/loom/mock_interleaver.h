/* loom/mock_interleaver.h - what the interleaver plugins' Check suites
 * share: stage-times graphs (the graph kit), running an interleaver's
 * static twin on a mock host, and checking and simulating its schedule
 * (the mock simulator, loom/mock_sim.h).
 * Test-only code: static inline functions that fail the running Check test
 * (testutil.h) on error. Graphs and schedules they return are the
 * caller's (loom_graph_free, loom_schedule_free). In-tree only, as
 * loom/mock_sim.h. */
#ifndef LOOM_MOCK_INTERLEAVER_H
#define LOOM_MOCK_INTERLEAVER_H

#include <stdlib.h>
#include <string.h>
#include <loom/mock_host.h>
#include <loom/kits/graph.h>
#include <loom/mock_sim.h>
#include "testutil.h"

#define IK_MAX_POS 64

/* A stage-times graph of P ranks, V chunks each, M microbatches; stage s
 * takes f[s] forward and b[s] backward (f, b NULL: 1 and 2 ms); split
 * backward into B and W when `split`. */
static inline loom_stage_graph *ik_st_graph(int P, int M, int V, const double *f,
                                            const double *b, int split)
{
    double fw[IK_MAX_POS], bw[IK_MAX_POS];
    ck_assert_int_le(P * V, IK_MAX_POS);
    for (int s = 0; s < P * V; s++) {
        fw[s] = f ? f[s] : 1.0;
        bw[s] = b ? b[s] : 2.0;
    }
    loom_stage_times st;
    memset(&st, 0, sizeof st);
    st.ranks = P;
    st.microbatches = M;
    st.virtual_stages = V;
    st.forward_ms = fw;
    st.backward_ms = bw;
    loom_stage_graph *g = NULL;
    loom_error err = {0, ""};
    ck_assert_msg(loom_graph_from_stage_times(&st, split, &g, &err) == LOOM_OK,
                  "%s", err.message);
    return g;
}

/* Runs interleaver `info` on mock host h (its params set by the caller,
 * freed here) over g into a fresh schedule (*out); a second call on the
 * same instance must give the same order. */
static inline int ik_interleave_on(loom_mock_host *h, const loom_plugin_info *info,
                                   const loom_stage_graph *g, const float *prio,
                                   loom_schedule **out, loom_error *err)
{
    const loom_interleaver_vtable *vt =
        (const loom_interleaver_vtable *)info->role(LOOM_ROLE_INTERLEAVER);
    ck_assert_ptr_nonnull(vt);
    void *self = NULL;
    ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h),
                                NULL, &self, err), LOOM_OK);
    *out = loom_schedule_new(g->n_ranks, g->n_stages);
    int rc = vt->interleave(self, g, prio, *out, err);
    if (rc == LOOM_OK) {
        loom_schedule *again = loom_schedule_new(g->n_ranks, g->n_stages);
        ck_assert_int_eq(vt->interleave(self, g, prio, again, err), LOOM_OK);
        ck_assert_int_eq(memcmp(again->order, (*out)->order,
                                (size_t)g->n_stages * sizeof(int32_t)), 0);
        loom_schedule_free(again);
    }
    vt->destroy(self);
    loom_mock_host_free(h);
    return rc;
}

/* ik_interleave_on with a mock host holding the plugin's manifest defaults. */
static inline int ik_interleave(const loom_plugin_info *info, const loom_stage_graph *g,
                                const float *prio, loom_schedule **out, loom_error *err)
{
    return ik_interleave_on(loom_test_mock_host(info), info, g, prio, out, err);
}

/* Asserts every stage appears exactly once, on its own rank. */
static inline void ik_check_complete(const loom_stage_graph *g, const loom_schedule *s)
{
    ck_assert_int_eq(s->n_stages, g->n_stages);
    ck_assert_int_eq(s->rank_off[0], 0);
    ck_assert_int_eq(s->rank_off[g->n_ranks], g->n_stages);
    int *seen = calloc((size_t)g->n_stages, sizeof *seen);
    for (int r = 0; r < g->n_ranks; r++)
        for (int i = s->rank_off[r]; i < s->rank_off[r + 1]; i++) {
            int v = s->order[i];
            ck_assert_int_ge(v, 0);
            ck_assert_int_lt(v, g->n_stages);
            ck_assert_int_eq(g->rank[v], r);
            seen[v]++;
        }
    for (int v = 0; v < g->n_stages; v++)
        ck_assert_int_eq(seen[v], 1);
    free(seen);
}

/* Interleaves g with `info`, checks the schedule and simulates it; fills
 * m (with per-rank peaks in peak, which may be NULL). */
static inline void ik_plan(const loom_plugin_info *info, const loom_stage_graph *g,
                           const float *prio, loom_metrics *m, int64_t *peak)
{
    loom_schedule *s = NULL;
    loom_error err = {0, ""};
    ck_assert_msg(ik_interleave(info, g, prio, &s, &err) == LOOM_OK, "%s", err.message);
    ik_check_complete(g, s);
    loom_metrics_init(m);
    m->peak_bytes = peak;
    ck_assert_msg(loom_mock_simulate(g, s, m, &err) == LOOM_OK, "%s", err.message);
    loom_schedule_free(s);
}

#endif
