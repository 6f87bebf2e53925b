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

/* Index of F(k, s) in stage s's 1F1B order (ifill_op), 2l when k >= l. */
static int32_t ifill_f_index(int32_t p, int32_t l, int32_t s, int32_t k)
{
    if (k >= l)
        return 2 * l;
    int32_t w = p - s - 1 < l ? p - s - 1 : l;
    return k < w ? k : w + 2 * (k - w);
}

/* The simulation loom_ifill_order measures intervals with, kept between
 * intervals: the first `real` positions of the order have their times, the
 * others take none. Filling positions only changes the ops from each
 * stage's F of the first newly filled position on (earlier ops depend on
 * earlier positions only, along a stage and across stages alike), so
 * each interval rolls the stages back to there and runs only the ops on
 * positions up to what the interval reads. */
typedef struct ifill_sim {
    int32_t p, l, real;   /* positions with their own times */
    const int32_t *order;
    const double *fwd, *bwd;
    double *ef, *eb;      /* per (position, stage): end of F / B, -1 not run */
    double *free_t;       /* per stage: end of its last op run */
    int32_t *cursor;      /* per stage: ops run */
} ifill_sim;

/* Runs every stage's ops on positions up to `last`, as far as their
 * dependencies allow. */
static void ifill_sim_run(ifill_sim *m, int32_t last)
{
    int32_t p = m->p, l = m->l;
    int progress = 1;
    while (progress) {
        progress = 0;
        for (int32_t s = 0; s < p; s++) {
            int32_t limit = ifill_f_index(p, l, s, last + 1);
            while (m->cursor[s] < limit) {
                int32_t k;
                int back = ifill_op(p, l, s, m->cursor[s], &k);
                size_t at = (size_t)k * (size_t)p + (size_t)s;
                double dep = 0;
                if (!back && s > 0)
                    dep = m->ef[at - 1];
                else if (back)
                    dep = s < p - 1 ? m->eb[at + 1] : m->ef[at];
                if (dep < 0)
                    break;
                double start = dep > m->free_t[s] ? dep : m->free_t[s], ms = 0;
                if (k < m->real) {
                    size_t row = (size_t)m->order[k] * (size_t)p + (size_t)s;
                    ms = back ? m->bwd[row] : m->fwd[row];
                }
                double end = start + ms;
                if (back)
                    m->eb[at] = end;
                else
                    m->ef[at] = end;
                m->free_t[s] = end;
                m->cursor[s]++;
                progress = 1;
            }
        }
    }
}

/* Clears m: no op run on any stage. */
static void ifill_sim_init(ifill_sim *m)
{
    size_t n = (size_t)m->l * (size_t)m->p;
    for (size_t i = 0; i < 2 * n; i++)
        m->ef[i] = -1; /* ef and eb are one array */
    for (int32_t s = 0; s < m->p; s++) {
        m->free_t[s] = 0;
        m->cursor[s] = 0;
    }
}

