/* table.c - the `table` cost model plugin: profiled per-layer costs from a
 * CSV or JSON file, interpolated in tokens, with ratio-based memory
 * policies and frozen-aware backward (Cornstarch). */
#include <loom/loom.h>

#include <stdio.h>
#include <string.h>

#include "table_data.h"

#define TB_ID "org.loom.table"

/* One instance: the loaded table and the params read at create(). */
typedef struct tb_self {
    const loom_host_api *host;
    loom_table *table;           /* owned */
    double selective_activation; /* stored fraction under selective */
    double full_activation;      /* stored fraction under full */
    double selective_recompute;  /* recompute time / forward under selective */
    int distributed_optimizer;
    int32_t element_bytes;       /* 2 (bf16, fp16) or 4 (fp32, TF32) */
    uint32_t assumed_precision;  /* LOOM_ASSUMED_* precision bits, 0: unstated */
    loom_tail_knobs tail;        /* the iteration tail under these params */
} tb_self;

/* The params, declared once in tb_param_table (manifest.json says the same). */
typedef struct tb_params {
    const char *file;
    double selective_activation_ratio;
    double full_activation_ratio;
    double selective_recompute_ratio;
    int distributed_optimizer;
    int64_t element_bytes;
    const char *matmul_precision;
} tb_params;

static const loom_param_def tb_param_table[] = {
    LOOM_STRING_PARAM(tb_params, file, "",
                   "required: CSV (header "
                   "module,layer,tokens,forward_ms,input_grad_ms,weight_grad_ms,activation_bytes,param_bytes) "
                   "or JSON {\"rows\":[...]} with the same fields; layer may be \"*\"; "
                   "relative paths are used as given"),
    LOOM_FLOAT_PARAM(tb_params, selective_activation_ratio, 0.5, 0, 1,
                   "fraction of the measured activation bytes stored under selective "
                   "recomputation"),
    LOOM_FLOAT_PARAM(tb_params, full_activation_ratio, 0.1, 0, 1,
                   "fraction of the measured activation bytes stored under full recomputation"),
    LOOM_FLOAT_PARAM(tb_params, selective_recompute_ratio, 0.15, 0, 1,
                   "recompute time under selective recomputation, as a fraction of forward_ms "
                   "(full recomputes 1.0 x forward_ms)"),
    LOOM_BOOL_PARAM(tb_params, distributed_optimizer, 1,
                   "shard the optimizer states (Adam's fp32 master, m and v: 6 x param_bytes "
                   "in bf16, m and v: 2 x param_bytes in fp32) over the data-parallel "
                   "replicas, reduce-scatter the gradients and all-gather the weights; false: "
                   "all-reduce"),
    LOOM_INT_PARAM(tb_params, element_bytes, 2, 2, 4,
                   "bytes per element of the profiled run: 2 (bf16, fp16) or 4 (fp32, TF32); "
                   "sizes pipeline transfers, counts parameters as param_bytes / "
                   "element_bytes, and sets the optimizer's states and step (fp32 weights are "
                   "their own master copy)"),
    LOOM_ENUM_PARAM(tb_params, matmul_precision, "unstated", "unstated|bf16|fp16|fp8|tf32|fp32",
                   "the precision the profiled run's matmuls ran in, which megatron.args and torchtitan.toml state: unstated (then neither is written), bf16, fp16 or fp8 with element_bytes 2, tf32 or fp32 with 4"),
    LOOM_PARAM_END};

/* The LOOM_ASSUMED_* precision bits of the params into *bits (0 when
 * unstated); LOOM_EINVAL when the precision does not go with the element
 * size. */
