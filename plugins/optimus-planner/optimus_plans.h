/*
 * optimus_plans.h - Optimus's model planner (Optimus §4.1, §4.5) and the
 * closed forms its scheduler relies on (§4.3, digest §2.4), as pure
 * functions:
 *
 *   - encoder plans: PP_enc dividing PP_llm, TP_enc dividing TP_llm, on
 *     the backbone's GPUs (DP_enc = GPUs / (PP_enc TP_enc)), with the
 *     model-state memory MEM_model = k (DP_enc phi_enc + DP_llm phi_llm) /
 *     GPUs and its overhead over the unified plan;
 *   - microbatch splits: the compositions of N_mb into m parts >= 1;
 *   - the placement of encoder pipeline (a, b), stage k, on the backbone;
 *   - global ordering and CheckEncLLMDep (Optimus §4.3);
 *   - 1F1B bubbles per stage (the scheduling efficiency metric is
 *     loom_co_efficiency in <loom/kits/colocated.h>).
 *
 * Ownership: every array is caller-provided; nothing here allocates.
 * Units: bytes, milliseconds.
 */
#ifndef LOOM_OPTIMUS_PLANS_H
#define LOOM_OPTIMUS_PLANS_H

#include <stdint.h>

typedef struct loom_optimus_plan {
    int32_t pp, tp, dp;    /* the encoder's 3D plan */
    int32_t m;             /* encoder pipelines per backbone pipeline */
    int32_t m_pp, m_tp;    /* m = m_pp * m_tp: along the backbone's PP / TP */
    double state_bytes;    /* MEM_model per GPU (average) */
    double overhead_bytes; /* MEM_overhead over DP_enc = DP_llm */
} loom_optimus_plan;

/* Divisors of n >= 1 ascending into out (room for cap); returns how many
 * there are (only cap are written). */
int32_t loom_optimus_divisors(int32_t n, int32_t *out, int32_t cap);

/* MEM_model = k (dp_enc phi_enc + dp_llm phi_llm) / n_gpu. */
double loom_optimus_model_state_bytes(double k, int64_t dp_enc, double phi_enc,
                                      int64_t dp_llm, double phi_llm,
                                      int64_t n_gpu);

/* Every encoder plan for the backbone plan (dp, pp, tp), in the order
 * PP_enc ascending, then TP_enc ascending, with their memory for k bytes
 * per parameter and phi_enc / phi_llm parameters. Writes up to cap plans
 * and returns how many there are (28 at most for PP <= 64, TP <= 8). */
int32_t loom_optimus_enc_plans(int32_t pp_llm, int32_t tp_llm, int32_t dp_llm,
                               double k, double phi_enc, double phi_llm,
                               loom_optimus_plan *out, int32_t cap);

/* Ways to split n microbatches over m pipelines, each >= 1: C(n-1, m-1);
 * 0 when m < 1 or m > n; saturates at INT64_MAX. */
int64_t loom_optimus_compositions(int32_t n, int32_t m);

/* The first split in lexicographic order: [1, ..., 1, n - m + 1].
 * Returns 0 when there is none (m < 1 or m > n). */
int loom_optimus_split_first(int32_t n, int32_t m, int32_t *parts);

/* Advances parts to the next split in lexicographic order ([1,7], [2,6],
 * ..., [7,1] for n 8, m 2); returns 0 after the last. */
int loom_optimus_split_next(int32_t n, int32_t m, int32_t *parts);

/* Deals microbatches 0..n-1 to pipelines with `parts` counts (m entries
 * summing to n): microbatch i goes to the pipeline whose next output
 * would come earliest, (given_j + 1) / parts_j smallest, ties to the
 * lowest j. Writes owner[n]. */
void loom_optimus_deal(int32_t n, int32_t m, const int32_t *parts,
                       int32_t *owner);

/* Where encoder pipeline (a, b)'s stage k lives: backbone stage
 * a * pp_enc + k, TP ranks [b * tp_enc, (b + 1) * tp_enc). */
void loom_optimus_place(int32_t a, int32_t b, int32_t k, int32_t pp_enc,
                        int32_t tp_enc, int32_t *llm_stage, int32_t *tp_first);

/* Global ordering (Optimus §4.3): sorts every encoder output by its
 * forward finish time ef (pipelines' microbatches flattened: pipeline j's
 * q-th at offset(j) + q, count[j] each; ties by pipeline, then q) and
 * writes map[i] = the flat index feeding backbone microbatch i. Returns
 * n = sum of count. */
int32_t loom_optimus_global_order(int32_t n_pipes, const int32_t *count,
                                  const double *ef, int32_t *map);

/* CheckEncLLMDep: 1 when EF(map[i]) <= F[i] and EB(map[i]) >= B[i] for
 * every backbone microbatch i < n, else 0. */
int loom_optimus_check_deps(int32_t n, const double *F, const double *B,
                            const double *ef, const double *eb,
                            const int32_t *map);

/* P2P send/receive pairs the encoder-backbone boundary needs: an
 * activation and a gradient transfer per microbatch, 2 * sum(count). */
int64_t loom_optimus_p2p_pairs(int32_t n_pipes, const int32_t *count);

/* 1F1B (p stages, n microbatches, uniform t_f, t_b) makespan
 * (n + p - 1)(t_f + t_b), and stage s's idle time: warm-up s t_f, other
 * (p - 1 - s)(t_f + t_b), tail s t_b (digest §2.4). */
double loom_optimus_1f1b_makespan(int32_t p, int32_t n, double tf, double tb);
void loom_optimus_1f1b_idle(int32_t p, int32_t s, double tf, double tb,
                            double *warm, double *other, double *tail);

#endif
