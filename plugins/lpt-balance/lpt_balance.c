/*
 * lpt_balance.c - the lpt-balance partitioner: DistTrain's
 * intra-microbatch reordering (DistTrain §6.1) as a data-level refinement
 * of the candidates before it.
 *
 * The iteration's LLM microbatches ("units": the workload's packed
 * sequences, or an even split into parallel.microbatches) are the
 * samples DistTrain balances. Each unit's size is its forward + backward
 * time in every non-backbone module (encoder, generator) at the TP the
 * candidate gives that module, from the "loom.cost" service. Units are
 * dealt to the DP groups by loom_lpt_assign with equal group sizes, and
 * the candidate then models the most loaded group, the straggler that
 * sets the iteration time (its units in workload order). The number of DP
 * groups is the `dp` param, or units / the candidate's microbatches.
 */
#include <stdio.h>
#include <string.h>
#include <loom/loom.h>
#include <loom/sample_groups.h>
#include "lpt.h"

typedef struct lpt_self {
    const loom_host_api *host;
    loom_ctx *ctx;
} lpt_self;

/* Creates an instance holding the host table and the step context. */
static int lpt_create(const loom_host_api *host, loom_ctx *ctx,
                      void *plugin_state, void **self, loom_error *err)
{
    (void)plugin_state;
    lpt_self *s = host->alloc(sizeof *s);
    if (!s)
        return host->error(err, LOOM_ENOMEM, "lpt-balance: out of memory");
    s->host = host;
    s->ctx = ctx;
    *self = s;
    return LOOM_OK;
}

/* Releases an instance from lpt_create. */
static void lpt_destroy(void *self)
{
    lpt_self *s = self;
    if (s)
        s->host->free(s);
}

/* The unit of sample i (its microbatch field, else the even split). */
static int32_t lpt_unit_of(const loom_iteration *it, int32_t i, int32_t units)
{
    int32_t own = it->samples[i].microbatch;
    return own >= 0 ? own : (int32_t)((int64_t)i * units / it->n_samples);
}

/* TP the candidate runs `module` at (its first span's, else the
 * partition's), at least 1. */
static int32_t lpt_module_tp(const loom_partition *p, int32_t module)
{
    for (int32_t s = 0; s < p->n_spans; s++)
        if (p->spans[s].module == module && p->spans[s].tp > 0)
            return p->spans[s].tp;
    return p->tp > 0 ? p->tp : 1;
}

/* lpt_sizes over the samples grouped by unit (loom_group_samples). */
static int lpt_sizes_of(lpt_self *s, const loom_cost_service *cost, const loom_model *model,
                        const loom_iteration *it, const loom_partition *p, int32_t units,
                        const int32_t *off, const loom_sample *grouped, int any_side,
                        double *sizes, loom_error *err)
{
    for (int32_t m = 0; m < model->n_modules; m++) {
        const loom_module *mod = &model->modules[m];
        if (any_side && mod->kind == LOOM_MODULE_BACKBONE)
            continue;
        int32_t tp = lpt_module_tp(p, m);
        int up = loom_module_upstream_trainable(model, m);
        for (int32_t u = 0; u < units; u++) {
            loom_shape shape = LOOM_SHAPE_INIT;
            loom_iteration own = {it->index, off[u + 1] - off[u], grouped + off[u]};
            int rc = cost->module_shape(s->ctx, m, &own, 1, 0, 1, &shape, err);
            if (rc != LOOM_OK)
                return rc;
            if (shape.tokens <= 0)
                continue;
            shape.tp = tp;
            for (int32_t l = 0; l < mod->n_layers; l++) {
                loom_layer_cost c = LOOM_LAYER_COST_INIT;
                shape.trainable_upstream = loom_layer_trainable_upstream_from(up, mod, l);
                rc = cost->layer(s->ctx, m, l, &shape, LOOM_POLICY_NONE, &c, err);
                if (rc != LOOM_OK)
                    return rc;
                sizes[u] += c.forward_ms + c.input_grad_ms + c.weight_grad_ms;
            }
        }
    }
    return LOOM_OK;
}

