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
 * (o* included) plus, when o* allocates memory, that idle child: no
 * optimum is lost (positive durations assumed; see docs/memory-and-ilp.md).
 *
 * Symmetry: microbatches whose stages are identical (durations, memory
 * deltas, ranks, kinds, edges and transfer times, in id order within the
 * microbatch) and that have no edges to other microbatches are
 * interchangeable, and some optimum runs them in first-in first-out order
 * on every rank: a stage becomes ready only after its twin in the
 * previous identical microbatch is placed.
 */
#include <math.h>
#include <string.h>
#include "ilp.h"

typedef struct bnb {
    const loom_host_api *host;
    loom_ilpi_problem *pb;
    const loom_stage_graph *g;
    int32_t n, P;
    int32_t *twin;       /* previous identical microbatch's stage, or -1 */
    int32_t *twin_next;  /* the stage whose twin this is, or -1 */
    int32_t *topo;       /* topological order over edges and twins */
    int32_t *left;       /* unplaced predecessors (twin included) */
    double *ready;       /* max over placed predecessors of end + p2p */
    double *start;       /* start of a placed stage, -1 unplaced */
    double *head, *q;    /* bound scratch: earliest start, tail with twins */
    double *free_ms, *rem_ms;
    double *mem;
    int32_t *pos;        /* per rank: stages placed */
    int32_t *seq;        /* per rank: placed stages in order (rank_off) */
    int32_t *best;       /* best order found (rank_off layout) */
    int32_t *cand;       /* branch scratch: n stages per depth, grown */
    double *jps_rem;     /* bound scratch per stage */
    double *floor;       /* bound scratch: memory floors of heads */
    int32_t *fcand;      /* bound scratch: stages that free memory */
    uint8_t *creach;     /* n x n: order forced by edges and twins */
    int32_t floor_passes; /* memory-floor rounds per bound */
    int32_t placed, max_depth, cand_depths;
    int64_t *ban;        /* per stage: the rank epoch it is banned in */
    int64_t *epoch;      /* per rank: changes with every placement */
    int64_t clock;       /* last epoch handed out */
    double makespan;     /* max end of the placed stages */
    double best_ms, root_lb, tol, deadline_ms;
    int found, stop, exact;
    int64_t nodes;
} bnb;

/* 1 when v's memory delta fits its rank now. */
static int bnb_fits(const bnb *b, int32_t v)
{
    const loom_stage_graph *g = b->g;
    int64_t d = g->mem_delta_bytes[v];
    if (!(g->memory_cap_bytes > 0.0) || d <= 0)
        return 1;
    int32_t r = g->rank[v];
    double st = (double)(g->static_bytes ? g->static_bytes[r] : 0);
    return st + b->mem[r] + (double)d <= g->memory_cap_bytes;
}

/* 1 when v may be its rank's next stage now: it fits, and no idle child
 * above excluded it since its rank last placed a stage. */
static int bnb_may_run(const bnb *b, int32_t v)
{
    return bnb_fits(b, v) && b->ban[v] != b->epoch[b->g->rank[v]];
}

/* 1 when microbatches a and b (stage ranges) are interchangeable. */
static int bnb_same_mb(const loom_stage_graph *g, int32_t a0, int32_t b0,
                       int32_t len)
{
    for (int32_t i = 0; i < len; i++) {
        int32_t u = a0 + i, v = b0 + i;
        if (g->rank[u] != g->rank[v] || g->kind[u] != g->kind[v] ||
            g->duration_ms[u] != g->duration_ms[v] ||
            g->mem_delta_bytes[u] != g->mem_delta_bytes[v] ||
            g->pred_off[u + 1] - g->pred_off[u] != g->pred_off[v + 1] - g->pred_off[v])
            return 0;
        for (int32_t k = 0; k < g->pred_off[u + 1] - g->pred_off[u]; k++) {
            int32_t ku = g->pred_off[u] + k, kv = g->pred_off[v] + k;
            if (g->pred[ku] - a0 != g->pred[kv] - b0 ||
                g->pred_p2p_ms[ku] != g->pred_p2p_ms[kv])
                return 0;
        }
    }
    return 1;
}

/* Finds the twins: microbatches must be contiguous id ranges with edges
 * only inside; otherwise no symmetry is used. */
