/*
 * <loom/kits/layout.h> - the layout kit (CMake target loom_kit_layout,
 * Loom::kit_layout when installed): what the layer-split partitioners
 * (uniform, balanced-dp, frozen-aware) share: writing one mixed flow from
 * per-position layer counts, and assigning an iteration's samples to
 * microbatches.
 *
 * Ownership: the partition is the caller's (the host's candidate); the
 * model and iteration are borrowed read-only. Errors go through
 * host->error, prefixed with `who` (the plugin's name).
 */
#ifndef LOOM_KITS_LAYOUT_H
#define LOOM_KITS_LAYOUT_H

#include <loom/loom.h>

/* Fills the single flow, positions and spans of `part`: position s runs
 * on rank s % pp (chunk s / pp) and takes the next sizes[s] layers of all
 * modules concatenated in module order, one span per module it touches.
 * The flow's module is the only module with layers, else -1. LOOM_EINVAL
 * when the candidate has too little room or the sizes ask for more layers
 * than the model has. */
int loom_lk_layout(const loom_host_api *host, const char *who,
                   const loom_model *model, int32_t pp, int32_t n_pos,
                   const int32_t *sizes, loom_partition *part,
                   loom_error *err);

/* Re-places the positions of part's single flow written by
 * loom_lk_layout: "loop" keeps position s on rank s % pp, "zigzag" and
 * "v" put it on loom_placement_rank() (odd chunks reversed, so the flow
 * turns on the last and the first rank), "v" only with two positions per
 * rank. Chunk order on a rank follows the positions. LOOM_EINVAL naming
 * params.placement for an unknown name or a "v" without 2 * pp
 * positions. */
int loom_lk_place(const loom_host_api *host, const char *who, const char *placement,
                  int32_t pp, loom_partition *part, loom_error *err);

/* Assigns samples to `microbatches` microbatches: the workload's packing
 * when a sample names one (which must be < microbatches), else sample i
 * goes to i * microbatches / n_samples. Every module sees every sample;
 * one sub-microbatch per microbatch. LOOM_EINVAL naming the sample for a
 * packing out of range. */
int loom_lk_assign_samples(const loom_host_api *host, const char *who,
                           const loom_model *model, const loom_iteration *it,
                           int32_t microbatches, loom_partition *part,
                           loom_error *err);

/* The virtual-stage counts V a Megatron-LM user can run an n_layers model
 * with on pp ranks: 1, and every V >= 2 for which the layers
 * divide into pp * V equal chunks (n_layers % (pp * V) == 0) and the
 * interleaved schedule's microbatches % pp == 0 holds. Writes at most cap
 * of them to out, ascending, and returns the count (0 when pp < 1 or the
 * model has fewer than pp layers). */
int32_t loom_lk_vpp_options(int64_t n_layers, int32_t pp, int32_t microbatches, int32_t *out,
                            int32_t cap);

/* The virtual-stage counts a layer-splitting partitioner emits one
 * candidate for on a model problem: parallel.vpp (1 when unset) alone, or
 * with `sweep` every loom_lk_vpp_options count (vpp 1 when there is none,
 * so that its error is the one reported). Writes at most cap (>= 1) of
 * them to out and returns the count. */
int32_t loom_lk_vpp_candidates(const loom_problem *problem, int sweep, int32_t *out,
                               int32_t cap);

/* ---- simulated refinement of a split (refine.c) ---------------------- */

/* How good one split is: fewer ranks over the memory cap first, then the
 * shorter simulated makespan. */
typedef struct loom_lk_split_score {
    int32_t cap_violations;
    double makespan_ms;
} loom_lk_split_score;

/* The search's budget, scorer and results. */
typedef struct loom_lk_refine {
    int32_t max_evaluations;  /* scorer calls at most, the first split's included */
    /* Scores the split sizes[n_pos] (caller's code: build, simulate). */
    int (*score)(void *user, const int32_t *sizes, loom_lk_split_score *out, loom_error *err);
    int (*stop)(void *user);  /* may be NULL; 1: stop now (deadline, SIGINT) */
    void *user;
    /* out: */
    int32_t evaluations;      /* scorer calls made */
    int32_t moves;            /* layer moves kept */
    loom_lk_split_score initial, best; /* the first split's score, the kept one's */
} loom_lk_refine;

