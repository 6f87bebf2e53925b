/*
 * optimus_planner.c - the optimus-planner partitioner: Optimus's model
 * planner (Optimus §4.1, Algorithm 1's ModelPlanner) over the backbone
 * plan of the parallel config (TP, PP, DP, VPP).
 *
 * It enumerates encoder plans (PP_enc | PP_llm, TP_enc | TP_llm), drops
 * those over the memory cap (k bytes per parameter of model state, §4.5,
 * plus activations: the encoder's PRE-region microbatches on one stage and
 * the backbone's in-flight microbatches on its first rank, at their most
 * frugal - full recomputation, which the pipeline's memory tuner may
 * choose - so only plans no policy can fit are dropped), and emits
 * candidates for the ranker:
 *
 *   - every TP_enc | TP_llm: an encoder TP group smaller than the
 *     backbone's runs as TP_llm / TP_enc copies side by side inside one
 *     Loom rank (a whole TP group), each on that share of the microbatch
 *     (the graph builder costs it so, from the candidate's layouts): less
 *     TP communication, more encoder state per GPU;
 *   - replicas off (default): one encoder pipeline per backbone pipeline,
 *     PP_enc = PP_llm, colocated stage by stage;
 *   - replicas on: every feasible PP_enc with its m_pp = PP_llm / PP_enc
 *     encoder pipelines as replica flows and the microbatch splits over
 *     them (the most even split, then splits one microbatch away, up to
 *     max_splits), capped at max_candidates. Needs the graph builder's
 *     replica flows (subs 0 = the flow skips that microbatch).
 *
 * Decoders (generators, outside Optimus's scope) join the backbone's layer
 * chain (optimus_layout.h). Costs come from the "loom.cost" service.
 * Params: see manifest.json.
 */
#include <stdio.h>
#include <string.h>
#include <loom/loom.h>
#include "optimus_layout.h"
#include "optimus_plans.h"

#define OPT_MAX_PLANS 64
#define OPT_MAX_PIPES 8

typedef struct opt_self {
    const loom_host_api *host;
    loom_ctx *ctx;
} opt_self;

/* Creates an instance holding the host table and the step context. */
static int opt_create(const loom_host_api *host, loom_ctx *ctx,
                      void *plugin_state, void **self, loom_error *err)
{
    (void)plugin_state;
    opt_self *s = host->alloc(sizeof *s);
    if (!s)
        return host->error(err, LOOM_ENOMEM, "optimus-planner: out of memory");
    s->host = host;
    s->ctx = ctx;
    *self = s;
    return LOOM_OK;
}

/* Releases an instance from opt_create. */
static void opt_destroy(void *self)
{
    opt_self *s = self;
    if (s)
        s->host->free(s);
}

/* What the memory check needs about the model. */
typedef struct opt_sizes {
    double phi_enc, phi_llm;   /* parameters */
    double act_enc[4];         /* encoder activations of one mean microbatch,
                                  all layers, at TP 1 << i, per GPU */
    double act_llm;            /* backbone (+ decoders), all layers, at
                                  TP_llm, per GPU */
} opt_sizes;

/* Measures parameters and activations through the cost service. */
static int opt_measure(opt_self *s, const loom_cost_service *cost,
                       const loom_problem *pb, const loom_iteration *it,
                       int32_t mbs, opt_sizes *z, loom_error *err)
{
    const loom_model *model = pb->model;
    memset(z, 0, sizeof *z);
    for (int32_t m = 0; m < model->n_modules; m++) {
        const loom_module *mod = &model->modules[m];
        int enc = mod->kind == LOOM_MODULE_ENCODER;
        loom_shape shape = LOOM_SHAPE_INIT;
        if (it && it->n_samples > 0) {
            int rc = cost->module_shape(s->ctx, m, it, mbs, -1, 1, &shape, err);
            if (rc != LOOM_OK)
                return rc;
        }
        for (int i = 0; i < (enc ? 4 : 1); i++) {
            shape.tp = enc ? 1 << i : (pb->parallel.tp > 0 ? pb->parallel.tp : 1);
            if (enc && shape.tp > pb->parallel.tp)
                break;
            loom_shape one = shape;
            one.tp = 1;
            for (int32_t l = 0; l < mod->n_layers; l++) {
                loom_layer_cost c = LOOM_LAYER_COST_INIT;
                int rc = LOOM_OK;
                if (i == 0) {
                    rc = cost->layer(s->ctx, m, l, &one, LOOM_POLICY_NONE, &c, err);
                    if (rc != LOOM_OK)
                        return rc;
                    *(enc ? &z->phi_enc : &z->phi_llm) +=
                        (double)c.param_bytes / loom_layer_cost_element_bytes(&c);
                }
                if (shape.tokens <= 0)
                    continue;
                rc = cost->layer(s->ctx, m, l, &shape, LOOM_POLICY_FULL, &c, err);
                if (rc != LOOM_OK)
                    return rc;
                if (enc)
                    z->act_enc[i] += (double)c.activation_bytes;
                else
                    z->act_llm += (double)c.activation_bytes;
            }
        }
    }
    return LOOM_OK;
}

