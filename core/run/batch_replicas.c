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

/* The replicas' mean model FLOPs over the planned replica's (`planned`,
 * its plan's graph's), the others priced under the layer split of `part`
 * (loom_engine_replica_flops, which gives the planned one its graph's
 * figure too); 1, with nothing built, when the planned replica has none
 * (a cost model that does not count them). */
static int job_scale(const loom_batch_replicas *b, struct loom_pipeline *pl,
                     const loom_problem *problem, int32_t k, const loom_partition *part,
                     double planned, double *scale, loom_error *err)
{
    *scale = 1;
    if (!(planned > 0))
        return LOOM_OK;
    int64_t n = b->off[k + 1] - b->off[k];
    loom_sample *buf = malloc((size_t)(n > 0 ? n : 1) * sizeof *buf);
    if (!buf)
        return loom_set_error(err, LOOM_ENOMEM, "out of memory");
    double sum = planned;
    int rc = LOOM_OK;
    for (int32_t r = 0; r < b->dp && rc == LOOM_OK; r++) {
        if (r == b->planned[k])
            continue;
        loom_iteration it = replica(b, k, r, buf);
        double flops = 0;
        rc = loom_engine_replica_flops(pl, problem, &it, part, &flops, err);
        sum += flops;
    }
    free(buf);
    if (rc == LOOM_OK)
        *scale = sum / b->dp / planned;
    return rc;
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
 * global batch) with the most work; `work` has dp entries of scratch. */
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
    double *work = calloc((size_t)dp, sizeof *work);
    if (b) {
        b->off = calloc((size_t)w->n_iterations + 1, sizeof *b->off);
        b->planned = calloc((size_t)w->n_iterations + 1, sizeof *b->planned);
    }
    if (!b || !kept || !rates || !work || !b->off || !b->planned) {
        loom_batch_replicas_free(b);
        free(kept);
        free(rates);
        free(work);
        return loom_set_error(err, LOOM_ENOMEM, "out of memory");
    }
    for (int32_t m = 0; m < model->n_modules; m++)
        rates[m] = module_rates(model, m);
    int64_t n = 0;
    for (int32_t k = 0; k < w->n_iterations; k++) {
        loom_iteration *it = &w->iterations[k];
        int32_t r = heaviest_replica(model, rates, it, per, dp, work);
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
    free(work);
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

int loom_batch_job_metrics(const loom_batch_replicas *b, struct loom_pipeline *pl,
                           const loom_problem *problem, int32_t k, loom_plan *plan,
                           loom_error *err)
{
    double scale = 1;
    int rc = job_scale(b, pl, problem, k, plan->partition, plan->graph->total_flops, &scale, err);
    if (rc != LOOM_OK) {
        loom_plan_clear(plan);
        return rc;
    }
    if (plan->metrics.mfu >= 0)
        plan->metrics.mfu *= scale;
    if (LOOM_METRICS_HAS(&plan->metrics, hfu) && plan->metrics.hfu >= 0)
        plan->metrics.hfu *= scale;
    return LOOM_OK;
}
