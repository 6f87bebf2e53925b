/*
 * mt_descent.c - greedy memory descent (PipeWeaver section 6.3, the
 * greedy solution its ILP is warmed with): while a rank's peak is over the
 * cap, move the unit with the best bytes-saved per ms-added ratio among
 * the pairs live at that peak one step down its chain of ever more frugal
 * states.
 */
#include <string.h>
#include <loom/kits/memtune.h>

/* How a move saving `saved` bytes for `added` ms ranks: *is_free is 1
 * when it adds no time (those outrank every other, more bytes first);
 * the key is then the bytes saved, else bytes saved per ms added. Larger
 * keys move first. */
static double mt_key(int64_t saved, double added, uint8_t *is_free)
{
    *is_free = !(added > 0.0);
    return *is_free ? (double)saved : (double)saved / added;
}

/* Releases the descent's scratch. */
void loom_mt_descent_free(const loom_host_api *host, loom_mt_descent *d)
{
    host->free(d->live);
    host->free(d->heap);
    host->free(d->best_epoch);
    host->free(d->best_unit);
    host->free(d->best_saved);
    host->free(d->best_key);
    host->free(d->best_free);
    memset(d, 0, sizeof *d);
}

/* Recomputes pair p's best next move into the cache: the largest key,
 * ties to the lower unit. */
static void mt_pair_best(loom_mt_descent *d, const loom_mt_units *u, int32_t p)
{
    int32_t best = -1;
    int64_t best_saved = 0;
    double best_key = 0.0;
    uint8_t best_free = 0;
    for (int32_t x = u->pair_unit_off[p]; x < u->pair_unit_off[p + 1]; x++) {
        int32_t s = u->chain_off[x] + u->state[x];
        if (s + 1 >= u->chain_off[x + 1])
            continue; /* already at its most frugal state */
        int64_t saved = u->chain_bytes[s] - u->chain_bytes[s + 1];
        uint8_t is_free = 0;
        double key = mt_key(saved, u->chain_ms[s + 1] - u->chain_ms[s],
                            &is_free);
        if (best < 0 || is_free > best_free ||
            (is_free == best_free && key > best_key)) {
            best = x;
            best_saved = saved;
            best_key = key;
            best_free = is_free;
        }
    }
    d->best_unit[p] = best;
    d->best_saved[p] = best_saved;
    d->best_key[p] = best_key;
    d->best_free[p] = best_free;
}

/* 1 when unit y, about to move, makes exactly the move unit x just made
 * (x moved from state k to k + 1, y sits at k with an identical chain
 * from there on). */
static int mt_same_move(const loom_mt_units *u, int32_t x, int32_t y)
{
    int32_t k = u->state[x] - 1;
    if (u->state[y] != k)
        return 0;
    int32_t ax = u->chain_off[x], ay = u->chain_off[y];
    int32_t lx = u->chain_off[x + 1] - ax, ly = u->chain_off[y + 1] - ay;
    if (lx != ly)
        return 0;
    for (int32_t i = k; i < lx; i++)
        if (u->chain_bytes[ax + i] != u->chain_bytes[ay + i] ||
            u->chain_ms[ax + i] != u->chain_ms[ay + i])
            return 0;
    return 1;
}

/* 1 when move a beats move b: a move that adds no time first, then the
 * larger key, then the lower unit. */
static int mt_move_wins(const loom_mt_move *a, const loom_mt_move *b)
{
    int fa = a->pair & 1, fb = b->pair & 1;
    if (fa != fb)
        return fa > fb;
    if (a->key != b->key)
        return a->key > b->key;
    return a->unit < b->unit;
}

/* Restores the heap order of h[0..n) below position i. */
static void mt_sift(loom_mt_move *h, int32_t n, int32_t i)
{
    loom_mt_move x = h[i];
    for (;;) {
        int32_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && mt_move_wins(&h[c + 1], &h[c]))
            c++;
        if (!mt_move_wins(&h[c], &x))
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

/* The heap entry of pair p's cached move. */
static loom_mt_move mt_move_of(const loom_mt_descent *d, int32_t p)
{
    loom_mt_move m = {d->best_key[p], d->best_unit[p], p * 2 + d->best_free[p]};
    return m;
}

/* Puts the live pairs that can still move (computing the cached move of
 * pairs not seen in this descent yet) into the heap and heapifies it;
 * returns how many. */
static int32_t mt_heapify(loom_mt_descent *d, const loom_mt_units *u,
                          int32_t n)
{
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t p = d->live[i];
        if (d->best_epoch[p] != d->epoch) {
            d->best_epoch[p] = d->epoch;
            mt_pair_best(d, u, p);
        }
        if (d->best_unit[p] >= 0)
            d->heap[m++] = mt_move_of(d, p);
    }
    for (int32_t i = m / 2 - 1; i >= 0; i--)
        mt_sift(d->heap, m, i);
    return m;
}