static void bnb_twins(bnb *b, int32_t *first)
{
    const loom_stage_graph *g = b->g;
    int32_t n = b->n, M = g->n_microbatches;
    for (int32_t v = 0; v < n; v++)
        b->twin[v] = b->twin_next[v] = -1;
    if (M < 2 || g->n_stages == 0)
        return;
    for (int32_t m = 0; m <= M; m++)
        first[m] = -1;
    for (int32_t v = 0; v < n; v++) {
        int32_t m = g->microbatch[v];
        if (m < 0 || m >= M)
            return;
        if (first[m] < 0)
            first[m] = v;
        else if (g->microbatch[v - 1] != m)
            return; /* not contiguous */
        for (int32_t k = g->pred_off[v]; k < g->pred_off[v + 1]; k++)
            if (g->microbatch[g->pred[k]] != m)
                return;
    }
    if (g->group_pred_off && g->n_groups > 0 &&
        g->group_pred_off[g->n_groups] > 0)
        return; /* group precedence ties microbatches together */
    first[M] = n;
    for (int32_t m = 0; m < M; m++)
        if (first[m] < 0)
            return;
    /* ends of each microbatch: the next start in id order */
    for (int32_t m = 0; m < M; m++) {
        int32_t len = -1;
        for (int32_t j = 0; j <= M; j++)
            if (first[j] > first[m] && (len < 0 || first[j] - first[m] < len))
                len = first[j] - first[m];
        /* the latest earlier microbatch identical to m is its twin */
        for (int32_t j = m - 1; j >= 0; j--) {
            int32_t lj = -1;
            for (int32_t i = 0; i <= M; i++)
                if (first[i] > first[j] && (lj < 0 || first[i] - first[j] < lj))
                    lj = first[i] - first[j];
            if (lj == len && bnb_same_mb(g, first[j], first[m], len)) {
                for (int32_t i = 0; i < len; i++) {
                    b->twin[first[m] + i] = first[j] + i;
                    b->twin_next[first[j] + i] = first[m] + i;
                }
                break;
            }
        }
    }
}

/* Topological order over edges and twin links; tails q with twins. */
static void bnb_order(bnb *b, int32_t *indeg)
{
    const loom_ilpi_problem *pb = b->pb;
    const loom_stage_graph *g = b->g;
    int32_t n = b->n, head = 0, tail = 0;
    for (int32_t v = 0; v < n; v++)
        indeg[v] = g->pred_off[v + 1] - g->pred_off[v] + (b->twin[v] >= 0);
    for (int32_t v = 0; v < n; v++)
        if (indeg[v] == 0)
            b->topo[tail++] = v;
    while (head < tail) {
        int32_t u = b->topo[head++];
        for (int32_t k = pb->succ_off[u]; k < pb->succ_off[u + 1]; k++)
            if (--indeg[pb->succ[k]] == 0)
                b->topo[tail++] = pb->succ[k];
        if (b->twin_next[u] >= 0 && --indeg[b->twin_next[u]] == 0)
            b->topo[tail++] = b->twin_next[u];
    }
    for (int32_t i = n - 1; i >= 0; i--) {
        int32_t u = b->topo[i];
        double t = g->duration_ms[u];
        for (int32_t k = pb->succ_off[u]; k < pb->succ_off[u + 1]; k++) {
            double x = g->duration_ms[u] + pb->succ_p2p[k] + b->q[pb->succ[k]];
            t = x > t ? x : t;
        }
        if (b->twin_next[u] >= 0) {
            double x = g->duration_ms[u] + b->q[b->twin_next[u]];
            t = x > t ? x : t;
        }
        b->q[u] = t;
    }
}

/* Preemptive one-rank bound (Jackson): rank r's unplaced stages with
 * their heads and tails after them; the latest completion plus tail. */
