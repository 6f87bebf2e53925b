/*
 * frozen_aware.c - Cornstarch's frozen-status-aware pipeline partitioner
 * (dissertation §3.3.1 and §3.4.1). Every module's layers, in the model's
 * topological order (encoders before the backbone), form one chain that
 * is cut into S = pp * vpp contiguous stages (position s on rank s % pp)
 * minimising the largest F + B, where B follows Eq. 3.2: weight gradients
 * only for trainable layers (the cost model zeroes them for frozen
 * modules) and input gradients only where Eq. 3.3 says some layer at or
 * before it, in any branch of the module DAG, is trainable. The "unaware"
 * mode is Table 3.2's baseline: every backward taken as twice the forward.
 * Samples go to microbatches as the workload packs them (or evenly).
 */
#include <stdio.h>
#include <string.h>
#include <loom/loom.h>
#include <loom/kits/layout.h>
#include "frozen_aware.h"

/* The params, declared once in fa_param_table (manifest.json says the same). */
typedef struct fa_params {
    const char *mode;
    const char *input_grad_rule;
} fa_params;

static const loom_param_def fa_param_table[] = {
    LOOM_ENUM_PARAM(fa_params, mode, "aware", "aware|unaware",
                   "aware: Eq. 3.2 backward; unaware: every backward taken as twice the "
                   "forward (Table 3.2's baseline)"),
    LOOM_ENUM_PARAM(fa_params, input_grad_rule, "eq3.3", "eq3.3|strict",
                   "eq3.3: a trainable layer pays input gradients itself (Eq. 3.3 as "
                   "written); strict: only when an earlier layer is trainable (what the "
                   "simulator's graph builder charges)"),
    LOOM_PARAM_END};

typedef struct fa_self {
    const loom_host_api *host;
    loom_ctx *ctx;
    fa_params prm;
} fa_self;

/* Creates an instance holding the host table, the step context and the
 * params. */
static int fa_create(const loom_host_api *host, loom_ctx *ctx,
                     void *plugin_state, void **self, loom_error *err)
{
    (void)plugin_state;
    fa_self *f = host->alloc(sizeof *f);
    if (!f)
        return host->error(err, LOOM_ENOMEM, "frozen-aware: out of memory");
    f->host = host;
    f->ctx = ctx;
    int rc = loom_params_read(host, ctx, "frozen-aware", fa_param_table, &f->prm, err);
    if (rc != LOOM_OK) {
        host->free(f);
        return rc;
    }
    *self = f;
    return LOOM_OK;
}

/* Releases an instance from fa_create. */
static void fa_destroy(void *self)
{
    fa_self *f = self;
    if (f)
        f->host->free(f);
}

/* Per-layer F + B of every layer of the chain into t (module order). */
static int fa_layer_costs(fa_self *f, const loom_problem *pb,
                          const loom_iteration *it, double *t, loom_error *err)
{
    const loom_host_api *host = f->host;
    const loom_cost_service *cost = loom_host_cost(host, f->ctx);
    if (!cost ||
        cost->struct_size < offsetof(loom_cost_service, module_shape) +
                                sizeof cost->module_shape ||
        !cost->layer || !cost->module_shape)
        return host->error(err, LOOM_ENOTFOUND,
                           "frozen-aware: the \"%s\" service with layer and "
                           "module_shape is not available (a cost_model step "
                           "before it)", LOOM_SERVICE_COST);
    int unaware = strcmp(f->prm.mode, "unaware") == 0;
    int strict = strcmp(f->prm.input_grad_rule, "strict") == 0;
    int rule = strict ? LOOM_FROZEN_STRICT : LOOM_FROZEN_EQ33;
    const loom_model *model = pb->model;
    int32_t mbs = pb->parallel.microbatches > 0 ? pb->parallel.microbatches : 1;
    int32_t at = 0;
    for (int32_t m = 0; m < model->n_modules; m++) {
        loom_shape shape = LOOM_SHAPE_INIT;
        int rc = cost->module_shape(f->ctx, m, it, mbs, -1, 1, &shape, err);
        if (rc != LOOM_OK)
            return rc;
        for (int32_t l = 0; l < model->modules[m].n_layers; l++) {
            shape.trainable_upstream =
                unaware ? 1 : loom_frozen_pays_input(model, m, l, rule);
            loom_layer_cost c = LOOM_LAYER_COST_INIT;
            rc = cost->layer(f->ctx, m, l, &shape, LOOM_POLICY_NONE, &c, err);
            if (rc != LOOM_OK)
                return rc;
            t[at++] = unaware ? 3 * c.forward_ms
                              : c.forward_ms + c.input_grad_ms + c.weight_grad_ms;
        }
    }
    return LOOM_OK;
}

