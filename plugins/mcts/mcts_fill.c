/*
 * loom_mcts_fill.c - partial priority assignments under group precedence:
 * the exact feasibility test and random completion (see mcts.h).
 */
#include <string.h>
#include "mcts.h"

int loom_mcts_fill_init(loom_mcts_fill *f, const loom_host_api *host, int32_t n)
{
    memset(f, 0, sizeof *f);
    f->host = host;
    f->n = n;
    size_t k = (size_t)(n > 0 ? n : 1);
    f->slot_of = host->alloc(k * sizeof *f->slot_of);
    f->group_at = host->alloc(k * sizeof *f->group_at);
    f->dl = host->alloc(k * sizeof *f->dl);
    f->left = host->alloc(k * sizeof *f->left);
    f->heap = host->alloc(k * sizeof *f->heap);
    f->left2 = host->alloc(k * sizeof *f->left2);
    f->avail = host->alloc(k * sizeof *f->avail);
    if (!f->slot_of || !f->group_at || !f->dl || !f->left || !f->heap ||
        !f->left2 || !f->avail) {
        loom_mcts_fill_free(f);
        return LOOM_ENOMEM;
    }
    return LOOM_OK;
}

void loom_mcts_fill_free(loom_mcts_fill *f)
{
    if (!f->host)
        return;
    f->host->free(f->slot_of);
    f->host->free(f->group_at);
    f->host->free(f->dl);
    f->host->free(f->left);
    f->host->free(f->heap);
    f->host->free(f->left2);
    f->host->free(f->avail);
    memset(f, 0, sizeof *f);
}

void loom_mcts_fill_set(loom_mcts_fill *f, const int32_t *value_of)
{
    int32_t n = f->n;
    for (int32_t s = 0; s < n; s++)
        f->group_at[s] = -1;
    for (int32_t g = 0; g < n; g++) {
        int32_t v = value_of[g];
        f->slot_of[g] = v > 0 ? n - v : -1;
        if (v > 0)
            f->group_at[n - v] = g;
    }
}

/* Pushes x onto a min-heap of (deadline << 32 | group) keys. */
static void heap_push(int64_t *h, int32_t *len, int64_t x)
{
    int32_t i = (*len)++;
    while (i > 0 && h[(i - 1) / 2] > x) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = x;
}

/* Removes and returns the smallest key of a non-empty heap. */
static int64_t heap_pop(int64_t *h, int32_t *len)
{
    int64_t top = h[0], x = h[--(*len)];
    int32_t i = 0, n = *len;
    for (;;) {
        int32_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && h[c + 1] < h[c])
            c++;
        if (h[c] >= x)
            break;
        h[i] = h[c];
        i = c;
    }
    if (n > 0)
        h[i] = x;
    return top;
}

/* Tightens deadlines in reverse topological order: a group must come
 * before each successor's deadline; a pinned group's deadline is its slot.
 * Returns 0 when a pinned slot or slot 0 is already too late. */
static int fill_deadlines(loom_mcts_fill *f, const loom_sk_prec *pc)
{
    int32_t n = f->n;
    for (int32_t i = n - 1; i >= 0; i--) {
        int32_t g = pc->topo[i], d = n - 1;
        for (int32_t e = pc->succ_off[g]; e < pc->succ_off[g + 1]; e++)
            if (f->dl[pc->succ[e]] - 1 < d)
                d = f->dl[pc->succ[e]] - 1;
        if (f->slot_of[g] >= 0) {
            if (d < f->slot_of[g])
                return 0;
            d = f->slot_of[g];
        }
        if (d < 0)
            return 0;
        f->dl[g] = d;
    }
    return 1;
}

