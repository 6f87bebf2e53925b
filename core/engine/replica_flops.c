/* replica_flops.c - the model FLOPs of one data-parallel replica's samples
 * under a plan's layer split, for the replicas a plan of the global
 * batch's heaviest replica stands for. */
#include <stdlib.h>
#include "engine_api.h"
#include "pipeline.h"

int loom_engine_replica_flops(loom_pipeline *pl, const loom_problem *problem,
                              const loom_iteration *it, const loom_partition *part,
                              double *flops, loom_error *err)
{
    *flops = 0;
    int32_t n = it->n_samples, M = part->n_microbatches, modules = part->n_modules;
    loom_partition *copy = loom_partition_clone(part);
    int32_t *map = malloc((size_t)(n > 0 ? n : 1) * (size_t)(modules > 0 ? modules : 1) *
                          sizeof *map);
    if (!copy || !map) {
        loom_partition_free(copy);
        free(map);
        return loom_set_error(err, LOOM_ENOMEM, "replica FLOPs: out of memory");
    }
    for (int32_t i = 0; i < n; i++) {
        int32_t mb = it->samples[i].microbatch;
        if (mb < 0) /* unpacked: spread in order, as the layout kit does */
            mb = (int32_t)((int64_t)i * M / n);
        for (int32_t m = 0; m < modules; m++)
            map[(size_t)m * (size_t)n + (size_t)i] = mb;
    }
    free(copy->sample_mb);
    copy->sample_mb = map;
    copy->n_samples = n;
    for (size_t k = 0; k < (size_t)copy->cap_flows * (size_t)copy->cap_microbatches; k++)
        if (copy->subs[k] > 1)
            copy->subs[k] = 1;
    loom_stage_graph *g = NULL;
    pl->problem = problem;
    int rc = loom_graph_build(&pl->steps[pl->cost_model].ctx, problem, it, copy, &g, err);
    if (rc == LOOM_OK)
        *flops = g->total_flops;
    loom_graph_free(g);
    loom_partition_free(copy);
    return rc;
}
