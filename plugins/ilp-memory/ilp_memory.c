/*
 * ilp_memory.c - the "ilp" memory tuner (PipeWeaver section 6.3): the
 * knapsack candidates of every stage pair, two greedy warm starts (the
 * knapsack tuner's choice over candidates and the greedy tuner's choice
 * over single layers, the better of which bounds the search), then the
 * integer programme of ilp_memory.h solved with lp_solve to a relative gap
 * or a time limit; the ILP's choice is used only when it beats both. The
 * result is confirmed in simulation like the other tuners'. An infeasible
 * cap is found by the warm start already (its descent stops only when
 * every pair live at a rank's peak is at its most frugal candidate, where
 * no choice fits) and reported as LOOM_EINFEASIBLE naming the rank and the
 * bytes short.
 *
 * With param `offload` each layer may also offload its activations to
 * host memory (LOOM_POLICY_OFFLOAD): the tuner then answers twice, over
 * the recomputation policies alone and over all four (candidates, warm
 * starts and ILP alike), and keeps the offload answer only when it
 * simulates strictly faster on the order (loom_mt_offload_pick).
 */
#include <string.h>
#include "ilp_memory.h"

typedef struct ilpm_self {
    const loom_host_api *host;
    loom_ctx *ctx;
    int32_t k, resolution;
    loom_ilpm_params prm;
    int offload;           /* param offload: may choose LOOM_POLICY_OFFLOAD */
    int n_policies;        /* policies the current answer chooses among */
    uint8_t *alt;          /* per entry: the recomputation-only answer */
    loom_mt_driver drv;
    loom_mckp_set set;
    loom_mt_entry_chains chains; /* the per-layer greedy warm start */
    loom_ilpm_work work;
    loom_ilpm_stats last;  /* the last solve, for logs */
    loom_mckp_units units; /* the candidates as descent units */
    int32_t *choice;       /* per pair: the final candidate choice */
    uint8_t *warm;         /* per entry: the warm start's policies */
    double *cand_rank_ms;  /* per rank: latency under the candidate greedy */
    double *entry_rank_ms; /* per rank: latency under the layer greedy */
    double *warm_rank_ms;  /* per rank: the better of the two */
    uint8_t *improved;     /* per rank: 1 when the ILP's choice is used */
    int32_t cap_pairs, cap_ranks, cap_entries;
} ilpm_self;

/* The params, declared once in ilpm_param_table (manifest.json says the same). */
typedef struct ilpm_param_values {
    double gap;
    int64_t timeout_ms;
    int64_t k;
    int64_t resolution;
    int offload;
} ilpm_param_values;

static const loom_param_def ilpm_param_table[] = {
    LOOM_FLOAT_PARAM(ilpm_param_values, gap, 0.05, 0, 1,
                   "relative optimality gap at which branch and bound stops"),
    LOOM_INT_PARAM(ilpm_param_values, timeout_ms, 1000, 1, 3600000,
                   "wall-clock limit of one solve; the best choice found so far (at least the "
                   "greedy warm start) is used when it runs out"),
    LOOM_INT_PARAM(ilpm_param_values, k, 6, 2, 62,
                   "knapsack candidates per stage pair"),
    LOOM_INT_PARAM(ilpm_param_values, resolution, 64, 1, 1048576,
                   "memory steps of the knapsack DP that generates the candidates"),
    LOOM_MT_OFFLOAD_PARAM(ilpm_param_values, offload),
    LOOM_PARAM_END};

/* Reads k, resolution, gap, timeout_ms and offload. */
static int ilpm_params(const loom_host_api *host, loom_ctx *ctx, ilpm_self *s,
                       loom_error *err)
{
    ilpm_param_values v;
    int rc = loom_params_read(host, ctx, "ilp", ilpm_param_table, &v, err);
    if (rc != LOOM_OK)
        return rc;
    s->k = (int32_t)v.k;
    s->resolution = (int32_t)v.resolution;
    s->prm.gap = v.gap;
    s->prm.timeout_ms = (double)v.timeout_ms;
    s->n_policies = LOOM_POLICY_OFFLOAD;
    s->offload = v.offload;
    return loom_mt_offload_ready(host, ctx, "ilp", s->offload, err);
}