/* Per-GPU memory of plan p when one encoder pipeline holds `most`
 * microbatches in its PRE region. */
static double opt_memory(const loom_problem *pb, const loom_optimus_plan *p,
                         const opt_sizes *z, int32_t most)
{
    int32_t P = pb->parallel.pp, V = pb->parallel.vpp > 0 ? pb->parallel.vpp : 1;
    int32_t M = pb->parallel.microbatches;
    int32_t ti = 0;
    while ((1 << ti) < p->tp && ti < 3)
        ti++;
    double enc = (double)most * z->act_enc[ti] / p->pp;
    /* backbone rank 0 holds its warm-up chunks plus one */
    int32_t warm = V == 1 ? P - 1 : 2 * (P - 1) + (V - 1) * P;
    int32_t inflight = warm + 1 < M * V ? warm + 1 : M * V;
    double llm = z->act_llm * (double)inflight / ((double)P * V);
    return p->state_bytes + enc + llm;
}

/* The next split near-even splits: the even split gives the remainder to
 * the last pipelines (their PRE bubbles are longer); then every move of
 * one microbatch between two pipelines, by (from, to). Writes up to cap
 * splits of m parts into out; returns how many. */
static int32_t opt_splits(int32_t n, int32_t m, int32_t cap, int32_t *out)
{
    if (m < 1 || m > n || cap < 1)
        return 0;
    int32_t k = 0;
    for (int32_t j = 0; j < m; j++)
        out[j] = n / m + (j >= m - n % m);
    k = 1;
    for (int32_t from = m - 1; from >= 0 && k < cap; from--)
        for (int32_t to = 0; to < m && k < cap; to++) {
            if (to == from || out[from] <= 1)
                continue;
            memcpy(out + (size_t)k * m, out, (size_t)m * sizeof *out);
            out[(size_t)k * m + from]--;
            out[(size_t)k * m + to]++;
            k++;
        }
    return k;
}

