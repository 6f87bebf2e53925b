/*
 * ilpm_bound.c - a cheap lower bound for one rank's memory programme, so
 * that a warm start within the gap is recognised without an LP.
 *
 * Single row: with every pair at its fastest candidate the row is `need`
 * bytes over the cap. Relaxing the row's choices to fractions gives a
 * multiple-choice knapsack whose optimum takes, cheapest first, the steps
 * of each pair's lower convex hull of (bytes saved, ms added) until the
 * savings reach `need` (the last step partly).
 * Many rows: rows whose live pairs are pairwise disjoint need disjoint
 * savings, so their single-row bounds add up. A row at slot k whose pairs
 * are live until at most slot e (exclusive) is the interval [k, e); two
 * rows share no pair exactly when their intervals do not overlap, and the
 * best disjoint set is a weighted interval scheduling problem.
 */
#include <stdlib.h>
#include <string.h>
#include "ilp_memory.h"

/* Orders hull steps by slope (cheapest first), then pair. */
static int ilpm_seg_cmp(const void *a, const void *b)
{
    const loom_ilpm_seg *x = a, *y = b;
    if (x->slope != y->slope)
        return x->slope < y->slope ? -1 : 1;
    return (x->pair > y->pair) - (x->pair < y->pair);
}

/* Orders intervals by end, then start. */
static int ilpm_win_cmp(const void *a, const void *b)
{
    const loom_ilpm_win *x = a, *y = b;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return (x->start > y->start) - (x->start < y->start);
}

/* Makes room for n_segs steps and n_wins rows. */
static int ilpm_bound_reserve(const loom_host_api *host, loom_ilpm_work *w,
                              int32_t n_segs, int32_t n_wins)
{
    if (n_segs > w->cap_segs || !w->segs) {
        host->free(w->segs);
        w->segs = host->alloc(((size_t)n_segs + 1) * sizeof *w->segs);
        w->cap_segs = w->segs ? n_segs : 0;
    }
    if (n_wins > w->cap_wins || !w->wins) {
        host->free(w->wins);
        host->free(w->dp);
        w->wins = host->alloc(((size_t)n_wins + 1) * sizeof *w->wins);
        w->dp = host->alloc(((size_t)n_wins + 1) * sizeof *w->dp);
        w->cap_wins = w->wins && w->dp ? n_wins : 0;
    }
    return w->segs && w->wins && w->dp ? LOOM_OK : LOOM_ENOMEM;
}

/* Appends pair p's lower-hull steps from its fastest candidate; returns
 * the new count. Candidates are Pareto-sorted (time up, bytes down). */
static int32_t ilpm_hull(const loom_mckp_set *set, int32_t p,
                         loom_ilpm_seg *out, int32_t n)
{
    int32_t a = set->cand_off[p], b = set->cand_off[p + 1];
    int32_t at = a; /* the hull point reached so far */
    while (at + 1 < b) {
        /* the next hull point: the candidate with the smallest slope */
        int32_t best = -1;
        double best_slope = 0.0;
        for (int32_t c = at + 1; c < b; c++) {
            double dx = (double)(set->cand_bytes[at] - set->cand_bytes[c]);
            double dy = set->cand_ms[c] - set->cand_ms[at];
            double slope = dy / dx;
            if (best < 0 || slope <= best_slope) {
                best = c; /* ties: the farther point, fewer steps */
                best_slope = slope;
            }
        }
        out[n].slope = best_slope;
        out[n].bytes = (double)(set->cand_bytes[at] - set->cand_bytes[best]);
        out[n].pair = p;
        out[n].reserved = 0;
        n++;
        at = best;
    }
    return n;
}

/* The single-row bound of row i at slot k (steps sorted by slope). */
static double ilpm_row_gain(const loom_ilpm_work *w, const loom_mt_timeline *t,
                            const loom_stage_graph *g, const loom_mckp_set *set,
                            int32_t r, int32_t i, int32_t n_segs)
{
    int32_t k = w->row_slot[i];
    double need = (double)(g->static_bytes ? g->static_bytes[r] : 0) -
                  g->memory_cap_bytes;
    for (int32_t x = w->row_off[i]; x < w->row_off[i + 1]; x++)
        need += (double)set->cand_bytes[set->cand_off[w->row_pairs[x]]];
    double gain = 0.0;
    for (int32_t s = 0; s < n_segs && need > 0.0; s++) {
        int32_t p = w->segs[s].pair;
        if (t->pair_open[p] > k || t->pair_close[p] <= k)
            continue; /* not live at this row */
        double take = w->segs[s].bytes < need ? w->segs[s].bytes : need;
        gain += take * w->segs[s].slope;
        need -= take;
    }
    return need > 0.0 ? 0.0 : gain; /* unreachable row: claim nothing */
}

/* The window bound of rank r's rows [lo, hi) (see ilp_memory.h). */
double loom_ilpm_window_bound(const loom_host_api *host, loom_ilpm_work *w,
                              const loom_mt_timeline *t,
                              const loom_stage_graph *g,
                              const loom_mckp_set *set, int32_t r, int32_t lo,
                              int32_t hi)
{
    int32_t n_segs = 0;
    for (int32_t i = t->rank_pair_off[r]; i < t->rank_pair_off[r + 1]; i++) {
        int32_t p = t->rank_pairs[i];
        n_segs += set->cand_off[p + 1] - set->cand_off[p];
    }
    if (ilpm_bound_reserve(host, w, n_segs, hi - lo) != LOOM_OK)
        return -1.0;
    n_segs = 0;
    for (int32_t i = t->rank_pair_off[r]; i < t->rank_pair_off[r + 1]; i++)
        n_segs = ilpm_hull(set, t->rank_pairs[i], w->segs, n_segs);
    qsort(w->segs, (size_t)n_segs, sizeof *w->segs, ilpm_seg_cmp);
    int32_t n = hi - lo;
    for (int32_t i = lo; i < hi; i++) {
        loom_ilpm_win *win = &w->wins[i - lo];
        win->start = w->row_slot[i];
        win->end = win->start + 1;
        for (int32_t x = w->row_off[i]; x < w->row_off[i + 1]; x++)
            if (t->pair_close[w->row_pairs[x]] > win->end)
                win->end = t->pair_close[w->row_pairs[x]];
        win->gain_ms = ilpm_row_gain(w, t, g, set, r, i, n_segs);
    }
    qsort(w->wins, (size_t)n, sizeof *w->wins, ilpm_win_cmp);
    /* dp[j]: best disjoint sum among the first j intervals by end */
    w->dp[0] = 0.0;
    for (int32_t j = 1; j <= n; j++) {
        const loom_ilpm_win *win = &w->wins[j - 1];
        int32_t a = 0, b = j - 1; /* intervals ending at or before start */
        while (a < b) {
            int32_t mid = (a + b + 1) / 2;
            if (w->wins[mid - 1].end <= win->start)
                a = mid;
            else
                b = mid - 1;
        }
        double take = win->gain_ms + w->dp[a];
        w->dp[j] = take > w->dp[j - 1] ? take : w->dp[j - 1];
    }
    return w->dp[n];
}
