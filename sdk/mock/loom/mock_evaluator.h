/*
 * loom/mock_evaluator.h - a "loom.evaluator" service for the SDK mock host
 * that runs the dual-queue interleaver and the core simulator on a graph:
 * MOCK_EVALUATOR, for ranker tests and benchmarks, and the small F/B
 * stage-times graphs they run on (mock_fb_graph).
 *
 * In-tree code: static inline functions over the static dual-queue plugin
 * (loom_static_dual_queue) and the mock simulator (<loom/mock_sim.h>,
 * which links the core), so it is not installed with the SDK. Owns
 * nothing beyond the evaluators it creates; each is freed by its destroy.
 */
#ifndef LOOM_MOCK_EVALUATOR_H
#define LOOM_MOCK_EVALUATOR_H

#include <stdlib.h>

#include <loom/mock_host.h>
#include <loom/kits/graph.h>
#include <loom/mock_sim.h>

const loom_plugin_info *loom_static_dual_queue(void);

/* An evaluator: one dual-queue instance, a schedule and a scratch. */
struct loom_evaluator {
    const loom_stage_graph *g;
    const loom_interleaver_vtable *vt;
    void *dq;
    loom_schedule *sc;
    loom_sim_scratch *scratch;
};

/* service.create: binds an evaluator to graph g. */
static inline int mock_ev_create(loom_ctx *ctx, const loom_stage_graph *g,
                                 loom_evaluator **out, loom_error *err)
{
    loom_mock_host *h = loom_mock_host_from_ctx(ctx);
    loom_evaluator *ev = calloc(1, sizeof *ev);
    ev->g = g;
    ev->vt = (const loom_interleaver_vtable *)loom_static_dual_queue()->role(
        LOOM_ROLE_INTERLEAVER);
    int rc = ev->vt->create(loom_mock_host_api(h), ctx, NULL, &ev->dq, err);
    if (rc != LOOM_OK) {
        free(ev);
        return rc;
    }
    ev->sc = loom_schedule_new(g->n_ranks, g->n_stages);
    ev->scratch = loom_mock_simulator()->scratch_new();
    *out = ev;
    return LOOM_OK;
}

/* service.run: interleave with the priorities, then simulate. */
static inline int mock_ev_run(loom_evaluator *ev, const float *prio,
                              loom_metrics *out, loom_error *err)
{
    int rc = ev->vt->interleave(ev->dq, ev->g, prio, ev->sc, err);
    if (rc != LOOM_OK)
        return rc;
    loom_metrics_init(out);
    return loom_mock_simulator()->simulate(ev->scratch, ev->g, ev->sc, out, err);
}

/* service.destroy. */
static inline void mock_ev_destroy(loom_evaluator *ev)
{
    ev->vt->destroy(ev->dq);
    loom_schedule_free(ev->sc);
    loom_mock_simulator()->scratch_free(ev->scratch);
    free(ev);
}

/* service.graph. */
static inline const loom_stage_graph *mock_ev_graph(const loom_evaluator *ev)
{
    return ev->g;
}

static const loom_evaluator_service MOCK_EVALUATOR = {
    sizeof(loom_evaluator_service), 1, mock_ev_create, mock_ev_run,
    mock_ev_destroy, NULL, mock_ev_graph};

/* A stage-times graph of P ranks (at most 16) and M microbatches (at most
 * 16), one group each, with F = 1, B = 2 and one activation byte on every
 * rank and microbatch i scaled by scales[i]; NULL with *err set on an
 * error. The caller frees it with loom_graph_free. */
static inline loom_stage_graph *mock_fb_graph(int P, int M, const double *scales,
                                              loom_error *err)
{
    double f[16], b[16], act[16], scale[16];
    for (int i = 0; i < P && i < 16; i++) {
        f[i] = 1;
        b[i] = 2;
        act[i] = 1;
    }
    for (int i = 0; i < M && i < 16; i++)
        scale[i] = scales[i];
    loom_stage_times st = {0};
    st.ranks = P;
    st.microbatches = M;
    st.virtual_stages = 1;
    st.forward_ms = f;
    st.backward_ms = b;
    st.activation_bytes = act;
    st.microbatch_scale = scale;
    loom_stage_graph *g = NULL;
    return loom_graph_from_stage_times(&st, 0, &g, err) == LOOM_OK ? g : NULL;
}

#endif
