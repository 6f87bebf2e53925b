/* partition_eval.c - the "loom.partition_eval" service: a partition
 * scored as the engine would plan it (graph build, then one evaluation
 * with first-in-first-out priorities), for partitioners that judge splits
 * by simulation. */
#include <stdlib.h>
#include "engine_api.h"
#include "pipeline.h"

/* 1 when the pipeline's interleaver asks for split backward stages. */
static int wants_split(const loom_pipeline *pl)
{
    const loom_step *inter = pl->interleaver >= 0 ? &pl->steps[pl->interleaver] : NULL;
    return inter && inter->vt.interleaver.wants_split_backward &&
           inter->vt.interleaver.wants_split_backward(inter->instance);
}

/* Builds part's graph for `it` and evaluates it once (see loom/host.h). */
static int partition_evaluate(loom_ctx *ctx, const loom_iteration *it, const loom_partition *part,
                              loom_metrics *out, loom_error *err)
{
    loom_pipeline *pl = ctx ? ctx->pipeline : NULL;
    if (!pl || !pl->problem || pl->cost_model < 0 || pl->interleaver < 0)
        return loom_set_error(err, LOOM_ENOTFOUND, "partition_eval: no plan is running");
    int rc = loom_metrics_check(out, "partition_eval", err);
    if (rc != LOOM_OK)
        return rc;
    if (!part)
        return loom_set_error(err, LOOM_EINVAL, "partition_eval: no partition given");
    loom_partition *copy = loom_partition_clone(part);
    if (!copy)
        return loom_set_error(err, LOOM_ENOMEM, "partition_eval: out of memory");
    if (wants_split(pl))
        copy->split_backward = 1;
    loom_stage_graph *g = NULL;
    loom_evaluator *ev = NULL;
    float *prio = NULL;
    int32_t caller = loom_marked_step(pl);
    rc = loom_graph_build(&pl->steps[pl->cost_model].ctx, pl->problem, it, copy, &g, err);
    loom_mark_step(pl, caller);
    if (rc == LOOM_OK) {
        loom_graph_stamp(g);
        prio = malloc((size_t)(g->n_groups > 0 ? g->n_groups : 1) * sizeof *prio);
        if (!prio)
            rc = loom_set_error(err, LOOM_ENOMEM, "partition_eval: out of memory");
        for (int32_t i = 0; prio && i < g->n_groups; i++)
            prio[i] = (float)(g->n_groups - i);
    }
    if (rc == LOOM_OK)
        rc = loom_evaluator_create(ctx, g, &ev, err);
    if (rc == LOOM_OK)
        rc = loom_evaluator_run(ev, prio, out, err);
    loom_mark_step(pl, caller);
    loom_evaluator_destroy(ev);
    free(prio);
    loom_graph_free(g);
    loom_partition_free(copy);
    return rc;
}

const loom_partition_eval_service loom_partition_eval_service_v1 = {
    sizeof(loom_partition_eval_service), 1, partition_evaluate,
};
