/*
 * ilp_bnb.c - the exact search of the "ilp" interleaver: a depth-first
 * branch and bound over active schedules (Giffler and Thompson's
 * generation, adapted to the per-rank memory cap), pruned by a
 * one-rank preemptive bound (Jackson's preemptive schedule with heads and
 * tails per rank), started from the incumbent the caller gives.
 *
 * A node is a set of placed stages, each at its earliest start after the
 * ones before it on its rank. Among the ready stages (predecessors
 * placed) that fit the memory cap, o* finishes earliest, at c*, on rank
 * k. Every completion of the node has, as its next stage on k, either a
 * fitting ready stage x of k with earliest start e(x) < c*, or a stage
 * starting at c* or later; when o* frees memory (delta <= 0) the latter
 * can be turned into "o* first" without delaying anything, otherwise a
 * child with rank k idle until c* covers it. So the children are the x
 * (o* included) plus, when o* allocates memory, that idle child, in which
 * none of the x may be k's next stage (started later they would only
 * repeat their own child's orders): no optimum is lost (positive
 * durations assumed; see docs/memory-and-ilp.md). Without an incumbent
 * the search looks below the sum of every duration and transfer.
 *
 * Without a cap, moving o* first never breaks a memory limit, so no idle
 * child is made. A stage becomes ready only after its twin in the
 * previous identical microbatch is placed (ilp_twins.c); the bound is
 * ilp_bound.c's, and nodes dominated by a settled node with the same
 * placed stages are cut (ilp_memo.c).
 */
#include <math.h>
#include <string.h>
#include "ilp_bnb.h"

/* Places v at t (its earliest start) and updates the successors. */
static void bnb_place(loom_ilpi_bnb *b, int32_t v, double t)
{
    const loom_ilpi_problem *pb = b->pb;
    const loom_stage_graph *g = b->g;
    int32_t r = g->rank[v];
    b->start[v] = t;
    b->seq[pb->rank_off[r] + b->pos[r]++] = v;
    b->free_ms[r] = t + g->duration_ms[v];
    b->rem_ms[r] -= g->duration_ms[v];
    b->mem[r] += (double)g->mem_delta_bytes[v];
    b->placed++;
    loom_ilpi_memo_mark(b, v, 1);
    for (int32_t k = pb->succ_off[v]; k < pb->succ_off[v + 1]; k++)
        b->left[pb->succ[k]]--;
    if (b->twin_next[v] >= 0)
        b->left[b->twin_next[v]]--;
}

/* Undoes bnb_place (ready times are recomputed by the caller). */
static void bnb_unplace(loom_ilpi_bnb *b, int32_t v, double old_free)
{
    const loom_ilpi_problem *pb = b->pb;
    const loom_stage_graph *g = b->g;
    int32_t r = g->rank[v];
    b->start[v] = -1.0;
    b->pos[r]--;
    b->free_ms[r] = old_free;
    b->rem_ms[r] += g->duration_ms[v];
    b->mem[r] -= (double)g->mem_delta_bytes[v];
    b->placed--;
    loom_ilpi_memo_mark(b, v, 0);
    for (int32_t k = pb->succ_off[v]; k < pb->succ_off[v + 1]; k++)
        b->left[pb->succ[k]]++;
    if (b->twin_next[v] >= 0)
        b->left[b->twin_next[v]]++;
}

/* Ready time of v from its placed predecessors. */
static double bnb_ready(const loom_ilpi_bnb *b, int32_t v)
{
    const loom_stage_graph *g = b->g;
    double t = 0.0;
    for (int32_t k = g->pred_off[v]; k < g->pred_off[v + 1]; k++) {
        int32_t u = g->pred[k];
        double x = b->start[u] + g->duration_ms[u] + g->pred_p2p_ms[k];
        t = x > t ? x : t;
    }
    return t;
}

/* Branch preference: kind rank (backward, forward, weight). */
static int bnb_kind_rank(uint8_t kind)
{
    return kind == LOOM_STAGE_W ? 2 : kind == LOOM_STAGE_F ? 1 : 0;
}

/* Records a complete schedule. */
static void bnb_leaf(loom_ilpi_bnb *b)
{
    if (b->makespan < b->best_ms - b->tol) {
        b->best_ms = b->makespan;
        memcpy(b->best, b->seq, (size_t)b->n * sizeof *b->best);
        b->found = 1;
        if (b->best_ms <= b->root_lb + b->tol)
            b->stop = 1; /* meets the lower bound */
    }
}

/* 1 when an idle child's exclusion is in force at this node (such a node
 * searches fewer orders than its placed set allows, so it is not kept in
 * the dominance memo). */
