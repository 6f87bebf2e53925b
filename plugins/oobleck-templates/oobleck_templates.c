/*
 * oobleck_templates.c - Oobleck's pipeline templates (dissertation
 * §2.4.1) as a partitioner. n0 is the smallest node count whose GPU memory
 * holds the model's parameters, gradients and optimizer states, raised
 * until every template's stages fit the memory cap as the graph builder
 * and the memory tuner count them (ot_plan); one
 * template is planned for every node count n0 .. N - f*n0 by the divide
 * and conquer over layers and GPUs (core/oobleck.c, compiled into this
 * plugin: it uses only libc), memoised across templates. A template's
 * stages become pipeline positions on their own ranks, each stage's GPU
 * count its spans' TP degree.
 *
 * Templates are planned from the first iteration's mean microbatch and
 * kept for the following ones, as Oobleck fixes them for the whole run
 * ("per_iteration": true re-plans them every iteration).
 *
 * Stage times use activation checkpointing ("policy": "full", as Oobleck
 * trains) unless told otherwise; pair the step with the full-recompute
 * memory tuner so the simulator charges the same.
 *
 * Candidates, in this order (oobleck-instantiate relies on it): for every
 * template by ascending node count, the template holding the first s
 * microbatches of the iteration for s = 1..M ("shares": "all", so the
 * ranker can read each pipeline's time for any share from the simulator;
 * above OOBLECK_MAX_SHARES microbatches, s = 1..OOBLECK_MAX_SHARES and
 * then M), or only the full batch ("full").
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <loom/loom.h>
#include <loom/sample_groups.h>
#include <loom/algorithms/oobleck.h>
#include <loom/algorithms/oobleck_common.h>

/* The params, declared once in ot_param_table (manifest.json says the same). */
typedef struct ot_params {
    int64_t fault_tolerance;
    int64_t nodes;
    int64_t gpus_per_node;
    int64_t min_nodes;
    int64_t max_stages;
    int pow2_gpus;
    const char *policy;
    int per_iteration;
    const char *shares;
} ot_params;

static const loom_param_def ot_param_table[] = {
    LOOM_INT_PARAM(ot_params, fault_tolerance, 1, 0, 4096,
                   "f: simultaneous pipeline failures to survive (give oobleck-instantiate "
                   "the same value)"),
    LOOM_INT_PARAM(ot_params, nodes, 0, 0, 4096,
                   "N nodes; 0: tp*pp*dp GPUs divided by gpus_per_node"),
    LOOM_INT_PARAM(ot_params, gpus_per_node, 0, 0, 64,
                   "M GPUs per node; 0: the cluster's"),
    LOOM_INT_PARAM(ot_params, min_nodes, 0, 0, 4096,
                   "n0; 0: the smallest node count whose HBM (or memory_cap_bytes) holds the "
                   "parameters, gradients and optimizer states"),
    LOOM_INT_PARAM(ot_params, max_stages, 0, 0, 4096,
                   "largest stage count tried per template; 0: min(layers, nodes * "
                   "gpus_per_node)"),
    LOOM_BOOL_PARAM(ot_params, pow2_gpus, 1,
                   "a stage uses a power-of-two GPU count"),
    LOOM_ENUM_PARAM(ot_params, policy, "full", "full|none",
                   "memory policy of the stage times the divide and conquer balances: full "
                   "activation recomputation (Oobleck trains with checkpointing) or none"),
    LOOM_BOOL_PARAM(ot_params, per_iteration, 0,
                   "re-plan the templates for every iteration instead of keeping the first "
                   "iteration's (Oobleck fixes them for the run)"),
    LOOM_ENUM_PARAM(ot_params, shares, "all", "all|full",
                   "all: every template for 1..M microbatches (exact per-share times for the "
                   "ranker; above 128 microbatches 1..128 and M, shares between them "
                   "interpolated); full: only the whole batch (the ranker scales linearly)"),
    LOOM_PARAM_END};

