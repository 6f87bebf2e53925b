/*
 * hs_estimate.c - hetero-search's closed-form estimate, its enumeration of
 * per-module layouts and the cost measurements behind them (see
 * hs_estimate.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "hs_estimate.h"

int32_t loom_hs_log2(int32_t v)
{
    for (int32_t i = 0; i < 31; i++)
        if (v == (1 << i))
            return i;
    return -1;
}

/* The top-level layout's entry (the first with placement TOP), or NULL. */
static const loom_module_layout *top_entry(const loom_hs_costs *c, const loom_module_layout *l)
{
    for (int32_t m = 0; m < c->n_modules; m++)
        if (l[m].placement == LOOM_LAYOUT_TOP)
            return &l[m];
    return NULL;
}

double loom_hs_estimate(const loom_hs_costs *c, const loom_module_layout *layouts,
                        double *static_bytes)
{
    const loom_module_layout *top = top_entry(c, layouts);
    if (!top || c->n_modules > LOOM_HS_MAX_MODULES)
        return -1;
    int32_t cp = c->cp > 0 ? c->cp : 1;
    int32_t top_w = top->tp * cp, top_pp = top->pp, dp = top->dp > 0 ? top->dp : 1;
    double period[LOOM_HS_MAX_MODULES + 1] = {0}, stat[LOOM_HS_MAX_MODULES + 1] = {0};
    int32_t n_pos[LOOM_HS_MAX_MODULES] = {0};
    double latency = 0;
    /* disjoint modules first: their position counts place their guests */
    for (int32_t pass = 0; pass < 2; pass++)
        for (int32_t m = 0; m < c->n_modules; m++) {
            const loom_module_layout *l = &layouts[m];
            int disjoint = l->placement == LOOM_LAYOUT_DISJOINT;
            if (disjoint != (pass == 0))
                continue;
            int32_t owner = disjoint ? m
                            : l->placement == LOOM_LAYOUT_COLOCATED && l->colocated_with >= 0
                                ? l->colocated_with
                                : -1;
            if (owner >= 0 && (owner >= c->n_modules ||
                               layouts[owner].placement != LOOM_LAYOUT_DISJOINT))
                return -1;
            int32_t w = owner < 0 ? top_w : layouts[owner].tp * cp;
            int32_t i = loom_hs_log2(l->tp), reps = w / (l->tp * cp);
            int32_t j = loom_hs_log2(reps < 1 ? 1 : reps);
            if (i < 0 || i >= LOOM_HS_N_TP || j < 0 || j >= LOOM_HS_N_REPS)
                return -1;
            int32_t n;
            if (disjoint) {
                int64_t share = (2 * (int64_t)l->pp * l->dp + dp) / (2 * (int64_t)dp);
                n = share < 1 ? 1 : share > c->layers[m] ? c->layers[m] : (int32_t)share;
            } else {
                n = owner < 0 ? top_pp : n_pos[owner];
                n = n < c->layers[m] ? n : c->layers[m];
            }
            n_pos[m] = n < 1 ? 1 : n;
            int32_t slot = owner < 0 ? LOOM_HS_MAX_MODULES : owner;
            latency += c->c_ms[m][i][j];
            period[slot] += c->c_ms[m][i][j] / n_pos[m];
            stat[slot] += c->static_bytes[m][i] / n_pos[m];
        }
    double worst = 0, most = 0;
    for (int32_t s = 0; s <= LOOM_HS_MAX_MODULES; s++) {
        worst = period[s] > worst ? period[s] : worst;
        most = stat[s] > most ? stat[s] : most;
    }
    if (static_bytes)
        *static_bytes = most;
    int32_t mbs = c->microbatches > 0 ? c->microbatches : 1;
    return latency + (double)(mbs - 1) * worst;
}

/* The search's state while choosing the non-backbone modules' layouts. */
typedef struct hs_walk {
    const loom_hs_costs *c;
    const loom_hs_config *cfg;
    int32_t dp, k, *n_best;
    loom_hs_result *best;
    loom_hs_stats *stats;
    loom_module_layout cur[LOOM_HS_MAX_MODULES];
    int32_t top_gpus;
} hs_walk;

/* 1 when a ranks before b: lower estimate (relative 1e-12), then fewer GPUs. */
static int better(double ea, int32_t ga, double eb, int32_t gb)
{
    double tol = 1e-12 * (eb > 0 ? eb : 1);
    if (ea < eb - tol)
        return 1;
    return ea <= eb + tol && ga < gb;
}

