/* evaluator.c - the scoring function of every search: one interleaver
 * instance, one memory-tuner instance and one simulator scratch bound to
 * one stage graph, reused for every priority vector a ranker tries. */
#include <stdlib.h>
#include <string.h>
#include "engine_api.h"
#include "pipeline.h"

struct loom_evaluator {
    loom_evaluator_head head;     /* first: the service that made it */
    loom_pipeline *pl;            /* borrowed: the pipeline it evaluates for */
    const loom_stage_graph *base; /* the candidate graph (policies as built) */
    loom_stage_graph *view;       /* what the interleaver sees (NULL: base) */
    loom_stage_graph *work;       /* copy with the tuner's policies applied */
    loom_step *inter, *mem;
    void *inter_inst, *mem_inst;
    loom_schedule *sched;
    uint8_t *policies;
    loom_sim_scratch *sim;
    const loom_stage_graph *last; /* graph the last run simulated */
    int32_t inter_index, mem_index, caller_index; /* pipeline step indices */
    int applied;                  /* work graph reflects its layer_policy */
    int check_writes;             /* digest the graphs around plugin calls */
    float *last_prio;             /* the priorities of the last run ... */
    int last_ok;                  /* ... when it succeeded */
    int last_deadline;            /* the tuner had a deadline in that run */
    uint64_t view_digest;         /* of view's own fields and arrays as
                                   * frugal_view left them (the others are
                                   * base's, digested by the engine) */
    loom_stage_graph *owned;      /* base when built from an outline; owned */
};

/* A graph that shares every array of `base` except the three a policy
 * choice rewrites (durations, memory deltas, chosen policies), which it
 * owns as copies. Cloning whole graphs per evaluator cost more than the
 * search's first evaluations on large models (page faults on megabytes
 * of policy options). Free with overlay_free(); base must outlive it. */
static loom_stage_graph *overlay_new(const loom_stage_graph *base)
{
    loom_stage_graph *o = calloc(1, sizeof *o); /* padding zeroed: digested */
    if (!o)
        return NULL;
    *o = *base;
    size_t S = (size_t)(base->n_stages ? base->n_stages : 1);
    size_t E = (size_t)(base->n_layer_entries ? base->n_layer_entries : 1);
    o->duration_ms = malloc(S * sizeof *o->duration_ms);
    o->mem_delta_bytes = malloc(S * sizeof *o->mem_delta_bytes);
    o->layer_policy = malloc(E);
    if (!o->duration_ms || !o->mem_delta_bytes || !o->layer_policy) {
        free(o->duration_ms);
        free(o->mem_delta_bytes);
        free(o->layer_policy);
        free(o);
        return NULL;
    }
    memcpy(o->duration_ms, base->duration_ms, (size_t)base->n_stages * sizeof(double));
    memcpy(o->mem_delta_bytes, base->mem_delta_bytes,
           (size_t)base->n_stages * sizeof(int64_t));
    memcpy(o->layer_policy, base->layer_policy, (size_t)base->n_layer_entries);
    return o;
}

/* Frees an overlay's own arrays (not the shared ones). */
static void overlay_free(loom_stage_graph *o)
{
    if (!o)
        return;
    free(o->duration_ms);
    free(o->mem_delta_bytes);
    free(o->layer_policy);
    free(o);
}

/* Gives every layer entry of `view` its most memory-frugal recomputation
 * policy (offload keeps what full keeps, so it is never more frugal),
 * then restores the durations of `base`: memory as if fully tuned, time
 * as built. */
static void frugal_view(loom_stage_graph *view, const loom_stage_graph *base)
{
    for (int32_t e = 0; e < view->n_layer_entries; e++) {
        const loom_policy_option *o = &view->layer_options[(size_t)e * LOOM_POLICY_COUNT];
        uint8_t best = 0;
        for (uint8_t p = 1; p < LOOM_POLICY_OFFLOAD; p++)
            if (o[p].activation_bytes < o[best].activation_bytes)
                best = p;
        view->layer_policy[e] = best;
    }
    loom_graph_apply_policies(view);
    memcpy(view->duration_ms, base->duration_ms, (size_t)base->n_stages * sizeof(double));
}

