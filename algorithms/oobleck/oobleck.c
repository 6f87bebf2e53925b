/*
 * oobleck.c - Oobleck's node specification and the divide-and-conquer
 * GPU-stage mapping of pipeline templates (dissertation §2.4.1).
 *
 * T(S', u, v, d) is the best 1F1B time of layers [u, v) in S' stages on d
 * GPUs, split into T1 (one F+B of every stage), T2 (the slowest stage k*
 * alternating, (N_b - S' + k* - 1) * c_{k*} with N_b = 4 S') and T3 (F+B
 * of the stages from k* on). A sub-problem is split at a layer k, a stage
 * count s and a device split (whole nodes while it spans several nodes,
 * GPUs inside its node otherwise); a stage never spans nodes.
 *
 * Sub-results are memoised by (S', u, v, nodes, GPUs) in dense blocks, one
 * per (S', devices), that live as long as the planner, so later templates
 * reuse earlier work. A template first marks the blocks it reaches and
 * which of their cells (every u or only u = 0, every v or only v = L),
 * then fills them bottom-up by stage count, one (s, m) split at a time
 * over all rows so that right halves (k, v) are read along a row. Splits
 * whose lower bound cannot beat a cell's best so far are skipped. The
 * result is the recursion's to the bit: the same splits in the same order
 * per cell, the first strictly better kept, the same sums
 * (tests/test_oobleck.c compares it with a plain recursion).
 *
 * A cell (u, v) reads only its own row's bests and filled blocks of
 * fewer stages, so a large block's rows are filled on up to
 * loom_oobleck_planner_set_threads() threads at once (row u on thread
 * u mod threads), each with its own scratch; every cell still tries the
 * same splits in the same order, so the result does not change.
 *
 * Uses only the C library and POSIX threads (see oobleck.h).
 */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <loom/algorithms/oobleck.h>

int loom_oobleck_node_spec(int32_t nodes, int32_t f, int32_t n0,
                           int32_t *first, int32_t *last, loom_error *err)
{
    if (nodes < 1 || f < 0 || n0 < 1)
        return loom_error_format(err, LOOM_EINVAL,
                        "oobleck: nodes and n0 must be >= 1 and f >= 0, "
                        "found nodes %d, f %d, n0 %d", nodes, f, n0);
    if ((int64_t)(f + 1) * n0 > nodes)
        return loom_error_format(err, LOOM_EINFEASIBLE,
                        "oobleck: %d nodes cannot hold f+1 = %d pipelines of "
                        "at least n0 = %d nodes (need %lld)", nodes, f + 1, n0,
                        (long long)(f + 1) * n0);
    *first = n0;
    *last = nodes - f * n0;
    return LOOM_OK;
}

void loom_oobleck_template_clear(loom_oobleck_template *t)
{
    if (!t)
        return;
    free(t->stages);
    memset(t, 0, sizeof *t);
}

/* Steady-phase multiplier N_b - S + k* - 1, never below 0. */
static double oob_steady(int32_t nb, int32_t stages, int32_t kstar)
{
    double m = (double)nb - stages + kstar - 1;
    return m > 0 ? m : 0;
}

double loom_oobleck_template_time_ms(const loom_oobleck_template *t,
                                     int32_t microbatches)
{
    if (!t || microbatches <= 0)
        return 0;
    return t->t1_ms + t->t3_ms +
           oob_steady(microbatches, t->n_stages, t->slowest) * t->slowest_ms;
}

/* ---- memo --------------------------------------------------------------- */

/* One memoised sub-result: terms of the best layout and how it was split.
 * A cell without a layout (or whose T would overflow) holds INFINITY in
 * t1, t3 and cstar, so isfinite(cstar) tells whether it can be used. */
typedef struct dc_cell {
    double t1, t3, cstar; /* T1, T3 and c_{k*} of the best layout */
    int16_t kstar;        /* slowest stage, 0-based in the sub-pipe */
    int16_t split_k;      /* layer of the split; -1 for a leaf */
    int16_t split_s;      /* stages on the left */
    int16_t split_m;      /* left nodes (several nodes) or GPUs */
} dc_cell;

/* A block: every (u, v) sub-range of one (stage count, devices) pair,
 * stored as the upper triangle u < v, row u holding v = u+1 .. L. A block
 * is filled bottom-up, all of its needed cells at once: every u or only
 * u = 0 (the block is only ever a prefix), every v or only v = L (only a
 * suffix). */
typedef struct dc_block {
    int32_t stages, nodes, g; /* g: GPUs per node, or of the one node */
    int32_t dev;              /* GPUs - 1 inside one node, M + nodes - 2 */
    uint8_t need_u, need_v;   /* cells wanted: 1 = every u (v) */
    uint8_t done_u, done_v;   /* cells filled so far */
    uint8_t done, queued;     /* filled at all; on the work list */
    dc_cell *c;
} dc_block;

/* Bytes of memo a planner may allocate. */
#define DC_MEMO_BUDGET ((size_t)2 << 30)

/* Most threads that fill one block. */
#define DC_MAX_THREADS 8

/* Split evaluations (roughly) below which a block is filled on one
 * thread: starting a thread costs more than such a block's work. */
#define DC_PARALLEL_WORK 1000000.0