static int tb_precision(const loom_host_api *host, const tb_params *prm, uint32_t *bits,
                        loom_error *err)
{
    static const struct { const char *name; int element; uint32_t bit; } known[] = {
        {"bf16", 2, 0u}, {"fp16", 2, LOOM_ASSUMED_MATMUL_FP16},
        {"fp8", 2, LOOM_ASSUMED_MATMUL_FP8}, {"tf32", 4, LOOM_ASSUMED_MATMUL_TF32},
        {"fp32", 4, LOOM_ASSUMED_MATMUL_FP32}};
    *bits = 0;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        if (strcmp(prm->matmul_precision, known[i].name))
            continue;
        if (prm->element_bytes != known[i].element)
            return host->error(err, LOOM_EINVAL,
                               "table: param matmul_precision: %s runs on %d-byte elements, so "
                               "expected element_bytes %d, found %lld",
                               known[i].name, known[i].element, known[i].element,
                               (long long)prm->element_bytes);
        *bits = LOOM_ASSUMED_PRECISION | known[i].bit |
                (known[i].element == 4 ? LOOM_ASSUMED_ELEMENTS_FP32 : 0u);
    }
    return LOOM_OK;
}

/* create(): reads the params and loads the file named by `file`. */
static int tb_create(const loom_host_api *host, loom_ctx *ctx,
                     void *plugin_state, void **self, loom_error *err)
{
    (void)plugin_state;
    tb_params prm;
    int rc = loom_params_read(host, ctx, "table", tb_param_table, &prm, err);
    if (rc == LOOM_OK)
        rc = loom_check_element_bytes(host, "table", prm.element_bytes, err);
    uint32_t precision = 0;
    if (rc == LOOM_OK)
        rc = tb_precision(host, &prm, &precision, err);
    if (rc != LOOM_OK)
        return rc;
    const char *file = prm.file;
    if (!file[0]) /* the default: no table named */
        return host->error(err, LOOM_EINVAL,
                           "table: params.file: expected the path of a CSV "
                           "or JSON cost table, found an empty string");
    double sel = prm.selective_activation_ratio, full = prm.full_activation_ratio;
    double sel_re = prm.selective_recompute_ratio;
    int dist = prm.distributed_optimizer;
    int64_t element = prm.element_bytes;

    tb_self *s = host->alloc(sizeof *s);
    if (!s)
        return host->error(err, LOOM_ENOMEM, "table: out of memory");
    memset(s, 0, sizeof *s);
    s->host = host;
    s->selective_activation = sel;
    s->full_activation = full;
    s->selective_recompute = sel_re;
    s->distributed_optimizer = dist != 0;
    s->element_bytes = (int32_t)element;
    s->assumed_precision = precision;
    /* Megatron-LM's tail (fp32 gradients, bucketed reduce overlapped with
     * the backward) under this table's optimizer and element size */
    s->tail.distributed_optimizer = s->distributed_optimizer;
    s->tail.overlap_grad_reduce = 1;
    s->tail.grad_bytes = LOOM_TAIL_GRAD_BYTES;
    loom_tail_knobs_set_element(&s->tail, element);
    rc = loom_table_load(file, &s->table, err);
    if (rc != LOOM_OK) {
        host->free(s);
        return rc;
    }
    *self = s;
    return LOOM_OK;
}

/* destroy(): frees the table and the instance. */
static void tb_destroy(void *self)
{
    tb_self *s = self;
    if (!s)
        return;
    loom_table_free(s->table);
    s->host->free(s);
}

/* Rounds a non-negative byte count to the nearest integer. */
static int64_t tb_bytes(double x)
{
    return x > 0.0 ? (int64_t)(x + 0.5) : 0;
}

/* Index of the model module called `name`, or -1. */
static int32_t tb_model_module(const loom_model *model, const char *name)
{
    for (int32_t i = 0; i < model->n_modules; i++)
        if (model->modules[i].name &&
            strcmp(model->modules[i].name, name) == 0)
            return i;
    return -1;
}

/* Checks that every module the table names exists in the model with
 * enough layers for its rows. */
