/*
 * deferral.h - Entrain's pairwise deferral optimisation (dissertation
 * §4.5.2, Algorithm 4 lines 7-15) as pure functions: the subset-sum choice
 * of the samples whose backbone pass moves from an overloaded microbatch
 * to its underloaded partner, the bottleneck cost matrix (Eq. 4.3), the
 * bottleneck matching by binary search with augmenting paths, and the
 * interleaved execution order (ol_0, ul_0, ol_1, ul_1, ...).
 *
 * Ownership: every array is caller-provided. Workloads in milliseconds.
 */
#ifndef LOOM_DEFERRAL_H
#define LOOM_DEFERRAL_H

#include <loom/common.h>

/* Largest subset-sum table (rounded units) before the quantum coarsens. */
#define LOOM_DEFER_MAX_UNITS 1000000

/* The subset of the n items w[] whose total, on a grid of `quantum`
 * (items rounded to whole quanta), is closest to delta; ties go to the
 * smaller total (fewer buffered activations). take[i] = 1 for chosen
 * items; *sum is their exact total. */
int loom_defer_subset(const double *w, int32_t n, double delta, double quantum,
                      unsigned char *take, double *sum, loom_error *err);

/* BOTTLENECKMATCH: V is n_ol x n_ul (row-major) post-deferral costs, L
 * the cost of each overloaded microbatch left alone. T* is the smallest
 * value of V and L such that every i with L[i] > T* (critical) is matched
 * to its own j with V[i][j] <= T*. binary = 1 binary-searches the sorted
 * candidates, 0 scans them in order (the same answer; for tests).
 * match[i] is i's partner: critical ones from augmenting paths (i and j in
 * index order), the others take the remaining j in index order.
 * critical[i] (may be NULL) is 1 for the critical ones. */
int loom_defer_match(const double *V, const double *L, int32_t n_ol,
                     int32_t n_ul, int binary, double *t_star, int32_t *match,
                     unsigned char *critical, loom_error *err);

/* Algorithm 4 lines 7-15 for n samples in k microbatches (mb[s] in
 * 0..k-1, or -1 for a sample outside them): sort microbatches by backbone
 * work (ties: index), pair the top floor(k/2) with the bottom floor(k/2)
 * (odd k: the middle one runs last, alone), defer the subset-sum choice of
 * every critical pair. order[pos] is the microbatch run at position pos;
 * llm_mb[s] the microbatch whose backbone pass runs sample s (-1 outside).
 * Outputs: T*, the largest backbone load after deferral, the number of
 * deferred samples. */
int loom_defer_run(const double *llm, const int32_t *mb, int32_t n, int32_t k,
                   double quantum, int32_t *order, int32_t *llm_mb,
                   double *t_star, double *max_after, int32_t *n_deferred,
                   loom_error *err);

/* The naive baseline the text rejects: the most overloaded microbatch
 * paired with the most underloaded, the next with the next, each pair
 * deferring its subset-sum choice. Returns the largest backbone load
 * afterwards, or a negative value on bad input. */
double loom_defer_greedy(const double *llm, const int32_t *mb, int32_t n,
                         int32_t k, double quantum);

#endif
