/*
 * modality_aware.c - PipeWeaver's modality-aware partitioner (section 5)
 * as a partitioner plugin.
 *
 * One flow per module (module order = the model's topological order; a
 * flow's inputs are its module's DAG inputs). Module i, with estimated
 * forward+backward time T_i for the mean microbatch, gets
 * K_i = floor(T_i / T_min) segments (capped), i.e. P*K_i positions with
 * position s on rank s % P and L_i / (P*K_i) consecutive layers each.
 * Each microbatch is split for module i into ceil(N_i,mb / B_i)
 * sub-microbatches, B_i being the smallest size within the efficiency
 * threshold of the best (ma_batching.c). Samples keep the workload's
 * packing (or an even split) for every module.
 */
#include <stdio.h>
#include <string.h>
#include "modality_aware.h"

typedef struct ma_self {
    const loom_host_api *host;
    loom_ctx *ctx;
} ma_self;

/* Per-call scratch: one entry per module unless noted. */
typedef struct ma_work {
    int32_t n_flows;
    int32_t *flow_of;   /* module -> flow, -1 without layers */
    int32_t *module_of; /* flow -> module */
    int32_t *layers;    /* per flow */
    double *t_ms;       /* per flow */
    int32_t *k;         /* per flow */
    int64_t *b;         /* per flow */
    int32_t *mb_of;     /* per sample */
    double *items;      /* flow * M + mb: items of the microbatch */
    int32_t *runs;      /* per position of one flow */
} ma_work;

/* Creates an instance holding the host table and the step context. */
static int ma_create(const loom_host_api *host, loom_ctx *ctx,
                     void *plugin_state, void **self, loom_error *err)
{
    (void)plugin_state;
    ma_self *s = host->alloc(sizeof *s);
    if (!s)
        return host->error(err, LOOM_ENOMEM, "modality-aware: out of memory");
    s->host = host;
    s->ctx = ctx;
    *self = s;
    return LOOM_OK;
}

/* Releases an instance from ma_create. */
static void ma_destroy(void *self)
{
    ma_self *s = self;
    if (s)
        s->host->free(s);
}

/* The params, declared once in ma_param_table (manifest.json says the same). */
typedef struct ma_params {
    double efficiency_threshold;
    int64_t max_segments;
    const char *sub_sizes;
    int64_t min_sub_items;
} ma_params;

static const loom_param_def ma_param_table[] = {
    LOOM_FLOAT_PARAM(ma_params, efficiency_threshold, 0.95, 0.01, 1,
                   "B_i is the smallest tested sub-microbatch size whose items per ms reach "
                   "this fraction of the best tested size's"),
    LOOM_INT_PARAM(ma_params, max_segments, 8, 1, 1024,
                   "upper bound on the segments K_i of one module (also capped by layers / "
                   "pp)"),
    LOOM_STRING_PARAM(ma_params, sub_sizes, "auto",
                   "sub-microbatch sizes to test, in the module's items (images, video/audio "
                   "seconds, text sequences): \"auto\" = powers of two below the largest "
                   "microbatch plus that microbatch's size, or a comma-separated list such as "
                   "\"4,8,12,16\""),
    LOOM_INT_PARAM(ma_params, min_sub_items, 1, 1, 1000000,
                   "smallest sub-microbatch size tested; smaller sizes are skipped"),
    LOOM_PARAM_END};

/* Reads and checks every param into cfg. */
static int ma_config(ma_self *s, loom_ma_config *cfg, loom_error *err)
{
    const loom_host_api *host = s->host;
    memset(cfg, 0, sizeof *cfg);
    ma_params prm;
    int rc = loom_params_read(host, s->ctx, "modality-aware", ma_param_table, &prm, err);
    if (rc != LOOM_OK)
        return rc;
    cfg->efficiency_threshold = prm.efficiency_threshold;
    cfg->max_segments = (int32_t)prm.max_segments;
    cfg->min_sub_items = (int32_t)prm.min_sub_items;
    const char *text = prm.sub_sizes;
    int is_auto = 0;
    int32_t n = loom_ma_parse_sizes(text, cfg->sizes, LOOM_MA_MAX_SIZES,
                                    &is_auto);
    if (n < 0 || (!is_auto && n == 0))
        return host->error(err, LOOM_EINVAL,
                           "modality-aware: params.sub_sizes: expected "
                           "\"auto\" or a comma-separated list of at most %d "
                           "positive integers, found \"%s\"",
                           LOOM_MA_MAX_SIZES, text ? text : "");
    cfg->n_sizes = n;
    return LOOM_OK;
}

