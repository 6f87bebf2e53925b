/*
 * <loom/kits/memtune.h> - the memory-tuning kit (CMake target
 * loom_kit_memtune, Loom::kit_memtune when installed): the machinery the
 * memory tuners (greedy, knapsack, ilp) share:
 *
 *   - a memory timeline: where every stage pair's activations are
 *     allocated (its F) and freed (its B, or its W when backward is split)
 *     in its rank's order. The simulator runs each rank's list one stage
 *     after another, so a rank's memory at any moment is a prefix sum over
 *     that list: the peak depends on the order and the chosen bytes only,
 *     never on the durations, and a memory tuner (which leaves the order
 *     alone) can recompute it exactly without simulating;
 *   - a greedy descent over "units" that each walk a chain of ever more
 *     frugal states (layer entries through their policies, or pairs
 *     through their knapsack candidates);
 *   - applying per-entry policies to a private copy of the durations and
 *     deltas and replaying it with the "loom.simulator" service.
 *
 * Ownership: every struct here is owned by its caller; *_free releases
 * what *_reserve / *_build allocated through the host's allocator. Graphs
 * and schedules are borrowed read-only.
 * Units: bytes, milliseconds.
 */
#ifndef LOOM_KITS_MEMTUNE_H
#define LOOM_KITS_MEMTUNE_H

#include <loom/loom.h>

/* ---- memory timeline ----------------------------------------------------- */

typedef struct loom_mt_timeline {
    int32_t n_ranks, n_pairs, n_slots;
    int32_t *pair_rank;      /* per pair */
    int32_t *pair_open;      /* per pair: slot of its F in sched->order */
    int32_t *pair_close;     /* per pair: slot of its release (B or W) */
    int32_t *rank_off;       /* n_ranks + 1: the schedule's rank offsets */
    int32_t *slot_open;      /* per slot: pair allocated there, or -1 */
    int32_t *slot_close;     /* per slot: first pair freed there, or -1 */
    int32_t *close_next;     /* per pair: next pair freed at its slot, -1 */
    int32_t *rank_pair_off;  /* n_ranks + 1 */
    int32_t *rank_pairs;     /* pairs of each rank by opening slot */
    int32_t *close_prefix;   /* per rank_pairs entry: the latest close
                                slot among the rank's pairs up to it */
    int64_t *peak_bytes;     /* per rank: last computed activation peak */
    int32_t *peak_slot;      /* per rank: slot first reaching it, -1 none */
    int32_t *stage_slot;     /* per stage (scratch) */
    int32_t cap_ranks, cap_pairs, cap_slots, cap_stages;
} loom_mt_timeline;

/* Builds the timeline of `sched` over `g` (reusing t's arrays). LOOM_EINVAL
 * when the schedule does not list every stage once on its own rank, or a
 * pair's release comes before its F. */
int loom_mt_timeline_build(const loom_host_api *host, loom_mt_timeline *t,
                           const loom_stage_graph *g,
                           const loom_schedule *sched, loom_error *err);
/* Releases the timeline's arrays (host allocator) and zeroes it. */
void loom_mt_timeline_free(const loom_host_api *host, loom_mt_timeline *t);

/* Recomputes rank r's activation peak (peak_bytes, and peak_slot: the
 * first slot reaching it, -1 when memory never rises above 0) for the
 * per-pair activation bytes `pair_bytes`; returns the peak. One pass over
 * the rank's slots. */
int64_t loom_mt_rank_peak(loom_mt_timeline *t, int32_t r,
                          const int64_t *pair_bytes);

/* The activation bytes of every pair under `policies` (one per layer
 * entry) into pair_bytes[] (n_pairs), and the recomputation each rank adds
 * (backward under the policies less under none) into rank_ms[] (n_ranks);
 * returns the busiest rank's. */
double loom_mt_policy_costs(const loom_stage_graph *g, const uint8_t *policies,
                            int64_t *pair_bytes, double *rank_ms);

/* The first rank whose static bytes plus activation peak (for the
 * per-pair bytes `pair_bytes`, loom_mt_rank_peak) exceed g's memory cap,
 * with the bytes it is over in *short_bytes; -1 when every rank fits. */
int32_t loom_mt_first_over_cap(loom_mt_timeline *t, const loom_stage_graph *g,
                               const int64_t *pair_bytes, double *short_bytes);

/* The first entry of rank r's pairs (t->rank_pairs, in opening order)
 * that may be live at `slot`: every entry before it is freed at or before
 * the slot (its close_prefix does not pass it). */
int32_t loom_mt_live_from(const loom_mt_timeline *t, int32_t r, int32_t slot);
/* Writes to out the pairs of rank r live at `slot` (allocated at or
 * before it, freed after it) and returns how many (<= pairs of r). */
