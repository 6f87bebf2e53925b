/*
 * hetero_search.c - the hetero-search partitioner: per-module layouts.
 *
 * mode "given": lays the problem's own per-module layouts (parallel.
 * modules) out as one candidate (loom_lk_module_layouts).
 * mode "search": enumerates layouts under a GPU budget: the backbone
 * modules on the top-level set at every TP in {1,2,4,8} and PP with the
 * problem's dp and cp, and each other module either colocated on that set
 * at its own TP (dp filling the set) or disjoint at its own TP, PP and DP;
 * (single_layout: every module on the top-level layout, the baseline);
 * every layout within the budget whose estimated static memory fits the
 * cap is ranked by the closed-form estimate of hs_estimate.c, and the
 * `candidates` best become partitions for the ranker to simulate, with
 * the single-layout search's `candidates` best after them (the estimate
 * only ranks; the simulation chooses).
 * docs/cost-models.md, "Per-module layouts".
 */
#include <stdio.h>
#include <string.h>
#include <loom/loom.h>
#include <loom/kits/layout.h>
#include "hs_estimate.h"

/* The params, declared once in hs_param_table (manifest.json says the same). */
typedef struct hs_params {
    const char *mode;
    int64_t gpus;
    int single_layout;
    int64_t candidates;
} hs_params;

static const loom_param_def hs_param_table[] = {
    LOOM_ENUM_PARAM(hs_params, mode, "search", "search|given",
                   "search: enumerate per-module layouts; given: the parallel config's "
                   "parallel.modules as one candidate"),
    LOOM_INT_PARAM(hs_params, gpus, 0, 0, 1048576,
                   "GPU budget; 0 = the parallel config's GPUs (every layout's set)"),
    LOOM_BOOL_PARAM(hs_params, single_layout, 0,
                   "search only single layouts (every module on the top-level set at its TP, "
                   "PP and DP): the baseline a per-module search is compared with at the same "
                   "GPU budget"),
    LOOM_INT_PARAM(hs_params, candidates, 4, 1, 16,
                   "best layouts by estimate emitted as candidates, in rank order"),
    LOOM_PARAM_END};

typedef struct hs_self {
    const loom_host_api *host;
    loom_ctx *ctx;
    hs_params prm;
} hs_self;

/* Creates an instance holding the host table and the step context. */
static int hs_create(const loom_host_api *host, loom_ctx *ctx, void *plugin_state, void **self,
                     loom_error *err)
{
    (void)plugin_state;
    hs_self *h = host->alloc(sizeof *h);
    if (!h)
        return host->error(err, LOOM_ENOMEM, "hetero-search: out of memory");
    h->host = host;
    h->ctx = ctx;
    int prc = loom_params_read(host, ctx, "hetero-search", hs_param_table, &h->prm, err);
    if (prc != LOOM_OK) {
        host->free(h);
        return prc;
    }
    *self = h;
    return LOOM_OK;
}

/* Releases an instance from hs_create. */
static void hs_destroy(void *self)
{
    hs_self *h = self;
    if (h)
        h->host->free(h);
}

/* Appends one candidate laying `layouts` out. */
static int hs_emit(hs_self *h, const loom_problem *pb, const loom_module_layout *layouts,
                   const loom_iteration *it, loom_candidates *set, double est_ms,
                   loom_error *err)
{
    loom_partition *part = NULL;
    int rc = set->add(set, &part, err);
    if (rc == LOOM_OK)
        rc = loom_lk_module_layouts(h->host, "hetero-search", pb, layouts, it,
                                    pb->parallel.microbatches, part, NULL, err);
    if (rc != LOOM_OK) {
        if (part)
            set->remove(set, set->n - 1);
        return rc;
    }
    if (est_ms > 0)
        h->host->log(h->ctx, LOOM_LOG_INFO, "%s: estimate %.3f ms", part->label, est_ms);
    return LOOM_OK;
}

/* Appends the problem's own layouts as one candidate. */
static int hs_given(hs_self *h, const loom_problem *pb, const loom_iteration *it,
                    loom_candidates *set, loom_error *err)
{
    int32_t n = pb->model->n_modules;
    loom_module_layout *l = h->host->alloc((size_t)n * sizeof *l);
    if (!l)
        return h->host->error(err, LOOM_ENOMEM, "hetero-search: out of memory");
    int rc = LOOM_OK;
    for (int32_t m = 0; m < n && rc == LOOM_OK; m++) {
        const loom_module_layout *src = loom_problem_module_layout(pb, m);
        if (!src) {
            rc = h->host->error(err, LOOM_EINVAL,
                                "hetero-search: mode \"given\": expected per-module layouts in "
                                "the parallel config (parallel.modules), found none");
            break;
        }
        memset(&l[m], 0, sizeof l[m]);
        memcpy(&l[m], src, src->struct_size < sizeof l[m] ? src->struct_size : sizeof l[m]);
        l[m].struct_size = (uint32_t)sizeof l[m];
    }
    if (rc == LOOM_OK)
        rc = hs_emit(h, pb, l, it, set, 0, err);
    h->host->free(l);
    return rc;
}

