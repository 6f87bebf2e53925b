/*
 * list_sched.c - the list-scheduling core shared by the dual-queue and
 * zero-bubble interleavers (see list_sched.h).
 */
#include <string.h>
#include "list_sched.h"

/* 1 when entry a comes before entry b. */
static int ls_before(const loom_ls_entry *a, const loom_ls_entry *b)
{
    if (a->t_ms != b->t_ms)
        return a->t_ms < b->t_ms;
    if (a->prio != b->prio)
        return a->prio > b->prio;
    if (a->tie != b->tie)
        return a->tie < b->tie;
    return a->id < b->id;
}

void loom_ls_heap_push(loom_ls_heap *h, loom_ls_entry x)
{
    int32_t i = h->n++;
    while (i > 0) {
        int32_t parent = (i - 1) / 2;
        if (!ls_before(&x, &h->e[parent]))
            break;
        h->e[i] = h->e[parent];
        i = parent;
    }
    h->e[i] = x;
}

void loom_ls_heap_pop(loom_ls_heap *h)
{
    loom_ls_entry x = h->e[--h->n];
    int32_t n = h->n, i = 0;
    for (;;) {
        int32_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && ls_before(&h->e[c + 1], &h->e[c]))
            c++;
        if (!ls_before(&h->e[c], &x))
            break;
        h->e[i] = h->e[c];
        i = c;
    }
    if (n > 0)
        h->e[i] = x;
}

/* Grows *p to hold n elements of `size` bytes (no-op when cap >= n). */
static int ls_grow(const loom_host_api *host, void **p, size_t n, size_t size)
{
    void *q = host->realloc(*p, (n ? n : 1) * size);
    if (!q)
        return LOOM_ENOMEM;
    *p = q;
    return LOOM_OK;
}

int loom_ls_reserve(loom_ls *ls, const loom_host_api *host,
                    const loom_stage_graph *g, int32_t n_types,
                    const char *who, loom_error *err)
{
    ls->host = host;
    ls->n_types = n_types;
    int bad = 0;
    if (g->n_stages > ls->cap_stages) {
        size_t n = (size_t)g->n_stages;
        bad |= ls_grow(host, (void **)&ls->type, n, sizeof *ls->type);
        bad |= ls_grow(host, (void **)&ls->prio, n, sizeof *ls->prio);
        bad |= ls_grow(host, (void **)&ls->tie, n, sizeof *ls->tie);
        bad |= ls_grow(host, (void **)&ls->succ_off, n + 1, sizeof *ls->succ_off);
        bad |= ls_grow(host, (void **)&ls->left, n, sizeof *ls->left);
        bad |= ls_grow(host, (void **)&ls->ready_ms, n, sizeof *ls->ready_ms);
        bad |= ls_grow(host, (void **)&ls->end_ms, n, sizeof *ls->end_ms);
        bad |= ls_grow(host, (void **)&ls->store, 2 * n, sizeof *ls->store);
        if (!bad)
            ls->cap_stages = g->n_stages;
    }
    if (!bad && g->n_edges > ls->cap_edges) {
        size_t n = (size_t)g->n_edges;
        bad |= ls_grow(host, (void **)&ls->succ, n, sizeof *ls->succ);
        bad |= ls_grow(host, (void **)&ls->succ_edge, n, sizeof *ls->succ_edge);
        if (!bad)
            ls->cap_edges = g->n_edges;
    }
    if (!bad && (g->n_ranks > ls->cap_ranks || n_types > ls->cap_types)) {
        int32_t r = g->n_ranks > ls->cap_ranks ? g->n_ranks : ls->cap_ranks;
        int32_t t = n_types > ls->cap_types ? n_types : ls->cap_types;
        size_t n = (size_t)r, nq = (size_t)r * (size_t)t;
        bad |= ls_grow(host, (void **)&ls->ready, nq, sizeof *ls->ready);
        bad |= ls_grow(host, (void **)&ls->pending, nq, sizeof *ls->pending);
        bad |= ls_grow(host, (void **)&ls->last_ms, n, sizeof *ls->last_ms);
        bad |= ls_grow(host, (void **)&ls->mem_bytes, n, sizeof *ls->mem_bytes);
        bad |= ls_grow(host, (void **)&ls->fill, n, sizeof *ls->fill);
        bad |= ls_grow(host, (void **)&ls->last_type, n, sizeof *ls->last_type);
        bad |= ls_grow(host, (void **)&ls->rank_t_ms, n, sizeof *ls->rank_t_ms);
        bad |= ls_grow(host, (void **)&ls->rank_queued, n,
                       sizeof *ls->rank_queued);
        bad |= ls_grow(host, (void **)&ls->dirty, n, sizeof *ls->dirty);
        bad |= ls_grow(host, (void **)&ls->is_dirty, n, sizeof *ls->is_dirty);
        if (!bad) {
            ls->cap_ranks = r;
            ls->cap_types = t;
        }
    }
    if (bad)
        return host->error(err, LOOM_ENOMEM, "%s: out of memory for a graph "
                           "of %d stages", who, g->n_stages);
    return LOOM_OK;
}

