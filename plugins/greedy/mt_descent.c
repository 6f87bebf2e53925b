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
    memset(d, 0, sizeof *d);
}

/* The best unit to move among the pairs live[0..n-1] (its pair in *pair,
 * the bytes it saves in *saved_out), or -1. */
static int32_t mt_pick(const loom_mt_units *u, const int32_t *live, int32_t n,
                       int32_t *pair, int64_t *saved_out)
{
    int32_t best = -1;
    int64_t best_saved = 0;
    double best_added = 0.0;
    for (int32_t i = 0; i < n; i++) {
        int32_t p = live[i];
        for (int32_t x = u->pair_unit_off[p]; x < u->pair_unit_off[p + 1]; x++) {
            int32_t s = u->chain_off[x] + u->state[x];
            if (s + 1 >= u->chain_off[x + 1])
                continue; /* already at its most frugal state */
            int64_t saved = u->chain_bytes[s] - u->chain_bytes[s + 1];
            double added = u->chain_ms[s + 1] - u->chain_ms[s];
            if (best < 0 || mt_better(saved, added, best_saved, best_added) ||
                (x < best && mt_tied(saved, added, best_saved, best_added))) {
                best = x;
                *pair = p;
                best_saved = saved;
                best_added = added;
            }
        }
    }
    *saved_out = best_saved;
    return best;
}

/* Runs the descent on one rank. */
static int mt_descend_rank(const loom_host_api *host, loom_mt_descent *d,
                           loom_mt_timeline *t, const loom_stage_graph *g,
                           loom_mt_units *u, int64_t *pair_bytes, int32_t r,
                           const char *who, int64_t *moves, loom_error *err)
{
    int64_t stat = g->static_bytes ? g->static_bytes[r] : 0;
    for (;;) {
        int64_t peak = loom_mt_rank_peak(t, r, pair_bytes);
        double total = (double)stat + (double)peak;
        if (total <= g->memory_cap_bytes)
            return LOOM_OK;
        int32_t n = t->peak_slot[r] >= 0
                        ? loom_mt_live_pairs(t, r, t->peak_slot[r], d->live)
                        : 0;
        int64_t saved = 0;
        int32_t pair = -1;
        int32_t x = mt_pick(u, d->live, n, &pair, &saved);
        if (x < 0)
            return host->error(
                err, LOOM_EINFEASIBLE,
                "%s: rank %d is %.0f bytes short of the memory cap of %.0f "
                "bytes: static %lld + activations %lld bytes at its peak, "
                "with every layer live there at its most frugal choice",
                who, r, total - g->memory_cap_bytes, g->memory_cap_bytes,
                (long long)stat, (long long)peak);
        u->state[x]++;
        pair_bytes[pair] -= saved;
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
        host->free(d->live);
        d->live = host->alloc(((size_t)t->n_pairs + 1) * sizeof *d->live);
        d->cap_live = d->live ? t->n_pairs : 0;
        if (!d->live)
            return host->error(err, LOOM_ENOMEM, "%s: out of memory", who);
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