/* Frees the scratch of one call. */
static void ma_work_free(const loom_host_api *host, ma_work *w)
{
    host->free(w->flow_of);
    host->free(w->module_of);
    host->free(w->layers);
    host->free(w->t_ms);
    host->free(w->k);
    host->free(w->b);
    host->free(w->mb_of);
    host->free(w->items);
    host->free(w->runs);
}

/* Allocates the scratch of one call. */
static int ma_work_alloc(const loom_host_api *host, int32_t n_modules,
                         int32_t n_samples, int32_t microbatches,
                         int32_t max_pos, ma_work *w, loom_error *err)
{
    size_t nm = (size_t)n_modules + 1;
    memset(w, 0, sizeof *w);
    w->flow_of = host->alloc(nm * sizeof *w->flow_of);
    w->module_of = host->alloc(nm * sizeof *w->module_of);
    w->layers = host->alloc(nm * sizeof *w->layers);
    w->t_ms = host->alloc(nm * sizeof *w->t_ms);
    w->k = host->alloc(nm * sizeof *w->k);
    w->b = host->alloc(nm * sizeof *w->b);
    w->mb_of = host->alloc(((size_t)n_samples + 1) * sizeof *w->mb_of);
    w->items = host->alloc(nm * (size_t)microbatches * sizeof *w->items);
    w->runs = host->alloc(((size_t)max_pos + 1) * sizeof *w->runs);
    if (!w->flow_of || !w->module_of || !w->layers || !w->t_ms || !w->k ||
        !w->b || !w->mb_of || !w->items || !w->runs) {
        ma_work_free(host, w);
        return host->error(err, LOOM_ENOMEM, "modality-aware: out of memory");
    }
    return LOOM_OK;
}

/* Microbatch of every sample: the workload's packing, else an even split. */
static int ma_assign_samples(const loom_host_api *host,
                             const loom_iteration *it, int32_t microbatches,
                             ma_work *w, loom_error *err)
{
    int32_t n = it ? it->n_samples : 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t mb = it->samples[i].microbatch;
        if (mb >= microbatches)
            return host->error(err, LOOM_EINVAL,
                               "iteration %d: samples[%d].microbatch: expected "
                               "< %d (parallel.microbatches), found %d",
                               it->index, i, microbatches, mb);
        if (mb < 0)
            mb = (int32_t)((int64_t)i * microbatches / n);
        w->mb_of[i] = mb;
    }
    return LOOM_OK;
}

/* T_i of every flow: the sum of mean_layer_ms over the module's layers. */
static int ma_times(ma_self *s, const loom_cost_service *cost,
                    const loom_model *model, const loom_iteration *it,
                    int32_t microbatches, ma_work *w, loom_error *err)
{
    for (int32_t f = 0; f < w->n_flows; f++) {
        int32_t m = w->module_of[f];
        double sum = 0.0;
        for (int32_t l = 0; l < model->modules[m].n_layers; l++) {
            double ms = 0.0;
            int rc = cost->mean_layer_ms(s->ctx, m, l, it, microbatches, &ms,
                                         err);
            if (rc != LOOM_OK)
                return rc;
            if (!(ms >= 0.0))
                return s->host->error(err, LOOM_EPLUGIN,
                                      "modality-aware: module %s layer %d: "
                                      "mean time %g ms, expected >= 0",
                                      model->modules[m].name, l, ms);
            sum += ms;
        }
        w->t_ms[f] = sum;
    }
    return LOOM_OK;
}