static int bnb_restricted(const loom_ilpi_bnb *b)
{
    for (int32_t v = 0; v < b->n; v++)
        if (b->start[v] < 0.0 && b->ban[v] != 0 && b->ban[v] == b->epoch[b->g->rank[v]])
            return 1;
    return 0;
}

/* Makes room for the candidates of `depth` (doubling); 0 when the search
 * is deeper than max_depth or out of memory. Idle children let the depth
 * exceed the stage count. */
static int bnb_grow(loom_ilpi_bnb *b, int32_t depth)
{
    if (depth >= b->max_depth)
        return 0;
    int32_t want = b->cand_depths;
    while (want <= depth)
        want *= 2;
    want = want > b->max_depth ? b->max_depth : want;
    int32_t *c = b->host->realloc(b->cand, (size_t)want * (size_t)b->n * sizeof *c);
    if (!c)
        return 0;
    b->cand = c;
    b->cand_depths = want;
    return 1;
}

/* One node of the depth-first search at `depth`; its candidates go to
 * this depth's slice of the scratch. */
static void bnb_node(loom_ilpi_bnb *b, int32_t depth)
{
    const loom_stage_graph *g = b->g;
    if (b->stop)
        return;
    if (depth >= b->cand_depths && !bnb_grow(b, depth)) {
        b->exact = 0; /* too deep: this subtree is skipped */
        return;
    }
    size_t base = (size_t)depth * (size_t)b->n;
    if ((++b->nodes & 255) == 0 && b->host->now_ms() > b->deadline_ms) {
        b->stop = 2;
        return;
    }
    if (b->placed == b->n) {
        bnb_leaf(b);
        return;
    }
    int keyed = loom_ilpi_memo_key(b);
    if (keyed && loom_ilpi_memo_dominated(b))
        return;
    if (loom_ilpi_bound(b) >= b->best_ms - b->tol) {
        if (keyed && !bnb_restricted(b))
            loom_ilpi_memo_store(b);
        return;
    }
    /* o*: the fitting ready stage that finishes earliest */
    int32_t o = -1;
    double c = INFINITY;
    for (int32_t v = 0; v < b->n; v++) {
        if (b->start[v] >= 0.0 || b->left[v] != 0)
            continue;
        b->ready[v] = bnb_ready(b, v);
        if (!loom_ilpi_may_run(b, v))
            continue;
        double f = b->free_ms[g->rank[v]];
        double e = b->ready[v] > f ? b->ready[v] : f;
        double x = e + g->duration_ms[v];
        if (x < c || (x == c && b->q[v] > b->q[o])) {
            c = x;
            o = v;
        }
    }
    if (o < 0)
        return; /* nothing fits: no completion */
    int32_t k = g->rank[o], nc = 0;
    if (!(g->duration_ms[o] > 0.0))
        b->exact = 0;
    for (int32_t v = 0; v < b->n; v++) {
        if (b->start[v] >= 0.0 || b->left[v] != 0 || g->rank[v] != k ||
            !loom_ilpi_may_run(b, v))
            continue;
        double e = b->ready[v] > b->free_ms[k] ? b->ready[v] : b->free_ms[k];
        if (e < c || v == o || (!(g->duration_ms[o] > 0.0) && e <= c))
            b->cand[base + nc++] = v;
    }
    /* order: earliest start, then backward / forward / weight, then the
     * longest tail */
    for (int32_t i = 1; i < nc; i++) {
        int32_t v = b->cand[base + i], j = i - 1;
        double ev = b->ready[v] > b->free_ms[k] ? b->ready[v] : b->free_ms[k];
        while (j >= 0) {
            int32_t u = b->cand[base + j];
            double eu = b->ready[u] > b->free_ms[k] ? b->ready[u] : b->free_ms[k];
            int later = eu > ev ||
                        (eu == ev && (bnb_kind_rank(g->kind[u]) > bnb_kind_rank(g->kind[v]) ||
                                      (bnb_kind_rank(g->kind[u]) == bnb_kind_rank(g->kind[v]) &&
                                       b->q[u] < b->q[v])));
            if (!later)
                break;
            b->cand[base + j + 1] = u;
            j--;
        }
        b->cand[base + j + 1] = v;
    }
    double old_free = b->free_ms[k], old_span = b->makespan;
    int64_t old_epoch = b->epoch[k];
    for (int32_t i = 0; i < nc && !b->stop; i++) {
        int32_t v = b->cand[base + i];
        double e = b->ready[v] > old_free ? b->ready[v] : old_free;
        bnb_place(b, v, e);
        b->epoch[k] = ++b->clock;
        double end = e + g->duration_ms[v];
        b->makespan = end > old_span ? end : old_span;
        bnb_node(b, depth + 1);
        b->makespan = old_span;
        b->epoch[k] = old_epoch;
        bnb_unplace(b, v, old_free);
    }
    if (g->memory_cap_bytes > 0.0 && g->mem_delta_bytes[o] > 0 && c > old_free && !b->stop) {
        /* rank k idle until c*; its next stage is none of the children
         * above (each of those, started later, is a delayed copy of its
         * own child's orders) */
        for (int32_t i = 0; i < nc; i++)
            b->ban[b->cand[base + i]] = old_epoch;
        b->free_ms[k] = c;
        bnb_node(b, depth + 1);
        b->free_ms[k] = old_free;
        for (int32_t i = 0; i < nc; i++)
            b->ban[b->cand[base + i]] = 0;
    }
    if (keyed && !b->stop && !bnb_restricted(b) && loom_ilpi_memo_key(b))
        loom_ilpi_memo_store(b); /* settled: every child searched */
}

