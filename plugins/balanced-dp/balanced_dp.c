/*
 * balanced_dp.c - the Megatron-LM "balanced" partitioner (Optimus
 * appendix B): the uniform layout of S = pp * vpp positions (position s on
 * rank s % pp, or the V / zig-zag placement of params.placement), with cut
 * points chosen by a min-max dynamic programme over
 * per-layer times so the slowest position is as fast as possible.
 *
 * Per-layer times are forward + backward of the mean microbatch from the
 * "loom.cost" service. By default (params.reference "workload") the mean
 * is taken over every iteration the run plans (loom_problem.iterations),
 * so the split is the same for all of them, as a real run splits its
 * layers once on representative data; "iteration" re-splits on each
 * iteration's own mean, which no real run can. With params.balance
 * "params" the programme balances each layer's parameters instead (from
 * the cost service's param_bytes at TP 1), the split PipeWeaver §8
 * describes for its Megatron-LM baseline, which does not move with the
 * data. Data assignment is the same as the uniform partitioner's: the
 * workload's packing or an even split.
 * With the vpp_sweep param, one candidate per virtual-stage count a
 * Megatron-LM user can choose (loom_lk_vpp_options).
 * With balance "time" the min-max split is then refined by simulation
 * (params.refine_evaluations, loom_lk_refine_split): boundary layers of
 * the heaviest position move one at a time while the pipeline's own
 * interleaver, memory tuner and simulator (loom.partition_eval) score the
 * split better, as PyTorch's pipeline auto-partitioner does (pytorch PR
 * #179212). Splits are scored on the run's first iteration (reference
 * "workload": one split for every iteration, computed once and kept) or
 * on the iteration planned (reference "iteration").
 */
#include <float.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <loom/loom.h>
#include <loom/kits/layout.h>
#include "balanced_dp.h"

/* Number of (m, l) cells of the DP tables. */
static size_t bdp_cells(int32_t n_layers, int32_t n_stages)
{
    return (size_t)n_stages * ((size_t)n_layers + 1);
}

/* Scratch bytes of the DP: prefix sums, F table and argmin table. */
size_t loom_balanced_dp_scratch_bytes(int32_t n_layers, int32_t n_stages)
{
    if (n_layers < 0 || n_stages < 1)
        return 0;
    size_t cells = bdp_cells(n_layers, n_stages);
    return ((size_t)n_layers + 1) * sizeof(double) + cells * sizeof(double) +
           cells * sizeof(int32_t);
}

/* Runs the min-max DP and reconstructs the run lengths (see header). */
int loom_balanced_dp_split(const double *layer_ms, int32_t n_layers,
                           int32_t n_stages, void *scratch, int32_t *sizes,
                           double *bottleneck_ms)
{
    if (n_stages < 1 || n_layers < n_stages)
        return LOOM_EINVAL;
    size_t row = (size_t)n_layers + 1;
    double *pre = scratch;                  /* prefix sums, row entries */
    double *best = pre + row;               /* best[(m-1)*row + l] = F(l,m) */
    int32_t *arg = (int32_t *)(best + bdp_cells(n_layers, n_stages));

    pre[0] = 0.0;
    for (int32_t l = 1; l <= n_layers; l++)
        pre[l] = pre[l - 1] + layer_ms[l - 1];
    for (int32_t l = 0; l <= n_layers; l++) {
        best[l] = pre[l];
        arg[l] = 0;
    }
    for (int32_t m = 2; m <= n_stages; m++) {
        const double *prev = best + (size_t)(m - 2) * row;
        double *cur = best + (size_t)(m - 1) * row;
        int32_t *cur_arg = arg + (size_t)(m - 1) * row;
        /* Leave at least one layer for every later stage. */
        int32_t last = n_layers - (n_stages - m);
        for (int32_t l = m; l <= last; l++) {
            double f = DBL_MAX;
            int32_t fj = m - 1;
            for (int32_t j = m - 1; j < l; j++) {
                double tail = pre[l] - pre[j];
                double v = prev[j] > tail ? prev[j] : tail;
                if (v < f) {
                    f = v;
                    fj = j;
                }
            }
            cur[l] = f;
            cur_arg[l] = fj;
        }
    }
    int32_t l = n_layers;
    for (int32_t m = n_stages; m >= 2; m--) {
        int32_t j = arg[(size_t)(m - 1) * row + (size_t)l];
        sizes[m - 1] = l - j;
        l = j;
    }
    sizes[0] = l;
    *bottleneck_ms = best[(size_t)(n_stages - 1) * row + (size_t)n_layers];
    return LOOM_OK;
}

