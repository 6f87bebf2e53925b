/*
 * engine_api.h - the core's planning internals: stage graphs, schedules,
 * the simulator, graph construction and the evaluator (not installed).
 *
 * Ownership: every *_new / *_from_* returns memory the caller frees with
 * the matching *_free. Units: milliseconds, bytes.
 */
#ifndef LOOM_ENGINE_API_H
#define LOOM_ENGINE_API_H

#include <stdio.h>
#include "internal.h"

/* ---- stage graph storage (graph.c) ------------------------------------- */

/* Allocates a graph with room for the given counts (n_entries: layer
 * entries carrying memory-policy options); every array zeroed,
 * pair_weight set to -1, memory_cap_bytes 0. */
loom_stage_graph *loom_graph_alloc(int32_t n_stages, int32_t n_edges,
                                   int32_t n_ranks, int32_t n_groups,
                                   int32_t n_pairs, int32_t n_entries);
void loom_graph_free(loom_stage_graph *g);

/* Deep copy (a finished plan owns one). */
loom_stage_graph *loom_graph_clone(const loom_stage_graph *g);

/* Sets every pair's stage durations and memory deltas to the sums of its
 * layer entries' options under their chosen policies (layer_policy). */
void loom_graph_apply_policies(loom_stage_graph *g);

/* Recomputation time per rank under the chosen policies: for every pair,
 * its entries' forward + backward time minus the same under policy NONE,
 * charged to the rank of the pair's stages. per_rank_ms has n_ranks
 * entries; every one is written. */
void loom_graph_recompute_ms(const loom_stage_graph *g, double *per_rank_ms);

/* Checks structural invariants: ids in range, edges acyclic, every pair
 * well formed. LOOM_EINVAL naming the first problem. */
int loom_graph_check(const loom_stage_graph *g, loom_error *err);

loom_schedule *loom_schedule_new(int32_t n_ranks, int32_t n_stages);
void loom_schedule_free(loom_schedule *s);

/* ---- simulator (simulator.c) -------------------------------------------- */

loom_sim_scratch *loom_sim_scratch_new(void);
void loom_sim_scratch_free(loom_sim_scratch *s);

/* Event-driven replay of `sched` over `g`: each rank runs its list in
 * order; a stage starts when its rank is free and every predecessor has
 * ended plus the edge's P2P time. Fills `m` (and its optional arrays when
 * non-NULL). Allocation-free once the scratch has seen a graph this big.
 * LOOM_EINVAL: a stage missing, duplicated or on the wrong rank.
 * LOOM_EDEADLOCK: the orders block; the message names the blocked stages. */
int loom_sim_run(loom_sim_scratch *scratch, const loom_stage_graph *g,
                 const loom_schedule *sched, loom_metrics *m, loom_error *err);

/* LOOM_OK when m can be filled; LOOM_EABI naming `who`, the struct_size
 * found and LOOM_METRICS_SIZE_V1 when it is too small (LOOM_EINVAL: NULL). */
int loom_metrics_check(const loom_metrics *m, const char *who, loom_error *err);

/* Convenience: a fresh scratch for one call. */
int loom_simulate(const loom_stage_graph *g, const loom_schedule *s,
                  loom_metrics *m, loom_error *err);

/* "F3.1@r2" style name of a stage for messages (buf >= 48 bytes). */
const char *loom_stage_name(const loom_stage_graph *g, int32_t stage,
                            char *buf, size_t size);

/* ---- graph construction (graph_stage_times.c, graph_build.c) ------------ */

/* Stage-times problem -> one flow of P*V positions, position s on rank
 * s % P; split_backward forces I + W stages (from backward_ms when only
 * that is given: I = W = B/2). */
int loom_graph_from_stage_times(const loom_stage_times *st, int split_backward,
                                loom_stage_graph **out, loom_error *err);