/* One filling thread's scratch (triangles of the block being filled) and
 * counters, added to the planner's after every block. */
typedef struct dc_scratch {
    double *best;        /* a triangle: best T of the block being filled */
    double *rmin;        /* a triangle: right bounds (dc_right_bounds) */
    double *pmax, *smax; /* triangles + 1: running maxima of best's rows,
                          * row u indexed by v from pmax + tri[u] - u */
    int64_t entries, hits;
} dc_scratch;

struct loom_oobleck_planner {
    int32_t n_layers, max_gpus, gpus_per_node, pow2;
    double *prefix;      /* (max_gpus) x (n_layers + 1): sum of F + B */
    int32_t *bad;        /* same shape: prefix count of unusable entries */
    int64_t *tri;        /* tri[u]: first triangle index of row u */
    dc_block **blocks;   /* open addressing on (stages, dev) */
    size_t cap, count, bytes;
    dc_block **work;     /* blocks to fill for the template being planned */
    size_t n_work, cap_work;
    int32_t threads;     /* most threads filling one block */
    dc_scratch scr[DC_MAX_THREADS]; /* per thread, allocated on first use */
    int64_t entries, hits;
    int oom;
};

/* Device key of a sub-problem: GPUs inside one node, or whole nodes. */
static int32_t dc_dev(const loom_oobleck_planner *p, int32_t nodes, int32_t g)
{
    return nodes > 1 ? p->gpus_per_node + nodes - 2 : g - 1;
}

/* Hash slot of (stages, dev) in a table of `cap` (a power of two). */
static size_t dc_hash(int32_t stages, int32_t dev, size_t cap)
{
    size_t h = ((size_t)stages * 0x9e3779b1u) ^ ((size_t)dev * 0x85ebca6bu);
    return h & (cap - 1);
}

/* Doubles the block table; 0 when out of memory. */
static int dc_grow(loom_oobleck_planner *p)
{
    size_t ncap = p->cap * 2;
    dc_block **nb = calloc(ncap, sizeof *nb);
    if (!nb)
        return 0;
    for (size_t i = 0; i < p->cap; i++) {
        dc_block *b = p->blocks[i];
        if (!b)
            continue;
        size_t j = dc_hash(b->stages, b->dev, ncap);
        while (nb[j])
            j = (j + 1) & (ncap - 1);
        nb[j] = b;
    }
    free(p->blocks);
    p->blocks = nb;
    p->cap = ncap;
    return 1;
}

/* The block of `stages` on nodes x g GPUs, NULL when none was created.
 * It only reads the table, so the filling threads look blocks up at once
 * (dc_need created every block a fill reads). */
static dc_block *dc_block_find(const loom_oobleck_planner *p, int32_t stages,
                               int32_t nodes, int32_t g)
{
    int32_t dev = dc_dev(p, nodes, g);
    for (size_t i = dc_hash(stages, dev, p->cap);; i = (i + 1) & (p->cap - 1)) {
        dc_block *b = p->blocks[i];
        if (!b || (b->stages == stages && b->dev == dev))
            return b;
    }
}

/* The block of `stages` on nodes x g GPUs, allocated on first use; NULL
 * when out of memory or over the budget (p->oom set). */
static dc_block *dc_block_for(loom_oobleck_planner *p, int32_t stages,
                              int32_t nodes, int32_t g)
{
    dc_block *found = dc_block_find(p, stages, nodes, g);
    if (found)
        return found;
    int32_t dev = dc_dev(p, nodes, g);
    if ((p->count + 1) * 2 > p->cap && !dc_grow(p)) {
        p->oom = 1;
        return NULL;
    }
    size_t cells = (size_t)p->tri[p->n_layers];
    size_t bytes = cells * sizeof(dc_cell) + sizeof(dc_block);
    if (p->bytes + bytes > DC_MEMO_BUDGET) {
        p->oom = 1;
        return NULL;
    }
    dc_block *b = calloc(1, sizeof *b);
    dc_cell *c = malloc(cells * sizeof *c);
    if (!b || !c) {
        free(b);
        free(c);
        p->oom = 1;
        return NULL;
    }
    *b = (dc_block){stages, nodes, g, dev, 0, 0, 0, 0, 0, 0, c};
    size_t i = dc_hash(stages, dev, p->cap);
    while (p->blocks[i])
        i = (i + 1) & (p->cap - 1);
    p->blocks[i] = b;
    p->count++;
    p->bytes += bytes;
    return b;
}

/* Allocates thread t's scratch triangles; 0 when out of memory. */
static int dc_scratch_alloc(loom_oobleck_planner *p, int32_t t)
{
    dc_scratch *x = &p->scr[t];
    if (x->best)
        return 1;
    size_t cells = (size_t)p->tri[p->n_layers];
    x->best = malloc(cells * sizeof *x->best);
    x->rmin = malloc(cells * sizeof *x->rmin);
    x->pmax = malloc((cells + 1) * sizeof *x->pmax);
    x->smax = malloc((cells + 1) * sizeof *x->smax);
    if (x->best && x->rmin && x->pmax && x->smax)
        return 1;
    free(x->best);
    free(x->rmin);
    free(x->pmax);
    free(x->smax);
    memset(x, 0, sizeof *x);
    return 0;
}