#define BDP_CACHE 32 /* refined splits kept, one per vpp (loom_lk_vpp_candidates' cap) */

/* A refined split of the run (reference "workload"), kept for later
 * iterations: the same weights and vpp give the same search. */
typedef struct bdp_cached {
    int32_t vpp;
    int32_t *sizes; /* pp * vpp run lengths */
    int32_t moves;
    loom_lk_split_score initial, best;
} bdp_cached;

typedef struct bdp_self {
    const loom_host_api *host;
    loom_ctx *ctx;
    int64_t refine_evals; /* params.refine_evaluations */
    int64_t refine_mbs;   /* params.refine_microbatches */
    pthread_mutex_t lock; /* guards the cache below */
    double *cache_weight; /* the layer weights the cached splits refine */
    int32_t cache_layers, n_cached;
    bdp_cached cached[BDP_CACHE];
    int vpp_sweep; /* 1: a candidate per loom_lk_vpp_options */
    const char *placement; /* params.placement */
    int by_params; /* params.balance == "params" */
    int per_iteration; /* params.reference == "iteration" */
} bdp_self;

/* The params, declared once in bdp_param_table (manifest.json says the same). */
typedef struct bdp_params {
    int vpp_sweep;
    const char *placement;
    const char *balance;
    int64_t refine_evaluations;
    int64_t refine_microbatches;
    const char *reference;
} bdp_params;

static const loom_param_def bdp_param_table[] = {
    LOOM_LK_VPP_SWEEP_PARAM(bdp_params, vpp_sweep),
    LOOM_ENUM_PARAM(bdp_params, placement, "loop", "loop|v|zigzag",
                   "position-to-rank map, as the uniform partitioner's: loop (rank s % pp), "
                   "zigzag (odd chunks backwards), v (zigzag with vpp = 2); the cut points "
                   "balance positions whichever placement"),
    LOOM_ENUM_PARAM(bdp_params, balance, "time", "time|params",
                   "what the cut points balance: time (each layer's forward + backward on the "
                   "mean microbatch, Optimus appendix B) or params (each layer's parameters, "
                   "the split PipeWeaver section 8 gives its Megatron-LM baseline; it does "
                   "not move with the data)"),
    LOOM_INT_PARAM(bdp_params, refine_evaluations, 64, 0, 100000,
                   "with balance time, simulations the split's refinement may spend: from the "
                   "min-max split, boundary layers of the heaviest position move one at a "
                   "time to a neighbour, each move kept when the pipeline's own interleaver, "
                   "memory tuner and simulator (the loom.partition_eval service) give the "
                   "split fewer ranks over the memory cap or a shorter makespan (PyTorch's "
                   "pipeline auto-partitioner, pytorch/pytorch PR #179212); the best split "
                   "found within the budget is kept. 0: the min-max split as it is"),
    LOOM_INT_PARAM(bdp_params, refine_microbatches, 512, 0, 1 << 23,
                   "with more microbatches than this, the refinement scores splits on the "
                   "reference iteration's first this many (rounded down to a multiple of pp), "
                   "and the refined split is kept only when the whole iteration finds it no "
                   "worse than the min-max split; 0: always the whole iteration"),
    LOOM_ENUM_PARAM(bdp_params, reference, "workload", "workload|iteration",
                   "with balance time, whose mean microbatch the split balances: workload "
                   "(the mean over every iteration the run plans, one split for all of them, "
                   "as a real run splits once on representative data; PipeWeaver section 8.1 "
                   "gives its nnScaler baseline a static plan from a representative workload) "
                   "or iteration (each iteration's own mean, a re-split per iteration that no "
                   "real run can make)"),
    LOOM_PARAM_END};

