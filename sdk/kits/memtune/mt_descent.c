/*
 * mt_descent.c - greedy memory descent (PipeWeaver section 6.3, the
 * greedy solution its ILP is warmed with): while a rank's peak is over the
 * cap, move the unit with the best bytes-saved per ms-added ratio among
 * the pairs live at that peak one step down its chain of ever more frugal
 * states.
 */
#include <stdint.h>
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
    host->free(d->next);
    host->free(d->heap);
    host->free(d->best);
    host->free(d->peak_max);
    host->free(d->peak_add);
    host->free(d->peak_diff);
    host->free(d->moved_pair);
    host->free(d->moved_bytes);
    int32_t rescans = d->rescans, batch_span = d->batch_span;
    memset(d, 0, sizeof *d);
    d->rescans = rescans;
    d->batch_span = batch_span;
}

/* Peaks a rank fixes by rescanning its slots (loom_mt_rank_peak) before
 * the descent tracks them in the tree instead; on a rank of at least
 * LOOM_MT_LONG_RANK slots, LOOM_MT_LONG_RESCANS (a rescan there costs a
 * tree build, and such ranks fix many peaks). */
#define LOOM_MT_RESCANS 8
#define LOOM_MT_LONG_RANK 16384
#define LOOM_MT_LONG_RESCANS 2

/* Builds the tree over rank r's slots from pair_bytes: leaf k holds the
 * activation bytes at the rank's k-th slot as loom_mt_rank_peak measures
 * them (after the slot's allocation, before its releases). */
static int mt_tree_build(const loom_host_api *host, loom_mt_descent *d,
                         const loom_mt_timeline *t, int32_t r, const int64_t *pair_bytes)
{
    int32_t lo = t->rank_off[r], n = t->rank_off[r + 1] - lo, leaves = 1;
    while (leaves < n)
        leaves *= 2;
    if (leaves > d->cap_peak) {
        host->free(d->peak_max);
        host->free(d->peak_add);
        host->free(d->peak_diff);
        d->peak_max = host->alloc(2 * (size_t)leaves * sizeof *d->peak_max);
        d->peak_add = host->alloc(2 * (size_t)leaves * sizeof *d->peak_add);
        d->peak_diff = host->alloc(((size_t)leaves + 1) * sizeof *d->peak_diff);
        d->cap_peak = d->peak_max && d->peak_add && d->peak_diff ? leaves : 0;
        if (!d->cap_peak)
            return LOOM_ENOMEM;
    }
    d->peak_leaves = leaves;
    int64_t *mx = d->peak_max, cur = 0;
    for (int32_t k = 0; k < leaves; k++) {
        if (k < n) {
            int32_t o = t->slot_open[lo + k];
            if (o >= 0)
                cur += pair_bytes[o];
            mx[leaves + k] = cur;
            for (int32_t c = t->slot_close[lo + k]; c >= 0; c = t->close_next[c])
                cur -= pair_bytes[c];
        } else {
            mx[leaves + k] = INT64_MIN / 4; /* never the maximum */
        }
    }
    for (int32_t v = leaves - 1; v >= 1; v--)
        mx[v] = mx[2 * v] > mx[2 * v + 1] ? mx[2 * v] : mx[2 * v + 1];
    memset(d->peak_add, 0, 2 * (size_t)leaves * sizeof *d->peak_add);
    return LOOM_OK;
}

/* Sets node v's maximum from its children and its own pending add. */
static void mt_tree_pull(loom_mt_descent *d, int32_t v)
{
    int64_t a = d->peak_max[2 * v], b = d->peak_max[2 * v + 1];
    d->peak_max[v] = (a > b ? a : b) + d->peak_add[v];
}

/* Adds x to the leaves l..r (inclusive): to the nodes that cover the
 * range exactly (bottom-up, the range's canonical cover), then refreshes
 * every ancestor of its two end leaves. Node v's maximum is that of its
 * children plus peak_add[v], which holds what was added to the whole of
 * v's range. */
static void mt_tree_add(loom_mt_descent *d, int32_t l, int32_t r, int64_t x)
{
    int32_t lo = l + d->peak_leaves, hi = r + d->peak_leaves + 1;
    for (int32_t a = lo, b = hi; a < b; a >>= 1, b >>= 1) {
        if (a & 1) {
            d->peak_max[a] += x;
            d->peak_add[a++] += x;
        }
        if (b & 1) {
            d->peak_max[--b] += x;
            d->peak_add[b] += x;
        }
    }
    for (int32_t v = lo >> 1; v >= 1; v >>= 1)
        mt_tree_pull(d, v);
    for (int32_t v = (hi - 1) >> 1; v >= 1; v >>= 1)
        mt_tree_pull(d, v);
}