/* Runs the descent on one rank: takes the rank's peak slot, moves the
 * best units live there until that slot fits the cap (every live pair
 * covers the slot, so its bytes drop by exactly what each move saves),
 * then goes on with the next peak, if it is still over the cap. Fixing a
 * slot in one go, rather than switching whenever the peak moves to a
 * neighbouring slot of nearly equal height, keeps the live set (a pass
 * over the rank's pairs and a heapify) to one build per slot fixed. */
static int mt_descend_rank(const loom_host_api *host, loom_mt_descent *d,
                           loom_mt_timeline *t, const loom_stage_graph *g,
                           loom_mt_units *u, int64_t *pair_bytes, int32_t r,
                           const char *who, int64_t *moves, loom_error *err)
{
    double cap = g->memory_cap_bytes;
    int64_t stat = g->static_bytes ? g->static_bytes[r] : 0;
    int64_t peak = loom_mt_rank_peak(t, r, pair_bytes);
    while ((double)stat + (double)peak > cap) {
        int32_t slot = t->peak_slot[r];
        int64_t at = peak; /* activation bytes after `slot` */
        int32_t n = slot >= 0 ? loom_mt_live_pairs(t, r, slot, d->live) : 0;
        n = mt_heapify(d, u, n); /* d->heap[0..n) */
        while ((double)stat + (double)at > cap) {
            if (n == 0)
                return host->error(
                    err, LOOM_EINFEASIBLE,
                    "%s: rank %d is %.0f bytes short of the memory cap of "
                    "%.0f bytes: static %lld + activations %lld bytes at its "
                    "peak, with every layer live there at its most frugal "
                    "choice",
                    who, r, (double)stat + (double)at - cap, cap,
                    (long long)stat, (long long)at);
            int32_t p = d->heap[0].pair >> 1;
            int32_t x = d->best_unit[p];
            int64_t saved = d->best_saved[p];
            u->state[x]++;
            pair_bytes[p] -= saved;
            at -= saved;
            /* The pair's next units that are the same layer in the same
             * state make the same move with the same key: take them while
             * the slot still needs bytes, then rescan the pair once. */
            for (int32_t y = x + 1; y < u->pair_unit_off[p + 1] &&
                                    (double)stat + (double)at > cap &&
                                    mt_same_move(u, x, y);
                 y++) {
                u->state[y]++;
                pair_bytes[p] -= saved;
                at -= saved;
                if (moves)
                    (*moves)++;
            }
            mt_pair_best(d, u, p);
            if (d->best_unit[p] < 0)
                d->heap[0] = d->heap[--n]; /* p cannot move any more */
            else
                d->heap[0] = mt_move_of(d, p);
            if (n > 0)
                mt_sift(d->heap, n, 0);
            if (moves)
                (*moves)++;
        }
        peak = loom_mt_rank_peak(t, r, pair_bytes);
    }
    return LOOM_OK;
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
        d->heap = host->alloc(n * sizeof *d->heap);
        d->best_epoch = host->alloc(n * sizeof *d->best_epoch);
        d->best_unit = host->alloc(n * sizeof *d->best_unit);
        d->best_saved = host->alloc(n * sizeof *d->best_saved);
        d->best_key = host->alloc(n * sizeof *d->best_key);
        d->best_free = host->alloc(n * sizeof *d->best_free);
        d->cap_live = t->n_pairs;
        if (d->best_epoch)
            memset(d->best_epoch, 0, n * sizeof *d->best_epoch);
        if (!d->live || !d->heap || !d->best_epoch || !d->best_unit || !d->best_saved || !d->best_key ||
            !d->best_free) {
            loom_mt_descent_free(host, d);
            return host->error(err, LOOM_ENOMEM, "%s: out of memory", who);
        }
    }
    if (++d->epoch == 0) { /* wrapped: no cache may look current */
        memset(d->best_epoch, 0, ((size_t)d->cap_live + 1) * sizeof *d->best_epoch);
        d->epoch = 1;
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
