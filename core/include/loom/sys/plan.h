/*
 * loom/sys/plan.h - a finished plan for one iteration, as the planning
 * engine returns it (loom_session_plan) and the writers of
 * <loom/sys/output.h> print it.
 *
 * Layer: engine (core/engine).
 * Ownership: a plan owns its partition, graph, schedule, metrics arrays
 * and priorities; loom_plan_clear frees them. The problem and iteration
 * are borrowed.
 */
#ifndef LOOM_SYS_PLAN_H
#define LOOM_SYS_PLAN_H

#include <loom/loom.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A finished plan for one iteration. Everything is owned by the plan. */
typedef struct loom_plan {
    const loom_problem *problem;     /* borrowed */
    const loom_iteration *iteration; /* borrowed; NULL for stage-times */
    loom_partition *partition;       /* chosen candidate (NULL: stage-times) */
    loom_stage_graph *graph;         /* with the chosen policies applied */
    loom_schedule *schedule;         /* per-rank order */
    loom_metrics metrics;            /* with every optional array set */
    float *priorities;               /* graph->n_groups */
    int32_t candidate, n_candidates;
    double plan_time_ms;             /* wall time of partition+search */
    int64_t evaluations;             /* evaluator runs the ranker spent */
    char label[64];
    /* Makespan lower bound: the larger of the graph's (busiest rank's
     * work, longest dependency chain) and the one the interleaver proved
     * (loom_schedule.lower_bound_ms); interleaver_bound_ms is the latter
     * alone, 0 when it proved none. */
    double lower_bound_ms;
    double interleaver_bound_ms;
    /* Appended: the workload the plan's iteration came from, one line
     * ("generated text (default for a text-only model)", "file x.jsonl");
     * borrowed from the session, NULL when unknown. */
    const char *workload;
} loom_plan;

/* Frees everything the plan owns and zeroes it. */
LOOM_EXPORT void loom_plan_clear(loom_plan *plan);

#ifdef __cplusplus
}
#endif

#endif