/* Items every flow sees per microbatch, and B_i per flow. */
static int ma_batching(ma_self *s, const loom_cost_service *cost,
                       const loom_problem *problem, const loom_iteration *it,
                       int32_t microbatches, const loom_ma_config *cfg,
                       ma_work *w, loom_error *err)
{
    const loom_model *model = problem->model;
    int32_t n = it ? it->n_samples : 0;
    for (int32_t f = 0; f < w->n_flows; f++) {
        double *items = &w->items[(size_t)f * (size_t)microbatches];
        int32_t m = w->module_of[f];
        double total = 0.0;
        for (int32_t mb = 0; mb < microbatches; mb++)
            items[mb] = 0.0;
        for (int32_t i = 0; i < n; i++) {
            double x = loom_ma_sample_items(model, m, &it->samples[i]);
            items[w->mb_of[i]] += x;
            total += x;
        }
        int64_t n_max = 0;
        for (int32_t mb = 0; mb < microbatches; mb++) {
            int64_t whole = loom_ma_whole_items(items[mb]);
            if (whole > n_max)
                n_max = whole;
        }
        int rc = loom_ma_sub_size(s->host, s->ctx, cost, problem, it,
                                  microbatches, m, cfg, n_max,
                                  total / microbatches, &w->b[f], err);
        if (rc != LOOM_OK)
            return rc;
    }
    return LOOM_OK;
}

/* Adds the flows of module m's inputs to fl (through modules without
 * layers, which have no flow of their own), without duplicates. */
static int ma_add_inputs(const loom_model *model, int32_t m,
                         const int32_t *flow_of, loom_flow *fl, int depth)
{
    const loom_module *mod = &model->modules[m];
    if (depth > model->n_modules)
        return LOOM_EINVAL;
    for (int32_t k = 0; k < mod->n_inputs; k++) {
        int32_t j = mod->inputs[k];
        if (j < 0 || j >= model->n_modules)
            return LOOM_EINVAL;
        if (flow_of[j] < 0) {
            if (ma_add_inputs(model, j, flow_of, fl, depth + 1) != LOOM_OK)
                return LOOM_EINVAL;
            continue;
        }
        int dup = 0;
        for (int32_t q = 0; q < fl->n_inputs; q++)
            dup |= fl->inputs[q] == flow_of[j];
        if (dup)
            continue;
        if (fl->n_inputs >= LOOM_MAX_FLOW_INPUTS)
            return LOOM_EINVAL;
        fl->inputs[fl->n_inputs++] = flow_of[j];
    }
    return LOOM_OK;
}

/* Writes flows, positions and spans: flow f has P*K_f positions. */
static int ma_layout(ma_self *s, const loom_model *model, int32_t pp,
                     ma_work *w, loom_partition *part, loom_error *err)
{
    const loom_host_api *host = s->host;
    int32_t n_pos = 0;
    for (int32_t f = 0; f < w->n_flows; f++)
        n_pos += pp * w->k[f];
    if (part->cap_flows < w->n_flows || part->cap_positions < n_pos ||
        part->cap_spans < n_pos)
        return host->error(err, LOOM_EINVAL,
                           "modality-aware: candidate has room for %d flows, "
                           "%d positions and %d spans, need %d, %d and %d",
                           part->cap_flows, part->cap_positions,
                           part->cap_spans, w->n_flows, n_pos, n_pos);
    int32_t pos = 0;
    for (int32_t f = 0; f < w->n_flows; f++) {
        int32_t m = w->module_of[f], np = pp * w->k[f];
        loom_flow *fl = &part->flows[f];
        memset(fl, 0, sizeof *fl);
        fl->pos_off = pos;
        fl->n_pos = np;
        fl->module = m;
        fl->segments = w->k[f];
        if (ma_add_inputs(model, m, w->flow_of, fl, 0) != LOOM_OK)
            return host->error(err, LOOM_EINVAL,
                               "modality-aware: module %s has more than %d "
                               "upstream flows or a bad input index",
                               model->modules[m].name, LOOM_MAX_FLOW_INPUTS);
        loom_ma_layer_runs(model->modules[m].n_layers, np, w->runs);
        int32_t first = 0;
        for (int32_t q = 0; q < np; q++, pos++) {
            loom_position *p = &part->positions[pos];
            p->rank = q % pp;
            p->span_off = pos;
            p->n_spans = 1;
            p->reserved = 0;
            loom_span *sp = &part->spans[pos];
            sp->module = m;
            sp->first_layer = first;
            sp->n_layers = w->runs[q];
            sp->tp = 0;
            first += w->runs[q];
        }
    }
    part->n_flows = w->n_flows;
    part->n_positions = pos;
    part->n_spans = pos;
    part->n_ranks = pp;
    part->split_backward = 0;
    return LOOM_OK;
}