void loom_ls_release(loom_ls *ls)
{
    if (!ls->host)
        return;
    void *arrays[] = {ls->type, ls->prio, ls->tie, ls->succ_off, ls->succ,
                      ls->succ_edge, ls->left, ls->ready_ms, ls->end_ms,
                      ls->store, ls->ready, ls->pending, ls->last_ms,
                      ls->mem_bytes, ls->fill, ls->last_type, ls->rank_t_ms,
                      ls->rank_queued, ls->dirty, ls->is_dirty};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
        ls->host->free(arrays[i]);
    memset(ls, 0, sizeof *ls);
}

/* Marks rank r dirty (once). */
static void ls_mark(loom_ls *ls, int32_t r)
{
    if (!ls->is_dirty[r]) {
        ls->is_dirty[r] = 1;
        ls->dirty[ls->n_dirty++] = r;
    }
}

/* Puts a released stage into its rank's pending heap. */
static void ls_release(loom_ls *ls, const loom_stage_graph *g, int32_t v)
{
    int32_t r = g->rank[v];
    loom_ls_entry x = {ls->ready_ms[v], ls->prio[v], ls->tie[v], v, 0};
    loom_ls_heap_push(&ls->pending[r * ls->n_types + ls->type[v]], x);
    ls_mark(ls, r);
}

int loom_ls_begin(loom_ls *ls, const loom_stage_graph *g, loom_schedule *out,
                  const char *who, loom_error *err)
{
    const loom_host_api *host = ls->host;
    int32_t n = g->n_stages, P = g->n_ranks, T = ls->n_types;
    if (g->pred_off[0] != 0 || g->pred_off[n] != g->n_edges)
        return host->error(err, LOOM_EINVAL, "%s: predecessor rows cover "
                           "edges %d..%d, expected 0..%d", who, g->pred_off[0],
                           g->pred_off[n], g->n_edges);
    /* Per-(rank, type) counts give each heap pair its slice of store. */
    for (int32_t i = 0; i < P * T; i++) {
        ls->ready[i].n = 0;
        ls->pending[i].n = 0;
    }
    ls->n_ranks = P;
    for (int32_t r = 0; r < P; r++) {
        ls->fill[r] = 0;
        ls->last_ms[r] = 0;
        ls->mem_bytes[r] = 0;
        ls->last_type[r] = -1;
        ls->rank_queued[r] = 0;
        ls->is_dirty[r] = 0;
    }
    for (int32_t v = 0; v < n; v++) {
        int32_t r = g->rank[v];
        if (r < 0 || r >= P)
            return host->error(err, LOOM_EINVAL, "%s: stage %d is on rank %d, "
                               "expected 0..%d", who, v, r, P - 1);
        if (ls->type[v] >= T)
            return host->error(err, LOOM_EINVAL, "%s: stage %d has kind %d, "
                               "expected F, B, I or W", who, v, g->kind[v]);
        ls->fill[r]++;
        ls->ready[r * T + ls->type[v]].n++; /* count, reset below */
        if (g->pred_off[v + 1] < g->pred_off[v])
            return host->error(err, LOOM_EINVAL, "%s: stage %d has a negative "
                               "predecessor count", who, v);
    }
    int64_t off = 0;
    for (int32_t i = 0; i < P * T; i++) {
        int32_t c = ls->ready[i].n;
        ls->ready[i].e = ls->store + off;
        ls->pending[i].e = ls->store + off + c;
        ls->ready[i].n = 0;
        off += 2 * (int64_t)c;
    }
    int32_t k = 0;
    for (int32_t r = 0; r < P; r++) {
        out->rank_off[r] = k;
        k += ls->fill[r];
        ls->fill[r] = out->rank_off[r];
    }
    out->rank_off[P] = k;
    out->n_ranks = P;
    out->n_stages = 0;

    /* Successor rows (counting sort of the edges by predecessor). */
    for (int32_t v = 0; v <= n; v++)
        ls->succ_off[v] = 0;
    for (int32_t e = 0; e < g->n_edges; e++) {
        int32_t p = g->pred[e];
        if (p < 0 || p >= n)
            return host->error(err, LOOM_EINVAL, "%s: edge %d names stage %d "
                               "as predecessor, expected 0..%d", who, e, p,
                               n - 1);
        ls->succ_off[p + 1]++;
    }
    for (int32_t v = 0; v < n; v++)
        ls->succ_off[v + 1] += ls->succ_off[v];
    for (int32_t v = 0; v < n; v++) {
        ls->left[v] = g->pred_off[v + 1] - g->pred_off[v];
        ls->ready_ms[v] = 0;
        for (int32_t e = g->pred_off[v]; e < g->pred_off[v + 1]; e++) {
            int32_t slot = ls->succ_off[g->pred[e]]++;
            ls->succ[slot] = v;
            ls->succ_edge[slot] = e;
        }
    }
    for (int32_t v = n; v > 0; v--)
        ls->succ_off[v] = ls->succ_off[v - 1];
    ls->succ_off[0] = 0;

    ls->n_dirty = 0;
    ls->placed = 0;
    for (int32_t v = 0; v < n; v++)
        if (ls->left[v] == 0)
            ls_release(ls, g, v);
    for (int32_t r = 0; r < P; r++)
        ls_mark(ls, r);
    return LOOM_OK;
}

