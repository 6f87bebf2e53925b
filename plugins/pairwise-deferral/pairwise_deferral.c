/*
 * pairwise_deferral.c - Entrain's pairwise deferral (dissertation §4.5.2,
 * Algorithm 4 lines 7-15) as a partitioner chained after `stratified`.
 *
 * Deferral changes which samples the backbone processes in each
 * microbatch, i.e. the partition's per-module sample map, so under the
 * SDK it belongs to a partitioner: a ranker only sees built stage graphs.
 * For every candidate it takes the microbatches the previous step made,
 * computes each sample's backbone work through the cost service, pairs
 * overloaded with underloaded microbatches by bottleneck matching, moves
 * the subset-sum choice of samples' backbone passes to the partner, and
 * renumbers the microbatches in the interleaved execution order
 * (ol_0, ul_0, ol_1, ul_1, ...) so any ranker that runs microbatches in
 * index order (fifo) follows it. Encoder modules keep their samples.
 */
#include <stdio.h>
#include <string.h>
#include <loom/loom.h>
#include <loom/kits/entrain.h>
#include "deferral.h"

typedef struct defer_self {
    const loom_host_api *host;
    loom_ctx *ctx;
} defer_self;

/* Creates an instance holding the host table and the step context. */
static int defer_create(const loom_host_api *host, loom_ctx *ctx,
                        void *plugin_state, void **self, loom_error *err)
{
    (void)plugin_state;
    defer_self *d = host->alloc(sizeof *d);
    if (!d)
        return host->error(err, LOOM_ENOMEM, "pairwise-deferral: out of memory");
    d->host = host;
    d->ctx = ctx;
    *self = d;
    return LOOM_OK;
}

/* Releases an instance from defer_create. */
static void defer_destroy(void *self)
{
    defer_self *d = self;
    if (d)
        d->host->free(d);
}

/* The module whose microbatches define M^enc: the first non-encoder
 * module (the backbone), else module 0. */
static int32_t defer_base_module(const loom_model *model)
{
    for (int32_t m = 0; m < model->n_modules; m++)
        if (model->modules[m].kind != LOOM_MODULE_ENCODER)
            return m;
    return 0;
}

/* Scratch of one partition() call. */
typedef struct defer_buf {
    double *enc, *llm;
    int32_t *mb, *llm_mb, *order, *pos, *subs;
} defer_buf;

/* Frees a defer_buf. */
static void defer_buf_free(const loom_host_api *host, defer_buf *b)
{
    host->free(b->enc);
    host->free(b->llm);
    host->free(b->mb);
    host->free(b->llm_mb);
    host->free(b->order);
    host->free(b->pos);
    host->free(b->subs);
}

/* Runs the deferral on one candidate and rewrites its data level. */
static int defer_one(defer_self *d, loom_partition *p, const loom_model *model,
                     int32_t n, defer_buf *b, double steps, loom_error *err)
{
    const loom_host_api *host = d->host;
    int32_t k = p->n_microbatches, base = defer_base_module(model);
    if (k < 1 || !p->sample_mb || p->n_samples != n)
        return host->error(err, LOOM_EINVAL,
                           "pairwise-deferral: candidate \"%s\" has no sample "
                           "assignment for the iteration's %d samples (run "
                           "stratified before it)", p->label, n);
    double top = 0;
    double *load = host->alloc((size_t)k * sizeof *load);
    if (!load)
        return host->error(err, LOOM_ENOMEM, "pairwise-deferral: out of memory");
    memset(load, 0, (size_t)k * sizeof *load);
    for (int32_t s = 0; s < n; s++) {
        b->mb[s] = p->sample_mb[(size_t)base * (size_t)n + (size_t)s];
        if (b->mb[s] >= k)
            b->mb[s] = -1;
        if (b->mb[s] >= 0)
            load[b->mb[s]] += b->llm[s];
    }
    for (int32_t m = 0; m < k; m++)
        top = load[m] > top ? load[m] : top;
    host->free(load);
    double quantum = top > 0 ? top / steps : 1.0;
    double t_star = 0, after = 0;
    int32_t moved = 0;
    int rc = loom_defer_run(b->llm, b->mb, n, k, quantum, b->order, b->llm_mb,
                            &t_star, &after, &moved, err);
    if (rc != LOOM_OK)
        return rc;
    for (int32_t at = 0; at < k; at++)
        b->pos[b->order[at]] = at;
    for (int32_t m = 0; m < model->n_modules; m++) {
        int enc = model->modules[m].kind == LOOM_MODULE_ENCODER;
        int32_t *row = p->sample_mb + (size_t)m * (size_t)n;
        for (int32_t s = 0; s < n; s++) {
            if (row[s] < 0 || row[s] >= k)
                continue; /* the module does not see this sample */
            int32_t src = enc ? row[s] : b->llm_mb[s];
            row[s] = src < 0 ? -1 : b->pos[src];
        }
    }
    if (p->subs)
        for (int32_t f = 0; f < p->n_flows; f++) {
            int32_t *sub = p->subs + (size_t)f * (size_t)p->cap_microbatches;
            for (int32_t m = 0; m < k; m++)
                b->subs[b->pos[m]] = sub[m];
            memcpy(sub, b->subs, (size_t)k * sizeof *sub);
        }
    size_t len = strlen(p->label);
    char tail[40];
    snprintf(tail, sizeof tail, " +defer %d", moved);
    if (len + strlen(tail) < sizeof p->label)
        memcpy(p->label + len, tail, strlen(tail) + 1);
    host->log(d->ctx, LOOM_LOG_INFO,
              "%s: max backbone load %.3f -> %.3f ms (T* %.3f), %d samples "
              "deferred", p->label, top, after, t_star, moved);
    return LOOM_OK;
}

