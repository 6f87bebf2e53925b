/*
 * list_sched.c - the list-scheduling core shared by the dual-queue and
 * zero-bubble interleavers (see <loom/kits/listsched.h>).
 */
#include <math.h>
#include <string.h>
#include <loom/kits/listsched.h>
#include "ls_order.h"

/* 1 when pending entry a comes before pending entry b. */
static int ls_before(const loom_ls_entry *a, const loom_ls_entry *b)
{
    if (a->t_ms != b->t_ms)
        return a->t_ms < b->t_ms;
    return a->slot < b->slot;
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
    h->top_ms = h->e[0].t_ms;
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
    h->top_ms = n > 0 ? h->e[0].t_ms : INFINITY;
}

/* The rank queue's leaves for n ranks: the smallest power of two >= n,
 * at least 1 (every rank holds a stage, so n is far below 2^30). */
static size_t ls_leaves(int32_t n)
{
    size_t w = 1;
    while (w < (size_t)n)
        w <<= 1;
    return w;
}

/* Grows *p to hold n elements of `size` bytes. */
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
    if (ls->cap_stages == 0) {
        ls->tie_n = -1;
        ls->succ_n = -1;
        ls->shape_n = -1;
    }
    if (g->n_stages > ls->cap_stages) {
        size_t n = (size_t)g->n_stages;
        bad |= ls_grow(host, (void **)&ls->type, n, sizeof *ls->type);
        bad |= ls_grow(host, (void **)&ls->prio, n, sizeof *ls->prio);
        bad |= ls_grow(host, (void **)&ls->tie, n, sizeof *ls->tie);
        bad |= ls_grow(host, (void **)&ls->succ_off, n + 1, sizeof *ls->succ_off);
        bad |= ls_grow(host, (void **)&ls->pred_off_seen, n + 1, sizeof *ls->pred_off_seen);
        bad |= ls_grow(host, (void **)&ls->left, n, sizeof *ls->left);
        bad |= ls_grow(host, (void **)&ls->ready_ms, n, sizeof *ls->ready_ms);
        bad |= ls_grow(host, (void **)&ls->slot, n, sizeof *ls->slot);
        bad |= ls_grow(host, (void **)&ls->tie_order, n, sizeof *ls->tie_order);
        bad |= ls_grow(host, (void **)&ls->tie_seen, n, sizeof *ls->tie_seen);
        bad |= ls_grow(host, (void **)&ls->sort_key, 2 * n, sizeof *ls->sort_key);
        bad |= ls_grow(host, (void **)&ls->sort_id, 2 * n, sizeof *ls->sort_id);
        bad |= ls_grow(host, (void **)&ls->slot_stage, n, sizeof *ls->slot_stage);
        bad |= ls_grow(host, (void **)&ls->store, n, sizeof *ls->store);
        bad |= ls_grow(host, (void **)&ls->group, n, sizeof *ls->group);
        bad |= ls_grow(host, (void **)&ls->queue, n, sizeof *ls->queue);
        bad |= ls_grow(host, (void **)&ls->rank_seen, n, sizeof *ls->rank_seen);
        bad |= ls_grow(host, (void **)&ls->type_seen, n, sizeof *ls->type_seen);
        bad |= ls_grow(host, (void **)&ls->indeg, n, sizeof *ls->indeg);
        bad |= ls_grow(host, (void **)&ls->sources, n, sizeof *ls->sources);
        bad |= ls_grow(host, (void **)&ls->class_count, 2 * n + 1024,
                       sizeof *ls->class_count);
        ls->shape_n = -1;
        ls->tie_n = -1; /* the cached order may sit in moved arrays */
        ls->succ_n = -1;
        if (!bad)
            ls->cap_stages = g->n_stages;
    }
    if (!bad && g->n_edges > ls->cap_edges) {
        size_t n = (size_t)g->n_edges;
        bad |= ls_grow(host, (void **)&ls->succ, n, sizeof *ls->succ);
        bad |= ls_grow(host, (void **)&ls->succ_edge, n, sizeof *ls->succ_edge);
        bad |= ls_grow(host, (void **)&ls->pred_seen, n, sizeof *ls->pred_seen);
        ls->succ_n = -1;
        if (!bad)
            ls->cap_edges = g->n_edges;
    }
    if (!bad && (g->n_ranks > ls->cap_ranks || n_types > ls->cap_types)) {
        int32_t r = g->n_ranks > ls->cap_ranks ? g->n_ranks : ls->cap_ranks;
        int32_t t = n_types > ls->cap_types ? n_types : ls->cap_types;
        size_t n = (size_t)r, nq = (size_t)r * (size_t)t;
        bad |= ls_grow(host, (void **)&ls->q_off, nq + 1, sizeof *ls->q_off);
        bad |= ls_grow(host, (void **)&ls->q_count, nq, sizeof *ls->q_count);
        bad |= ls_grow(host, (void **)&ls->word_off, nq + 1, sizeof *ls->word_off);
        bad |= ls_grow(host, (void **)&ls->sum_off, nq + 1, sizeof *ls->sum_off);
        bad |= ls_grow(host, (void **)&ls->pending, nq, sizeof *ls->pending);
        bad |= ls_grow(host, (void **)&ls->front, nq, sizeof *ls->front);
        bad |= ls_grow(host, (void **)&ls->last_ms, n, sizeof *ls->last_ms);
        bad |= ls_grow(host, (void **)&ls->mem_bytes, n, sizeof *ls->mem_bytes);
        bad |= ls_grow(host, (void **)&ls->fill, n, sizeof *ls->fill);
        bad |= ls_grow(host, (void **)&ls->last_type, n, sizeof *ls->last_type);
        bad |= ls_grow(host, (void **)&ls->rank_t_ms, n, sizeof *ls->rank_t_ms);
        bad |= ls_grow(host, (void **)&ls->rank_tree, 2 * ls_leaves(r), sizeof *ls->rank_tree);
        bad |= ls_grow(host, (void **)&ls->dirty, n, sizeof *ls->dirty);
        bad |= ls_grow(host, (void **)&ls->is_dirty, n, sizeof *ls->is_dirty);
        bad |= ls_grow(host, (void **)&ls->rank_stages, n, sizeof *ls->rank_stages);
        ls->shape_n = -1;
        if (!bad) {
            ls->cap_ranks = r;
            ls->cap_types = t;
        }
    }
    if (!bad && g->n_groups > ls->cap_groups) {
        size_t n = (size_t)g->n_groups;
        bad |= ls_grow(host, (void **)&ls->group_prio, n, sizeof *ls->group_prio);
        bad |= ls_grow(host, (void **)&ls->group_class, n, sizeof *ls->group_class);
        if (!bad)
            ls->cap_groups = g->n_groups;
    }
    /* Each queue rounds its slots up to whole words, and its words up to
     * whole summary words. */
    int64_t nq = (int64_t)g->n_ranks * n_types;
    int64_t words = g->n_stages / 64 + nq + 1;
    int64_t sums = words / 64 + nq + 1;
    if (!bad && words > ls->cap_words) {
        bad |= ls_grow(host, (void **)&ls->words, (size_t)words, sizeof *ls->words);
        if (!bad)
            ls->cap_words = (int32_t)words;
    }
    if (!bad && sums > ls->cap_sums) {
        bad |= ls_grow(host, (void **)&ls->sums, (size_t)sums, sizeof *ls->sums);
        if (!bad)
            ls->cap_sums = (int32_t)sums;
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
                      ls->pred_off_seen, ls->pred_seen,
                      ls->succ_edge, ls->left, ls->ready_ms,
                      ls->slot, ls->tie_order, ls->tie_seen, ls->sort_key,
                      ls->sort_id, ls->q_off, ls->q_count, ls->slot_stage, ls->word_off,
                      ls->sum_off, ls->words, ls->sums, ls->store,
                      ls->pending, ls->front, ls->last_ms, ls->mem_bytes, ls->fill,
                      ls->last_type, ls->rank_t_ms, ls->rank_tree, ls->dirty,
                      ls->is_dirty, ls->group, ls->queue, ls->rank_seen,
                      ls->type_seen, ls->indeg, ls->sources, ls->group_prio,
                      ls->group_class, ls->class_count, ls->rank_stages};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
        ls->host->free(arrays[i]);
    memset(ls, 0, sizeof *ls);
}

