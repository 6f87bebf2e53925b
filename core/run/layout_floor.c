/* layout_floor.c - what a layout costs at least, priced by the session's
 * cost model before anything is partitioned or simulated: the compute of
 * every layer over the iteration's microbatches, the forward of the
 * smallest microbatch, and the static bytes (weights, gradients, optimizer
 * states). `loom tune` prunes layouts with it (docs/tune.md). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cost_rules.h"
#include "pipeline.h"
#include "services.h"
#include "shape.h"
#include <loom/sys/problem.h>
#include <loom/sys/session.h>
#include "run_priv.h"

void loom_layout_floor_clear(loom_layout_floor *f)
{
    if (!f)
        return;
    free(f->layer_work_ms);
    free(f->layer_head_ms);
    memset(f, 0, sizeof *f);
}

/* How one module is priced: its TP, CP and DP (0: the problem's), and
 * the data-parallel copies it runs on a wider rank (loom_module_layout;
 * docs/cost-models.md, "Per-module layouts"). */
typedef struct module_pricing {
    int32_t tp, cp, dp;
    int32_t reps;
    int32_t set;      /* 0: the top-level GPUs; 1 + d: disjoint module d's */
} module_pricing;

/* The mean and the component-wise smallest shape of the module's
 * microbatches in iteration `it`, each of `reps` copies' share (rounded
 * down, one token less for reps > 1, so never above what the graph builder
 * prices); 0 when no microbatch has tokens. */
static int mean_and_min(const loom_problem *pb, int32_t module, const loom_iteration *it,
                        int32_t M, int32_t reps, loom_shape *mean, loom_shape *least)
{
    loom_shape_sums *sums = calloc((size_t)M, sizeof *sums);
    if (!sums)
        return -1;
    loom_shape_sums_for(pb, module, it, NULL, M, sums);
    loom_shape_sums tot = {0, 0, 0}, lo = sums[0];
    for (int32_t m = 0; m < M; m++) {
        tot.tokens += sums[m].tokens;
        tot.seq_sq += sums[m].seq_sq;
        tot.seqs += sums[m].seqs;
        lo.tokens = fmin(lo.tokens, sums[m].tokens);
        lo.seq_sq = fmin(lo.seq_sq, sums[m].seq_sq);
        lo.seqs = fmin(lo.seqs, sums[m].seqs);
    }
    free(sums);
    /* the mean, rounded down so that it never exceeds the true mean */
    tot.tokens = floor(tot.tokens / M);
    tot.seq_sq /= M;
    tot.seqs = floor(tot.seqs / M);
    if (reps > 1) {
        loom_shape_sums *v[2] = {&tot, &lo};
        for (int i = 0; i < 2; i++) {
            v[i]->tokens = fmax(0, floor(v[i]->tokens / reps) - 1);
            v[i]->seq_sq /= reps;
            v[i]->seqs = floor(v[i]->seqs / reps);
        }
    }
    loom_shape_from_sums(pb, &tot, 1, mean);
    loom_shape_from_sums(pb, &lo, 1, least);
    return 0;
}

/* Compute time of one layer's forward and backward under policy none,
 * without the exposed TP communication another stage may fill. */
static int compute_ms(loom_session *s, int32_t module, int32_t layer, const loom_shape *at,
                      const module_pricing *mp, double *fwd, double *bwd, double *flops,
                      loom_error *err)
{
    loom_layer_cost c;
    *fwd = *bwd = *flops = 0;
    if (at->tokens <= 0)
        return LOOM_OK;
    loom_shape shape = *at;
    if (mp->tp > 0)
        shape.tp = mp->tp;
    if (mp->cp > 0)
        shape.cp = mp->cp;
    int rc = loom_session_layer_cost(s, module, layer, &shape, LOOM_POLICY_NONE, &c, err);
    if (rc != LOOM_OK)
        return rc;
    double fc = 0, bc = 0;
    if (LOOM_LAYER_COST_HAS(&c, input_grad_comm_ms)) {
        fc = c.forward_comm_ms;
        bc = c.input_grad_comm_ms;
    }
    *fwd = fmax(0, c.forward_ms - fc);
    *bwd = fmax(0, c.input_grad_ms + c.weight_grad_ms - bc);
    *flops = c.flops * mp->reps;
    return LOOM_OK;
}