/* Creates an instance holding the host table and the step context. */
static int bdp_create(const loom_host_api *host, loom_ctx *ctx,
                      void *plugin_state, void **self, loom_error *err)
{
    (void)plugin_state;
    /* a host without the params (a bare mock) gives the table's defaults */
    bdp_params prm;
    int rc = loom_params_read(host, ctx, "balanced-dp", bdp_param_table, &prm, err);
    if (rc != LOOM_OK)
        return rc;
    bdp_self *b = host->alloc(sizeof *b);
    if (!b)
        return host->error(err, LOOM_ENOMEM, "balanced-dp: out of memory");
    b->host = host;
    b->ctx = ctx;
    b->vpp_sweep = prm.vpp_sweep;
    b->placement = prm.placement;
    b->refine_evals = prm.refine_evaluations;
    b->refine_mbs = prm.refine_microbatches;
    b->cache_weight = NULL;
    b->cache_layers = b->n_cached = 0;
    pthread_mutex_init(&b->lock, NULL);
    b->by_params = strcmp(prm.balance, "params") == 0;
    b->per_iteration = strcmp(prm.reference, "iteration") == 0;
    *self = b;
    return LOOM_OK;
}

/* Empties the cache of refined splits (caller holds the lock). */
static void bdp_cache_clear(bdp_self *b)
{
    for (int32_t i = 0; i < b->n_cached; i++)
        b->host->free(b->cached[i].sizes);
    b->host->free(b->cache_weight);
    b->cache_weight = NULL;
    b->n_cached = b->cache_layers = 0;
}

/* Releases an instance from bdp_create. */
static void bdp_destroy(void *self)
{
    bdp_self *b = self;
    if (!b)
        return;
    bdp_cache_clear(b);
    pthread_mutex_destroy(&b->lock);
    b->host->free(b);
}

/* Forward + backward ms of every layer (module order) for the run's mean
 * microbatch (loom.cost run_module_shape, `it` when the run lists one
 * iteration): one shape per module, costed once per layer. */
static int bdp_run_ms(bdp_self *b, const loom_cost_service *cost, const loom_model *model,
                      const loom_iteration *it, int32_t microbatches, double *weight,
                      loom_error *err)
{
    int32_t k = 0;
    for (int32_t m = 0; m < model->n_modules; m++) {
        loom_shape shape = LOOM_SHAPE_INIT;
        int rc = cost->run_module_shape(b->ctx, m, it, microbatches, &shape, err);
        if (rc != LOOM_OK)
            return rc;
        for (int32_t l = 0; l < model->modules[m].n_layers; l++) {
            double w = 0.0;
            if (shape.tokens > 0) {
                shape.trainable_upstream = loom_layer_trainable_upstream(model, m, l);
                loom_layer_cost c = LOOM_LAYER_COST_INIT;
                rc = cost->layer(b->ctx, m, l, &shape, LOOM_POLICY_NONE, &c, err);
                if (rc != LOOM_OK)
                    return rc;
                w = c.forward_ms + c.input_grad_ms + c.weight_grad_ms;
            }
            weight[k++] = w;
        }
    }
    return LOOM_OK;
}

/* Fills weight[] (all layers in module order) with what the split
 * balances: each layer's forward + backward ms on the mean microbatch of
 * the run's iterations (run_module_shape; of `it` alone, by mean_layer_ms,
 * with reference "iteration" or when the host lists under two), or with
 * by_params its parameters (bytes at TP 1 over the element size; the same
 * for every microbatch). */
