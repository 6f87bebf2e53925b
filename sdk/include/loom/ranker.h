/*
 * loom/ranker.h - the ranker role: choose among candidate stage graphs and
 * assign a priority to every segment group, scoring choices through the
 * "loom.evaluator" service (interleaver + memory tuner + simulator).
 *
 * Ownership: graphs are host-owned and read-only (outlines, for a ranker
 * that declares LOOM_RANKER_READS_COUNTS); `out` and its priority buffer
 * are host-owned (capacity cap_priorities >= the largest n_groups).
 */
#ifndef LOOM_RANKER_H
#define LOOM_RANKER_H

#include <loom/plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_RANKER_VERSION 1u

/* Size-prefixed: the host allocates it with struct_size set
 * (LOOM_RANKING_INIT); a ranker writes only the members struct_size
 * covers. */
typedef struct loom_ranking {
    uint32_t struct_size;     /* sizeof(loom_ranking) of the host */
    int32_t candidate;        /* chosen graph index */
    int32_t cap_priorities;
    float *priorities;        /* n_groups of the chosen graph */
    double best_makespan_ms;  /* as evaluated by the ranker */
    int64_t evaluations;      /* evaluator runs spent */
} loom_ranking;

#define LOOM_RANKING_SIZE_V1 ((uint32_t)LOOM_STRUCT_END(loom_ranking, evaluations))
#define LOOM_RANKING_INIT { .struct_size = (uint32_t)sizeof(loom_ranking) }
#define LOOM_RANKING_HAS(r, member) LOOM_STRUCT_HAS(r, loom_ranking, member)

/* Reserved params: the budget of a search. The planner may ask for a
 * fixed number of evaluations (`loom plan --evaluations N`, or
 * "max_evaluations" in the planner manifest): the run is then
 * reproducible, its outputs byte-identical for the same seed and N. The
 * host then rewrites, for the ranker step and after the planner's own
 * values, each of these params that the ranker declares:
 *   max_evaluations  int    becomes N: stop after N evaluator runs;
 *   budget_ms        int or float  becomes
 *                    loom_ranker_safety_budget_ms(value, declared max):
 *                    ten times the value, at least 60000, at most the
 *                    declared max, so that the time budget is only a
 *                    safety cap and the evaluation count decides;
 *   deterministic    bool   becomes true: search in fixed rounds, so the
 *                    result depends on the seed and evaluation count only.
 * A ranker that declares none of them is planned as usual. One that
 * declares one declares it with the type above (the Loom tree's
 * test_param_tables checks the shipped rankers), reads it like any param
 * and honours it as written here. */
#define LOOM_RANKER_PARAM_MAX_EVALUATIONS "max_evaluations"
#define LOOM_RANKER_PARAM_BUDGET_MS "budget_ms"
#define LOOM_RANKER_PARAM_DETERMINISTIC "deterministic"

/* The budget_ms the host gives a ranker in evaluation mode, from its
 * value `budget_ms` and its declared max `max_ms` (HUGE_VAL when none). */
static inline double loom_ranker_safety_budget_ms(double budget_ms, double max_ms)
{
    double cap = budget_ms * 10 > 60000 ? budget_ms * 10 : 60000;
    return cap > max_ms ? max_ms : cap;
}

typedef struct loom_ranker_vtable {
    loom_role_header header; /* { sizeof(this), LOOM_RANKER_VERSION } */
    int (*create)(const loom_host_api *host, loom_ctx *ctx, void *plugin_state,
                  void **self, loom_error *err); /* required */
    void (*destroy)(void *self);                  /* required */
    /* Required. Must return within the ctx's time budget (the host stops
     * waiting after it). */
    int (*rank)(void *self, const loom_stage_graph *const *graphs,
                int32_t n_graphs, loom_ranking *out, loom_error *err);
    /* Appended (a vtable without it reads as
     * LOOM_RANKER_READS_ALL): what rank() reads of the graphs it is
     * given. See LOOM_RANKER_READS_COUNTS. */
    uint32_t reads;
} loom_ranker_vtable;

/* Values of loom_ranker_vtable.reads. */
#define LOOM_RANKER_READS_ALL 0u
/* rank() reads only the counts of each graph (n_stages, n_ranks,
 * n_groups, n_microbatches, n_edges, n_pairs, n_layer_entries) and scores
 * a graph only by creating an evaluator on it. The host may then give
 * outlines: graphs with those counts, every other member zero and every
 * array NULL. Creating an evaluator on an outline builds the candidate's
 * full graph, which that evaluator owns and frees when it is destroyed,
 * so a ranker of thousands of candidates holds the graphs of the
 * evaluators it has open, not every candidate's. Building may fail with
 * the cost model's error; evaluators may be created on outlines from
 * several threads (the host builds one graph at a time). */
#define LOOM_RANKER_READS_COUNTS 1u

#ifdef __cplusplus
}
#endif
#endif