/* Creates an instance: reads the params, finds the simulator. */
static int ilpm_create(const loom_host_api *host, loom_ctx *ctx,
                       void *plugin_state, void **self, loom_error *err)
{
    (void)plugin_state;
    ilpm_self *s = host->alloc(sizeof *s);
    if (!s)
        return host->error(err, LOOM_ENOMEM, "ilp: out of memory");
    memset(s, 0, sizeof *s);
    int rc = ilpm_params(host, ctx, s, err);
    if (rc != LOOM_OK) {
        host->free(s);
        return rc;
    }
    s->host = host;
    s->ctx = ctx;
    loom_mt_driver_init(host, ctx, &s->drv);
    *self = s;
    return LOOM_OK;
}

/* Releases an instance from ilpm_create. */
static void ilpm_destroy(void *self)
{
    ilpm_self *s = self;
    if (!s)
        return;
    loom_mt_driver_free(s->host, &s->drv);
    loom_mckp_free(s->host, &s->set);
    loom_mt_entry_chains_free(s->host, &s->chains);
    loom_ilpm_free(s->host, &s->work);
    loom_mckp_units_free(s->host, &s->units);
    s->host->free(s->choice);
    s->host->free(s->warm);
    s->host->free(s->alt);
    s->host->free(s->cand_rank_ms);
    s->host->free(s->entry_rank_ms);
    s->host->free(s->warm_rank_ms);
    s->host->free(s->improved);
    s->host->free(s);
}

/* Grows the per-pair, per-rank and per-entry arrays. */
static int ilpm_reserve(ilpm_self *s, int32_t n_pairs, int32_t n_ranks,
                        int32_t n_entries, loom_error *err)
{
    const loom_host_api *h = s->host;
    if (n_entries > s->cap_entries || !s->warm || !s->alt) {
        h->free(s->warm);
        h->free(s->alt);
        s->warm = h->alloc((size_t)n_entries + 1);
        s->alt = h->alloc((size_t)n_entries + 1);
        s->cap_entries = n_entries;
    }
    if (n_pairs > s->cap_pairs || !s->choice) {
        h->free(s->choice);
        size_t n = (size_t)n_pairs + 1;
        s->choice = h->alloc(n * sizeof *s->choice);
        s->cap_pairs = n_pairs;
    }
    if (n_ranks > s->cap_ranks || !s->improved) {
        h->free(s->cand_rank_ms);
        h->free(s->entry_rank_ms);
        h->free(s->warm_rank_ms);
        h->free(s->improved);
        size_t n = (size_t)n_ranks + 1;
        s->cand_rank_ms = h->alloc(n * sizeof *s->cand_rank_ms);
        s->entry_rank_ms = h->alloc(n * sizeof *s->entry_rank_ms);
        s->warm_rank_ms = h->alloc(n * sizeof *s->warm_rank_ms);
        s->improved = h->alloc(n * sizeof *s->improved);
        s->cap_ranks = n_ranks;
    }
    if (!s->choice ||
        !s->cand_rank_ms || !s->entry_rank_ms || !s->warm_rank_ms ||
        !s->improved || !s->warm || !s->alt) {
        s->cap_pairs = s->cap_ranks = s->cap_entries = 0;
        return h->error(err, LOOM_ENOMEM, "ilp: out of memory");
    }
    return LOOM_OK;
}

/* The per-layer greedy (the greedy tuner's choice) on the timeline the
 * candidate greedy built. */
static int ilpm_entry_greedy(ilpm_self *s, const loom_stage_graph *g,
                             loom_error *err)
{
    int rc = loom_mt_entry_chains_build_policies(s->host, &s->chains, g, s->n_policies, err);
    if (rc != LOOM_OK)
        return rc;
    loom_mt_units eu = loom_mt_entry_units(&s->chains, g);
    return loom_mt_descend(s->host, &s->drv.desc, &s->drv.tl, g, &eu,
                           s->chains.pair_bytes, -1, "ilp", NULL, err);
}

