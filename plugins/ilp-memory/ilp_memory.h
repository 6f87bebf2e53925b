/*
 * ilp_memory.h - the integer programme behind the "ilp" memory tuner
 * (PipeWeaver section 6.3, "ILP Formulation"), separated from the plugin
 * glue so it can be tested and benchmarked on its own.
 *
 * Variables o[p][j] in {0,1}: stage pair p takes its j-th knapsack
 * candidate. Minimise sum lat[p][j] o[p][j] subject to sum_j o[p][j] = 1
 * for every pair and, for every rank and every stage start of that rank
 * at which memory can peak, sum over the pairs live there of
 * mem[p][j] o[p][j] <= cap - static bytes of the rank.
 *
 * A pair's activations live on one rank and every memory row belongs to
 * one rank, so the programme splits into one independent programme per
 * rank; each is solved on its own (smaller models, and a rank whose warm
 * start is already within the gap costs one LP relaxation).
 *
 * Ownership: the work struct is caller-owned (zero it first) and released
 * with loom_ilpm_free; everything else is borrowed. Units: ms, bytes.
 */
#ifndef LOOM_ILP_MEMORY_H
#define LOOM_ILP_MEMORY_H

#include <loom/kits/memtune.h>
#include <loom/kits/mckp.h>

/* What one solve did (summed over ranks), for logs and benchmarks. */
typedef struct loom_ilpm_stats {
    int32_t constraints;   /* memory rows kept (binding at all-fastest) */
    int32_t active_pairs;  /* pairs in some kept row (the others stay fast) */
    int32_t columns;       /* variables over all rank programmes */
    int32_t bound_ranks;   /* ranks settled by the window bound */
    int32_t lp_ranks;      /* ranks whose LP relaxation was solved */
    int32_t mip_ranks;     /* ranks that needed branch and bound */
    int32_t improved;      /* ranks where the ILP beat the warm start */
    int32_t timed_out;     /* 1 when the deadline stopped a solve */
    double warm_ms;        /* total latency of the warm starts */
    double best_ms;        /* total latency of the returned choice */
    double solve_ms;       /* wall time of building and solving */
} loom_ilpm_stats;

/* One convex-hull step of a pair's candidates: `bytes` saved for
 * `slope` ms per byte (ilpm_bound.c). */
typedef struct loom_ilpm_seg {
    double slope, bytes;
    int32_t pair, reserved;
} loom_ilpm_seg;

/* A memory row as the slot interval [start, end) in which its live pairs
 * are all live at once, with its single-row bound (ilpm_bound.c). */
typedef struct loom_ilpm_win {
    int32_t start, end;
    double gain_ms;
} loom_ilpm_win;

/* Reused scratch. */
typedef struct loom_ilpm_work {
    int32_t *col_of;      /* per pair: first column, or -1 when inactive */
    int32_t *row_off;     /* per kept memory row + 1 */
    int32_t *row_pairs;   /* pairs of each kept row */
    int32_t *row_rank;    /* per kept row */
    int32_t *row_slot;    /* per kept row: its slot in the rank's order */
    int32_t *live;        /* per pair (scratch) */
    int32_t *colno;       /* per column + 1 */
    double *vals;         /* per column + 1 */
    int32_t *trial;       /* per pair: the ILP's choice */
    int64_t *bytes;       /* per pair (scratch) */
    int32_t cap_pairs, cap_rows, cap_row_pairs, cap_cols;
    /* window bound scratch (ilpm_bound.c) */
    struct loom_ilpm_seg *segs; /* convex-hull steps of a rank's pairs */
    struct loom_ilpm_win *wins; /* a rank's rows as slot intervals */
    double *dp;                 /* weighted interval scheduling table */
    int32_t cap_segs, cap_wins;
} loom_ilpm_work;

/* Solve parameters. */
typedef struct loom_ilpm_params {
    double gap;         /* relative gap at which a rank's search stops */
    double timeout_ms;  /* wall-clock limit of the whole solve */
    double deadline_ms; /* host->now_ms() time to stop by as well; < 0 none */
} loom_ilpm_params;

/* Solves the programme over the memory timeline `t` (built for the
 * schedule). warm_rank_ms[r] is the total latency of rank r's pairs under
 * the best warm start; only strictly better choices are sought (it is
 * lp_solve's initial objective bound), and a rank whose LP relaxation
 * shows the warm start within `gap` of optimal is left to it. Rows that
 * the all-fastest choice satisfies cannot bind and are dropped; pairs in
 * no kept row take their fastest candidate. For every rank where the
 * solver's choice is valid under the exact timeline and faster than its
 * warm start, the choice of the rank's pairs is written to `choice` (per
 * pair: a candidate index within the pair) and rank_improved[r] is set to
 * 1 (else 0, and `choice` is untouched for that rank). A solver failure
 * or the deadline is not an error. */
int loom_ilpm_solve(const loom_host_api *host, loom_ilpm_work *w,
                    loom_mt_timeline *t, const loom_stage_graph *g,
                    const loom_mckp_set *set, const loom_ilpm_params *prm,
                    const double *warm_rank_ms, int32_t *choice,
                    uint8_t *rank_improved, loom_ilpm_stats *st,
                    loom_error *err);
void loom_ilpm_free(const loom_host_api *host, loom_ilpm_work *w);

/* Collects into w the memory rows that bind with every pair at its
 * fastest candidate: for every rank, each slot where memory can peak
 * (loom_mt_is_crest) whose live pairs' fastest bytes plus the rank's
 * static bytes exceed the cap; rows come rank by rank in slot order
 * (row_off / row_pairs / row_rank / row_slot). Returns their count, or
 * < 0 when out of memory. */
int32_t loom_ilpm_rows(const loom_host_api *host, loom_ilpm_work *w,
                       const loom_mt_timeline *t, const loom_stage_graph *g,
                       const loom_mckp_set *set);

/* A lower bound on the latency rank r's pairs must add over their
 * fastest candidates to satisfy its memory rows [lo, hi) (collected by
 * loom_ilpm_solve): for each row, the LP relaxation of the row alone (a
 * multiple-choice knapsack: cheapest convex-hull steps first); then the
 * best sum over rows whose live pairs are pairwise disjoint (weighted
 * interval scheduling), since disjoint rows need disjoint savings.
 * [lo, hi) must be rank r's rows from loom_ilpm_rows. Returns < 0 when out
 * of memory. */
double loom_ilpm_window_bound(const loom_host_api *host, loom_ilpm_work *w,
                              const loom_mt_timeline *t,
                              const loom_stage_graph *g,
                              const loom_mckp_set *set, int32_t r, int32_t lo,
                              int32_t hi);

#endif