/* Allocates the search state; 0 when out of memory. */
static int bnb_alloc(loom_ilpi_bnb *b)
{
    const loom_host_api *h = b->host;
    size_t n = (size_t)b->n + 1, P = (size_t)b->P + 1;
    b->twin = h->alloc(n * sizeof *b->twin);
    b->twin_next = h->alloc(n * sizeof *b->twin_next);
    b->topo = h->alloc(n * sizeof *b->topo);
    b->left = h->alloc(n * sizeof *b->left);
    b->ready = h->alloc(n * sizeof *b->ready);
    b->start = h->alloc(n * sizeof *b->start);
    b->head = h->alloc(n * sizeof *b->head);
    b->q = h->alloc(n * sizeof *b->q);
    b->jps_rem = h->alloc(n * sizeof *b->jps_rem);
    b->floor = h->alloc(n * sizeof *b->floor);
    b->fcand = h->alloc(n * sizeof *b->fcand);
    b->qd = h->alloc(n * sizeof *b->qd);
    b->tfloor = h->alloc(n * sizeof *b->tfloor);
    b->tcand = h->alloc(n * sizeof *b->tcand);
    b->ban = h->alloc(n * sizeof *b->ban);
    b->epoch = h->alloc(P * sizeof *b->epoch);
    b->creach = h->alloc(n * n);
    b->free_ms = h->alloc(P * sizeof *b->free_ms);
    b->rem_ms = h->alloc(P * sizeof *b->rem_ms);
    b->mem = h->alloc(P * sizeof *b->mem);
    b->pos = h->alloc(P * sizeof *b->pos);
    b->seq = h->alloc(n * sizeof *b->seq);
    b->best = h->alloc(n * sizeof *b->best);
    /* one candidate list per depth, grown as the search goes deeper */
    b->max_depth = 64 * b->n + 64; /* and a bounded stack: */
    b->max_depth = b->max_depth < 16384 ? b->max_depth : 16384;
    b->cand_depths = b->n + 1;
    b->cand = h->alloc((size_t)b->cand_depths * n * sizeof *b->cand);
    return b->twin && b->twin_next && b->topo && b->left && b->ready &&
           b->start && b->head && b->q && b->jps_rem && b->floor && b->fcand && b->qd && b->tfloor && b->tcand && b->ban && b->epoch && b->creach && b->free_ms &&
           b->rem_ms && b->mem && b->pos && b->seq && b->best && b->cand;
}

/* Frees the search state. */
static void bnb_free(loom_ilpi_bnb *b)
{
    const loom_host_api *h = b->host;
    void *p[] = {b->twin, b->twin_next, b->topo, b->left, b->ready, b->start,
                 b->head, b->q, b->jps_rem, b->floor, b->fcand, b->qd, b->tfloor, b->tcand, b->ban, b->epoch, b->creach, b->free_ms, b->rem_ms, b->mem,
                 b->pos, b->seq, b->best, b->cand};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
        h->free(p[i]);
}

/* Allocates and sets up the search state at the root and computes the
 * root bound into b->root_lb; LOOM_ENOMEM (state freed). */