/* The warm start: per rank, the faster of the candidate greedy (whose
 * policies are in `policies`) and the layer greedy, written to s->warm. */
static void ilpm_warm_start(ilpm_self *s, const loom_stage_graph *g,
                            const uint8_t *policies)
{
    const loom_mt_entry_chains *c = &s->chains;
    for (int32_t r = 0; r < g->n_ranks; r++)
        s->cand_rank_ms[r] = s->entry_rank_ms[r] = 0.0;
    for (int32_t p = 0; p < g->n_pairs; p++) {
        int32_t r = s->drv.tl.pair_rank[p];
        s->cand_rank_ms[r] += s->set.cand_ms[s->set.cand_off[p] + s->units.state[p]];
        for (int32_t e = g->pair_layer_off[p]; e < g->pair_layer_off[p + 1]; e++)
            s->entry_rank_ms[r] += c->chain_ms[c->chain_off[e] + c->state[e]];
    }
    for (int32_t p = 0; p < g->n_pairs; p++) {
        int32_t r = s->drv.tl.pair_rank[p];
        int layer = s->entry_rank_ms[r] < s->cand_rank_ms[r];
        for (int32_t e = g->pair_layer_off[p]; e < g->pair_layer_off[p + 1]; e++)
            s->warm[e] = layer ? c->chain_pol[c->chain_off[e] + c->state[e]]
                               : policies[e];
    }
}

/* Expresses the warm start in the candidate set built with it: per pair
 * the fastest candidate holding no more bytes than the warm combination
 * (the combination itself, or one dominating it), into s->choice; per
 * rank the resulting latency into s->warm_rank_ms. */
static void ilpm_warm_choice(ilpm_self *s, const loom_stage_graph *g)
{
    for (int32_t r = 0; r < g->n_ranks; r++)
        s->warm_rank_ms[r] = 0.0;
    for (int32_t p = 0; p < g->n_pairs; p++) {
        int64_t bytes = 0;
        for (int32_t e = g->pair_layer_off[p]; e < g->pair_layer_off[p + 1]; e++)
            bytes += loom_mt_entry_bytes(g, e, s->warm[e]);
        int32_t a = s->set.cand_off[p], b = s->set.cand_off[p + 1], j = b - 1;
        for (int32_t c = a; c < b; c++)
            if (s->set.cand_bytes[c] <= bytes) {
                j = c; /* Pareto order: the first that fits is fastest */
                break;
            }
        s->choice[p] = j - a;
        s->warm_rank_ms[s->drv.tl.pair_rank[p]] += s->set.cand_ms[j];
    }
}

/* Candidates, greedy warm starts, then the ILP, every layer choosing
 * among the first s->n_policies policies (see file comment). */
