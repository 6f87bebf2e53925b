/* out_torchtitan.c - the plan as a torchtitan 0.2.2 job config
 * (torchtitan.toml). Not written yet: every plan is refused. */
#include "output.h"

int loom_out_torchtitan_fits(const loom_plan *plan, int *fits,
                                char reason[LOOM_OUT_REASON_MAX], loom_error *err)
{
    (void)plan;
    (void)err;
    *fits = 0;
    snprintf(reason, LOOM_OUT_REASON_MAX, "torchtitan.toml is not written by this build");
    return LOOM_OK;
}

int loom_write_torchtitan_toml(const loom_plan *plan, FILE *out, loom_error *err)
{
    (void)plan;
    (void)out;
    return loom_set_error(err, LOOM_EINVAL, "torchtitan.toml: not written by this build");
}
