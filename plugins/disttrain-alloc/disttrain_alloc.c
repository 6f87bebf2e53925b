/*
 * disttrain_alloc.c - the disttrain-alloc partitioner: DistTrain's
 * disaggregated model orchestration (DistTrain §5, Algorithm 1).
 *
 * Measures C_m(TP) for TP in {1,2,4,8} of the encoder, backbone and
 * generator through the "loom.cost" service (forward + backward of the
 * iteration's mean LLM microbatch), their parameter and optimizer bytes
 * and their activation bytes under selective recomputation, searches TP x DP with the integer allocator of
 * dt_alloc.c, and appends the `candidates` best plans as partitions
 * (dt_layout.c). Params: see manifest.json.
 */
#include <stdio.h>
#include <string.h>
#include <loom/loom.h>
#include "dt_alloc.h"
#include "dt_layout.h"

#define DT_MAX_CANDIDATES 16

typedef struct dt_self {
    const loom_host_api *host;
    loom_ctx *ctx;
} dt_self;

/* Creates an instance holding the host table and the step context. */
static int dt_create(const loom_host_api *host, loom_ctx *ctx,
                     void *plugin_state, void **self, loom_error *err)
{
    (void)plugin_state;
    dt_self *d = host->alloc(sizeof *d);
    if (!d)
        return host->error(err, LOOM_ENOMEM, "disttrain-alloc: out of memory");
    d->host = host;
    d->ctx = ctx;
    *self = d;
    return LOOM_OK;
}

/* Releases an instance from dt_create. */
static void dt_destroy(void *self)
{
    dt_self *d = self;
    if (d)
        d->host->free(d);
}


/* The params, declared once in dt_param_table (manifest.json says the same). */
typedef struct dt_params {
    int64_t gpus;
    int64_t global_batch;
    int64_t max_tp;
    int64_t candidates;
    double param_grad_bytes;
    double optimizer_bytes;
    int zero1;
    int dp_above_backbone;
} dt_params;

static const loom_param_def dt_param_table[] = {
    LOOM_INT_PARAM(dt_params, gpus, 0, 0, 1048576,
                   "GPUs N to allocate; 0 = tp x pp x dp of the parallel config"),
    LOOM_INT_PARAM(dt_params, global_batch, 0, 0, 1048576,
                   "global batch BS in LLM microbatches (packed sequences); 0 = parallel.dp x "
                   "the iteration's microbatches (the iteration is one replica's share); "
                   "DP_lm is kept >= BS / the iteration's microbatches so the simulated "
                   "pipeline's microbatches come from its samples"),
    LOOM_INT_PARAM(dt_params, max_tp, 8, 1, 8,
                   "largest TP tried (also capped by the cluster's GPUs per node)"),
    LOOM_INT_PARAM(dt_params, candidates, 4, 1, 16,
                   "best plans emitted as candidates, in rank order"),
    LOOM_FLOAT_PARAM(dt_params, param_grad_bytes, 4, 0, 64,
                   "bytes per parameter of weights + gradients (bf16 + bf16); a frozen module "
                   "keeps 2"),
    LOOM_FLOAT_PARAM(dt_params, optimizer_bytes, 12, 0, 64,
                   "bytes per parameter of optimizer state (fp32 master + Adam moments), "
                   "sharded over the module's GPUs (ZeRO-1)"),
    LOOM_BOOL_PARAM(dt_params, zero1, 0,
                   "memory bound of DistTrain section 5.1 (optimizer sharded over each "
                   "module's GPUs, ZeRO-1); false: states per rank as Loom's simulator "
                   "charges them, so every emitted plan fits in simulation"),
    LOOM_BOOL_PARAM(dt_params, dp_above_backbone, 0,
                   "allow an encoder or generator DP larger than the backbone's (a microbatch "
                   "then splits over several encoder replicas)"),
    LOOM_PARAM_END};

/* Fills unit u for module `module`: C(TP) for every TP of the set, and
 * the parameter, optimizer and activation bytes. */
