/*
 * strat_assign.c - Entrain's replica assignment and stratified
 * microbatch assignment (Algorithm 4 lines 1-6).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "stratified.h"

/* Fills err (code + message) and returns code. */
static int strat_fail(loom_error *err, int code, const char *msg)
{
    if (err) {
        err->code = code;
        snprintf(err->message, sizeof err->message, "stratified: %s", msg);
    }
    return code;
}

/* An index and its sort key. */
typedef struct strat_item {
    double key;
    int32_t idx;
} strat_item;

/* Decreasing key, then increasing index. */
static int strat_desc(const void *a, const void *b)
{
    const strat_item *x = a, *y = b;
    if (x->key != y->key)
        return x->key > y->key ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

int loom_strat_replicas(const double *enc, const double *llm, int32_t n,
                        int32_t dp, int32_t *replica, loom_error *err)
{
    if (n < 0 || dp < 1 || (n > 0 && (!enc || !llm || !replica)))
        return strat_fail(err, LOOM_EINVAL,
                          "replica assignment needs dp >= 1 and workloads");
    strat_item *it = malloc(((size_t)n + 1) * sizeof *it);
    double *load = calloc((size_t)dp, sizeof *load);
    int32_t *count = calloc((size_t)dp, sizeof *count);
    if (!it || !load || !count) {
        free(it);
        free(load);
        free(count);
        return strat_fail(err, LOOM_ENOMEM, "out of memory");
    }
    for (int32_t i = 0; i < n; i++) {
        it[i].key = enc[i];
        it[i].idx = i;
    }
    qsort(it, (size_t)n, sizeof *it, strat_desc);
    int32_t cap = (n + dp - 1) / dp;
    for (int32_t i = 0; i < n; i++) {
        int32_t best = -1;
        for (int32_t r = 0; r < dp; r++)
            if (count[r] < cap && (best < 0 || load[r] < load[best]))
                best = r;
        replica[it[i].idx] = best;
        load[best] += llm[it[i].idx];
        count[best]++;
    }
    free(it);
    free(load);
    free(count);
    return LOOM_OK;
}

int32_t loom_strat_keff(const double *enc, const int32_t *idx, int32_t n,
                        int32_t k)
{
    if (n < 1 || k < 1)
        return 1;
    double sum = 0, mx = 0;
    for (int32_t i = 0; i < n; i++) {
        double w = enc[idx ? idx[i] : i];
        sum += w;
        if (w > mx)
            mx = w;
    }
    int32_t keff = k < n ? k : n;
    if (mx > 0) {
        double q = floor(sum / mx + 1e-9);
        if (q < keff)
            keff = (int32_t)q;
    }
    return keff < 1 ? 1 : keff;
}

/* Gives each item (in order) to the least-loaded microbatch. */
static void strat_greedy(const strat_item *it, int32_t n, const double *w,
                         double *load, int32_t k, int32_t *mb)
{
    for (int32_t i = 0; i < n; i++) {
        int32_t best = 0;
        for (int32_t j = 1; j < k; j++)
            if (load[j] < load[best])
                best = j;
        mb[it[i].idx] = best;
        load[best] += w[it[i].idx];
    }
}

int loom_strat_assign(const double *enc, const double *llm, const int32_t *idx,
                      int32_t n, int32_t k_eff, int rule, int32_t *mb,
                      unsigned char *coarse, loom_error *err)
{
    if (n < 0 || k_eff < 1 || rule < LOOM_STRAT_MEAN ||
        rule > LOOM_STRAT_TOP_KEFF || (n > 0 && (!enc || !llm || !mb)))
        return strat_fail(err, LOOM_EINVAL,
                          "assignment needs k_eff >= 1, a known coarse rule "
                          "and workloads");
    strat_item *c = malloc(((size_t)n + 1) * sizeof *c);
    strat_item *f = malloc(((size_t)n + 1) * sizeof *f);
    strat_item *by_llm = malloc(((size_t)n + 1) * sizeof *by_llm);
    double *load = calloc((size_t)k_eff, sizeof *load);
    if (!c || !f || !by_llm || !load) {
        free(c);
        free(f);
        free(by_llm);
        free(load);
        return strat_fail(err, LOOM_ENOMEM, "out of memory");
    }
    double mean = 0, enc_max = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t s = idx ? idx[i] : i;
        mean += llm[s];
        by_llm[i].key = llm[s];
        by_llm[i].idx = s;
        if (enc[s] > enc_max)
            enc_max = enc[s];
    }
    mean = n > 0 ? mean / n : 0;
    qsort(by_llm, (size_t)n, sizeof *by_llm, strat_desc);
    double median = 0;
    if (n > 0)
        median = (n % 2) ? by_llm[n / 2].key
                         : (by_llm[n / 2 - 1].key + by_llm[n / 2].key) / 2;
    /* without encoder work the greedy balances the backbone instead */
    const double *w = enc_max > 0 ? enc : llm;
    int32_t nc = 0, nf = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t s = by_llm[i].idx;
        int is_c = rule == LOOM_STRAT_TOP_KEFF ? i < k_eff
                   : rule == LOOM_STRAT_MEDIAN ? llm[s] > median
                                               : llm[s] > mean;
        strat_item x = {w[s], s};
        if (is_c)
            c[nc++] = x;
        else
            f[nf++] = x;
        if (coarse)
            coarse[s] = (unsigned char)is_c;
    }
    qsort(c, (size_t)nc, sizeof *c, strat_desc);
    qsort(f, (size_t)nf, sizeof *f, strat_desc);
    strat_greedy(c, nc, w, load, k_eff, mb);
    strat_greedy(f, nf, w, load, k_eff, mb);
    free(c);
    free(f);
    free(by_llm);
    free(load);
    return LOOM_OK;
}