int loom_mcts_fill_feasible(loom_mcts_fill *f, const loom_sk_prec *pc)
{
    int32_t n = f->n, len = 0;
    if (!fill_deadlines(f, pc))
        return 0;
    for (int32_t g = 0; g < n; g++) {
        f->left[g] = pc->pred_off[g + 1] - pc->pred_off[g];
        if (f->left[g] == 0 && f->slot_of[g] < 0)
            heap_push(f->heap, &len, ((int64_t)f->dl[g] << 32) | g);
    }
    for (int32_t t = 0; t < n; t++) {
        if (len > 0 && (f->heap[0] >> 32) < t)
            return 0; /* a released group missed its deadline */
        int32_t v = f->group_at[t];
        if (v >= 0) {
            if (f->left[v] != 0)
                return 0; /* a pinned group's predecessor is still open */
        } else {
            if (len == 0)
                return 0; /* a free slot nobody can take */
            v = (int32_t)(heap_pop(f->heap, &len) & 0xffffffff);
        }
        for (int32_t e = pc->succ_off[v]; e < pc->succ_off[v + 1]; e++) {
            int32_t s = pc->succ[e];
            if (--f->left[s] == 0 && f->slot_of[s] < 0)
                heap_push(f->heap, &len, ((int64_t)f->dl[s] << 32) | s);
        }
    }
    return 1;
}

/* Without precedence every completion is valid: shuffle the free groups
 * into the free slots. */
static void fill_shuffle(loom_mcts_fill *f, uint64_t *rng, float *prio)
{
    int32_t n = f->n, k = 0;
    for (int32_t g = 0; g < n; g++)
        if (f->slot_of[g] < 0)
            f->avail[k++] = g;
    for (int32_t i = k - 1; i > 0; i--) {
        int32_t j = (int32_t)loom_sk_below(rng, (uint32_t)(i + 1));
        int32_t x = f->avail[i];
        f->avail[i] = f->avail[j];
        f->avail[j] = x;
    }
    int32_t i = 0;
    for (int32_t s = 0; s < n; s++) {
        int32_t g = f->group_at[s] >= 0 ? f->group_at[s] : f->avail[i++];
        prio[g] = (float)(n - s);
    }
}

int loom_mcts_fill_complete(loom_mcts_fill *f, const loom_sk_prec *pc, uint64_t *rng,
                       float *prio)
{
    int32_t n = f->n;
    if (pc->n_edges == 0) {
        fill_shuffle(f, rng, prio);
        return 1;
    }
    int32_t n_avail = 0, pinned_ahead = 0;
    for (int32_t g = 0; g < n; g++) {
        f->left2[g] = pc->pred_off[g + 1] - pc->pred_off[g];
        if (f->slot_of[g] >= 0)
            pinned_ahead++;
        else if (f->left2[g] == 0)
            f->avail[n_avail++] = g;
    }
    for (int32_t t = 0; t < n; t++) {
        int32_t v = f->group_at[t];
        if (v >= 0) {
            pinned_ahead--;
        } else {
            if (n_avail == 0)
                return 0; /* the loaded assignment was infeasible */
            int32_t i = (int32_t)loom_sk_below(rng, (uint32_t)n_avail);
            v = f->avail[i];
            if (pinned_ahead > 0) {
                /* Later pinned slots may need this one: test the choice. */
                f->slot_of[v] = t;
                f->group_at[t] = v;
                int ok = loom_mcts_fill_feasible(f, pc);
                f->slot_of[v] = -1;
                f->group_at[t] = -1;
                if (!ok) {
                    loom_mcts_fill_feasible(f, pc); /* deadlines of this state */
                    i = 0;
                    for (int32_t k = 1; k < n_avail; k++)
                        if (f->dl[f->avail[k]] < f->dl[f->avail[i]] ||
                            (f->dl[f->avail[k]] == f->dl[f->avail[i]] &&
                             f->avail[k] < f->avail[i]))
                            i = k;
                    v = f->avail[i];
                }
            }
            f->avail[i] = f->avail[--n_avail];
            f->slot_of[v] = t;
            f->group_at[t] = v;
        }
        prio[v] = (float)(n - t);
        for (int32_t e = pc->succ_off[v]; e < pc->succ_off[v + 1]; e++) {
            int32_t s = pc->succ[e];
            if (--f->left2[s] == 0 && f->slot_of[s] < 0)
                f->avail[n_avail++] = s;
        }
    }
    return 1;
}