static int dt_measure(dt_self *d, const loom_cost_service *cost,
                      const loom_model *model, int32_t module,
                      const loom_iteration *it, int32_t units,
                      double grad_bytes_per_param, double opt_bytes_per_param,
                      loom_dt_unit *u, loom_error *err)
{
    const loom_module *mod = &model->modules[module];
    loom_shape shape = LOOM_SHAPE_INIT;
    int rc = cost->module_shape(d->ctx, module, it, units, -1, 1, &shape, err);
    if (rc != LOOM_OK)
        return rc;
    int up = loom_module_upstream_trainable(model, module);
    memset(u, 0, sizeof *u);
    u->present = 1;
    u->max_pp = mod->n_layers;
    double weight_bytes = 0, act = 0;
    for (int i = 0; i < LOOM_DT_N_TP; i++) {
        shape.tp = 1 << i;
        double c = 0;
        for (int32_t l = 0; l < mod->n_layers; l++) {
            shape.trainable_upstream = loom_layer_trainable_upstream_from(up, mod, l);
            loom_layer_cost lc = LOOM_LAYER_COST_INIT;
            rc = cost->layer(d->ctx, module, l, &shape, LOOM_POLICY_NONE, &lc, err);
            if (rc != LOOM_OK)
                return rc;
            if (shape.tokens > 0)
                c += lc.forward_ms + lc.input_grad_ms + lc.weight_grad_ms;
            if (i == 0 && shape.tokens > 0) {
                /* peak activations under selective recomputation
                 * (Megatron's default): the memory bound's L */
                loom_layer_cost sel = LOOM_LAYER_COST_INIT;
                rc = cost->layer(d->ctx, module, l, &shape, LOOM_POLICY_SELECTIVE,
                                 &sel, err);
                if (rc != LOOM_OK)
                    return rc;
                act += (double)sel.activation_bytes;
            }
            if (i == 0)
                weight_bytes += (double)lc.param_bytes;
        }
        u->c_ms[i] = c;
    }
    /* param_bytes at TP 1 are the bf16 weights: 2 bytes per parameter */
    double params = weight_bytes / 2.0;
    u->param_bytes = mod->frozen ? weight_bytes : params * grad_bytes_per_param;
    u->state_bytes = mod->frozen ? 0 : params * opt_bytes_per_param;
    u->act_bytes = act;
    return LOOM_OK;
}

/* LLM microbatches of the iteration: the workload's packing, or
 * parallel.microbatches for an even split. */
static int32_t dt_units(const loom_problem *problem, const loom_iteration *it)
{
    int32_t most = -1;
    for (int32_t i = 0; i < it->n_samples; i++)
        if (it->samples[i].microbatch > most)
            most = it->samples[i].microbatch;
    return most >= 0 ? most + 1 : problem->parallel.microbatches;
}