static double bnb_jps(bnb *b, int32_t r)
{
    const loom_ilpi_problem *pb = b->pb;
    const loom_stage_graph *g = b->g;
    int32_t a = pb->rank_off[r], z = pb->rank_off[r + 1], left = 0;
    double t = INFINITY, lb = 0.0;
    for (int32_t i = a; i < z; i++) {
        int32_t v = pb->rank_stages[i];
        b->jps_rem[v] = b->start[v] < 0.0 ? g->duration_ms[v] : 0.0;
        if (b->start[v] < 0.0) {
            left++;
            t = b->head[v] < t ? b->head[v] : t;
        }
    }
    while (left > 0) {
        int32_t pick = -1;
        double next = INFINITY;
        for (int32_t i = a; i < z; i++) {
            int32_t v = pb->rank_stages[i];
            if (b->start[v] >= 0.0 || b->jps_rem[v] < 0.0)
                continue;
            if (b->head[v] <= t) {
                if (pick < 0 || b->q[v] - g->duration_ms[v] >
                                    b->q[pick] - g->duration_ms[pick])
                    pick = v;
            } else if (b->head[v] < next) {
                next = b->head[v];
            }
        }
        if (pick < 0) {
            t = next;
            continue;
        }
        double run = b->jps_rem[pick];
        if (t + run > next)
            run = next - t;
        t += run;
        b->jps_rem[pick] -= run;
        if (b->jps_rem[pick] <= 0.0) {
            b->jps_rem[pick] = -1.0; /* done */
            left--;
            double end = t + b->q[pick] - g->duration_ms[pick];
            lb = end > lb ? end : lb;
        }
    }
    return lb;
}

/* Earliest starts of the unplaced stages from the placed ones, the
 * predecessors' heads, the twins' and each stage's floor (floor may be
 * NULL); returns the largest head + tail and the placed stages' end. */
static double bnb_heads(bnb *b, const double *floor)
{
    const loom_stage_graph *g = b->g;
    double lb = b->makespan;
    for (int32_t i = 0; i < b->n; i++) {
        int32_t v = b->topo[i];
        if (b->start[v] >= 0.0)
            continue;
        double h = b->free_ms[g->rank[v]];
        if (floor && floor[v] > h)
            h = floor[v];
        for (int32_t k = g->pred_off[v]; k < g->pred_off[v + 1]; k++) {
            int32_t u = g->pred[k];
            double x = (b->start[u] < 0.0 ? b->head[u] : b->start[u]) +
                       g->duration_ms[u] + g->pred_p2p_ms[k];
            h = x > h ? x : h;
        }
        int32_t tw = b->twin[v];
        if (tw >= 0 && b->start[tw] < 0.0) {
            double x = b->head[tw] + g->duration_ms[tw];
            h = x > h ? x : h;
        }
        b->head[v] = h;
        lb = h + b->q[v] > lb ? h + b->q[v] : lb;
    }
    return lb;
}

/* Memory floors. When an unplaced stage v that allocates runs, its rank
 * holds what it holds now, plus what v and every unplaced stage of its
 * rank that must precede it (an ancestor through edges or twins)
 * allocate, minus what such ancestors free; any excess over the cap must
 * be freed first by other unplaced stages of the rank that do not depend
 * on v, so v starts no earlier than the smallest head + duration by which
 * enough of them can have ended (taking them by that time). Raises
 * floor[v] (INFINITY: nothing frees enough); returns 1 when one rose. */
static int bnb_memory_floors(bnb *b)
{
    const loom_ilpi_problem *pb = b->pb;
    const loom_stage_graph *g = b->g;
    size_t n = (size_t)b->n;
    int raised = 0;
    for (int32_t r = 0; r < b->P; r++) {
        int32_t a = pb->rank_off[r], z = pb->rank_off[r + 1];
        double room = g->memory_cap_bytes - (double)(g->static_bytes ? g->static_bytes[r] : 0) -
                      b->mem[r];
        for (int32_t i = a; i < z; i++) {
            int32_t v = pb->rank_stages[i];
            double dv = (double)g->mem_delta_bytes[v];
            if (b->start[v] >= 0.0 || dv <= 0.0)
                continue;
            double need = dv - room;
            int32_t nc = 0;
            for (int32_t k = a; k < z; k++) {
                int32_t u = pb->rank_stages[k];
                double du = (double)g->mem_delta_bytes[u];
                if (u == v || b->start[u] >= 0.0 || du == 0.0)
                    continue;
                if (b->creach[(size_t)u * n + (size_t)v])
                    need += du; /* runs before v whatever the order */
                else if (du < 0.0 && !b->creach[(size_t)v * n + (size_t)u])
                    b->fcand[nc++] = u;
            }
            if (need <= 0.0)
                continue;
            /* the candidates by head + duration; enough of them must end */
            for (int32_t x = 1; x < nc; x++) {
                int32_t u = b->fcand[x], y = x - 1;
                double ku = b->head[u] + g->duration_ms[u];
                while (y >= 0 && b->head[b->fcand[y]] + g->duration_ms[b->fcand[y]] > ku) {
                    b->fcand[y + 1] = b->fcand[y];
                    y--;
                }
                b->fcand[y + 1] = u;
            }
            double t = INFINITY;
            for (int32_t x = 0; x < nc; x++) {
                int32_t u = b->fcand[x];
                need += (double)g->mem_delta_bytes[u];
                if (need <= 0.0) {
                    t = b->head[u] + g->duration_ms[u];
                    break;
                }
            }
            if (t > b->head[v] + b->tol && t > b->floor[v] + b->tol) {
                b->floor[v] = t;
                raised = 1;
            }
        }
    }
    return raised;
}

