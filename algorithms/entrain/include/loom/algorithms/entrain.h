/*
 * entrain_calibrate.h - Entrain's minimum stable profiling batch size
 * (dissertation §4.4.2, Algorithm 2, appendix C.2): the number of
 * Bernoulli trials k = ceil(ln alpha / ln(1 - p_error)), proportional GPU
 * allocation by largest remainder, and the doubling search for the
 * smallest batch whose allocation every trial reproduces. Plus Entrain's
 * per-sample workload model (§4.4.1): per layer T(x) = a x^2 + b x + c for
 * a sequence of x tokens, summed over a component's layers.
 *
 * Ownership: results are caller-provided structs; arrays are borrowed.
 * Units: milliseconds (or FLOPs, for the shape-derived coefficients).
 */
#ifndef LOOM_ENTRAIN_CALIBRATE_H
#define LOOM_ENTRAIN_CALIBRATE_H

#include <loom/common.h>
#include <loom/problem.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_ENTRAIN_MAX_ROUNDS 32
#define LOOM_ENTRAIN_MAX_SEEN 8
#define LOOM_ENTRAIN_MAX_TRIALS 100000
#define LOOM_ENTRAIN_MAX_BATCH (1 << 24)

/* The two components Entrain balances: every encoder merged into one
 * logical encoder, and the backbone (with any decoder). */
typedef struct loom_entrain_work {
    double enc_ms;
    double llm_ms;
} loom_entrain_work;

/* k = ceil(ln alpha / ln(1 - p_error)); alpha and p_error in (0, 1).
 * Returns -1 for arguments out of range. */
int32_t loom_entrain_trials(double alpha, double p_error);

/* Splits `gpus` GPUs in units of `unit` (TP x CP granularity) over n
 * components in proportion to share[] (non-negative, any scale): floors of
 * the quotas, the remaining units by largest remainder (ties: lower
 * index), then every component raised to at least one unit by taking from
 * the largest (ties: lower index). out[i] is in GPUs. LOOM_EINVAL when
 * gpus is not a multiple of unit or has fewer units than components. */
int loom_entrain_allocate(const double *share, int32_t n, int32_t gpus,
                          int32_t unit, int32_t *out, loom_error *err);

enum loom_entrain_estimator {
    LOOM_ENTRAIN_RATIO_OF_SUMS = 0, /* sum enc / sum (enc + llm) (§4.4.2) */
    LOOM_ENTRAIN_MEAN_OF_RATIOS = 1 /* mean of enc / (enc + llm) (C.1) */
};

/* Encoder share of a batch (samples idx[0..n-1] of `pool`) under the
 * estimator; samples with no work at all are skipped by the mean of
 * ratios. LOOM_EINVAL when the batch has no work. */
int loom_entrain_share(const loom_entrain_work *pool, const int32_t *idx,
                       int32_t n, int estimator, double *enc_share,
                       loom_error *err);

typedef struct loom_entrain_calib_options {
    double alpha;       /* confidence, e.g. 0.05 */
    double p_error;     /* tolerated flip probability, e.g. 0.05 */
    int32_t n0;         /* first profiling batch size, >= 1 */
    int32_t cap;        /* largest batch tried (the global batch) */
    int32_t gpus;       /* GPUs per replica, N_total / DP */
    int32_t unit;       /* allocation granularity (TP x CP) */
    int32_t estimator;  /* enum loom_entrain_estimator */
    int32_t reserved;
    uint64_t seed;      /* sampling seed (splitmix64) */
} loom_entrain_calib_options;

/* One doubling round: the batch size, whether all k trials matched the
 * reference, and the distinct allocations seen (encoder:backbone GPUs). */
typedef struct loom_entrain_round {
    int32_t batch;
    int32_t stable;
    int32_t trials_run;
    int32_t n_seen;
    int32_t seen[LOOM_ENTRAIN_MAX_SEEN][2];
} loom_entrain_round;

typedef struct loom_entrain_calib_result {
    int32_t b_min;          /* 0 when not found within the cap */
    int32_t trials;         /* k */
    int32_t alloc[2];       /* encoder, backbone GPUs at b_min */
    double enc_share;       /* reference share at b_min */
    int32_t n_rounds;
    loom_entrain_round rounds[LOOM_ENTRAIN_MAX_ROUNDS];
} loom_entrain_calib_result;

/* Algorithm 2 over a pool of per-sample workloads, sampling batches
 * uniformly with replacement (i.i.d.), doubling n from n0 while n <= cap.
 * LOOM_EINFEASIBLE when no n <= cap is stable (the message says the global
 * batch must grow); *out then holds the rounds tried. */
int loom_entrain_calibrate(const loom_entrain_work *pool, int32_t n_pool,
                           const loom_entrain_calib_options *opt,
                           loom_entrain_calib_result *out, loom_error *err);

/* ---- per-sample workloads (entrain_workload.c) --------------------------- */

/* Per-layer quadratic T(x) = a x^2 + b x + c of one module (the same for
 * every layer of it). */
typedef struct loom_entrain_quad {
    double a, b, c;
} loom_entrain_quad;

/* Coefficients of every module of `model` from its layer shapes: FLOPs of
 * forward + backward (frozen-aware: input gradients only when something
 * upstream is trainable, weight gradients only when trainable) of a layer
 * for one sequence of x tokens, averaged over the module's layers. quad
 * has model->n_modules entries. */
void loom_entrain_quad_from_shapes(const loom_model *model,
                                   loom_entrain_quad *quad);

/* Workload of one sample: every encoder module's time into enc_ms, every
 * other module's into llm_ms, each the module's layer count times the
 * quadratic summed over the sample's sequences for that module (an image
 * is one sequence of tokens_per_item tokens; a text module sees the text
 * plus its inputs' output tokens as one sequence). */
loom_entrain_work loom_entrain_sample_work(const loom_model *model,
                                           const loom_entrain_quad *quad,
                                           const loom_sample *sample);

#ifdef __cplusplus
}
#endif
#endif