/* Adds slot s of queue q to the ready set. */
static void ls_ready_add(loom_ls *ls, int32_t q, int32_t s)
{
    int32_t w = s >> 6;
    ls->words[ls->word_off[q] + w] |= (uint64_t)1 << (s & 63);
    ls->sums[ls->sum_off[q] + (w >> 6)] |= (uint64_t)1 << (w & 63);
}

/* Removes slot s of queue q from the ready set; 0 when it was not there. */
static int ls_ready_remove(loom_ls *ls, int32_t q, int32_t s)
{
    int32_t w = s >> 6;
    uint64_t *word = &ls->words[ls->word_off[q] + w];
    uint64_t bit = (uint64_t)1 << (s & 63);
    if (!(*word & bit))
        return 0;
    *word &= ~bit;
    /* clear the word's summary bit when it emptied, without a branch */
    ls->sums[ls->sum_off[q] + (w >> 6)] &= ~((uint64_t)(*word == 0) << (w & 63));
    return 1;
}

/* The first ready slot of queue q, or -1. */
static int32_t ls_ready_first(const loom_ls *ls, int32_t q)
{
    const uint64_t *sums = ls->sums + ls->sum_off[q];
    int32_t n_sums = ls->sum_off[q + 1] - ls->sum_off[q];
    for (int32_t i = 0; i < n_sums; i++) {
        if (sums[i]) {
            int32_t w = i * 64 + __builtin_ctzll(sums[i]);
            return w * 64 + __builtin_ctzll(ls->words[ls->word_off[q] + w]);
        }
    }
    return -1;
}

