/* services.c - the services plugins reach through the host table: the
 * simulator, the pipeline's cost model, and the evaluator the engine
 * installs in each pipeline (forwarded, for the look-up by name). */
#include <stdlib.h>
#include <string.h>
#include "pipeline.h"
#include "services.h"
#include "cost_rules.h"
#include "shape.h"
#include "stage_graph.h"

static loom_sim_scratch *svc_scratch_new(void)
{
    return loom_sim_scratch_new();
}

const loom_simulator_service loom_simulator_service_v1 = {
    sizeof(loom_simulator_service), 1, svc_scratch_new, loom_sim_scratch_free, loom_sim_run,
};

/* ---- the evaluator, forwarded to ctx's pipeline ------------------------- */

static int fwd_create(loom_ctx *ctx, const loom_stage_graph *graph, loom_evaluator **out,
                      loom_error *err)
{
    const loom_evaluator_service *ev = ctx && ctx->pipeline ? ctx->pipeline->evaluator : NULL;
    if (!ev)
        return loom_set_error(err, LOOM_ENOTFOUND, "evaluator: no plan is running");
    return ev->create(ctx, graph, out, err);
}

/* The service an evaluator was created by (its first member). */
static const loom_evaluator_service *owner(const loom_evaluator *ev)
{
    return ((const loom_evaluator_head *)(const void *)ev)->service;
}

static int fwd_run(loom_evaluator *ev, const float *priorities, loom_metrics *out,
                   loom_error *err)
{
    return owner(ev)->run(ev, priorities, out, err);
}

static void fwd_destroy(loom_evaluator *ev)
{
    if (ev)
        owner(ev)->destroy(ev);
}

static void fwd_set_deadline(loom_evaluator *ev, double deadline_ms)
{
    owner(ev)->set_deadline(ev, deadline_ms);
}

static const loom_stage_graph *fwd_graph(const loom_evaluator *ev)
{
    const loom_evaluator_service *svc = ev ? owner(ev) : NULL;
    return LOOM_EVALUATOR_HAS(svc, graph) ? svc->graph(ev) : NULL;
}

static const loom_evaluator_service evaluator_forward_v1 = {
    sizeof(loom_evaluator_service), 1, fwd_create, fwd_run, fwd_destroy, fwd_set_deadline,
    fwd_graph,
};

/* ---- the partition scorer, forwarded to ctx's pipeline ------------------ */

static int fwd_partition_evaluate(loom_ctx *ctx, const loom_iteration *it,
                                  const loom_partition *part, loom_metrics *out, loom_error *err)
{
    const loom_partition_eval_service *pe =
        ctx && ctx->pipeline ? ctx->pipeline->partition_eval : NULL;
    if (!pe)
        return loom_set_error(err, LOOM_ENOTFOUND, "partition_eval: no plan is running");
    return pe->evaluate(ctx, it, part, out, err);
}

static const loom_partition_eval_service partition_eval_forward_v1 = {
    sizeof(loom_partition_eval_service), 1, fwd_partition_evaluate,
};

/* ---- the cost model ----------------------------------------------------- */

/* 1 when t is a finite time in 0..LOOM_MAX_PLUGIN_MS. */
static int good_ms(double t)
{
    return t >= 0 && t <= LOOM_MAX_PLUGIN_MS;
}

/* 1 when b is a byte count in 0..LOOM_MAX_PLUGIN_BYTES. */
static int good_bytes(int64_t b)
{
    return b >= 0 && b <= LOOM_MAX_PLUGIN_BYTES;
}