/* Writes sample_mb (every module sees every sample) and the
 * sub-microbatch counts ceil(N_f,mb / B_f) (at least 1). */
static int ma_data(ma_self *s, const loom_model *model,
                   const loom_iteration *it, int32_t microbatches,
                   ma_work *w, loom_partition *part, loom_error *err)
{
    int32_t n = it ? it->n_samples : 0;
    if (part->cap_microbatches < microbatches || (n > 0 && !part->sample_mb) ||
        !part->subs)
        return s->host->error(err, LOOM_EINVAL,
                              "modality-aware: candidate has room for %d "
                              "microbatches, parallel.microbatches is %d",
                              part->cap_microbatches, microbatches);
    for (int32_t i = 0; i < n; i++)
        for (int32_t m = 0; m < model->n_modules; m++)
            part->sample_mb[(size_t)m * (size_t)n + (size_t)i] = w->mb_of[i];
    for (int32_t f = 0; f < w->n_flows; f++) {
        const double *items = &w->items[(size_t)f * (size_t)microbatches];
        for (int32_t mb = 0; mb < microbatches; mb++) {
            int64_t whole = loom_ma_whole_items(items[mb]);
            int64_t subs = (whole + w->b[f] - 1) / w->b[f];
            if (subs < 1)
                subs = 1;
            if (subs > 1000000)
                return s->host->error(err, LOOM_EINVAL,
                                      "modality-aware: module %s microbatch "
                                      "%d would split into %lld "
                                      "sub-microbatches (B = %lld)",
                                      model->modules[w->module_of[f]].name, mb,
                                      (long long)subs, (long long)w->b[f]);
            part->subs[(size_t)f * (size_t)part->cap_microbatches +
                       (size_t)mb] = (int32_t)subs;
        }
    }
    part->n_microbatches = microbatches;
    part->n_samples = n;
    part->n_modules = model->n_modules;
    return LOOM_OK;
}

/* "modality-aware K=[1,3] B=[12,1]" into the partition's label. */
static void ma_label(const ma_work *w, loom_partition *part)
{
    char buf[256];
    size_t len = (size_t)snprintf(buf, sizeof buf, "modality-aware K=[");
    for (int32_t f = 0; f < w->n_flows && len < sizeof buf; f++)
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%d",
                                f ? "," : "", w->k[f]);
    if (len < sizeof buf)
        len += (size_t)snprintf(buf + len, sizeof buf - len, "] B=[");
    for (int32_t f = 0; f < w->n_flows && len < sizeof buf; f++)
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%lld",
                                f ? "," : "", (long long)w->b[f]);
    if (len < sizeof buf)
        snprintf(buf + len, sizeof buf - len, "]");
    size_t n = strlen(buf); /* long lists are cut to the label's size */
    if (n >= sizeof part->label)
        n = sizeof part->label - 1;
    memcpy(part->label, buf, n);
    part->label[n] = '\0';
}

/* One flow per module with layers, in module order. */
static int ma_flows(ma_self *s, const loom_model *model, ma_work *w,
                    loom_error *err)
{
    w->n_flows = 0;
    for (int32_t m = 0; m < model->n_modules; m++) {
        w->flow_of[m] = -1;
        if (model->modules[m].n_layers > 0) {
            w->flow_of[m] = w->n_flows;
            w->module_of[w->n_flows] = m;
            w->layers[w->n_flows] = model->modules[m].n_layers;
            w->n_flows++;
        }
    }
    if (w->n_flows == 0)
        return s->host->error(err, LOOM_EINVAL,
                              "modality-aware: the model has no layers");
    return LOOM_OK;
}

