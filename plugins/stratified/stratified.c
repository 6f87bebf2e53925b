/*
 * stratified.c - Entrain's stratified sample assignment as a partitioner
 * (dissertation §4.3, §4.5.1; Algorithm 4 lines 1-6). It refines the data
 * level of every candidate a layout partitioner made before it: samples
 * go to DP replicas (when parallel.dp > 1 the iteration is the global
 * batch and the heaviest replica - the one the gradient barrier waits
 * for - is planned), K shrinks to K_eff, and the coarse then the fine
 * samples are packed onto the least-loaded encoder microbatch. Every
 * module gets the same microbatches; pairwise-deferral may move backbone
 * work afterwards.
 */
#include <stdio.h>
#include <string.h>
#include <loom/loom.h>
#include <loom/kits/entrain.h>
#include "stratified.h"

typedef struct strat_self {
    const loom_host_api *host;
    loom_ctx *ctx;
} strat_self;

/* Creates an instance holding the host table and the step context. */
static int strat_create(const loom_host_api *host, loom_ctx *ctx,
                        void *plugin_state, void **self, loom_error *err)
{
    (void)plugin_state;
    strat_self *s = host->alloc(sizeof *s);
    if (!s)
        return host->error(err, LOOM_ENOMEM, "stratified: out of memory");
    s->host = host;
    s->ctx = ctx;
    *self = s;
    return LOOM_OK;
}

/* Releases an instance from strat_create. */
static void strat_destroy(void *self)
{
    strat_self *s = self;
    if (s)
        s->host->free(s);
}

/* The coarse-set rule named by the "coarse" param ("mean", "median" or
 * "top-keff"). */
static int strat_rule(const char *r)
{
    if (strcmp(r, "median") == 0)
        return LOOM_STRAT_MEDIAN;
    if (strcmp(r, "top-keff") == 0)
        return LOOM_STRAT_TOP_KEFF;
    return LOOM_STRAT_MEAN;
}

/* Writes the assignment into candidate p: mb[s] for the samples of the
 * planned replica (in_set[s]), -1 for the others, K_eff microbatches. */
static int strat_write(const loom_host_api *host, loom_partition *p,
                       const loom_problem *pb, int32_t n,
                       const unsigned char *in_set, const int32_t *mb,
                       int32_t keff, int32_t replica, loom_error *err)
{
    if (p->cap_microbatches < keff || (n > 0 && !p->sample_mb))
        return host->error(err, LOOM_EINVAL,
                           "stratified: candidate has room for %d "
                           "microbatches, K_eff is %d", p->cap_microbatches,
                           keff);
    int32_t nm = pb->model->n_modules;
    for (int32_t m = 0; m < nm; m++)
        for (int32_t s = 0; s < n; s++)
            p->sample_mb[(size_t)m * (size_t)n + (size_t)s] =
                in_set[s] ? mb[s] : -1;
    p->n_microbatches = keff;
    p->n_samples = n;
    p->n_modules = nm;
    if (p->subs)
        for (int32_t f = 0; f < p->n_flows; f++)
            for (int32_t k = 0; k < keff; k++)
                p->subs[(size_t)f * (size_t)p->cap_microbatches + (size_t)k] = 1;
    size_t len = strlen(p->label);
    char tail[40];
    if (pb->parallel.dp > 1)
        snprintf(tail, sizeof tail, " +strat K%d r%d", keff, replica);
    else
        snprintf(tail, sizeof tail, " +strat K%d", keff);
    if (len + strlen(tail) < sizeof p->label)
        memcpy(p->label + len, tail, strlen(tail) + 1);
    return LOOM_OK;
}

/* The params, declared once in strat_param_table (manifest.json says the same). */
typedef struct strat_params {
    const char *coarse;
    int64_t replica;
} strat_params;

static const loom_param_def strat_param_table[] = {
    LOOM_ENUM_PARAM(strat_params, coarse, "mean", "mean|median|top-keff",
                   "which samples form the coarse set S_c: backbone work above the replica's "
                   "mean, above its median, or the K_eff heaviest"),
    LOOM_INT_PARAM(strat_params, replica, -1, -1, 65535,
                   "with parallel.dp > 1 the iteration is the global batch: the replica to "
                   "plan, -1 for the heaviest"),
    LOOM_PARAM_END};