static int tb_check_modules(const tb_self *s, const loom_model *model,
                            loom_error *err)
{
    const loom_table *t = s->table;
    char where[48];
    for (int32_t i = 0; i < t->n_modules; i++) {
        const loom_table_module *tm = &t->modules[i];
        int32_t m = tb_model_module(model, tm->name);
        if (m < 0) {
            char names[256] = "";
            size_t used = 0;
            for (int32_t k = 0; k < model->n_modules && used < sizeof names;
                 k++)
                used += (size_t)snprintf(names + used, sizeof names - used,
                                         "%s%s", k ? ", " : "",
                                         model->modules[k].name
                                             ? model->modules[k].name
                                             : "?");
            loom_table_where(t, tm->source, where, sizeof where);
            return s->host->error(err, LOOM_EINVAL,
                                  "table: %s: %s: expected a module of model "
                                  "\"%s\" (%s), found module \"%s\"",
                                  t->file, where,
                                  model->name ? model->name : "?", names,
                                  tm->name);
        }
        int32_t n_layers = model->modules[m].n_layers;
        if (tm->max_layer < n_layers)
            continue;
        for (int32_t r = 0; r < t->n_rows; r++) {
            const loom_table_row *row = &t->rows[r];
            if (row->layer >= n_layers && strcmp(row->module, tm->name) == 0) {
                loom_table_where(t, row->source, where, sizeof where);
                return s->host->error(err, LOOM_EINVAL,
                                      "table: %s: %s: expected a layer of "
                                      "module \"%s\" in [0, %d), found %d",
                                      t->file, where, tm->name, (int)n_layers,
                                      (int)row->layer);
            }
        }
    }
    return LOOM_OK;
}

/* Checks the problem, module, layer, shape and policy of a query. */
static int tb_check_query(const tb_self *s, const loom_problem *p,
                          int32_t module, int32_t layer,
                          const loom_shape *shape, int32_t policy,
                          loom_error *err)
{
    if (!p || p->kind != LOOM_PROBLEM_MODEL || !p->model)
        return s->host->error(err, LOOM_EINVAL,
                              "table: expected a model problem, found %s",
                              !p ? "no problem" : "a stage-times problem");
    if (module < 0 || module >= p->model->n_modules)
        return s->host->error(err, LOOM_EINVAL,
                              "table: module index %d out of range [0, %d)",
                              (int)module, (int)p->model->n_modules);
    const loom_module *m = &p->model->modules[module];
    if (!m->name)
        return s->host->error(err, LOOM_EINVAL,
                              "table: module %d: expected a name to match "
                              "table rows, found none",
                              (int)module);
    if (layer < 0 || layer >= m->n_layers)
        return s->host->error(err, LOOM_EINVAL,
                              "table: module \"%s\": layer %d out of range "
                              "[0, %d)",
                              m->name, (int)layer, (int)m->n_layers);
    if (!shape || shape->tokens < 0)
        return s->host->error(err, LOOM_EINVAL,
                              "table: module \"%s\" layer %d: expected a "
                              "shape with tokens >= 0, found %s",
                              m->name, (int)layer,
                              !shape ? "none" : "negative tokens");
    if (policy < 0 || policy >= LOOM_POLICY_OFFLOAD)
        return s->host->error(err, LOOM_EINVAL,
                              "table: expected a memory policy in [0, %d), "
                              "found %d",
                              (int)LOOM_POLICY_OFFLOAD, (int)policy);
    return tb_check_modules(s, p->model, err);
}