typedef struct ot_self {
    const loom_host_api *host;
    loom_ctx *ctx;
    /* templates are planned once and kept for later iterations (Oobleck
     * never changes them during training) unless per_iteration is set */
    loom_oobleck_template *t;
    int32_t n_t;
    const loom_model *model;
    int32_t nodes, gpus;
    ot_params prm;
} ot_self;

/* Drops the cached templates. */
static void ot_forget(ot_self *o)
{
    for (int32_t i = 0; i < o->n_t; i++)
        loom_oobleck_template_clear(&o->t[i]);
    o->host->free(o->t);
    o->t = NULL;
    o->n_t = 0;
}

/* Creates an instance holding the host table and the step context. */
static int ot_create(const loom_host_api *host, loom_ctx *ctx,
                     void *plugin_state, void **self, loom_error *err)
{
    (void)plugin_state;
    ot_self *o = host->alloc(sizeof *o);
    if (!o)
        return host->error(err, LOOM_ENOMEM, "oobleck-templates: out of memory");
    memset(o, 0, sizeof *o);
    o->host = host;
    o->ctx = ctx;
    int prc = loom_params_read(host, ctx, "oobleck-templates", ot_param_table, &o->prm, err);
    if (prc != LOOM_OK) {
        host->free(o);
        return prc;
    }
    *self = o;
    return LOOM_OK;
}

/* Releases an instance from ot_create. */
static void ot_destroy(void *self)
{
    ot_self *o = self;
    if (o) {
        ot_forget(o);
        o->host->free(o);
    }
}

/* 1 when a module upstream of `module` is trainable. */
static int ot_upstream(const loom_model *model, int32_t module)
{
    const loom_module *mod = &model->modules[module];
    for (int32_t k = 0; k < mod->n_inputs; k++) {
        int32_t j = mod->inputs[k];
        if (!model->modules[j].frozen || ot_upstream(model, j))
            return 1;
    }
    return 0;
}

/* F_{l,d}, B_{l,d} of every layer of the chain for d = 1..M into f, b
 * ((d-1)*L + l), -1 where the cost model rejects d; *model_bytes gets the
 * parameters and states on one GPU. */
static int ot_costs(ot_self *o, const loom_cost_service *cost,
                    const loom_problem *pb, const loom_iteration *it,
                    int32_t gpus, int32_t n_layers, double *f, double *b,
                    double *model_bytes, loom_error *err)
{
    const loom_model *model = pb->model;
    int32_t policy = strcmp(o->prm.policy, "none") == 0 ? LOOM_POLICY_NONE : LOOM_POLICY_FULL;
    int32_t mbs = pb->parallel.microbatches > 0 ? pb->parallel.microbatches : 1;
    *model_bytes = 0;
    for (int32_t d = 1; d <= gpus; d++) {
        int32_t at = 0;
        for (int32_t m = 0; m < model->n_modules; m++) {
            const loom_module *mod = &model->modules[m];
            loom_shape shape = LOOM_SHAPE_INIT;
            int rc = cost->module_shape(o->ctx, m, it, mbs, -1, 1, &shape, err);
            if (rc != LOOM_OK)
                return rc;
            shape.tp = d;
            int up = ot_upstream(model, m);
            for (int32_t l = 0; l < mod->n_layers; l++, at++) {
                size_t i = (size_t)(d - 1) * (size_t)n_layers + (size_t)at;
                shape.trainable_upstream = loom_layer_trainable_upstream_from(up, mod, l);
                loom_layer_cost c = LOOM_LAYER_COST_INIT;
                loom_error e = {0, ""};
                rc = cost->layer(o->ctx, m, l, &shape, policy, &c, &e);
                if (rc != LOOM_OK) {
                    if (d == 1) {
                        *err = e;
                        return rc;
                    }
                    f[i] = b[i] = -1; /* e.g. d does not divide the heads */
                    continue;
                }
                f[i] = shape.tokens > 0 ? c.forward_ms : 0;
                b[i] = shape.tokens > 0
                           ? c.input_grad_ms + c.weight_grad_ms + c.recompute_ms
                           : 0;
                if (d == 1)
                    *model_bytes += (double)loom_layer_cost_static_bytes(&c);
            }
        }
    }
    return LOOM_OK;
}