/* Searches layouts and appends the best as candidates. */
static int hs_search(hs_self *h, const loom_problem *pb, const loom_iteration *it,
                     loom_candidates *set, loom_error *err)
{
    const loom_host_api *host = h->host;
    loom_hs_config cfg;
    memset(&cfg, 0, sizeof cfg);
    int64_t gpus = h->prm.gpus, cands = h->prm.candidates;
    int single = h->prm.single_layout;
    int rc = LOOM_OK;
    int64_t top = (int64_t)pb->parallel.tp * loom_parallel_cp(&pb->parallel) * pb->parallel.pp *
                  pb->parallel.dp;
    cfg.gpus = gpus > 0 ? (int32_t)gpus
               : LOOM_STRUCT_HAS(pb, loom_problem, total_gpus) && pb->total_gpus > 0
                   ? pb->total_gpus
                   : (int32_t)top;
    cfg.single_layout = single;
    cfg.max_tp = pb->cluster && pb->cluster->gpus_per_node > 0 ? pb->cluster->gpus_per_node : 8;
    cfg.memory_cap_bytes = pb->memory_cap_bytes > 0 ? pb->memory_cap_bytes
                           : pb->cluster ? (double)pb->cluster->hbm_bytes
                                         : 0;
    loom_hs_result best[LOOM_HS_MAX_BEST];
    int32_t n_best = 0;
    loom_hs_stats stats;
    rc = loom_hs_search(host, h->ctx, pb, it, &cfg, (int32_t)cands, best, &n_best, &stats, err);
    if (rc != LOOM_OK)
        return rc;
    host->log(h->ctx, LOOM_LOG_INFO, "%lld layouts within %d GPUs, %lld fit the memory cap",
              (long long)stats.enumerated, cfg.gpus, (long long)stats.feasible);
    for (int32_t k = 0; k < n_best && rc == LOOM_OK; k++)
        rc = hs_emit(h, pb, best[k].layouts, it, set, best[k].estimate_ms, err);
    if (rc != LOOM_OK || single)
        return rc;
    /* the single-layout search's candidates too, so the simulated choice
     * is never worse than that search's (the estimate only ranks) */
    int32_t n_one = 0;
    cfg.single_layout = 1;
    loom_hs_stats one_stats;
    if (loom_hs_search(host, h->ctx, pb, it, &cfg, (int32_t)cands, best, &n_one, &one_stats,
                       err) != LOOM_OK)
        return LOOM_OK; /* no single layout fits: the per-module ones stand */
    for (int32_t k = 0; k < n_one && rc == LOOM_OK; k++)
        rc = hs_emit(h, pb, best[k].layouts, it, set, best[k].estimate_ms, err);
    return rc;
}

/* Appends the candidates of the mode param. Declines stage-times problems. */
static int hs_partition(void *self, const loom_problem *problem, const loom_iteration *iteration,
                        loom_candidates *set, loom_error *err)
{
    hs_self *h = self;
    if (problem->kind != LOOM_PROBLEM_MODEL || !problem->model)
        return h->host->error(err, LOOM_DECLINED,
                              "hetero-search: only model problems are partitioned");
    if (problem->model->n_modules > LOOM_HS_MAX_MODULES)
        return h->host->error(err, LOOM_EINVAL,
                              "hetero-search: expected at most %d modules, found %d",
                              LOOM_HS_MAX_MODULES, problem->model->n_modules);
    if (strcmp(h->prm.mode, "given") == 0)
        return hs_given(h, problem, iteration, set, err);
    return hs_search(h, problem, iteration, set, err);
}

static const loom_partitioner_vtable hs_vtable = {
    {sizeof(loom_partitioner_vtable), LOOM_PARTITIONER_VERSION},
    hs_create,
    hs_destroy,
    hs_partition,
};

/* Returns the partitioner vtable for role "partitioner", else NULL. */
static const loom_role_header *hs_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_PARTITIONER) == 0)
        return &hs_vtable.header;
    return NULL;
}

static const loom_plugin_info hs_info = {
    LOOM_PLUGIN_INFO_HEADER,
    "org.loom.hetero-search",
    "1.0.0",
    NULL,
    NULL,
    hs_role,
    hs_param_table,
};

LOOM_PLUGIN_DEFINE(hetero_search, hs_info);
