/*
 * ilp.h - the pieces of the exact "ilp" interleaver (PipeWeaver section
 * 3.1): the graph analysis that bounds the makespan, list schedules that
 * give an incumbent, a replay of per-rank orders, and the mixed-integer
 * programme solved with lp_solve.
 *
 * Ownership: loom_ilpi_problem is caller-owned (zero it, build it, free it
 * with loom_ilpi_free); it borrows the stage graph, which must outlive it.
 * Orders are caller-provided arrays laid out like loom_schedule (rank_off
 * with n_ranks + 1 entries, order with n_stages). Units: ms, bytes.
 */
#ifndef LOOM_ILP_INTERLEAVER_H
#define LOOM_ILP_INTERLEAVER_H

#include <loom/loom.h>

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
    double lower_bound_ms; /* max(critical path, per-rank load bound) */
    double *work;          /* scratch of replay / list: 3n + 3 * ranks */
    int32_t *cursor;       /* scratch: n_ranks + 1 */
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

/* Searches, with lp_solve, per-rank orders with a makespan below
 * incumbent_ms (< 0: none known): start times s_u >= est_u, makespan T
 * with T >= s_u + tail_u and T >= the lower bound, precedence
 * s_v >= s_u + lat_u + p2p_uv, one binary per unordered pair of stages of
 * a rank that no dependency orders, with big-M disjunctions (M from the
 * bounds the incumbent gives every start), and with a cap, for every stage
 * v with a positive delta: static + the deltas of the stages before v +
 * delta_v <= cap. Minimises T.
 * Returns LOOM_OK with *makespan_ms the replayed makespan of the orders it
 * wrote to rank_off / order (stages sorted by start time) when it found
 * better ones, or incumbent_ms when not (the arrays' contents are then
 * unspecified: keep the incumbent elsewhere); *proven is 1
 * when the search finished (the result is optimal) and 0 when timeout_ms
 * stopped it. LOOM_EINFEASIBLE when lp_solve proves that no order fits
 * the cap; LOOM_ENOMEM. */
int loom_ilpi_solve(const loom_host_api *host, loom_ilpi_problem *pb,
                    double incumbent_ms, double timeout_ms, int32_t *rank_off,
                    int32_t *order, double *makespan_ms, int *proven,
                    loom_error *err);

#endif