/* Scores the complete layout in w->cur and keeps it among the k best. */
static void hs_leaf(hs_walk *w, int32_t gpus)
{
    w->stats->enumerated++;
    double stat = 0;
    double est = loom_hs_estimate(w->c, w->cur, &stat);
    if (est < 0 || (w->cfg->memory_cap_bytes > 0 && stat > w->cfg->memory_cap_bytes))
        return;
    w->stats->feasible++;
    int32_t n = *w->n_best, at = n;
    while (at > 0 && better(est, gpus, w->best[at - 1].estimate_ms, w->best[at - 1].gpus))
        at--;
    if (at >= w->k)
        return;
    if (n == w->k)
        n--;
    memmove(&w->best[at + 1], &w->best[at], (size_t)(n - at) * sizeof *w->best);
    loom_hs_result *r = &w->best[at];
    memcpy(r->layouts, w->cur, sizeof r->layouts);
    r->estimate_ms = est;
    r->static_bytes = stat;
    r->gpus = gpus;
    *w->n_best = n + 1;
}

/* Chooses module m's layout (and the rest after it) with `used` GPUs gone. */
static void hs_walk_from(hs_walk *w, int32_t m, int32_t used)
{
    const loom_hs_costs *c = w->c;
    if (m == c->n_modules) {
        hs_leaf(w, used);
        return;
    }
    if (c->backbone[m] || w->cfg->single_layout) {
        hs_walk_from(w, m + 1, used);
        return;
    }
    const loom_module_layout *top = top_entry(c, w->cur);
    int32_t cp = c->cp > 0 ? c->cp : 1;
    int64_t batch = (int64_t)w->dp * c->microbatches;
    loom_module_layout *l = &w->cur[m];
    for (int32_t i = 0; i < LOOM_HS_N_TP; i++) {
        int32_t tp = 1 << i;
        if (!c->tp_ok[m][i] || tp > w->cfg->max_tp)
            continue;
        if (tp <= top->tp) { /* colocated on the top-level set */
            *l = (loom_module_layout){(uint32_t)sizeof *l, tp, cp, top->pp,
                                      w->top_gpus / (tp * cp * top->pp), LOOM_LAYOUT_COLOCATED,
                                      -1, 0, w->top_gpus, 1};
            hs_walk_from(w, m + 1, used);
        }
        for (int32_t pp = 1; pp <= c->layers[m]; pp *= 2)
            for (int32_t dp = 1; dp <= batch; dp++) {
                int64_t g = (int64_t)tp * cp * pp * dp;
                /* a whole share of groups per top-level replica: pp * dp a
                 * multiple of the top-level dp (else the rounded positions
                 * misstate the module's throughput) */
                if (batch % dp || ((int64_t)pp * dp) % w->dp || used + g > w->cfg->gpus)
                    continue;
                *l = (loom_module_layout){(uint32_t)sizeof *l, tp, cp, pp, dp,
                                          LOOM_LAYOUT_DISJOINT, -1, used, (int32_t)g, 1};
                hs_walk_from(w, m + 1, used + (int32_t)g);
            }
    }
}

int loom_hs_enumerate(const loom_hs_costs *c, int32_t dp, const loom_hs_config *cfg, int32_t k,
                      loom_hs_result *best, int32_t *n_best, loom_hs_stats *stats,
                      loom_error *err)
{
    hs_walk w;
    memset(&w, 0, sizeof w);
    memset(stats, 0, sizeof *stats);
    *n_best = 0;
    w.c = c;
    w.cfg = cfg;
    w.dp = dp > 0 ? dp : 1;
    w.k = k < 1 ? 1 : k > LOOM_HS_MAX_BEST ? LOOM_HS_MAX_BEST : k;
    w.best = best;
    w.n_best = n_best;
    w.stats = stats;
    int32_t cp = c->cp > 0 ? c->cp : 1, top_layers = 0;
    for (int32_t m = 0; m < c->n_modules; m++)
        if (c->backbone[m] && (top_layers == 0 || c->layers[m] < top_layers))
            top_layers = c->layers[m];
    for (int32_t i = 0; i < LOOM_HS_N_TP; i++) {
        int32_t tp = 1 << i, ok = tp <= cfg->max_tp;
        for (int32_t m = 0; m < c->n_modules; m++)
            ok &= (!c->backbone[m] && !cfg->single_layout) || c->tp_ok[m][i];
        for (int32_t pp = 1; ok && pp <= top_layers; pp++) {
            int64_t g = (int64_t)tp * cp * pp * w.dp;
            if (g > cfg->gpus)
                break;
            w.top_gpus = (int32_t)g;
            for (int32_t m = 0; m < c->n_modules; m++)
                w.cur[m] = (loom_module_layout){(uint32_t)sizeof w.cur[m], tp, cp, pp, w.dp,
                                                LOOM_LAYOUT_TOP, -1, 0, (int32_t)g, 0};
            hs_walk_from(&w, 0, (int32_t)g);
        }
    }
    if (*n_best == 0)
        return loom_error_format(err, LOOM_EINFEASIBLE,
                                       "hetero-search: no layout within %d GPUs fits %.0f bytes "
                                       "of static memory per GPU (%lld layouts tried)",
                                       cfg->gpus, cfg->memory_cap_bytes,
                                       (long long)stats->enumerated);
    return LOOM_OK;
}