/* Fills candidate p with template t holding the first `share` of the
 * iteration's `mbs` microbatches. */
static int ot_candidate(const loom_host_api *host, const loom_model *model,
                        const loom_iteration *it, const loom_oobleck_template *t,
                        int32_t share, int32_t mbs, loom_partition *p,
                        loom_error *err)
{
    if (p->cap_flows < 1 || p->cap_positions < t->n_stages ||
        p->cap_microbatches < share || (it->n_samples > 0 && !p->sample_mb))
        return host->error(err, LOOM_EINVAL,
                           "oobleck-templates: candidate has room for %d "
                           "positions and %d microbatches, need %d and %d",
                           p->cap_positions, p->cap_microbatches, t->n_stages,
                           share);
    int32_t m = 0, layer = 0, ns = 0;
    for (int32_t k = 0; k < t->n_stages; k++) {
        loom_position *pos = &p->positions[k];
        pos->rank = k;
        pos->span_off = ns;
        pos->n_spans = 0;
        pos->reserved = 0;
        for (int32_t left = t->stages[k].n_layers; left > 0;) {
            while (layer >= model->modules[m].n_layers) {
                m++;
                layer = 0;
            }
            int32_t take = model->modules[m].n_layers - layer;
            take = take < left ? take : left;
            if (ns >= p->cap_spans)
                return host->error(err, LOOM_EINVAL,
                                   "oobleck-templates: candidate has room for "
                                   "%d spans", p->cap_spans);
            p->spans[ns++] = (loom_span){m, layer, take, t->stages[k].gpus};
            pos->n_spans++;
            layer += take;
            left -= take;
        }
    }
    loom_flow *fl = &p->flows[0];
    memset(fl, 0, sizeof *fl);
    fl->n_pos = t->n_stages;
    fl->module = model->n_modules == 1 ? 0 : -1;
    fl->segments = 1;
    p->n_flows = 1;
    p->n_positions = t->n_stages;
    p->n_spans = ns;
    p->n_ranks = t->n_stages;
    int32_t n = it->n_samples;
    for (int32_t i = 0; i < n; i++) {
        int32_t mb = it->samples[i].microbatch;
        if (mb >= mbs)
            return host->error(err, LOOM_EINVAL,
                               "iteration %d: samples[%d].microbatch: expected "
                               "< %d (parallel.microbatches), found %d",
                               it->index, i, mbs, mb);
        if (mb < 0)
            mb = (int32_t)((int64_t)i * mbs / n);
        for (int32_t k = 0; k < model->n_modules; k++)
            p->sample_mb[(size_t)k * (size_t)n + (size_t)i] = mb < share ? mb : -1;
    }
    p->n_microbatches = share;
    p->n_samples = n;
    p->n_modules = model->n_modules;
    if (p->subs)
        for (int32_t k = 0; k < share; k++)
            p->subs[k] = 1;
    snprintf(p->label, sizeof p->label, "oobleck n=%d S=%d mb=%d/%d", t->nodes,
             t->n_stages, share, mbs);
    return LOOM_OK;
}

/* Logs a template's stages. */
static void ot_log(ot_self *o, const loom_oobleck_template *t)
{
    char line[384];
    int at = snprintf(line, sizeof line, "template %d node(s): %d stage(s)",
                      t->nodes, t->n_stages);
    for (int32_t k = 0; k < t->n_stages && at > 0 && (size_t)at < sizeof line; k++) {
        const loom_oobleck_stage *s = &t->stages[k];
        at += snprintf(line + at, sizeof line - (size_t)at, " [L%d-%d %dgpu n%d]",
                       s->first_layer, s->first_layer + s->n_layers - 1, s->gpus,
                       s->node);
    }
    o->host->log(o->ctx, LOOM_LOG_INFO, "%s, T(N_b=4S) = %.3f ms", line,
                 t->iteration_ms);
}

