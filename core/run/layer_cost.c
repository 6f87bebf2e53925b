/* layer_cost.c - one layer priced by a session's cost model, outside any
 * plan: what `loom calibrate` compares with measured layer times. */
#include "pipeline.h"
#include "services.h"
#include <loom/sys/session.h>
#include "run_priv.h"

int loom_session_layer_cost(loom_session *s, int32_t module, int32_t layer,
                            const loom_shape *shape, int32_t policy, loom_layer_cost *out,
                            loom_error *err)
{
    if (!s || !s->pl || s->pl->cost_model < 0 || !shape || !out)
        return loom_set_error(err, LOOM_EINVAL,
                              "layer cost: expected an open session with a cost model");
    if (s->problem.kind != LOOM_PROBLEM_MODEL || module < 0 ||
        module >= s->problem.model->n_modules || layer < 0 ||
        layer >= s->problem.model->modules[module].n_layers)
        return loom_set_error(err, LOOM_EINVAL,
                              "layer cost: module %d layer %d is not a layer of the model",
                              module, layer);
    s->pl->problem = &s->problem;
    loom_layer_cost_init(out);
    return loom_cost_estimate(&s->pl->steps[s->pl->cost_model].ctx, module, layer, shape, policy,
                              out, err);
}