/* The params, declared once in pd_param_table (manifest.json says the same). */
typedef struct pd_params {
    int64_t subset_steps;
} pd_params;

static const loom_param_def pd_param_table[] = {
    LOOM_INT_PARAM(pd_params, subset_steps, 1000, 10, 1000000,
                   "resolution of the subset-sum table: the quantum is the heaviest "
                   "microbatch's backbone work divided by this"),
    LOOM_PARAM_END};

/* Defers backbone work in every candidate. */
static int defer_partition(void *self, const loom_problem *problem,
                           const loom_iteration *it, loom_candidates *set,
                           loom_error *err)
{
    defer_self *d = self;
    const loom_host_api *host = d->host;
    if (problem->kind != LOOM_PROBLEM_MODEL || !problem->model)
        return host->error(err, LOOM_DECLINED,
                           "pairwise-deferral: only model problems carry "
                           "samples");
    if (set->n < 1)
        return host->error(err, LOOM_EINVAL,
                           "pairwise-deferral: expected candidates from a "
                           "layout partitioner and stratified before it, "
                           "found none");
    if (!it || it->n_samples < 1)
        return host->error(err, LOOM_EINVAL,
                           "pairwise-deferral: the iteration has no samples");
    const loom_cost_service *cost = loom_ew_cost_service(host, d->ctx);
    if (!cost)
        return host->error(err, LOOM_ENOTFOUND,
                           "pairwise-deferral: the \"%s\" service with layer "
                           "and module_shape is not available",
                           LOOM_SERVICE_COST);
    pd_params prm;
    int prc = loom_params_read(host, d->ctx, "pairwise-deferral", pd_param_table, &prm, err);
    if (prc != LOOM_OK)
        return prc;
    int64_t steps = prm.subset_steps;
    int32_t n = it->n_samples, cap = 1;
    for (int32_t c = 0; c < set->n; c++)
        if (set->items[c]->cap_microbatches > cap)
            cap = set->items[c]->cap_microbatches;
    size_t nn = (size_t)n, nk = (size_t)cap;
    defer_buf b = {host->alloc(nn * sizeof(double)), host->alloc(nn * sizeof(double)),
                   host->alloc(nn * sizeof(int32_t)), host->alloc(nn * sizeof(int32_t)),
                   host->alloc(nk * sizeof(int32_t)), host->alloc(nk * sizeof(int32_t)),
                   host->alloc(nk * sizeof(int32_t))};
    int rc = (b.enc && b.llm && b.mb && b.llm_mb && b.order && b.pos && b.subs)
                 ? LOOM_OK
                 : host->error(err, LOOM_ENOMEM, "pairwise-deferral: out of memory");
    if (rc == LOOM_OK)
        rc = loom_ew_sample_work(host, d->ctx, cost, problem, it, b.enc, b.llm,
                                 err);
    for (int32_t c = 0; rc == LOOM_OK && c < set->n; c++)
        rc = defer_one(d, set->items[c], problem->model, n, &b, (double)steps,
                       err);
    defer_buf_free(host, &b);
    return rc;
}

static const loom_partitioner_vtable defer_vtable = {
    { sizeof(loom_partitioner_vtable), LOOM_PARTITIONER_VERSION },
    defer_create,
    defer_destroy,
    defer_partition,
};

/* Returns the partitioner vtable for role "partitioner", else NULL. */
static const loom_role_header *defer_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_PARTITIONER) == 0)
        return &defer_vtable.header;
    return NULL;
}

static const loom_plugin_info defer_info = {
    LOOM_PLUGIN_INFO_HEADER,
    "org.loom.pairwise-deferral",
    "1.0.0",
    NULL,
    NULL,
    defer_role,
    pd_param_table,
};

LOOM_PLUGIN_DEFINE(pairwise_deferral, defer_info);
