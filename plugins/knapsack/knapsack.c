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
 *
 * With param `offload` each layer may also offload its activations to
 * host memory (LOOM_POLICY_OFFLOAD): the tuner then answers twice, over
 * the recomputation policies alone and over all four, and keeps the
 * offload answer only when it simulates strictly faster on the order
 * (loom_mt_offload_pick), so offload never makes a plan slower.
 */
#include <string.h>
#include <loom/kits/memtune.h>
#include <loom/kits/mckp.h>

typedef struct ks_self {
    const loom_host_api *host;
    loom_ctx *ctx;
    int32_t k, resolution;
    int offload;           /* param offload: may choose LOOM_POLICY_OFFLOAD */
    uint8_t *alt;          /* per entry: the recomputation-only answer */
    int32_t cap_alt;
    loom_mt_driver drv;
    loom_mckp_set set;
    loom_mckp_units units; /* the candidates as descent units */
} ks_self;

/* The params, declared once (manifest.json says the same); read into ks_self. */
static const loom_param_def ks_param_table[] = {
    LOOM_INT_PARAM(ks_self, k, 6, 2, 62,
                   "candidates per stage pair: the two extremes plus k-2 memory buckets"),
    LOOM_INT_PARAM(ks_self, resolution, 64, 1, 1048576,
                   "memory steps of the knapsack DP between the most frugal and the fastest "
                   "combination; layer memory is rounded up to whole steps, so a candidate "
                   "always meets its bucket's bound"),
    LOOM_MT_OFFLOAD_PARAM(ks_self, offload),
    LOOM_PARAM_END};

/* Creates an instance: reads k, resolution and offload, finds the
 * simulator. */
static int ks_create(const loom_host_api *host, loom_ctx *ctx,
                     void *plugin_state, void **self, loom_error *err)
{
    (void)plugin_state;
    ks_self *s = host->alloc(sizeof *s);
    if (!s)
        return host->error(err, LOOM_ENOMEM, "knapsack: out of memory");
    memset(s, 0, sizeof *s);
    int rc = loom_params_read(host, ctx, "knapsack", ks_param_table, s, err);
    if (rc == LOOM_OK)
        rc = loom_mt_offload_ready(host, ctx, "knapsack", s->offload, err);
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

/* Releases an instance from ks_create. */
static void ks_destroy(void *self)
{
    ks_self *s = self;
    if (!s)
        return;
    loom_mt_driver_free(s->host, &s->drv);
    loom_mckp_free(s->host, &s->set);
    loom_mckp_units_free(s->host, &s->units);
    s->host->free(s->alt);
    s->host->free(s);
}

/* Builds the candidates over the first n_policies policies and chooses
 * one per pair (see file comment). */
static int ks_tune_over(ks_self *s, const loom_stage_graph *g,
                        const loom_schedule *sched, int n_policies,
                        uint8_t *policies, loom_error *err)
{
    loom_mt_units u;
    int rc = loom_mckp_build_policies(s->host, &s->set, g, s->k, s->resolution,
                                      n_policies, err);
    if (rc == LOOM_OK)
        rc = loom_mckp_units_reset(s->host, &s->units, &s->set, &u,
                                   "knapsack", err);
    if (rc != LOOM_OK)
        return rc;
    return loom_mt_driver_run(s->host, &s->drv, g, sched, &u,
                              s->units.pair_bytes, loom_mckp_materialise,
                              &s->set, policies, "knapsack", err);
}

/* Recomputation only, or with offload the faster of both answers (see
 * file comment). */
static int ks_tune(void *self, const loom_stage_graph *g,
                   const loom_schedule *sched, uint8_t *policies,
                   loom_error *err)
{
    ks_self *s = self;
    int rc = loom_mt_check_inputs(s->host, g, sched, policies, "knapsack", err);
    if (rc != LOOM_OK)
        return rc;
    if (!s->offload)
        return ks_tune_over(s, g, sched, LOOM_POLICY_OFFLOAD, policies, err);
    if ((rc = loom_mt_offload_check(s->host, s->host->problem ? s->host->problem(s->ctx) : NULL,
                                     "knapsack", err)))
        return rc;
    if (g->n_layer_entries > s->cap_alt) {
        void *p = s->host->realloc(s->alt, (size_t)g->n_layer_entries);
        if (!p)
            return s->host->error(err, LOOM_ENOMEM, "knapsack: out of memory");
        s->alt = p;
        s->cap_alt = g->n_layer_entries;
    }
    memcpy(s->alt, policies, (size_t)g->n_layer_entries);
    loom_error first = {0};
    int rc_re = ks_tune_over(s, g, sched, LOOM_POLICY_OFFLOAD, s->alt, &first);
    int rc_off = ks_tune_over(s, g, sched, LOOM_POLICY_COUNT, policies, err);
    return loom_mt_offload_pick(s->host, &s->drv, g, sched, rc_re, s->alt, rc_off,
                                policies, "knapsack", err);
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
    ks_param_table,
};

LOOM_PLUGIN_DEFINE(knapsack, ks_info);