/* What ot_misfit asks of the cost service, memoised: per TP degree, per
 * microbatch, every layer's activation bytes at its most frugal policy
 * (the model's layers back to back, NaN until asked). Stages of every
 * template share the rows, so each (TP, microbatch, module) is priced
 * once, not once per stage. */
typedef struct ot_memo {
    int32_t n_tables, mbs, n_layers;
    int32_t *tp;      /* n_tables TP degrees */
    double **bytes;   /* n_tables rows of mbs * n_layers */
    /* the iteration's samples grouped by microbatch (mb_off: mbs + 1
     * offsets into samples), each with microbatch -1, so that a
     * microbatch's shape is one microbatch's iteration of its own samples
     * instead of a pass over every sample */
    int32_t *mb_off;
    loom_sample *samples;
} ot_memo;

/* Groups it's samples by microbatch into memo (ot_memo.mb_off,
 * loom_group_samples). */
static int ot_memo_group(const loom_host_api *host, ot_memo *memo, const loom_iteration *it,
                         loom_error *err)
{
    int32_t n = it->n_samples, mbs = memo->mbs;
    memo->mb_off = host->alloc(((size_t)mbs + 1) * sizeof *memo->mb_off);
    memo->samples = host->alloc((size_t)(n > 0 ? n : 1) * sizeof *memo->samples);
    if (!memo->mb_off || !memo->samples)
        return host->error(err, LOOM_ENOMEM, "oobleck-templates: out of memory");
    loom_group_samples(it, mbs, memo->mb_off, memo->samples);
    return LOOM_OK;
}

/* Releases the memo's tables. */
static void ot_memo_free(const loom_host_api *host, ot_memo *memo)
{
    for (int32_t k = 0; k < memo->n_tables; k++)
        host->free(memo->bytes[k]);
    host->free(memo->bytes);
    host->free(memo->tp);
    host->free(memo->mb_off);
    host->free(memo->samples);
}

/* The table of TP degree tp into *table, added when new. */
static int ot_memo_table(ot_self *o, ot_memo *memo, int32_t tp, double **table,
                         loom_error *err)
{
    const loom_host_api *host = o->host;
    for (int32_t k = 0; k < memo->n_tables; k++)
        if (memo->tp[k] == tp) {
            *table = memo->bytes[k];
            return LOOM_OK;
        }
    size_t n = (size_t)memo->mbs * (size_t)memo->n_layers, k = (size_t)memo->n_tables + 1;
    int32_t *tps = host->alloc(k * sizeof *tps);
    double **rows = host->alloc(k * sizeof *rows);
    double *row = host->alloc((n ? n : 1) * sizeof *row);
    if (!tps || !rows || !row) {
        host->free(tps);
        host->free(rows);
        host->free(row);
        return host->error(err, LOOM_ENOMEM, "oobleck-templates: out of memory");
    }
    for (size_t i = 0; i < n; i++)
        row[i] = NAN;
    for (int32_t j = 0; j < memo->n_tables; j++) {
        tps[j] = memo->tp[j];
        rows[j] = memo->bytes[j];
    }
    tps[k - 1] = tp;
    rows[k - 1] = row;
    host->free(memo->tp);
    host->free(memo->bytes);
    memo->tp = tps;
    memo->bytes = rows;
    memo->n_tables = (int32_t)k;
    *table = row;
    return LOOM_OK;
}

/* Activation bytes of every layer of module m for microbatch mb at TP
 * tp, each at its most frugal recomputation policy (what the memory
 * tuner tests a stage with), 0 for a layer that keeps nothing, into
 * out[0..n_layers of m). */