static int bdp_layer_weights(bdp_self *b, const loom_problem *problem,
                             const loom_iteration *it, double *weight, loom_error *err)
{
    const loom_host_api *host = b->host;
    const loom_model *model = problem->model;
    int32_t microbatches = problem->parallel.microbatches;
    /* one iteration listed (or none, on an older host): its own mean is
     * the run's, so mean_layer_ms serves as it did */
    int32_t n_its = 0;
    int run_wide = !b->per_iteration && !b->by_params &&
                   loom_problem_iterations(problem, &n_its) && n_its > 1;
    const loom_cost_service *cost = loom_host_cost(host, b->ctx);
    int complete = b->by_params ? LOOM_COST_HAS(cost, layer)
                   : run_wide   ? LOOM_COST_HAS(cost, run_module_shape) && cost->layer
                                : LOOM_COST_HAS(cost, mean_layer_ms);
    const char *needs = b->by_params ? "layer"
                        : run_wide   ? "run_module_shape and layer"
                                     : "mean_layer_ms";
    if (!complete)
        return host->error(err, LOOM_ENOTFOUND,
                           "balanced-dp: needs the \"%s\" service with "
                           "%s (a cost_model step before it)",
                           LOOM_SERVICE_COST, needs);
    int rc = LOOM_OK;
    if (run_wide) {
        rc = bdp_run_ms(b, cost, model, it, microbatches, weight, err);
    } else {
        int32_t k = 0;
        loom_shape one = LOOM_SHAPE_INIT;
        one.tp = 1;
        for (int32_t m = 0; rc == LOOM_OK && m < model->n_modules; m++)
            for (int32_t l = 0; rc == LOOM_OK && l < model->modules[m].n_layers; l++) {
                if (b->by_params) {
                    loom_layer_cost c = LOOM_LAYER_COST_INIT;
                    rc = cost->layer(b->ctx, m, l, &one, LOOM_POLICY_NONE, &c, err);
                    weight[k] = (double)c.param_bytes / loom_layer_cost_element_bytes(&c);
                } else {
                    rc = cost->mean_layer_ms(b->ctx, m, l, it, microbatches, &weight[k], err);
                }
                k++;
            }
    }
    if (rc != LOOM_OK)
        return rc;
    int32_t k = 0;
    for (int32_t m = 0; m < model->n_modules; m++)
        for (int32_t l = 0; l < model->modules[m].n_layers; l++, k++)
            if (!(weight[k] >= 0.0) || weight[k] > DBL_MAX)
                return host->error(err, LOOM_EINVAL,
                                   "balanced-dp: %s of module %s layer %d: "
                                   "expected a finite value >= 0, found %g",
                                   b->by_params ? "parameters" : "cost",
                                   model->modules[m].name, l, weight[k]);
    return LOOM_OK;
}

/* Where a split is scored: the iteration, a scratch partition with room
 * for its samples, and the service that builds and simulates it. */
typedef struct bdp_scorer {
    bdp_self *b;
    const loom_problem *problem;
    const loom_iteration *it;
    const loom_partition_eval_service *pe;
    loom_partition *part;
    int32_t np;
    int32_t microbatches; /* of it */
} bdp_scorer;

/* Lays the split out as the candidate would be and simulates it; a split
 * the pipeline finds infeasible scores worst. */
static int bdp_score(void *user, const int32_t *sizes, loom_lk_split_score *out,
                     loom_error *err)
{
    bdp_scorer *sc = user;
    bdp_self *b = sc->b;
    const loom_host_api *host = b->host;
    const loom_model *model = sc->problem->model;
    int32_t pp = sc->problem->parallel.pp;
    int rc = loom_lk_layout(host, "balanced-dp", model, pp, sc->np, sizes, sc->part, err);
    if (rc == LOOM_OK)
        rc = loom_lk_place(host, "balanced-dp", b->placement, pp, sc->part, err);
    if (rc == LOOM_OK)
        rc = loom_lk_assign_samples(host, "balanced-dp", model, sc->it, sc->microbatches,
                                    sc->part, err);
    loom_metrics m = LOOM_METRICS_INIT;
    if (rc == LOOM_OK)
        rc = sc->pe->evaluate(b->ctx, sc->it, sc->part, &m, err);
    if (rc == LOOM_EINFEASIBLE) {
        *out = (loom_lk_split_score){INT32_MAX, DBL_MAX};
        return LOOM_OK;
    }
    if (rc == LOOM_OK)
        *out = (loom_lk_split_score){m.cap_violations, m.makespan_ms};
    return rc;
}

