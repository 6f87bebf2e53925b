/*
 * mt_descent.c - greedy memory descent (PipeWeaver section 6.3, the
 * greedy solution its ILP is warmed with): while a rank's peak is over the
 * cap, move the unit with the best bytes-saved per ms-added ratio among
 * the pairs live at that peak one step down its chain of ever more frugal
 * states.
 */
#include <string.h>
#include "memtune.h"

/* 1 when saving sa bytes for ta ms beats saving sb bytes for tb ms. A move
 * that adds no time beats any that does (then more bytes saved wins). */
static int mt_better(int64_t sa, double ta, int64_t sb, double tb)
{
    int free_a = !(ta > 0.0), free_b = !(tb > 0.0);
    if (free_a != free_b)
        return free_a;
    if (free_a)
        return sa > sb;
    return (double)sa * tb > (double)sb * ta;
}

/* 1 when the two moves compare equal (neither beats the other). */
static int mt_tied(int64_t sa, double ta, int64_t sb, double tb)
{
    return !mt_better(sa, ta, sb, tb) && !mt_better(sb, tb, sa, ta);
}

/* Releases the descent's scratch. */
void loom_mt_descent_free(const loom_host_api *host, loom_mt_descent *d)
{
    host->free(d->live);
    host->free(d->best_unit);
    host->free(d->best_saved);
    host->free(d->best_added);
    memset(d, 0, sizeof *d);
}

/* 1 when move (sa, ta) of unit xa beats move (sb, tb) of unit xb: the
 * better ratio, ties to the lower unit. */
static int mt_wins(int64_t sa, double ta, int32_t xa, int64_t sb, double tb,
                   int32_t xb)
{
    if (mt_better(sa, ta, sb, tb))
        return 1;
    return xa < xb && mt_tied(sa, ta, sb, tb);
}

/* Recomputes pair p's best next move into the cache. */
static void mt_pair_best(loom_mt_descent *d, const loom_mt_units *u, int32_t p)
{
    int32_t best = -1;
    int64_t best_saved = 0;
    double best_added = 0.0;
    for (int32_t x = u->pair_unit_off[p]; x < u->pair_unit_off[p + 1]; x++) {
        int32_t s = u->chain_off[x] + u->state[x];
        if (s + 1 >= u->chain_off[x + 1])
            continue; /* already at its most frugal state */
        int64_t saved = u->chain_bytes[s] - u->chain_bytes[s + 1];
        double added = u->chain_ms[s + 1] - u->chain_ms[s];
        if (best < 0 || mt_wins(saved, added, x, best_saved, best_added, best)) {
            best = x;
            best_saved = saved;
            best_added = added;
        }
    }
    d->best_unit[p] = best;
    d->best_saved[p] = best_saved;
    d->best_added[p] = best_added;
}

/* 1 when pair a's cached move beats pair b's. */
static int mt_pair_wins(const loom_mt_descent *d, int32_t a, int32_t b)
{
    return mt_wins(d->best_saved[a], d->best_added[a], d->best_unit[a],
                   d->best_saved[b], d->best_added[b], d->best_unit[b]);
}

/* Restores the heap order of d->live[0..n) below position i (the best
 * cached move at the root). */
static void mt_sift(const loom_mt_descent *d, int32_t n, int32_t i)
{
    int32_t *h = d->live;
    for (;;) {
        int32_t a = 2 * i + 1, b = a + 1, top = i;
        if (a < n && mt_pair_wins(d, h[a], h[top]))
            top = a;
        if (b < n && mt_pair_wins(d, h[b], h[top]))
            top = b;
        if (top == i)
            return;
        int32_t x = h[i];
        h[i] = h[top];
        h[top] = x;
        i = top;
    }
}

/* Keeps the live pairs that can still move and heapifies them; returns
 * how many. */
static int32_t mt_heapify(loom_mt_descent *d, int32_t n)
{
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++)
        if (d->best_unit[d->live[i]] >= 0)
            d->live[m++] = d->live[i];
    for (int32_t i = m / 2 - 1; i >= 0; i--)
        mt_sift(d, m, i);
    return m;
}

/* Runs the descent on one rank. */
static int mt_descend_rank(const loom_host_api *host, loom_mt_descent *d,
                           loom_mt_timeline *t, const loom_stage_graph *g,
                           loom_mt_units *u, int64_t *pair_bytes, int32_t r,
                           const char *who, int64_t *moves, loom_error *err)
{
    int64_t stat = g->static_bytes ? g->static_bytes[r] : 0;
    for (int32_t i = t->rank_pair_off[r]; i < t->rank_pair_off[r + 1]; i++)
        mt_pair_best(d, u, t->rank_pairs[i]);
    int64_t peak = loom_mt_rank_peak(t, r, pair_bytes);
    int32_t live_slot = -1, n = 0; /* d->live[0..n) is a heap */
    for (;;) {
        double total = (double)stat + (double)peak;
        if (total <= g->memory_cap_bytes)
            return LOOM_OK;
        if (t->peak_slot[r] != live_slot) {
            live_slot = t->peak_slot[r];
            n = live_slot >= 0 ? loom_mt_live_pairs(t, r, live_slot, d->live)
                               : 0;
            n = mt_heapify(d, n);
        }
        if (n == 0)
            return host->error(
                err, LOOM_EINFEASIBLE,
                "%s: rank %d is %.0f bytes short of the memory cap of %.0f "
                "bytes: static %lld + activations %lld bytes at its peak, "
                "with every layer live there at its most frugal choice",
                who, r, total - g->memory_cap_bytes, g->memory_cap_bytes,
                (long long)stat, (long long)peak);
        int32_t p = d->live[0];
        int64_t saved = d->best_saved[p];
        u->state[d->best_unit[p]]++;
        pair_bytes[p] -= saved;
        mt_pair_best(d, u, p);
        if (d->best_unit[p] < 0)
            d->live[0] = d->live[--n]; /* p cannot move any more */
        mt_sift(d, n, 0);
        peak = loom_mt_rank_add(t, p, -saved);
        if (moves)
            (*moves)++;
    }
}

/* Greedy descent over every rank over the cap (see header). */
int loom_mt_descend(const loom_host_api *host, loom_mt_descent *d,
                    loom_mt_timeline *t, const loom_stage_graph *g,
                    loom_mt_units *u, int64_t *pair_bytes, int32_t only_rank,
                    const char *who, int64_t *moves, loom_error *err)
{
    if (!(g->memory_cap_bytes > 0.0))
        return LOOM_OK;
    if (t->n_pairs > d->cap_live || !d->live) {
        size_t n = (size_t)t->n_pairs + 1;
        loom_mt_descent_free(host, d);
        d->live = host->alloc(n * sizeof *d->live);
        d->best_unit = host->alloc(n * sizeof *d->best_unit);
        d->best_saved = host->alloc(n * sizeof *d->best_saved);
        d->best_added = host->alloc(n * sizeof *d->best_added);
        d->cap_live = t->n_pairs;
        if (!d->live || !d->best_unit || !d->best_saved || !d->best_added) {
            loom_mt_descent_free(host, d);
            return host->error(err, LOOM_ENOMEM, "%s: out of memory", who);
        }
    }
    for (int32_t r = 0; r < t->n_ranks; r++) {
        if (only_rank >= 0 && r != only_rank)
            continue;
        int rc = mt_descend_rank(host, d, t, g, u, pair_bytes, r, who, moves,
                                 err);
        if (rc != LOOM_OK)
            return rc;
    }
    return LOOM_OK;
}
