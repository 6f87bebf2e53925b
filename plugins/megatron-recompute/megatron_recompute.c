/*
 * megatron_recompute.c - the "megatron-recompute" memory tuner: Megatron-LM
 * applies one recomputation setting to the whole model, and a competent
 * user picks the cheapest that fits. The settings are none,
 * `--recompute-granularity selective`, and `--recompute-granularity full
 * --recompute-method block --recompute-num-layers N` for N = 1 up to the
 * most layers a chunk holds (full recomputation of the first N layers of
 * every model chunk, the rest stored; N = all is plain full). Under each,
 * every rank's peak (static bytes plus the activation peak of its order,
 * from the memory-tuning kit's timeline: exact without simulating) is
 * checked against the cap; of the settings that fit on every rank, the one
 * whose busiest rank recomputes least wins (ties: the earlier setting;
 * the first block setting that fits ends the search when no layer
 * recomputes faster than it stores, since every later one costs more).
 * LOOM_EINFEASIBLE names the rank and the bytes short when even full
 * recomputation does not fit.
 */
#include <string.h>
#include <loom/kits/memtune.h>

typedef struct mr_self {
    const loom_host_api *host;
    loom_mt_timeline tl;
    int64_t *pair_bytes;
    int32_t cap_pairs;
    double *rank_ms;      /* recomputation added per rank, cap_ranks entries */
    int32_t cap_ranks;
} mr_self;

/* Creates an instance. */
static int mr_create(const loom_host_api *host, loom_ctx *ctx, void *plugin_state, void **self,
                     loom_error *err)
{
    (void)ctx;
    (void)plugin_state;
    mr_self *s = host->alloc(sizeof *s);
    if (!s)
        return host->error(err, LOOM_ENOMEM, "megatron-recompute: out of memory");
    memset(s, 0, sizeof *s);
    s->host = host;
    *self = s;
    return LOOM_OK;
}

/* Releases an instance and its scratch. */
static void mr_destroy(void *self)
{
    mr_self *s = self;
    if (!s)
        return;
    loom_mt_timeline_free(s->host, &s->tl);
    s->host->free(s->pair_bytes);
    s->host->free(s->rank_ms);
    s->host->free(s);
}

/* One Megatron-LM setting: `policy` for every layer entry, or with
 * block > 0 full recomputation of each pair's first `block` entries and
 * none for the rest. */
typedef struct mr_setting {
    int policy;
    int32_t block;
} mr_setting;

/* The policy the setting gives a pair's k-th layer entry. */
static int setting_policy(mr_setting st, int32_t k)
{
    if (st.block > 0)
        return k < st.block ? LOOM_POLICY_FULL : LOOM_POLICY_NONE;
    return st.policy;
}

/* Writes the setting's policy of every layer entry into policies[]. */
static void apply_setting(const loom_stage_graph *g, mr_setting st, uint8_t *policies)
{
    for (int32_t p = 0; p < g->n_pairs; p++)
        for (int32_t e = g->pair_layer_off[p]; e < g->pair_layer_off[p + 1]; e++)
            policies[e] = (uint8_t)setting_policy(st, e - g->pair_layer_off[p]);
}

/* 1 when full recomputation adds no less backward time than none on
 * every layer entry: then each block setting costs at least the one
 * before it (the per-rank sums only gain non-negative terms, and
 * rounding keeps the order), and full at least every block. */
static int blocks_cost_more(const loom_stage_graph *g)
{
    for (int32_t e = 0; e < g->n_layer_entries; e++) {
        const loom_policy_option *o = &g->layer_options[(size_t)e * LOOM_POLICY_COUNT];
        if (!(o[LOOM_POLICY_FULL].backward_ms - o[LOOM_POLICY_NONE].backward_ms >= 0))
            return 0;
    }
    return 1;
}