/* 1 once the step's time is up (SIGINT). */
static int bdp_stop(void *user)
{
    bdp_scorer *sc = user;
    return sc->b->host->expired(sc->b->ctx);
}

/* The cached refinement of `vpp` when the cache holds the splits of these
 * weights (caller holds the lock); NULL otherwise. */
static const bdp_cached *bdp_cache_find(bdp_self *b, const double *weight, int32_t n_layers,
                                        int32_t vpp)
{
    if (!b->cache_weight || b->cache_layers != n_layers ||
        memcmp(b->cache_weight, weight, (size_t)n_layers * sizeof *weight))
        return NULL;
    for (int32_t i = 0; i < b->n_cached; i++)
        if (b->cached[i].vpp == vpp)
            return &b->cached[i];
    return NULL;
}

/* Keeps a refined split for later iterations of the run (best effort:
 * out of memory keeps nothing). */
static void bdp_cache_put(bdp_self *b, const double *weight, int32_t n_layers,
                          const bdp_cached *c, int32_t np)
{
    pthread_mutex_lock(&b->lock);
    if (!b->cache_weight || b->cache_layers != n_layers ||
        memcmp(b->cache_weight, weight, (size_t)n_layers * sizeof *weight)) {
        bdp_cache_clear(b);
        b->cache_weight = b->host->alloc((size_t)n_layers * sizeof *weight);
        if (b->cache_weight) {
            memcpy(b->cache_weight, weight, (size_t)n_layers * sizeof *weight);
            b->cache_layers = n_layers;
        }
    }
    if (b->cache_weight && b->n_cached < BDP_CACHE &&
        !bdp_cache_find(b, weight, n_layers, c->vpp)) {
        bdp_cached *slot = &b->cached[b->n_cached];
        *slot = *c;
        slot->sizes = b->host->alloc((size_t)np * sizeof *slot->sizes);
        if (slot->sizes) {
            memcpy(slot->sizes, c->sizes, (size_t)np * sizeof *slot->sizes);
            b->n_cached++;
        }
    }
    pthread_mutex_unlock(&b->lock);
}

/* The samples of it's first k microbatches (of `microbatches`) as an
 * iteration of their own, in samples[] (room for it->n_samples): each
 * with the microbatch loom_lk_assign_samples gives it (the workload's,
 * else the even split's), the later ones dropped. */
static loom_iteration bdp_first_microbatches(const loom_iteration *it, int32_t microbatches,
                                             int32_t k, loom_sample *samples)
{
    int32_t n = 0;
    for (int32_t i = 0; i < it->n_samples; i++) {
        int32_t mb = it->samples[i].microbatch;
        if (mb < 0)
            mb = (int32_t)((int64_t)i * microbatches / it->n_samples);
        if (mb >= k)
            continue;
        samples[n] = it->samples[i];
        samples[n++].microbatch = mb;
    }
    return (loom_iteration){it->index, n, samples};
}

/* A split refined on the first microbatches is scored with the min-max
 * split `start` on the whole iteration `ref`, and kept only when it is
 * no worse there; else sizes and r go back to the min-max split. */
