/*
 * cost_rules.h - the cost and memory rules that are not per layer, in one
 * place: the GPU groups of pipeline ranks (TP x CP widths, per-module
 * layouts), the static memory of a rank (parameters, gradients, optimizer
 * states, embedding shares), the bytes a weight-gradient step keeps and
 * the iteration's tail (DP x CP gradient sync, optimizer step). The graph
 * builder, the host's "loom.cost" service (what memory tuners and
 * partitioners read) and so the simulator use these rules alike
 * (docs/cost-models.md, "Rules above the layer").
 *
 * Per-layer figures come from a cost source, the pipeline's cost model
 * behind the host's loom_cost_* calls. Ownership: loom_cost_ranks holds
 * arrays its init allocates and its free releases. Units: bytes, ms.
 */
#ifndef LOOM_COST_RULES_H
#define LOOM_COST_RULES_H

#include <stdint.h>
#include <loom/cost_model.h>
#include <loom/graph.h>
#include <loom/sys/util.h>

/* Where the per-layer figures come from: the host's loom_cost_estimate,
 * loom_cost_module_extra and loom_cost_rank_tail with their context. */
typedef struct loom_cost_source {
    loom_ctx *ctx;
    int (*estimate)(loom_ctx *ctx, int32_t module, int32_t layer, const loom_shape *shape,
                    int32_t policy, loom_layer_cost *out, loom_error *err);
    int (*module_extra)(loom_ctx *ctx, int32_t module, int32_t tp, int64_t *param_bytes,
                        int64_t *state_bytes, loom_error *err);
    int (*rank_tail)(loom_ctx *ctx, const loom_rank_state *state, loom_rank_tail *out,
                     loom_error *err);
} loom_cost_source;

/* ---- GPU groups (cost_groups.c) ---------------------------------------- */

/* Module m's layout: the partition's when its partitioner chose layouts
 * (pt may be NULL), else the problem's; NULL for a single-layout problem. */
const loom_module_layout *loom_cost_layout_of(const loom_problem *pb, const loom_partition *pt,
                                              int32_t m);
/* The layout of module m when listed (by the parallel config or the
 * partitioner), else NULL. */
const loom_module_layout *loom_cost_listed_layout(const loom_problem *pb,
                                                  const loom_partition *pt, int32_t m);
/* 1 when the partition or the problem carries per-module layouts. */
int loom_cost_has_layouts(const loom_problem *pb, const loom_partition *pt);
/* TP degree of a span: its own, else its listed module layout's, else the
 * partition's, else the problem's. */
int32_t loom_cost_span_tp(const loom_problem *pb, const loom_partition *pt, const loom_span *sp);
/* CP degree of a span: its listed module layout's, else the problem's. */
int32_t loom_cost_span_cp(const loom_problem *pb, const loom_partition *pt, const loom_span *sp);
/* The disjoint module owning module m's GPUs, or -1 for the top level. */
int32_t loom_cost_owner_set(const loom_problem *pb, const loom_partition *pt, int32_t m);

/* What the rules know of a partition's ranks: their GPU groups (laid out
 * on consecutive GPUs), their chunks (positions, in flow order) and the
 * parameters static memory placed on them. */
typedef struct loom_cost_ranks {
    int32_t n_ranks;
    int64_t *gpu0;           /* [rank]: first GPU of the rank's group */
    int64_t gpus;            /* GPUs over all ranks */
    int32_t *chunk_of;       /* [position]: its index among its rank's positions */
    int32_t *rank_chunks;    /* [rank]: positions (virtual stages) on it */
    int32_t max_chunks;      /* the most positions on one rank */
    double *rank_params;     /* [rank]: parameters one GPU of the rank holds */
    double *rank_trainable;  /* [rank]: of those, the ones with gradients */
    double *pos_trainable;   /* [position]: the trainable parameters it holds */
} loom_cost_ranks;

/* Lays out the ranks' groups and numbers their chunks; parameters zero
 * until loom_cost_static_memory. */
int loom_cost_ranks_init(loom_cost_ranks *cr, const loom_problem *pb, const loom_partition *pt,
                         loom_error *err);
/* Releases what loom_cost_ranks_init allocated (safe on a zeroed one). */
void loom_cost_ranks_free(loom_cost_ranks *cr);
/* GPUs of rank r's group. */
int64_t loom_cost_rank_width(const loom_cost_ranks *cr, int32_t r);