/* Marks rank r dirty (once). */
static void ls_mark(loom_ls *ls, int32_t r)
{
    if (!ls->is_dirty[r]) {
        ls->is_dirty[r] = 1;
        ls->dirty[ls->n_dirty++] = r;
    }
}

/* Sets queue q's front to slot s, from the ready set (start: the rank's
 * free time now_ms) or the pending heap (start: its release time). */
static void ls_front_set(loom_ls *ls, int32_t q, int32_t s, int32_t ready,
                         double start_ms)
{
    loom_ls_front *f = &ls->front[q];
    f->stage = ls->slot_stage[ls->q_off[q] + s];
    f->slot = s;
    f->ready = ready;
    f->start_ms = start_ms;
}

/* Queues a released stage: ready when it can start once its rank is
 * free, else pending. The queue's front moves to it when it comes first;
 * only then is its rank marked dirty (nothing else it decides on moved). */
static void ls_release(loom_ls *ls, const loom_stage_graph *g, int32_t v)
{
    int32_t r = g->rank[v];
    int32_t q = ls->queue[v];
    int32_t s = ls->slot[v];
    double t = ls->ready_ms[v], now = ls->last_ms[r];
    const loom_ls_front *f = &ls->front[q];
    if (t <= now) {
        ls_ready_add(ls, q, s);
        if (f->stage >= 0 && f->ready && f->slot < s)
            return;
        ls_front_set(ls, q, s, 1, now);
    } else {
        loom_ls_entry x = {t, s, 0};
        loom_ls_heap_push(&ls->pending[q], x);
        if (f->stage >= 0 && (f->ready || f->start_ms < t ||
                              (f->start_ms == t && f->slot < s)))
            return;
        ls_front_set(ls, q, s, 0, t);
    }
    ls_mark(ls, r);
}

/* Moves queue q's pending stages that can start by now_ms to its ready
 * set; returns the lowest slot moved, or INT32_MAX when none. */
static int32_t ls_drain_some(loom_ls *ls, int32_t q, double now_ms)
{
    loom_ls_heap *pd = &ls->pending[q];
    int32_t low = INT32_MAX;
    while (pd->n > 0 && pd->e[0].t_ms <= now_ms) {
        int32_t s = pd->e[0].slot;
        ls_ready_add(ls, q, s);
        low = s < low ? s : low;
        loom_ls_heap_pop(pd);
    }
    return low;
}

/* ls_drain_some, with the common case (nothing to move) inline. */
static inline int32_t ls_drain(loom_ls *ls, int32_t q, double now_ms)
{
    if (ls->pending[q].top_ms > now_ms)
        return INT32_MAX;
    return ls_drain_some(ls, q, now_ms);
}

/* Recomputes queue q's front from scratch at the rank's free time now_ms
 * (after its front was taken). */
static void ls_front_full(loom_ls *ls, int32_t q, double now_ms)
{
    ls_drain(ls, q, now_ms);
    int32_t s = ls_ready_first(ls, q);
    const loom_ls_heap *pd = &ls->pending[q];
    if (s >= 0)
        ls_front_set(ls, q, s, 1, now_ms);
    else if (pd->n > 0)
        ls_front_set(ls, q, pd->e[0].slot, 0, pd->e[0].t_ms);
    else {
        ls->front[q].stage = -1;
        ls->front[q].start_ms = INFINITY;
    }
}