int loom_check_layer_cost(const loom_layer_cost *c, const char *plugin_id, int32_t module,
                          int32_t layer, loom_error *err)
{
    const char *bad = !good_ms(c->forward_ms)              ? "forward_ms"
                      : !good_ms(c->input_grad_ms)         ? "input_grad_ms"
                      : !good_ms(c->weight_grad_ms)        ? "weight_grad_ms"
                      : !good_ms(c->recompute_ms)          ? "recompute_ms"
                      : !(c->flops >= 0 && c->flops < 1e30) ? "flops"
                                                             : NULL;
    if (bad) {
        double v = !strcmp(bad, "forward_ms")      ? c->forward_ms
                   : !strcmp(bad, "input_grad_ms")  ? c->input_grad_ms
                   : !strcmp(bad, "weight_grad_ms") ? c->weight_grad_ms
                   : !strcmp(bad, "recompute_ms")   ? c->recompute_ms
                                                    : c->flops;
        return loom_set_error(err, LOOM_EPLUGIN,
                              "plugin %s: module %d layer %d: %s is %g, expected a finite "
                              "number in 0..%g",
                              plugin_id, module, layer, bad, v,
                              !strcmp(bad, "flops") ? 1e30 : LOOM_MAX_PLUGIN_MS);
    }
    if (LOOM_LAYER_COST_HAS(c, input_grad_comm_ms)) {
        /* exposed TP collectives: a part of the time they belong to */
        double part[2] = {c->forward_comm_ms, c->input_grad_comm_ms};
        double whole[2] = {c->forward_ms, c->input_grad_ms};
        const char *pname[2] = {"forward_comm_ms", "input_grad_comm_ms"};
        const char *wname[2] = {"forward_ms", "input_grad_ms"};
        for (int i = 0; i < 2; i++)
            if (!(part[i] >= 0 && part[i] <= whole[i] * (1 + 1e-12)))
                return loom_set_error(err, LOOM_EPLUGIN,
                                      "plugin %s: module %d layer %d: %s is %g, expected a "
                                      "number in 0..%s (%g)",
                                      plugin_id, module, layer, pname[i], part[i], wname[i],
                                      whole[i]);
    }
    if (LOOM_LAYER_COST_HAS(c, element_bytes) &&
        !(c->element_bytes == 0 || (c->element_bytes >= 1 && c->element_bytes <= 8)))
        return loom_set_error(err, LOOM_EPLUGIN,
                              "plugin %s: module %d layer %d: element_bytes is %g, expected 0 "
                              "(2, bf16) or a number in 1..8",
                              plugin_id, module, layer, c->element_bytes);
    if (LOOM_LAYER_COST_HAS(c, param_shards) && !(c->param_shards >= 0 && c->param_shards <= 1 << 20))
        return loom_set_error(err, LOOM_EPLUGIN,
                              "plugin %s: module %d layer %d: param_shards is %d, expected 0..%d "
                              "(0 or 1: not sharded)",
                              plugin_id, module, layer, (int)c->param_shards, 1 << 20);
    const char *name[4] = {"activation_bytes", "transient_bytes", "param_bytes", "state_bytes"};
    int64_t v[4] = {c->activation_bytes, c->transient_bytes, c->param_bytes, c->state_bytes};
    for (int i = 0; i < 4; i++)
        if (!good_bytes(v[i]))
            return loom_set_error(err, LOOM_EPLUGIN,
                                  "plugin %s: module %d layer %d: %s is %lld, expected 0..%lld "
                                  "(1 TiB per GPU)",
                                  plugin_id, module, layer, name[i], (long long)v[i],
                                  (long long)LOOM_MAX_PLUGIN_BYTES);
    return LOOM_OK;
}

/* The cost-model step of the pipeline `ctx` belongs to. */
static loom_step *cost_step(loom_ctx *ctx, loom_error *err)
{
    loom_pipeline *pl = ctx ? ctx->pipeline : NULL;
    if (!pl || pl->cost_model < 0) {
        loom_set_error(err, LOOM_ENOTFOUND, "the pipeline has no cost model");
        return NULL;
    }
    return &pl->steps[pl->cost_model];
}

