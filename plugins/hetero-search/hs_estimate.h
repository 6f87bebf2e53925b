/*
 * hs_estimate.h - hetero-search's layout space and its closed-form
 * iteration estimate, as functions testable alone.
 *
 * Estimate of one layout (docs/cost-models.md, "Per-module layouts"):
 * module m runs n_m positions (one per rank) of its GPU set; a module on
 * a set whose groups are W GPUs wide at tp_m x cp runs reps = W / (tp_m cp)
 * copies per group, each on 1/reps of the microbatch, so its stage time
 * per microbatch is t_m = C_m(tp_m, reps) / n_m, C_m the forward +
 * backward of the mean microbatch through the whole module. The modules
 * of one set share its ranks, so the set's period is the sum of their t_m;
 * sets run concurrently. With M microbatches:
 *     estimate = sum_m C_m(tp_m, reps_m) + (M - 1) * max_set period
 * (one microbatch's latency through every module, then the steady state
 * at the slowest set: a two-module disaggregated pipeline runs at the
 * slower module's throughput).
 *
 * Ownership: everything is caller-provided; nothing here allocates except
 * through the host table in loom_hs_search.
 */
#ifndef LOOM_HS_ESTIMATE_H
#define LOOM_HS_ESTIMATE_H

#include <loom/loom.h>

#define LOOM_HS_MAX_MODULES 8
#define LOOM_HS_MAX_BEST 16
#define LOOM_HS_N_TP 4 /* TP 1, 2, 4, 8 */
#define LOOM_HS_N_REPS 4 /* 1, 2, 4, 8 copies per group */

/* What the search knows about every module. */
typedef struct loom_hs_costs {
    int32_t n_modules;
    int32_t microbatches;
    int32_t cp;
    int32_t layers[LOOM_HS_MAX_MODULES];
    int32_t backbone[LOOM_HS_MAX_MODULES];  /* 1: stays on the top-level set */
    int32_t tp_ok[LOOM_HS_MAX_MODULES][LOOM_HS_N_TP]; /* 1: TP 1<<i divides its heads */
    /* C_m(TP 1<<i, reps 1<<j): forward + backward of one mean microbatch
     * (1/reps of it) through the whole module */
    double c_ms[LOOM_HS_MAX_MODULES][LOOM_HS_N_TP][LOOM_HS_N_REPS];
    /* parameters + optimizer state of the whole module per GPU at TP 1<<i */
    double static_bytes[LOOM_HS_MAX_MODULES][LOOM_HS_N_TP];
} loom_hs_costs;

typedef struct loom_hs_config {
    int32_t gpus;            /* budget */
    int32_t max_tp;          /* TP at most this (GPUs per node) */
    double memory_cap_bytes; /* static bytes per GPU at most; 0: none */
    int32_t single_layout;   /* 1: every module on the top-level layout */
} loom_hs_config;

typedef struct loom_hs_result {
    loom_module_layout layouts[LOOM_HS_MAX_MODULES];
    double estimate_ms;
    double static_bytes;     /* largest per-GPU static bytes of any rank */
    int32_t gpus;            /* GPUs the layout uses */
} loom_hs_result;

typedef struct loom_hs_stats {
    int64_t enumerated; /* layouts within the budget */
    int64_t feasible;   /* of those, fitting the memory cap */
} loom_hs_stats;

/* Index i with 1 << i == v, or -1. */
int32_t loom_hs_log2(int32_t v);

/* The estimate of `layouts` (n_modules entries; placements TOP for the
 * top-level set, COLOCATED with -1 on it, DISJOINT on their own) and
 * the largest per-GPU static bytes in *static_bytes (may be NULL).
 * Returns a negative value when a degree is outside the costed ones. */
double loom_hs_estimate(const loom_hs_costs *c, const loom_module_layout *layouts,
                        double *static_bytes);

/* Enumerates the layout space of `c` (top-level dp `dp`) within cfg and
 * (disjoint options: pp * dp a multiple of the top-level dp, so every
 * top-level replica has a whole share of the module's GPU groups)
 * keeps the k best by estimate (ties: fewer GPUs, then enumeration order)
 * in best[0..*n_best-1]. LOOM_EINFEASIBLE when none fits. */
int loom_hs_enumerate(const loom_hs_costs *c, int32_t dp, const loom_hs_config *cfg, int32_t k,
                      loom_hs_result *best, int32_t *n_best, loom_hs_stats *stats,
                      loom_error *err);

/* Measures the costs of `pb` for `it` through the cost service, then
 * loom_hs_enumerate with the problem's dp and cp. host->error messages. */
int loom_hs_search(const loom_host_api *host, loom_ctx *ctx, const loom_problem *pb,
                   const loom_iteration *it, const loom_hs_config *cfg, int32_t k,
                   loom_hs_result *best, int32_t *n_best, loom_hs_stats *stats,
                   loom_error *err);

#endif