static int bnb_setup(loom_ilpi_bnb *b, const loom_host_api *host, loom_ilpi_problem *pb,
                     double timeout_ms, loom_error *err)
{
    memset(b, 0, sizeof *b);
    b->host = host;
    b->pb = pb;
    b->g = pb->g;
    b->n = pb->n;
    b->P = pb->n_ranks;
    if (!bnb_alloc(b)) {
        bnb_free(b);
        return host->error(err, LOOM_ENOMEM, "ilp: out of memory");
    }
    loom_ilpi_twins(b, b->left); /* left is free scratch until the search */
    loom_ilpi_order(b, b->left);
    loom_ilpi_creach(b);
    const loom_stage_graph *g = pb->g;
    for (int32_t v = 0; v < b->n; v++) {
        b->left[v] = g->pred_off[v + 1] - g->pred_off[v] + (b->twin[v] >= 0);
        b->start[v] = -1.0;
        b->ready[v] = 0.0;
        b->ban[v] = 0;
    }
    b->clock = 1;
    for (int32_t r = 0; r < b->P; r++) {
        b->epoch[r] = 1;
        b->free_ms[r] = 0.0;
        b->mem[r] = 0.0;
        b->pos[r] = 0;
        b->rem_ms[r] = 0.0;
    }
    for (int32_t v = 0; v < b->n; v++)
        b->rem_ms[g->rank[v]] += g->duration_ms[v];
    double scale = pb->lower_bound_ms > 1.0 ? pb->lower_bound_ms : 1.0;
    b->tol = 1e-9 * scale;
    b->exact = 1;
    b->deadline_ms = host->now_ms() + timeout_ms;
    /* the root bound with the twins' tails */
    b->root_lb = pb->lower_bound_ms;
    b->best_ms = INFINITY;
    b->floor_passes = b->n; /* the root bound: memory floors to a fixed point */
    double root = loom_ilpi_bound(b);
    b->floor_passes = 4;
    b->root_lb = root > b->root_lb ? root : b->root_lb;
    return LOOM_OK;
}

/* Searches (see header). */
int loom_ilpi_search(const loom_host_api *host, loom_ilpi_problem *pb,
                     double incumbent_ms, double timeout_ms, int32_t *rank_off,
                     int32_t *order, loom_ilpi_result *res, loom_error *err)
{
    loom_ilpi_bnb b;
    res->makespan_ms = incumbent_ms;
    res->lower_bound_ms = pb->lower_bound_ms;
    res->proven = 0;
    res->timed_out = 0;
    res->nodes = 0;
    int rc = bnb_setup(&b, host, pb, timeout_ms, err);
    if (rc != LOOM_OK)
        return rc;
    const loom_stage_graph *g = pb->g;
    res->lower_bound_ms = b.root_lb;
    if (!(b.root_lb < INFINITY)) { /* some stage can never fit the cap */
        res->proven = 1;
        loom_ilpi_memo_free(&b);
        bnb_free(&b);
        return LOOM_OK;
    }
    /* without an incumbent: the semi-active schedule of any order that
     * fits ends by the sum of every duration and transfer */
    double horizon = 0.0;
    for (int32_t v = 0; v < b.n; v++) {
        horizon += g->duration_ms[v];
        for (int32_t k = g->pred_off[v]; k < g->pred_off[v + 1]; k++)
            horizon += g->pred_p2p_ms[k];
    }
    b.best_ms = incumbent_ms >= 0.0 ? incumbent_ms : horizon + 2.0 * b.tol + 1e-9 * horizon;
    if (incumbent_ms >= 0.0 && b.best_ms > b.root_lb + b.tol) {
        /* the root again with the incumbent's deductions: every order
         * either reaches the incumbent or respects them, so the smaller
         * of the two is a bound */
        b.floor_passes = b.n;
        double x = loom_ilpi_bound(&b);
        b.floor_passes = 4;
        x = x < b.best_ms ? x : b.best_ms;
        b.root_lb = x > b.root_lb ? x : b.root_lb;
        res->lower_bound_ms = b.root_lb;
    }
    if (incumbent_ms >= 0.0 && b.best_ms <= b.root_lb + b.tol) {
        res->proven = 1; /* the incumbent meets the bound */
        res->lower_bound_ms = b.best_ms;
        loom_ilpi_memo_free(&b);
        bnb_free(&b);
        return LOOM_OK;
    }
    if (!loom_ilpi_memo_init(&b, (size_t)16 << 20)) {
        loom_ilpi_memo_free(&b);
        bnb_free(&b);
        return host->error(err, LOOM_ENOMEM, "ilp: out of memory");
    }
    bnb_node(&b, 0);
    res->nodes = b.nodes;
    if (b.found) {
        for (int32_t r = 0; r <= b.P; r++)
            rank_off[r] = pb->rank_off[r];
        memcpy(order, b.best, (size_t)b.n * sizeof *order);
        double span = loom_ilpi_replay(pb, rank_off, order, NULL);
        res->makespan_ms = span >= 0.0 && span < b.best_ms ? span : b.best_ms;
    }
    res->timed_out = b.stop == 2;
    if (b.stop != 2 && b.exact) {
        res->proven = 1; /* finished, or met the bound */
        if (res->makespan_ms >= 0.0)
            res->lower_bound_ms = res->makespan_ms;
    }
    loom_ilpi_memo_free(&b);
    bnb_free(&b);
    return LOOM_OK;
}
