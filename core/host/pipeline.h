/*
 * pipeline.h - a planner manifest resolved against the registry: one
 * loaded plugin, validated params, a host copy of the role vtable and a
 * created instance per step (internal, not installed).
 *
 * Ownership: the pipeline owns its steps, params and instances; plugins
 * and the registry are borrowed (close the pipeline before freeing the
 * registry).
 */
#ifndef LOOM_PIPELINE_H
#define LOOM_PIPELINE_H

#include <pthread.h>
#include <stdio.h>
#include "ctx.h"
#include <loom/sys/planner.h>

/* Role indices; the same order as loom_role_index(). */
enum loom_role_id {
    LOOM_ROLE_ID_COST_MODEL,
    LOOM_ROLE_ID_PARTITIONER,
    LOOM_ROLE_ID_RANKER,
    LOOM_ROLE_ID_INTERLEAVER,
    LOOM_ROLE_ID_MEMORY_TUNER,
    LOOM_ROLE_ID_COUNT
};

typedef struct loom_step {
    int role;             /* enum loom_role_id */
    loom_plugin *plugin;  /* registry-owned */
    loom_ctx ctx;         /* plugin_id, label "pipeline[i]", params, seed */
    union {
        loom_role_header header;
        loom_cost_model_vtable cost_model;
        loom_partitioner_vtable partitioner;
        loom_ranker_vtable ranker;
        loom_interleaver_vtable interleaver;
        loom_memory_tuner_vtable memory_tuner;
    } vt;                 /* host copy, zero-filled past the plugin's size */
    void *instance;       /* from vt.*.create, destroyed by loom_pipeline_close */
    loom_param_value *params; /* owned, n_params entries */
    int n_params;
} loom_step;

/* Best-makespan-against-time curve of a pipeline's last search, and an
 * optional live listener (the CLI's progress display). */
typedef struct loom_progress_log {
    pthread_mutex_t lock;
    loom_progress_point *points; /* owned, n of cap */
    int32_t n, cap;
    double t0_ms;
    loom_progress_fn fn;         /* may be NULL */
    void *user;
} loom_progress_log;

struct loom_pipeline {
    loom_step *steps;
    int n_steps;
    int cost_model, ranker, interleaver, memory_tuner; /* step index or -1 */
    int first_partitioner, n_partitioners;
    loom_registry *registry; /* borrowed */
    uint64_t seed;
    double budget_ms;
    int64_t max_evaluations; /* > 0: deterministic mode (the planner manifest's) */
    double memory_cap_bytes;
    /* >= 0: the engine keeps only this candidate of every iteration's set
     * (the run's choice, "choose": "run"); -1: the ranker chooses. */
    int32_t fixed_candidate;
    /* How many candidates the partitioners offered in the engine's last
     * plan, set as soon as they have run, so also when a later step fails
     * (0 when they did not finish). */
    int32_t offered;
    char *name;          /* owned */
    char *manifest_path; /* owned */

    /* The run this pipeline plans for; every step's ctx reaches it through
     * ctx->pipeline. */
    const loom_problem *problem;            /* borrowed; set by the session/engine */
    const loom_evaluator_service *evaluator; /* the engine's, set by loom_engine_plan */
    /* the engine's partition scorer (loom.partition_eval), set by loom_engine_plan */
    const loom_partition_eval_service *partition_eval;
    volatile int32_t *step_marker;          /* see loom_mark_step; NULL: none */
    volatile int32_t *last_step_marker;     /* the last step marked >= 0; NULL: none */
    loom_progress_log progress;             /* the last search's progress */
    /* While keep_released is set (the engine's ranking), the evaluator a
     * plugin released last whose last run succeeded (evaluator.c); owned,
     * taken or destroyed by the engine after the ranking
     * (loom_evaluator_take_kept). */
    pthread_mutex_t kept_lock;
    struct loom_evaluator *kept_evaluator;
    int keep_released;
    /* While the engine ranks with outlines (a ranker that declares
     * LOOM_RANKER_READS_COUNTS), the n_outlines outlines it handed the
     * ranker (borrowed) and how to build candidate c's full graph; an
     * evaluator created on an outline builds it (evaluator.c). NULL
     * otherwise. create_lock: one evaluator service create() at a time,
     * graph build and plugin instances included. */
    const loom_stage_graph *outlines;
    int32_t n_outlines;
    int (*outline_build)(void *user, int32_t candidate, loom_stage_graph **out,
                         loom_error *err);
    void *outline_user;
    pthread_mutex_t create_lock;
};

/* Records that the plugin of step `i` runs now (-1: core code), so an
 * isolating parent can name the plugin that crashed or hung its child.
 * Cheap; a no-op unless the pipeline has a step marker. */