static int ot_frugal_layers(ot_self *o, const loom_cost_service *cost, const loom_problem *pb,
                            const loom_iteration *it, const ot_memo *memo, int32_t m,
                            int32_t mb, int32_t tp, double *out, loom_error *err)
{
    const loom_model *model = pb->model;
    const loom_module *mod = &model->modules[m];
    loom_shape shape = LOOM_SHAPE_INIT;
    loom_iteration own = {it->index, memo->mb_off[mb + 1] - memo->mb_off[mb],
                          memo->samples + memo->mb_off[mb]};
    int rc = cost->module_shape(o->ctx, m, &own, 1, 0, 1, &shape, err);
    if (rc != LOOM_OK)
        return rc;
    shape.tp = tp;
    int up = ot_upstream(model, m);
    for (int32_t l = 0; l < mod->n_layers; l++) {
        out[l] = 0;
        shape.trainable_upstream = loom_layer_trainable_upstream_from(up, mod, l);
        if (shape.tokens <= 0 || (!shape.trainable_upstream && mod->frozen))
            continue; /* nothing kept for a backward */
        double least = -1;
        for (int32_t p = 0; p < LOOM_POLICY_OFFLOAD; p++) {
            loom_layer_cost c = LOOM_LAYER_COST_INIT;
            rc = cost->layer(o->ctx, m, l, &shape, p, &c, err);
            if (rc != LOOM_OK)
                return rc;
            if (least < 0 || (double)c.activation_bytes < least)
                least = (double)c.activation_bytes;
        }
        out[l] = least;
    }
    return LOOM_OK;
}

/* The bytes one GPU of stage `st` needs at least, the memory tuner's own
 * test: its static bytes by the rule the graph builder charges ranks with
 * (the cost service's span_static_bytes) plus the largest microbatch's
 * activations at the most frugal recomputation policy, at the stage's GPU
 * count as TP (the activations from memo). */
static int ot_stage_bytes(ot_self *o, const loom_cost_service *cost, const loom_problem *pb,
                          const loom_iteration *it, const loom_oobleck_stage *st,
                          ot_memo *memo, double *bytes, loom_error *err)
{
    const loom_model *model = pb->model;
    int32_t m0 = 0, layer0 = st->first_layer, base0 = 0;
    while (m0 < model->n_modules && layer0 >= model->modules[m0].n_layers) {
        layer0 -= model->modules[m0].n_layers;
        base0 += model->modules[m0++].n_layers;
    }
    double *table = NULL;
    int rc = ot_memo_table(o, memo, st->gpus, &table, err);
    double stat = 0, act = 0;
    for (int32_t mb = -1; rc == LOOM_OK && mb < memo->mbs; mb++) { /* -1: the static bytes */
        double sum = 0;
        double *row = mb < 0 ? NULL : table + (size_t)mb * (size_t)memo->n_layers;
        int32_t m = m0, layer = layer0, base = base0;
        for (int32_t left = st->n_layers; rc == LOOM_OK && left > 0 && m < model->n_modules;
             base += model->modules[m++].n_layers, layer = 0) {
            int32_t take = model->modules[m].n_layers - layer;
            take = take < left ? take : left;
            if (mb < 0) {
                loom_span sp = {m, layer, take, st->gpus};
                int64_t b = 0;
                rc = cost->span_static_bytes(o->ctx, &sp, &b, err);
                stat += (double)b;
            } else {
                if (isnan(row[base]))
                    rc = ot_frugal_layers(o, cost, pb, it, memo, m, mb, st->gpus, row + base,
                                          err);
                for (int32_t l = layer; rc == LOOM_OK && l < layer + take; l++)
                    sum += row[base + l];
            }
            left -= take;
        }
        act = sum > act ? sum : act;
    }
    *bytes = stat + act;
    return rc;
}

/* The index of the first template one of whose stages needs more than
 * `cap` bytes a GPU (ot_stage_bytes), or -1 when every stage fits; its
 * need and stage in *need and *stage. */
static int ot_misfit(ot_self *o, const loom_cost_service *cost, const loom_problem *pb,
                     const loom_iteration *it, double cap, int32_t *bad, double *need,
                     int32_t *stage, loom_error *err)
{
    *bad = -1;
    ot_memo memo = {0, pb->parallel.microbatches > 0 ? pb->parallel.microbatches : 1, 0,
                    NULL, NULL, NULL, NULL};
    for (int32_t m = 0; m < pb->model->n_modules; m++)
        memo.n_layers += pb->model->modules[m].n_layers;
    int rc = ot_memo_group(o->host, &memo, it, err);
    for (int32_t i = 0; rc == LOOM_OK && *bad < 0 && i < o->n_t; i++)
        for (int32_t k = 0; rc == LOOM_OK && k < o->t[i].n_stages; k++) {
            rc = ot_stage_bytes(o, cost, pb, it, &o->t[i].stages[k], &memo, need, err);
            if (rc == LOOM_OK && *need > cap) {
                *bad = i;
                *stage = k;
                break;
            }
        }
    ot_memo_free(o->host, &memo);
    return rc;
}