static int ilpm_tune_over(ilpm_self *s, const loom_stage_graph *g,
                          const loom_schedule *sched, uint8_t *policies,
                          loom_error *err)
{
    int rc = loom_mckp_build_policies(s->host, &s->set, g, s->k, s->resolution,
                                      s->n_policies, err);
    if (rc != LOOM_OK)
        return rc;
    loom_mt_units u;
    rc = loom_mckp_units_reset(s->host, &s->units, &s->set, &u, "ilp", err);
    if (rc != LOOM_OK)
        return rc;
    memset(&s->last, 0, sizeof s->last);
    rc = loom_mt_driver_run(s->host, &s->drv, g, sched, &u, s->units.pair_bytes,
                            loom_mckp_materialise, &s->set, policies, "ilp", err);
    if (rc != LOOM_OK || !s->drv.descended)
        return rc; /* failed, or the fastest choice fits: optimal */
    rc = ilpm_entry_greedy(s, g, err);
    if (rc != LOOM_OK)
        return rc;
    ilpm_warm_start(s, g, policies);
    loom_mckp_add(&s->set, g, s->warm);
    ilpm_warm_choice(s, g);
    double left = s->host->budget_left_ms(s->ctx);
    s->prm.deadline_ms = left >= 0 ? s->host->now_ms() + left : -1.0;
    rc = loom_ilpm_solve(s->host, &s->work, &s->drv.tl, g, &s->set, &s->prm,
                         s->warm_rank_ms, s->choice, s->improved, &s->last,
                         err);
    if (rc != LOOM_OK)
        return rc;
    s->host->log(s->ctx, LOOM_LOG_DEBUG,
                 "ilp: %d memory rows, %d pairs, %d columns, %d bounds, %d "
                 "LPs, %d MIPs, %.3f ms; %d ranks improved, latency %.6g ms "
                 "(warm start %.6g ms)%s",
                 s->last.constraints, s->last.active_pairs, s->last.columns,
                 s->last.bound_ranks, s->last.lp_ranks, s->last.mip_ranks,
                 s->last.solve_ms,
                 s->last.improved, s->last.best_ms, s->last.warm_ms,
                 s->last.timed_out ? ", stopped by timeout_ms or the deadline"
                                   : "");
    for (int32_t p = 0; p < g->n_pairs; p++)
        loom_mckp_apply(&s->set, g, p, s->set.cand_off[p] + s->choice[p],
                        policies);
    return loom_mt_driver_confirm(s->host, &s->drv, g, sched, policies, "ilp",
                                  err);
}

/* Recomputation only, or with offload the faster of both answers (see
 * file comment). */
static int ilpm_tune(void *self, const loom_stage_graph *g,
                     const loom_schedule *sched, uint8_t *policies,
                     loom_error *err)
{
    ilpm_self *s = self;
    int rc = loom_mt_check_inputs(s->host, g, sched, policies, "ilp", err);
    if (rc == LOOM_OK)
        rc = ilpm_reserve(s, g->n_pairs, g->n_ranks, g->n_layer_entries, err);
    if (rc == LOOM_OK && s->offload)
        rc = loom_mt_offload_check(s->host, s->host->problem ? s->host->problem(s->ctx) : NULL,
                                   "ilp", err);
    if (rc != LOOM_OK)
        return rc;
    s->n_policies = LOOM_POLICY_OFFLOAD;
    if (!s->offload)
        return ilpm_tune_over(s, g, sched, policies, err);
    memcpy(s->alt, policies, (size_t)g->n_layer_entries);
    loom_error first = {0};
    int rc_re = ilpm_tune_over(s, g, sched, s->alt, &first);
    s->n_policies = LOOM_POLICY_COUNT;
    int rc_off = ilpm_tune_over(s, g, sched, policies, err);
    s->n_policies = LOOM_POLICY_OFFLOAD;
    return loom_mt_offload_pick(s->host, &s->drv, g, sched, rc_re, s->alt, rc_off,
                                policies, "ilp", err);
}

/* The interleaver budgets with every layer at its most frugal option:
 * memory this tuner recovers by recomputation must not throttle the
 * order. */
static int ilpm_interleave_view(void *self)
{
    (void)self;
    return LOOM_VIEW_FRUGAL;
}

static const loom_memory_tuner_vtable ilpm_vtable = {
    { sizeof(loom_memory_tuner_vtable), LOOM_MEMORY_TUNER_VERSION },
    ilpm_create,
    ilpm_destroy,
    ilpm_tune,
    ilpm_interleave_view,
};

/* Returns the memory_tuner vtable for role "memory_tuner", else NULL. */
static const loom_role_header *ilpm_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_MEMORY_TUNER) == 0)
        return &ilpm_vtable.header;
    return NULL;
}

static const loom_plugin_info ilpm_info = {
    LOOM_PLUGIN_INFO_HEADER,
    "org.loom.ilp-memory",
    "1.0.0",
    NULL,
    NULL,
    ilpm_role,
    ilpm_param_table,
};

LOOM_PLUGIN_DEFINE(ilp_memory, ilpm_info);
