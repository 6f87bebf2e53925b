/*
 * <loom/kits/graph.h> - the graph kit (CMake target loom_kit_graph,
 * Loom::kit_graph when installed): storage and construction of the stage
 * graph and the schedule (<loom/graph.h>) over the SDK types alone. The
 * core builds its graphs with it; plugins and their unit tests use it to
 * make graphs by hand: from a stage-times problem, or stage by stage with
 * the builder below.
 *
 * Ownership: every *_new / *_alloc / *_clone / *_finish / *_from_* hands
 * the caller memory it frees with the matching *_free (a graph with
 * loom_graph_free, a schedule with loom_schedule_free). Units:
 * milliseconds, bytes.
 */
#ifndef LOOM_KITS_GRAPH_H
#define LOOM_KITS_GRAPH_H

#include <loom/loom.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- storage (graph.c) ------------------------------------------------- */

/* Allocates a graph with room for the given counts (n_entries: layer
 * entries carrying memory-policy options); every array zeroed,
 * pair_weight set to -1, group_pred NULL, memory_cap_bytes 0. NULL when
 * out of memory. */
loom_stage_graph *loom_graph_alloc(int32_t n_stages, int32_t n_edges,
                                   int32_t n_ranks, int32_t n_groups,
                                   int32_t n_pairs, int32_t n_entries);

/* Frees a graph from this kit (NULL is ignored). */
void loom_graph_free(loom_stage_graph *g);

/* Deep copy (a finished plan owns one); NULL when out of memory. */
loom_stage_graph *loom_graph_clone(const loom_stage_graph *g);

/* Allocates g's iteration-tail arrays (zeroed, n_ranks each) and its
 * layer_recompute_flops (n_layer_entries * LOOM_POLICY_COUNT), which
 * loom_graph_free then frees. LOOM_ENOMEM leaves g as it was. */
int loom_graph_alloc_tail(loom_stage_graph *g);

/* Sets every pair's stage durations and memory deltas to the sums of its
 * layer entries' options under their chosen policies (layer_policy). */
void loom_graph_apply_policies(loom_stage_graph *g);

/* Recomputation time per rank under the chosen policies: for every pair,
 * its entries' forward + backward time minus the same under policy NONE,
 * charged to the rank of the pair's stages. per_rank_ms has n_ranks
 * entries; every one is written. */
void loom_graph_recompute_ms(const loom_stage_graph *g, double *per_rank_ms);

/* Checks structural invariants: at least one rank, every stage's rank,
 * group and predecessors in range, no stage its own predecessor, no
 * negative duration. LOOM_EINVAL naming the first problem. */
int loom_graph_check(const loom_stage_graph *g, loom_error *err);

/* Checks that the predecessor edges form no cycle (call on a graph that
 * passed loom_graph_check). LOOM_EINVAL naming a stage on a cycle,
 * LOOM_ENOMEM. */
int loom_graph_check_acyclic(const loom_stage_graph *g, loom_error *err);

/* A schedule with room for n_stages entries over n_ranks ranks, offsets
 * and order zeroed; NULL when out of memory. */
loom_schedule *loom_schedule_new(int32_t n_ranks, int32_t n_stages);

/* Frees a schedule from loom_schedule_new (NULL is ignored). */
void loom_schedule_free(loom_schedule *s);

/* ---- stage-times graphs (graph_stage_times.c) -------------------------- */

/* Stage-times problem -> one flow of P*V positions, position s on rank
 * s % P (chunk s / P), every microbatch through every position forward
 * and back; microbatch mb is group mb and its stages are numbered
 * mb * P*V*(2 or 3) on: the P*V forwards, then the backwards from the
 * last position (I then W per position when split). split_backward
 * forces I + W stages (from backward_ms when only that is given:
 * I = W = B/2). One layer entry per pair. LOOM_EINVAL for counts < 1 or
 * a graph too large, LOOM_ENOMEM. */
int loom_graph_from_stage_times(const loom_stage_times *st, int split_backward,
                                loom_stage_graph **out, loom_error *err);

/* ---- hand-made graphs (graph_builder.c) -------------------------------- */

/* One stage for the builder. Fields left zero keep the zeros of
 * loom_graph_alloc. */
typedef struct loom_graph_stage {
    int32_t rank;
    int32_t kind;          /* enum loom_stage_kind */
    int32_t pair;          /* its stage pair (>= 0): F, B or I, W */
    int32_t group;         /* its group (>= 0) */
    int32_t module;
    int32_t flow;
    int32_t position;
    int32_t chunk;
    int32_t microbatch;
    int32_t sub;
    double duration_ms;
    int64_t mem_delta_bytes;
    double flops;
} loom_graph_stage;

typedef struct loom_graph_builder loom_graph_builder;

/* A builder for a graph over n_ranks ranks; NULL when out of memory. */
loom_graph_builder *loom_graph_builder_new(int32_t n_ranks);

/* Frees the builder (NULL is ignored); a finished graph stays valid. */
void loom_graph_builder_free(loom_graph_builder *b);

/* Adds a stage; stages are numbered 0, 1, ... in the order added. Returns
 * its id, or -1 when out of memory (finish then fails). */
int32_t loom_graph_builder_add_stage(loom_graph_builder *b,
                                     const loom_graph_stage *stage);

/* Stage `to` waits for stage `from` to end plus p2p_ms. A stage's
 * predecessors keep the order their edges were added in; either stage
 * may be added later. LOOM_OK, or LOOM_ENOMEM (finish then fails). */
int loom_graph_builder_add_edge(loom_graph_builder *b, int32_t from,
                                int32_t to, double p2p_ms);

/* Declares group `group` as (flow, microbatch). A group left undeclared
 * takes the flow and microbatch of its first stage. Groups are
 * 0 .. the highest group declared or named by a stage. */
int loom_graph_builder_set_group(loom_graph_builder *b, int32_t group,
                                 int32_t flow, int32_t microbatch);

/* Group precedence: group `group`'s forward cannot start before group
 * `pred`'s (group_pred rows keep the order added; without any, the
 * graph's group_pred is NULL and every row empty). */
int loom_graph_builder_add_group_pred(loom_graph_builder *b, int32_t group,
                                      int32_t pred);

/* Appends a layer entry to pair `pair` with its LOOM_POLICY_COUNT options
 * (a pair's entries keep the order added; layer_policy starts at NONE).
 * Stage durations and memory deltas are the ones given to add_stage;
 * loom_graph_apply_policies on the finished graph recomputes them from
 * the entries. */
int loom_graph_builder_add_entry(loom_graph_builder *b, int32_t pair,
                                 const loom_policy_option *options);

/* Builds the graph: stage arrays, predecessor rows (pred_off / pred /
 * pred_p2p_ms), groups and their precedence rows, pairs (pair_forward,
 * pair_backward, pair_weight, -1 where a pair has none), layer entries;
 * n_microbatches is one more than the highest microbatch of a stage or a
 * group. static_bytes, memory_cap_bytes and the FLOP totals are zero for
 * the caller to set. LOOM_EINVAL naming the first problem (a bad kind, a
 * negative pair, an edge naming a missing stage, a pair without a forward
 * or with two of one kind, a W without its I, an entry of a missing pair,
 * anything loom_graph_check or loom_graph_check_acyclic reports),
 * LOOM_ENOMEM. The builder can be finished again or freed. */
int loom_graph_builder_finish(const loom_graph_builder *b,
                              loom_stage_graph **out, loom_error *err);

#ifdef __cplusplus
}
#endif
#endif
