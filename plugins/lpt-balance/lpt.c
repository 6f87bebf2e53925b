/*
 * lpt.c - greedy number partitioning into data-parallel groups (DistTrain
 * §6.1, Algorithm 2; LPT when sorted descending). See lpt.h.
 */
#include <string.h>
#include "lpt.h"

/* 1 when item a is taken before item b. */
static int lpt_before(const double *sizes, int descending, int32_t a, int32_t b)
{
    if (sizes[a] != sizes[b])
        return descending ? sizes[a] > sizes[b] : sizes[a] < sizes[b];
    return a < b;
}

/* Stable bottom-up merge sort of idx[0..n-1] (tmp has n entries). */
static void lpt_sort(const double *sizes, int descending, int32_t *idx,
                     int32_t *tmp, int32_t n)
{
    for (int32_t width = 1; width < n; width *= 2) {
        for (int32_t lo = 0; lo < n; lo += 2 * width) {
            int32_t mid = lo + width < n ? lo + width : n;
            int32_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            int32_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = lpt_before(sizes, descending, idx[j], idx[i]) ? idx[j++]
                                                                           : idx[i++];
            while (i < mid)
                tmp[k++] = idx[i++];
            while (j < hi)
                tmp[k++] = idx[j++];
        }
        memcpy(idx, tmp, (size_t)n * sizeof *idx);
    }
}

double loom_lpt_assign(const double *sizes, int32_t n, int32_t m,
                       int descending, int32_t cap, int32_t *scratch,
                       int32_t *group_of, int32_t *perm, double *loads)
{
    if (m < 1 || n < 0 || (cap > 0 && (int64_t)cap * m < n))
        return -1;
    int32_t *order = scratch, *count = scratch + n;
    for (int32_t i = 0; i < n; i++)
        order[i] = i;
    lpt_sort(sizes, descending, order, count, n);
    for (int32_t j = 0; j < m; j++)
        loads[j] = 0;
    /* the sort's buffer now counts items per group; groups >= n never
     * receive an item (a lower group is always still empty and ties to
     * the lowest index win), so n counters suffice */
    int32_t *held = count;
    for (int32_t j = 0; j < n; j++)
        held[j] = 0;
    for (int32_t k = 0; k < n; k++) {
        int32_t it = order[k], best = -1;
        for (int32_t j = 0; j < m; j++) {
            if (cap > 0 && j < n && held[j] >= cap)
                continue;
            if (best < 0 || loads[j] < loads[best])
                best = j;
        }
        group_of[it] = best;
        loads[best] += sizes[it];
        held[best]++;
    }
    /* perm: the groups in order, each in item order */
    int32_t at = 0;
    for (int32_t j = 0; j < m; j++)
        for (int32_t i = 0; i < n; i++)
            if (group_of[i] == j)
                perm[at++] = i;
    double worst = 0;
    for (int32_t j = 0; j < m; j++)
        worst = loads[j] > worst ? loads[j] : worst;
    return worst;
}