/* Weights and states of one layer (policy none, any tokens). */
static int static_of(loom_session *s, int32_t module, int32_t layer, const module_pricing *mp,
                     double *param_bytes, double *state_bytes, int32_t *shards,
                     loom_error *err)
{
    loom_shape shape = LOOM_SHAPE_INIT;
    shape.tokens = 1;
    shape.seq_sq_sum = 1;
    shape.sequences = 1;
    shape.tp = mp->tp > 0 ? mp->tp : s->problem.parallel.tp > 0 ? s->problem.parallel.tp : 1;
    if (mp->dp > 0) { /* a listed module's states shard over its own dp x cp */
        shape.cp = mp->cp;
        shape.dp = mp->dp;
    }
    shape.trainable_upstream = 1;
    loom_layer_cost c;
    int rc = loom_session_layer_cost(s, module, layer, &shape, LOOM_POLICY_NONE, &c, err);
    if (rc != LOOM_OK)
        return rc;
    *shards = loom_layer_cost_param_shards(&c);
    *param_bytes += (double)(c.param_bytes / *shards); /* the share a GPU keeps */
    *state_bytes += (double)c.state_bytes;
    return LOOM_OK;
}

/* Per GPU set: its work, static bytes and pipeline ranks (set 0 the
 * top-level layout's, 1 + d disjoint module d's). */
typedef struct set_sums {
    double work_ms, param_bytes, state_bytes;
    int32_t ranks;
} set_sums;

/* Prices every layer of module `m` into f (appending to its layer arrays)
 * and into its GPU set's sums. */
static int floor_module(loom_session *s, const loom_iteration *it, int32_t m,
                        const module_pricing *mp, loom_layout_floor *f, set_sums *set,
                        loom_error *err)
{
    const loom_problem *pb = &s->problem;
    const loom_module *mod = &pb->model->modules[m];
    int32_t M = pb->parallel.microbatches;
    loom_shape mean, least;
    if (mean_and_min(pb, m, it, M, mp->reps, &mean, &least) != 0)
        return loom_set_error(err, LOOM_ENOMEM, "layout floor: out of memory");
    int up = loom_module_upstream_trainable(pb->model, m);
    double pbytes = 0, sbytes = 0;
    int32_t shards = 1; /* the module's embedding shards as its layers */
    for (int32_t l = 0; l < mod->n_layers; l++) {
        int rc = static_of(s, m, l, mp, &pbytes, &sbytes, &shards, err);
        if (rc != LOOM_OK)
            return rc;
        mean.trainable_upstream = least.trainable_upstream =
            loom_layer_trainable_upstream_from(up, mod, l);
        int needs_backward = mean.trainable_upstream || !mod->frozen;
        double mf, mb, mfl, lf, lb, lfl;
        if ((rc = compute_ms(s, m, l, &mean, mp, &mf, &mb, &mfl, err)) != LOOM_OK ||
            (rc = compute_ms(s, m, l, &least, mp, &lf, &lb, &lfl, err)) != LOOM_OK)
            return rc;
        if (!needs_backward)
            mb = lb = 0;
        double work = M * (mf + mb);
        f->layer_work_ms[f->n_layers] = work;
        f->layer_head_ms[f->n_layers] = lf;
        f->n_layers++;
        f->work_ms += work;
        f->chain_ms += lf + lb;
        f->flops += M * mfl;
        set->work_ms += work;
    }
    if (mod->vocab > 0) {
        int64_t pe = 0, se = 0;
        int32_t tp = mp->tp > 0 ? mp->tp : pb->parallel.tp > 0 ? pb->parallel.tp : 1;
        int rc = loom_cost_module_extra(&s->pl->steps[s->pl->cost_model].ctx, m, tp, &pe, &se,
                                        err);
        if (rc != LOOM_OK)
            return rc;
        pbytes += (double)(pe / shards);
        sbytes += (double)se;
    }
    f->param_bytes += pbytes;
    f->state_bytes += sbytes;
    set->param_bytes += pbytes;
    set->state_bytes += sbytes;
    return LOOM_OK;
}

/* How module m is priced and which set's ranks it runs on, with the
 * pipeline ranks of that set: the top-level pp, or the positions the
 * layout kit gives a disjoint module d (pp_d x dp_d / dp rounded, within
 * [1, its layers]: DistTrain §5.1's share of the replicas it serves). */