int loom_evaluator_create(loom_ctx *ctx, const loom_stage_graph *graph,
                          loom_evaluator **out, loom_error *err)
{
    loom_pipeline *pl = ctx ? ctx->pipeline : NULL;
    if (!pl || pl->interleaver < 0)
        return loom_set_error(err, LOOM_EINVAL, "evaluator: the pipeline has no interleaver");
    loom_evaluator *ev = calloc(1, sizeof *ev);
    if (!ev)
        return loom_set_error(err, LOOM_ENOMEM, "evaluator: out of memory");
    const loom_host_api *host = loom_host_table();
    ev->head.service = &loom_evaluator_service_v1;
    ev->pl = pl;
    ev->base = graph;
    ev->last = graph;
    ev->inter = &pl->steps[pl->interleaver];
    ev->inter_index = pl->interleaver;
    ev->mem_index = pl->memory_tuner;
    ev->caller_index = -1; /* the step whose plugin called us (usually the ranker) */
    for (int i = 0; i < pl->n_steps; i++)
        if (&pl->steps[i].ctx == ctx)
            ev->caller_index = i;
    ev->sched = loom_schedule_new(graph->n_ranks, graph->n_stages);
    ev->sim = loom_sim_scratch_new();
    ev->last_prio = malloc((size_t)(graph->n_groups > 0 ? graph->n_groups : 1) * sizeof(float));
    if (!ev->sched || !ev->sim || !ev->last_prio) {
        loom_evaluator_destroy(ev);
        return loom_set_error(err, LOOM_ENOMEM, "evaluator: out of memory");
    }
    loom_mark_step(ev->pl, ev->inter_index);
    int rc = ev->inter->vt.interleaver.create(host, &ev->inter->ctx, ev->inter->plugin->plugin_state,
                                              &ev->inter_inst, err);
    loom_mark_step(ev->pl, ev->caller_index);
    if (rc != LOOM_OK) {
        rc = loom_plugin_fail(err, rc, ev->inter->ctx.plugin_id);
        ev->inter = NULL;
        loom_evaluator_destroy(ev);
        return rc;
    }
    if (pl->memory_tuner >= 0) {
        ev->mem = &pl->steps[pl->memory_tuner];
        ev->work = overlay_new(graph);
        ev->policies = malloc((size_t)(graph->n_layer_entries ? graph->n_layer_entries : 1));
        if (!ev->work || !ev->policies) {
            ev->mem = NULL;
            loom_evaluator_destroy(ev);
            return loom_set_error(err, LOOM_ENOMEM, "evaluator: out of memory");
        }
        loom_mark_step(ev->pl, ev->mem_index);
        rc = ev->mem->vt.memory_tuner.create(host, &ev->mem->ctx, ev->mem->plugin->plugin_state,
                                             &ev->mem_inst, err);
        loom_mark_step(ev->pl, ev->caller_index);
        if (rc != LOOM_OK) {
            rc = loom_plugin_fail(err, rc, ev->mem->ctx.plugin_id);
            ev->mem = NULL;
            loom_evaluator_destroy(ev);
            return rc;
        }
    }
    if (ev->mem && ev->mem->vt.memory_tuner.interleave_view &&
        ev->mem->vt.memory_tuner.interleave_view(ev->mem_inst) == LOOM_VIEW_FRUGAL &&
        graph->memory_cap_bytes > 0) {
        ev->view = overlay_new(graph);
        if (!ev->view) {
            loom_evaluator_destroy(ev);
            return loom_set_error(err, LOOM_ENOMEM, "evaluator: out of memory");
        }
        frugal_view(ev->view, graph);
        ev->view_digest = loom_graph_policy_digest(ev->view);
    }
    *out = ev;
    return LOOM_OK;
}

