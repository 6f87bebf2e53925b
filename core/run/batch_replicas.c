/* batch_replicas.c - the whole global batch behind a plan of its heaviest
 * data-parallel replica: the gradient sync waits for that replica, so the
 * plan's time is the step's, while the step's model FLOPs are every
 * replica's. */
#include <stdlib.h>
#include "engine_api.h"
#include "run_priv.h"

void loom_batch_replicas_free(loom_batch_replicas *b)
{
    if (!b)
        return;
    free(b->samples);
    free(b->off);
    free(b->planned);
    free(b);
}

/* Replica r of iteration k as an iteration of its own: its samples, their
 * sequences numbered from 0 and grouped K to a microbatch, in `buf`. */
static loom_iteration replica(const loom_batch_replicas *b, int32_t k, int32_t r,
                              loom_sample *buf)
{
    int32_t n = 0;
    for (int64_t i = b->off[k]; i < b->off[k + 1]; i++) {
        loom_sample smp = b->samples[i];
        if (smp.microbatch / b->per != r)
            continue;
        smp.microbatch = (smp.microbatch - r * b->per) / b->micro_batch_size;
        buf[n++] = smp;
    }
    return (loom_iteration){k, n, buf};
}

int loom_batch_job_scale(const loom_batch_replicas *b, struct loom_pipeline *pl,
                         const loom_problem *problem, int32_t k, const loom_partition *part,
                         double *scale, loom_error *err)
{
    *scale = 1;
    int64_t n = b->off[k + 1] - b->off[k];
    loom_sample *buf = malloc((size_t)(n > 0 ? n : 1) * sizeof *buf);
    if (!buf)
        return loom_set_error(err, LOOM_ENOMEM, "out of memory");
    double sum = 0, planned = 0;
    int rc = LOOM_OK;
    for (int32_t r = 0; r < b->dp && rc == LOOM_OK; r++) {
        loom_iteration it = replica(b, k, r, buf);
        double flops = 0;
        rc = loom_engine_replica_flops(pl, problem, &it, part, &flops, err);
        sum += flops;
        if (r == b->planned[k])
            planned = flops;
    }
    free(buf);
    if (rc == LOOM_OK && planned > 0)
        *scale = sum / b->dp / planned;
    return rc;
}