/* Updates queue q's front after its rank's free time grew to now_ms with
 * the queue's stages unchanged: the pending stages that became startable
 * join the ready set, and the front is the lower of the old ready front
 * and those. */
static void ls_front_advance(loom_ls *ls, int32_t q, double now_ms)
{
    loom_ls_front *f = &ls->front[q];
    if (f->stage < 0)
        return;
    int32_t low = ls_drain(ls, q, now_ms);
    if (f->ready && f->slot < low) {
        f->start_ms = now_ms;
        return;
    }
    if (low != INT32_MAX)
        ls_front_set(ls, q, low, 1, now_ms);
}

/* 1 when g's predecessor rows are the ones the successor rows were built
 * from. */
static int ls_same_edges(const loom_ls *ls, const loom_stage_graph *g)
{
    int32_t n = g->n_stages;
    return ls->succ_n == n && ls->succ_e == g->n_edges &&
           !memcmp(ls->pred_off_seen, g->pred_off, ((size_t)n + 1) * sizeof *g->pred_off) &&
           !memcmp(ls->pred_seen, g->pred, (size_t)g->n_edges * sizeof *g->pred);
}

/* Builds the successor rows (a counting sort of the edges by predecessor),
 * every stage's predecessor count and the stages without predecessors,
 * and remembers the predecessor rows they stand for. LOOM_EINVAL names
 * the first stage with a negative count or edge with a predecessor out of
 * range. */
static int ls_successors(loom_ls *ls, const loom_stage_graph *g,
                         const char *who, loom_error *err)
{
    int32_t n = g->n_stages;
    ls->succ_n = -1;
    ls->n_sources = 0;
    for (int32_t v = 0; v < n; v++) {
        ls->indeg[v] = g->pred_off[v + 1] - g->pred_off[v];
        if (ls->indeg[v] < 0)
            return ls->host->error(err, LOOM_EINVAL, "%s: stage %d has a negative "
                                   "predecessor count", who, v);
        if (ls->indeg[v] == 0)
            ls->sources[ls->n_sources++] = v;
    }
    for (int32_t v = 0; v <= n; v++)
        ls->succ_off[v] = 0;
    for (int32_t e = 0; e < g->n_edges; e++) {
        int32_t p = g->pred[e];
        if (p < 0 || p >= n)
            return ls->host->error(err, LOOM_EINVAL, "%s: edge %d names stage %d "
                                   "as predecessor, expected 0..%d", who, e, p,
                                   n - 1);
        ls->succ_off[p + 1]++;
    }
    for (int32_t v = 0; v < n; v++)
        ls->succ_off[v + 1] += ls->succ_off[v];
    for (int32_t v = 0; v < n; v++) {
        for (int32_t e = g->pred_off[v]; e < g->pred_off[v + 1]; e++) {
            int32_t slot = ls->succ_off[g->pred[e]]++;
            ls->succ[slot] = v;
            ls->succ_edge[slot] = e;
        }
    }
    for (int32_t v = n; v > 0; v--)
        ls->succ_off[v] = ls->succ_off[v - 1];
    ls->succ_off[0] = 0;
    memcpy(ls->pred_off_seen, g->pred_off, ((size_t)n + 1) * sizeof *g->pred_off);
    memcpy(ls->pred_seen, g->pred, (size_t)g->n_edges * sizeof *g->pred);
    ls->succ_n = n;
    ls->succ_e = g->n_edges;
    return LOOM_OK;
}

/* 1 when the stages' ranks and queue types are the ones the queues were
 * last laid out for. */
static int ls_same_shape(const loom_ls *ls, const loom_stage_graph *g)
{
    int32_t n = g->n_stages;
    return ls->shape_n == n && ls->shape_ranks == g->n_ranks &&
           ls->shape_types == ls->n_types &&
           !memcmp(ls->rank_seen, g->rank, (size_t)n * sizeof *g->rank) &&
           !memcmp(ls->type_seen, ls->type, (size_t)n * sizeof *ls->type);
}

/* Checks every stage's rank, type and predecessor count, then lays out
 * the queues: every stage's queue, the slots, bitset words and summary
 * words of every queue, the stages of every rank; remembers the ranks and
 * types it stands for. LOOM_EINVAL names the first bad stage. */