/* The cell of (u, v) in a block. */
static dc_cell *dc_at(const loom_oobleck_planner *p, const dc_block *b,
                      int32_t u, int32_t v)
{
    return &b->c[p->tri[u] + (v - u - 1)];
}

int loom_oobleck_planner_new(const loom_oobleck_costs *costs,
                             int32_t gpus_per_node, int pow2_gpus,
                             loom_oobleck_planner **out, loom_error *err)
{
    *out = NULL;
    if (!costs || costs->n_layers < 1 ||
        costs->n_layers > LOOM_OOBLECK_MAX_LAYERS || !costs->forward_ms ||
        !costs->backward_ms)
        return loom_error_format(err, LOOM_EINVAL,
                        "oobleck: expected 1 to %d layers with forward and "
                        "backward times, found %d", LOOM_OOBLECK_MAX_LAYERS,
                        costs ? costs->n_layers : 0);
    if (gpus_per_node < 1 || gpus_per_node > LOOM_OOBLECK_MAX_GPUS_PER_NODE)
        return loom_error_format(err, LOOM_EINVAL,
                        "oobleck: GPUs per node: expected 1 to %d, found %d",
                        LOOM_OOBLECK_MAX_GPUS_PER_NODE, gpus_per_node);
    if (costs->max_gpus < gpus_per_node)
        return loom_error_format(err, LOOM_EINVAL,
                        "oobleck: costs cover stages of up to %d GPUs, a node "
                        "has %d", costs->max_gpus, gpus_per_node);
    loom_oobleck_planner *p = calloc(1, sizeof *p);
    if (!p)
        return loom_error_format(err, LOOM_ENOMEM, "oobleck: out of memory");
    p->n_layers = costs->n_layers;
    p->max_gpus = gpus_per_node;
    p->gpus_per_node = gpus_per_node;
    p->pow2 = pow2_gpus != 0;
    size_t row = (size_t)costs->n_layers + 1;
    p->prefix = malloc(row * (size_t)gpus_per_node * sizeof *p->prefix);
    p->bad = malloc(row * (size_t)gpus_per_node * sizeof *p->bad);
    p->tri = malloc((row + 1) * sizeof *p->tri);
    p->cap = 64;
    p->blocks = calloc(p->cap, sizeof *p->blocks);
    if (!p->prefix || !p->bad || !p->tri || !p->blocks) {
        loom_oobleck_planner_free(p);
        return loom_error_format(err, LOOM_ENOMEM, "oobleck: out of memory");
    }
    p->tri[0] = 0; /* row u of the triangle holds v = u+1 .. L */
    for (int32_t u = 0; u < costs->n_layers + 1; u++)
        p->tri[u + 1] = p->tri[u] + (costs->n_layers - u);
    p->threads = 1;
    if (!dc_scratch_alloc(p, 0)) {
        loom_oobleck_planner_free(p);
        return loom_error_format(err, LOOM_ENOMEM, "oobleck: out of memory");
    }
    for (int32_t d = 0; d < gpus_per_node; d++) {
        double *pre = p->prefix + (size_t)d * row;
        int32_t *bad = p->bad + (size_t)d * row;
        pre[0] = 0;
        bad[0] = 0;
        for (int32_t l = 0; l < costs->n_layers; l++) {
            size_t i = (size_t)d * (size_t)costs->n_layers + (size_t)l;
            double c = costs->forward_ms[i] + costs->backward_ms[i];
            int ok = isfinite(c) && costs->forward_ms[i] >= 0 &&
                     costs->backward_ms[i] >= 0;
            pre[l + 1] = pre[l] + (ok ? c : 0);
            bad[l + 1] = bad[l] + !ok;
        }
    }
    *out = p;
    return LOOM_OK;
}

void loom_oobleck_planner_free(loom_oobleck_planner *p)
{
    if (!p)
        return;
    free(p->prefix);
    free(p->bad);
    free(p->tri);
    for (int32_t t = 0; t < DC_MAX_THREADS; t++) {
        free(p->scr[t].best);
        free(p->scr[t].rmin);
        free(p->scr[t].pmax);
        free(p->scr[t].smax);
    }
    for (size_t i = 0; p->blocks && i < p->cap; i++) {
        if (p->blocks[i])
            free(p->blocks[i]->c);
        free(p->blocks[i]);
    }
    free(p->blocks);
    free(p->work);
    free(p);
}

void loom_oobleck_planner_set_threads(loom_oobleck_planner *p, int32_t threads)
{
    if (p)
        p->threads = threads < 1 ? 1 : threads > DC_MAX_THREADS ? DC_MAX_THREADS : threads;
}

int64_t loom_oobleck_memo_entries(const loom_oobleck_planner *p)
{
    return p ? p->entries : 0;
}

int64_t loom_oobleck_memo_hits(const loom_oobleck_planner *p)
{
    return p ? p->hits : 0;
}

/* F + B of layers [u, v) on d GPUs, INFINITY when d is unusable there. */
static double dc_stage_cost(const loom_oobleck_planner *p, int32_t u,
                            int32_t v, int32_t d)
{
    size_t row = (size_t)p->n_layers + 1;
    const int32_t *bad = p->bad + (size_t)(d - 1) * row;
    if (bad[v] != bad[u])
        return INFINITY;
    const double *pre = p->prefix + (size_t)(d - 1) * row;
    return pre[v] - pre[u];
}