int loom_cost_estimate(loom_ctx *ctx, int32_t module, int32_t layer,
                       const loom_shape *shape, int32_t policy,
                       loom_layer_cost *out, loom_error *err)
{
    loom_step *st = cost_step(ctx, err);
    if (!st)
        return LOOM_ENOTFOUND;
    if (policy < 0 || policy >= LOOM_POLICY_OFFLOAD)
        return loom_set_error(err, LOOM_EINVAL,
                              "cost model: expected a memory policy in [0, %d) (none, "
                              "selective, full; offload is derived from none and full "
                              "by loom_offload_option), found %d",
                              (int)LOOM_POLICY_OFFLOAD, (int)policy);
    loom_pipeline *pl = ctx->pipeline;
    int32_t last, caller = loom_service_enter(pl, pl->cost_model, &last);
    int rc = st->vt.cost_model.estimate(st->instance, pl->problem, module, layer, shape, policy,
                                        out, err);
    loom_service_leave(pl, caller, last);
    if (rc != LOOM_OK)
        return loom_plugin_fail(err, rc, st->ctx.plugin_id);
    return loom_check_layer_cost(out, st->ctx.plugin_id, module, layer, err);
}

int loom_cost_reads_layer_fields(loom_ctx *ctx)
{
    loom_pipeline *pl = ctx ? ctx->pipeline : NULL;
    if (!pl || pl->cost_model < 0)
        return 0;
    return pl->steps[pl->cost_model].vt.cost_model.layer_reads == LOOM_COST_READS_LAYER_FIELDS;
}

int loom_cost_module_extra(loom_ctx *ctx, int32_t module, int32_t tp,
                           int64_t *param_bytes, int64_t *state_bytes,
                           loom_error *err)
{
    loom_step *st = cost_step(ctx, err);
    *param_bytes = *state_bytes = 0;
    if (!st)
        return LOOM_ENOTFOUND;
    if (!st->vt.cost_model.module_extra)
        return LOOM_OK;
    int rc = st->vt.cost_model.module_extra(st->instance, ctx->pipeline->problem, module, tp,
                                            param_bytes, state_bytes, err);
    if (rc != LOOM_OK)
        return loom_plugin_fail(err, rc, st->ctx.plugin_id);
    if (*param_bytes < 0 || *param_bytes > LOOM_MAX_PLUGIN_BYTES || *state_bytes < 0 ||
        *state_bytes > LOOM_MAX_PLUGIN_BYTES)
        return loom_set_error(err, LOOM_EPLUGIN,
                              "plugin %s: module_extra for module %d returned param_bytes %lld "
                              "and state_bytes %lld, expected 0..%lld each",
                              st->ctx.plugin_id, module, (long long)*param_bytes,
                              (long long)*state_bytes, (long long)LOOM_MAX_PLUGIN_BYTES);
    return LOOM_OK;
}

int loom_cost_p2p_ms(loom_ctx *ctx, const loom_p2p_link *link, double bytes, double *ms,
                     loom_error *err)
{
    loom_step *st = cost_step(ctx, err);
    *ms = 0;
    if (!st)
        return LOOM_ENOTFOUND;
    loom_pipeline *pl = ctx->pipeline;
    const loom_problem *pb = pl->problem;
    if (!st->vt.cost_model.p2p_ms) {
        *ms = loom_p2p_link_ms(pb ? pb->cluster : NULL, link, bytes);
        return LOOM_OK;
    }
    int32_t last, caller = loom_service_enter(pl, pl->cost_model, &last);
    int rc = st->vt.cost_model.p2p_ms(st->instance, pb, link, bytes, ms, err);
    loom_service_leave(pl, caller, last);
    if (rc != LOOM_OK)
        return loom_plugin_fail(err, rc, st->ctx.plugin_id);
    if (!(*ms >= 0) || *ms > 1e300)
        return loom_set_error(err, LOOM_EPLUGIN,
                              "plugin %s: returned a negative, infinite or NaN transfer time "
                              "from rank %d to rank %d",
                              st->ctx.plugin_id, link->src_rank, link->dst_rank);
    return LOOM_OK;
}

