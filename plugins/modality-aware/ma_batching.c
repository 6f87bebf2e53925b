/*
 * ma_batching.c - modality-specific sub-microbatch sizes (PipeWeaver
 * section 5, "Modality-Specific Sub-Microbatch Size"): the cost model plays
 * the profiler. For each tested size b, the module's mean-microbatch shape
 * is scaled to b items, its layers are costed (forward + backward, no
 * recomputation) and b / time is its efficiency; B is the smallest size
 * within efficiency_threshold of the best.
 */
#include <math.h>
#include <string.h>
#include "modality_aware.h"

/* Lists the sizes to test (see header). */
int32_t loom_ma_test_sizes(const loom_ma_config *cfg, int64_t n_max,
                           int64_t *out)
{
    int32_t n = 0;
    if (cfg->n_sizes > 0) {
        for (int32_t k = 0; k < cfg->n_sizes && n < LOOM_MA_MAX_SIZES; k++)
            if (cfg->sizes[k] >= cfg->min_sub_items)
                out[n++] = cfg->sizes[k];
        return n;
    }
    for (int64_t b = 1; b < n_max && n < LOOM_MA_MAX_SIZES - 1; b *= 2)
        if (b >= cfg->min_sub_items)
            out[n++] = b;
    if (n_max >= cfg->min_sub_items && n_max >= 1)
        out[n++] = n_max;
    return n;
}

/* Forward + backward milliseconds of every layer of `module` for `shape`
 * under policy NONE, summed into *ms. */
static int ma_module_ms(const loom_host_api *host, loom_ctx *ctx,
                        const loom_cost_service *cost,
                        const loom_module *mod, int32_t module,
                        const loom_shape *shape, double *ms, loom_error *err)
{
    double sum = 0.0;
    for (int32_t l = 0; l < mod->n_layers; l++) {
        loom_layer_cost c = LOOM_LAYER_COST_INIT;
        int rc = cost->layer(ctx, module, l, shape, LOOM_POLICY_NONE, &c, err);
        if (rc != LOOM_OK)
            return rc;
        double t = c.forward_ms + c.input_grad_ms + c.weight_grad_ms;
        if (!(t >= 0.0) || !isfinite(t))
            return host->error(err, LOOM_EPLUGIN,
                               "modality-aware: cost of module %s layer %d is "
                               "%g ms, expected a finite time >= 0",
                               mod->name, l, t);
        sum += t;
    }
    *ms = sum;
    return LOOM_OK;
}

/* The mean shape scaled to b items: tokens and the attention term grow
 * linearly; sequences are b for images and text, and scale with the
 * seconds for video and audio (at least one). */
static loom_shape ma_scaled_shape(const loom_shape *mean, int32_t modality,
                                  double mean_items, int64_t b)
{
    loom_shape s = *mean;
    double f = (double)b / mean_items;
    s.tokens = (int64_t)llround((double)mean->tokens * f);
    s.seq_sq_sum = mean->seq_sq_sum * f;
    if (modality == LOOM_MODALITY_IMAGE || modality == LOOM_MODALITY_TEXT) {
        s.sequences = b;
    } else {
        double q = ceil((double)mean->sequences * f - 1e-9);
        s.sequences = q < 1.0 ? 1 : (int64_t)q;
    }
    return s;
}

/* Picks B_i for one module (see header). */
int loom_ma_sub_size(const loom_host_api *host, loom_ctx *ctx,
                     const loom_cost_service *cost, const loom_problem *problem,
                     const loom_iteration *it, int32_t microbatches,
                     int32_t module, const loom_ma_config *cfg, int64_t n_max,
                     double mean_items, int64_t *b_out, loom_error *err)
{
    const loom_module *mod = &problem->model->modules[module];
    *b_out = 1;
    if (n_max < 1 || !(mean_items > 0.0))
        return LOOM_OK;
    int64_t sizes[LOOM_MA_MAX_SIZES];
    double eff[LOOM_MA_MAX_SIZES];
    int32_t n = loom_ma_test_sizes(cfg, n_max, sizes);
    if (n < 1) {
        *b_out = cfg->min_sub_items;
        return LOOM_OK;
    }
    loom_shape mean = LOOM_SHAPE_INIT;
    int rc = cost->module_shape(ctx, module, it, microbatches, -1, 1, &mean,
                                err);
    if (rc != LOOM_OK)
        return rc;
    for (int32_t k = 0; k < n; k++) {
        loom_shape s = ma_scaled_shape(&mean, mod->modality, mean_items,
                                       sizes[k]);
        double ms = 0.0;
        rc = ma_module_ms(host, ctx, cost, mod, module, &s, &ms, err);
        if (rc != LOOM_OK)
            return rc;
        eff[k] = ms > 0.0 ? (double)sizes[k] / ms : 0.0;
    }
    *b_out = loom_ma_pick_size(sizes, eff, n, cfg->efficiency_threshold);
    return LOOM_OK;
}