static inline void loom_mark_step(const loom_pipeline *pl, int32_t i)
{
    if (pl && pl->last_step_marker && i >= 0)
        *pl->last_step_marker = i;
    if (pl && pl->step_marker)
        *pl->step_marker = i;
}

/* Marks step `i` for a service call (the cost model) made from the step
 * running now, which it returns; a call the core makes on its own behalf
 * leaves the last-step marker alone, so a crash in core code is blamed on
 * the last plugin whose own call ran, not on a cost model the evaluator
 * consulted afterwards (*saved_last keeps the marker for
 * loom_service_leave). */
static inline int32_t loom_service_enter(const loom_pipeline *pl, int32_t i, int32_t *saved_last)
{
    int32_t caller = pl && pl->step_marker ? *pl->step_marker : -1;
    *saved_last = pl && pl->last_step_marker ? *pl->last_step_marker : -1;
    if (pl && pl->last_step_marker && i >= 0)
        *pl->last_step_marker = i;
    if (pl && pl->step_marker)
        *pl->step_marker = i;
    return caller;
}

/* Ends a service call begun by loom_service_enter. */
static inline void loom_service_leave(const loom_pipeline *pl, int32_t caller, int32_t saved_last)
{
    if (pl && pl->step_marker)
        *pl->step_marker = caller;
    if (pl && pl->last_step_marker && caller < 0)
        *pl->last_step_marker = saved_last;
}

/* The step whose plugin runs now, or -1. */
static inline int32_t loom_marked_step(const loom_pipeline *pl)
{
    return pl && pl->step_marker ? *pl->step_marker : -1;
}

/* ---- search progress (progress_log.c) ----------------------------------- */

/* Starts a new curve at t = now (called when a plan starts). */
void loom_progress_log_reset(loom_progress_log *log);

/* Appends (elapsed, best, evaluations) and calls the listener; thread-safe
 * (a parallel ranker's workers report concurrently). */
void loom_progress_log_add(loom_progress_log *log, double best_makespan_ms,
                           int64_t evaluations);

/* Frees the curve (the listener is the caller's). */
void loom_progress_log_free(loom_progress_log *log);

/* ---- planner manifests and pipelines (the core's side) ---------------- */

/* Checks the step order: exactly one cost_model first, one or more
 * partitioners, exactly one ranker, exactly one interleaver, at most one
 * memory_tuner. LOOM_EINVAL naming `pipeline[i].role` and what was expected
 * there. */
int loom_planner_config_check(const loom_planner_config *cfg, loom_error *err);

/* "--use ROLE=NAME": replaces the use of the first step with that role
 * (dropping its params, which belonged to the previous plugin) or inserts a
 * new step in its legal position. Apply --use before --param. */
int loom_planner_config_use(loom_planner_config *cfg, const char *role_eq_name,
                            loom_error *err);

/* "--param ROLE.KEY=VALUE": sets a param of the first step with that role;
 * VALUE is parsed as JSON when it parses, else taken as a string. The value
 * is validated later against the plugin manifest (loom_pipeline_open). */
int loom_planner_config_param(loom_planner_config *cfg,
                              const char *role_key_eq_value, loom_error *err);

/* Adds cfg->plugin_dirs to reg, resolves every step (not found ->
 * LOOM_ENOTFOUND naming pipeline[i].use and listing the plugins of that
 * role), checks the plugin's role, validates params (before init), loads
 * the plugins, copies vtables and calls create() once per step. A failed
 * create() keeps LOOM_EINVAL / ENOTFOUND / EIO / ENOMEM (input-shaped) and
 * becomes LOOM_EPLUGIN otherwise; its message is prefixed "plugin <id>: ".
 * *out is owned by the caller (loom_pipeline_close). */
int loom_pipeline_open(loom_registry *reg, const loom_planner_config *cfg,
                       loom_pipeline **out, loom_error *err);

/* loom_pipeline_open with hooks (NULL: none). */
int loom_pipeline_open_ex(loom_registry *reg, const loom_planner_config *cfg,
                          const loom_pipeline_hooks *hooks, loom_pipeline **out,
                          loom_error *err);

/* Destroys every instance (last step first) and frees p (NULL allowed). */
void loom_pipeline_close(loom_pipeline *p);

/* Writes the resolved pipeline, one line per step: index, role, id,
 * version, binary path, params=values. */
void loom_pipeline_describe(const loom_pipeline *p, FILE *out);

/* Number of steps of an opened pipeline. */
int loom_pipeline_step_count(const loom_pipeline *p);


#endif
