/*
 * ilp_analyse.c - what the exact interleaver knows about a stage graph
 * before solving: successors, a topological order, which stages depend on
 * which, earliest starts, tails (longest remaining path) and a lower
 * bound on the makespan.
 */
#include <string.h>
#include "ilp.h"

/* Releases everything loom_ilpi_analyse allocated. */
void loom_ilpi_free(const loom_host_api *host, loom_ilpi_problem *pb)
{
    host->free(pb->topo);
    host->free(pb->succ_off);
    host->free(pb->succ);
    host->free(pb->succ_p2p);
    host->free(pb->est_ms);
    host->free(pb->tail_ms);
    host->free(pb->reach);
    host->free(pb->rank_off);
    host->free(pb->rank_stages);
    host->free(pb->work);
    host->free(pb->cursor);
    host->free(pb->iwork);
    memset(pb, 0, sizeof *pb);
}

/* Allocates the arrays for n stages, e edges and P ranks. */
static int ilpi_alloc(const loom_host_api *host, loom_ilpi_problem *pb,
                      int32_t n, int32_t e, int32_t P)
{
    size_t sn = (size_t)n + 1, se = (size_t)e + 1;
    pb->topo = host->alloc(sn * sizeof *pb->topo);
    pb->succ_off = host->alloc((sn + 1) * sizeof *pb->succ_off);
    pb->succ = host->alloc(se * sizeof *pb->succ);
    pb->succ_p2p = host->alloc(se * sizeof *pb->succ_p2p);
    pb->est_ms = host->alloc(sn * sizeof *pb->est_ms);
    pb->tail_ms = host->alloc(sn * sizeof *pb->tail_ms);
    pb->reach = host->alloc(sn * sn);
    pb->rank_off = host->alloc(((size_t)P + 2) * sizeof *pb->rank_off);
    pb->rank_stages = host->alloc(sn * sizeof *pb->rank_stages);
    pb->work = host->alloc((3 * sn + 3 * ((size_t)P + 1)) * sizeof *pb->work);
    pb->cursor = host->alloc(((size_t)P + 1) * sizeof *pb->cursor);
    pb->iwork = host->alloc(2 * sn * sizeof *pb->iwork);
    if (!pb->iwork || !pb->topo || !pb->succ_off || !pb->succ || !pb->succ_p2p ||
        !pb->est_ms || !pb->tail_ms || !pb->reach || !pb->rank_off ||
        !pb->rank_stages || !pb->work || !pb->cursor)
        return LOOM_ENOMEM;
    return LOOM_OK;
}

/* Successor rows from the predecessor rows, and a topological order by
 * Kahn's algorithm (indeg: n in-degree counters). Returns 0 on a cycle. */
static int ilpi_order(loom_ilpi_problem *pb, int32_t *indeg)
{
    const loom_stage_graph *g = pb->g;
    int32_t n = pb->n;
    for (int32_t v = 0; v <= n; v++)
        pb->succ_off[v] = 0;
    for (int32_t v = 0; v < n; v++)
        for (int32_t k = g->pred_off[v]; k < g->pred_off[v + 1]; k++)
            pb->succ_off[g->pred[k] + 1]++;
    for (int32_t v = 0; v < n; v++)
        pb->succ_off[v + 1] += pb->succ_off[v];
    for (int32_t v = 0; v < n; v++)
        indeg[v] = g->pred_off[v + 1] - g->pred_off[v];
    /* fill the successor rows with a cursor per stage (rank_stages is
     * free until ilpi_rank_lists fills it) */
    int32_t *cursor = pb->rank_stages;
    for (int32_t v = 0; v < n; v++)
        cursor[v] = pb->succ_off[v];
    for (int32_t v = 0; v < n; v++)
        for (int32_t k = g->pred_off[v]; k < g->pred_off[v + 1]; k++) {
            int32_t u = g->pred[k];
            pb->succ[cursor[u]] = v;
            pb->succ_p2p[cursor[u]++] = g->pred_p2p_ms[k];
        }
    int32_t head = 0, tail = 0;
    for (int32_t v = 0; v < n; v++)
        if (indeg[v] == 0)
            pb->topo[tail++] = v;
    while (head < tail) {
        int32_t u = pb->topo[head++];
        for (int32_t k = pb->succ_off[u]; k < pb->succ_off[u + 1]; k++)
            if (--indeg[pb->succ[k]] == 0)
                pb->topo[tail++] = pb->succ[k];
    }
    return tail == n;
}

/* Earliest starts (forward pass), tails (backward pass) and the
 * reachability matrix (rows ORed along the topological order). */
