/*
 * stratified.h - Entrain's sample-to-replica and stratified
 * sample-to-microbatch assignment (dissertation §4.3 and §4.5.1,
 * Algorithm 4 lines 1-6), as pure functions the plugin and its tests use.
 *
 * Ownership: every array is caller-provided. Workloads in milliseconds.
 */
#ifndef LOOM_STRATIFIED_H
#define LOOM_STRATIFIED_H

#include <loom/common.h>

/* How the coarse set S_c (high backbone work) is chosen; the text leaves
 * the threshold open. */
enum loom_strat_coarse {
    LOOM_STRAT_MEAN = 0,    /* w_LLM above the mean of the replica */
    LOOM_STRAT_MEDIAN = 1,  /* w_LLM above the median */
    LOOM_STRAT_TOP_KEFF = 2 /* the K_eff heaviest w_LLM (ties: index) */
};

/* Algorithm 4 lines 1-2: samples by decreasing w_enc (ties: index) go to
 * the replica with the least backbone work so far among those holding
 * fewer than ceil(n / dp) samples (ties: lower replica). */
int loom_strat_replicas(const double *enc, const double *llm, int32_t n,
                        int32_t dp, int32_t *replica, loom_error *err);

/* Line 3: K_eff = min(K, floor(sum w_enc / max w_enc)) over the samples
 * idx[0..n-1]; never above n. Without encoder work (all text), K_eff =
 * min(K, n). Returns >= 1 for n >= 1 and K >= 1. */
int32_t loom_strat_keff(const double *enc, const int32_t *idx, int32_t n,
                        int32_t k);

/* Lines 4-6 over the samples idx[0..n-1]: split into S_c and S_f by the
 * rule, sort each by decreasing w_enc (ties: index), and give each sample
 * of S_c then S_f to the microbatch with the least encoder work (ties:
 * lower microbatch). Without encoder work the same greedy runs on w_LLM.
 * mb[idx[i]] receives the microbatch (0..k_eff-1); coarse[idx[i]] (may be
 * NULL) 1 for S_c. */
int loom_strat_assign(const double *enc, const double *llm, const int32_t *idx,
                      int32_t n, int32_t k_eff, int rule, int32_t *mb,
                      unsigned char *coarse, loom_error *err);

#endif