int loom_evaluator_run(loom_evaluator *ev, const float *priorities,
                       loom_metrics *out, loom_error *err)
{
    ev->last_ok = 0;
    int rc = loom_metrics_check(out, "evaluator", err);
    if (rc != LOOM_OK)
        return rc;
    const loom_stage_graph *g = ev->base;
    ev->sched->n_ranks = g->n_ranks;
    ev->sched->n_stages = g->n_stages;
    loom_mark_step(ev->pl, ev->inter_index);
    int32_t *rank_off = ev->sched->rank_off, *order = ev->sched->order;
    int32_t *fill_hosts = ev->sched->fill_hosts;
    const loom_stage_graph *seen = ev->view ? ev->view : g;
    uint64_t before = ev->check_writes ? loom_graph_digest(seen) : 0;
    ev->sched->lower_bound_ms = 0;
    memset(fill_hosts, 0, (size_t)(g->n_stages ? g->n_stages : 1) * sizeof(int32_t));
    rc = ev->inter->vt.interleaver.interleave(ev->inter_inst, seen, priorities, ev->sched, err);
    if (ev->check_writes && loom_graph_digest(seen) != before)
        rc = loom_set_error(err, LOOM_EPLUGIN, "wrote into the stage graph it was given "
                            "read-only");
    if (ev->sched->rank_off != rank_off || ev->sched->order != order ||
        ev->sched->fill_hosts != fill_hosts || ev->sched->n_ranks != g->n_ranks ||
        ev->sched->n_stages != g->n_stages) {
        ev->sched->rank_off = rank_off; /* the host's, freed by the host */
        ev->sched->order = order;
        ev->sched->fill_hosts = fill_hosts;
        ev->sched->n_ranks = g->n_ranks;
        ev->sched->n_stages = g->n_stages;
        rc = loom_set_error(err, LOOM_EPLUGIN, "replaced the schedule's arrays or sizes, which "
                            "the host owns");
    }
    if (rc != LOOM_OK)
        return loom_plugin_fail(err, rc, ev->inter->ctx.plugin_id);
    if (ev->mem) {
        memcpy(ev->policies, g->layer_policy, (size_t)g->n_layer_entries);
        loom_mark_step(ev->pl, ev->mem_index);
        before = ev->check_writes ? loom_graph_digest(g) : 0;
        rc = ev->mem->vt.memory_tuner.tune(ev->mem_inst, g, ev->sched, ev->policies, err);
        if (ev->check_writes && loom_graph_digest(g) != before)
            rc = loom_set_error(err, LOOM_EPLUGIN, "wrote into the stage graph it was given "
                                "read-only");
        if (rc != LOOM_OK)
            return loom_plugin_fail(err, rc, ev->mem->ctx.plugin_id);
        for (int32_t e = 0; e < g->n_layer_entries; e++)
            if (ev->policies[e] >= LOOM_POLICY_COUNT)
                return loom_set_error(err, LOOM_EPLUGIN,
                                      "plugin %s: chose policy %d for layer entry %d, expected 0..%d",
                                      ev->mem->ctx.plugin_id, ev->policies[e], e,
                                      LOOM_POLICY_COUNT - 1);
        /* re-derive durations only when the choice changed since last run */
        if (!ev->applied ||
            memcmp(ev->work->layer_policy, ev->policies, (size_t)g->n_layer_entries)) {
            memcpy(ev->work->layer_policy, ev->policies, (size_t)g->n_layer_entries);
            loom_graph_apply_policies(ev->work);
            ev->applied = 1;
        }
        g = ev->work;
    }
    /* the interleaver's bound holds for the graph it saw only */
    if (ev->sched->lower_bound_ms != 0 && g != seen &&
        (memcmp(g->duration_ms, seen->duration_ms, (size_t)g->n_stages * sizeof(double)) ||
         memcmp(g->mem_delta_bytes, seen->mem_delta_bytes,
                (size_t)g->n_stages * sizeof(int64_t))))
        ev->sched->lower_bound_ms = 0;
    ev->last = g;
    loom_mark_step(ev->pl, -1);
    rc = loom_sim_run(ev->sim, g, ev->sched, out, err);
    loom_mark_step(ev->pl, ev->caller_index);
    if (rc == LOOM_EINVAL) /* the order is not a schedule of this graph */
        rc = LOOM_EPLUGIN;
    if (rc != LOOM_OK) {
        loom_error_prefix_plugin(err, ev->inter->ctx.plugin_id);
        err->code = rc;
        return rc;
    }
    if (ev->base->n_groups > 0)
        memcpy(ev->last_prio, priorities, (size_t)ev->base->n_groups * sizeof(float));
    ev->last_deadline = ev->mem && ev->mem->ctx.deadline_ms >= 0;
    ev->last_ok = 1;
    return LOOM_OK;
}

