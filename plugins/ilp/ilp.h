/*
 * ilp.h - the pieces of the exact "ilp" interleaver (PipeWeaver section
 * 3.1): the graph analysis that bounds the makespan, list schedules that
 * give an incumbent, a replay of per-rank orders, and the branch and
 * bound that proves the optimum.
 *
 * Ownership: loom_ilpi_problem is caller-owned (zero it, build it, free it
 * with loom_ilpi_free); it borrows the stage graph, which must outlive it.
 * Orders are caller-provided arrays laid out like loom_schedule (rank_off
 * with n_ranks + 1 entries, order with n_stages). Units: ms, bytes.
 */
#ifndef LOOM_ILP_INTERLEAVER_H
#define LOOM_ILP_INTERLEAVER_H

#include <loom/loom.h>

/* Largest max_stages accepted. */
#define LOOM_ILPI_MAX_STAGES 2048

typedef struct loom_ilpi_problem {
    const loom_stage_graph *g;
    int32_t n, n_ranks;
    int32_t *topo;         /* stages in a topological order */
    int32_t *succ_off;     /* n + 1: successors in compressed rows */
    int32_t *succ;
    double *succ_p2p;      /* transfer time of each successor edge */
    double *est_ms;        /* earliest start: longest path from a source */
    double *tail_ms;       /* longest path from the stage's start to the end */
    uint8_t *reach;        /* n x n: reach[u * n + v] = 1 when v depends
                              on u, directly or not */
    int32_t *rank_off;     /* n_ranks + 1: stages of each rank, by id */
    int32_t *rank_stages;
    double lower_bound_ms; /* max(critical path, per-rank load bound); ilp.c
                              raises it to a search's root bound */
    double *work;          /* scratch of replay / list: 3n + 3 * ranks */
    int32_t *cursor;       /* scratch: n_ranks + 1 */
    int32_t *iwork;        /* scratch of list: 2n + 2 */
} loom_ilpi_problem;

/* Analyses g: successors, a topological order, reachability, earliest
 * starts, tails and the makespan lower bound
 *   max( max_u est_u + tail_u,
 *        max_r min_{u on r} est_u + sum_{u on r} lat_u
 *              + min_{u on r} (tail_u - lat_u) ).
 * LOOM_EINVAL (naming a stage) when the dependencies have a cycle. */
int loom_ilpi_analyse(const loom_host_api *host, loom_ilpi_problem *pb,
                      const loom_stage_graph *g, loom_error *err);
void loom_ilpi_free(const loom_host_api *host, loom_ilpi_problem *pb);

/* Replays per-rank orders as the simulator does (a stage starts when its
 * rank is free and every predecessor has ended plus its transfer time).
 * Writes start times (may be NULL) and returns the makespan, or a
 * negative value when the orders deadlock or (with a cap) some rank's
 * memory exceeds the cap. */
double loom_ilpi_replay(loom_ilpi_problem *pb, const int32_t *rank_off,
                        const int32_t *order, double *start_ms);

/* List-scheduling rules for incumbents. */
enum loom_ilpi_rule {
    LOOM_ILPI_LONGEST_TAIL = 0, /* most work after the stage first */
    LOOM_ILPI_BACKWARD_FIRST = 1, /* backward stages first (1F1B-like) */
    LOOM_ILPI_FORWARD_FIRST = 2,  /* forward stages first (GPipe-like) */
    LOOM_ILPI_RULES = 3
};

/* Builds per-rank orders by list scheduling: repeatedly start, among the
 * stages whose predecessors are placed (and, with a cap, whose memory
 * fits), the one that can start earliest, ties broken by `rule`. Returns
 * the makespan, or a negative value when the cap blocks every rank. */
double loom_ilpi_list(loom_ilpi_problem *pb, int rule, int32_t *rank_off,
                      int32_t *order);

/* loom_ilpi_list with the microbatches' ties broken by mb_key (one per
 * microbatch, lower first) instead of their ids; a NULL mb_key is the
 * plain rule. */
double loom_ilpi_list_keyed(loom_ilpi_problem *pb, int rule, const int32_t *mb_key,
                            int32_t *rank_off, int32_t *order);

/* Warm start over microbatch priority orders (ilp_prio.c): list
 * schedules under the backward-first and longest-tail rules with the
 * microbatches ranked by total work ascending and descending, by
 * forward work (shortest / longest first), by Johnson's rule on
 * (forward, backward) work, the lightest first then by work descending,
 * and - with at most 8 microbatches - every order until deadline_ms
 * (host clock) or until an order meets pb->lower_bound_ms. The best
 * order that fits the cap goes to best_off / best_order when it beats
 * *best_ms (< 0: none yet), which it then holds. rank_off / order are
 * scratch. LOOM_ENOMEM. */
int loom_ilpi_warm_prio(const loom_host_api *host, loom_ilpi_problem *pb,
                        double deadline_ms, int32_t *rank_off, int32_t *order,
                        int32_t *best_off, int32_t *best_order, double *best_ms,
                        loom_error *err);

/* What loom_ilpi_search found. */
typedef struct loom_ilpi_result {
    double makespan_ms;    /* of the best order known (the incumbent when
                              nothing better was found; < 0: none) */
    double lower_bound_ms; /* proven: no order has a smaller makespan */
    int proven;            /* 1: makespan_ms == lower_bound_ms is optimal */
    int timed_out;         /* 1: timeout_ms stopped the search */
    int64_t nodes;         /* search nodes visited */
} loom_ilpi_result;

/* Branch and bound (ilp_bnb.c) for per-rank orders with a makespan below
 * incumbent_ms (< 0: none known), within timeout_ms. When it finds better
 * orders it writes them to rank_off / order and res->makespan_ms is their
 * replayed makespan; otherwise the arrays are left as they were.
 * res->lower_bound_ms is the root bound (analysis bound, tails through
 * identical microbatches, one-rank preemptive bound), or the optimum when
 * the search finished (res->proven = 1). LOOM_ENOMEM. */
int loom_ilpi_search(const loom_host_api *host, loom_ilpi_problem *pb,
                     double incumbent_ms, double timeout_ms, int32_t *rank_off,
                     int32_t *order, loom_ilpi_result *res, loom_error *err);

/* The answer for the last graph solved, shared by every instance through
 * the plugin state (ilp_cache.c). Thread-safe. */
typedef struct loom_ilpi_cache loom_ilpi_cache;
int loom_ilpi_cache_init(const loom_host_api *host, void **state, loom_error *err);
void loom_ilpi_cache_fini(void *state);
/* Digest of what the answer depends on: the graph and the time limit. */
uint64_t loom_ilpi_digest(const loom_stage_graph *g, double timeout_ms);
/* 1 and the cached orders and result when `digest` was solved last. */
int loom_ilpi_cache_get(loom_ilpi_cache *c, uint64_t digest, const loom_stage_graph *g,
                        int32_t *rank_off, int32_t *order, loom_ilpi_result *res);
void loom_ilpi_cache_put(loom_ilpi_cache *c, uint64_t digest, const loom_stage_graph *g,
                         const int32_t *rank_off, const int32_t *order,
                         const loom_ilpi_result *res);

#endif