/* Gives every layer entry the cheapest policy that fits (file comment). */
static int mr_tune(void *self, const loom_stage_graph *g, const loom_schedule *sched,
                   uint8_t *policies, loom_error *err)
{
    mr_self *s = self;
    const loom_host_api *host = s->host;
    int rc = loom_mt_check_inputs(host, g, sched, policies, "megatron-recompute", err);
    if (rc != LOOM_OK)
        return rc;
    if (!g->layer_options || !g->pair_layer_off || g->n_layer_entries < 1)
        return LOOM_OK; /* nothing to choose (a stage-times problem) */
    mr_setting best = {LOOM_POLICY_NONE, 0};
    if (g->memory_cap_bytes > 0) {
        if (g->n_pairs > s->cap_pairs) {
            void *p = host->realloc(s->pair_bytes, (size_t)g->n_pairs * sizeof *s->pair_bytes);
            if (!p)
                return host->error(err, LOOM_ENOMEM, "megatron-recompute: out of memory");
            s->pair_bytes = p;
            s->cap_pairs = g->n_pairs;
        }
        if (g->n_ranks > s->cap_ranks) {
            void *p = host->realloc(s->rank_ms, (size_t)g->n_ranks * sizeof *s->rank_ms);
            if (!p)
                return host->error(err, LOOM_ENOMEM, "megatron-recompute: out of memory");
            s->rank_ms = p;
            s->cap_ranks = g->n_ranks;
        }
        if ((rc = loom_mt_timeline_build(host, &s->tl, g, sched, err)) != LOOM_OK)
            return rc;
        int32_t most_layers = 0;
        for (int32_t p = 0; p < g->n_pairs; p++) {
            int32_t n = g->pair_layer_off[p + 1] - g->pair_layer_off[p];
            most_layers = n > most_layers ? n : most_layers;
        }
        /* none, selective, then block N = 1 .. most_layers - 1, then full */
        int32_t n_settings = 2 + (most_layers > 1 ? most_layers - 1 : 0) + 1;
        int32_t rank = -1;
        double short_bytes = 0, best_ms = -1;
        int ordered = blocks_cost_more(g);
        for (int32_t i = 0; i < n_settings; i++) {
            mr_setting st = {i == 0 ? LOOM_POLICY_NONE : i == 1 ? LOOM_POLICY_SELECTIVE
                                                                  : LOOM_POLICY_FULL,
                             i >= 2 && i < n_settings - 1 ? i - 1 : 0};
            apply_setting(g, st, policies);
            double ms = loom_mt_policy_costs(g, policies, s->pair_bytes, s->rank_ms);
            if ((rank = loom_mt_first_over_cap(&s->tl, g, s->pair_bytes, &short_bytes)) >= 0)
                continue;
            if (best_ms < 0 || ms < best_ms) {
                best = st;
                best_ms = ms;
            }
            if (i == 0)
                break; /* nothing recomputed: nothing is cheaper */
            if (i >= 2 && ordered)
                break; /* the first block that fits: the later ones cost more */
        }
        if (best_ms < 0)
            return host->error(err, LOOM_EINFEASIBLE,
                               "megatron-recompute: rank %d cannot fit the memory cap of %.0f "
                               "bytes even with full recomputation: %.0f bytes short",
                               rank, g->memory_cap_bytes, short_bytes);
    }
    memset(policies, best.policy, (size_t)g->n_layer_entries);
    apply_setting(g, best, policies);
    return LOOM_OK;
}

/* The interleaver budgets with the graph as built (this tuner's choice
 * follows the order, as Megatron's setting follows the schedule). */
static int mr_view(void *self)
{
    (void)self;
    return LOOM_VIEW_AS_BUILT;
}

static const loom_memory_tuner_vtable mr_vtable = {
    { sizeof(loom_memory_tuner_vtable), LOOM_MEMORY_TUNER_VERSION },
    mr_create,
    mr_destroy,
    mr_tune,
    mr_view,
};

/* Returns the memory_tuner vtable for role "memory_tuner", else NULL. */
static const loom_role_header *mr_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_MEMORY_TUNER) == 0)
        return &mr_vtable.header;
    return NULL;
}

static const loom_plugin_info mr_info = {
    LOOM_PLUGIN_INFO_HEADER,
    "org.loom.megatron-recompute",
    "1.0.0",
    NULL,
    NULL,
    mr_role,
    NULL, /* no params */
};

LOOM_PLUGIN_DEFINE(megatron_recompute, mr_info);