/* estimate(): interpolates the layer's rows at shape->tokens. */
static int tb_estimate(void *self, const loom_problem *problem,
                       int32_t module, int32_t layer, const loom_shape *shape,
                       int32_t policy, loom_layer_cost *out, loom_error *err)
{
    const tb_self *s = self;
    int rc = tb_check_query(s, problem, module, layer, shape, policy, err);
    if (rc != LOOM_OK)
        return rc;
    const loom_module *m = &problem->model->modules[module];
    const loom_table_row *rows = NULL;
    int32_t n = 0;
    loom_table_lookup(s->table, m->name, layer, &rows, &n);
    if (n == 0)
        return s->host->error(err, LOOM_EINVAL,
                              "table: %s: expected rows for module \"%s\" "
                              "layer %d (or layer \"*\"), found none",
                              s->table->file, m->name, (int)layer);
    loom_table_point pt;
    loom_table_interpolate(rows, n, (double)shape->tokens, &pt);

    loom_layer_cost_clear(out);
    out->param_bytes = tb_bytes(pt.param_bytes);
    if (LOOM_LAYER_COST_HAS(out, element_bytes))
        out->element_bytes = s->element_bytes;
    if (!m->frozen) {
        int32_t dp = problem->parallel.dp;
        double shards = (s->distributed_optimizer && dp > 1) ? dp : 1.0;
        /* fp32 gradients (the tail reduces them in fp32 too) and Adam's
         * states: with 2-byte weights, grads 2x and fp32 master, m and v
         * (12 bytes) 6x the weights; fp32 weights are their own master,
         * so grads 1x and m and v (8 bytes) 2x */
        double grads = s->element_bytes == 4 ? 1.0 : 2.0;
        double states = s->element_bytes == 4 ? 2.0 : 6.0;
        out->state_bytes = tb_bytes(grads * pt.param_bytes + states * pt.param_bytes / shards);
    }
    if (shape->tokens == 0)
        return LOOM_OK; /* no stage runs for an empty shape */

    int pays_input = shape->trainable_upstream != 0;
    int pays_weight = !m->frozen;
    out->forward_ms = pt.forward_ms;
    out->input_grad_ms = pays_input ? pt.input_grad_ms : 0.0;
    out->weight_grad_ms = pays_weight ? pt.weight_grad_ms : 0.0;
    if (!pays_input && !pays_weight)
        return LOOM_OK; /* no backward: nothing stored or recomputed */

    double stored = pt.activation_bytes;
    if (policy == LOOM_POLICY_SELECTIVE) {
        stored *= s->selective_activation;
        out->recompute_ms = s->selective_recompute * pt.forward_ms;
    } else if (policy == LOOM_POLICY_FULL) {
        stored *= s->full_activation;
        out->recompute_ms = pt.forward_ms;
    }
    out->activation_bytes = tb_bytes(stored);
    /* what recomputation rebuilds is live during the backward */
    out->transient_bytes = tb_bytes(pt.activation_bytes - stored);
    return LOOM_OK;
}

/* rank_tail_ms(): the gradient sync, parameter all-gather and Adam step
 * of one rank (loom_rank_tail_compute() under this table's optimizer and
 * element size), and the precision the profile states. */
static int tb_rank_tail_ms(void *self, const loom_problem *problem,
                           const loom_rank_state *state, loom_rank_tail *out, loom_error *err)
{
    const tb_self *s = self;
    if (!problem || !problem->cluster)
        return s->host->error(err, LOOM_EINVAL,
                              "table: an iteration tail needs a cluster, found none");
    loom_rank_tail_compute(problem->cluster, state, &s->tail, out);
    if (LOOM_STRUCT_HAS(out, loom_rank_tail, assumed))
        out->assumed |= s->assumed_precision;
    return LOOM_OK;
}

static const loom_cost_model_vtable tb_vtable = {
    {sizeof(loom_cost_model_vtable), LOOM_COST_MODEL_VERSION},
    tb_create,
    tb_destroy,
    tb_estimate,
    NULL,
    NULL,
    tb_rank_tail_ms,
    LOOM_COST_READS_LAYER_INDEX, /* a table row prices one layer index */
};

/* The vtable for the cost_model role, NULL for any other. */
static const loom_role_header *tb_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_COST_MODEL) == 0)
        return &tb_vtable.header;
    return NULL;
}

static const loom_plugin_info tb_info = {
    LOOM_PLUGIN_INFO_HEADER, TB_ID, "1.0.0", NULL, NULL, tb_role, tb_param_table
};

LOOM_PLUGIN_DEFINE(table, tb_info);