static int ls_shape(loom_ls *ls, const loom_stage_graph *g, const char *who,
                    loom_error *err)
{
    const loom_host_api *host = ls->host;
    int32_t n = g->n_stages, P = g->n_ranks, T = ls->n_types, Q = P * T;
    ls->shape_n = -1;
    for (int32_t r = 0; r < P; r++)
        ls->rank_stages[r] = 0;
    for (int32_t q = 0; q <= Q; q++)
        ls->q_off[q] = 0;
    for (int32_t v = 0; v < n; v++) {
        int32_t r = g->rank[v];
        if (r < 0 || r >= P)
            return host->error(err, LOOM_EINVAL, "%s: stage %d is on rank %d, "
                               "expected 0..%d", who, v, r, P - 1);
        if (ls->type[v] >= T)
            return host->error(err, LOOM_EINVAL, "%s: stage %d has kind %d, "
                               "expected F, B, I or W", who, v, g->kind[v]);
        ls->rank_stages[r]++;
        ls->queue[v] = r * T + ls->type[v];
        ls->q_off[ls->queue[v] + 1]++;
        if (g->pred_off[v + 1] < g->pred_off[v])
            return host->error(err, LOOM_EINVAL, "%s: stage %d has a negative "
                               "predecessor count", who, v);
    }
    ls->word_off[0] = 0;
    ls->sum_off[0] = 0;
    for (int32_t q = 0; q < Q; q++) {
        int32_t c = ls->q_off[q + 1];
        int32_t w = (c + 63) / 64;
        ls->q_off[q + 1] = ls->q_off[q] + c;
        ls->word_off[q + 1] = ls->word_off[q] + w;
        ls->sum_off[q + 1] = ls->sum_off[q] + (w + 63) / 64;
    }
    memcpy(ls->rank_seen, g->rank, (size_t)n * sizeof *g->rank);
    memcpy(ls->type_seen, ls->type, (size_t)n * sizeof *ls->type);
    ls->shape_n = n;
    ls->shape_ranks = P;
    ls->shape_types = T;
    return LOOM_OK;
}

int loom_ls_begin(loom_ls *ls, const loom_stage_graph *g, loom_schedule *out,
                  const char *who, loom_error *err)
{
    const loom_host_api *host = ls->host;
    int32_t n = g->n_stages, P = g->n_ranks, T = ls->n_types, Q = P * T;
    if (g->pred_off[0] != 0 || g->pred_off[n] != g->n_edges)
        return host->error(err, LOOM_EINVAL, "%s: predecessor rows cover "
                           "edges %d..%d, expected 0..%d", who, g->pred_off[0],
                           g->pred_off[n], g->n_edges);
    ls->n_ranks = P;
    if (!ls_same_shape(ls, g)) {
        int rc = ls_shape(ls, g, who, err);
        if (rc != LOOM_OK)
            return rc;
    }
    int32_t k = 0;
    for (int32_t r = 0; r < P; r++) {
        out->rank_off[r] = k;
        ls->fill[r] = k;
        k += ls->rank_stages[r];
        ls->last_ms[r] = 0;
        ls->mem_bytes[r] = 0;
        ls->last_type[r] = -1;
        ls->is_dirty[r] = 0;
    }
    out->rank_off[P] = k;
    out->n_ranks = P;
    out->n_stages = 0;
    loom_ls_rank_reset(ls);
    for (int32_t q = 0; q < Q; q++) {
        ls->pending[q].e = ls->store + ls->q_off[q];
        ls->pending[q].n = 0;
        ls->pending[q].top_ms = INFINITY;
        ls->front[q].stage = -1;
        ls->front[q].start_ms = INFINITY;
    }
    memset(ls->words, 0, (size_t)ls->word_off[Q] * sizeof *ls->words);
    memset(ls->sums, 0, (size_t)ls->sum_off[Q] * sizeof *ls->sums);

    if (!ls_same_edges(ls, g)) {
        int rc = ls_successors(ls, g, who, err);
        if (rc != LOOM_OK)
            return rc;
    }
    memcpy(ls->left, ls->indeg, (size_t)n * sizeof *ls->left);
    memset(ls->ready_ms, 0, (size_t)n * sizeof *ls->ready_ms);

    loom_ls_order_slots(ls, n, Q);

    ls->n_dirty = 0;
    ls->placed = 0;
    for (int32_t i = 0; i < ls->n_sources; i++)
        ls_release(ls, g, ls->sources[i]);
    for (int32_t r = 0; r < P; r++)
        ls_mark(ls, r);
    return LOOM_OK;
}

