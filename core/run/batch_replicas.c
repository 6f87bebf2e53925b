/* batch_replicas.c - the whole global batch behind a plan of its heaviest
 * data-parallel replica: the gradient sync waits for that replica, so the
 * plan's time is the step's, while the step's model FLOPs are every
 * replica's. */
#include <stdlib.h>
#include "engine_api.h"
#include "run_priv.h"
#include "shape.h"
#include <loom/model_flops.h>
#include <loom/tokens.h>

void loom_batch_replicas_free(loom_batch_replicas *b)
{
    if (!b)
        return;
    free(b->samples);
    free(b->off);
    free(b->planned);
    free(b->work);
    free(b);
}

/* What a sample costs one module: the model FLOPs of its layers' passes,
 * per token (the GEMMs and the LM head) and per squared sequence length
 * (the attention core). */
typedef struct module_work {
    double per_token, per_seq_sq;
} module_work;

/* Module m's rates: each layer's FLOPs over the passes it runs and the LM
 * head's, by <loom/model_flops.h>'s rules (the ones the roofline counts):
 * input gradients where something upstream trains, weight gradients
 * where the module trains. */
static module_work module_rates(const loom_model *model, int32_t m)
{
    const loom_module *mod = &model->modules[m];
    int up = loom_module_upstream_trainable(model, m);
    module_work w = {0, 0};
    for (int32_t l = 0; l < mod->n_layers; l++) {
        int input_grad = loom_layer_trainable_upstream_from(up, mod, l);
        loom_layer_flop_rates r =
            loom_layer_flop_rates_passes(&mod->layers[l], input_grad, !mod->frozen);
        w.per_token += r.gemm_per_token;
        w.per_seq_sq += r.attention_per_seq_sq;
        if (l == mod->n_layers - 1 && loom_module_has_lm_head(mod))
            w.per_token += loom_lm_head_flops_per_token((double)mod->layers[0].hidden,
                                                        (double)mod->vocab,
                                                        input_grad || !mod->frozen, !mod->frozen);
    }
    return w;
}

/* The model FLOPs of one sample's passes through every module. */
static double sample_work(const loom_model *model, const module_work *rates,
                          const loom_sample *smp)
{
    double work = 0;
    for (int32_t m = 0; m < model->n_modules; m++) {
        loom_shape_sums sum = {0, 0, 0};
        loom_shape_sums_add(model, m, smp, &sum);
        work += rates[m].per_token * sum.tokens + rates[m].per_seq_sq * sum.seq_sq;
    }
    return work;
}

/* The replica of iteration `it` (sequences r*per .. (r+1)*per - 1 of the
 * global batch) with the most work; each replica's work lands in the dp
 * entries of `work`. */
static int32_t heaviest_replica(const loom_model *model, const module_work *rates,
                                const loom_iteration *it, int32_t per, int32_t dp, double *work)
{
    double best = -1;
    int32_t r_best = 0;
    for (int32_t r = 0; r < dp; r++)
        work[r] = 0;
    for (int32_t i = 0; i < it->n_samples; i++) {
        int32_t r = it->samples[i].microbatch / per;
        if (r >= 0 && r < dp)
            work[r] += sample_work(model, rates, &it->samples[i]);
    }
    for (int32_t r = 0; r < dp; r++)
        if (work[r] > best) {
            best = work[r];
            r_best = r;
        }
    return r_best;
}

int loom_batch_keep_heaviest(loom_workload *w, const loom_model *model, int32_t per,
                             int32_t dp, int32_t K, loom_batch_replicas **batch, loom_error *err)
{
    loom_batch_replicas *b = calloc(1, sizeof *b);
    loom_sample *kept = calloc((size_t)w->n_samples + 1, sizeof *kept);
    module_work *rates = calloc((size_t)model->n_modules + 1, sizeof *rates);
    if (b) {
        b->off = calloc((size_t)w->n_iterations + 1, sizeof *b->off);
        b->planned = calloc((size_t)w->n_iterations + 1, sizeof *b->planned);
        b->work = calloc((size_t)w->n_iterations * (size_t)dp + 1, sizeof *b->work);
    }
    if (!b || !kept || !rates || !b->off || !b->planned || !b->work) {
        loom_batch_replicas_free(b);
        free(kept);
        free(rates);
        return loom_set_error(err, LOOM_ENOMEM, "out of memory");
    }
    for (int32_t m = 0; m < model->n_modules; m++)
        rates[m] = module_rates(model, m);
    int64_t n = 0;
    for (int32_t k = 0; k < w->n_iterations; k++) {
        loom_iteration *it = &w->iterations[k];
        int32_t r = heaviest_replica(model, rates, it, per, dp, &b->work[(size_t)k * (size_t)dp]);
        b->off[k] = it->samples - w->samples;
        b->off[k + 1] = b->off[k] + it->n_samples;
        b->planned[k] = r;
        int64_t first = n;
        for (int32_t i = 0; i < it->n_samples; i++)
            if (it->samples[i].microbatch / per == r) {
                kept[n] = it->samples[i];
                kept[n++].microbatch -= r * per;
            }
        it->n_samples = (int32_t)(n - first);
        it->samples = kept + first;
    }
    free(rates);
    b->samples = w->samples;
    b->n_iterations = w->n_iterations;
    b->dp = dp;
    b->per = per;
    b->micro_batch_size = K;
    *batch = b;
    w->samples = kept;
    w->n_samples = n;
    return LOOM_OK;
}

void loom_batch_job_metrics(const loom_batch_replicas *b, int32_t k, loom_plan *plan)
{
    const double *work = &b->work[(size_t)k * (size_t)b->dp];
    double planned = work[b->planned[k]], sum = 0;
    if (!(plan->graph && plan->graph->total_flops > 0) || !(planned > 0))
        return; /* a cost model that counts no FLOPs, or nothing to count */
    for (int32_t r = 0; r < b->dp; r++)
        sum += work[r];
    double scale = sum / b->dp / planned;
    if (plan->metrics.mfu >= 0)
        plan->metrics.mfu *= scale;
    if (LOOM_METRICS_HAS(&plan->metrics, hfu) && plan->metrics.hfu >= 0)
        plan->metrics.hfu *= scale;
}
