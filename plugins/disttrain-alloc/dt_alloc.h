/*
 * dt_alloc.h - DistTrain's disaggregated model orchestration (DistTrain
 * §5, Algorithm 1) as pure functions, so each step can be tested alone:
 *
 *   - the iteration-time model: warm-up (Eq. 1) plus steady state (Eq. 5);
 *   - the per-module memory lower bound on GPUs (§5.1, ZeRO-1 + 1F1B);
 *   - the relaxed GPU split x, y, z (closed form, or bisection when a
 *     memory bound binds) that replaces the paper's convex solver;
 *   - the exact integer PP choice for one TP x DP candidate (greedy on the
 *     bottleneck module, optimal for this min-max objective);
 *   - the search over TP in {1,2,4,8} and DP dividing the global batch,
 *     ranked by integer-feasible iteration time with a deterministic
 *     tie-break (fewest GPUs, then fewest PP stages, then enumeration
 *     order).
 *
 * The three units are the modality encoder, the LLM backbone and the
 * modality generator; the encoder and generator may be absent.
 *
 * Ownership: every pointer is caller-provided; nothing here allocates.
 * Units: times in milliseconds, sizes in bytes.
 */
#ifndef LOOM_DT_ALLOC_H
#define LOOM_DT_ALLOC_H

#include <loom/common.h>

#define LOOM_DT_UNITS 3
enum loom_dt_unit_index { LOOM_DT_ENC = 0, LOOM_DT_LLM = 1, LOOM_DT_GEN = 2 };

/* TP candidates are 1, 2, 4 and 8: index i stands for TP 1 << i. */
#define LOOM_DT_N_TP 4

/* What the allocator knows about one module. */
typedef struct loom_dt_unit {
    int32_t present;    /* 0: the module does not exist (x or z = 0) */
    int32_t max_pp;     /* PP stages at most (the module's layer count) */
    /* C_m(TP): forward + backward time of one LLM microbatch's data
     * through the whole module at TP = 1 << i; < 0 or NaN: not usable. */
    double c_ms[LOOM_DT_N_TP];
    double param_bytes; /* P: parameter + gradient bytes of the module */
    double state_bytes; /* S: optimizer bytes, sharded over its GPUs */
    double act_bytes;   /* L: activations of one LLM microbatch through the
                           whole module at TP 1 */
} loom_dt_unit;

typedef struct loom_dt_config {
    int32_t gpus;              /* N: GPUs to allocate */
    int32_t global_batch;      /* BS: LLM microbatches over all DP groups */
    int32_t max_tp;            /* TP at most this (GPUs per node) */
    int32_t vpp;               /* interleaved chunks; warm-up / vpp */
    int32_t dp_above_backbone; /* 1: allow DP_me or DP_mg > DP_lm */
    int32_t min_dp_llm;        /* DP_lm at least this (0 or 1: any) */
    double gpu_bytes;          /* M: memory per GPU; 0 = unconstrained */
    int32_t zero1;             /* memory bound: see loom_dt_min_gpus */
} loom_dt_config;

/* One integer-feasible plan. Absent units have zeros everywhere. */
typedef struct loom_dt_plan {
    int32_t tp[LOOM_DT_UNITS];
    int32_t dp[LOOM_DT_UNITS];
    int32_t pp[LOOM_DT_UNITS];
    int32_t gpus[LOOM_DT_UNITS];     /* x, y, z = tp * dp * pp */
    double stage_ms[LOOM_DT_UNITS];  /* T_m: one stage, one microbatch */
    double warmup_ms;                /* Eq. 1 (divided by vpp) */
    double steady_ms;                /* Eq. 5 */
    double iter_ms;                  /* warmup_ms + steady_ms */
} loom_dt_plan;

typedef struct loom_dt_stats {
    int64_t parallelisms; /* TP x DP combinations enumerated */
    int64_t solved;       /* integer subproblems solved */
    int64_t feasible;     /* of those, feasible */
    int64_t pruned;       /* skipped: lower bound no better than the k-th */
} loom_dt_stats;

/* Greatest common divisor (0 when both are 0): the number of
 * communication brokers between units with DP sizes a and b (§7). */
int32_t loom_dt_gcd(int32_t a, int32_t b);

/* Writes the divisors of n (n >= 1) in ascending order into out (room for
 * cap) and returns how many there are (may exceed cap; only cap written). */
int32_t loom_dt_divisors(int32_t n, int32_t *out, int32_t cap);

/* T_m = DP_lm * TP_m * C_m(TP_m) / gpus: one stage's time for one
 * microbatch when the module runs on `gpus` GPUs (continuous or whole). */
double loom_dt_stage_ms(const loom_dt_unit *u, int32_t tp, int32_t dp_llm,
                        double gpus);

