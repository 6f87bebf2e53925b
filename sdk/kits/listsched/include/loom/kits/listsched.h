/*
 * <loom/kits/listsched.h> - the list-scheduling kit (CMake target
 * loom_kit_listsched, Loom::kit_listsched when installed): the core the
 * dual-queue and zero-bubble interleavers share.
 *
 * A list scheduler builds the timeline while it orders: a stage becomes
 * "released" once every predecessor is placed, and from then on its
 * earliest start (max over predecessors of end + edge P2P time) is known.
 * Released stages wait in typed queues per rank (the interleaver decides
 * what a type is: forward / backward, or F / I / W).
 *
 * Within one (rank, type) queue the stages are totally ordered by priority
 * (higher first), then tie key (lower first), then stage id. At the start
 * of a call every stage gets its position in that order, its *slot*.
 * The (tie, id) order is a radix sort kept while the tie keys stay the
 * same; the priorities then reorder it stably. Priorities given per group
 * (n_groups > 0: the interleavers' one priority per segment group) take a
 * counting sort: the groups' distinct priorities are numbered in order (a
 * radix sort of n_groups keys, the class of each group), then one pass
 * counts the stages of every (queue, class) cell and one hands out the
 * slots in (tie, id) order, while the cells number at most 2 * stages +
 * 1024; otherwise (per-stage priorities, or more cells) a radix sort of
 * all stages by priority. Both give the same slots. A
 * queue then holds:
 *   - ready: the stages whose earliest start is <= the rank's free time,
 *     as a two-level bitset over slots, so taking the best is a
 *     find-first-set and adding or removing one is a bit operation;
 *   - pending: the stages that cannot start before the rank is free, as a
 *     binary min-heap by (earliest start, slot);
 *   - its front: what loom_ls_peek() returns (the lowest ready slot, else
 *     the pending top), kept exact at every change, so a peek is a read.
 *     A release updates it by one compare (the new stage comes first or
 *     not); placing a stage recomputes its queue's front and moves the
 *     rank's other queues' due pending stages to ready (their fronts then
 *     start at the new free time).
 * A rank's free time only grows, so a stage moves from pending to ready at
 * most once; a stage released already startable goes straight to ready.
 * A rank is marked dirty when it placed a stage or when a release moved
 * one of its fronts: nothing else an interleaver decides on (the fronts,
 * the rank's clock, memory and last type) changes for the other ranks.
 * Each rank holds the earliest time the interleaver says it can start
 * something (or nothing); the next rank is found by a scan over the
 * ranks, cheaper than a heap for the few dozen ranks of a pipeline.
 * The queue layout (every queue's slots and bitset words) is kept while
 * the stages' ranks and types stay the same, and the successor rows,
 * predecessor counts and stages without predecessors while the
 * predecessor rows do; each is checked by a compare per call.
 *
 * Every array is sized by loom_ls_reserve() and reused: no allocation
 * happens per call once the scratch has seen a graph this large. One call
 * costs O(stages log stages + edges) in the worst case, and mostly
 * O(stages + edges) with a few heap steps per stage.
 *
 * Ownership: a loom_ls is embedded in the interleaver instance, which owns
 * its arrays (host->alloc) and releases them with loom_ls_release(). The
 * graph and the schedule are borrowed for one call.
 * Units: *_ms milliseconds, *_bytes bytes.
 */
#ifndef LOOM_KITS_LISTSCHED_H
#define LOOM_KITS_LISTSCHED_H

#include <loom/loom.h>

/* One pending entry: ordered by t_ms ascending, then slot ascending. */
typedef struct loom_ls_entry {
    double t_ms;
    int32_t slot;
    int32_t reserved;
} loom_ls_entry;

/* A binary min-heap over borrowed storage. */
typedef struct loom_ls_heap {
    loom_ls_entry *e;
    int32_t n;
    int32_t reserved;
    double top_ms;  /* e[0].t_ms, INFINITY when empty (push and pop keep it) */
} loom_ls_heap;

/* The front of one (rank, type) queue: what loom_ls_peek() returns, kept
 * exact as stages are released and placed. */
typedef struct loom_ls_front {
    double start_ms;     /* its start on the rank */
    int32_t stage;       /* the stage, -1 when the queue is empty */
    int32_t slot;        /* its slot */
    int32_t ready;       /* 1 from the ready set, 0 the pending heap's top */
    int32_t reserved;
} loom_ls_front;

