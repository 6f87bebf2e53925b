/*
 * loom/memory_tuner.h - the memory_tuner role: a memory policy (enum
 * loom_mem_policy) for every layer of every stage pair, keeping each rank
 * under the graph's memory cap while adding as little time as possible.
 *
 * A pair's layer entries are graph->pair_layer_off[p] ..
 * pair_layer_off[p+1]-1; entry e's options are graph->layer_options[e *
 * LOOM_POLICY_COUNT + policy]. The host sums the chosen options into the
 * pair's stage durations and memory deltas, then simulates.
 *
 * Ownership: graph and schedule read-only; `policies` is host-owned with
 * graph->n_layer_entries entries (prefilled with the current choice).
 */
#ifndef LOOM_MEMORY_TUNER_H
#define LOOM_MEMORY_TUNER_H

#include <loom/plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 2 since Loom 0.4: LOOM_POLICY_COUNT grew to 4 (offload), so the stride
 * of layer_options changed; the host refuses a version 1 tuner. */
#define LOOM_MEMORY_TUNER_VERSION 2u

typedef struct loom_memory_tuner_vtable {
    loom_role_header header; /* { sizeof(this), LOOM_MEMORY_TUNER_VERSION } */
    int (*create)(const loom_host_api *host, loom_ctx *ctx, void *plugin_state,
                  void **self, loom_error *err); /* required */
    void (*destroy)(void *self);                  /* required */
    /* Required. Returns LOOM_EINFEASIBLE (naming the rank and the bytes
     * short) when no choice fits the cap. */
    int (*tune)(void *self, const loom_stage_graph *graph,
                const loom_schedule *schedule, uint8_t *policies,
                loom_error *err);
    /* Optional. Which memory the interleaver should budget with before
     * this tuner runs: LOOM_VIEW_AS_BUILT (NULL member: the graph's own
     * policies) or LOOM_VIEW_FRUGAL (every layer at its most memory-frugal
     * option, durations as built), so the order is not throttled by memory
     * the tuner will then recover by recomputation. */
    int (*interleave_view)(void *self);
} loom_memory_tuner_vtable;

enum loom_interleave_view {
    LOOM_VIEW_AS_BUILT = 0,
    LOOM_VIEW_FRUGAL = 1
};

#ifdef __cplusplus
}
#endif
#endif