static int bdp_confirm(bdp_self *b, const loom_problem *problem, const loom_iteration *ref,
                       const loom_partition_eval_service *pe, int32_t np, const int32_t *start,
                       int32_t *sizes, loom_lk_refine *r, loom_error *err)
{
    const loom_host_api *host = b->host;
    bdp_scorer whole = {b, problem, ref, pe, NULL, np, problem->parallel.microbatches};
    whole.part = loom_lk_partition_new(host, problem, np, ref->n_samples);
    if (!whole.part)
        return host->error(err, LOOM_ENOMEM, "balanced-dp: out of memory for %d samples",
                           ref->n_samples);
    loom_lk_split_score was, now;
    int rc = bdp_score(&whole, start, &was, err);
    if (rc == LOOM_OK)
        rc = bdp_score(&whole, sizes, &now, err);
    loom_lk_partition_free(host, whole.part);
    if (rc != LOOM_OK)
        return rc;
    r->evaluations += 2;
    int worse = now.cap_violations > was.cap_violations ||
                (now.cap_violations == was.cap_violations && now.makespan_ms > was.makespan_ms);
    host->log(b->ctx, LOOM_LOG_INFO,
              "the whole iteration: min-max split %.6g ms, refined %.6g ms: %s",
              was.makespan_ms, now.makespan_ms, worse ? "min-max kept" : "refined kept");
    r->initial = was;
    r->best = worse ? was : now;
    if (worse) {
        memcpy(sizes, start, (size_t)np * sizeof *sizes);
        r->moves = 0;
    }
    return LOOM_OK;
}

/* Refines the min-max split sizes[np] by simulation (see the file
 * comment) within params.refine_evaluations; *moves gets the layer moves
 * kept. Without the loom.partition_eval service (a host that has none, no
 * plan running) the split stays as it is. */
static int bdp_refine(bdp_self *b, const loom_problem *problem, const loom_iteration *iteration,
                      const double *weight, int32_t n_layers, int32_t vpp, int32_t *sizes,
                      int32_t *moves, loom_error *err)
{
    const loom_host_api *host = b->host;
    int32_t np = problem->parallel.pp * vpp;
    *moves = 0;
    const loom_partition_eval_service *pe = loom_host_partition_eval(host);
    if (b->by_params || b->refine_evals < 1 || !pe)
        return LOOM_OK;
    int32_t n_its = 0;
    const loom_iteration *its = loom_problem_iterations(problem, &n_its);
    int run_wide = !b->per_iteration && its && n_its > 1;
    const loom_iteration *ref = run_wide ? &its[0] : iteration;
    if (!ref)
        return LOOM_OK;
    if (run_wide) {
        pthread_mutex_lock(&b->lock);
        const bdp_cached *c = bdp_cache_find(b, weight, n_layers, vpp);
        if (c) {
            memcpy(sizes, c->sizes, (size_t)np * sizeof *sizes);
            *moves = c->moves;
        }
        pthread_mutex_unlock(&b->lock);
        if (c)
            return LOOM_OK;
    }
    /* many microbatches: score on the first few (see params) */
    int32_t mbs = problem->parallel.microbatches, pp = problem->parallel.pp;
    int32_t few = b->refine_mbs > 0 && b->refine_mbs < mbs ? (int32_t)b->refine_mbs : mbs;
    few = few < mbs ? few - few % pp : mbs;
    few = few < pp ? (pp < mbs ? pp : mbs) : few;
    loom_sample *kept = NULL;
    loom_iteration head = *ref;
    if (few < mbs) {
        kept = host->alloc((size_t)(ref->n_samples > 0 ? ref->n_samples : 1) * sizeof *kept);
        if (!kept)
            return host->error(err, LOOM_ENOMEM, "balanced-dp: out of memory for %d samples",
                               ref->n_samples);
        head = bdp_first_microbatches(ref, mbs, few, kept);
    }
    bdp_scorer sc = {b, problem, &head, pe, NULL, np, few};
    sc.part = loom_lk_partition_new(host, problem, np, head.n_samples);
    int32_t *order = host->alloc((size_t)np * sizeof *order);
    double *load = host->alloc((size_t)np * sizeof *load);
    int32_t *start = host->alloc((size_t)np * sizeof *start);
    int rc = LOOM_OK;
    if (!sc.part || !order || !load || !start)
        rc = host->error(err, LOOM_ENOMEM, "balanced-dp: out of memory refining %d positions", np);
    loom_lk_refine r = {0};
    r.max_evaluations = b->refine_evals > INT32_MAX ? INT32_MAX : (int32_t)b->refine_evals;
    r.score = bdp_score;
    r.stop = bdp_stop;
    r.user = &sc;
    if (rc == LOOM_OK) {
        memcpy(start, sizes, (size_t)np * sizeof *sizes);
        rc = loom_lk_refine_split(weight, np, sizes, order, load, &r, err);
        if (rc == LOOM_ENOTFOUND && r.evaluations <= 1) { /* no plan running: keep the DP's */
            host->log(b->ctx, LOOM_LOG_DEBUG, "split not refined: %s", err->message);
            memcpy(sizes, start, (size_t)np * sizeof *sizes);
            rc = LOOM_OK;
            r.evaluations = 0;
        }
    }
    if (rc == LOOM_OK && r.evaluations > 0 && r.moves > 0 && few < mbs)
        rc = bdp_confirm(b, problem, ref, pe, np, start, sizes, &r, err);
    if (rc == LOOM_OK && r.evaluations > 0) {
        *moves = r.moves;
        host->log(b->ctx, LOOM_LOG_INFO,
                  "vpp %d: %d simulations of %d microbatches moved %d layers: makespan %.6g -> "
                  "%.6g ms on iteration %d", vpp, r.evaluations, few, r.moves,
                  r.initial.makespan_ms, r.best.makespan_ms, ref->index);
        if (run_wide) {
            bdp_cached c = {vpp, sizes, r.moves, r.initial, r.best};
            bdp_cache_put(b, weight, n_layers, &c, np);
        }
    }
    host->free(kept);
    host->free(start);
    host->free(load);
    host->free(order);
    loom_lk_partition_free(host, sc.part);
    return rc;
}

