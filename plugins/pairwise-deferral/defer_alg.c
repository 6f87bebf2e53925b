/*
 * defer_alg.c - Entrain's pairwise deferral (Algorithm 4 lines 7-15):
 * subset sum, bottleneck cost matrix (Eq. 4.3), bottleneck matching and
 * the interleaved execution order.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "deferral.h"

/* The start of every message of this file. */
#define DEFER_WHO "pairwise-deferral: "

int loom_defer_subset(const double *w, int32_t n, double delta, double quantum,
                      unsigned char *take, double *sum, loom_error *err)
{
    if (n < 0 || !(quantum > 0) || !isfinite(quantum) || (n > 0 && (!w || !take)))
        return loom_error_format(err, LOOM_EINVAL,
                          DEFER_WHO "subset sum needs items and a quantum > 0");
    double total = 0;
    for (int32_t i = 0; i < n; i++) {
        if (!(w[i] >= 0) || !isfinite(w[i]))
            return loom_error_format(err, LOOM_EINVAL,
                              DEFER_WHO "item %d has workload %g, expected >= 0", i, w[i]);
        total += w[i];
        take[i] = 0;
    }
    *sum = 0;
    if (n == 0 || delta <= 0)
        return LOOM_OK;
    /* coarsen the grid so the table stays below 16 MiB */
    double max_units = (double)(16u << 20) / ((double)n + 1);
    if (max_units > LOOM_DEFER_MAX_UNITS)
        max_units = LOOM_DEFER_MAX_UNITS;
    if (total / quantum > max_units)
        quantum = total / max_units;
    int64_t *r = malloc((size_t)n * sizeof *r);
    if (!r)
        return loom_error_format(err, LOOM_ENOMEM, DEFER_WHO "out of memory");
    int64_t units = 0;
    for (int32_t i = 0; i < n; i++) {
        r[i] = llround(w[i] / quantum);
        units += r[i];
    }
    size_t row = (size_t)units + 1;
    unsigned char *reach = calloc(((size_t)n + 1) * row, 1);
    if (!reach) {
        free(r);
        return loom_error_format(err, LOOM_ENOMEM, DEFER_WHO "out of memory");
    }
    reach[0] = 1; /* reach[i][s]: s is a sum of a subset of items 0..i-1 */
    for (int32_t i = 1; i <= n; i++) {
        const unsigned char *prev = reach + (size_t)(i - 1) * row;
        unsigned char *cur = reach + (size_t)i * row;
        for (size_t s = 0; s < row; s++)
            cur[s] = prev[s] || (s >= (size_t)r[i - 1] && prev[s - (size_t)r[i - 1]]);
    }
    double target = delta / quantum;
    size_t best = 0;
    const unsigned char *last = reach + (size_t)n * row;
    for (size_t s = 1; s < row; s++)
        if (last[s] && fabs(target - (double)s) < fabs(target - (double)best))
            best = s;
    size_t s = best;
    for (int32_t i = n; i >= 1; i--) {
        if (reach[(size_t)(i - 1) * row + s])
            continue; /* reachable without item i-1: leave it */
        take[i - 1] = 1;
        s -= (size_t)r[i - 1];
        *sum += w[i - 1];
    }
    free(reach);
    free(r);
    return LOOM_OK;
}

/* Augmenting path from ol vertex i over edges V[i][j] <= t (Kuhn). */
static int match_dfs(const double *V, int32_t n_ul, double t, int32_t i,
                     int32_t *ul_of, unsigned char *seen)
{
    for (int32_t j = 0; j < n_ul; j++) {
        if (seen[j] || V[(size_t)i * n_ul + j] > t)
            continue;
        seen[j] = 1;
        if (ul_of[j] < 0 || match_dfs(V, n_ul, t, ul_of[j], ul_of, seen)) {
            ul_of[j] = i;
            return 1;
        }
    }
    return 0;
}

/* Matches every critical i (L[i] > t); 1 when all succeed. ul_of[j] gets
 * the ol partner of j or -1. */
static int match_at(const double *V, const double *L, int32_t n_ol,
                    int32_t n_ul, double t, int32_t *ul_of, unsigned char *seen)
{
    for (int32_t j = 0; j < n_ul; j++)
        ul_of[j] = -1;
    for (int32_t i = 0; i < n_ol; i++) {
        if (!(L[i] > t))
            continue;
        memset(seen, 0, (size_t)n_ul);
        if (!match_dfs(V, n_ul, t, i, ul_of, seen))
            return 0;
    }
    return 1;
}