/* K_i of every flow from its time T_i (errors name the module). */
static int ma_segments(ma_self *s, const loom_model *model, int32_t pp,
                       const loom_ma_config *cfg, ma_work *w, loom_error *err)
{
    int32_t bad = 0;
    if (loom_ma_segments(w->t_ms, w->layers, w->n_flows, pp, cfg->max_segments,
                         w->k, &bad) != LOOM_OK)
        return s->host->error(err, LOOM_EINVAL,
                              "modality-aware: module %s has %d layers, fewer "
                              "than the %d pipeline ranks; every rank needs "
                              "at least one layer of every module",
                              model->modules[w->module_of[bad]].name,
                              w->layers[bad], pp);
    return LOOM_OK;
}

/* Finds the cost service with the members this plugin calls. */
static const loom_cost_service *ma_cost(ma_self *s, loom_error *err)
{
    const loom_cost_service *cost = loom_host_cost(s->host, s->ctx);
    if (!LOOM_COST_HAS(cost, mean_layer_ms) || !cost->layer || !cost->module_shape) {
        s->host->error(err, LOOM_ENOTFOUND,
                       "modality-aware: needs the \"%s\" service with layer, "
                       "module_shape and mean_layer_ms",
                       LOOM_SERVICE_COST);
        return NULL;
    }
    return cost;
}

/* Appends one modality-aware candidate for this iteration. */
static int ma_partition(void *self, const loom_problem *problem,
                        const loom_iteration *it, loom_candidates *set,
                        loom_error *err)
{
    ma_self *s = self;
    const loom_host_api *host = s->host;
    if (problem->kind != LOOM_PROBLEM_MODEL || !problem->model)
        return host->error(err, LOOM_DECLINED,
                           "modality-aware: only model problems are "
                           "partitioned");
    const loom_model *model = problem->model;
    int32_t pp = problem->parallel.pp, mbs = problem->parallel.microbatches;
    if (pp < 1 || mbs < 1)
        return host->error(err, LOOM_EINVAL,
                           "modality-aware: parallel.pp and "
                           "parallel.microbatches: expected >= 1, found %d "
                           "and %d", pp, mbs);
    loom_ma_config cfg;
    int rc = ma_config(s, &cfg, err);
    if (rc != LOOM_OK)
        return rc;
    const loom_cost_service *cost = ma_cost(s, err);
    if (!cost)
        return LOOM_ENOTFOUND;
    int32_t max_layers = 0;
    for (int32_t m = 0; m < model->n_modules; m++)
        if (model->modules[m].n_layers > max_layers)
            max_layers = model->modules[m].n_layers;
    ma_work w;
    rc = ma_work_alloc(host, model->n_modules, it ? it->n_samples : 0, mbs,
                       max_layers, &w, err);
    if (rc != LOOM_OK)
        return rc;
    loom_partition *part = NULL;
    rc = ma_assign_samples(host, it, mbs, &w, err);
    if (rc == LOOM_OK)
        rc = ma_flows(s, model, &w, err);
    if (rc == LOOM_OK)
        rc = ma_times(s, cost, model, it, mbs, &w, err);
    if (rc == LOOM_OK)
        rc = ma_segments(s, model, pp, &cfg, &w, err);
    if (rc == LOOM_OK)
        rc = ma_batching(s, cost, problem, it, mbs, &cfg, &w, err);
    if (rc == LOOM_OK)
        rc = set->add(set, &part, err);
    if (rc == LOOM_OK)
        rc = ma_layout(s, model, pp, &w, part, err);
    if (rc == LOOM_OK)
        rc = ma_data(s, model, it, mbs, &w, part, err);
    if (rc == LOOM_OK)
        ma_label(&w, part);
    else if (part)
        set->remove(set, set->n - 1);
    ma_work_free(host, &w);
    return rc;
}

static const loom_partitioner_vtable ma_vtable = {
    { sizeof(loom_partitioner_vtable), LOOM_PARTITIONER_VERSION },
    ma_create,
    ma_destroy,
    ma_partition,
};

/* Returns the partitioner vtable for role "partitioner", else NULL. */
static const loom_role_header *ma_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_PARTITIONER) == 0)
        return &ma_vtable.header;
    return NULL;
}

static const loom_plugin_info ma_info = {
    LOOM_PLUGIN_INFO_HEADER,
    "org.loom.modality-aware",
    "1.0.0",
    NULL,
    NULL,
    ma_role,
    ma_param_table,
};

LOOM_PLUGIN_DEFINE(modality_aware, ma_info);