/* Combined reachability (edges and twin links): creach[u * n + v] = 1
 * when v runs after u in every order the search considers. */
static void bnb_creach(bnb *b)
{
    const loom_ilpi_problem *pb = b->pb;
    size_t n = (size_t)b->n;
    memset(b->creach, 0, n * n);
    for (int32_t i = b->n - 1; i >= 0; i--) {
        int32_t u = b->topo[i];
        uint8_t *row = &b->creach[(size_t)u * n];
        for (int32_t k = pb->succ_off[u]; k <= pb->succ_off[u + 1]; k++) {
            int32_t v = k < pb->succ_off[u + 1] ? pb->succ[k] : b->twin_next[u];
            if (v < 0)
                continue;
            const uint8_t *vrow = &b->creach[(size_t)v * n];
            row[v] = 1;
            for (size_t x = 0; x < n; x++)
                row[x] |= vrow[x];
        }
    }
}

/* Lower bound of every completion of the node. */
static double bnb_bound(bnb *b)
{
    const loom_stage_graph *g = b->g;
    double lb = bnb_heads(b, NULL);
    if (lb >= b->best_ms - b->tol)
        return lb;
    if (g->memory_cap_bytes > 0.0) {
        for (int32_t v = 0; v < b->n; v++)
            b->floor[v] = 0.0;
        for (int32_t pass = 0; pass < b->floor_passes && bnb_memory_floors(b); pass++) {
            double x = bnb_heads(b, b->floor);
            lb = x > lb ? x : lb;
            if (lb >= b->best_ms - b->tol)
                return lb;
        }
    }
    if (lb >= b->best_ms - b->tol)
        return lb;
    /* per rank: min head + remaining work + min tail after */
    for (int32_t r = 0; r < b->P; r++) {
        const loom_ilpi_problem *pb = b->pb;
        double h = INFINITY, after = INFINITY;
        for (int32_t i = pb->rank_off[r]; i < pb->rank_off[r + 1]; i++) {
            int32_t v = pb->rank_stages[i];
            if (b->start[v] >= 0.0)
                continue;
            h = b->head[v] < h ? b->head[v] : h;
            double x = b->q[v] - g->duration_ms[v];
            after = x < after ? x : after;
        }
        if (h < INFINITY && h + b->rem_ms[r] + after > lb)
            lb = h + b->rem_ms[r] + after;
    }
    if (lb >= b->best_ms - b->tol)
        return lb;
    for (int32_t r = 0; r < b->P; r++) {
        double x = bnb_jps(b, r);
        lb = x > lb ? x : lb;
        if (lb >= b->best_ms - b->tol)
            break;
    }
    return lb;
}

/* Places v at t (its earliest start) and updates the successors. */
static void bnb_place(bnb *b, int32_t v, double t)
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
    for (int32_t k = pb->succ_off[v]; k < pb->succ_off[v + 1]; k++)
        b->left[pb->succ[k]]--;
    if (b->twin_next[v] >= 0)
        b->left[b->twin_next[v]]--;
}

/* Undoes bnb_place (ready times are recomputed by the caller). */
static void bnb_unplace(bnb *b, int32_t v, double old_free)
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
    for (int32_t k = pb->succ_off[v]; k < pb->succ_off[v + 1]; k++)
        b->left[pb->succ[k]]++;
    if (b->twin_next[v] >= 0)
        b->left[b->twin_next[v]]++;
}

/* Ready time of v from its placed predecessors. */
static double bnb_ready(const bnb *b, int32_t v)
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
static void bnb_leaf(bnb *b)
{
    if (b->makespan < b->best_ms - b->tol) {
        b->best_ms = b->makespan;
        memcpy(b->best, b->seq, (size_t)b->n * sizeof *b->best);
        b->found = 1;
        if (b->best_ms <= b->root_lb + b->tol)
            b->stop = 1; /* meets the lower bound */
    }
}

/* Makes room for the candidates of `depth` (doubling); 0 when the search
 * is deeper than max_depth or out of memory. Idle children let the depth
 * exceed the stage count. */