/* Ascending doubles for the candidate thresholds. */
static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int loom_defer_match(const double *V, const double *L, int32_t n_ol,
                     int32_t n_ul, int binary, double *t_star, int32_t *match,
                     unsigned char *critical, loom_error *err)
{
    if (n_ol < 0 || n_ul < n_ol || (n_ol > 0 && (!V || !L || !match)))
        return loom_error_format(err, LOOM_EINVAL,
                          DEFER_WHO "matching needs at least as many underloaded as "
                          "overloaded microbatches, found %d and %d", n_ul, n_ol);
    *t_star = 0;
    if (n_ol == 0)
        return LOOM_OK;
    size_t nc = (size_t)n_ol * (size_t)n_ul + (size_t)n_ol;
    double *cand = malloc(nc * sizeof *cand);
    int32_t *ul_of = malloc((size_t)n_ul * sizeof *ul_of);
    unsigned char *seen = malloc((size_t)n_ul);
    if (!cand || !ul_of || !seen) {
        free(cand);
        free(ul_of);
        free(seen);
        return loom_error_format(err, LOOM_ENOMEM, DEFER_WHO "out of memory");
    }
    memcpy(cand, V, (size_t)n_ol * (size_t)n_ul * sizeof *V);
    memcpy(cand + (size_t)n_ol * n_ul, L, (size_t)n_ol * sizeof *L);
    qsort(cand, nc, sizeof *cand, dbl_cmp);
    /* the largest L is always feasible: nothing is critical there */
    size_t lo = 0, hi = nc - 1;
    if (binary) {
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (match_at(V, L, n_ol, n_ul, cand[mid], ul_of, seen))
                hi = mid;
            else
                lo = mid + 1;
        }
    } else {
        while (!match_at(V, L, n_ol, n_ul, cand[lo], ul_of, seen))
            lo++;
    }
    double t = cand[lo];
    match_at(V, L, n_ol, n_ul, t, ul_of, seen);
    for (int32_t i = 0; i < n_ol; i++) {
        match[i] = -1;
        if (critical)
            critical[i] = L[i] > t;
    }
    for (int32_t j = 0; j < n_ul; j++)
        if (ul_of[j] >= 0)
            match[ul_of[j]] = j;
    for (int32_t i = 0; i < n_ol; i++) {
        if (match[i] >= 0)
            continue;
        for (int32_t j = 0; j < n_ul; j++)
            if (ul_of[j] < 0) {
                ul_of[j] = i;
                match[i] = j;
                break;
            }
    }
    *t_star = t;
    free(cand);
    free(ul_of);
    free(seen);
    return LOOM_OK;
}

/* Per-microbatch data of one run: loads, samples grouped by microbatch. */
typedef struct defer_mbs {
    double *load;     /* k */
    int32_t *sorted;  /* k microbatches by decreasing load */
    int32_t *first;   /* k + 1 offsets into members */
    int32_t *members; /* sample ids grouped by microbatch */
    double *w;        /* scratch: workloads of one microbatch's samples */
    unsigned char *take;
} defer_mbs;

/* Frees what defer_group allocated. */
static void defer_free(defer_mbs *d)
{
    free(d->load);
    free(d->sorted);
    free(d->first);
    free(d->members);
    free(d->w);
    free(d->take);
}

/* Groups samples by microbatch and sorts microbatches by load. */
static int defer_group(const double *llm, const int32_t *mb, int32_t n,
                       int32_t k, defer_mbs *d)
{
    memset(d, 0, sizeof *d);
    d->load = calloc((size_t)k, sizeof *d->load);
    d->sorted = malloc((size_t)k * sizeof *d->sorted);
    d->first = calloc((size_t)k + 1, sizeof *d->first);
    d->members = malloc(((size_t)n + 1) * sizeof *d->members);
    d->w = malloc(((size_t)n + 1) * sizeof *d->w);
    d->take = malloc((size_t)n + 1);
    if (!d->load || !d->sorted || !d->first || !d->members || !d->w || !d->take)
        return LOOM_ENOMEM;
    for (int32_t s = 0; s < n; s++)
        if (mb[s] >= 0) {
            d->load[mb[s]] += llm[s];
            d->first[mb[s] + 1]++;
        }
    for (int32_t m = 0; m < k; m++)
        d->first[m + 1] += d->first[m];
    int32_t *fill = calloc((size_t)k, sizeof *fill);
    if (!fill)
        return LOOM_ENOMEM;
    for (int32_t s = 0; s < n; s++)
        if (mb[s] >= 0)
            d->members[d->first[mb[s]] + fill[mb[s]]++] = s;
    free(fill);
    for (int32_t m = 0; m < k; m++)
        d->sorted[m] = m;
    for (int32_t a = 1; a < k; a++) { /* insertion sort: stable, k small */
        int32_t x = d->sorted[a], b = a;
        while (b > 0 && d->load[d->sorted[b - 1]] < d->load[x]) {
            d->sorted[b] = d->sorted[b - 1];
            b--;
        }
        d->sorted[b] = x;
    }
    return LOOM_OK;
}

/* Subset of ol's samples to defer to ul; fills d->take for ol's members
 * and returns the deferred work (negative on error). */
static double defer_pair(const double *llm, defer_mbs *d, int32_t ol,
                         int32_t ul, double quantum)
{
    int32_t cnt = d->first[ol + 1] - d->first[ol];
    for (int32_t i = 0; i < cnt; i++)
        d->w[i] = llm[d->members[d->first[ol] + i]];
    double sum = 0;
    loom_error e = {0, ""};
    if (loom_defer_subset(d->w, cnt, (d->load[ol] - d->load[ul]) / 2, quantum,
                          d->take, &sum, &e) != LOOM_OK)
        return -1;
    return sum;
}