int32_t loom_ls_peek(loom_ls *ls, int32_t r, int32_t q, double *start_ms)
{
    loom_ls_heap *rd = &ls->ready[r * ls->n_types + q];
    loom_ls_heap *pd = &ls->pending[r * ls->n_types + q];
    double now = ls->last_ms[r];
    while (pd->n > 0 && pd->e[0].t_ms <= now) {
        loom_ls_entry x = pd->e[0];
        loom_ls_heap_pop(pd);
        x.t_ms = 0;
        loom_ls_heap_push(rd, x);
    }
    if (rd->n > 0) {
        *start_ms = now;
        return rd->e[0].id;
    }
    if (pd->n > 0) {
        *start_ms = pd->e[0].t_ms;
        return pd->e[0].id;
    }
    return -1;
}

void loom_ls_place(loom_ls *ls, const loom_stage_graph *g, int32_t v,
                   loom_schedule *out)
{
    int32_t r = g->rank[v], q = ls->type[v];
    loom_ls_heap *rd = &ls->ready[r * ls->n_types + q];
    if (rd->n > 0 && rd->e[0].id == v)
        loom_ls_heap_pop(rd);
    else
        loom_ls_heap_pop(&ls->pending[r * ls->n_types + q]);

    double start = ls->last_ms[r] > ls->ready_ms[v] ? ls->last_ms[r]
                                                     : ls->ready_ms[v];
    double end = start + g->duration_ms[v];
    ls->end_ms[v] = end;
    ls->last_ms[r] = end;
    ls->mem_bytes[r] += g->mem_delta_bytes[v];
    ls->last_type[r] = q;
    out->order[ls->fill[r]++] = v;
    ls->placed++;
    ls_mark(ls, r);

    for (int32_t i = ls->succ_off[v]; i < ls->succ_off[v + 1]; i++) {
        int32_t s = ls->succ[i];
        double t = end + g->pred_p2p_ms[ls->succ_edge[i]];
        if (t > ls->ready_ms[s])
            ls->ready_ms[s] = t;
        if (--ls->left[s] == 0)
            ls_release(ls, g, s);
    }
}

void loom_ls_rank_push(loom_ls *ls, int32_t r, double t_ms)
{
    ls->rank_t_ms[r] = t_ms;
    ls->rank_queued[r] = 1;
}

void loom_ls_rank_drop(loom_ls *ls, int32_t r)
{
    ls->rank_queued[r] = 0;
}

int32_t loom_ls_rank_pop(loom_ls *ls)
{
    int32_t best = -1;
    for (int32_t r = 0; r < ls->n_ranks; r++)
        if (ls->rank_queued[r] &&
            (best < 0 || ls->rank_t_ms[r] < ls->rank_t_ms[best]))
            best = r;
    if (best >= 0)
        ls->rank_queued[best] = 0;
    return best;
}

int loom_ls_end(loom_ls *ls, const loom_stage_graph *g, loom_schedule *out,
                const char *who, loom_error *err)
{
    if (ls->placed != g->n_stages) {
        int32_t stuck = -1;
        for (int32_t v = 0; v < g->n_stages && stuck < 0; v++)
            if (ls->left[v] > 0)
                stuck = v;
        return ls->host->error(err, LOOM_EINVAL,
                               "%s: placed %d of %d stages; stage %d still "
                               "waits for %d predecessors (dependency cycle?)",
                               who, ls->placed, g->n_stages, stuck,
                               stuck >= 0 ? ls->left[stuck] : 0);
    }
    out->n_stages = g->n_stages;
    return LOOM_OK;
}

int32_t loom_ls_pick_forced(loom_ls *ls, const loom_stage_graph *g,
                            const int32_t *blocked_f)
{
    int32_t best = -1;
    int64_t best_bytes = 0;
    double best_start = 0;
    for (int32_t r = 0; r < g->n_ranks; r++) {
        int32_t v = blocked_f[r];
        if (v < 0)
            continue;
        int64_t bytes = g->static_bytes[r] + ls->mem_bytes[r] +
                        g->mem_delta_bytes[v];
        double start = ls->last_ms[r] > ls->ready_ms[v] ? ls->last_ms[r]
                                                         : ls->ready_ms[v];
        if (best < 0 || bytes < best_bytes ||
            (bytes == best_bytes && start < best_start)) {
            best = v;
            best_bytes = bytes;
            best_start = start;
        }
    }
    return best;
}
