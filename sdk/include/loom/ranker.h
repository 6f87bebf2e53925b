/*
 * loom/ranker.h - the ranker role: choose among candidate stage graphs and
 * assign a priority to every segment group, scoring choices through the
 * "loom.evaluator" service (interleaver + memory tuner + simulator).
 *
 * Ownership: graphs are host-owned and read-only; `out` and its priority
 * buffer are host-owned (capacity cap_priorities >= the largest n_groups).
 */
#ifndef LOOM_RANKER_H
#define LOOM_RANKER_H

#include <loom/plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_RANKER_VERSION 1u

typedef struct loom_ranking {
    int32_t candidate;        /* chosen graph index */
    int32_t cap_priorities;
    float *priorities;        /* n_groups of the chosen graph */
    double best_makespan_ms;  /* as evaluated by the ranker */
    int64_t evaluations;      /* evaluator runs spent */
} loom_ranking;

typedef struct loom_ranker_vtable {
    loom_role_header header; /* { sizeof(this), LOOM_RANKER_VERSION } */
    int (*create)(const loom_host_api *host, loom_ctx *ctx, void *plugin_state,
                  void **self, loom_error *err); /* required */
    void (*destroy)(void *self);                  /* required */
    /* Required. Must return within the ctx's time budget (the host stops
     * waiting after it). */
    int (*rank)(void *self, const loom_stage_graph *const *graphs,
                int32_t n_graphs, loom_ranking *out, loom_error *err);
} loom_ranker_vtable;

#ifdef __cplusplus
}
#endif
#endif
