/*
 * stage_graph.h - the simulator that replays per-rank orders over a stage
 * graph (not installed). The graph's storage and construction are the
 * graph kit's (<loom/kits/graph.h>, sdk/kits/graph), included here.
 *
 * Ownership: every *_new returns memory the caller frees with the
 * matching *_free. Units: milliseconds, bytes.
 */
#ifndef LOOM_STAGE_GRAPH_H
#define LOOM_STAGE_GRAPH_H

#include <stdio.h>
#include <loom/loom.h>
#include <loom/kits/graph.h>
#include "base.h"

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

/* A digest of the graph struct's own fields and of what a policy choice
 * derives (duration_ms, mem_delta_bytes, layer_policy): enough for an
 * overlay whose other arrays are a digested graph's (graph_digest.c). */
uint64_t loom_graph_policy_digest(const loom_stage_graph *g);

/* Gives g a revision no graph of this process has had
 * (loom_stage_graph.revision), once its content is final: from then on
 * only its layer_policy and what a policy choice derives may change.
 * Thread-safe (graph_revision.c). */
void loom_graph_stamp(loom_stage_graph *g);

/* Convenience: a fresh scratch for one call. */
int loom_simulate(const loom_stage_graph *g, const loom_schedule *s,
                  loom_metrics *m, loom_error *err);

/* "F3.1@r2" style name of a stage for messages (buf >= 48 bytes). */
const char *loom_stage_name(const loom_stage_graph *g, int32_t stage,
                            char *buf, size_t size);

#endif