int loom_cost_rank_tail(loom_ctx *ctx, const loom_rank_state *state, loom_rank_tail *out,
                        loom_error *err)
{
    loom_step *st = cost_step(ctx, err);
    if (!st)
        return LOOM_ENOTFOUND;
    loom_pipeline *pl = ctx->pipeline;
    const loom_problem *pb = pl->problem;
    if (!st->vt.cost_model.rank_tail_ms) {
        const loom_tail_knobs megatron = {1, 1, 0, LOOM_TAIL_GRAD_BYTES, 0, 0, 0, 0};
        loom_rank_tail_compute(pb ? pb->cluster : NULL, state, &megatron, out);
        return LOOM_OK;
    }
    int32_t last, caller = loom_service_enter(pl, pl->cost_model, &last);
    int rc = st->vt.cost_model.rank_tail_ms(st->instance, pb, state, out, err);
    loom_service_leave(pl, caller, last);
    if (rc != LOOM_OK)
        return loom_plugin_fail(err, rc, st->ctx.plugin_id);
    if (!good_ms(out->grad_sync_ms) || !good_ms(out->grad_bucket_ms) ||
        !good_ms(out->param_gather_ms) || !good_ms(out->optimizer_ms))
        return loom_set_error(err, LOOM_EPLUGIN,
                              "plugin %s: rank_tail_ms for rank %d returned grad_sync_ms %g, "
                              "grad_bucket_ms %g, param_gather_ms %g, optimizer_ms %g, expected "
                              "finite numbers in 0..%g",
                              st->ctx.plugin_id, state->rank, out->grad_sync_ms,
                              out->grad_bucket_ms, out->param_gather_ms, out->optimizer_ms,
                              LOOM_MAX_PLUGIN_MS);
    if (LOOM_STRUCT_HAS(out, loom_rank_tail, param_prefetch_ms) &&
        !good_ms(out->param_prefetch_ms))
        return loom_set_error(err, LOOM_EPLUGIN,
                              "plugin %s: rank_tail_ms for rank %d returned param_prefetch_ms "
                              "%g, expected a finite number in 0..%g",
                              st->ctx.plugin_id, state->rank, out->param_prefetch_ms,
                              LOOM_MAX_PLUGIN_MS);
    return LOOM_OK;
}

/* LOOM_EABI naming the struct, the size found and the least size the host
 * reads or fills, when a caller's struct is too small (or missing). */
static int check_size(const char *who, const char *type, const void *p, uint32_t size,
                      uint32_t min, loom_error *err)
{
    if (!p)
        return loom_set_error(err, LOOM_EINVAL, "%s: no %s given", who, type);
    if (size < min)
        return loom_set_error(err, LOOM_EABI,
                              "%s: %s struct_size is %u bytes, expected at least %u "
                              "(initialise it with its LOOM_*_INIT macro)",
                              who, type, (unsigned)size, (unsigned)min);
    return LOOM_OK;
}

/* Copies the members after struct_size within the first `bytes` bytes of
 * two size-prefixed structs of one type (bytes: the smaller struct_size of
 * the two), so each side touches only what it knows. */
static void copy_members(void *dst, const void *src, size_t bytes)
{
    if (bytes > sizeof(uint32_t))
        memcpy((char *)dst + sizeof(uint32_t), (const char *)src + sizeof(uint32_t),
               bytes - sizeof(uint32_t));
}

#define MIN_SIZE(a, b) ((size_t)(a) < (size_t)(b) ? (size_t)(a) : (size_t)(b))

static int svc_layer(loom_ctx *ctx, int32_t module, int32_t layer, const loom_shape *shape,
                     int32_t policy, loom_layer_cost *out, loom_error *err)
{
    int rc = check_size("loom.cost layer", "loom_shape", shape, shape ? shape->struct_size : 0,
                        LOOM_SHAPE_SIZE_V1, err);
    if (rc == LOOM_OK)
        rc = check_size("loom.cost layer", "loom_layer_cost", out, out ? out->struct_size : 0,
                        LOOM_LAYER_COST_SIZE_V1, err);
    if (rc != LOOM_OK)
        return rc;
    loom_shape in = LOOM_SHAPE_INIT; /* the members the caller's shape has */
    copy_members(&in, shape, MIN_SIZE(shape->struct_size, sizeof in));
    loom_layer_cost c = LOOM_LAYER_COST_INIT;
    rc = loom_cost_estimate(ctx, module, layer, &in, policy, &c, err);
    if (rc == LOOM_OK)
        copy_members(out, &c, MIN_SIZE(out->struct_size, sizeof c));
    return rc;
}