/* 1 when g is a power of two. */
static int dc_pow2(int32_t g)
{
    return g > 0 && (g & (g - 1)) == 0;
}

/* The device splits m of a split with s of s_all stages on the left:
 * inside a node each side needs a GPU per stage; across nodes each side
 * needs at least as many stages as nodes (a stage never spans two). */
static void dc_split_range(const dc_block *b, int32_t s, int32_t *lo,
                           int32_t *hi)
{
    int32_t s_all = b->stages, splits = b->nodes > 1 ? b->nodes : b->g;
    *lo = 1;
    *hi = splits - 1;
    if (b->nodes > 1) {
        *hi = *hi < s ? *hi : s;
        *lo = b->nodes - (s_all - s) > *lo ? b->nodes - (s_all - s) : *lo;
    } else {
        *lo = s;
        *hi = b->g - (s_all - s) < *hi ? b->g - (s_all - s) : *hi;
    }
}

/* The left (nodes x GPUs) of split m in block b, and the right. */
static void dc_sides(const dc_block *b, int32_t m, int32_t *ln, int32_t *lg,
                     int32_t *rn, int32_t *rg)
{
    *ln = b->nodes > 1 ? m : 1;
    *rn = b->nodes > 1 ? b->nodes - m : 1;
    *lg = b->nodes > 1 ? b->g : m;
    *rg = b->nodes > 1 ? b->g : b->g - m;
}

/* Marks the cells of b that a parent needs (every u or u = 0, every v or
 * v = L) and, recursively, the cells of the blocks they are split into;
 * blocks with new cells to fill go on the work list. 0 when out of memory. */
static int dc_need(loom_oobleck_planner *p, dc_block *b, uint8_t nu,
                   uint8_t nv)
{
    uint8_t wu = b->need_u | nu, wv = b->need_v | nv;
    if (b->queued && wu == b->need_u && wv == b->need_v)
        return 1;
    if (!b->queued && b->done && (b->done_u | nu) == b->done_u &&
        (b->done_v | nv) == b->done_v) {
        p->hits++;
        return 1;
    }
    if (!b->queued) {
        if (p->n_work == p->cap_work) {
            size_t nc = p->cap_work ? p->cap_work * 2 : 64;
            dc_block **nw = realloc(p->work, nc * sizeof *nw);
            if (!nw)
                return 0;
            p->work = nw;
            p->cap_work = nc;
        }
        p->work[p->n_work++] = b;
        b->queued = 1;
        /* a refill covers what was filled before as well */
        wu |= b->done ? b->done_u : 0;
        wv |= b->done ? b->done_v : 0;
    }
    b->need_u = wu;
    b->need_v = wv;
    for (int32_t s = 1; s < b->stages; s++) {
        int32_t lo, hi;
        dc_split_range(b, s, &lo, &hi);
        for (int32_t m = lo; m <= hi; m++) {
            int32_t ln, lg, rn, rg;
            dc_sides(b, m, &ln, &lg, &rn, &rg);
            dc_block *lb = dc_block_for(p, s, ln, lg);
            dc_block *rb = dc_block_for(p, b->stages - s, rn, rg);
            if (!lb || !rb || !dc_need(p, lb, wu, 1) || !dc_need(p, rb, 1, wv))
                return 0;
        }
    }
    return 1;
}

/* Fills one-stage cells: all g GPUs of the node (Eq. 2.4: T1 + 2c + T3). */
static void dc_fill_leaf(const loom_oobleck_planner *p, dc_scratch *x, dc_block *b,
                         int32_t u0, int32_t u1, int32_t all_v)
{
    int32_t L = p->n_layers;
    for (int32_t u = u0; u <= u1; u++)
        for (int32_t v = all_v ? u + 1 : L; v <= L; v++) {
            dc_cell *c = dc_at(p, b, u, v);
            double cost = b->nodes > 1 || (p->pow2 && !dc_pow2(b->g))
                              ? INFINITY : dc_stage_cost(p, u, v, b->g);
            *c = (dc_cell){INFINITY, INFINITY, INFINITY, 0, -1, 0, 0};
            if (isfinite(cost) && isfinite(4 * cost))
                *c = (dc_cell){cost, cost, cost, 0, -1, 0, 0};
            x->entries++;
        }
}

/* First v in [lo, hi] with key[v] > x for a non-decreasing key, hi + 1
 * when none; walks from `guess`, a nearby answer's position. */
static int32_t dc_first_above(const double *key, int32_t lo, int32_t hi,
                              int32_t guess, double x)
{
    int32_t v = guess < lo ? lo : guess > hi + 1 ? hi + 1 : guess;
    while (v > lo && key[v - 1] > x)
        v--;
    while (v <= hi && key[v] <= x)
        v++;
    return v;
}

/* First v in [lo, hi] with a[v] >= b[v], a non-decreasing and b
 * non-increasing, hi + 1 when none; walks from `guess`. */