/* Plans one template for every node count first..last into o->t. */
static int ot_plan_range(ot_self *o, double *f, double *b, int32_t n_layers, int32_t gpus,
                         int pow2, int64_t fault, int64_t n0, int64_t max_stages,
                         int32_t first, int32_t last, loom_error *err)
{
    const loom_host_api *host = o->host;
    o->t = host->alloc((size_t)(last - first + 1) * sizeof *o->t);
    if (!o->t)
        return host->error(err, LOOM_ENOMEM, "oobleck-templates: out of memory");
    loom_oobleck_costs costs = {n_layers, gpus, f, b};
    loom_oobleck_planner *pl = NULL;
    int rc = loom_oobleck_planner_new(&costs, gpus, pow2, &pl, err);
    for (int32_t n = first; rc == LOOM_OK && n <= last; n++) {
        rc = loom_oobleck_plan_template(pl, n, (int32_t)max_stages, &o->t[o->n_t], err);
        if (rc == LOOM_OK) {
            ot_log(o, &o->t[o->n_t]);
            o->n_t++;
        } else if (rc == LOOM_EINFEASIBLE) {
            char why[LOOM_ERROR_MSG_BYTES];
            snprintf(why, sizeof why, "%s", err->message);
            host->error(err, rc,
                        "oobleck-templates: no template for %d node(s), but "
                        "f = %lld and n0 = %lld need every node count %d..%d "
                        "(%s)", n, (long long)fault, (long long)n0, first, last,
                        why);
        }
    }
    if (rc == LOOM_OK)
        host->log(o->ctx, LOOM_LOG_INFO, "templates for %d..%d nodes, memo %lld entries", first,
                  last, (long long)loom_oobleck_memo_entries(pl));
    loom_oobleck_planner_free(pl);
    return rc;
}

/* Plans the templates for n0..N-f*n0 into o->t. With n0 from the model
 * states (min_nodes 0), a template one of whose stages cannot fit the
 * memory cap even at the most frugal policy raises n0 past its node
 * count, so no candidate asks the memory tuner for the impossible. */
static int ot_plan(ot_self *o, const loom_problem *pb, const loom_iteration *it,
                   double *f, double *b, int32_t n_layers, int32_t nodes,
                   int32_t gpus, loom_error *err)
{
    const loom_host_api *host = o->host;
    int64_t fault = o->prm.fault_tolerance, n0 = o->prm.min_nodes;
    int64_t max_stages = o->prm.max_stages;
    int pow2 = o->prm.pow2_gpus;
    double model_bytes = 0;
    const loom_cost_service *cost = loom_host_cost(host, o->ctx);
    int rc = ot_costs(o, cost, pb, it, gpus, n_layers, f, b, &model_bytes, err);
    if (rc != LOOM_OK)
        return rc;
    double cap = pb->memory_cap_bytes > 0 ? pb->memory_cap_bytes
                 : pb->cluster ? (double)pb->cluster->hbm_bytes : 0;
    int automatic = n0 <= 0 && cap > 0 && LOOM_COST_HAS(cost, span_static_bytes);
    if (n0 <= 0) {
        n0 = cap > 0 ? (int64_t)ceil(model_bytes / (cap * gpus)) : 1;
        if (n0 < 1)
            n0 = 1;
    }
    for (;;) {
        int32_t first = 0, last = 0;
        rc = loom_oobleck_node_spec(nodes, (int32_t)fault, (int32_t)n0, &first, &last, err);
        if (rc == LOOM_OK)
            rc = ot_plan_range(o, f, b, n_layers, gpus, pow2, fault, n0, max_stages, first,
                               last, err);
        int32_t bad = -1, stage = 0;
        double need = 0;
        if (rc == LOOM_OK && automatic)
            rc = ot_misfit(o, cost, pb, it, cap, &bad, &need, &stage, err);
        if (rc != LOOM_OK || bad < 0) {
            if (rc == LOOM_OK)
                host->log(o->ctx, LOOM_LOG_INFO,
                          "%d node(s) of %d GPUs, f = %lld, n0 = %lld (model states "
                          "%.1f GiB): templates for %d..%d nodes",
                          nodes, gpus, (long long)fault, (long long)n0,
                          model_bytes / 1073741824.0, first, last);
            break;
        }
        host->log(o->ctx, LOOM_LOG_INFO,
                  "the template for %d node(s) needs %.2f GiB a GPU on stage %d (static "
                  "memory and one microbatch's activations at the most frugal policy), "
                  "more than the cap of %.2f GiB: n0 = %d",
                  o->t[bad].nodes, need / 1073741824.0, stage, cap / 1073741824.0,
                  o->t[bad].nodes + 1);
        n0 = o->t[bad].nodes + 1;
        ot_forget(o);
    }
    if (rc != LOOM_OK)
        ot_forget(o);
    return rc;
}

