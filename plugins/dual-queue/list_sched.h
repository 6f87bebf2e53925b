/*
 * list_sched.h - the list-scheduling core shared by the dual-queue and
 * zero-bubble interleavers.
 *
 * A list scheduler builds the timeline while it orders: a stage becomes
 * "released" once every predecessor is placed, and from then on its
 * earliest start (max over predecessors of end + edge P2P time) is known.
 * Released stages wait in typed queues per rank (the interleaver decides
 * what a type is: forward / backward, or F / I / W). Each (rank, type) has
 * two binary heaps:
 *   - pending: stages that cannot start before the rank is free, ordered by
 *     earliest start, then priority (higher first), then tie key, then id;
 *   - ready: stages whose earliest start is <= the rank's free time, ordered
 *     by priority, tie key, id (they would all start when the rank is free).
 * A rank's free time only grows, so a stage moves from pending to ready at
 * most once. Each rank holds the earliest time the interleaver says it can
 * start something (or nothing); the next rank is found by a scan over the
 * ranks, cheaper than a heap for the few dozen ranks of a pipeline.
 *
 * Every array is sized by loom_ls_reserve() and reused: no allocation
 * happens per call once the scratch has seen a graph this large. One call
 * costs O((stages + edges) log stages).
 *
 * Ownership: a loom_ls is embedded in the interleaver instance, which owns
 * its arrays (host->alloc) and releases them with loom_ls_release(). The
 * graph and the schedule are borrowed for one call.
 * Units: *_ms milliseconds, *_bytes bytes.
 */
#ifndef LOOM_LIST_SCHED_H
#define LOOM_LIST_SCHED_H

#include <loom/loom.h>

#define LOOM_LS_MAX_TYPES 3

/* One heap entry: ordered by t_ms ascending, prio descending, tie
 * ascending, id ascending. */
typedef struct loom_ls_entry {
    double t_ms;
    float prio;
    int32_t tie;
    int32_t id;
    int32_t reserved;
} loom_ls_entry;

/* A binary min-heap over borrowed storage. */
typedef struct loom_ls_heap {
    loom_ls_entry *e;
    int32_t n;
    int32_t reserved;
} loom_ls_heap;

typedef struct loom_ls {
    const loom_host_api *host;
    int32_t cap_stages, cap_edges, cap_ranks, cap_types;
    int32_t n_types;
    int32_t n_ranks;     /* ranks of the graph of the current call */

    /* Filled by the interleaver before loom_ls_begin(), per stage. */
    uint8_t *type;       /* queue type, < n_types */
    float *prio;         /* priority, higher runs earlier */
    int32_t *tie;        /* secondary key, lower runs earlier */

    /* Per stage. */
    int32_t *succ_off;   /* successor rows, n_stages + 1 */
    int32_t *succ;       /* successor stage of each edge */
    int32_t *succ_edge;  /* index of that edge in graph->pred */
    int32_t *left;       /* predecessors not placed yet */
    double *ready_ms;    /* max over placed predecessors of end + p2p */
    double *end_ms;      /* end time once placed */

    /* Per (rank, type): heaps over `store`. */
    loom_ls_entry *store;    /* 2 * cap_stages entries */
    loom_ls_heap *ready;     /* n_ranks * n_types */
    loom_ls_heap *pending;   /* n_ranks * n_types */

    /* Per rank. */
    double *last_ms;     /* end of the last placed stage (t_last) */
    int64_t *mem_bytes;  /* activation bytes currently held */
    int32_t *fill;       /* next slot in out->order */
    int32_t *last_type;  /* type of the last placed stage, -1 none */
    double *rank_t_ms;   /* earliest start the interleaver queued */
    uint8_t *rank_queued; /* 1 while rank_t_ms is valid */
    int32_t *dirty;      /* ranks whose choice may have changed */
    uint8_t *is_dirty;
    int32_t n_dirty;

    int32_t placed;      /* stages placed so far in this call */
} loom_ls;

/* Pushes x onto h (the storage must have room). */
void loom_ls_heap_push(loom_ls_heap *h, loom_ls_entry x);

/* Removes the top of a non-empty heap. */
void loom_ls_heap_pop(loom_ls_heap *h);

/* Sizes the scratch for graph g and n_types queue types (grows only).
 * LOOM_ENOMEM (message prefixed with `who`) when allocation fails. */
int loom_ls_reserve(loom_ls *ls, const loom_host_api *host,
                    const loom_stage_graph *g, int32_t n_types,
                    const char *who, loom_error *err);

/* Frees every scratch array. */
void loom_ls_release(loom_ls *ls);

/* Starts one call: builds successor rows, checks ids, counts the stages of
 * every rank into out->rank_off and releases the stages without
 * predecessors. ls->type/prio/tie must be filled. Every rank is dirty
 * afterwards. LOOM_EINVAL naming the first bad stage or edge. */
int loom_ls_begin(loom_ls *ls, const loom_stage_graph *g, loom_schedule *out,
                  const char *who, loom_error *err);

/* The stage of (rank r, type q) that would be taken now, or -1 when that
 * queue is empty; *start_ms gets its start time on r (never before the
 * rank is free). */
int32_t loom_ls_peek(loom_ls *ls, int32_t r, int32_t q, double *start_ms);

/* Places stage v, which must be what loom_ls_peek() returned for its rank
 * and type: appends it to out, advances the rank's clock and memory,
 * releases its successors and marks the touched ranks dirty. */
void loom_ls_place(loom_ls *ls, const loom_stage_graph *g, int32_t v,
                   loom_schedule *out);

/* Queues rank r with its earliest start t_ms (replacing what it had). */
void loom_ls_rank_push(loom_ls *ls, int32_t r, double t_ms);

/* Takes rank r out of the queue. */
void loom_ls_rank_drop(loom_ls *ls, int32_t r);

/* Takes out and returns the queued rank with the smallest start (ties:
 * lower rank), or -1 when none is queued. */
int32_t loom_ls_rank_pop(loom_ls *ls);

/* Finishes a call: checks every stage was placed (else a dependency cycle
 * or a stage on no rank) and sets out->n_stages. */
int loom_ls_end(loom_ls *ls, const loom_stage_graph *g, loom_schedule *out,
                const char *who, loom_error *err);

/* Among ranks whose only startable stages are forwards blocked by memory
 * (blocked_f[r] >= 0, the forward that rank would take), the one leaving
 * its rank with the least memory (static + held + its activation; then
 * the earliest start, then the lowest rank), or -1. */
int32_t loom_ls_pick_forced(loom_ls *ls, const loom_stage_graph *g,
                            const int32_t *blocked_f);

#endif