static int32_t dc_first_meet(const double *a, const double *b, int32_t lo,
                             int32_t hi, int32_t guess)
{
    int32_t v = guess < lo ? lo : guess > hi + 1 ? hi + 1 : guess;
    while (v > lo && a[v - 1] >= b[v - 1])
        v--;
    while (v <= hi && a[v] < b[v])
        v++;
    return v;
}

/* For every row k of a right block: rmin[k][v] = the least, over v' >= v,
 * of a lower bound of any total the half (k, v') enters, T1 + (3S' - 1)
 * c_{k*} + T3 of the half alone. Rounding is monotone and every term is
 * non-negative, so the bound never exceeds a total computed from it. */
static void dc_right_bounds(const loom_oobleck_planner *p, dc_scratch *x,
                            const dc_block *rb, int32_t k0, int32_t rs, double steady0)
{
    int32_t L = p->n_layers;
    for (int32_t k = k0; k <= L - rs; k++) {
        const dc_cell *r = dc_at(p, rb, k, k + 1);
        double *lb = x->rmin + p->tri[k]; /* index v - k - 1 */
        double run = INFINITY;
        for (int32_t v = L; v >= k + rs; v--) {
            const dc_cell *c = &r[v - k - 1];
            double t = c->t1 + steady0 * c->cstar + c->t3;
            run = t < run ? t : run;
            lb[v - k - 1] = run;
        }
    }
}

/* For rows u0, u0 + stride, .. <= u1 of the best so far (cells v >= u + span, only v = L
 * when span < 0): pmax, the running maximum from the row's start, and
 * smax, from its end. Bests only fall, so older maxima stay bounds. */
static void dc_row_maxima(const loom_oobleck_planner *p, dc_scratch *x, int32_t u0,
                          int32_t u1, int32_t stride, int32_t span)
{
    int32_t L = p->n_layers;
    for (int32_t u = u0; u <= u1; u += stride) {
        int32_t v0 = span >= 0 ? u + span : L;
        const double *brow = &x->best[p->tri[u]]; /* index v - u - 1 */
        double *pm = x->pmax + (p->tri[u] - u), run = 0; /* index v */
        double *sm = x->smax + (p->tri[u] - u);
        for (int32_t v = v0; v <= L; v++) {
            run = brow[v - u - 1] > run ? brow[v - u - 1] : run;
            pm[v] = run;
        }
        run = 0;
        for (int32_t v = L; v >= v0; v--) {
            run = brow[v - u - 1] > run ? brow[v - u - 1] : run;
            sm[v] = run;
        }
    }
}

/* The cells (u, v) of rows u0, u0 + stride, .. <= u1 of a block of
 * several stages: every split (s, m, k),
 * in the order s, m, k per cell, the first best kept. One (s, m) pair
 * at a time over the rows, so its two sub-blocks stay in cache, and the
 * right halves (k, v) of one k lie next to each other in row k. A right
 * half without a layout holds INFINITY, so its total is never below the
 * best. Splits that cannot beat the best so far are skipped: for a left
 * half, the v whose best so far (its running maximum from the row start)
 * is at most the half's bound T1 + (3S' - 1) c_{k*}; for a right half,
 * the v from which the right bound's minimum reaches the best's maximum
 * (dc_right_bounds). Neither can change a cell: a total equal to the
 * best does not replace it. */
