/*
 * entrain.c - per-sample encoder / backbone work from the cost service,
 * shared by the stratified and pairwise-deferral data plugins (see
 * <loom/kits/entrain.h>).
 */
#include <stddef.h>
#include <string.h>
#include <loom/kits/entrain.h>


/* The cost service with layer() and module_shape(), or NULL. */
const loom_cost_service *loom_ew_cost_service(const loom_host_api *host, loom_ctx *ctx)
{
    const loom_cost_service *cost = loom_host_cost(host, ctx);
    if (!LOOM_COST_HAS(cost, module_shape) || !cost->layer)
        return NULL;
    return cost;
}

/* Work of sample `s` (w_enc into enc[s], w_LLM into llm[s]) for every
 * sample of `it`. */
int loom_ew_sample_work(const loom_host_api *host, loom_ctx *ctx,
                        const loom_cost_service *cost, const loom_problem *pb,
                        const loom_iteration *it, double *enc, double *llm,
                        loom_error *err)
{
    const loom_model *model = pb->model;
    for (int32_t s = 0; s < it->n_samples; s++) {
        loom_sample one = it->samples[s];
        one.microbatch = 0;
        loom_iteration single = {it->index, 1, &one};
        enc[s] = 0;
        llm[s] = 0;
        for (int32_t m = 0; m < model->n_modules; m++) {
            const loom_module *mod = &model->modules[m];
            loom_shape shape = LOOM_SHAPE_INIT;
            int rc = cost->module_shape(ctx, m, &single, 1, 0, 1, &shape, err);
            if (rc != LOOM_OK)
                return rc;
            if (shape.tokens <= 0)
                continue;
            int up = loom_module_upstream_trainable(model, m);
            double total = 0, last = 0;
            const loom_layer *prev = NULL;
            int prev_up = -1;
            for (int32_t l = 0; l < mod->n_layers; l++) {
                const loom_layer *ly = &mod->layers[l];
                shape.trainable_upstream = loom_layer_trainable_upstream_from(up, mod, l);
                /* identical layer shapes cost the same: reuse */
                if (prev && prev_up == shape.trainable_upstream &&
                    memcmp(prev, ly, sizeof *ly) == 0) {
                    total += last;
                    continue;
                }
                loom_layer_cost c = LOOM_LAYER_COST_INIT;
                rc = cost->layer(ctx, m, l, &shape, LOOM_POLICY_NONE, &c, err);
                if (rc != LOOM_OK)
                    return rc;
                last = c.forward_ms + c.input_grad_ms + c.weight_grad_ms;
                total += last;
                prev = ly;
                prev_up = shape.trainable_upstream;
            }
            if (mod->kind == LOOM_MODULE_ENCODER)
                enc[s] += total;
            else
                llm[s] += total;
        }
    }
    (void)host;
    return LOOM_OK;
}