void loom_ls_place(loom_ls *ls, const loom_stage_graph *g, int32_t v,
                   loom_schedule *out)
{
    int32_t r = g->rank[v], q = ls->type[v], qi = ls->queue[v];
    if (!ls_ready_remove(ls, qi, ls->slot[v]))
        loom_ls_heap_pop(&ls->pending[qi]);

    double start = ls->last_ms[r] > ls->ready_ms[v] ? ls->last_ms[r]
                                                     : ls->ready_ms[v];
    double end = start + g->duration_ms[v];
    ls->last_ms[r] = end;
    ls_front_full(ls, qi, end);
    /* the rank's other queues, as types q + 1, q + 2, ... mod n_types (a
     * loop of a fixed count, where skipping qi would mispredict) */
    for (int32_t j = 1, T = ls->n_types; j < T; j++) {
        int32_t k = q + j;
        k -= k >= T ? T : 0;
        ls_front_advance(ls, qi - q + k, end);
    }
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

/* Up to this many ranks the rank queue is a plain scan of rank_t_ms (a
 * push costs nothing and a pop a few compares); above it, the tournament
 * tree, whose every step costs log2(rank_leaves). */
#define LS_SCAN_RANKS 32

/* The winner of two tree entries a < b (either -1 for an empty subtree):
 * the smaller start, ties to a, the lower rank. */
static int32_t rank_winner(const loom_ls *ls, int32_t a, int32_t b)
{
    if (a < 0 || b < 0)
        return a < 0 ? b : a;
    return ls->rank_t_ms[b] < ls->rank_t_ms[a] ? b : a;
}

/* Replays the matches on the path from rank r's leaf to the root (only
 * when the tree is in use), after r's start changed. It stops at a node
 * whose winner stays another rank: that rank's start did not change, so
 * nothing above it does. */
static void rank_fix(loom_ls *ls, int32_t r)
{
    if (ls->n_ranks <= LS_SCAN_RANKS)
        return;
    int32_t *t = ls->rank_tree;
    for (int32_t k = (ls->rank_leaves + r) >> 1; k >= 1; k >>= 1) {
        int32_t w = rank_winner(ls, t[2 * k], t[2 * k + 1]);
        if (w == t[k] && w != r)
            break;
        t[k] = w;
    }
}

void loom_ls_rank_reset(loom_ls *ls)
{
    int32_t w = (int32_t)ls_leaves(ls->n_ranks), *t = ls->rank_tree;
    ls->rank_leaves = w;
    for (int32_t r = 0; r < ls->n_ranks; r++)
        ls->rank_t_ms[r] = INFINITY;
    if (ls->n_ranks <= LS_SCAN_RANKS)
        return;
    for (int32_t r = 0; r < w; r++)
        t[w + r] = r < ls->n_ranks ? r : -1;
    for (int32_t k = w - 1; k >= 1; k--)
        t[k] = rank_winner(ls, t[2 * k], t[2 * k + 1]);
}

void loom_ls_rank_push(loom_ls *ls, int32_t r, double t_ms)
{
    ls->rank_t_ms[r] = t_ms;
    rank_fix(ls, r);
}

void loom_ls_rank_drop(loom_ls *ls, int32_t r)
{
    ls->rank_t_ms[r] = INFINITY;
    rank_fix(ls, r);
}

/* One step of rank_scan: rank r against the best so far. */
static inline void rank_step(const double *t, int32_t r, int32_t *best, double *bt)
{
    double x = t[r];
    int lower = x < *bt;
    *best = lower ? r : *best;
    *bt = lower ? x : *bt;
}

/* The queued rank with the smallest start, ties to the lower rank, by a
 * scan (four ranks a loop turn); -1 when none is queued. */
static int32_t rank_scan(const loom_ls *ls)
{
    const double *t = ls->rank_t_ms;
    int32_t best = 0, r = 1, n = ls->n_ranks;
    double bt = t[0];
    for (; r + 3 < n; r += 4) {
        rank_step(t, r, &best, &bt);
        rank_step(t, r + 1, &best, &bt);
        rank_step(t, r + 2, &best, &bt);
        rank_step(t, r + 3, &best, &bt);
    }
    for (; r < n; r++)
        rank_step(t, r, &best, &bt);
    return bt < INFINITY ? best : -1;
}

int32_t loom_ls_rank_pop(loom_ls *ls)
{
    if (ls->n_ranks == 0)
        return -1;
    int32_t best = ls->n_ranks <= LS_SCAN_RANKS ? rank_scan(ls) : ls->rank_tree[1];
    if (best < 0 || !(ls->rank_t_ms[best] < INFINITY))
        return -1;
    ls->rank_t_ms[best] = INFINITY;
    rank_fix(ls, best);
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