typedef struct loom_ls {
    const loom_host_api *host;
    int32_t cap_stages, cap_edges, cap_ranks, cap_types, cap_words, cap_sums;
    int32_t n_types;
    int32_t n_ranks;     /* ranks of the graph of the current call */

    /* Filled by the interleaver before loom_ls_begin(), per stage. */
    uint8_t *type;       /* queue type, < n_types */
    float *prio;         /* priority, higher runs earlier */
    int32_t *tie;        /* secondary key, lower runs earlier */
    /* Per-group priorities instead of prio: when n_groups > 0, stage v's
     * priority is group_prio[group[v]], group[v] in 0..n_groups-1 (the
     * interleaver sets n_groups, at most the graph's n_groups, which
     * loom_ls_reserve sizes group_prio for), and prio is not read. */
    int32_t *group;      /* per stage */
    float *group_prio;   /* per group */
    int32_t n_groups;
    int32_t cap_groups;

    /* Per stage. */
    int32_t *succ_off;   /* successor rows, n_stages + 1 */
    int32_t *succ;       /* successor stage of each edge */
    int32_t *succ_edge;  /* index of that edge in graph->pred */
    int32_t *pred_off_seen; /* the predecessor rows the successor rows */
    int32_t *pred_seen;     /* were built from (n_stages + 1, n_edges) */
    int32_t succ_n, succ_e; /* their stage and edge counts, -1 none */
    int32_t *indeg;      /* predecessor count, built with the successor rows */
    int32_t *sources;    /* the stages without predecessors, by id ... */
    int32_t n_sources;   /* ... and their count */
    int32_t *left;       /* predecessors not placed yet */
    double *ready_ms;    /* max over placed predecessors of end + p2p */
    int32_t *slot;       /* position in its queue's order */
    int32_t *queue;      /* its queue, rank * n_types + type */

    /* The queue layout (queue, q_off, word_off, sum_off, rank_stages) is
     * kept while the stages' ranks and types stay the same. */
    int32_t *rank_seen;  /* the ranks ... */
    uint8_t *type_seen;  /* ... and types it was laid out for */
    int32_t shape_n;     /* their stage count, -1 when not laid out */
    int32_t shape_ranks, shape_types;

    /* The (tie, id) order, kept while the tie keys stay the same. */
    int32_t *tie_order;  /* stage ids sorted by tie, then id */
    int32_t *tie_seen;   /* the tie keys tie_order was built from */
    int32_t tie_n;       /* stages of tie_order, -1 when not built */
    uint32_t *sort_key;  /* radix sort scratch: 2 * n_stages keys */
    int32_t *sort_id;    /* radix sort scratch: 2 * n_stages ids */
    int32_t *group_class;    /* per group: rank of its priority among the
                                distinct ones, 0 the highest */
    int32_t *class_count;    /* counting sort scratch: per (queue, class),
                                2 * n_stages + 1024 cells */

    /* Per queue q = rank * n_types + type. */
    int32_t *q_off;      /* n_queues + 1: first slot of each queue ... */
    int32_t *q_count;    /* n_queues: slots handed out while ordering */
    int32_t *slot_stage; /* ... in this array of stage ids by slot */
    int32_t *word_off;   /* n_queues + 1: ready bitset words of each queue */
    int32_t *sum_off;    /* n_queues + 1: summary words (a bit per word) */
    uint64_t *words;     /* ready bits, a bit per slot */
    uint64_t *sums;      /* a bit per non-empty word */
    loom_ls_entry *store;    /* n_stages pending entries, sliced per queue */
    loom_ls_heap *pending;   /* n_queues */
    loom_ls_front *front;    /* n_queues */

    /* Per rank. */
    double *last_ms;     /* end of the last placed stage (t_last) */
    int64_t *mem_bytes;  /* activation bytes currently held */
    int32_t *fill;       /* next slot in out->order */
    int32_t *rank_stages; /* stages on the rank (the queue layout's) */
    int32_t *last_type;  /* type of the last placed stage, -1 none */
    double *rank_t_ms;   /* earliest start the interleaver queued, or
                            +infinity when the rank is not queued */
    /* The rank queue above 32 ranks (up to 32, a scan of rank_t_ms): a
     * tournament tree over rank_t_ms. Leaf rank_leaves + r holds rank r
     * (-1 past n_ranks), node k the winner of nodes 2k and 2k + 1 (the
     * smaller start, ties to the lower rank), so a push, drop or pop costs
     * log2(rank_leaves) steps: 2 * rank_leaves entries, rank_leaves the
     * smallest power of two >= n_ranks. */
    int32_t *rank_tree;
    int32_t rank_leaves;
    int32_t *dirty;      /* ranks whose choice may have changed */
    uint8_t *is_dirty;
    int32_t n_dirty;

    int32_t placed;      /* stages placed so far in this call */
} loom_ls;

/* Sorts the n ids in `id` stably by the matching 32-bit keys in `key`,
 * least significant byte first; a byte shared by every key is skipped.
 * key2/id2 are scratch of n entries; the keys are reordered with the ids.
 * Returns the array holding the sorted ids (id or id2); the sorted keys
 * are in the matching key array. O(n) per byte that varies. */
int32_t *loom_ls_radix(uint32_t *key, int32_t *id, uint32_t *key2,
                       int32_t *id2, int32_t n);

/* A key whose ascending unsigned order is the descending order of p, with
 * -0 equal to +0 and NaN after every number (for loom_ls_radix). */
uint32_t loom_ls_prio_key(float p);

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
 * every rank into out->rank_off, orders every queue and releases the
 * stages without predecessors. ls->type/prio/tie must be filled (a NaN
 * priority runs last). Every rank is dirty afterwards. LOOM_EINVAL naming
 * the first bad stage or edge. */
