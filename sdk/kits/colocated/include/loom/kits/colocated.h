/*
 * <loom/kits/colocated.h> - the colocated-order kit (CMake target
 * loom_kit_colocated, Loom::kit_colocated when installed): the
 * coarse-grained bubble schedule of Optimus (Optimus §4.2 InitSchedule,
 * "encoder-first"), shared by the encoder-first and optimus-bubble
 * interleavers.
 *
 * The graph's flows are split into one backbone ("main") flow and encoder
 * flows: with a model problem, flows of encoder modules are encoder flows;
 * otherwise a flow another flow consumes is one. The backbone must be
 * Megatron-shaped: P x V positions, position s on the (s mod P)-th of its
 * ranks. On every rank the coarse order is:
 *   1. every encoder forward stage on that rank (units in priority order,
 *      each unit's positions in order) - the PRE bubble;
 *   2. the backbone in Megatron (interleaved) 1F1B order;
 *   3. every encoder backward stage (units in priority order, positions
 *      from last to first, I then W) - the POST bubble.
 * Units are (microbatch, sub-microbatch) pairs ordered by their group's
 * priority (higher first), then microbatch, then sub-microbatch.
 *
 * Backbone warm-up (forwards before the first backward on pipeline rank
 * i): V = 1: min(P - i - 1, U); V > 1: Megatron min(2(P - i - 1) + (V-1)P,
 * UV), or the deferred rule min((P - i - 1) + (V-1)P, UV) of the Optimus
 * digest §3.6, which keeps the makespan and starts later microbatches
 * later, leaving the warm-up -> steady transition to encoder work.
 *
 * Ownership: a loom_co is owned by the interleaver instance that holds it
 * (loom_co_free); the graph and priorities are read-only; the schedule is
 * host-owned.
 */
#ifndef LOOM_KITS_COLOCATED_H
#define LOOM_KITS_COLOCATED_H

#include <stddef.h>
#include <loom/loom.h>

enum loom_co_warmup { LOOM_CO_WARMUP_MEGATRON = 0, LOOM_CO_WARMUP_DEFERRED = 1 };

/* One (flow, microbatch, sub-microbatch) unit. */
typedef struct loom_co_unit {
    int32_t flow, mb, sub;
    float prio;
} loom_co_unit;

/* Scratch and the classification of one graph. */
typedef struct loom_co {
    const loom_host_api *host;
    int32_t cap_is_encoder, cap_flow_pos, cap_mb_base, cap_mb_subs;
    int32_t cap_lookup, cap_pos_rank, cap_units, cap_order, cap_main_units;
    int32_t cap_rank_index;
    int32_t n_flows, main_flow, max_pos, n_units, M;
    uint8_t *is_encoder;      /* per flow */
    int32_t *flow_pos;        /* per flow: positions */
    int32_t *mb_base;         /* [flow * M + mb]: unit id of sub 0 */
    int32_t *mb_subs;         /* [flow * M + mb] */
    int32_t *lookup;          /* [(unit * max_pos + pos) * 2 + back] -> stage */
    int32_t *pos_rank;        /* [flow * max_pos + pos] -> rank */
    loom_co_unit *units;      /* all units, id order */
    int32_t *order;           /* unit ids sorted by priority */
    int32_t *main_units;      /* main flow's unit ids in order */
    int32_t n_main_units;
    int32_t P, V;             /* backbone ranks and chunks */
    int32_t *rank_index;      /* per rank: pipeline index in the backbone, -1 */
} loom_co;

/* Scheduling efficiency (Optimus Table 7): the share of the encoder's
 * time enc_ms that does not lengthen the iteration, (enc + llm - mllm) /
 * enc clamped to [0, 1]; llm_ms is the backbone alone, mllm_ms with the
 * encoder scheduled. 1 when enc_ms <= 0. */
double loom_co_efficiency(double enc_ms, double llm_ms, double mllm_ms);

/* Releases every array of co (allocated through co->host) and zeroes it;
 * a zeroed co, or NULL, is left alone. */
void loom_co_free(loom_co *co);

/* Stage id of (unit, position, back) after loom_co_prepare: -1 when
 * absent. Inline: the bubble filler calls it in its inner loops. */
static inline int32_t loom_co_stage(const loom_co *co, int32_t unit, int32_t pos,
                                    int back)
{
    return co->lookup[((size_t)unit * co->max_pos + pos) * 2 + (back != 0)];
}

/* Classifies the flows of g and indexes its stages into co, whose arrays
 * it grows through co->host (set co->host on a zeroed loom_co first; the
 * caller releases them with loom_co_free). `problem` may be NULL (then
 * consumed flows are encoder flows); `priorities` (one per group) may be
 * NULL (then lower groups first). LOOM_EINVAL naming the shape for a graph
 * that is not one backbone flow plus encoder flows in Megatron order,
 * LOOM_ENOMEM. */
int loom_co_prepare(loom_co *co, const loom_stage_graph *g,
                    const loom_problem *problem, const float *priorities,
                    loom_error *err);

/* Writes the coarse order of every rank of g into out (host-owned, room
 * for every stage) after loom_co_prepare (see the file comment). warmup
 * is a loom_co_warmup. LOOM_EINVAL when not every stage was placed. */
int loom_co_coarse(const loom_co *co, const loom_stage_graph *g, int warmup,
                   loom_schedule *out, loom_error *err);

#endif