int32_t loom_mt_live_pairs(const loom_mt_timeline *t, int32_t r, int32_t slot,
                           int32_t *out);

/* 1 when `slot` of rank r is a local maximum of memory: it allocates a
 * pair and the next slot of the rank (if any) frees one or allocates
 * nothing. Only these slots can hold a rank's peak. */
int loom_mt_is_crest(const loom_mt_timeline *t, int32_t r, int32_t slot);

/* ---- greedy descent -------------------------------------------------------- */

/* Units, each a chain of states ordered from fastest to most frugal with
 * strictly decreasing bytes. Pair p owns units pair_unit_off[p] ..
 * pair_unit_off[p+1]-1; unit u's states are chain_off[u] ..
 * chain_end[u]-1 and it currently sits at state[u] (0-based within its
 * chain). Units may share one chain's states (the same chain_off). Where
 * each unit's chain follows the previous one, chain_end may be NULL: then
 * chain_off holds n_units + 1 entries and a chain ends where the next
 * starts (chain_end = chain_off + 1). A pair's bytes are the sum of its
 * units' current bytes. */
typedef struct loom_mt_units {
    int32_t n_pairs;
    const int32_t *pair_unit_off; /* n_pairs + 1 */
    const int32_t *chain_off;     /* per unit: its first state */
    const double *chain_ms;       /* per state */
    const int64_t *chain_bytes;   /* per state */
    int32_t *state;               /* per unit, updated by the descent */
    const int32_t *chain_end;     /* per unit: one past its last state;
                                     NULL: chain_off + 1 */
} loom_mt_units;

/* One entry of the descent's heap: a live pair and its cached best move,
 * copied in so that comparisons touch only the heap. */
typedef struct loom_mt_move {
    double key;      /* bytes per ms added, or bytes saved when free */
    int32_t unit;    /* the unit that moves */
    int32_t pair;    /* pair * 2 + 1 when the move adds no time, else * 2 */
} loom_mt_move;

/* A pair's cached best next move, in one record so that a move reads
 * one cache line of it. */
typedef struct loom_mt_pair_best {
    double key;      /* bytes per ms that move adds, or the bytes it saves
                        when it adds no time */
    int64_t saved;   /* bytes that move saves */
    int32_t unit;    /* the unit that moves, or -1 */
    uint32_t epoch;  /* the descent epoch this was computed in */
    uint8_t is_free; /* 1 when that move adds no time */
} loom_mt_pair_best;

/* Scratch of the descent, grown on demand. Each pair caches its best
 * next move, computed when the pair is first live at a slot being fixed
 * and recomputed only when one of its units moves. */
typedef struct loom_mt_descent {
    int32_t *next;         /* per rank_pairs entry (+ 1): itself while its
                              pair may still move in this descent, else a
                              link towards the next that may */
    loom_mt_move *heap;    /* the live pairs that can still move */
    loom_mt_pair_best *best; /* per pair: its cached best move */
    uint32_t epoch;        /* bumped by every loom_mt_descend call */
    int32_t cap_live;
    /* A rank's memory over its slots as a tree of maxima (range add, the
     * first slot of the maximum), built once a rank has had
     * LOOM_MT_RESCANS peaks fixed, so that a rank of thousands of peaks
     * over the cap is not rescanned for each: 2 * peak_leaves entries. */
    int64_t *peak_max, *peak_add;
    int64_t *peak_diff;    /* peak_leaves + 1: a batch of range adds as
                              differences over the slots it spans */
    int32_t peak_leaves, cap_peak;
    /* The moves made while fixing one slot, added to the tree in one
     * batch before its next peak is read: pair and bytes changed. */
    int32_t *moved_pair;
    int64_t *moved_bytes;
    int32_t n_moved;
    int32_t batch_span;    /* slots a batch may span per move and still be
                              added slot by slot; 0: 32, negative: never
                              (range by range) */
    int32_t rescans;       /* peaks a rank fixes by rescanning before the
                              tree takes over; 0: 8, or 2 on a rank of
                              16384 slots or more (mt_descent.c) */
} loom_mt_descent;

/* For every rank whose static bytes plus activation peak exceed `cap`
 * (> 0): takes the peak slot and repeatedly moves the unit with the best
 * bytes-saved per ms-added ratio among the units of the pairs live there
 * to its next state (a move that adds no time ranks first, then by bytes
 * saved; ties go to the lower unit), updating pair_bytes, until that slot
 * fits; then the next peak, until the rank fits.
 * `only_rank` >= 0 restricts the work to that rank. LOOM_EINFEASIBLE
 * naming the rank and the bytes short when no live unit can move; *moves
 * (may be NULL) counts the moves made. */