/* Computes the balanced cut points of the layers' weights (n_layers of
 * them, module order) into pp * vpp positions and appends them as one
 * candidate. */
static int bdp_one(bdp_self *b, const loom_problem *problem, const loom_iteration *iteration,
                   const double *weight, int32_t n_layers, int32_t vpp, loom_candidates *set,
                   loom_error *err)
{
    const loom_host_api *host = b->host;
    const loom_model *model = problem->model;
    int32_t pp = problem->parallel.pp;
    int32_t mbs = problem->parallel.microbatches;
    int64_t n_pos = (int64_t)pp * vpp;
    if (n_layers < n_pos)
        return host->error(err, LOOM_EINVAL,
                           "balanced-dp: the model has %d layers, fewer "
                           "than the %lld positions (pp %d x vpp %d); every "
                           "position needs at least one layer",
                           n_layers, (long long)n_pos, pp, vpp);
    int32_t np = (int32_t)n_pos;
    int32_t *sizes = host->alloc((size_t)np * sizeof *sizes);
    void *scratch = host->alloc(loom_balanced_dp_scratch_bytes(n_layers, np));
    int rc = LOOM_OK;
    double bottleneck_ms = 0.0;
    loom_partition *part = NULL;
    if (!sizes || !scratch)
        rc = host->error(err, LOOM_ENOMEM, "balanced-dp: out of memory for "
                         "%d layers x %d positions", n_layers, np);
    int32_t moves = 0;
    if (rc == LOOM_OK)
        rc = loom_balanced_dp_split(weight, n_layers, np, scratch, sizes, &bottleneck_ms);
    if (rc == LOOM_OK)
        rc = bdp_refine(b, problem, iteration, weight, n_layers, vpp, sizes, &moves, err);
    if (rc == LOOM_OK && moves > 0) { /* the refined split's largest position */
        bottleneck_ms = 0;
        for (int32_t s = 0, k = 0; s < np; s++) {
            double load = 0;
            for (int32_t i = 0; i < sizes[s]; i++)
                load += weight[k++];
            bottleneck_ms = load > bottleneck_ms ? load : bottleneck_ms;
        }
    }
    if (rc == LOOM_OK)
        rc = set->add(set, &part, err);
    if (rc == LOOM_OK)
        rc = loom_lk_layout(host, "balanced-dp", model, pp, np, sizes, part, err);
    if (rc == LOOM_OK)
        rc = loom_lk_place(host, "balanced-dp", b->placement, pp, part, err);
    if (rc == LOOM_OK)
        rc = loom_lk_assign_samples(host, "balanced-dp", model, iteration, mbs, part, err);
    if (rc == LOOM_OK) {
        const char *pl = strcmp(b->placement, "loop") ? b->placement : "";
        if (b->by_params)
            snprintf(part->label, sizeof part->label,
                     "balanced-dp pp=%d vpp=%d%s%s max=%.3g params", pp, vpp,
                     *pl ? " " : "", pl, bottleneck_ms);
        else if (moves > 0)
            snprintf(part->label, sizeof part->label,
                     "balanced-dp pp=%d vpp=%d%s%s max=%.3gms %d moves", pp, vpp,
                     *pl ? " " : "", pl, bottleneck_ms, moves);
        else
            snprintf(part->label, sizeof part->label, "balanced-dp pp=%d vpp=%d%s%s max=%.3gms",
                     pp, vpp, *pl ? " " : "", pl, bottleneck_ms);
        host->log(b->ctx, LOOM_LOG_DEBUG, "largest of %d positions: %.6g %s", np,
                  bottleneck_ms, b->by_params ? "parameters" : "ms");
    } else if (part) {
        set->remove(set, set->n - 1);
    }
    host->free(scratch);
    host->free(sizes);
    return rc;
}

