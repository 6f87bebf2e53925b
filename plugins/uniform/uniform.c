/*
 * uniform.c - the Megatron-LM layer split as a partitioner.
 *
 * One mixed flow of S = pp * vpp positions; position s runs on rank s % pp
 * (chunk s / pp). All modules' layers, concatenated in module order, are cut
 * into S contiguous runs of equal length, the first L % S runs taking one
 * extra layer. A run may cross a module boundary and then holds two (or
 * more) spans. Samples go to parallel.microbatches microbatches: the
 * workload's packing when given, an even contiguous split otherwise.
 */
#include <stdio.h>
#include <string.h>
#include <loom/loom.h>

typedef struct uniform_self {
    const loom_host_api *host;
    loom_ctx *ctx;
} uniform_self;

/* Creates an instance holding the host table and the step context. */
static int uniform_create(const loom_host_api *host, loom_ctx *ctx,
                          void *plugin_state, void **self, loom_error *err)
{
    (void)plugin_state;
    uniform_self *u = host->alloc(sizeof *u);
    if (!u)
        return host->error(err, LOOM_ENOMEM, "uniform: out of memory");
    u->host = host;
    u->ctx = ctx;
    *self = u;
    return LOOM_OK;
}

/* Releases an instance from uniform_create. */
static void uniform_destroy(void *self)
{
    uniform_self *u = self;
    if (u)
        u->host->free(u);
}

/* Fills the flow, positions and spans of `part` from per-position layer
 * counts `sizes` (n_pos entries summing to the model's layer count). */
static int uniform_layout(const loom_host_api *host, const loom_model *model,
                          int32_t pp, int32_t n_pos, const int32_t *sizes,
                          loom_partition *part, loom_error *err)
{
    if (part->cap_flows < 1 || part->cap_positions < n_pos)
        return host->error(err, LOOM_EINVAL,
                           "uniform: candidate has room for %d flows and %d "
                           "positions, need 1 and %d",
                           part->cap_flows, part->cap_positions, n_pos);
    int32_t module = 0, layer = 0, n_spans = 0, used_modules = 0;
    for (int32_t m = 0; m < model->n_modules; m++)
        used_modules += model->modules[m].n_layers > 0;
    for (int32_t s = 0; s < n_pos; s++) {
        loom_position *pos = &part->positions[s];
        pos->rank = s % pp;
        pos->span_off = n_spans;
        pos->n_spans = 0;
        pos->reserved = 0;
        int32_t left = sizes[s];
        while (left > 0) {
            while (module < model->n_modules &&
                   layer >= model->modules[module].n_layers) {
                module++;
                layer = 0;
            }
            if (module >= model->n_modules)
                return host->error(err, LOOM_EINVAL,
                                   "uniform: position %d asks for more layers "
                                   "than the model has", s);
            int32_t take = model->modules[module].n_layers - layer;
            if (take > left)
                take = left;
            if (n_spans >= part->cap_spans)
                return host->error(err, LOOM_EINVAL,
                                   "uniform: candidate has room for %d spans, "
                                   "position %d needs more",
                                   part->cap_spans, s);
            loom_span *sp = &part->spans[n_spans++];
            sp->module = module;
            sp->first_layer = layer;
            sp->n_layers = take;
            sp->tp = 0;
            pos->n_spans++;
            layer += take;
            left -= take;
        }
    }
    loom_flow *fl = &part->flows[0];
    memset(fl, 0, sizeof *fl);
    fl->pos_off = 0;
    fl->n_pos = n_pos;
    fl->module = -1;
    if (used_modules == 1 && n_spans > 0)
        fl->module = part->spans[0].module;
    fl->segments = n_pos / pp;
    fl->n_inputs = 0;
    part->n_flows = 1;
    part->n_positions = n_pos;
    part->n_spans = n_spans;
    part->n_ranks = pp;
    return LOOM_OK;
}

/* Assigns samples to microbatches: the workload's packing when a sample
 * names one (which must be < microbatches), else sample i goes to
 * i * microbatches / n_samples. Every module sees every sample; one
 * sub-microbatch per microbatch. */
