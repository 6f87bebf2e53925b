/* out_mimo.c - the plan as megatron-core MIMO per-module parallelism
 * (mimo.json). Not written yet: every plan is refused. */
#include "output.h"

int loom_out_mimo_fits(const loom_plan *plan, int *fits,
                                char reason[LOOM_OUT_REASON_MAX], loom_error *err)
{
    (void)plan;
    (void)err;
    *fits = 0;
    snprintf(reason, LOOM_OUT_REASON_MAX, "mimo.json is not written by this build");
    return LOOM_OK;
}

int loom_write_mimo_json(const loom_plan *plan, FILE *out, loom_error *err)
{
    (void)plan;
    (void)out;
    return loom_set_error(err, LOOM_EINVAL, "mimo.json: not written by this build");
}