/* Appends the balanced candidate at parallel.vpp, or with vpp_sweep one
 * per loom_lk_vpp_options; the layers' weights are the same for every
 * vpp. Declines stage-times problems. */
static int bdp_partition(void *self, const loom_problem *problem,
                         const loom_iteration *iteration,
                         loom_candidates *set, loom_error *err)
{
    bdp_self *b = self;
    const loom_host_api *host = b->host;
    if (problem->kind != LOOM_PROBLEM_MODEL || !problem->model)
        return host->error(err, LOOM_DECLINED,
                           "balanced-dp: only model problems are partitioned");
    int32_t pp = problem->parallel.pp;
    int32_t mbs = problem->parallel.microbatches;
    if (pp < 1 || mbs < 1)
        return host->error(err, LOOM_EINVAL,
                           "balanced-dp: parallel.pp and "
                           "parallel.microbatches: expected >= 1, found %d "
                           "and %d", pp, mbs);
    int64_t n_layers = 0;
    for (int32_t m = 0; m < problem->model->n_modules; m++)
        n_layers += problem->model->modules[m].n_layers;
    if (n_layers < 1 || n_layers > INT32_MAX - 1)
        return host->error(err, LOOM_EINVAL,
                           "balanced-dp: the model has %lld layers: expected 1 .. %d",
                           (long long)n_layers, INT32_MAX - 1);
    int32_t nl = (int32_t)n_layers;
    double *weight = host->alloc((size_t)nl * sizeof *weight);
    if (!weight)
        return host->error(err, LOOM_ENOMEM, "balanced-dp: out of memory for %d layers", nl);
    int rc = bdp_layer_weights(b, problem, iteration, weight, err);
    int32_t vpps[32];
    int32_t n = rc == LOOM_OK ? loom_lk_vpp_candidates(problem, b->vpp_sweep, vpps, 32) : 0;
    for (int32_t i = 0; rc == LOOM_OK && i < n; i++)
        rc = bdp_one(b, problem, iteration, weight, nl, vpps[i], set, err);
    host->free(weight);
    return rc;
}

static const loom_partitioner_vtable bdp_vtable = {
    { sizeof(loom_partitioner_vtable), LOOM_PARTITIONER_VERSION },
    bdp_create,
    bdp_destroy,
    bdp_partition,
};

/* Returns the partitioner vtable for role "partitioner", else NULL. */
static const loom_role_header *bdp_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_PARTITIONER) == 0)
        return &bdp_vtable.header;
    return NULL;
}

static const loom_plugin_info bdp_info = {
    LOOM_PLUGIN_INFO_HEADER,
    "org.loom.balanced-dp",
    "1.0.0",
    NULL,
    NULL,
    bdp_role,
    bdp_param_table,
};

LOOM_PLUGIN_DEFINE(balanced_dp, bdp_info);
