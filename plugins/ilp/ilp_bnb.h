/*
 * ilp_bnb.h - the state of the exact interleaver's branch and bound
 * (ilp_bnb.c), shared with its symmetry analysis (ilp_twins.c) and its
 * lower bound (ilp_bound.c). Private to the plugin.
 *
 * Ownership: loom_ilpi_search allocates every array (host->alloc) and
 * frees them before it returns; the problem and its graph are borrowed.
 * Units: ms, bytes.
 */
#ifndef LOOM_ILP_BNB_H
#define LOOM_ILP_BNB_H

#include "ilp.h"

typedef struct loom_ilpi_bnb {
    const loom_host_api *host;
    loom_ilpi_problem *pb;
    const loom_stage_graph *g;
    int32_t n, P;
    int32_t *twin;       /* previous identical microbatch's stage, or -1 */
    int32_t *twin_next;  /* the stage whose twin this is, or -1 */
    int32_t *topo;       /* topological order over edges and twins */
    int32_t *left;       /* unplaced predecessors (twin included) */
    double *ready;       /* max over placed predecessors of end + p2p */
    double *start;       /* start of a placed stage, -1 unplaced */
    double *head, *q;    /* bound scratch: earliest start, tail with twins */
    double *free_ms, *rem_ms;
    double *mem;
    int32_t *pos;        /* per rank: stages placed */
    int32_t *seq;        /* per rank: placed stages in order (rank_off) */
    int32_t *best;       /* best order found (rank_off layout) */
    int32_t *cand;       /* branch scratch: n stages per depth, grown */
    double *jps_rem;     /* bound scratch per stage */
    double *floor;       /* bound scratch: memory floors of heads */
    int32_t *fcand;      /* bound scratch: stages that free memory */
    uint8_t *creach;     /* n x n: order forced by edges and twins */
    int32_t floor_passes; /* memory-floor rounds per bound */
    int32_t placed, max_depth, cand_depths;
    int64_t *ban;        /* per stage: the rank epoch it is banned in */
    int64_t *epoch;      /* per rank: changes with every placement */
    int64_t clock;       /* last epoch handed out */
    double makespan;     /* max end of the placed stages */
    double best_ms, root_lb, tol, deadline_ms;
    int found, stop, exact;
    int64_t nodes;
} loom_ilpi_bnb;

/* 1 when v's memory delta fits its rank now. */
int loom_ilpi_fits(const loom_ilpi_bnb *b, int32_t v);
/* 1 when v may be its rank's next stage now: it fits, and no idle child
 * above excluded it since its rank last placed a stage. */
int loom_ilpi_may_run(const loom_ilpi_bnb *b, int32_t v);
/* Twins of identical microbatches (first: n_microbatches + 1 scratch). */
void loom_ilpi_twins(loom_ilpi_bnb *b, int32_t *first);
/* Topological order over edges and twin links, and tails q through both
 * (indeg: n scratch). */
void loom_ilpi_order(loom_ilpi_bnb *b, int32_t *indeg);
/* Reachability over edges and twin links (after loom_ilpi_order). */
void loom_ilpi_creach(loom_ilpi_bnb *b);
/* A lower bound of every completion of the current node (it stops early
 * once the bound reaches the incumbent). */
double loom_ilpi_bound(loom_ilpi_bnb *b);

#endif