/* Appends one candidate: the frozen-aware min-max layout. */
static int fa_partition(void *self, const loom_problem *problem,
                        const loom_iteration *it, loom_candidates *set,
                        loom_error *err)
{
    fa_self *f = self;
    const loom_host_api *host = f->host;
    if (problem->kind != LOOM_PROBLEM_MODEL || !problem->model)
        return host->error(err, LOOM_DECLINED,
                           "frozen-aware: only model problems are partitioned");
    if (!it)
        return host->error(err, LOOM_EINVAL,
                           "frozen-aware: needs the iteration's samples");
    const loom_model *model = problem->model;
    int32_t pp = problem->parallel.pp;
    int32_t vpp = problem->parallel.vpp > 0 ? problem->parallel.vpp : 1;
    int32_t mbs = problem->parallel.microbatches;
    if (pp < 1 || mbs < 1)
        return host->error(err, LOOM_EINVAL,
                           "frozen-aware: parallel.pp and microbatches: "
                           "expected >= 1, found %d and %d", pp, mbs);
    int64_t n = 0;
    for (int32_t m = 0; m < model->n_modules; m++)
        n += model->modules[m].n_layers;
    int64_t s = (int64_t)pp * vpp;
    if (n < s || n > (1 << 24))
        return host->error(err, LOOM_EINVAL,
                           "frozen-aware: the model has %lld layers for %lld "
                           "positions (pp %d x vpp %d); every position needs "
                           "a layer", (long long)n, (long long)s, pp, vpp);
    double *t = host->alloc((size_t)n * sizeof *t);
    int32_t *sizes = host->alloc((size_t)s * sizeof *sizes);
    int rc = (t && sizes) ? LOOM_OK
                          : host->error(err, LOOM_ENOMEM,
                                        "frozen-aware: out of memory");
    double worst = 0;
    if (rc == LOOM_OK)
        rc = fa_layer_costs(f, problem, it, t, err);
    if (rc == LOOM_OK)
        rc = loom_frozen_minmax(t, (int32_t)n, (int32_t)s, sizes, &worst, err);
    loom_partition *p = NULL;
    if (rc == LOOM_OK)
        rc = set->add(set, &p, err);
    if (rc == LOOM_OK)
        rc = loom_lk_layout(host, "frozen-aware", model, pp, (int32_t)s, sizes, p, err);
    if (rc == LOOM_OK)
        rc = loom_lk_assign_samples(host, "frozen-aware", model, it, mbs, p, err);
    if (rc == LOOM_OK) {
        int unaware = strcmp(f->prm.mode, "unaware") == 0;
        snprintf(p->label, sizeof p->label, "frozen-%s S=%lld max=%.2fms",
                 unaware ? "unaware" : "aware", (long long)s, worst);
        host->log(f->ctx, LOOM_LOG_INFO, "%s", p->label);
    } else if (p) {
        set->remove(set, set->n - 1);
    }
    host->free(t);
    host->free(sizes);
    return rc;
}

static const loom_partitioner_vtable fa_vtable = {
    { sizeof(loom_partitioner_vtable), LOOM_PARTITIONER_VERSION },
    fa_create,
    fa_destroy,
    fa_partition,
};

/* Returns the partitioner vtable for role "partitioner", else NULL. */
static const loom_role_header *fa_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_PARTITIONER) == 0)
        return &fa_vtable.header;
    return NULL;
}

static const loom_plugin_info fa_info = {
    LOOM_PLUGIN_INFO_HEADER,
    "org.loom.frozen-aware",
    "1.0.0",
    NULL,
    NULL,
    fa_role,
    fa_param_table,
};

LOOM_PLUGIN_DEFINE(frozen_aware, fa_info);