/* Slots a batch of n range adds may span and still be added slot by
 * slot (about twice the span in node updates) rather than range by range
 * (about four tree heights each). */
#define MT_BATCH_SPAN 32

/* Adds the batch of moves made while fixing a slot of rank r to the tree:
 * every slot each moved pair is live at (its allocation through its
 * release) changes by the bytes it changed. A batch spanning few slots
 * is added as differences over them, then every ancestor of the span is
 * pulled level by level; a wide one range by range. Either leaves every
 * slot's memory and every node's maximum over the tags above it as they
 * would be after the single adds. */
static void mt_tree_flush(loom_mt_descent *d, const loom_mt_timeline *t, int32_t r)
{
    int32_t n = d->n_moved, lo = t->rank_off[r], a = INT32_MAX, b = -1;
    d->n_moved = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t p = d->moved_pair[i];
        a = t->pair_open[p] - lo < a ? t->pair_open[p] - lo : a;
        b = t->pair_close[p] - lo > b ? t->pair_close[p] - lo : b;
    }
    if (n == 0)
        return;
    int64_t span = (int64_t)b - a + 1;
    int32_t per = d->batch_span ? d->batch_span : MT_BATCH_SPAN;
    if (per < 0 || span > (int64_t)n * per) {
        for (int32_t i = 0; i < n; i++) {
            int32_t p = d->moved_pair[i];
            mt_tree_add(d, t->pair_open[p] - lo, t->pair_close[p] - lo, d->moved_bytes[i]);
        }
        return;
    }
    int64_t *diff = d->peak_diff, cur = 0;
    memset(diff, 0, ((size_t)span + 1) * sizeof *diff);
    for (int32_t i = 0; i < n; i++) {
        int32_t p = d->moved_pair[i];
        diff[t->pair_open[p] - lo - a] += d->moved_bytes[i];
        diff[t->pair_close[p] - lo - a + 1] -= d->moved_bytes[i];
    }
    for (int32_t k = 0; k < span; k++) {
        cur += diff[k];
        if (cur) {
            d->peak_max[d->peak_leaves + a + k] += cur;
            d->peak_add[d->peak_leaves + a + k] += cur;
        }
    }
    for (int32_t l = (d->peak_leaves + a) >> 1, h = (d->peak_leaves + b) >> 1; l >= 1;
         l >>= 1, h >>= 1)
        for (int32_t v = l; v <= h; v++)
            mt_tree_pull(d, v);
}

/* Records that pair p's bytes changed by x while the tree tracks rank
 * r's peaks (added with the batch; a full batch is added at once). */
static void mt_tree_pair(loom_mt_descent *d, const loom_mt_timeline *t, int32_t r, int32_t p,
                         int64_t x)
{
    if (d->n_moved > d->cap_live)
        mt_tree_flush(d, t, r);
    d->moved_pair[d->n_moved] = p;
    d->moved_bytes[d->n_moved++] = x;
}

/* Rank r's peak from the tree into t (peak_bytes, peak_slot: the first
 * slot reaching it, -1 when memory never rises above 0), as
 * loom_mt_rank_peak would compute it; returns the peak. */
static int64_t mt_tree_peak(const loom_mt_descent *d, loom_mt_timeline *t, int32_t r)
{
    const int64_t *mx = d->peak_max, *add = d->peak_add;
    int64_t peak = mx[1];
    if (peak <= 0) {
        t->peak_bytes[r] = 0;
        t->peak_slot[r] = -1;
        return 0;
    }
    int32_t v = 1;
    while (v < d->peak_leaves) /* the leftmost child holding the maximum */
        v = mx[2 * v] == mx[v] - add[v] ? 2 * v : 2 * v + 1;
    t->peak_bytes[r] = peak;
    t->peak_slot[r] = t->rank_off[r] + (v - d->peak_leaves);
    return peak;
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
        if (s + 1 >= u->chain_end[x])
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
    loom_mt_pair_best *b = &d->best[p];
    b->unit = best;
    b->saved = best_saved;
    b->key = best_key;
    b->is_free = best_free;
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
    if (ax == ay)
        return 1; /* one chain */
    int32_t lx = u->chain_end[x] - ax, ly = u->chain_end[y] - ay;
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
    const loom_mt_pair_best *b = &d->best[p];
    loom_mt_move m = {b->key, b->unit, p * 2 + b->is_free};
    return m;
}

/* The first entry at or after i of the rank's pairs (t->rank_pairs) that
 * may still move in this descent, shortening the links it follows. */
static int32_t mt_next_movable(int32_t *next, int32_t i)
{
    while (next[i] != i) {
        next[i] = next[next[i]];
        i = next[i];
    }
    return i;
}