/* Runs Algorithm 1 and appends the best plans as candidates. */
static int dt_partition(void *self, const loom_problem *problem,
                        const loom_iteration *it, loom_candidates *set,
                        loom_error *err)
{
    dt_self *d = self;
    const loom_host_api *host = d->host;
    if (problem->kind != LOOM_PROBLEM_MODEL || !problem->model)
        return host->error(err, LOOM_DECLINED,
                           "disttrain-alloc: only model problems are "
                           "partitioned");
    const loom_model *model = problem->model;
    if (!it || it->n_samples < 1)
        return host->error(err, LOOM_EINVAL,
                           "disttrain-alloc: expected the iteration's samples "
                           "(the data distribution C_m is measured on), "
                           "found none");
    int32_t unit_module[LOOM_DT_UNITS];
    int rc = loom_dt_find_units(model, unit_module, err);
    if (rc != LOOM_OK)
        return rc;
    const loom_cost_service *cost = loom_host_cost(host, d->ctx);
    if (!cost)
        return host->error(err, LOOM_ENOTFOUND,
                           "disttrain-alloc: the \"%s\" service is not "
                           "available", LOOM_SERVICE_COST);
    int32_t units = dt_units(problem, it);
    const loom_parallel *par = &problem->parallel;
    dt_params prm;
    if ((rc = loom_params_read(host, d->ctx, "disttrain-alloc", dt_param_table, &prm, err)))
        return rc;
    int64_t p_gpus = prm.gpus, p_batch = prm.global_batch, p_max_tp = prm.max_tp;
    int64_t p_candidates = prm.candidates;
    double grad_b = prm.param_grad_bytes, opt_b = prm.optimizer_bytes;
    int above = prm.dp_above_backbone, zero1 = prm.zero1;
    loom_dt_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gpus = (int32_t)p_gpus;
    if (cfg.gpus <= 0)
        cfg.gpus = par->tp * par->pp * (par->dp > 0 ? par->dp : 1);
    cfg.global_batch = (int32_t)p_batch;
    if (cfg.global_batch <= 0)
        cfg.global_batch = units * (par->dp > 0 ? par->dp : 1);
    /* the modelled pipeline's BS / DP_lm microbatches come from the
     * iteration's units: DP_lm >= BS / units */
    cfg.min_dp_llm = (cfg.global_batch + units - 1) / units;
    cfg.max_tp = (int32_t)p_max_tp;
    if (problem->cluster && problem->cluster->gpus_per_node > 0 &&
        problem->cluster->gpus_per_node < cfg.max_tp)
        cfg.max_tp = problem->cluster->gpus_per_node;
    cfg.vpp = par->vpp > 0 ? par->vpp : 1;
    cfg.dp_above_backbone = above;
    cfg.gpu_bytes = problem->memory_cap_bytes > 0 ? problem->memory_cap_bytes
                    : problem->cluster ? (double)problem->cluster->hbm_bytes
                                       : 0;
    cfg.zero1 = zero1;
    /* without ZeRO-1 over module GPUs, optimizer state is sharded the way
     * the cost model shards it: over the problem's data parallelism */
    if (!zero1 && par->dp > 1)
        opt_b /= par->dp;

    loom_dt_unit u[LOOM_DT_UNITS];
    memset(u, 0, sizeof u);
    for (int k = 0; k < LOOM_DT_UNITS; k++) {
        if (unit_module[k] < 0)
            continue;
        rc = dt_measure(d, cost, model, unit_module[k], it, units, grad_b,
                        opt_b, &u[k], err);
        if (rc != LOOM_OK)
            return rc;
    }
    int32_t want = (int32_t)p_candidates;
    if (want < 1 || want > DT_MAX_CANDIDATES)
        want = want < 1 ? 1 : DT_MAX_CANDIDATES;
    loom_dt_plan best[DT_MAX_CANDIDATES];
    int32_t n_best = 0;
    loom_dt_stats stats;
    double t0 = host->now_ms();
    rc = loom_dt_search(u, &cfg, best, want, &n_best, &stats, err);
    double spent = host->now_ms() - t0;
    if (rc != LOOM_OK)
        return rc;
    host->log(d->ctx, LOOM_LOG_INFO,
              "%lld TP x DP choices, %lld solved, %lld pruned in %.1f ms; "
              "best %.3f ms on %d+%d+%d GPUs",
              (long long)stats.parallelisms, (long long)stats.solved,
              (long long)stats.pruned, spent, best[0].iter_ms,
              best[0].gpus[LOOM_DT_ENC], best[0].gpus[LOOM_DT_LLM],
              best[0].gpus[LOOM_DT_GEN]);
    for (int32_t c = 0; c < n_best; c++) {
        loom_partition *part = NULL;
        rc = set->add(set, &part, err);
        if (rc != LOOM_OK)
            return rc;
        rc = loom_dt_layout(model, unit_module, &best[c], it, units,
                            cfg.global_batch, part, err);
        if (rc != LOOM_OK) {
            set->remove(set, set->n - 1);
            return rc;
        }
    }
    return LOOM_OK;
}

static const loom_partitioner_vtable dt_vtable = {
    { sizeof(loom_partitioner_vtable), LOOM_PARTITIONER_VERSION },
    dt_create,
    dt_destroy,
    dt_partition,
};

/* Returns the partitioner vtable for role "partitioner", else NULL. */
static const loom_role_header *dt_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_PARTITIONER) == 0)
        return &dt_vtable.header;
    return NULL;
}

static const loom_plugin_info dt_info = {
    LOOM_PLUGIN_INFO_HEADER,
    "org.loom.disttrain-alloc",
    "1.0.0",
    NULL,
    NULL,
    dt_role,
    dt_param_table,
};

LOOM_PLUGIN_DEFINE(disttrain_alloc, dt_info);
