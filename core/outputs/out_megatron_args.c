/* out_megatron_args.c - the plan as Megatron-LM's command-line arguments
 * (megatron.args). Not written yet: every plan is refused. */
#include "output.h"

int loom_out_megatron_args_fits(const loom_plan *plan, int *fits,
                                char reason[LOOM_OUT_REASON_MAX], loom_error *err)
{
    (void)plan;
    (void)err;
    *fits = 0;
    snprintf(reason, LOOM_OUT_REASON_MAX, "megatron.args is not written by this build");
    return LOOM_OK;
}

int loom_write_megatron_args(const loom_plan *plan, FILE *out, loom_error *err)
{
    (void)plan;
    (void)out;
    return loom_set_error(err, LOOM_EINVAL, "megatron.args: not written by this build");
}
