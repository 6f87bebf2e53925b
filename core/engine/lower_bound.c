/* lower_bound.c - the makespan lower bound every plan is checked against:
 * no order runs faster than its busiest rank's work or its longest chain
 * of dependent stages (durations plus transfer times). */
#include <math.h>
#include <stdlib.h>
#include "engine_api.h"

double loom_graph_lower_bound_ms(const loom_stage_graph *g)
{
    int32_t n = g->n_stages;
    double lb = 0;
    double *work = calloc((size_t)g->n_ranks + 1, sizeof *work);
    double *finish = calloc((size_t)n + 1, sizeof *finish);
    int32_t *indeg = calloc((size_t)n + 1, sizeof *indeg);
    int32_t *succ_off = calloc((size_t)n + 2, sizeof *succ_off);
    int32_t *succ = calloc((size_t)g->n_edges + 1, sizeof *succ);
    int32_t *queue = calloc((size_t)n + 1, sizeof *queue);
    if (!work || !finish || !indeg || !succ_off || !succ || !queue) {
        lb = -1;
        goto done;
    }
    for (int32_t v = 0; v < n; v++)
        if (g->rank[v] >= 0 && g->rank[v] < g->n_ranks)
            work[g->rank[v]] += g->duration_ms[v];
    for (int32_t r = 0; r < g->n_ranks; r++)
        lb = work[r] > lb ? work[r] : lb;
    /* longest path by Kahn's order over the predecessor rows */
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
            queue[tail++] = v;
    while (head < tail) {
        int32_t v = queue[head++];
        double start = 0;
        for (int32_t k = g->pred_off[v]; k < g->pred_off[v + 1]; k++) {
            double t = finish[g->pred[k]] + g->pred_p2p_ms[k];
            start = t > start ? t : start;
        }
        finish[v] = start + g->duration_ms[v];
        lb = finish[v] > lb ? finish[v] : lb;
        for (int32_t k = succ_off[v]; k < succ_off[v + 1]; k++)
            if (--indeg[succ[k]] == 0)
                queue[tail++] = succ[k];
    }
done:
    free(work);
    free(finish);
    free(indeg);
    free(succ_off);
    free(succ);
    free(queue);
    return lb;
}