/* Puts the pairs of rank r live at `slot` that can still move into the
 * heap (computing the cached move of pairs not seen in this descent yet)
 * and heapifies it; returns how many. The scan is loom_mt_live_pairs'
 * (from loom_mt_live_from; pairs are in opening order, so one opened
 * after the slot ends it), except that a pair that cannot move is linked
 * past: states only advance, so it cannot move for the rest of the
 * descent either. */
static int32_t mt_heapify_live(loom_mt_descent *d, const loom_mt_timeline *t,
                               const loom_mt_units *u, int32_t r, int32_t slot)
{
    int32_t b = t->rank_pair_off[r + 1], m = 0;
    for (int32_t i = mt_next_movable(d->next, loom_mt_live_from(t, r, slot)); i < b;
         i = mt_next_movable(d->next, i + 1)) {
        int32_t p = t->rank_pairs[i];
        if (t->pair_open[p] > slot)
            break;
        if (t->pair_close[p] <= slot)
            continue;
        if (d->best[p].epoch != d->epoch) {
            d->best[p].epoch = d->epoch;
            mt_pair_best(d, u, p);
        }
        if (d->best[p].unit < 0)
            d->next[i] = i + 1;
        else
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
    int32_t fixed = 0; /* peaks fixed; past `rescans` the tree tracks them */
    int32_t slots = t->rank_off[r + 1] - t->rank_off[r];
    int32_t rescans = d->rescans > 0                ? d->rescans
                      : slots >= LOOM_MT_LONG_RANK ? LOOM_MT_LONG_RESCANS
                                                   : LOOM_MT_RESCANS;
    for (int32_t i = t->rank_pair_off[r]; i <= t->rank_pair_off[r + 1]; i++)
        d->next[i] = i; /* every pair may move */
    d->n_moved = 0;
    while ((double)stat + (double)peak > cap) {
        int32_t slot = t->peak_slot[r];
        int64_t at = peak; /* activation bytes after `slot` */
        int32_t n = slot >= 0 ? mt_heapify_live(d, t, u, r, slot) : 0; /* d->heap[0..n) */
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
            int32_t x = d->heap[0].unit;
            int64_t saved = d->best[p].saved, before = pair_bytes[p];
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
            if (fixed > rescans)
                mt_tree_pair(d, t, r, p, pair_bytes[p] - before);
            mt_pair_best(d, u, p);
            if (d->best[p].unit < 0)
                d->heap[0] = d->heap[--n]; /* p cannot move any more */
            else
                d->heap[0] = mt_move_of(d, p);
            if (n > 0)
                mt_sift(d->heap, n, 0);
            if (moves)
                (*moves)++;
        }
        if (++fixed <= rescans) {
            peak = loom_mt_rank_peak(t, r, pair_bytes);
            continue;
        }
        if (fixed == rescans + 1 && mt_tree_build(host, d, t, r, pair_bytes) != LOOM_OK)
            return host->error(err, LOOM_ENOMEM, "%s: out of memory", who);
        mt_tree_flush(d, t, r);
        peak = mt_tree_peak(d, t, r);
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
    if (t->n_pairs > d->cap_live || !d->next) {
        size_t n = (size_t)t->n_pairs + 1;
        loom_mt_descent_free(host, d);
        d->next = host->alloc(n * sizeof *d->next);
        d->heap = host->alloc(n * sizeof *d->heap);
        d->best = host->alloc(n * sizeof *d->best);
        d->moved_pair = host->alloc(n * sizeof *d->moved_pair);
        d->moved_bytes = host->alloc(n * sizeof *d->moved_bytes);
        d->cap_live = t->n_pairs;
        if (d->best)
            for (size_t i = 0; i < n; i++)
                d->best[i].epoch = 0;
        if (!d->next || !d->heap || !d->best || !d->moved_pair || !d->moved_bytes) {
            loom_mt_descent_free(host, d);
            return host->error(err, LOOM_ENOMEM, "%s: out of memory", who);
        }
    }
    if (++d->epoch == 0) { /* wrapped: no cache may look current */
        for (int32_t i = 0; i <= d->cap_live; i++)
            d->best[i].epoch = 0;
        d->epoch = 1;
    }
    loom_mt_units v = *u; /* the states stay the caller's */
    if (!v.chain_end)
        v.chain_end = v.chain_off + 1; /* each chain ends where the next starts */
    for (int32_t r = 0; r < t->n_ranks; r++) {
        if (only_rank >= 0 && r != only_rank)
            continue;
        int rc = mt_descend_rank(host, d, t, g, &v, pair_bytes, r, who, moves,
                                 err);
        if (rc != LOOM_OK)
            return rc;
    }
    return LOOM_OK;
}
