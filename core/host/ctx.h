/*
 * ctx.h - the host layer's shared types: resolved params, the per-step
 * context handed to plugins, the host table (not installed).
 *
 * The seams between core parts:
 *   registry.c / loader.c / params.c   -> loom_registry, loom_plugin
 *   planner_manifest.c / pipeline.c    -> loom_planner_config, loom_pipeline
 *   host_api.c                         -> loom_host_table(), struct loom_ctx
 *   services.c                         -> loom_service_lookup()
 *   graph_build.c / simulator.c / evaluator.c / engine.c -> planning
 */
#ifndef LOOM_CTX_H
#define LOOM_CTX_H

#include <loom/loom.h>
#include "base.h"
#include <loom/sys/registry.h>

/* ---- the per-step context handed to plugins --------------------------- */

struct loom_engine;
struct loom_pipeline;

struct loom_ctx {
    char plugin_id[128];
    char label[64];                 /* "pipeline[2]" */
    const loom_param_value *params; /* n_params */
    int n_params;
    uint64_t seed;                  /* run seed mixed with the step index */
    double deadline_ms;             /* absolute loom_now_ms() deadline; < 0 none */
    const loom_problem *problem;    /* set while planning */
    struct loom_pipeline *pipeline; /* the pipeline this step belongs to */
    struct loom_engine *engine;     /* set while planning */
    int quiet;                      /* suppress info logs */
};

/* ---- host API and services -------------------------------------------- */

/* The host API table (static, one per process). */
const loom_host_api *loom_host_table(void);

/* Service lookup behind loom_host_api.service (services.c). */
const void *loom_service_lookup(const char *name, uint32_t min_version);

/* Progress hook behind loom_host_api.progress (engine.c). */
void loom_engine_progress(loom_ctx *ctx, double best_makespan_ms,
                          int64_t evaluations);

/* Set by a SIGINT handler; makes every ctx's expired() true. */
extern volatile int loom_interrupted;

/* When non-NULL, the engine stores here the index of the pipeline step
 * whose plugin code is about to run (-1 when core code runs), so a parent
 * process can name the plugin that crashed or hung an isolated child
 * (point it at shared memory before forking). */
extern volatile int32_t *loom_current_step;

/* Records that the plugin of step `i` runs now (cheap; no-op unless
 * loom_current_step is set). */
static inline void loom_mark_step(int32_t i)
{
    if (loom_current_step)
        *loom_current_step = i;
}

#endif