/* Bounds on one iteration's candidates (docs/formats.md, "Bounds on the
 * work an input implies"; docs/benchmarks.md, "Graphs built on demand"):
 * stage-microbatches, the sum over candidates of stages x microbatches
 * (GPT-3 6.7B on 30 A40 nodes: 12,288 microbatches in all shares hold
 * 8.32 million and plan in 7.0 s, the whole batch of 20,480 alone 8.29
 * million in 8.4 s); and sample-map entries, candidates x samples x
 * modules (2^27: 512 MiB of maps). */
#define OT_MAX_WORK ((int64_t)1 << 23)
#define OT_MAX_SAMPLE_MAP ((int64_t)1 << 27)

/* Emits every template's candidates for this iteration. */
static int ot_emit(ot_self *o, const loom_problem *pb, const loom_iteration *it,
                   loom_candidates *set, loom_error *err)
{
    const char *shares = o->prm.shares;
    int rc = LOOM_OK;
    int32_t mbs = pb->parallel.microbatches > 0 ? pb->parallel.microbatches : 1;
    int all = strcmp(shares, "full") != 0;
    int32_t per = all ? oobleck_shares_per_template(mbs) : 1;
    /* the candidates' stages x microbatches, what building and simulating
     * them all would cost */
    int64_t work = 0, sum_shares = 0;
    for (int32_t k = 0; k < per; k++)
        sum_shares += all ? oobleck_share_of(k, mbs) : mbs;
    for (int32_t i = 0; i < o->n_t; i++)
        work += (int64_t)o->t[i].n_stages * sum_shares;
    if (work > OT_MAX_WORK)
        return o->host->error(err, LOOM_EINVAL,
                              "oobleck-templates: %d templates of %d microbatch share(s) "
                              "(%lld microbatches in all) hold %lld stage-microbatches, at most "
                              "%lld (docs/formats.md, bounds); plan fewer microbatches or "
                              "nodes", o->n_t, per, (long long)sum_shares, (long long)work,
                              (long long)OT_MAX_WORK);
    /* each candidate maps every sample (sample_mb): bound the sum */
    int64_t entries = (int64_t)o->n_t * per * it->n_samples * pb->model->n_modules;
    if (entries > OT_MAX_SAMPLE_MAP)
        return o->host->error(err, LOOM_EINVAL,
                              "oobleck-templates: %d templates x %d microbatch shares x %d "
                              "samples x %d modules = %lld sample-map entries, at most %lld "
                              "(docs/formats.md, bounds); plan fewer microbatches or nodes",
                              o->n_t, per,
                              it->n_samples, pb->model->n_modules, (long long)entries,
                              (long long)OT_MAX_SAMPLE_MAP);
    for (int32_t i = 0; rc == LOOM_OK && i < o->n_t; i++)
        for (int32_t k = 0; rc == LOOM_OK && k < per; k++) {
            int32_t s = all ? oobleck_share_of(k, mbs) : mbs;
            loom_partition *p = NULL;
            /* room for the share alone: thousands of small candidates */
            if (LOOM_STRUCT_HAS(set, loom_candidates, add_sized) && set->add_sized)
                rc = set->add_sized(set, s + 1, &p, err);
            else
                rc = set->add(set, &p, err);
            if (rc == LOOM_OK)
                rc = ot_candidate(o->host, pb->model, it, &o->t[i], s, mbs, p, err);
            if (rc != LOOM_OK && p)
                set->remove(set, set->n - 1);
        }
    return rc;
}

