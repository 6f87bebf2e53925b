/*
 * ilp_twins.c - symmetry of the exact interleaver's search: microbatches
 * whose stages are identical (durations, memory deltas, ranks, kinds,
 * edges and transfer times, in id order within the microbatch) and that
 * have no edges to other microbatches are interchangeable, and some
 * optimum runs them first-in first-out on every rank (the argument is in
 * docs/memory-and-ilp.md); each stage's twin is the same stage of the
 * previous identical microbatch. Also the order and reachability over
 * edges and twin links together, and the checks of what may run next.
 */
#include <string.h>
#include "ilp_bnb.h"

/* 1 when v's memory delta fits its rank now. */
int loom_ilpi_fits(const loom_ilpi_bnb *b, int32_t v)
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
int loom_ilpi_may_run(const loom_ilpi_bnb *b, int32_t v)
{
    return loom_ilpi_fits(b, v) && b->ban[v] != b->epoch[b->g->rank[v]];
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
void loom_ilpi_twins(loom_ilpi_bnb *b, int32_t *first)
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
void loom_ilpi_order(loom_ilpi_bnb *b, int32_t *indeg)
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

/* Combined reachability (edges and twin links): creach[u * n + v] = 1
 * when v runs after u in every order the search considers. */
void loom_ilpi_creach(loom_ilpi_bnb *b)
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