int loom_ls_begin(loom_ls *ls, const loom_stage_graph *g, loom_schedule *out,
                  const char *who, loom_error *err);

/* The stage of (rank r, type q) that would be taken now, or -1 when that
 * queue is empty; *start_ms gets its start time on r (never before the
 * rank is free; INFINITY when the queue is empty). A read of the queue's
 * front (inline: the interleavers call it for every decision). */
static inline int32_t loom_ls_peek(const loom_ls *ls, int32_t r, int32_t q,
                                   double *start_ms)
{
    const loom_ls_front *f = &ls->front[r * ls->n_types + q];
    *start_ms = f->start_ms; /* INFINITY when empty: no branch to mispredict */
    return f->stage;
}

/* Places stage v, which must be what loom_ls_peek() returned for its rank
 * and type: appends it to out, advances the rank's clock and memory,
 * releases its successors and marks the touched ranks dirty. */
void loom_ls_place(loom_ls *ls, const loom_stage_graph *g, int32_t v,
                   loom_schedule *out);

/* Builds the rank queue for ls->n_ranks ranks with none queued (every
 * rank_t_ms +infinity). ls->rank_tree must hold 2 * rank_leaves entries
 * for the smallest power of two rank_leaves >= n_ranks (loom_ls_reserve
 * sizes it; loom_ls_begin calls this). */
void loom_ls_rank_reset(loom_ls *ls);

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

/* ---- the zero-bubble order (zb_order.c) -------------------------------- */

/* The zero-bubble greedy (ZB-H1 / ZB-H2 behaviour of Qi et al., "Zero
 * Bubble Pipeline Parallelism", ICLR 2024, section 3) over this kit: every
 * rank keeps three queues (F; I or unsplit B; W) and the rank that can
 * start something earliest places one stage:
 *   - I runs as soon as it is ready, alternating with F 1F1B-style when
 *     both are ready (after an F the I goes first, after an I or W the F);
 *   - F only while the rank's in-flight microbatches (F started, W not yet
 *     ended) stay under the limit and its activation fits the memory cap
 *     (memory_cap_bytes - static_bytes[rank], when cap > 0);
 *   - W only when neither an I nor an allowed F can start at that moment,
 *     and always when the limit blocks the forwards.
 * max_inflight: 0 derives the limit from the memory cap (bytes only), or
 * P microbatches when the graph has no cap. Ties inside a queue: higher
 * priority, lower sub-microbatch, position order (forwards ascending,
 * backwards descending), stage id. With a cap, a rank admits a forward
 * only when what it holds plus the room it keeps for the remaining
 * forwards (later chunks on that rank: a V or interleaved placement) of
 * every microbatch in flight there stay under the cap, so every
 * microbatch in flight can come back through it (a banker's rule: a
 * microbatch opening on a rank reserves all its forwards there, each
 * forward then allocates out of the reservation). Forwards of a rank's
 * first chunk and of its later chunks wait in two queues that act as one,
 * so a blocked new microbatch does not hide a later chunk's forward. A
 * rank or microbatch that no order fits (its static bytes plus one
 * microbatch's forwards there over the cap) is refused before ordering.
 * When every rank with
 * work is blocked by the limit or the cap, the blocked forward leaving its
 * rank with the least memory runs anyway when it fits the cap; when it
 * does not, the order is refused (LOOM_EINFEASIBLE naming the rank, the
 * stage, the bytes and the cap) instead of exceeding it.
 * The zero-bubble interleaver and the exact interleaver's warm start both
 * run this code. Ownership as loom_ls: embedded in the caller, released
 * with loom_zb_release(). */
typedef struct loom_zb {
    loom_ls ls;
    int32_t *choice;       /* per rank: stage decided at its last update */
    int32_t *blocked_f;    /* per rank: blocked forward, or -1 */
    int32_t *open_mb;      /* per rank: microbatches in flight */
    int32_t cap_ranks;
    int32_t *open;         /* per (rank, microbatch): open stage pairs */
    int64_t cap_open;
    /* Headroom under a cap (one block, `reserve`): per (rank, microbatch)
     * the bytes of all its forwards on the rank (total) and what of them
     * is reserved but not yet allocated (pending); per rank the sum of
     * pending (held_back). */
    int64_t *reserve;
    int64_t cap_reserve;
    int64_t *total, *pending, *held_back;
} loom_zb;

/* Writes the zero-bubble order of every rank of g into out (priorities:
 * one per group, higher earlier, or NULL for group order). LOOM_EINVAL
 * (message prefixed with `who`) for a stage outside 0..n_microbatches-1
 * or a dependency cycle; LOOM_EINFEASIBLE when the order cannot go on
 * within the memory cap; LOOM_ENOMEM. */
int loom_zb_order(loom_zb *zb, const loom_host_api *host,
                  const loom_stage_graph *g, const float *priorities,
                  int64_t max_inflight, loom_schedule *out, const char *who,
                  loom_error *err);

/* Frees every scratch array of zb (host: the one it was used with). */
void loom_zb_release(loom_zb *zb, const loom_host_api *host);

#endif
