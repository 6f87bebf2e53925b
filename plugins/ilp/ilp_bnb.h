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
    double *qd;          /* bound scratch: tails raised by the node's deductions */
    double *tfloor;      /* bound scratch: floors of the work after a stage */
    int32_t *tcand;      /* bound scratch: stages that must follow one */
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
    /* dominance memo (ilp_memo.c): placed sets already settled */
    uint64_t *zobrist;   /* per stage: random key */
    uint64_t hash;       /* xor of the placed stages' keys */
    uint64_t *set;       /* placed stages as a bitset (words) */
    int32_t words;       /* bitset words */
    int32_t front_cap;   /* most frontier stages an entry holds */
    size_t slot_bytes;   /* bytes per entry */
    size_t n_buckets;    /* power of two; 4 entries each */
    unsigned char *memo; /* n_buckets * 4 entries */
    double *profile;     /* scratch: the node's profile (P + 1 + front) */
    int32_t profile_len; /* its length at the last loom_ilpi_memo_key */
    uint32_t memo_turn;  /* round-robin victim */
    int64_t memo_hits;
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
/* Allocates the dominance memo (bytes at most budget); 0 when out of
 * memory. loom_ilpi_memo_free releases it. */
int loom_ilpi_memo_init(loom_ilpi_bnb *b, size_t budget);
void loom_ilpi_memo_free(loom_ilpi_bnb *b);
/* Marks v placed (1) or unplaced (0) in the memo's key. */
void loom_ilpi_memo_mark(loom_ilpi_bnb *b, int32_t v, int placed);
/* Computes the node's profile; 0 when it does not fit an entry. */
int loom_ilpi_memo_key(loom_ilpi_bnb *b);
/* 1 when a settled node with the same placed set has every profile value
 * at most this node's (after loom_ilpi_memo_key). */
int loom_ilpi_memo_dominated(loom_ilpi_bnb *b);
/* Records the node (after loom_ilpi_memo_key) as settled. */
void loom_ilpi_memo_store(loom_ilpi_bnb *b);
/* A lower bound of every completion of the current node (it stops early
 * once the bound reaches the incumbent). */
double loom_ilpi_bound(loom_ilpi_bnb *b);

#endif
