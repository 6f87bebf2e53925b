/*
 * ifill.c - the 1F1B timing recurrence and DistTrain's interval-filling
 * microbatch order (DistTrain §6.2, Algorithm 3). See ifill.h.
 */
#include <string.h>
#include "ifill.h"

/* Op i (0 <= i < 2l) of stage s in 1F1B order: sets *k (position) and
 * returns 1 for a backward, 0 for a forward. */
static int ifill_op(int32_t p, int32_t l, int32_t s, int32_t i, int32_t *k)
{
    int32_t w = p - s - 1 < l ? p - s - 1 : l;
    if (i < w) {
        *k = i;
        return 0;
    }
    int32_t steady = 2 * (l - w);
    if (i < w + steady) {
        int32_t t = (i - w) / 2;
        if ((i - w) % 2 == 0) {
            *k = w + t;
            return 0;
        }
        *k = t;
        return 1;
    }
    *k = l - w + (i - w - steady);
    return 1;
}

double loom_ifill_makespan(int32_t p, int32_t l, const int32_t *order,
                           const double *fwd, const double *bwd,
                           double *scratch, int32_t *cursor)
{
    size_t n = (size_t)l * (size_t)p;
    double *ef = scratch, *eb = scratch + n, *free_t = scratch + 2 * n;
    for (size_t i = 0; i < n; i++)
        ef[i] = eb[i] = -1;
    for (int32_t s = 0; s < p; s++) {
        free_t[s] = 0;
        cursor[s] = 0;
    }
    int progress = 1;
    while (progress) {
        progress = 0;
        for (int32_t s = 0; s < p; s++) {
            while (cursor[s] < 2 * l) {
                int32_t k;
                int back = ifill_op(p, l, s, cursor[s], &k);
                size_t at = (size_t)k * (size_t)p + (size_t)s;
                double dep = 0;
                if (!back && s > 0)
                    dep = ef[at - 1];
                else if (back)
                    dep = s < p - 1 ? eb[at + 1] : ef[at];
                if (dep < 0)
                    break;
                double start = dep > free_t[s] ? dep : free_t[s];
                size_t row = (size_t)order[k] * (size_t)p + (size_t)s;
                double end = start + (back ? bwd[row] : fwd[row]);
                if (back)
                    eb[at] = end;
                else
                    ef[at] = end;
                free_t[s] = end;
                cursor[s]++;
                progress = 1;
            }
        }
    }
    double makespan = 0;
    for (int32_t s = 0; s < p; s++)
        makespan = free_t[s] > makespan ? free_t[s] : makespan;
    return makespan;
}

/* Stable merge sort of idx[0..n-1] ascending by key[idx] (ties: index). */
static void ifill_sort(int32_t *idx, int32_t *tmp, int32_t n, const double *key)
{
    for (int32_t width = 1; width < n; width *= 2) {
        for (int32_t lo = 0; lo < n; lo += 2 * width) {
            int32_t mid = lo + width < n ? lo + width : n;
            int32_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            int32_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) {
                int take_j = key[idx[j]] < key[idx[i]] ||
                             (key[idx[j]] == key[idx[i]] && idx[j] < idx[i]);
                tmp[k++] = take_j ? idx[j++] : idx[i++];
            }
            while (i < mid)
                tmp[k++] = idx[i++];
            while (j < hi)
                tmp[k++] = idx[j++];
        }
        memcpy(idx, tmp, (size_t)n * sizeof *idx);
    }
}

/* The stage-0 interval the next filler goes into, for the first `filled`
 * positions of `order` and zero-time placeholders after them. */
static double ifill_interval(int32_t p, int32_t l, const int32_t *order,
                             int32_t filled, const double *fwd,
                             const double *bwd, double *scratch,
                             int32_t *ident, int32_t *cursor, double *wf,
                             double *wb)
{
    size_t row = (size_t)p * sizeof(double);
    for (int32_t k = 0; k < l; k++) {
        ident[k] = k;
        if (k < filled) {
            memcpy(wf + (size_t)k * p, fwd + (size_t)order[k] * p, row);
            memcpy(wb + (size_t)k * p, bwd + (size_t)order[k] * p, row);
        } else {
            memset(wf + (size_t)k * p, 0, row);
            memset(wb + (size_t)k * p, 0, row);
        }
    }
    loom_ifill_makespan(p, l, ident, wf, wb, scratch, cursor);
    const double *ef = scratch, *eb = scratch + (size_t)l * p;
    /* B of position q at stage 0 may start once stage 1 finished it */
    int32_t q = filled == 1 ? 0 : filled - p + 1;
    double ready = p > 1 ? eb[(size_t)q * p + 1] : ef[(size_t)q * p];
    double from = filled == 1 ? ef[0] : eb[(size_t)(q - 1) * p];
    return ready > from ? ready - from : 0;
}

void loom_ifill_order(int32_t p, int32_t l, const double *fwd,
                      const double *bwd, int32_t *order, double *scratch,
                      int32_t *iscratch, double *zero_f, double *zero_b)
{
    if (l < 1)
        return;
    int32_t *idx = iscratch, *pool = iscratch + l, *tmp = iscratch + 2 * l;
    int32_t *ident = iscratch + 3 * l, *cursor = iscratch + 4 * l;
    double *size = zero_f, *fwd0 = zero_b;
    for (int32_t j = 0; j < l; j++) {
        size[j] = 0;
        for (int32_t s = 0; s < p; s++)
            size[j] += fwd[(size_t)j * p + s] + bwd[(size_t)j * p + s];
        fwd0[j] = fwd[(size_t)j * p];
        idx[j] = j;
    }
    ifill_sort(idx, tmp, l, size);
    /* smallest first; the p - 1 next smallest form the rear */
    order[0] = idx[0];
    int32_t n_rear = p - 1 < l - 1 ? p - 1 : l - 1;
    int32_t *rear = tmp; /* tmp is free again after sorting */
    for (int32_t t = 0; t < n_rear; t++)
        rear[t] = idx[1 + t];
    int32_t n_pool = l - 1 - n_rear;
    for (int32_t t = 0; t < n_pool; t++)
        pool[t] = idx[1 + n_rear + t];
    ifill_sort(pool, idx, n_pool, fwd0);
    /* the keys are no longer needed: zero_f / zero_b now hold the
     * placeholder-padded times of each interval's simulation */
    int32_t filled = 1;
    while (n_pool > 0) {
        int32_t k = filled == 1 ? (p - 1 < n_pool ? p - 1 : n_pool) : 1;
        if (k < 1)
            k = 1;
        double v = ifill_interval(p, l, order, filled, fwd, bwd, scratch,
                                  ident, cursor, zero_f, zero_b);
        int32_t best = 0;
        double best_gap = -1;
        double sum = 0;
        for (int32_t t = 0; t < k; t++)
            sum += fwd[(size_t)pool[t] * p];
        for (int32_t a = 0; a + k <= n_pool; a++) {
            if (a > 0)
                sum += fwd[(size_t)pool[a + k - 1] * p] - fwd[(size_t)pool[a - 1] * p];
            double gap = sum > v ? sum - v : v - sum;
            if (best_gap < 0 || gap < best_gap) {
                best_gap = gap;
                best = a;
            }
        }
        for (int32_t t = 0; t < k; t++)
            order[filled++] = pool[best + t];
        memmove(pool + best, pool + best + k,
                (size_t)(n_pool - best - k) * sizeof *pool);
        n_pool -= k;
    }
    /* the rear, largest first so the smallest ends the iteration */
    for (int32_t t = n_rear - 1; t >= 0; t--)
        order[filled++] = rear[t];
}
