/*
 * loom/interleaver.h - the interleaver role: the per-rank order of stages,
 * honouring dependencies, group priorities and the graph's memory cap.
 *
 * An instance is created once per evaluator (one per worker) and called
 * for many priority vectors over the same graph: keep scratch in the
 * instance and do not allocate per call once sized.
 *
 * Ownership: graph and priorities read-only; `out` is host-owned with room
 * for graph->n_stages entries and graph->n_ranks + 1 offsets.
 */
#ifndef LOOM_INTERLEAVER_H
#define LOOM_INTERLEAVER_H

#include <loom/plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_INTERLEAVER_VERSION 1u

typedef struct loom_interleaver_vtable {
    loom_role_header header; /* { sizeof(this), LOOM_INTERLEAVER_VERSION } */
    int (*create)(const loom_host_api *host, loom_ctx *ctx, void *plugin_state,
                  void **self, loom_error *err); /* required */
    void (*destroy)(void *self);                  /* required */
    /* Required. Writes every stage exactly once into out. `priorities`
     * (one per group, higher earlier) may be NULL: use group order. */
    int (*interleave)(void *self, const loom_stage_graph *graph,
                      const float *priorities, loom_schedule *out,
                      loom_error *err);
    /* Optional. 1 when this interleaver needs split backward (I + W)
     * stages; the host then builds graphs with split_backward set. */
    int (*wants_split_backward)(void *self);
} loom_interleaver_vtable;

#ifdef __cplusplus
}
#endif
#endif