/* Assigns the iteration's samples and refines every candidate. */
static int strat_partition(void *self, const loom_problem *problem,
                           const loom_iteration *it, loom_candidates *set,
                           loom_error *err)
{
    strat_self *st = self;
    const loom_host_api *host = st->host;
    if (problem->kind != LOOM_PROBLEM_MODEL || !problem->model)
        return host->error(err, LOOM_DECLINED,
                           "stratified: only model problems carry samples");
    if (set->n < 1)
        return host->error(err, LOOM_EINVAL,
                           "stratified: expected a layout partitioner before "
                           "it (e.g. balanced-dp), found no candidates");
    if (!it || it->n_samples < 1)
        return host->error(err, LOOM_EINVAL,
                           "stratified: the iteration has no samples");
    const loom_cost_service *cost = loom_ew_cost_service(host, st->ctx);
    if (!cost)
        return host->error(err, LOOM_ENOTFOUND,
                           "stratified: the \"%s\" service with layer and "
                           "module_shape is not available", LOOM_SERVICE_COST);
    int32_t n = it->n_samples, dp = problem->parallel.dp > 0 ? problem->parallel.dp : 1;
    int32_t k = problem->parallel.microbatches > 0 ? problem->parallel.microbatches : 1;
    strat_params prm;
    int prc = loom_params_read(host, st->ctx, "stratified", strat_param_table, &prm, err);
    if (prc != LOOM_OK)
        return prc;
    int64_t want = prm.replica;
    const char *coarse = prm.coarse;
    if (want >= dp)
        return host->error(err, LOOM_EINVAL,
                           "stratified: params.replica: expected < %d "
                           "(parallel.dp), found %lld", dp, (long long)want);
    size_t nn = (size_t)n;
    double *enc = host->alloc(nn * sizeof *enc), *llm = host->alloc(nn * sizeof *llm);
    int32_t *rep = host->alloc(nn * sizeof *rep), *idx = host->alloc(nn * sizeof *idx);
    int32_t *mb = host->alloc(nn * sizeof *mb);
    unsigned char *in_set = host->alloc(nn);
    int rc = (enc && llm && rep && idx && mb && in_set)
                 ? LOOM_OK
                 : host->error(err, LOOM_ENOMEM, "stratified: out of memory");
    if (rc == LOOM_OK)
        rc = loom_ew_sample_work(host, st->ctx, cost, problem, it, enc, llm,
                                 err);
    if (rc == LOOM_OK)
        rc = loom_strat_replicas(enc, llm, n, dp, rep, err);
    int32_t replica = 0;
    if (rc == LOOM_OK && dp > 1) {
        if (want >= 0) {
            replica = (int32_t)want;
        } else {
            double best = -1;
            for (int32_t r = 0; r < dp; r++) {
                double w = 0;
                for (int32_t s = 0; s < n; s++)
                    if (rep[s] == r)
                        w += enc[s] + llm[s];
                if (w > best) {
                    best = w;
                    replica = r;
                }
            }
        }
    }
    int32_t m = 0, keff = 1;
    if (rc == LOOM_OK) {
        for (int32_t s = 0; s < n; s++) {
            in_set[s] = rep[s] == replica;
            mb[s] = -1;
            if (in_set[s])
                idx[m++] = s;
        }
        if (m == 0)
            rc = host->error(err, LOOM_EINVAL,
                             "stratified: replica %d of %d received no "
                             "samples (%d samples in the iteration)",
                             replica, dp, n);
    }
    if (rc == LOOM_OK) {
        keff = loom_strat_keff(enc, idx, m, k);
        rc = loom_strat_assign(enc, llm, idx, m, keff,
                               strat_rule(coarse), mb, NULL, err);
    }
    for (int32_t c = 0; rc == LOOM_OK && c < set->n; c++)
        rc = strat_write(host, set->items[c], problem, n, in_set, mb, keff,
                         replica, err);
    if (rc == LOOM_OK)
        host->log(st->ctx, LOOM_LOG_INFO,
                  "iteration %d: %d samples of replica %d/%d in K_eff = %d "
                  "of %d microbatches", it->index, m, replica, dp, keff, k);
    host->free(enc);
    host->free(llm);
    host->free(rep);
    host->free(idx);
    host->free(mb);
    host->free(in_set);
    return rc;
}

static const loom_partitioner_vtable strat_vtable = {
    { sizeof(loom_partitioner_vtable), LOOM_PARTITIONER_VERSION },
    strat_create,
    strat_destroy,
    strat_partition,
};

/* Returns the partitioner vtable for role "partitioner", else NULL. */
static const loom_role_header *strat_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_PARTITIONER) == 0)
        return &strat_vtable.header;
    return NULL;
}

static const loom_plugin_info strat_info = {
    LOOM_PLUGIN_INFO_HEADER,
    "org.loom.stratified",
    "1.0.0",
    NULL,
    NULL,
    strat_role,
    strat_param_table,
};

LOOM_PLUGIN_DEFINE(stratified, strat_info);