const loom_schedule *loom_evaluator_schedule(const loom_evaluator *ev)
{
    return ev->sched;
}

const loom_stage_graph *loom_evaluator_graph(const loom_evaluator *ev)
{
    return ev->last;
}

void loom_evaluator_write_policies(const loom_evaluator *ev, loom_stage_graph *base)
{
    const loom_stage_graph *g = ev->last;
    if (g == base)
        return;
    /* the overlay owns these three arrays (overlay_new) and the sum that
     * loom_graph_apply_policies derives from them */
    memcpy(base->duration_ms, g->duration_ms, (size_t)g->n_stages * sizeof(double));
    memcpy(base->mem_delta_bytes, g->mem_delta_bytes, (size_t)g->n_stages * sizeof(int64_t));
    memcpy(base->layer_policy, g->layer_policy, (size_t)g->n_layer_entries);
    base->recompute_flops = g->recompute_flops;
}

void loom_evaluator_check_writes(loom_evaluator *ev, int on)
{
    ev->check_writes = on != 0;
}

void loom_evaluator_set_deadline(loom_evaluator *ev, double deadline_ms)
{
    if (ev && ev->mem)
        ev->mem->ctx.deadline_ms = deadline_ms >= 0 ? deadline_ms : -1;
}

void loom_evaluator_destroy(loom_evaluator *ev)
{
    if (!ev)
        return;
    if (ev->inter && ev->inter_inst)
        ev->inter->vt.interleaver.destroy(ev->inter_inst);
    if (ev->mem && ev->mem_inst)
        ev->mem->vt.memory_tuner.destroy(ev->mem_inst);
    overlay_free(ev->work);
    overlay_free(ev->view);
    loom_graph_free(ev->owned);
    free(ev->policies);
    free(ev->last_prio);
    loom_schedule_free(ev->sched);
    loom_sim_scratch_free(ev->sim);
    free(ev);
}

/* The candidate whose outline `graph` is, or -1 when it is none of the
 * pipeline's outlines. */
static int32_t outline_index(const loom_pipeline *pl, const loom_stage_graph *graph)
{
    if (!pl || !pl->outlines || !graph)
        return -1;
    uintptr_t at = (uintptr_t)graph, first = (uintptr_t)pl->outlines;
    if (at < first || at >= first + (uintptr_t)pl->n_outlines * sizeof *graph ||
        (at - first) % sizeof *graph != 0)
        return -1;
    return (int32_t)((at - first) / sizeof *graph);
}

/* An evaluator on `graph`; on an outline (LOOM_RANKER_READS_COUNTS) it
 * builds the candidate's full graph, which the evaluator then owns.
 * Called under the pipeline's create_lock. */
