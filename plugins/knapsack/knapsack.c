/*
 * knapsack.c - the "knapsack" memory tuner (PipeWeaver section 6.3).
 *
 * Every stage pair gets up to k Pareto-sorted candidates from the
 * multiple-choice knapsack of mckp.c (fastest, most frugal, and the
 * fastest within k-2 memory bounds between them). One candidate per pair
 * is then chosen greedily, as the greedy tuner does for single layers:
 * every pair starts at its fastest candidate, and while a rank's
 * simulated peak exceeds the cap, the pair live at the peak whose next
 * candidate saves the most bytes per added ms moves to it. LOOM_EINFEASIBLE
 * names the rank and the bytes short when every pair live at the peak is
 * already at its most frugal candidate.
 */
#include <string.h>
#include "memtune.h"
#include "mckp.h"

typedef struct ks_self {
    const loom_host_api *host;
    loom_ctx *ctx;
    int32_t k, resolution;
    loom_mt_driver drv;
    loom_mckp_set set;
    int32_t *unit_off;   /* per pair + 1: one unit per pair (p -> p) */
    int32_t *state;      /* per pair: index within its candidates */
    int64_t *pair_bytes; /* per pair */
    int32_t cap_pairs;
} ks_self;

/* Reads an int param with a default and a lower bound. */
static int ks_param(const loom_host_api *host, loom_ctx *ctx, const char *key,
                    int64_t def, int64_t lo, int64_t hi, int32_t *out,
                    loom_error *err)
{
    int64_t v = def;
    int rc = host->param_int(ctx, key, &v);
    if (rc == LOOM_ENOTFOUND)
        v = def;
    else if (rc != LOOM_OK)
        return host->error(err, LOOM_EINVAL,
                           "knapsack: params.%s: expected an integer", key);
    if (v < lo || v > hi)
        return host->error(err, LOOM_EINVAL,
                           "knapsack: params.%s: expected %lld..%lld, found "
                           "%lld", key, (long long)lo, (long long)hi,
                           (long long)v);
    *out = (int32_t)v;
    return LOOM_OK;
}

/* Creates an instance: reads k and resolution, finds the simulator. */
static int ks_create(const loom_host_api *host, loom_ctx *ctx,
                     void *plugin_state, void **self, loom_error *err)
{
    (void)plugin_state;
    int32_t k = 6, res = 64;
    int rc = ks_param(host, ctx, "k", 6, 2, 62, &k, err);
    if (rc == LOOM_OK)
        rc = ks_param(host, ctx, "resolution", 64, 1, 1 << 20, &res, err);
    if (rc != LOOM_OK)
        return rc;
    ks_self *s = host->alloc(sizeof *s);
    if (!s)
        return host->error(err, LOOM_ENOMEM, "knapsack: out of memory");
    memset(s, 0, sizeof *s);
    s->host = host;
    s->ctx = ctx;
    s->k = k;
    s->resolution = res;
    loom_mt_driver_init(host, &s->drv);
    *self = s;
    return LOOM_OK;
}

/* Releases an instance from ks_create. */
static void ks_destroy(void *self)
{
    ks_self *s = self;
    if (!s)
        return;
    loom_mt_driver_free(s->host, &s->drv);
    loom_mckp_free(s->host, &s->set);
    s->host->free(s->unit_off);
    s->host->free(s->state);
    s->host->free(s->pair_bytes);
    s->host->free(s);
}

/* Grows the per-pair arrays. */
static int ks_reserve(ks_self *s, int32_t n_pairs, loom_error *err)
{
    const loom_host_api *h = s->host;
    if (n_pairs <= s->cap_pairs && s->unit_off)
        return LOOM_OK;
    h->free(s->unit_off);
    h->free(s->state);
    h->free(s->pair_bytes);
    size_t n = (size_t)n_pairs + 1;
    s->unit_off = h->alloc(n * sizeof *s->unit_off);
    s->state = h->alloc(n * sizeof *s->state);
    s->pair_bytes = h->alloc(n * sizeof *s->pair_bytes);
    s->cap_pairs = n_pairs;
    if (!s->unit_off || !s->state || !s->pair_bytes) {
        s->cap_pairs = 0;
        return h->error(err, LOOM_ENOMEM, "knapsack: out of memory");
    }
    return LOOM_OK;
}

/* Writes every pair's chosen candidate as per-entry policies
 * (loom_mt_materialise_fn). */
static void ks_materialise(void *user, const loom_stage_graph *g,
                           const loom_mt_units *u, uint8_t *policies)
{
    const ks_self *s = user;
    for (int32_t p = 0; p < g->n_pairs; p++)
        loom_mckp_apply(&s->set, g, p, u->chain_off[p] + u->state[p],
                        policies);
}

/* Builds the candidates and chooses one per pair (see file comment). */
static int ks_tune(void *self, const loom_stage_graph *g,
                   const loom_schedule *sched, uint8_t *policies,
                   loom_error *err)
{
    ks_self *s = self;
    int rc = loom_mt_check_inputs(s->host, g, sched, policies, "knapsack", err);
    if (rc == LOOM_OK)
        rc = ks_reserve(s, g->n_pairs, err);
    if (rc == LOOM_OK)
        rc = loom_mckp_build(s->host, &s->set, g, s->k, s->resolution,
                             err);
    if (rc != LOOM_OK)
        return rc;
    for (int32_t p = 0; p <= g->n_pairs; p++)
        s->unit_off[p] = p;
    for (int32_t p = 0; p < g->n_pairs; p++) {
        s->state[p] = 0;
        s->pair_bytes[p] = s->set.cand_bytes[s->set.cand_off[p]];
    }
    loom_mt_units u = {g->n_pairs, s->unit_off, s->set.cand_off,
                       s->set.cand_ms, s->set.cand_bytes, s->state};
    return loom_mt_driver_run(s->host, &s->drv, g, sched, &u, s->pair_bytes,
                              ks_materialise, s, policies, "knapsack", err);
}

/* The interleaver budgets with every layer at its most frugal option:
 * memory this tuner recovers by recomputation must not throttle the
 * order. */
static int ks_interleave_view(void *self)
{
    (void)self;
    return LOOM_VIEW_FRUGAL;
}

static const loom_memory_tuner_vtable ks_vtable = {
    { sizeof(loom_memory_tuner_vtable), LOOM_MEMORY_TUNER_VERSION },
    ks_create,
    ks_destroy,
    ks_tune,
    ks_interleave_view,
};

/* Returns the memory_tuner vtable for role "memory_tuner", else NULL. */
static const loom_role_header *ks_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_MEMORY_TUNER) == 0)
        return &ks_vtable.header;
    return NULL;
}

static const loom_plugin_info ks_info = {
    LOOM_PLUGIN_INFO_HEADER,
    "org.loom.knapsack",
    "1.0.0",
    NULL,
    NULL,
    ks_role,
};

LOOM_PLUGIN_DEFINE(knapsack, ks_info);