static void dc_fill_split(const loom_oobleck_planner *p, dc_scratch *x, dc_block *b,
                          int32_t u1, int32_t all_v, int32_t u0, int32_t stride)
{
    int32_t L = p->n_layers, s_all = b->stages;
    double *best = x->best; /* same triangle layout as a block */
    for (int32_t u = u0; u <= u1; u += stride)
        for (int32_t v = all_v ? u + 1 : L; v <= L; v++) {
            best[p->tri[u] + (v - u - 1)] = INFINITY;
            *dc_at(p, b, u, v) = (dc_cell){INFINITY, INFINITY, INFINITY, 0, -1, 0, 0};
            x->entries++;
        }
    /* steady multiplier N_b - S' + k* - 1 with N_b = 4 S' (never < 0) */
    const double steady0 = 3.0 * s_all - 1;
    int64_t hits = 0;
    int right_bounds = all_v && u1 > 0;
    for (int32_t s = 1; s < s_all; s++) {
        int32_t lo, hi, rs = s_all - s;
        dc_split_range(b, s, &lo, &hi);
        dc_row_maxima(p, x, u0, u1, stride, all_v ? s_all : -1);
        for (int32_t m = lo; m <= hi; m++) {
            int32_t ln, lg, rn, rg;
            dc_sides(b, m, &ln, &lg, &rn, &rg);
            const dc_block *lb = dc_block_find(p, s, ln, lg);
            const dc_block *rb = dc_block_find(p, rs, rn, rg);
            if (right_bounds)
                dc_right_bounds(p, x, rb, s, rs, steady0);
            for (int32_t u = u0; u <= u1; u += stride) {
                int32_t v0 = all_v ? u + s_all : L;
                if (v0 > L)
                    break;
                const double *pmax = x->pmax + (p->tri[u] - u); /* index v */
                const double *smax = x->smax + (p->tri[u] - u);
                int32_t ga = v0, gb = L + 1; /* the last k's answers */
                int32_t k0 = u + s, k1 = L - rs;
                /* trim the k no v can use: a left half whose bound reaches
                 * the row's largest best, a right half whose bounds reach
                 * the largest best of the v it could end at */
                while (k1 >= k0 && dc_at(p, lb, u, k1)->t1 +
                                           steady0 * dc_at(p, lb, u, k1)->cstar >=
                                       pmax[L])
                    k1--;
                while (right_bounds && k0 <= k1 &&
                       x->rmin[p->tri[k0] + rs - 1] >= smax[k0 + rs])
                    k0++;
                for (int32_t k = k0; k <= k1; k++) {
                    const dc_cell *l = dc_at(p, lb, u, k);
                    if (!isfinite(l->cstar))
                        continue;
                    /* the left half's terms, held while v runs */
                    const double lt1 = l->t1, lt3 = l->t3, lc = l->cstar;
                    const double lsteady = steady0 + l->kstar;
                    int32_t va = all_v ? k + rs : L;
                    hits += 1 + (L - va + 1);
                    va = ga = dc_first_above(pmax, va, L, ga, lt1 + steady0 * lc);
                    int32_t vb = L;
                    if (right_bounds) {
                        gb = dc_first_meet(x->rmin + p->tri[k] - k - 1, smax,
                                           va, L, gb);
                        vb = gb - 1;
                    }
                    if (va > vb)
                        continue;
                    const dc_cell *r = dc_at(p, rb, k, va);
                    dc_cell *out = dc_at(p, b, u, va);
                    double *bt = &best[p->tri[u] + (va - u - 1)];
                    for (int32_t n = 0; n <= vb - va; n++) {
                        double rt1 = r[n].t1, rc = r[n].cstar;
                        double t1 = lt1 + rt1, total;
                        if (lc >= rc)
                            total = t1 + lsteady * lc + (lt3 + rt1);
                        else
                            total = t1 + (steady0 + (s + r[n].kstar)) * rc +
                                    r[n].t3;
                        if (total < bt[n]) {
                            bt[n] = total;
                            out[n] = lc >= rc
                                ? (dc_cell){t1, lt3 + rt1, lc, l->kstar,
                                            (int16_t)k, (int16_t)s, (int16_t)m}
                                : (dc_cell){t1, r[n].t3, rc,
                                            (int16_t)(s + r[n].kstar),
                                            (int16_t)k, (int16_t)s, (int16_t)m};
                        }
                    }
                }
            }
        }
    }
    x->hits += hits;
}

/* Roughly the split evaluations of filling block b: its (s, m) pairs
 * times the cells it needs and the layers k each cell tries. */
static double dc_fill_work(const loom_oobleck_planner *p, const dc_block *b)
{
    double L = p->n_layers, pairs = 0;
    for (int32_t s = 1; s < b->stages; s++) {
        int32_t lo, hi;
        dc_split_range(b, s, &lo, &hi);
        pairs += hi >= lo ? hi - lo + 1 : 0;
    }
    double cells = b->need_u ? L * L / 2 : L;
    return pairs * cells * (b->need_v ? L / 3 : L);
}

/* One filling thread: rows t, t + n, .. of the block. */
typedef struct dc_rows {
    const loom_oobleck_planner *p;
    dc_scratch *x;
    dc_block *b;
    int32_t u1, all_v, t, n;
} dc_rows;

static void *dc_rows_main(void *arg)
{
    dc_rows *r = arg;
    dc_fill_split(r->p, r->x, r->b, r->u1, r->all_v, r->t, r->n);
    return NULL;
}

/* Fills the wanted cells of a block whose sub-blocks are filled: a block
 * of several stages whose work pays for it on up to p->threads threads
 * (fewer when a thread or its scratch cannot be had; the cells are the
 * same either way). */
static void dc_fill(loom_oobleck_planner *p, dc_block *b)
{
    int32_t u1 = b->need_u ? p->n_layers - 1 : 0;
    int32_t threads = 1;
    if (b->stages > 1 && p->threads > 1 && u1 > 0 &&
        dc_fill_work(p, b) >= DC_PARALLEL_WORK)
        threads = p->threads;
    for (int32_t t = 1; t < threads; t++)
        if (!dc_scratch_alloc(p, t))
            threads = t; /* as many as have scratch */
    if (b->stages == 1) {
        dc_fill_leaf(p, &p->scr[0], b, 0, u1, b->need_v);
    } else {
        pthread_t tid[DC_MAX_THREADS];
        dc_rows r[DC_MAX_THREADS];
        int32_t started = 1;
        for (int32_t t = 0; t < threads; t++)
            r[t] = (dc_rows){p, &p->scr[t], b, u1, b->need_v, t, threads};
        for (; started < threads; started++)
            if (pthread_create(&tid[started], NULL, dc_rows_main, &r[started]) != 0)
                break;
        /* this thread's rows, then those of threads that did not start */
        for (int32_t t = started; t <= threads; t++)
            dc_fill_split(p, &p->scr[0], b, u1, b->need_v, t < threads ? t : 0, threads);
        for (int32_t t = 1; t < started; t++)
            pthread_join(tid[t], NULL);
    }
    for (int32_t t = 0; t < threads; t++) {
        p->entries += p->scr[t].entries;
        p->hits += p->scr[t].hits;
        p->scr[t].entries = p->scr[t].hits = 0;
    }
    b->done = 1;
    b->done_u = b->need_u;
    b->done_v = b->need_v;
    b->queued = 0;
}