/* Fills c's costs of module m: C(TP, reps) for every TP and copy count,
 * static bytes per TP, and which TPs divide its heads. */
static int hs_measure(const loom_host_api *host, loom_ctx *ctx, const loom_cost_service *cost,
                      const loom_problem *pb, const loom_iteration *it, int32_t m,
                      loom_hs_costs *c, loom_error *err)
{
    const loom_model *model = pb->model;
    const loom_module *mod = &model->modules[m];
    int up = loom_module_upstream_trainable(model, m);
    c->layers[m] = mod->n_layers;
    c->backbone[m] = mod->kind == LOOM_MODULE_BACKBONE;
    for (int32_t i = 0; i < LOOM_HS_N_TP; i++) {
        c->tp_ok[m][i] = 1;
        for (int32_t l = 0; l < mod->n_layers; l++)
            c->tp_ok[m][i] &= mod->layers[l].heads % (1 << i) == 0;
    }
    for (int32_t j = 0; j < LOOM_HS_N_REPS; j++) {
        loom_shape shape = LOOM_SHAPE_INIT;
        int rc = cost->module_shape(ctx, m, it, c->microbatches, -1, 1 << j, &shape, err);
        if (rc != LOOM_OK)
            return rc;
        shape.cp = c->cp;
        for (int32_t i = 0; i < LOOM_HS_N_TP; i++) {
            shape.tp = 1 << i;
            double ms = 0, bytes = 0;
            for (int32_t l = 0; l < mod->n_layers; l++) {
                shape.trainable_upstream = loom_layer_trainable_upstream_from(up, mod, l);
                loom_layer_cost lc = LOOM_LAYER_COST_INIT;
                rc = cost->layer(ctx, m, l, &shape, LOOM_POLICY_NONE, &lc, err);
                if (rc != LOOM_OK)
                    return rc;
                if (shape.tokens > 0)
                    ms += lc.forward_ms + lc.input_grad_ms + lc.weight_grad_ms;
                bytes += (double)loom_layer_cost_static_bytes(&lc);
            }
            c->c_ms[m][i][j] = ms;
            if (j == 0)
                c->static_bytes[m][i] = bytes;
        }
    }
    (void)host;
    return LOOM_OK;
}

int loom_hs_search(const loom_host_api *host, loom_ctx *ctx, const loom_problem *pb,
                   const loom_iteration *it, const loom_hs_config *cfg, int32_t k,
                   loom_hs_result *best, int32_t *n_best, loom_hs_stats *stats,
                   loom_error *err)
{
    const loom_cost_service *cost = loom_host_cost(host, ctx);
    if (!cost)
        return host->error(err, LOOM_EINVAL, "hetero-search: the host has no cost service");
    loom_hs_costs *c = host->alloc(sizeof *c);
    if (!c)
        return host->error(err, LOOM_ENOMEM, "hetero-search: out of memory");
    memset(c, 0, sizeof *c);
    c->n_modules = pb->model->n_modules;
    c->microbatches = pb->parallel.microbatches;
    c->cp = loom_parallel_cp(&pb->parallel);
    int rc = LOOM_OK, any = 0;
    for (int32_t m = 0; m < c->n_modules && rc == LOOM_OK; m++) {
        rc = hs_measure(host, ctx, cost, pb, it, m, c, err);
        any |= c->backbone[m];
    }
    if (rc == LOOM_OK && !any)
        rc = host->error(err, LOOM_EINVAL,
                         "hetero-search: expected a module of kind \"backbone\" (it keeps the "
                         "top-level layout), found none");
    if (rc == LOOM_OK)
        rc = loom_hs_enumerate(c, pb->parallel.dp, cfg, k, best, n_best, stats, err);
    host->free(c);
    return rc;
}