static int evaluator_create_locked(loom_pipeline *pl, loom_ctx *ctx,
                                   const loom_stage_graph *graph, loom_evaluator **out,
                                   loom_error *err)
{
    int32_t c = outline_index(pl, graph);
    if (c < 0)
        return loom_evaluator_create(ctx, graph, out, err);
    loom_stage_graph *full = NULL;
    int rc = pl->outline_build(pl->outline_user, c, &full, err);
    if (rc == LOOM_OK &&
        (full->n_stages != graph->n_stages || full->n_edges != graph->n_edges ||
         full->n_pairs != graph->n_pairs || full->n_layer_entries != graph->n_layer_entries ||
         full->n_ranks != graph->n_ranks || full->n_groups != graph->n_groups ||
         full->n_microbatches != graph->n_microbatches))
        rc = loom_set_error(err, LOOM_EINVAL, "graph builder: candidate %d's graph has %d "
                            "stages and %d groups, its outline %d and %d", c, full->n_stages,
                            full->n_groups, graph->n_stages, graph->n_groups);
    if (rc == LOOM_OK)
        rc = loom_evaluator_create(ctx, full, out, err);
    if (rc != LOOM_OK) {
        loom_graph_free(full);
        return rc;
    }
    (*out)->owned = full;
    return LOOM_OK;
}

/* The service's create (evaluator_create_locked). One create runs at a
 * time (the pipeline's create_lock), so a ranker that
 * creates evaluators on several threads never has two graphs built, or
 * two plugin instances created, at once. */
static int evaluator_service_create(loom_ctx *ctx, const loom_stage_graph *graph,
                                    loom_evaluator **out, loom_error *err)
{
    loom_pipeline *pl = ctx ? ctx->pipeline : NULL;
    if (!pl)
        return loom_evaluator_create(ctx, graph, out, err);
    pthread_mutex_lock(&pl->create_lock);
    int rc = evaluator_create_locked(pl, ctx, graph, out, err);
    pthread_mutex_unlock(&pl->create_lock);
    return rc;
}

/* The service's destroy: during the engine's ranking, an evaluator whose
 * last run succeeded without a tuner deadline replaces the pipeline's
 * kept one (which is destroyed), so that the engine can take that run as
 * the plan's when the ranker chose its priorities; any other is
 * destroyed, and so is one created on an outline: its graph is not the
 * candidate's the engine takes a kept run for (loom_evaluator_take_kept),
 * so keeping it would only hold a second graph while the ranker builds
 * the next. */
static void evaluator_release(loom_evaluator *ev)
{
    if (ev && ev->last_ok && !ev->last_deadline && !ev->owned && ev->pl &&
        ev->pl->keep_released) {
        pthread_mutex_lock(&ev->pl->kept_lock);
        loom_evaluator *old = ev->pl->kept_evaluator;
        ev->pl->kept_evaluator = ev;
        pthread_mutex_unlock(&ev->pl->kept_lock);
        ev = old;
    }
    loom_evaluator_destroy(ev);
}

loom_evaluator *loom_evaluator_take_kept(loom_pipeline *pl, const loom_stage_graph *graph,
                                         const float *priorities)
{
    pthread_mutex_lock(&pl->kept_lock);
    loom_evaluator *ev = pl->kept_evaluator;
    pl->kept_evaluator = NULL;
    pthread_mutex_unlock(&pl->kept_lock);
    if (ev && (ev->base != graph || !ev->last_ok ||
               (graph->n_groups > 0 &&
                memcmp(ev->last_prio, priorities, (size_t)graph->n_groups * sizeof(float))) ||
               (ev->view && loom_graph_policy_digest(ev->view) != ev->view_digest))) {
        loom_evaluator_destroy(ev);
        ev = NULL;
    }
    return ev;
}

/* The service's graph(): the candidate graph the evaluator was created
 * on, or built from its outline. */
static const loom_stage_graph *evaluator_service_graph(const loom_evaluator *ev)
{
    return ev ? ev->base : NULL;
}

const loom_evaluator_service loom_evaluator_service_v1 = {
    sizeof(loom_evaluator_service), 1, evaluator_service_create, loom_evaluator_run,
    evaluator_release, loom_evaluator_set_deadline, evaluator_service_graph,
};