/* Appends one candidate for plan p with split `parts` (NULL: single). */
static int opt_emit(opt_self *s, const loom_problem *pb,
                    const loom_iteration *it, const loom_optimus_plan *p,
                    const int32_t *parts, int per_layer, loom_candidates *set,
                    loom_error *err)
{
    const loom_model *model = pb->model;
    int32_t M = pb->parallel.microbatches, owner[4096];
    loom_optimus_layout lay = {pb->parallel.pp,
                               pb->parallel.vpp > 0 ? pb->parallel.vpp : 1,
                               p->pp, parts ? p->m_pp : 1, per_layer, M, NULL};
    if (parts) {
        if (M > 4096)
            return s->host->error(err, LOOM_EINVAL,
                                  "optimus-planner: expected at most 4096 "
                                  "microbatches with replicas, found %d", M);
        loom_optimus_deal(M, p->m_pp, parts, owner);
        lay.owner = owner;
    }
    loom_partition *part = NULL;
    int rc = set->add(set, &part, err);
    if (rc != LOOM_OK)
        return rc;
    int32_t nf, np, ns;
    loom_optimus_layout_size(model, &lay, &nf, &np, &ns);
    if (lay.per_layer && (np > part->cap_positions || ns > part->cap_spans))
        lay.per_layer = 0; /* replicas of every layer do not fit: stages */
    rc = loom_optimus_layout_write(model, &lay, it, part, err);
    if (rc != LOOM_OK) {
        set->remove(set, set->n - 1);
        return rc;
    }
    /* the plan's per-module layouts: each encoder at its own TP, PP and
     * DP on the backbone's GPUs (the graph builder costs it at TP_enc,
     * TP_llm / TP_enc copies per backbone rank), the rest the top level */
    if (LOOM_STRUCT_HAS(part, loom_partition, layouts) && part->layouts &&
        part->cap_layouts >= model->n_modules) {
        const loom_parallel *pa = &pb->parallel;
        int32_t cp = loom_parallel_cp(pa);
        int32_t gpus = pa->tp * cp * pa->pp * pa->dp;
        for (int32_t m = 0; m < model->n_modules; m++) {
            int enc = model->modules[m].kind == LOOM_MODULE_ENCODER;
            part->layouts[m] = (loom_module_layout){
                (uint32_t)sizeof(loom_module_layout), enc ? p->tp : pa->tp, cp,
                enc ? p->pp : pa->pp, enc ? p->dp : pa->dp,
                enc ? LOOM_LAYOUT_COLOCATED : LOOM_LAYOUT_TOP, -1, 0, gpus, enc};
        }
        part->n_layouts = model->n_modules;
    }
    int len = snprintf(part->label, sizeof part->label,
                       "optimus enc pp%d tp%d dp%d m%d", p->pp, p->tp, p->dp, p->m);
    for (int32_t j = 0; parts && j < p->m_pp && len > 0 &&
                        len < (int)sizeof part->label - 4; j++)
        len += snprintf(part->label + len, sizeof part->label - (size_t)len,
                        "%s%d", j ? "+" : " split ", parts[j]);
    return LOOM_OK;
}

/* The params, declared once in opt_param_table (manifest.json says the same). */
typedef struct opt_params {
    double bytes_per_param;
    const char *encoder_granularity;
    int replicas;
    int64_t max_splits;
    int64_t max_candidates;
} opt_params;

static const loom_param_def opt_param_table[] = {
    LOOM_FLOAT_PARAM(opt_params, bytes_per_param, 6, 0, 64,
                   "k: model-state bytes per parameter (bf16 weights + fp32 gradients, "
                   "optimizer sharded)"),
    LOOM_ENUM_PARAM(opt_params, encoder_granularity, "layer", "layer|stage",
                   "one position per encoder layer (bubble filling at layer granularity) or "
                   "per encoder stage"),
    LOOM_BOOL_PARAM(opt_params, replicas, 0,
                   "emit plans with several encoder pipelines per backbone pipeline as "
                   "replica flows (needs the graph builder's replica-flow support)"),
    LOOM_INT_PARAM(opt_params, max_splits, 4, 1, 64,
                   "microbatch splits per encoder plan: the most even, then one-microbatch "
                   "moves"),
    LOOM_INT_PARAM(opt_params, max_candidates, 16, 1, 256,
                   "candidates emitted at most"),
    LOOM_PARAM_END};

