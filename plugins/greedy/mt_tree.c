/*
 * mt_tree.c - a rank's memory timeline as a segment tree: leaf k holds
 * the rank's activation bytes after its k-th slot (a prefix sum of the
 * deltas, as the simulator accumulates them). Changing one pair's bytes
 * adds to the leaves of the slots it is live in ([open, close)), and the
 * root holds the peak with its leftmost slot, so a greedy move costs
 * O(log slots) instead of a pass over the rank.
 */
#include "memtune.h"

/* Recomputes node x from its children (the leftmost maximum wins ties);
 * a node's lazy tag applies to its whole range. */
static void mt_pull(loom_mt_timeline *t, int32_t x)
{
    int32_t a = 2 * x, b = 2 * x + 1;
    int left = t->tree_max[a] >= t->tree_max[b];
    t->tree_max[x] = (left ? t->tree_max[a] : t->tree_max[b]) + t->tree_lazy[x];
    t->tree_idx[x] = left ? t->tree_idx[a] : t->tree_idx[b];
}

/* Builds node x over leaves [lo, hi) from t->tree_vals. */
static void mt_build(loom_mt_timeline *t, int32_t x, int32_t lo, int32_t hi)
{
    t->tree_lazy[x] = 0;
    if (hi - lo == 1) {
        t->tree_max[x] = t->tree_vals[lo];
        t->tree_idx[x] = lo;
        return;
    }
    int32_t mid = lo + (hi - lo) / 2;
    mt_build(t, 2 * x, lo, mid);
    mt_build(t, 2 * x + 1, mid, hi);
    mt_pull(t, x);
}

/* Adds d to leaves [a, b) under node x, which covers [lo, hi). */
static void mt_add(loom_mt_timeline *t, int32_t x, int32_t lo, int32_t hi,
                   int32_t a, int32_t b, int64_t d)
{
    if (b <= lo || hi <= a)
        return;
    if (a <= lo && hi <= b) {
        t->tree_max[x] += d;
        t->tree_lazy[x] += d;
        return;
    }
    int32_t mid = lo + (hi - lo) / 2;
    mt_add(t, 2 * x, lo, mid, a, b, d);
    mt_add(t, 2 * x + 1, mid, hi, a, b, d);
    mt_pull(t, x);
}

/* Copies the root into rank r's peak; memory that never rises above 0
 * has no peak slot. */
static int64_t mt_root(loom_mt_timeline *t, int32_t r)
{
    int64_t peak = t->tree_n > 0 ? t->tree_max[1] : 0;
    t->peak_bytes[r] = peak > 0 ? peak : 0;
    t->peak_slot[r] = peak > 0 ? t->rank_off[r] + t->tree_idx[1] : -1;
    return t->peak_bytes[r];
}

/* Builds rank r's tree and returns its peak (see memtune.h). */
int64_t loom_mt_rank_peak(loom_mt_timeline *t, int32_t r,
                          const int64_t *pair_bytes)
{
    int32_t base = t->rank_off[r], n = t->rank_off[r + 1] - base;
    int64_t cur = 0;
    for (int32_t k = 0; k < n; k++) {
        int32_t o = t->slot_open[base + k], c = t->slot_close[base + k];
        if (o >= 0)
            cur += pair_bytes[o];
        if (c >= 0)
            cur -= pair_bytes[c];
        t->tree_vals[k] = cur;
    }
    t->tree_rank = r;
    t->tree_n = n;
    if (n > 0)
        mt_build(t, 1, 0, n);
    return mt_root(t, r);
}

/* Changes pair p's bytes in its rank's tree (see memtune.h). */
int64_t loom_mt_rank_add(loom_mt_timeline *t, int32_t p, int64_t delta)
{
    int32_t r = t->pair_rank[p], base = t->rank_off[r];
    if (t->tree_rank == r && t->tree_n > 0)
        mt_add(t, 1, 0, t->tree_n, t->pair_open[p] - base,
               t->pair_close[p] - base, delta);
    return mt_root(t, r);
}
