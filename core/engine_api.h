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

/* Allocates a graph with room for the given counts; every array zeroed,
 * pair_weight set to -1, memory_cap_bytes 0. */
loom_stage_graph *loom_graph_alloc(int32_t n_stages, int32_t n_edges,
                                   int32_t n_ranks, int32_t n_groups,
                                   int32_t n_pairs);
void loom_graph_free(loom_stage_graph *g);

/* Deep copy (the evaluator works on a copy whose durations it rewrites). */
loom_stage_graph *loom_graph_clone(const loom_stage_graph *g);

/* Sets every pair's durations and memory deltas from its chosen policy
 * (pair_policy and pair_options). */
void loom_graph_apply_policies(loom_stage_graph *g);

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

#endif