/* Orders blocks by stage count: a block is split into fewer stages. */
static int dc_by_stages(const void *a, const void *b)
{
    int32_t x = (*(dc_block *const *)a)->stages;
    int32_t y = (*(dc_block *const *)b)->stages;
    return (x > y) - (x < y);
}

/* T(S', 0, L, nodes x g GPUs) (Eqs. 2.1-2.4): marks the cells it needs,
 * then fills every block bottom-up by stage count. NULL when the shape
 * admits no layout or out of memory (p->oom set). */
static const dc_cell *dc_solve(loom_oobleck_planner *p, int32_t s_all,
                               int32_t nodes, int32_t g)
{
    if (s_all > p->n_layers || (nodes == 1 && g < s_all) ||
        (nodes > 1 && nodes > s_all))
        return NULL;
    dc_block *top = dc_block_for(p, s_all, nodes, g);
    p->n_work = 0;
    if (!top || !dc_need(p, top, 0, 0)) {
        p->oom = 1;
        for (size_t i = 0; i < p->n_work; i++)
            p->work[i]->queued = 0;
        return NULL;
    }
    qsort(p->work, p->n_work, sizeof *p->work, dc_by_stages);
    for (size_t i = 0; i < p->n_work; i++)
        dc_fill(p, p->work[i]);
    p->n_work = 0;
    return dc_at(p, top, 0, p->n_layers);
}

/* Appends the stages of the memoised layout (S', u, v, nodes, g) whose
 * GPUs start at node `node0`, GPU `gpu0`; returns the next stage index. */
static int32_t dc_emit(loom_oobleck_planner *p, int32_t s_all, int32_t u,
                       int32_t v, int32_t nodes, int32_t g, int32_t node0,
                       int32_t gpu0, loom_oobleck_stage *out, int32_t at)
{
    dc_block *block = dc_block_for(p, s_all, nodes, g);
    const dc_cell *r = block ? dc_at(p, block, u, v) : NULL;
    if (!r || r->split_k < 0) {
        loom_oobleck_stage *st = &out[at];
        st->first_layer = u;
        st->n_layers = v - u;
        st->gpus = g;
        st->node = node0;
        st->first_gpu = gpu0;
        st->cost_ms = dc_stage_cost(p, u, v, g);
        return at + 1;
    }
    int32_t k = r->split_k, s = r->split_s, m = r->split_m;
    if (nodes > 1) {
        at = dc_emit(p, s, u, k, m, g, node0, 0, out, at);
        return dc_emit(p, s_all - s, k, v, nodes - m, g, node0 + m, 0, out,
                       at);
    }
    at = dc_emit(p, s, u, k, 1, m, node0, gpu0, out, at);
    return dc_emit(p, s_all - s, k, v, 1, g - m, node0, gpu0 + m, out, at);
}

int loom_oobleck_plan_stages(loom_oobleck_planner *p, int32_t nodes,
                             int32_t stages, loom_oobleck_template *out,
                             loom_error *err)
{
    memset(out, 0, sizeof *out);
    if (nodes < 1 || nodes > LOOM_OOBLECK_MAX_NODES || stages < 1 ||
        stages > LOOM_OOBLECK_MAX_LAYERS)
        return loom_error_format(err, LOOM_EINVAL,
                        "oobleck: nodes in [1, %d] and stages in [1, %d] "
                        "expected, found %d and %d", LOOM_OOBLECK_MAX_NODES,
                        LOOM_OOBLECK_MAX_LAYERS, nodes, stages);
    const dc_cell *r = dc_solve(p, stages, nodes, p->gpus_per_node);
    if (p->oom)
        return loom_error_format(err, LOOM_ENOMEM,
                        "oobleck: the divide and conquer's memo would exceed "
                        "%zu MiB for %d layers on %d node(s); lower max_stages",
                        DC_MEMO_BUDGET >> 20, p->n_layers, nodes);
    if (!r || !isfinite(r->cstar))
        return loom_error_format(err, LOOM_EINFEASIBLE,
                        "oobleck: no layout of %d layers in %d stages on %d "
                        "node(s) of %d GPUs (a stage may not span nodes)",
                        p->n_layers, stages, nodes, p->gpus_per_node);
    out->stages = calloc((size_t)stages, sizeof *out->stages);
    if (!out->stages)
        return loom_error_format(err, LOOM_ENOMEM, "oobleck: out of memory");
    int32_t n = dc_emit(p, stages, 0, p->n_layers, nodes, p->gpus_per_node, 0,
                        0, out->stages, 0);
    out->nodes = nodes;
    out->n_stages = n;
    out->slowest = r->kstar;
    out->slowest_ms = r->cstar;
    out->t1_ms = r->t1;
    out->t3_ms = r->t3;
    /* the same sums the fill compared: 4c for one stage (Eq. 2.4) */
    out->iteration_ms = stages == 1 ? 4 * r->cstar
                                    : r->t1 + (3.0 * stages - 1 + r->kstar) *
                                                  r->cstar + r->t3;
    return LOOM_OK;
}

