/*
 * stage_graph.h - the stage graph's storage and the simulator that
 * replays per-rank orders over it (not installed).
 *
 * Ownership: every *_new / *_alloc / *_clone returns memory the caller
 * frees with the matching *_free. Units: milliseconds, bytes.
 */
#ifndef LOOM_STAGE_GRAPH_H
#define LOOM_STAGE_GRAPH_H

#include <stdio.h>
#include <loom/loom.h>
#include "base.h"

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

/* A digest of the graph's read-only content (shape, durations, memory,
 * edges, policy options and choices, static bytes, cap), to detect a
 * plugin writing into a graph it was given as const (graph_digest.c). */
uint64_t loom_graph_digest(const loom_stage_graph *g);

/* Convenience: a fresh scratch for one call. */
int loom_simulate(const loom_stage_graph *g, const loom_schedule *s,
                  loom_metrics *m, loom_error *err);

/* "F3.1@r2" style name of a stage for messages (buf >= 48 bytes). */
const char *loom_stage_name(const loom_stage_graph *g, int32_t stage,
                            char *buf, size_t size);

#endif