/* The GPUs one pipeline replica holds (MFU divides by them): every rank's
 * group, except that a disjoint module's set serves all dp replicas of the
 * top-level layout, so a replica holds 1/dp of its tp x cp x pp x dp GPUs
 * whatever ranks the simulated replica gives it. */
double loom_cost_replica_gpus(const loom_cost_ranks *cr, const loom_problem *pb,
                              const loom_partition *pt);

/* ---- static memory (cost_static.c) -------------------------------------- */

/* Static bytes one GPU holds for span sp into *bytes (its layers'
 * parameters and states, plus the embedding or head share when it holds a
 * module's first or last layer, halved when it holds only one end); adds
 * the parameters that is to *params and the trainable ones to *trainable
 * and *trainable2 (each may be NULL). pt may be NULL: the problem's
 * layouts. */
int loom_cost_span_static(const loom_cost_source *src, const loom_problem *pb,
                          const loom_partition *pt, const loom_span *sp, int64_t *bytes,
                          double *params, double *trainable, double *trainable2,
                          loom_error *err);
/* Every rank's static bytes into static_bytes[rank] (added to what is
 * there) and the parameters it holds into cr. */
int loom_cost_static_memory(loom_cost_ranks *cr, const loom_cost_source *src,
                            const loom_problem *pb, const loom_partition *pt,
                            int64_t *static_bytes, loom_error *err);

/* ---- what the weight-gradient step keeps (cost_keep.c) ------------------ */

/* Bytes a layer's W stage keeps after its I for `tokens` tokens at TP tp,
 * `element` bytes an element, at most `stored` (what the policy stores). */
int64_t loom_cost_weight_kept_bytes(const loom_layer *ly, int64_t tokens, int32_t tp,
                                    double element, int64_t stored);

/* ---- layers that cost what a layer already priced costs (cost_repeat.c) */

/* The last layer inside its module (neither its first layer, which the
 * embedding prices, nor its last, the LM head's) that a cost model
 * reading a layer only through its members and first/last role
 * (LOOM_COST_READS_LAYER_FIELDS) priced, with what it costs. A layer of
 * the same module with equal members, also inside it, priced under an
 * equal shape costs the same. Zero it to start. */
typedef struct loom_cost_layer_memo {
    int valid;
    int32_t module, layer;
    loom_shape shape;
    loom_policy_option opt[LOOM_POLICY_COUNT];
    double rflops[LOOM_POLICY_COUNT];
    int64_t keep[LOOM_POLICY_COUNT];
    double flops;   /* model FLOPs of one copy of the layer (policy none) */
    double comm[2]; /* exposed TP communication of its forward, input gradient */
    double element; /* bytes per activation element */
} loom_cost_layer_memo;

/* 1 when `layer` is inside its module (neither first nor last). */
int loom_cost_layer_inside(const loom_module *mod, int32_t layer);
/* 1, with the memo's options, recomputation FLOPs and kept bytes (per
 * policy) in opt, rflops and keep, when layer `layer` of `module` under
 * `shape` costs what the memo holds; else 0. */
int loom_cost_memo_get(const loom_cost_layer_memo *m, const loom_model *model, int32_t module,
                       int32_t layer, const loom_shape *shape, loom_policy_option *opt,
                       double *rflops, int64_t *keep);
/* Holds layer `layer` of `module` under `shape` and its costs when the
 * layer is inside its module; else leaves the memo as it is. */
void loom_cost_memo_put(loom_cost_layer_memo *m, const loom_model *model, int32_t module,
                        int32_t layer, const loom_shape *shape, const loom_policy_option *opt,
                        const double *rflops, const int64_t *keep, double flops,
                        const double *comm, double element);

/* ---- the iteration's tail (cost_tail.c) --------------------------------- */

/* What rank r's tail is computed from: its DP x CP group and the
 * parameters cr holds for it. */
void loom_cost_rank_state(const loom_cost_ranks *cr, const loom_problem *pb,
                          const loom_partition *pt, int32_t r, loom_rank_state *st);
/* Every rank's tail and each chunk's share of its trainable parameters
 * into g (tail arrays allocated by loom_graph_alloc_tail). */
int loom_cost_iteration_tail(const loom_cost_ranks *cr, const loom_cost_source *src,
                             const loom_problem *pb, const loom_partition *pt,
                             loom_stage_graph *g, loom_error *err);

#endif