/* sizes[u]: forward + backward time of unit u in the non-backbone modules
 * (all modules when there are none) at the candidate's TPs. */
static int lpt_sizes(lpt_self *s, const loom_cost_service *cost,
                     const loom_model *model, const loom_iteration *it,
                     const loom_partition *p, int32_t units, double *sizes,
                     loom_error *err)
{
    int any_side = 0;
    for (int32_t m = 0; m < model->n_modules; m++)
        any_side |= model->modules[m].kind != LOOM_MODULE_BACKBONE;
    for (int32_t u = 0; u < units; u++)
        sizes[u] = 0;
    /* each unit's samples alone: a shape per unit without a pass over
     * every sample for each */
    int32_t *off = s->host->alloc(((size_t)units + 1) * sizeof *off);
    loom_sample *grouped =
        s->host->alloc((size_t)(it->n_samples > 0 ? it->n_samples : 1) * sizeof *grouped);
    if (!off || !grouped) {
        s->host->free(off);
        s->host->free(grouped);
        return s->host->error(err, LOOM_ENOMEM, "lpt-balance: out of memory");
    }
    loom_group_samples(it, units, off, grouped);
    int rc = lpt_sizes_of(s, cost, model, it, p, units, off, grouped, any_side, sizes, err);
    s->host->free(off);
    s->host->free(grouped);
    return rc;
}

/* Rewrites candidate p's sample map to model the most loaded DP group. */
static int lpt_refine(lpt_self *s, const loom_cost_service *cost,
                      const loom_problem *problem, const loom_iteration *it,
                      int32_t units, int32_t dp_param, int descending,
                      loom_partition *p, int32_t *buf, double *sizes,
                      loom_error *err)
{
    const loom_host_api *host = s->host;
    int32_t groups = dp_param;
    if (groups <= 0)
        groups = p->n_microbatches > 0
                     ? (units + p->n_microbatches / 2) / p->n_microbatches
                     : 1;
    if (groups < 1)
        groups = 1;
    if (groups > units)
        return host->error(err, LOOM_EINVAL,
                           "lpt-balance: %d DP groups for %d microbatches; "
                           "expected at most one group per microbatch",
                           groups, units);
    int rc = lpt_sizes(s, cost, problem->model, it, p, units, sizes, err);
    if (rc != LOOM_OK)
        return rc;
    int32_t cap = (units + groups - 1) / groups;
    int32_t *group_of = buf, *perm = buf + units, *scratch = buf + 2 * units;
    double *loads = sizes + units;
    double worst = loom_lpt_assign(sizes, units, groups, descending, cap,
                                   scratch, group_of, perm, loads);
    if (worst < 0)
        return host->error(err, LOOM_EINVAL,
                           "lpt-balance: cannot deal %d microbatches to %d "
                           "groups", units, groups);
    int32_t g = 0;
    for (int32_t j = 1; j < groups; j++)
        if (loads[j] > loads[g])
            g = j;
    /* local microbatch index of each unit of group g, in unit order */
    int32_t *local = scratch;
    int32_t n_local = 0;
    for (int32_t u = 0; u < units; u++)
        local[u] = group_of[u] == g ? n_local++ : -1;
    if (n_local > p->cap_microbatches)
        return host->error(err, LOOM_EINVAL,
                           "lpt-balance: candidate has room for %d "
                           "microbatches, group %d holds %d",
                           p->cap_microbatches, g, n_local);
    int32_t n = it->n_samples;
    for (int32_t i = 0; i < n; i++) {
        int32_t mb = local[lpt_unit_of(it, i, units)];
        for (int32_t m = 0; m < p->n_modules; m++)
            p->sample_mb[(size_t)m * (size_t)n + (size_t)i] = mb;
    }
    p->n_microbatches = n_local;
    size_t len = strlen(p->label);
    if (len + 1 < sizeof p->label)
        snprintf(p->label + len, sizeof p->label - len, " %s%d",
                 descending ? "lpt" : "asc", groups);
    double total = 0;
    for (int32_t j = 0; j < groups; j++)
        total += loads[j];
    host->log(s->ctx, LOOM_LOG_INFO,
              "%d microbatches over %d DP groups: modelled group %d, load "
              "%.3f ms (mean %.3f ms)", units, groups, g, worst, total / groups);
    return LOOM_OK;
}