static int bnb_grow(bnb *b, int32_t depth)
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
static void bnb_node(bnb *b, int32_t depth)
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
    if (bnb_bound(b) >= b->best_ms - b->tol)
        return;
    /* o*: the fitting ready stage that finishes earliest */
    int32_t o = -1;
    double c = INFINITY;
    for (int32_t v = 0; v < b->n; v++) {
        if (b->start[v] >= 0.0 || b->left[v] != 0)
            continue;
        b->ready[v] = bnb_ready(b, v);
        if (!bnb_may_run(b, v))
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
            !bnb_may_run(b, v))
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
    if (g->mem_delta_bytes[o] > 0 && c > old_free && !b->stop) {
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
}

/* Allocates the search state; 0 when out of memory. */
static int bnb_alloc(bnb *b)
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
           b->start && b->head && b->q && b->jps_rem && b->floor && b->fcand && b->ban && b->epoch && b->creach && b->free_ms &&
           b->rem_ms && b->mem && b->pos && b->seq && b->best && b->cand;
}

/* Frees the search state. */
static void bnb_free(bnb *b)
{
    const loom_host_api *h = b->host;
    void *p[] = {b->twin, b->twin_next, b->topo, b->left, b->ready, b->start,
                 b->head, b->q, b->jps_rem, b->floor, b->fcand, b->ban, b->epoch, b->creach, b->free_ms, b->rem_ms, b->mem,
                 b->pos, b->seq, b->best, b->cand};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
        h->free(p[i]);
}

/* Searches (see header). */
int loom_ilpi_search(const loom_host_api *host, loom_ilpi_problem *pb,
                     double incumbent_ms, double timeout_ms, int32_t *rank_off,
                     int32_t *order, loom_ilpi_result *res, loom_error *err)
{
    bnb b;
    memset(&b, 0, sizeof b);
    b.host = host;
    b.pb = pb;
    b.g = pb->g;
    b.n = pb->n;
    b.P = pb->n_ranks;
    res->makespan_ms = incumbent_ms;
    res->lower_bound_ms = pb->lower_bound_ms;
    res->proven = 0;
    res->timed_out = 0;
    res->nodes = 0;
    if (!bnb_alloc(&b)) {
        bnb_free(&b);
        return host->error(err, LOOM_ENOMEM, "ilp: out of memory");
    }
    bnb_twins(&b, b.left); /* left is free scratch until the search */
    bnb_order(&b, b.left);
    bnb_creach(&b);
    const loom_stage_graph *g = pb->g;
    for (int32_t v = 0; v < b.n; v++) {
        b.left[v] = g->pred_off[v + 1] - g->pred_off[v] + (b.twin[v] >= 0);
        b.start[v] = -1.0;
        b.ready[v] = 0.0;
    }
    for (int32_t v = 0; v < b.n; v++)
        b.ban[v] = 0;
    b.clock = 1;
    for (int32_t r = 0; r < b.P; r++) {
        b.epoch[r] = 1;
        b.free_ms[r] = 0.0;
        b.mem[r] = 0.0;
        b.pos[r] = 0;
        b.rem_ms[r] = 0.0;
    }
    for (int32_t v = 0; v < b.n; v++)
        b.rem_ms[g->rank[v]] += g->duration_ms[v];
    double scale = pb->lower_bound_ms > 1.0 ? pb->lower_bound_ms : 1.0;
    b.tol = 1e-9 * scale;
    b.exact = 1;
    b.deadline_ms = host->now_ms() + timeout_ms;
    /* the root bound with the twins' tails */
    b.root_lb = pb->lower_bound_ms;
    b.best_ms = INFINITY;
    b.floor_passes = b.n; /* the root bound: memory floors to a fixed point */
    double root = bnb_bound(&b);
    b.floor_passes = 4;
    b.root_lb = root > b.root_lb ? root : b.root_lb;
    res->lower_bound_ms = b.root_lb;
    if (!(b.root_lb < INFINITY)) { /* some stage can never fit the cap */
        res->proven = 1;
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
    if (incumbent_ms >= 0.0 && b.best_ms <= b.root_lb + b.tol) {
        res->proven = 1; /* the incumbent meets the bound */
        res->lower_bound_ms = b.best_ms;
        bnb_free(&b);
        return LOOM_OK;
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
    bnb_free(&b);
    return LOOM_OK;
}