/* Refines the layer split sizes[n_pos] in place by local search, as
 * PyTorch's pipeline auto-partitioner (pytorch/pytorch PR #179212) refines
 * its min-max split: one layer at a time moves across a boundary of a
 * position, the heaviest position (by layer_weight, the weights the split
 * balanced) first, its first layer to the position before and its last
 * to the one after, then the next heaviest; the first move whose split
 * scores strictly better is kept and the search restarts from it, never
 * undoing the move just kept. Stops when no move improves, after
 * r->max_evaluations scorer calls (the starting split's included; < 1
 * scores nothing) or when r->stop says so, with sizes the best split
 * scored. No position loses its last layer. scratch and load hold n_pos
 * entries each. Returns LOOM_OK or the scorer's error (sizes then the best
 * split before the failing call). */
int loom_lk_refine_split(const double *layer_weight, int32_t n_pos, int32_t *sizes,
                         int32_t *scratch, double *load, loom_lk_refine *r, loom_error *err);

/* A partition of the problem's model with room for one flow of n_pos
 * positions and n_samples samples (sample_mb -1, subs 1, attention scale
 * 1), allocated through host->alloc, for a partitioner that scores
 * layouts outside the candidate set (another iteration's samples). Free
 * with loom_lk_partition_free; NULL when out of memory. */
loom_partition *loom_lk_partition_new(const loom_host_api *host, const loom_problem *problem,
                                      int32_t n_pos, int32_t n_samples);

/* Frees a partition from loom_lk_partition_new (NULL is ignored). */
void loom_lk_partition_free(const loom_host_api *host, loom_partition *p);

/* Ranks and positions of one module in a partition laid out from
 * per-module layouts (loom_lk_module_layouts). */
typedef struct loom_lk_module_place {
    int32_t first_rank; /* first pipeline rank of the module's flow */
    int32_t n_pos;      /* positions (one per rank) of its flow */
    int32_t set;        /* -1: the top-level GPUs, else the disjoint module owning them */
} loom_lk_module_place;

/* Lays per-module layouts out (docs/cost-models.md,
 * "Per-module layouts"): one flow per module in model (topological)
 * order, consuming its upstream modules' flows, its layers split evenly
 * over its positions, one position per rank, spans at TP 0 (the graph
 * builder takes the module's layout). The top-level layout is that of
 * the first entry with placement LOOM_LAYOUT_TOP (its tp, pp and dp;
 * the problem's when none): its GPUs are ranks 0 .. pp-1, the partition's
 * tp its tp. A module on them (unlisted or colocated there) has
 * min(pp, layers) positions on ranks 0 ... A disjoint module gets new ranks
 * after every earlier set: round(pp_m * dp_m / dp) positions (its share
 * of GPU groups per top-level pipeline replica, DistTrain's T_m), clamped
 * to [1, layers]. A module colocated with a disjoint one runs on that
 * module's ranks. Samples as loom_lk_assign_samples with `microbatches`.
 * places (may be NULL) gets each module's entry. LOOM_EINVAL when the
 * layouts (model->n_modules entries, e.g. the problem's or a search's)
 * are copied into the partition's layouts when it has room, so the graph
 * builder costs the partition with them. LOOM_EINVAL when layouts is NULL
 * or the candidate has too little room. */
int loom_lk_module_layouts(const loom_host_api *host, const char *who,
                           const loom_problem *problem, const loom_module_layout *layouts,
                           const loom_iteration *it,
                           int32_t microbatches, loom_partition *part,
                           loom_lk_module_place *places, loom_error *err);

/* The param-table entry of the bool param vpp_sweep (kept in `field` of
 * `conf`) of the partitioners that sweep loom_lk_vpp_options. */
#define LOOM_LK_VPP_SWEEP_PARAM(conf, field)                                   \
    LOOM_BOOL_PARAM_AT("vpp_sweep", conf, field, 0,                            \
                       "one candidate per virtual-stage count a Megatron-LM user can choose: " \
                       "1 and every V with layers % (pp * V) == 0 and microbatches % pp == 0 " \
                       "(instead of parallel.vpp alone)")

#endif