double loom_ifill_makespan(int32_t p, int32_t l, const int32_t *order,
                           const double *fwd, const double *bwd,
                           double *scratch, int32_t *cursor)
{
    size_t n = (size_t)l * (size_t)p;
    ifill_sim m = {p, l, l, order, fwd, bwd, scratch, scratch + n, scratch + 2 * n, cursor};
    ifill_sim_init(&m);
    ifill_sim_run(&m, l - 1);
    double makespan = 0;
    for (int32_t s = 0; s < p; s++)
        makespan = m.free_t[s] > makespan ? m.free_t[s] : makespan;
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

/* Gives positions up to real - 1 their times: every stage forgets its ops
 * from the F of the first position that had none. */
static void ifill_sim_fill(ifill_sim *m, int32_t real)
{
    int32_t p = m->p, l = m->l;
    for (int32_t s = 0; s < p; s++) {
        int32_t from = ifill_f_index(p, l, s, m->real);
        for (int32_t i = from; i < m->cursor[s]; i++) {
            int32_t k;
            int back = ifill_op(p, l, s, i, &k);
            (back ? m->eb : m->ef)[(size_t)k * (size_t)p + (size_t)s] = -1;
        }
        if (from < m->cursor[s]) {
            m->cursor[s] = from;
            m->free_t[s] = 0;
            if (from > 0) {
                int32_t k;
                int back = ifill_op(p, l, s, from - 1, &k);
                m->free_t[s] = (back ? m->eb : m->ef)[(size_t)k * (size_t)p + (size_t)s];
            }
        }
    }
    m->real = real;
}

/* The stage-0 interval the next filler goes into, for the first `filled`
 * positions of the order and zero-time placeholders after them. */
static double ifill_interval(ifill_sim *m, int32_t filled)
{
    int32_t p = m->p;
    ifill_sim_fill(m, filled);
    /* B of position q at stage 0 may start once stage 1 finished it; both
     * it and the B before it at stage 0 wait for ops on positions up to
     * q + p - 2 only */
    int32_t q = filled == 1 ? 0 : filled - p + 1;
    int32_t last = q + p - 1 > filled ? q + p - 1 : filled;
    ifill_sim_run(m, last < m->l ? last : m->l - 1);
    double ready = p > 1 ? m->eb[(size_t)q * p + 1] : m->ef[(size_t)q * p];
    double from = filled == 1 ? m->ef[0] : m->eb[(size_t)(q - 1) * p];
    return ready > from ? ready - from : 0;
}

/* The first of pool[0..n) (ascending by key) whose key is >= v; n when
 * none. */
static int32_t ifill_lower_bound(const int32_t *pool, int32_t n, const double *key, double v)
{
    int32_t lo = 0, hi = n;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (key[pool[mid]] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Follows links from i to an entry that links to itself (a live item,
 * or the sentinel), shortening the path behind it. */
static int32_t ifill_live(int32_t *link, int32_t i)
{
    int32_t root = i;
    while (link[root] != root)
        root = link[root];
    while (link[i] != root) {
        int32_t up = link[i];
        link[i] = root;
        i = up;
    }
    return root;
}

void loom_ifill_order(int32_t p, int32_t l, const double *fwd,
                      const double *bwd, int32_t *order, double *scratch,
                      int32_t *iscratch, double *key_size, double *key_fwd0)
{
    if (l < 1)
        return;
    int32_t *idx = iscratch, *pool = iscratch + l, *tmp = iscratch + 2 * l;
    int32_t *cursor = iscratch + 3 * l;
    double *size = key_size, *fwd0 = key_fwd0;
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
    /* the intervals' simulation, grown one filled position at a time */
    ifill_sim m = {p, l, 0, order, fwd, bwd, scratch, scratch + (size_t)l * p,
                   scratch + 2 * (size_t)l * p, cursor};
    ifill_sim_init(&m);
    int32_t filled = 1;
    if (n_pool > 0) { /* interval 1: a window of k consecutive items */
        int32_t k = p - 1 < n_pool ? p - 1 : n_pool;
        k = k < 1 ? 1 : k;
        double v = ifill_interval(&m, filled);
        int32_t best = 0;
        double best_gap = -1, sum = 0;
        for (int32_t t = 0; t < k; t++)
            sum += fwd0[pool[t]];
        for (int32_t a = 0; a + k <= n_pool; a++) {
            if (a > 0)
                sum += fwd0[pool[a + k - 1]] - fwd0[pool[a - 1]];
            double gap = sum > v ? sum - v : v - sum;
            if (best_gap < 0 || gap < best_gap) {
                best_gap = gap;
                best = a;
            }
        }
        for (int32_t t = 0; t < k; t++)
            order[filled++] = pool[best + t];
        memmove(pool + best, pool + best + k, (size_t)(n_pool - best - k) * sizeof *pool);
        n_pool -= k;
    }
    /* every later interval takes the one item closest to it: the nearest
     * live item below and above it in the sorted pool (ties: the earlier),
     * found through next/previous-live links (idx is free after the sort;
     * tmp past the rear has room for n_pool + 1) */
    int32_t *next = idx, *prev = tmp + n_rear;
    for (int32_t i = 0; i <= n_pool; i++) {
        next[i] = i;
        prev[i] = i; /* prev is shifted by one: prev[i + 1] is item i */
    }
    for (int32_t left = n_pool; left > 0; left--) {
        double v = ifill_interval(&m, filled);
        int32_t at = ifill_lower_bound(pool, n_pool, fwd0, v);
        int32_t hi = ifill_live(next, at);         /* first live >= v */
        int32_t lo = ifill_live(prev, at) - 1;     /* last live < v */
        if (lo >= 0) /* the earliest live item of lo's value */
            lo = ifill_live(next, ifill_lower_bound(pool, n_pool, fwd0, fwd0[pool[lo]]));
        int32_t pick = hi >= n_pool || (lo >= 0 && v - fwd0[pool[lo]] <= fwd0[pool[hi]] - v)
                           ? lo : hi;
        order[filled++] = pool[pick];
        next[pick] = pick + 1;
        prev[pick + 1] = pick;
    }
    /* the rear, largest first so the smallest ends the iteration */
    for (int32_t t = n_rear - 1; t >= 0; t--)
        order[filled++] = rear[t];
}