/* module_shape() into a host-side shape *out (every member). */
static int module_shape(loom_ctx *ctx, int32_t module, const loom_iteration *it,
                        int32_t microbatches, int32_t microbatch, int32_t subs,
                        loom_shape *out, loom_error *err)
{
    const loom_problem *pb = ctx && ctx->pipeline ? ctx->pipeline->problem : NULL;
    if (!pb || !pb->model || module < 0 || module >= pb->model->n_modules || !it ||
        microbatches < 1)
        return loom_set_error(err, LOOM_EINVAL, "module_shape: bad arguments");
    if (microbatch >= 0) {
        loom_shape_for(pb, module, it, NULL, microbatches, microbatch, subs, out);
        return LOOM_OK;
    }
    loom_shape sum = LOOM_SHAPE_INIT;
    /* one pass over the samples for every microbatch, not one per microbatch */
    loom_shape_sums *sums = malloc((size_t)microbatches * sizeof *sums);
    if (!sums)
        return loom_set_error(err, LOOM_ENOMEM, "module_shape: out of memory");
    loom_shape_sums_for(pb, module, it, NULL, microbatches, sums);
    for (int32_t mb = 0; mb < microbatches; mb++) {
        loom_shape s;
        loom_shape_from_sums(pb, &sums[mb], subs, &s);
        sum.tokens += s.tokens;
        sum.seq_sq_sum += s.seq_sq_sum;
        sum.sequences += s.sequences;
        sum.tp = s.tp;
    }
    free(sums);
    out->tokens = sum.tokens / microbatches;
    out->seq_sq_sum = sum.seq_sq_sum / microbatches;
    out->sequences = (sum.sequences + microbatches - 1) / microbatches;
    out->tp = sum.tp;
    out->trainable_upstream = 0;
    return LOOM_OK;
}

static int svc_module_shape(loom_ctx *ctx, int32_t module, const loom_iteration *it,
                            int32_t microbatches, int32_t microbatch, int32_t subs,
                            loom_shape *out, loom_error *err)
{
    int rc = check_size("loom.cost module_shape", "loom_shape", out,
                        out ? out->struct_size : 0, LOOM_SHAPE_SIZE_V1, err);
    if (rc != LOOM_OK)
        return rc;
    loom_shape s = LOOM_SHAPE_INIT;
    rc = module_shape(ctx, module, it, microbatches, microbatch, subs, &s, err);
    if (rc == LOOM_OK)
        copy_members(out, &s, MIN_SIZE(out->struct_size, sizeof s));
    return rc;
}

static int svc_mean_layer_ms(loom_ctx *ctx, int32_t module, int32_t layer,
                             const loom_iteration *it, int32_t microbatches, double *ms,
                             loom_error *err)
{
    loom_shape shape = LOOM_SHAPE_INIT;
    int rc = module_shape(ctx, module, it, microbatches, -1, 1, &shape, err);
    if (rc != LOOM_OK)
        return rc;
    const loom_model *model = ctx->pipeline->problem->model;
    shape.trainable_upstream = loom_layer_trainable_upstream(model, module, layer);
    *ms = 0;
    if (shape.tokens <= 0)
        return LOOM_OK;
    loom_layer_cost c = LOOM_LAYER_COST_INIT;
    rc = svc_layer(ctx, module, layer, &shape, LOOM_POLICY_NONE, &c, err);
    if (rc == LOOM_OK)
        *ms = c.forward_ms + c.input_grad_ms + c.weight_grad_ms;
    return rc;
}

/* run_module_shape(): the mean of module_shape's mean microbatch over the
 * problem's iterations (or `it` alone when it lists fewer than two). */