static void pricing_of(const loom_problem *pb, int32_t m, module_pricing *mp, set_sums *sets)
{
    const loom_module_layout *l = loom_problem_module_layout(pb, m);
    memset(mp, 0, sizeof *mp);
    mp->reps = 1;
    if (!l || !l->listed)
        return;
    int32_t d = loom_cost_owner_set(pb, NULL, m);
    const loom_module_layout *own = d >= 0 ? loom_problem_module_layout(pb, d) : NULL;
    int64_t width = own ? (int64_t)own->tp * own->cp
                        : (int64_t)(pb->parallel.tp > 0 ? pb->parallel.tp : 1) *
                              loom_parallel_cp(&pb->parallel);
    mp->tp = l->tp;
    mp->cp = l->cp;
    mp->dp = l->dp;
    int64_t reps = width / ((int64_t)l->tp * l->cp);
    mp->reps = reps > 1 ? (int32_t)reps : 1;
    mp->set = d >= 0 ? 1 + d : 0;
    if (own && sets[mp->set].ranks == 0) {
        int32_t dp = pb->parallel.dp > 0 ? pb->parallel.dp : 1;
        int64_t share = (2 * (int64_t)own->pp * own->dp + dp) / (2 * (int64_t)dp);
        int32_t layers = pb->model->modules[d].n_layers;
        sets[mp->set].ranks = share < 1 ? 1 : share > layers ? layers : (int32_t)share;
    }
}

/* The busiest set's work per rank and mean static bytes per rank. */
static void sets_into(const set_sums *sets, int32_t n, loom_layout_floor *f)
{
    double worst_static = -1;
    for (int32_t i = 0; i < n; i++) {
        if (sets[i].ranks < 1)
            continue;
        double w = sets[i].work_ms / sets[i].ranks;
        double st = (sets[i].param_bytes + sets[i].state_bytes) / sets[i].ranks;
        f->set_work_ms = fmax(f->set_work_ms, w);
        if (st > worst_static) {
            worst_static = st;
            f->set_param_bytes = sets[i].param_bytes / sets[i].ranks;
            f->set_state_bytes = sets[i].state_bytes / sets[i].ranks;
        }
    }
}

int loom_session_floor(loom_session *s, int32_t k, loom_layout_floor *f, loom_error *err)
{
    memset(f, 0, sizeof *f);
    if (!s || !s->pl || s->pl->cost_model < 0 || s->problem.kind != LOOM_PROBLEM_MODEL ||
        !s->workload || k < 0 || k >= s->n_iterations)
        return loom_set_error(err, LOOM_EINVAL, "layout floor: expected an open session of a "
                              "model problem with iteration %d", k);
    const loom_model *model = s->problem.model;
    int64_t layers = 0;
    for (int32_t m = 0; m < model->n_modules; m++)
        layers += model->modules[m].n_layers;
    f->layer_work_ms = calloc((size_t)layers + 1, sizeof *f->layer_work_ms);
    f->layer_head_ms = calloc((size_t)layers + 1, sizeof *f->layer_head_ms);
    if (!f->layer_work_ms || !f->layer_head_ms) {
        loom_layout_floor_clear(f);
        return loom_set_error(err, LOOM_ENOMEM, "layout floor: out of memory");
    }
    set_sums *sets = calloc((size_t)model->n_modules + 1, sizeof *sets);
    if (!sets) {
        loom_layout_floor_clear(f);
        return loom_set_error(err, LOOM_ENOMEM, "layout floor: out of memory");
    }
    sets[0].ranks = s->problem.parallel.pp > 0 ? s->problem.parallel.pp : 1;
    const loom_iteration *it = &s->workload->iterations[k];
    for (int32_t m = 0; m < model->n_modules; m++) {
        module_pricing mp;
        pricing_of(&s->problem, m, &mp, sets);
        int rc = floor_module(s, it, m, &mp, f, &sets[mp.set], err);
        if (rc != LOOM_OK) {
            free(sets);
            loom_layout_floor_clear(f);
            return rc;
        }
    }
    sets_into(sets, model->n_modules + 1, f);
    free(sets);
    return LOOM_OK;
}