/* Emits the template candidates. */
static int ot_partition(void *self, const loom_problem *problem,
                        const loom_iteration *it, loom_candidates *set,
                        loom_error *err)
{
    ot_self *o = self;
    const loom_host_api *host = o->host;
    if (problem->kind != LOOM_PROBLEM_MODEL || !problem->model)
        return host->error(err, LOOM_DECLINED,
                           "oobleck-templates: only model problems are "
                           "partitioned");
    if (!it)
        return host->error(err, LOOM_EINVAL,
                           "oobleck-templates: needs the iteration's samples");
    const loom_cost_service *cost = loom_host_cost(host, o->ctx);
    if (!LOOM_COST_HAS(cost, module_shape) || !cost->layer)
        return host->error(err, LOOM_ENOTFOUND,
                           "oobleck-templates: the \"%s\" service with layer "
                           "and module_shape is not available",
                           LOOM_SERVICE_COST);
    int32_t nodes = 0, gpus = 0;
    int rc = oobleck_nodes(host, problem, o->prm.nodes, o->prm.gpus_per_node, &nodes, &gpus,
                           err);
    if (rc != LOOM_OK)
        return rc;
    int64_t n_layers = 0;
    for (int32_t m = 0; m < problem->model->n_modules; m++)
        n_layers += problem->model->modules[m].n_layers;
    if (n_layers > LOOM_OOBLECK_MAX_LAYERS)
        return host->error(err, LOOM_EINVAL,
                           "oobleck-templates: the model has %lld layers, at "
                           "most %d are planned", (long long)n_layers,
                           LOOM_OOBLECK_MAX_LAYERS);
    int per_iteration = o->prm.per_iteration;
    if (per_iteration || o->model != problem->model || o->nodes != nodes ||
        o->gpus != gpus)
        ot_forget(o);
    if (o->n_t == 0) {
        size_t cells = (size_t)n_layers * (size_t)gpus;
        double *f = host->alloc(cells * sizeof *f), *b = host->alloc(cells * sizeof *b);
        if (!f || !b)
            rc = host->error(err, LOOM_ENOMEM, "oobleck-templates: out of memory");
        else
            rc = ot_plan(o, problem, it, f, b, (int32_t)n_layers, nodes, gpus, err);
        host->free(f);
        host->free(b);
        if (rc != LOOM_OK)
            return rc;
        o->model = problem->model;
        o->nodes = nodes;
        o->gpus = gpus;
    }
    return ot_emit(o, problem, it, set, err);
}

static const loom_partitioner_vtable ot_vtable = {
    { sizeof(loom_partitioner_vtable), LOOM_PARTITIONER_VERSION },
    ot_create,
    ot_destroy,
    ot_partition,
};

/* Returns the partitioner vtable for role "partitioner", else NULL. */
static const loom_role_header *ot_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_PARTITIONER) == 0)
        return &ot_vtable.header;
    return NULL;
}

static const loom_plugin_info ot_info = {
    LOOM_PLUGIN_INFO_HEADER,
    "org.loom.oobleck-templates",
    "1.0.0",
    NULL,
    NULL,
    ot_role,
    ot_param_table,
};

LOOM_PLUGIN_DEFINE(oobleck_templates, ot_info);