static int svc_run_module_shape(loom_ctx *ctx, int32_t module, const loom_iteration *it,
                                int32_t microbatches, loom_shape *out, loom_error *err)
{
    int rc = check_size("loom.cost run_module_shape", "loom_shape", out,
                        out ? out->struct_size : 0, LOOM_SHAPE_SIZE_V1, err);
    if (rc != LOOM_OK)
        return rc;
    const loom_problem *pb = ctx && ctx->pipeline ? ctx->pipeline->problem : NULL;
    int32_t n_its = 0;
    const loom_iteration *its = loom_problem_iterations(pb, &n_its);
    if (n_its < 2) { /* one iteration: its own mean is the run's */
        its = it;
        n_its = 1;
    }
    int64_t tokens = 0, sequences = 0;
    double seq_sq_sum = 0.0;
    loom_shape s = LOOM_SHAPE_INIT;
    for (int32_t i = 0; i < n_its; i++) {
        loom_shape one = LOOM_SHAPE_INIT;
        rc = module_shape(ctx, module, its ? &its[i] : NULL, microbatches, -1, 1, &one, err);
        if (rc != LOOM_OK)
            return rc;
        tokens += one.tokens;
        seq_sq_sum += one.seq_sq_sum;
        sequences += one.sequences;
        s = one; /* tp, cp and dp are the module's, whatever the data */
    }
    s.tokens = (tokens + n_its / 2) / n_its;
    s.seq_sq_sum = seq_sq_sum / n_its;
    s.sequences = (sequences + n_its - 1) / n_its;
    copy_members(out, &s, MIN_SIZE(out->struct_size, sizeof s));
    return LOOM_OK;
}

/* span_static_bytes(): the static-memory rule of core/cost for one span
 * under the problem's layouts, after checking the span is a layer range
 * of a module. */
static int svc_span_static_bytes(loom_ctx *ctx, const loom_span *span, int64_t *bytes,
                                 loom_error *err)
{
    const loom_problem *pb = ctx && ctx->pipeline ? ctx->pipeline->problem : NULL;
    if (!bytes)
        return loom_set_error(err, LOOM_EINVAL, "loom.cost span_static_bytes: no output given");
    *bytes = 0;
    if (!pb || !pb->model || !span || span->module < 0 || span->module >= pb->model->n_modules)
        return loom_set_error(err, LOOM_EINVAL,
                              "loom.cost span_static_bytes: expected a span of a module of "
                              "the problem's model");
    const loom_module *mod = &pb->model->modules[span->module];
    if (span->first_layer < 0 || span->n_layers < 1 || span->tp < 0 ||
        span->first_layer + span->n_layers > mod->n_layers)
        return loom_set_error(err, LOOM_EINVAL,
                              "loom.cost span_static_bytes: layers %d..%d of module %s: "
                              "expected a range within its %d layers",
                              span->first_layer, span->first_layer + span->n_layers - 1,
                              mod->name, mod->n_layers);
    loom_cost_source src = {ctx, loom_cost_estimate, loom_cost_module_extra, loom_cost_rank_tail};
    return loom_cost_span_static(&src, pb, NULL, span, bytes, NULL, NULL, NULL, err);
}

const loom_cost_service loom_cost_service_v1 = {
    sizeof(loom_cost_service), 1, svc_layer, svc_module_shape, svc_mean_layer_ms,
    svc_run_module_shape, svc_span_static_bytes,
};

const void *loom_service_lookup(const char *name, uint32_t min_version)
{
    if (!name)
        return NULL;
    if (!strcmp(name, LOOM_SERVICE_SIMULATOR) && min_version <= 1)
        return &loom_simulator_service_v1;
    if (!strcmp(name, LOOM_SERVICE_EVALUATOR) && min_version <= 1)
        return &evaluator_forward_v1;
    if (!strcmp(name, LOOM_SERVICE_COST) && min_version <= 1)
        return &loom_cost_service_v1;
    if (!strcmp(name, LOOM_SERVICE_PARTITION_EVAL) && min_version <= 1)
        return &partition_eval_forward_v1;
    return NULL;
}