int loom_mt_descend(const loom_host_api *host, loom_mt_descent *d,
                    loom_mt_timeline *t, const loom_stage_graph *g,
                    loom_mt_units *u, int64_t *pair_bytes, int32_t only_rank,
                    const char *who, int64_t *moves, loom_error *err);
/* Releases the descent's scratch (host allocator) and zeroes it. */
void loom_mt_descent_free(const loom_host_api *host, loom_mt_descent *d);

/* ---- per-layer policy chains (the greedy tuner's units) ------------------- */

/* Every layer entry as a unit whose chain starts at NONE and steps to the
 * policy with the most bytes strictly below the current one (ties: less
 * time, then the lower policy), until none is left. Offload enters the
 * chains only when asked for (loom_mt_entry_chains_build_policies). */
typedef struct loom_mt_entry_chains {
    int32_t *chain_off;   /* per entry: its chain's first state; entries
                             with the same options share one chain; at
                             n_layer_entries: the states stored */
    int32_t *chain_end;   /* per entry: one past its chain's last state */
    double *chain_ms;     /* per chain state */
    int64_t *chain_bytes; /* per chain state */
    uint8_t *chain_pol;   /* per chain state: the policy */
    int32_t *state;       /* per entry, all 0 after building */
    int64_t *pair_bytes;  /* per pair: bytes at the current states */
    int32_t cap_entries, cap_pairs;
} loom_mt_entry_chains;

/* Builds the chains of g's entries over the recomputation policies
 * (none, selective, full), every entry at NONE. */
int loom_mt_entry_chains_build(const loom_host_api *host,
                               loom_mt_entry_chains *c,
                               const loom_stage_graph *g, loom_error *err);
/* The same over the first n_policies policies (LOOM_POLICY_COUNT: offload
 * too; a value outside 1..LOOM_POLICY_COUNT means the recomputation ones). */
int loom_mt_entry_chains_build_policies(const loom_host_api *host,
                                        loom_mt_entry_chains *c,
                                        const loom_stage_graph *g,
                                        int n_policies, loom_error *err);
/* Releases the chains' arrays (host allocator) and zeroes them. */
void loom_mt_entry_chains_free(const loom_host_api *host,
                               loom_mt_entry_chains *c);

/* The units view of the chains (pair p owns entries pair_layer_off[p]..). */
loom_mt_units loom_mt_entry_units(loom_mt_entry_chains *c,
                                  const loom_stage_graph *g);

/* loom_mt_materialise_fn for entry chains (user = the chains; u may be
 * NULL since the chains hold the states). */
void loom_mt_entry_materialise(void *user, const loom_stage_graph *g,
                               const loom_mt_units *u, uint8_t *policies);

/* Total latency (forward + backward of every entry) at the current states. */
double loom_mt_entry_total_ms(const loom_mt_entry_chains *c,
                              const loom_stage_graph *g);

/* ---- applying policies and simulating ------------------------------------- */

/* A stage graph that shares everything with its source except the stage
 * durations and memory deltas, which it owns (so policies can be applied
 * without touching the host's graph). */
typedef struct loom_mt_view {
    loom_stage_graph graph;
    double *duration_ms;
    int64_t *mem_delta_bytes;
    int64_t *peak_bytes;     /* per rank, for the simulator's report */
    int32_t cap_stages, cap_ranks;
} loom_mt_view;

/* Points v at g with the durations and deltas of `policies` (one per layer
 * entry) applied, summed per pair as the host does. */
int loom_mt_view_apply(const loom_host_api *host, loom_mt_view *v,
                       const loom_stage_graph *g, const uint8_t *policies,
                       loom_error *err);
/* Releases the view's own arrays (host allocator); the shared graph
 * arrays stay the source's. */
void loom_mt_view_free(const loom_host_api *host, loom_mt_view *v);

/* Activation bytes of layer entry e under policy pol. */
int64_t loom_mt_entry_bytes(const loom_stage_graph *g, int32_t e, int pol);
/* Forward + backward milliseconds of layer entry e under policy pol. */
double loom_mt_entry_ms(const loom_stage_graph *g, int32_t e, int pol);

/* Replays v's graph with `sched` through the simulator service (scratch
 * created by the caller) and fills m (with per-rank peaks in
 * v->peak_bytes). Errors of the simulator are passed on. */
int loom_mt_simulate(const loom_simulator_service *sim,
                     loom_sim_scratch *scratch, loom_mt_view *v,
                     const loom_schedule *sched, loom_metrics *m,
                     loom_error *err);

/* ---- the tuning loop shared by the tuners ---------------------------------- */