/* Sum over u < v of (v - u - a + 1)+ for L layers: K(K+1)(K+2)/6 with
 * K = L - a + 1 (the k loops of every cell of one block). */
static double dc_block_work(int32_t layers, int32_t a)
{
    double k = (double)layers - a + 1;
    return k > 0 ? k * (k + 1) * (k + 2) / 6 : 0;
}

int64_t loom_oobleck_work(int32_t n_layers, int32_t gpus_per_node,
                          int32_t max_nodes, int32_t max_stages)
{
    if (n_layers < 1 || gpus_per_node < 1 || max_nodes < 1)
        return 0;
    int64_t smax = (int64_t)max_nodes * gpus_per_node;
    if (smax > n_layers)
        smax = n_layers;
    if (max_stages > 0 && smax > max_stages)
        smax = max_stages;
    /* A cell (a stages, u, v) tries every stage split s and device split
     * m with k over v - u - a + 1 layers: (a - 1)(g - a + 1) (s, m) pairs
     * inside one node of g GPUs, (n - 1)(a - n + 1) across n nodes. Every
     * block (a, GPUs) and (a, nodes) a template on up to max_nodes nodes
     * can reach is counted, each with all of its (u, v) cells. */
    double w = 0;
    for (int64_t g = 1; g <= gpus_per_node; g++)
        for (int64_t a = 2; a <= g && a <= smax; a++)
            w += dc_block_work(n_layers, (int32_t)a) * (double)(a - 1) * (double)(g - a + 1);
    for (int64_t n = 2; n <= max_nodes && w < 9e18; n++)
        for (int64_t a = n; a <= smax; a++)
            w += dc_block_work(n_layers, (int32_t)a) * (double)(n - 1) * (double)(a - n + 1);
    return w >= 9e18 ? INT64_MAX : (int64_t)w;
}

int loom_oobleck_check_work(int32_t n_layers, int32_t gpus_per_node,
                            int32_t max_nodes, int32_t max_stages,
                            loom_error *err)
{
    int64_t w = loom_oobleck_work(n_layers, gpus_per_node, max_nodes, max_stages);
    if (w <= LOOM_OOBLECK_MAX_WORK)
        return LOOM_OK;
    return loom_error_format(err, LOOM_EINVAL,
                    "oobleck: templates of %d layers on up to %d node(s) of %d GPUs "
                    "(max_stages %d) need up to %lld layer splits of the divide and "
                    "conquer, at most %lld; lower max_stages, the node count or the "
                    "layer count", n_layers, max_nodes, gpus_per_node, max_stages,
                    (long long)w, (long long)LOOM_OOBLECK_MAX_WORK);
}

int loom_oobleck_plan_template(loom_oobleck_planner *p, int32_t nodes,
                               int32_t max_stages, loom_oobleck_template *out,
                               loom_error *err)
{
    memset(out, 0, sizeof *out);
    if (nodes < 1 || nodes > LOOM_OOBLECK_MAX_NODES)
        return loom_error_format(err, LOOM_EINVAL,
                        "oobleck: nodes: expected 1 to %d, found %d",
                        LOOM_OOBLECK_MAX_NODES, nodes);
    /* the memo is shared, so this bounds the work of every template planned
     * so far on at most `nodes` nodes together */
    int rc0 = loom_oobleck_check_work(p->n_layers, p->gpus_per_node, nodes, max_stages,
                                      err);
    if (rc0 != LOOM_OK)
        return rc0;
    int64_t hi = (int64_t)nodes * p->gpus_per_node;
    if (hi > p->n_layers)
        hi = p->n_layers;
    if (max_stages > 0 && hi > max_stages)
        hi = max_stages;
    if (hi < nodes)
        return loom_error_format(err, LOOM_EINFEASIBLE,
                        "oobleck: no template for %d nodes: a stage may not "
                        "span nodes, so it needs at least %d stages, but the "
                        "model has %d layers%s", nodes, nodes, p->n_layers,
                        max_stages > 0 && max_stages < nodes
                            ? " (or max_stages is smaller)" : "");
    int32_t ref_nb = (int32_t)(4 * hi);
    loom_oobleck_template best;
    memset(&best, 0, sizeof best);
    double best_ms = INFINITY;
    for (int32_t s = nodes; s <= hi; s++) {
        loom_oobleck_template t;
        loom_error e = {0, ""};
        int rc = loom_oobleck_plan_stages(p, nodes, s, &t, &e);
        if (rc == LOOM_EINFEASIBLE)
            continue;
        if (rc != LOOM_OK) {
            loom_oobleck_template_clear(&best);
            if (err)
                *err = e;
            return rc;
        }
        double ms = loom_oobleck_template_time_ms(&t, ref_nb);
        if (ms < best_ms) {
            loom_oobleck_template_clear(&best);
            best = t;
            best_ms = ms;
        } else {
            loom_oobleck_template_clear(&t);
        }
    }
    if (!isfinite(best_ms))
        return loom_error_format(err, LOOM_EINFEASIBLE,
                        "oobleck: no template for %d nodes of %d GPUs and %d "
                        "layers (every GPU count a stage could use is "
                        "unusable or not a power of two)", nodes,
                        p->gpus_per_node, p->n_layers);
    *out = best;
    return LOOM_OK;
}
