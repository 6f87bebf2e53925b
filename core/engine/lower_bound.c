/* lower_bound.c - the makespan lower bound every plan is checked against:
 * no order runs faster than its busiest rank's work or its longest chain
 * of dependent stages (durations plus transfer times). A filled stage
 * ends no earlier than its inputs plus its own duration, so the chain
 * holds with fills too; a rank with fills does its compute and its
 * exposed communication each one at a time. */
#include <math.h>
#include <stdlib.h>
#include "engine_api.h"

/* 1 when rank r's order in sched runs a fill. */
static int rank_fills(const loom_schedule *sched, int32_t r)
{
    const int32_t *fill = loom_schedule_fills(sched);
    if (!fill)
        return 0;
    for (int32_t i = sched->rank_off[r]; i < sched->rank_off[r + 1]; i++)
        if (fill[sched->order[i]] > 0)
            return 1;
    return 0;
}

/* Writes a topological order of g's stages into order and returns its
 * length (short of n_stages when stages lie on a cycle): the ids
 * themselves when every predecessor has a lower id, as the graph
 * builders number stages, else Kahn's order over successor rows built
 * in succ_off / succ (indeg: n_stages zeroed counters). */
static int32_t topo_order(const loom_stage_graph *g, int32_t *order, int32_t *indeg,
                          int32_t *succ_off, int32_t *succ)
{
    int32_t n = g->n_stages;
    int ids_in_order = 1;
    for (int32_t v = 0; v < n && ids_in_order; v++)
        for (int32_t k = g->pred_off[v]; k < g->pred_off[v + 1]; k++)
            ids_in_order &= g->pred[k] < v;
    if (ids_in_order) {
        for (int32_t v = 0; v < n; v++)
            order[v] = v;
        return n;
    }
    for (int32_t v = 0; v < n; v++)
        for (int32_t k = g->pred_off[v]; k < g->pred_off[v + 1]; k++)
            succ_off[g->pred[k] + 1]++;
    for (int32_t v = 0; v < n; v++)
        succ_off[v + 1] += succ_off[v];
    for (int32_t v = 0; v < n; v++) /* indeg counts each row's fill first */
        for (int32_t k = g->pred_off[v]; k < g->pred_off[v + 1]; k++)
            succ[succ_off[g->pred[k]] + indeg[g->pred[k]]++] = v;
    for (int32_t v = 0; v < n; v++)
        indeg[v] = g->pred_off[v + 1] - g->pred_off[v];
    int32_t head = 0, tail = 0;
    for (int32_t v = 0; v < n; v++)
        if (indeg[v] == 0)
            order[tail++] = v;
    while (head < tail) {
        int32_t v = order[head++];
        for (int32_t k = succ_off[v]; k < succ_off[v + 1]; k++)
            if (--indeg[succ[k]] == 0)
                order[tail++] = succ[k];
    }
    return tail;
}

double loom_graph_lower_bound_ms(const loom_stage_graph *g, const loom_schedule *sched)
{
    int32_t n = g->n_stages;
    double lb = 0;
    double *work = calloc((size_t)g->n_ranks + 1, sizeof *work);
    double *link = calloc((size_t)g->n_ranks + 1, sizeof *link);
    double *finish = calloc((size_t)n + 1, sizeof *finish);
    int32_t *indeg = calloc((size_t)n + 1, sizeof *indeg);
    int32_t *succ_off = calloc((size_t)n + 2, sizeof *succ_off);
    int32_t *succ = calloc((size_t)g->n_edges + 1, sizeof *succ);
    int32_t *queue = calloc((size_t)n + 1, sizeof *queue);
    if (!work || !link || !finish || !indeg || !succ_off || !succ || !queue) {
        lb = -1;
        goto done;
    }
    for (int32_t v = 0; v < n; v++)
        if (g->rank[v] >= 0 && g->rank[v] < g->n_ranks) {
            work[g->rank[v]] += g->duration_ms[v];
            link[g->rank[v]] += loom_stage_comm_ms(g, v);
        }
    for (int32_t r = 0; r < g->n_ranks; r++) {
        double w = work[r];
        if (rank_fills(sched, r)) /* compute and link time, each serial */
            w = w - link[r] > link[r] ? w - link[r] : link[r];
        lb = w > lb ? w : lb;
    }
    /* longest path over a topological order: each stage starts after
     * its predecessors' ends plus their transfers */
    int32_t placed = topo_order(g, queue, indeg, succ_off, succ);
    for (int32_t i = 0; i < placed; i++) {
        int32_t v = queue[i];
        double start = 0;
        for (int32_t k = g->pred_off[v]; k < g->pred_off[v + 1]; k++) {
            double t = finish[g->pred[k]] + g->pred_p2p_ms[k];
            start = t > start ? t : start;
        }
        finish[v] = start + g->duration_ms[v];
        lb = finish[v] > lb ? finish[v] : lb;
    }
done:
    free(work);
    free(link);
    free(finish);
    free(indeg);
    free(succ_off);
    free(succ);
    free(queue);
    return lb;
}