/* Writes the per-entry policies that the units' current states stand for
 * (g->n_layer_entries entries). */
typedef void (*loom_mt_materialise_fn)(void *user, const loom_stage_graph *g,
                                       const loom_mt_units *u,
                                       uint8_t *policies);

/* Everything one tuner instance reuses across calls. */
typedef struct loom_mt_driver {
    const loom_simulator_service *sim; /* NULL: timeline only */
    loom_sim_scratch *scratch;         /* NULL until the first confirmation */
    loom_mt_timeline tl;
    loom_mt_descent desc;
    loom_mt_view view;
    int descended;   /* last run: 1 when some rank was over the cap */
    int64_t moves;   /* last run: descent moves */
} loom_mt_driver;

/* Looks up the simulator service (d is zeroed first; without the service
 * the driver works from the timeline alone and nothing is confirmed). The
 * simulator's scratch is created by the first confirmation. */
void loom_mt_driver_init(const loom_host_api *host, loom_ctx *ctx, loom_mt_driver *d);
/* Releases everything the driver holds (timeline, descent, view and the
 * simulator scratch) and zeroes it. */
void loom_mt_driver_free(const loom_host_api *host, loom_mt_driver *d);

/* The tuning loop: builds the memory timeline of the schedule (d->tl);
 * for each rank whose peak with every unit at its current state is over
 * the cap, runs loom_mt_descend on it; then writes the resulting policies.
 * The timeline's peaks are exact (memory depends on the order and the
 * bytes only), so the descent's result fits without simulating. Without a
 * cap nothing moves. LOOM_EINFEASIBLE from the descent. */
int loom_mt_driver_run(const loom_host_api *host, loom_mt_driver *d,
                       const loom_stage_graph *g, const loom_schedule *sched,
                       loom_mt_units *u, int64_t *pair_bytes,
                       loom_mt_materialise_fn materialise, void *user,
                       uint8_t *policies, const char *who, loom_error *err);

/* Simulates `policies` (when the simulator service is there) and fails
 * with LOOM_EPLUGIN naming `who` when a rank is still over the cap. */
int loom_mt_driver_confirm(const loom_host_api *host, loom_mt_driver *d,
                           const loom_stage_graph *g,
                           const loom_schedule *sched,
                           const uint8_t *policies, const char *who,
                           loom_error *err);

/* Checks that g carries per-layer options and that sched and policies are
 * there; LOOM_EINVAL naming `who` otherwise. */
int loom_mt_check_inputs(const loom_host_api *host, const loom_stage_graph *g,
                         const loom_schedule *sched, const uint8_t *policies,
                         const char *who, loom_error *err);

/* ---- offload ----------------------------------------------------------------- */

/* The param-table entry of the bool param `offload` (kept in `field` of
 * `conf`) of the tuners that may offload. */
#define LOOM_MT_OFFLOAD_PARAM(conf, field)                                     \
    LOOM_BOOL_PARAM_AT("offload", conf, field, 0,                              \
                       "let each layer also offload its activations to host memory (policy " \
                       "offload: what full recomputation would drop goes to the host after " \
                       "the forward and returns before the backward at the cluster's " \
                       "host_bytes_per_s, overlapped with the layer's compute); the offload " \
                       "answer is kept only when it simulates faster than the " \
                       "recomputation-only one; a cluster without host_bytes_per_s is an error")

/* The check of a tuner's bool param `offload` (read with its param
 * table): when `on` is 1 and the host already knows the problem, checks it
 * with loom_mt_offload_check; LOOM_OK otherwise. */
int loom_mt_offload_ready(const loom_host_api *host, loom_ctx *ctx, const char *who, int on,
                          loom_error *err);

/* LOOM_EINVAL naming `who`, params.offload and the cluster field
 * host_bytes_per_s when pb's cluster has no host bandwidth (or pb has no
 * cluster); LOOM_OK otherwise. */
int loom_mt_offload_check(const loom_host_api *host, const loom_problem *pb,
                          const char *who, loom_error *err);

/* Of a recomputation-only answer (`recompute`, status rc_recompute) and
 * one that may offload (already in `policies`, status rc_offload) for the
 * same graph and order, leaves in `policies` the offload answer only when
 * it is strictly faster (simulated makespan; total latency without the
 * simulator service), else the recomputation one; a failed answer loses
 * to one that succeeded, and when both failed rc_offload is returned. So
 * a tuner with offload is never slower than without it on that order. */
int loom_mt_offload_pick(const loom_host_api *host, loom_mt_driver *d,
                         const loom_stage_graph *g, const loom_schedule *sched,
                         int rc_recompute, const uint8_t *recompute, int rc_offload,
                         uint8_t *policies, const char *who, loom_error *err);

#endif