struct loom_pipeline;
/* Partition -> stage graph, costing every stage with the pipeline's cost
 * model for the iteration's samples. */
int loom_graph_build(loom_ctx *cost_ctx, const loom_problem *problem,
                     const loom_iteration *it, const loom_partition *part,
                     loom_stage_graph **out, loom_error *err);


/* ---- shapes and costs (shape.c, services.c) ----------------------------- */

/* The shape module `module` sees for the samples of `it` assigned to
 * microbatch `mb` by `sample_mb` (n_samples entries for this module; NULL:
 * even contiguous split into `microbatches`, or the samples' own
 * microbatch fields), divided into `subs` sub-microbatches. A sample's
 * tokens are loom_sample_tokens() (<loom/tokens.h>); image items are
 * sequences of tokens_per_item tokens, any other module sees one sequence
 * per sample. */
void loom_shape_for(const loom_problem *problem, int32_t module,
                    const loom_iteration *it, const int32_t *sample_mb,
                    int32_t microbatches, int32_t mb, int32_t subs,
                    loom_shape *out);

/* Microbatch of sample i when the partition gives none: the sample's own
 * field when >= 0, else the even contiguous split. */
int32_t loom_default_microbatch(const loom_iteration *it, int32_t i,
                                int32_t microbatches);

/* The pipeline's cost model, called through the cost step's ctx. */
int loom_cost_estimate(loom_ctx *cost_ctx, int32_t module, int32_t layer,
                       const loom_shape *shape, int32_t policy,
                       loom_layer_cost *out, loom_error *err);
int loom_cost_module_extra(loom_ctx *cost_ctx, int32_t module, int32_t tp,
                           int64_t *param_bytes, int64_t *state_bytes,
                           loom_error *err);
/* Transfer time of `bytes` over `link`: the cost model's p2p_ms when it
 * has one (an error names the plugin; a negative or non-finite time is
 * LOOM_EPLUGIN), else loom_p2p_link_ms() on the problem's cluster. */
int loom_cost_p2p_ms(loom_ctx *cost_ctx, const loom_p2p_link *link, double bytes,
                     double *ms, loom_error *err);

/* 1 when some module upstream of `module` (transitively) is trainable. */
int loom_upstream_trainable(const loom_model *model, int32_t module);

/* ---- planning one iteration (engine.c) ---------------------------------- */

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
} loom_plan;

struct loom_pipeline;
/* Runs the pipeline for one iteration (or a stage-times problem, when
 * it == NULL) and fills *plan. Errors of a plugin name its id. */
int loom_engine_plan(struct loom_pipeline *pl, const loom_problem *problem,
                     const loom_iteration *it, loom_plan *plan,
                     loom_error *err);
void loom_plan_clear(loom_plan *plan);

/* Best-makespan-against-time curve of the last search (for benchmarks). */
typedef struct loom_progress_point {
    double elapsed_ms;
    double best_makespan_ms;
    int64_t evaluations;
} loom_progress_point;
int32_t loom_engine_progress_curve(const loom_progress_point **points);

/* Optional live progress callback (CLI progress display). */
typedef void (*loom_progress_fn)(void *user, double elapsed_ms,
                                 double best_makespan_ms, int64_t evaluations);
void loom_engine_set_progress(loom_progress_fn fn, void *user);

/* ---- evaluator (evaluator.c) -------------------------------------------- */

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
/* Gives the pipeline's memory tuner a deadline (loom.evaluator's
 * set_deadline: the tuner step's ctx->deadline_ms, < 0 for none). */
void loom_evaluator_set_deadline(loom_evaluator *ev, double deadline_ms);

/* Candidate set storage (candidates.c). */
loom_candidates *loom_candidates_new(const loom_problem *problem,
                                     const loom_iteration *it);
void loom_candidates_free(loom_candidates *set);
loom_partition *loom_partition_clone(const loom_partition *p);
void loom_partition_free(loom_partition *p);

#endif
