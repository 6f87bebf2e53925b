/* layout_floor.c - what a layout costs at least, priced by the session's
 * cost model before anything is partitioned or simulated: the compute of
 * every layer over the iteration's microbatches, the forward of the
 * smallest microbatch, and the static bytes (weights, gradients, optimizer
 * states). `loom tune` prunes layouts with it (docs/tune.md). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "pipeline.h"
#include "services.h"
#include "shape.h"
#include <loom/sys/problem.h>
#include <loom/sys/session.h>

void loom_layout_floor_clear(loom_layout_floor *f)
{
    if (!f)
        return;
    free(f->layer_work_ms);
    free(f->layer_head_ms);
    memset(f, 0, sizeof *f);
}

/* The mean and the component-wise smallest shape of the module's
 * microbatches in iteration `it`; 0 when no microbatch has tokens. */
static int mean_and_min(const loom_problem *pb, int32_t module, const loom_iteration *it,
                        int32_t M, loom_shape *mean, loom_shape *least)
{
    loom_shape_sums *sums = calloc((size_t)M, sizeof *sums);
    if (!sums)
        return -1;
    loom_shape_sums_for(pb, module, it, NULL, M, sums);
    loom_shape_sums tot = {0, 0, 0}, lo = sums[0];
    for (int32_t m = 0; m < M; m++) {
        tot.tokens += sums[m].tokens;
        tot.seq_sq += sums[m].seq_sq;
        tot.seqs += sums[m].seqs;
        lo.tokens = fmin(lo.tokens, sums[m].tokens);
        lo.seq_sq = fmin(lo.seq_sq, sums[m].seq_sq);
        lo.seqs = fmin(lo.seqs, sums[m].seqs);
    }
    free(sums);
    /* the mean, rounded down so that it never exceeds the true mean */
    tot.tokens = floor(tot.tokens / M);
    tot.seq_sq /= M;
    tot.seqs = floor(tot.seqs / M);
    loom_shape_from_sums(pb, &tot, 1, mean);
    loom_shape_from_sums(pb, &lo, 1, least);
    return 0;
}

/* Compute time of one layer's forward and backward under policy none,
 * without the exposed TP communication another stage may fill. */
static int compute_ms(loom_session *s, int32_t module, int32_t layer, const loom_shape *shape,
                      double *fwd, double *bwd, double *flops, loom_error *err)
{
    loom_layer_cost c;
    *fwd = *bwd = *flops = 0;
    if (shape->tokens <= 0)
        return LOOM_OK;
    int rc = loom_session_layer_cost(s, module, layer, shape, LOOM_POLICY_NONE, &c, err);
    if (rc != LOOM_OK)
        return rc;
    double fc = 0, bc = 0;
    if (LOOM_LAYER_COST_HAS(&c, input_grad_comm_ms)) {
        fc = c.forward_comm_ms;
        bc = c.input_grad_comm_ms;
    }
    *fwd = fmax(0, c.forward_ms - fc);
    *bwd = fmax(0, c.input_grad_ms + c.weight_grad_ms - bc);
    *flops = c.flops;
    return LOOM_OK;
}

/* Weights and states of one layer (policy none, any tokens). */
static int static_of(loom_session *s, int32_t module, int32_t layer, loom_layout_floor *f,
                     loom_error *err)
{
    loom_shape shape = LOOM_SHAPE_INIT;
    shape.tokens = 1;
    shape.seq_sq_sum = 1;
    shape.sequences = 1;
    shape.tp = s->problem.parallel.tp > 0 ? s->problem.parallel.tp : 1;
    shape.trainable_upstream = 1;
    loom_layer_cost c;
    int rc = loom_session_layer_cost(s, module, layer, &shape, LOOM_POLICY_NONE, &c, err);
    if (rc != LOOM_OK)
        return rc;
    f->param_bytes += (double)c.param_bytes;
    f->state_bytes += (double)c.state_bytes;
    return LOOM_OK;
}

/* Prices every layer of module `m` into f, appending to its layer arrays. */
static int floor_module(loom_session *s, const loom_iteration *it, int32_t m,
                        loom_layout_floor *f, loom_error *err)
{
    const loom_problem *pb = &s->problem;
    const loom_module *mod = &pb->model->modules[m];
    int32_t M = pb->parallel.microbatches;
    loom_shape mean, least;
    if (mean_and_min(pb, m, it, M, &mean, &least) != 0)
        return loom_set_error(err, LOOM_ENOMEM, "layout floor: out of memory");
    int up = loom_module_upstream_trainable(pb->model, m);
    for (int32_t l = 0; l < mod->n_layers; l++) {
        int rc = static_of(s, m, l, f, err);
        if (rc != LOOM_OK)
            return rc;
        mean.trainable_upstream = least.trainable_upstream =
            loom_layer_trainable_upstream_from(up, mod, l);
        int needs_backward = mean.trainable_upstream || !mod->frozen;
        double mf, mb, mfl, lf, lb, lfl;
        if ((rc = compute_ms(s, m, l, &mean, &mf, &mb, &mfl, err)) != LOOM_OK ||
            (rc = compute_ms(s, m, l, &least, &lf, &lb, &lfl, err)) != LOOM_OK)
            return rc;
        if (!needs_backward)
            mb = lb = 0;
        double work = M * (mf + mb);
        f->layer_work_ms[f->n_layers] = work;
        f->layer_head_ms[f->n_layers] = lf;
        f->n_layers++;
        f->work_ms += work;
        f->chain_ms += lf + lb;
        f->flops += M * mfl;
    }
    if (mod->vocab > 0) {
        int64_t pbytes = 0, sbytes = 0;
        int rc = loom_cost_module_extra(&s->pl->steps[s->pl->cost_model].ctx, m,
                                        pb->parallel.tp > 0 ? pb->parallel.tp : 1, &pbytes,
                                        &sbytes, err);
        if (rc != LOOM_OK)
            return rc;
        f->param_bytes += (double)pbytes;
        f->state_bytes += (double)sbytes;
    }
    return LOOM_OK;
}

int loom_session_floor(loom_session *s, int32_t k, loom_layout_floor *f, loom_error *err)
{
    memset(f, 0, sizeof *f);
    if (!s || !s->pl || s->pl->cost_model < 0 || s->problem.kind != LOOM_PROBLEM_MODEL ||
        !s->workload || k < 0 || k >= s->n_iterations)
        return loom_set_error(err, LOOM_EINVAL, "layout floor: expected an open session of a "
                              "model problem with iteration %d", k);
    const loom_model *model = s->problem.model;
    int64_t layers = 0;
    for (int32_t m = 0; m < model->n_modules; m++)
        layers += model->modules[m].n_layers;
    f->layer_work_ms = calloc((size_t)layers + 1, sizeof *f->layer_work_ms);
    f->layer_head_ms = calloc((size_t)layers + 1, sizeof *f->layer_head_ms);
    if (!f->layer_work_ms || !f->layer_head_ms) {
        loom_layout_floor_clear(f);
        return loom_set_error(err, LOOM_ENOMEM, "layout floor: out of memory");
    }
    const loom_iteration *it = &s->workload->iterations[k];
    for (int32_t m = 0; m < model->n_modules; m++) {
        int rc = floor_module(s, it, m, f, err);
        if (rc != LOOM_OK) {
            loom_layout_floor_clear(f);
            return rc;
        }
    }
    return LOOM_OK;
}