static int uniform_data(const loom_host_api *host, const loom_model *model,
                        const loom_iteration *it, int32_t microbatches,
                        loom_partition *part, loom_error *err)
{
    if (part->cap_microbatches < microbatches)
        return host->error(err, LOOM_EINVAL,
                           "uniform: candidate has room for %d microbatches, "
                           "parallel.microbatches is %d",
                           part->cap_microbatches, microbatches);
    int32_t n = it ? it->n_samples : 0;
    if (n > 0 && !part->sample_mb)
        return host->error(err, LOOM_EINVAL,
                           "uniform: candidate has no sample map for %d "
                           "samples", n);
    for (int32_t i = 0; i < n; i++) {
        int32_t mb = it->samples[i].microbatch;
        if (mb >= microbatches)
            return host->error(err, LOOM_EINVAL,
                               "iteration %d: samples[%d].microbatch: "
                               "expected < %d (parallel.microbatches), "
                               "found %d",
                               it->index, i, microbatches, mb);
        if (mb < 0)
            mb = (int32_t)((int64_t)i * microbatches / n);
        for (int32_t m = 0; m < model->n_modules; m++)
            part->sample_mb[(size_t)m * (size_t)n + (size_t)i] = mb;
    }
    part->n_microbatches = microbatches;
    part->n_samples = n;
    part->n_modules = model->n_modules;
    if (part->subs)
        for (int32_t mb = 0; mb < microbatches; mb++)
            part->subs[mb] = 1;
    return LOOM_OK;
}

/* Appends one candidate with the uniform layer split. Declines
 * stage-times problems (they carry their own stages). */
static int uniform_partition(void *self, const loom_problem *problem,
                             const loom_iteration *iteration,
                             loom_candidates *set, loom_error *err)
{
    uniform_self *u = self;
    const loom_host_api *host = u->host;
    if (problem->kind != LOOM_PROBLEM_MODEL || !problem->model)
        return host->error(err, LOOM_DECLINED,
                           "uniform: only model problems are partitioned");
    const loom_model *model = problem->model;
    int32_t pp = problem->parallel.pp;
    int32_t vpp = problem->parallel.vpp > 0 ? problem->parallel.vpp : 1;
    int32_t mbs = problem->parallel.microbatches;
    if (pp < 1 || mbs < 1)
        return host->error(err, LOOM_EINVAL,
                           "uniform: parallel.pp and parallel.microbatches: "
                           "expected >= 1, found %d and %d", pp, mbs);
    int64_t n_layers = 0;
    for (int32_t m = 0; m < model->n_modules; m++)
        n_layers += model->modules[m].n_layers;
    int64_t n_pos = (int64_t)pp * vpp;
    if (n_layers < n_pos)
        return host->error(err, LOOM_EINVAL,
                           "uniform: the model has %lld layers, fewer than "
                           "the %lld positions (pp %d x vpp %d); every "
                           "position needs at least one layer",
                           (long long)n_layers, (long long)n_pos, pp, vpp);
    int32_t *sizes = host->alloc((size_t)n_pos * sizeof *sizes);
    if (!sizes)
        return host->error(err, LOOM_ENOMEM, "uniform: out of memory");
    for (int64_t s = 0; s < n_pos; s++)
        sizes[s] = (int32_t)(n_layers / n_pos + (s < n_layers % n_pos));
    loom_partition *part = NULL;
    int rc = set->add(set, &part, err);
    if (rc == LOOM_OK)
        rc = uniform_layout(host, model, pp, (int32_t)n_pos, sizes, part, err);
    host->free(sizes);
    if (rc == LOOM_OK)
        rc = uniform_data(host, model, iteration, mbs, part, err);
    if (rc != LOOM_OK) {
        if (part)
            set->remove(set, set->n - 1);
        return rc;
    }
    snprintf(part->label, sizeof part->label, "uniform pp=%d vpp=%d", pp, vpp);
    return LOOM_OK;
}

static const loom_partitioner_vtable uniform_vtable = {
    { sizeof(loom_partitioner_vtable), LOOM_PARTITIONER_VERSION },
    uniform_create,
    uniform_destroy,
    uniform_partition,
};

/* Returns the partitioner vtable for role "partitioner", else NULL. */
static const loom_role_header *uniform_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_PARTITIONER) == 0)
        return &uniform_vtable.header;
    return NULL;
}

static const loom_plugin_info uniform_info = {
    LOOM_PLUGIN_INFO_HEADER,
    "org.loom.uniform",
    "1.0.0",
    NULL,
    NULL,
    uniform_role,
};

LOOM_PLUGIN_DEFINE(uniform, uniform_info);