/* Eq. 1 divided by vpp: C_lm + (DP_lm/DP_me) C_me + (DP_lm/DP_mg) C_mg. */
double loom_dt_warmup_ms(const loom_dt_unit u[LOOM_DT_UNITS],
                         const int32_t tp[LOOM_DT_UNITS],
                         const int32_t dp[LOOM_DT_UNITS], int32_t vpp);

/* Eq. 1 + Eq. 5: warm-up plus max_m T_m * (BS / DP_lm - 1) for the GPU
 * counts `gpus` (absent units ignored). */
double loom_dt_iter_ms(const loom_dt_unit u[LOOM_DT_UNITS],
                       const int32_t tp[LOOM_DT_UNITS],
                       const int32_t dp[LOOM_DT_UNITS],
                       const double gpus[LOOM_DT_UNITS], int32_t global_batch,
                       int32_t vpp);

/* Fewest GPUs module u needs with (tp, dp) when the backbone has dp_llm,
 * act = (DP_lm/DP) * L / TP being the peak activations of the first 1F1B
 * stage. zero1 (DistTrain §5.1, ZeRO-1 over the module's GPUs):
 * (DP*P + S) / (M - act). Otherwise every rank holds the parameters,
 * gradients and optimizer state of its layers, as Loom's simulator
 * charges them (S then already divided by any sharding the caller
 * knows), on the rank count one backbone pipeline sees:
 * max(DP, DP_lm) (P + S) / (M - act). gpu_bytes 0: no bound (0).
 * LOOM_EINFEASIBLE when act >= M. */
int loom_dt_min_gpus(const loom_dt_unit *u, int32_t tp, int32_t dp,
                     int32_t dp_llm, double gpu_bytes, int zero1,
                     double *min_gpus);

/* The relaxed subproblem for fixed TP and DP: continuous x, y, z >= the
 * lower bounds min_gpus with x + y + z <= n minimising max_m T_m. Without
 * binding bounds x:y:z = b:a:c and the bottleneck is (a+b+c)/n; otherwise
 * bisection on the bottleneck. Fills gpus_out and *bottleneck_ms;
 * LOOM_EINFEASIBLE when the bounds alone exceed n. */
int loom_dt_relaxed(const loom_dt_unit u[LOOM_DT_UNITS],
                    const int32_t tp[LOOM_DT_UNITS],
                    const int32_t dp[LOOM_DT_UNITS],
                    const double min_gpus[LOOM_DT_UNITS], int32_t n,
                    double gpus_out[LOOM_DT_UNITS], double *bottleneck_ms);

/* The integer subproblem: PP_m in [pp_min[m], u[m].max_pp] with
 * sum TP_m DP_m PP_m <= n minimising max_m T_m, and among the optimal
 * choices the fewest GPUs. Greedy: raise the bottleneck module's PP while
 * GPUs remain (every module is then at the least PP any better plan needs,
 * so the result is optimal), then lower any PP not needed for the final
 * bottleneck. LOOM_EINFEASIBLE when even pp_min does not fit. */
int loom_dt_integer(const loom_dt_unit u[LOOM_DT_UNITS],
                    const int32_t tp[LOOM_DT_UNITS],
                    const int32_t dp[LOOM_DT_UNITS],
                    const int32_t pp_min[LOOM_DT_UNITS], int32_t n,
                    int32_t pp_out[LOOM_DT_UNITS], double *bottleneck_ms);

/* Fills plan (stage times, warm-up, steady, total) from its tp, dp, pp. */
void loom_dt_plan_eval(const loom_dt_unit u[LOOM_DT_UNITS],
                       int32_t global_batch, int32_t vpp, loom_dt_plan *plan);

/* 1 when plan a ranks before b: lower iteration time (relative tolerance
 * 1e-9), then fewer GPUs, then fewer PP stages in total; 0 otherwise. */
int loom_dt_plan_better(const loom_dt_plan *a, const loom_dt_plan *b);

/* Algorithm 1: enumerates TP_m in {1,2,4,8} (<= max_tp, C usable) and
 * DP_m dividing the global batch (DP_lm >= min_dp_llm; DP_me, DP_mg <=
 * DP_lm unless dp_above_backbone), solves each integer subproblem and keeps the k best
 * plans in rank order in best[0..*n_best-1]. stats may be NULL.
 * LOOM_EINVAL on bad inputs and LOOM_EINFEASIBLE when no plan fits, both
 * with a message in err. */
int loom_dt_search(const loom_dt_unit u[LOOM_DT_UNITS],
                   const loom_dt_config *cfg, loom_dt_plan *best, int32_t k,
                   int32_t *n_best, loom_dt_stats *stats, loom_error *err);

#endif
