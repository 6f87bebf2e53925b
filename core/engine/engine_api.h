/*
 * engine_api.h - the core's planning internals: stage graphs, schedules,
 * the simulator (stage_graph.h), graph construction and the evaluator (not
 * installed).
 *
 * Ownership: every *_new / *_from_* returns memory the caller frees with
 * the matching *_free. Units: milliseconds, bytes.
 */
#ifndef LOOM_ENGINE_API_H
#define LOOM_ENGINE_API_H

#include <stdio.h>
#include "ctx.h"
#include "services.h"
#include <loom/sys/plan.h>
#include <loom/sys/planner.h>
#include "shape.h"
#include "stage_graph.h"

/* ---- graph construction (graph_build.c; stage-times graphs come from
 * the graph kit's loom_graph_from_stage_times) ----------------------------- */

struct loom_pipeline;
/* Partition -> stage graph, costing every stage with the pipeline's cost
 * model for the iteration's samples. */
int loom_graph_build(loom_ctx *cost_ctx, const loom_problem *problem,
                     const loom_iteration *it, const loom_partition *part,
                     loom_stage_graph **out, loom_error *err);

/* The counts of the graph loom_graph_build would build for `part`
 * (n_stages, n_edges, n_pairs, n_layer_entries, n_ranks, n_groups,
 * n_microbatches) in *out, every other member zero and every array NULL,
 * without asking the cost model: what a ranker that declares
 * LOOM_RANKER_READS_COUNTS is given in place of the graph. */
int loom_graph_outline(const loom_problem *problem, const loom_iteration *it,
                       const loom_partition *part, loom_stage_graph *out, loom_error *err);

/* LOOM_OK when the graph builder can build `part` for the model problem:
 * its flows, positions and spans well formed, every layer placed and run
 * once per microbatch, samples in range, and under per-module layouts the
 * modules of one GPU set per rank; else LOOM_EINVAL naming what is wrong
 * (partition_check.c). */
int loom_partition_check(const loom_problem *problem, const loom_partition *part,
                         loom_error *err);

/* ---- planning one iteration (engine.c) ---------------------------------- */

struct loom_pipeline;
/* Runs the pipeline for one iteration (or a stage-times problem, when
 * it == NULL) and fills *plan. Errors of a plugin name its id. */
int loom_engine_plan(struct loom_pipeline *pl, const loom_problem *problem,
                     const loom_iteration *it, loom_plan *plan,
                     loom_error *err);

/* ---- evaluator (evaluator.c) -------------------------------------------- */

/* The evaluator as a service table; loom_engine_plan installs it in the
 * pipeline it plans with (plugins reach it through host->evaluator). */
extern const loom_evaluator_service loom_evaluator_service_v1;

int loom_evaluator_create(loom_ctx *ctx, const loom_stage_graph *graph,
                          loom_evaluator **out, loom_error *err);
/* Runs interleaver + memory tuner + simulator. The schedule and the graph
 * with the chosen policies stay readable through loom_evaluator_schedule /
 * loom_evaluator_graph until the next run. */
int loom_evaluator_run(loom_evaluator *ev, const float *priorities,
                       loom_metrics *out, loom_error *err);
const loom_schedule *loom_evaluator_schedule(const loom_evaluator *ev);
const loom_stage_graph *loom_evaluator_graph(const loom_evaluator *ev);
void loom_evaluator_destroy(loom_evaluator *ev);
/* With `on`, every run digests the graph the interleaver and the memory
 * tuner are given before and after their call and fails with LOOM_EPLUGIN
 * naming the plugin when it changed (O(graph) per run: the engine's own
 * evaluations only, not a search's). */
void loom_evaluator_check_writes(loom_evaluator *ev, int on);
/* The evaluator a plugin last released through the service's destroy
 * during the engine's ranking (it keeps one whose last run succeeded
 * without a tuner deadline), when
 * it is bound to `graph`, its last run had `priorities` and its
 * interleaver view is as built; the caller owns it. Else NULL, and the
 * kept evaluator is destroyed. With graph NULL it only empties the slot.
 * The schedule and graph of that run stay readable. */
loom_evaluator *loom_evaluator_take_kept(struct loom_pipeline *pl,
                                         const loom_stage_graph *graph,
                                         const float *priorities);
/* Writes the last run's memory policies into `base`, the graph `ev` was
 * created on, which the caller owns and may now change: the durations,
 * memory deltas, policies and recompute sum of the tuned overlay (nothing
 * without a memory tuner). `ev` must not run again after it. */
void loom_evaluator_write_policies(const loom_evaluator *ev, loom_stage_graph *base);
/* Gives the pipeline's memory tuner a deadline (loom.evaluator's
 * set_deadline: the tuner step's ctx->deadline_ms, < 0 for none). */
void loom_evaluator_set_deadline(loom_evaluator *ev, double deadline_ms);

/* The makespan lower bound of any order of g (lower_bound.c): the larger
 * of the busiest rank's work and the longest dependency chain (durations
 * plus transfer times); -1 when out of memory. A rank that runs fills in
 * `sched` (NULL: none) overlaps compute with exposed TP communication,
 * so its work counts the larger of its stages' compute and their
 * communication (loom_stage_graph.comm_ms) instead of their sum. */
double loom_graph_lower_bound_ms(const loom_stage_graph *g, const loom_schedule *sched);

/* The partition scorer as a service table (partition_eval.c);
 * loom_engine_plan installs it in the pipeline it plans with (plugins
 * reach it by name, LOOM_SERVICE_PARTITION_EVAL). */
extern const loom_partition_eval_service loom_partition_eval_service_v1;

/* Candidate set storage (candidates.c). */
loom_candidates *loom_candidates_new(const loom_problem *problem,
                                     const loom_iteration *it);
void loom_candidates_free(loom_candidates *set);
loom_partition *loom_partition_clone(const loom_partition *p);
void loom_partition_free(loom_partition *p);

#endif