int loom_defer_run(const double *llm, const int32_t *mb, int32_t n, int32_t k,
                   double quantum, int32_t *order, int32_t *llm_mb,
                   double *t_star, double *max_after, int32_t *n_deferred,
                   loom_error *err)
{
    if (k < 1 || n < 0 || !(quantum > 0) || !order || (n > 0 && (!llm || !mb || !llm_mb)))
        return loom_error_format(err, LOOM_EINVAL,
                          DEFER_WHO "expected k >= 1 microbatches and a quantum > 0, "
                          "found k %d", k);
    for (int32_t s = 0; s < n; s++) {
        if (mb[s] < -1 || mb[s] >= k)
            return loom_error_format(err, LOOM_EINVAL,
                              DEFER_WHO "sample %d is in microbatch %d, expected -1..%d",
                              s, mb[s], k - 1);
        if (!(llm[s] >= 0))
            return loom_error_format(err, LOOM_EINVAL,
                              DEFER_WHO "sample %d has backbone work %g, expected >= 0",
                              s, llm[s]);
        llm_mb[s] = mb[s];
    }
    defer_mbs d;
    int32_t h = k / 2;
    double *V = malloc(((size_t)h * (size_t)h + 1) * sizeof *V);
    double *L = malloc(((size_t)h + 1) * sizeof *L);
    int32_t *match = malloc(((size_t)h + 1) * sizeof *match);
    unsigned char *crit = malloc((size_t)h + 1);
    int rc = (defer_group(llm, mb, n, k, &d) == LOOM_OK && V && L && match && crit)
                 ? LOOM_OK
                 : loom_error_format(err, LOOM_ENOMEM, DEFER_WHO "out of memory");
    const int32_t *ol = d.sorted, *ul = d.sorted ? d.sorted + (k - h) : NULL;
    for (int32_t i = 0; rc == LOOM_OK && i < h; i++) {
        L[i] = d.load[ol[i]];
        for (int32_t j = 0; rc == LOOM_OK && j < h; j++) {
            double dw = defer_pair(llm, &d, ol[i], ul[j], quantum);
            if (dw < 0)
                rc = loom_error_format(err, LOOM_ENOMEM, DEFER_WHO "out of memory");
            double a = d.load[ol[i]] - dw, b = d.load[ul[j]] + dw;
            V[(size_t)i * h + j] = a > b ? a : b; /* Eq. 4.3 */
        }
    }
    double t = 0;
    if (rc == LOOM_OK)
        rc = loom_defer_match(V, L, h, h, 1, &t, match, crit, err);
    int32_t moved = 0, pos = 0;
    for (int32_t i = 0; rc == LOOM_OK && i < h; i++) {
        int32_t a = ol[i], b = ul[match[i]];
        order[pos++] = a;
        order[pos++] = b;
        if (!crit[i])
            continue; /* non-critical pairs defer nothing */
        double dw = defer_pair(llm, &d, a, b, quantum);
        if (dw < 0) {
            rc = loom_error_format(err, LOOM_ENOMEM, DEFER_WHO "out of memory");
            break;
        }
        for (int32_t x = d.first[a]; x < d.first[a + 1]; x++)
            if (d.take[x - d.first[a]]) {
                llm_mb[d.members[x]] = b;
                moved++;
            }
    }
    if (rc == LOOM_OK && (k % 2))
        order[pos++] = d.sorted[h]; /* the middle microbatch runs last */
    if (rc == LOOM_OK) {
        double *after = calloc((size_t)k, sizeof *after), worst = 0;
        if (!after) {
            rc = loom_error_format(err, LOOM_ENOMEM, DEFER_WHO "out of memory");
        } else {
            for (int32_t s = 0; s < n; s++)
                if (llm_mb[s] >= 0)
                    after[llm_mb[s]] += llm[s];
            for (int32_t m = 0; m < k; m++)
                worst = after[m] > worst ? after[m] : worst;
            free(after);
            if (t_star)
                *t_star = t;
            if (max_after)
                *max_after = worst;
            if (n_deferred)
                *n_deferred = moved;
        }
    }
    defer_free(&d);
    free(V);
    free(L);
    free(match);
    free(crit);
    return rc;
}

double loom_defer_greedy(const double *llm, const int32_t *mb, int32_t n,
                         int32_t k, double quantum)
{
    if (k < 1 || n < 0 || !(quantum > 0))
        return -1;
    defer_mbs d;
    if (defer_group(llm, mb, n, k, &d) != LOOM_OK) {
        defer_free(&d);
        return -1;
    }
    int32_t h = k / 2;
    double worst = k % 2 ? d.load[d.sorted[h]] : 0;
    for (int32_t i = 0; i < h; i++) {
        int32_t a = d.sorted[i], b = d.sorted[k - 1 - i];
        double dw = defer_pair(llm, &d, a, b, quantum);
        if (dw < 0) {
            worst = -1;
            break;
        }
        double x = d.load[a] - dw, y = d.load[b] + dw;
        double v = x > y ? x : y;
        worst = v > worst ? v : worst;
    }
    defer_free(&d);
    return worst;
}