static void ilpi_paths(loom_ilpi_problem *pb)
{
    const loom_stage_graph *g = pb->g;
    int32_t n = pb->n;
    memset(pb->reach, 0, (size_t)n * (size_t)n);
    for (int32_t i = 0; i < n; i++) {
        int32_t v = pb->topo[i];
        double est = 0.0;
        for (int32_t k = g->pred_off[v]; k < g->pred_off[v + 1]; k++) {
            int32_t u = g->pred[k];
            double t = pb->est_ms[u] + g->duration_ms[u] + g->pred_p2p_ms[k];
            if (t > est)
                est = t;
        }
        pb->est_ms[v] = est;
    }
    /* reach[u][v]: v depends on u. Walk stages in reverse topological
     * order: u reaches its successors and everything they reach. */
    for (int32_t i = n - 1; i >= 0; i--) {
        int32_t u = pb->topo[i];
        uint8_t *row = &pb->reach[(size_t)u * (size_t)n];
        double tail = g->duration_ms[u];
        for (int32_t k = pb->succ_off[u]; k < pb->succ_off[u + 1]; k++) {
            int32_t v = pb->succ[k];
            const uint8_t *vrow = &pb->reach[(size_t)v * (size_t)n];
            row[v] = 1;
            for (int32_t x = 0; x < n; x++)
                row[x] |= vrow[x];
            double t = g->duration_ms[u] + pb->succ_p2p[k] + pb->tail_ms[v];
            if (t > tail)
                tail = t;
        }
        pb->tail_ms[u] = tail;
    }
}

/* Stages per rank and the makespan lower bound (see header). */
static void ilpi_bound(loom_ilpi_problem *pb)
{
    const loom_stage_graph *g = pb->g;
    int32_t P = pb->n_ranks;
    for (int32_t r = 0; r <= P; r++)
        pb->rank_off[r] = 0;
    for (int32_t v = 0; v < pb->n; v++)
        pb->rank_off[g->rank[v] + 1]++;
    for (int32_t r = 0; r < P; r++)
        pb->rank_off[r + 1] += pb->rank_off[r];
    double lb = 0.0;
    for (int32_t v = 0; v < pb->n; v++)
        if (pb->est_ms[v] + pb->tail_ms[v] > lb)
            lb = pb->est_ms[v] + pb->tail_ms[v];
    for (int32_t r = 0; r < P; r++) {
        double first = -1.0, load = 0.0, after = -1.0;
        for (int32_t v = 0; v < pb->n; v++) {
            if (g->rank[v] != r)
                continue;
            double rest = pb->tail_ms[v] - g->duration_ms[v];
            if (first < 0.0 || pb->est_ms[v] < first)
                first = pb->est_ms[v];
            if (after < 0.0 || rest < after)
                after = rest;
            load += g->duration_ms[v];
        }
        if (first >= 0.0 && first + load + after > lb)
            lb = first + load + after;
    }
    pb->lower_bound_ms = lb;
}

/* Fills rank_stages (stage ids by rank, ascending). */
static void ilpi_rank_lists(loom_ilpi_problem *pb)
{
    const loom_stage_graph *g = pb->g;
    int32_t k = 0;
    for (int32_t r = 0; r < pb->n_ranks; r++)
        for (int32_t v = 0; v < pb->n; v++)
            if (g->rank[v] == r)
                pb->rank_stages[k++] = v;
}

/* Analyses the graph (see header). */
int loom_ilpi_analyse(const loom_host_api *host, loom_ilpi_problem *pb,
                      const loom_stage_graph *g, loom_error *err)
{
    memset(pb, 0, sizeof *pb);
    pb->g = g;
    pb->n = g->n_stages;
    pb->n_ranks = g->n_ranks;
    int32_t *indeg = host->alloc(((size_t)g->n_stages + 1) * sizeof *indeg);
    if (!indeg || ilpi_alloc(host, pb, g->n_stages, g->pred_off[g->n_stages],
                             g->n_ranks) != LOOM_OK) {
        host->free(indeg);
        loom_ilpi_free(host, pb);
        return host->error(err, LOOM_ENOMEM, "ilp: out of memory");
    }
    for (int32_t v = 0; v < g->n_stages; v++)
        if (g->rank[v] < 0 || g->rank[v] >= g->n_ranks) {
            host->free(indeg);
            return host->error(err, LOOM_EINVAL,
                               "ilp: stage %d is on rank %d of %d", v,
                               g->rank[v], g->n_ranks);
        }
    int ok = ilpi_order(pb, indeg);
    host->free(indeg);
    if (!ok)
        return host->error(err, LOOM_EINVAL,
                           "ilp: the stage dependencies contain a cycle");
    ilpi_paths(pb);
    ilpi_bound(pb);
    ilpi_rank_lists(pb);
    return LOOM_OK;
}