/* Enumerates encoder plans and splits and appends the candidates. */
static int opt_partition(void *self, const loom_problem *problem,
                         const loom_iteration *it, loom_candidates *set,
                         loom_error *err)
{
    opt_self *s = self;
    const loom_host_api *host = s->host;
    if (problem->kind != LOOM_PROBLEM_MODEL || !problem->model)
        return host->error(err, LOOM_DECLINED,
                           "optimus-planner: only model problems are partitioned");
    const loom_model *model = problem->model;
    int32_t backbones = 0;
    for (int32_t m = 0; m < model->n_modules; m++)
        backbones += model->modules[m].kind == LOOM_MODULE_BACKBONE;
    if (backbones != 1)
        return host->error(err, LOOM_EINVAL,
                           "optimus-planner: expected one backbone module, "
                           "found %d", backbones);
    const loom_parallel *par = &problem->parallel;
    if (par->pp < 1 || par->tp < 1 || par->microbatches < 1)
        return host->error(err, LOOM_EINVAL,
                           "optimus-planner: parallel.tp, pp and microbatches: "
                           "expected >= 1, found %d, %d and %d",
                           par->tp, par->pp, par->microbatches);
    const loom_cost_service *cost = loom_host_cost(host, s->ctx);
    if (!cost)
        return host->error(err, LOOM_ENOTFOUND,
                           "optimus-planner: the \"%s\" service is not available",
                           LOOM_SERVICE_COST);
    opt_sizes z;
    int rc = opt_measure(s, cost, problem, it, par->microbatches, &z, err);
    if (rc != LOOM_OK)
        return rc;
    opt_params prm;
    if ((rc = loom_params_read(host, s->ctx, "optimus-planner", opt_param_table, &prm, err)))
        return rc;
    double k = prm.bytes_per_param;
    int replicas = prm.replicas;
    int per_layer = strcmp(prm.encoder_granularity, "stage") != 0;
    int32_t max_splits = (int32_t)prm.max_splits;
    int32_t max_cand = (int32_t)prm.max_candidates;
    double cap = problem->memory_cap_bytes > 0 ? problem->memory_cap_bytes
                 : problem->cluster ? (double)problem->cluster->hbm_bytes
                                    : 0;

    loom_optimus_plan plans[OPT_MAX_PLANS];
    int32_t n = loom_optimus_enc_plans(par->pp, par->tp, par->dp > 0 ? par->dp : 1,
                                       k, z.phi_enc, z.phi_llm, plans, OPT_MAX_PLANS);
    n = n < OPT_MAX_PLANS ? n : OPT_MAX_PLANS;
    int32_t emitted = 0, feasible = 0, M = par->microbatches;
    double least = -1;
    for (int32_t i = 0; i < n && emitted < max_cand; i++) {
        const loom_optimus_plan *p = &plans[i];
        if (!replicas && p->pp != par->pp)
            continue;
        if (replicas && p->m_pp > OPT_MAX_PIPES)
            continue;
        int32_t splits[64 * OPT_MAX_PIPES];
        int32_t pipes = replicas ? p->m_pp : 1;
        int32_t ns = replicas ? opt_splits(M, pipes, max_splits < 64 ? max_splits : 64,
                                           splits)
                              : 1;
        if (!replicas)
            splits[0] = M;
        for (int32_t j = 0; j < ns && emitted < max_cand; j++) {
            int32_t most = 0;
            for (int32_t q = 0; q < pipes; q++)
                most = splits[j * pipes + q] > most ? splits[j * pipes + q] : most;
            double mem = opt_memory(problem, p, &z, most);
            least = least < 0 || mem < least ? mem : least;
            if (cap > 0 && mem > cap)
                continue;
            feasible++;
            rc = opt_emit(s, problem, it, p, replicas ? &splits[j * pipes] : NULL,
                          per_layer, set, err);
            if (rc != LOOM_OK)
                return rc;
            emitted++;
        }
    }
    if (emitted == 0)
        return host->error(err, LOOM_EINFEASIBLE,
                           "optimus-planner: no encoder plan fits the memory "
                           "cap: the least needs %.4g bytes per GPU, the cap is "
                           "%.4g (%d plans, %s)", least, cap, n,
                           replicas ? "with replicas" : "PP_enc = PP_llm");
    host->log(s->ctx, LOOM_LOG_INFO,
              "%d encoder plans, %d feasible choices, %d candidates "
              "(phi_enc %.3g, phi_llm %.3g)",
              n, feasible, emitted, z.phi_enc, z.phi_llm);
    return LOOM_OK;
}

static const loom_partitioner_vtable opt_vtable = {
    { sizeof(loom_partitioner_vtable), LOOM_PARTITIONER_VERSION },
    opt_create,
    opt_destroy,
    opt_partition,
};

/* Returns the partitioner vtable for role "partitioner", else NULL. */
static const loom_role_header *opt_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_PARTITIONER) == 0)
        return &opt_vtable.header;
    return NULL;
}

static const loom_plugin_info opt_info = {
    LOOM_PLUGIN_INFO_HEADER,
    "org.loom.optimus-planner",
    "1.0.0",
    NULL,
    NULL,
    opt_role,
    opt_param_table,
};

LOOM_PLUGIN_DEFINE(optimus_planner, opt_info);