/* The params, declared once in lpt_param_table (manifest.json says the same). */
typedef struct lpt_params {
    int64_t dp;
    const char *order;
} lpt_params;

static const loom_param_def lpt_param_table[] = {
    LOOM_INT_PARAM(lpt_params, dp, 0, 0, 65536,
                   "DP groups to balance over; 0 = the iteration's microbatches / the "
                   "candidate's"),
    LOOM_ENUM_PARAM(lpt_params, order, "lpt", "lpt|ascending",
                   "lpt: largest first (the 4/3 - 1/(3m) bound); ascending: as Algorithm 2 is "
                   "printed"),
    LOOM_PARAM_END};

/* Refines every candidate of the set. */
static int lpt_partition(void *self, const loom_problem *problem,
                         const loom_iteration *it, loom_candidates *set,
                         loom_error *err)
{
    lpt_self *s = self;
    const loom_host_api *host = s->host;
    if (problem->kind != LOOM_PROBLEM_MODEL || !problem->model || !it ||
        it->n_samples < 1)
        return host->error(err, LOOM_DECLINED,
                           "lpt-balance: needs a model problem with samples");
    if (set->n == 0)
        return host->error(err, LOOM_EINVAL,
                           "lpt-balance: expected candidates from an earlier "
                           "partitioner, found none (put a layout "
                           "partitioner such as disttrain-alloc first)");
    const loom_cost_service *cost = loom_host_cost(host, s->ctx);
    if (!cost)
        return host->error(err, LOOM_ENOTFOUND,
                           "lpt-balance: the \"%s\" service is not available",
                           LOOM_SERVICE_COST);
    int32_t units = problem->parallel.microbatches;
    int32_t most = -1;
    for (int32_t i = 0; i < it->n_samples; i++)
        most = it->samples[i].microbatch > most ? it->samples[i].microbatch : most;
    if (most >= 0)
        units = most + 1;
    lpt_params prm;
    int rc = loom_params_read(host, s->ctx, "lpt-balance", lpt_param_table, &prm, err);
    if (rc != LOOM_OK)
        return rc;
    int64_t dp = prm.dp;
    int descending = strcmp(prm.order, "ascending") != 0;
    int32_t *buf = host->alloc((size_t)units * 4 * sizeof *buf);
    double *sizes = host->alloc((size_t)units * 2 * sizeof *sizes);
    if (!buf || !sizes)
        rc = host->error(err, LOOM_ENOMEM, "lpt-balance: out of memory");
    for (int32_t c = 0; c < set->n && rc == LOOM_OK; c++)
        rc = lpt_refine(s, cost, problem, it, units, (int32_t)dp, descending,
                        set->items[c], buf, sizes, err);
    host->free(buf);
    host->free(sizes);
    return rc;
}

static const loom_partitioner_vtable lpt_vtable = {
    { sizeof(loom_partitioner_vtable), LOOM_PARTITIONER_VERSION },
    lpt_create,
    lpt_destroy,
    lpt_partition,
};

/* Returns the partitioner vtable for role "partitioner", else NULL. */
static const loom_role_header *lpt_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_PARTITIONER) == 0)
        return &lpt_vtable.header;
    return NULL;
}

static const loom_plugin_info lpt_info = {
    LOOM_PLUGIN_INFO_HEADER,
    "org.loom.lpt-balance",
    "1.0.0",
    NULL,
    NULL,
    lpt_role,
    lpt_param_table,
};

LOOM_PLUGIN_DEFINE(lpt_balance, lpt_info);
