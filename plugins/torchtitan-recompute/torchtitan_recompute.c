/*
 * torchtitan_recompute.c - the "torchtitan-recompute" memory tuner:
 * torchtitan applies one activation-checkpointing setting to the whole
 * model (torchtitan/distributed/activation_checkpoint.py), and a competent
 * user picks the cheapest that fits. The settings are mode "none", mode
 * "selective" with selective_ac_option N for N = the most layers one rank
 * builds down to 2 (the j-th transformer block a rank builds, counting
 * from 1 over its stages in ascending stage order, is checkpointed when
 * j mod N = 0, the rest stored), and mode "full" (every block). A
 * checkpointed block recomputes its whole forward in backward: Loom's
 * `full` policy; a stored one is `none`. Under each setting every rank's
 * peak (static bytes plus the activation peak of its order, from the
 * memory-tuning kit's timeline: exact without simulating) is checked
 * against the cap; of the settings that fit on every rank, the one whose
 * busiest rank recomputes least wins (ties: the earlier setting).
 * LOOM_EINFEASIBLE names the rank and the bytes short when even full
 * recomputation does not fit.
 */
#include <string.h>
#include <loom/kits/memtune.h>

typedef struct tr_self {
    const loom_host_api *host;
    loom_mt_timeline tl;
    int64_t *pair_bytes;   /* per pair, cap_pairs entries */
    int32_t *pair_key;     /* per pair: its (flow, position) key */
    int32_t cap_pairs;
    int32_t *key_entries;  /* per key: layer entries of a pair there */
    int32_t *key_rank;     /* per key: its rank, -1 when no pair */
    int32_t *key_before;   /* per key: entries of the rank's earlier keys */
    int32_t cap_keys;
    int32_t *flow_off;     /* per flow: its first key, n_flows + 1 */
    int32_t cap_flows;
    double *rank_ms;       /* recomputation added per rank */
    int64_t *rank_entries; /* layer entries a rank builds */
    int32_t cap_ranks;
} tr_self;

/* Creates an instance. */
static int tr_create(const loom_host_api *host, loom_ctx *ctx, void *plugin_state, void **self,
                     loom_error *err)
{
    (void)ctx;
    (void)plugin_state;
    tr_self *s = host->alloc(sizeof *s);
    if (!s)
        return host->error(err, LOOM_ENOMEM, "torchtitan-recompute: out of memory");
    memset(s, 0, sizeof *s);
    s->host = host;
    *self = s;
    return LOOM_OK;
}

/* Releases an instance and its scratch. */
static void tr_destroy(void *self)
{
    tr_self *s = self;
    if (!s)
        return;
    loom_mt_timeline_free(s->host, &s->tl);
    void *arrays[] = {s->pair_bytes, s->pair_key, s->key_entries, s->key_rank,
                      s->key_before, s->flow_off, s->rank_ms, s->rank_entries};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
        s->host->free(arrays[i]);
    s->host->free(s);
}

/* Reallocates *p to n entries (at least one) of `size` bytes; 0 when out
 * of memory (*p unchanged). */
static int tr_grow(const loom_host_api *host, void **p, int32_t n, size_t size)
{
    void *q = host->realloc(*p, (size_t)(n > 0 ? n : 1) * size);
    if (!q)
        return 0;
    *p = q;
    return 1;
}

/* Sizes the scratch for g: n_pairs, n_keys, n_flows and n_ranks entries. */
static int tr_reserve(tr_self *s, const loom_stage_graph *g, int32_t n_flows, int32_t n_keys,
                      loom_error *err)
{
    const loom_host_api *h = s->host;
    int ok = 1;
    if (g->n_pairs > s->cap_pairs) {
        ok = tr_grow(h, (void **)&s->pair_bytes, g->n_pairs, sizeof *s->pair_bytes) &&
             tr_grow(h, (void **)&s->pair_key, g->n_pairs, sizeof *s->pair_key);
        s->cap_pairs = ok ? g->n_pairs : 0;
    }
    if (ok && n_keys > s->cap_keys) {
        ok = tr_grow(h, (void **)&s->key_entries, n_keys, sizeof *s->key_entries) &&
             tr_grow(h, (void **)&s->key_rank, n_keys, sizeof *s->key_rank) &&
             tr_grow(h, (void **)&s->key_before, n_keys, sizeof *s->key_before);
        s->cap_keys = ok ? n_keys : 0;
    }
    if (ok && n_flows + 1 > s->cap_flows) {
        ok = tr_grow(h, (void **)&s->flow_off, n_flows + 1, sizeof *s->flow_off);
        s->cap_flows = ok ? n_flows + 1 : 0;
    }
    if (ok && g->n_ranks > s->cap_ranks) {
        ok = tr_grow(h, (void **)&s->rank_ms, g->n_ranks, sizeof *s->rank_ms) &&
             tr_grow(h, (void **)&s->rank_entries, g->n_ranks, sizeof *s->rank_entries);
        s->cap_ranks = ok ? g->n_ranks : 0;
    }
    return ok ? LOOM_OK : h->error(err, LOOM_ENOMEM, "torchtitan-recompute: out of memory");
}

/* Numbers the (flow, position) places of g's pairs in flow, then position
 * order (a rank builds its stages in that order), and fills, per pair, its
 * place and, per place, the layer entries the rank built before it; the
 * most entries one rank builds into *most. */
static int tr_places(tr_self *s, const loom_stage_graph *g, int32_t *most, loom_error *err)
{
    int32_t n_flows = 0;
    for (int32_t p = 0; p < g->n_pairs; p++) {
        int32_t fl = g->flow[g->pair_forward[p]];
        n_flows = fl + 1 > n_flows ? fl + 1 : n_flows;
    }
    int rc = tr_reserve(s, g, n_flows, 0, err);
    if (rc != LOOM_OK)
        return rc;
    memset(s->flow_off, 0, (size_t)(n_flows + 1) * sizeof *s->flow_off);
    for (int32_t p = 0; p < g->n_pairs; p++) {
        int32_t f = g->pair_forward[p], fl = g->flow[f];
        if (g->position[f] + 1 > s->flow_off[fl + 1])
            s->flow_off[fl + 1] = g->position[f] + 1;
    }
    for (int32_t fl = 0; fl < n_flows; fl++)
        s->flow_off[fl + 1] += s->flow_off[fl];
    int32_t n_keys = s->flow_off[n_flows];
    if ((rc = tr_reserve(s, g, n_flows, n_keys, err)) != LOOM_OK)
        return rc;
    for (int32_t k = 0; k < n_keys; k++)
        s->key_rank[k] = -1;
    for (int32_t p = 0; p < g->n_pairs; p++) {
        int32_t f = g->pair_forward[p], k = s->flow_off[g->flow[f]] + g->position[f];
        s->pair_key[p] = k;
        s->key_rank[k] = g->rank[f];
        s->key_entries[k] = g->pair_layer_off[p + 1] - g->pair_layer_off[p];
    }
    for (int32_t r = 0; r < g->n_ranks; r++)
        s->rank_entries[r] = 0;
    *most = 0;
    for (int32_t k = 0; k < n_keys; k++) {
        int32_t r = s->key_rank[k];
        if (r < 0)
            continue;
        s->key_before[k] = (int32_t)s->rank_entries[r];
        s->rank_entries[r] += s->key_entries[k];
        *most = s->rank_entries[r] > *most ? (int32_t)s->rank_entries[r] : *most;
    }
    return LOOM_OK;
}

/* The policy setting `every` gives entry e of pair p: none for 0, else
 * full when the entry's 1-based build count on its rank is a multiple. */
static int tr_policy(const tr_self *s, const loom_stage_graph *g, int32_t every, int32_t p,
                     int32_t e)
{
    if (every == 0)
        return LOOM_POLICY_NONE;
    int64_t j = (int64_t)s->key_before[s->pair_key[p]] + (e - g->pair_layer_off[p]) + 1;
    return j % every == 0 ? LOOM_POLICY_FULL : LOOM_POLICY_NONE;
}

/* Writes setting `every`'s policy of every layer entry into policies[]. */
static void tr_apply(const tr_self *s, const loom_stage_graph *g, int32_t every,
                     uint8_t *policies)
{
    for (int32_t p = 0; p < g->n_pairs; p++)
        for (int32_t e = g->pair_layer_off[p]; e < g->pair_layer_off[p + 1]; e++)
            policies[e] = (uint8_t)tr_policy(s, g, every, p, e);
}

/* The setting to apply: 0 (none), N (every N-th block) or 1 (full), the
 * cheapest that fits (file comment); policies[] is scratch. */
static int tr_choose(tr_self *s, const loom_stage_graph *g, const loom_schedule *sched,
                     int32_t *every, uint8_t *policies, loom_error *err)
{
    const loom_host_api *host = s->host;
    int32_t most = 0;
    int rc = tr_places(s, g, &most, err);
    if (rc == LOOM_OK)
        rc = loom_mt_timeline_build(host, &s->tl, g, sched, err);
    if (rc != LOOM_OK)
        return rc;
    /* none, then every most-th block down to every block (full) */
    int32_t rank = -1;
    double short_bytes = 0, best_ms = -1;
    for (int32_t n = 0; n <= most; n++) {
        int32_t k = n == 0 ? 0 : most + 1 - n;
        tr_apply(s, g, k, policies);
        double ms = loom_mt_policy_costs(g, policies, s->pair_bytes, s->rank_ms);
        if ((rank = loom_mt_first_over_cap(&s->tl, g, s->pair_bytes, &short_bytes)) >= 0)
            continue;
        if (best_ms < 0 || ms < best_ms) {
            *every = k;
            best_ms = ms;
        }
        if (n == 0)
            break; /* nothing recomputed: nothing is cheaper */
    }
    if (best_ms < 0)
        return host->error(err, LOOM_EINFEASIBLE,
                           "torchtitan-recompute: rank %d cannot fit the memory cap of %.0f "
                           "bytes even with full recomputation: %.0f bytes short",
                           rank, g->memory_cap_bytes, short_bytes);
    return LOOM_OK;
}

/* Gives every layer entry its policy under the cheapest setting that fits
 * (file comment). */
static int tr_tune(void *self, const loom_stage_graph *g, const loom_schedule *sched,
                   uint8_t *policies, loom_error *err)
{
    tr_self *s = self;
    int rc = loom_mt_check_inputs(s->host, g, sched, policies, "torchtitan-recompute", err);
    if (rc != LOOM_OK)
        return rc;
    if (!g->layer_options || !g->pair_layer_off || g->n_layer_entries < 1)
        return LOOM_OK; /* nothing to choose (a stage-times problem) */
    int32_t every = 0;
    if (g->memory_cap_bytes > 0 &&
        (rc = tr_choose(s, g, sched, &every, policies, err)) != LOOM_OK)
        return rc;
    memset(policies, LOOM_POLICY_NONE, (size_t)g->n_layer_entries);
    if (every > 0)
        tr_apply(s, g, every, policies);
    return LOOM_OK;
}

/* The interleaver budgets with the graph as built (this tuner's choice
 * follows the order, as torchtitan's setting follows the schedule). */
static int tr_view(void *self)
{
    (void)self;
    return LOOM_VIEW_AS_BUILT;
}

static const loom_memory_tuner_vtable tr_vtable = {
    { sizeof(loom_memory_tuner_vtable), LOOM_MEMORY_TUNER_VERSION },
    tr_create,
    tr_destroy,
    tr_tune,
    tr_view,
};

/* Returns the memory_tuner vtable for role "memory_tuner", else NULL. */
static const loom_role_header *tr_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_MEMORY_TUNER) == 0)
        return &tr_vtable.header;
    return NULL;
}

static const loom_plugin_info tr_info = {
    LOOM_PLUGIN_INFO_HEADER,
    "org.loom.torchtitan-recompute",
    "1.0.0",
    NULL,
    NULL,
    tr_role,
    NULL, /* no params */
};

LOOM_PLUGIN_DEFINE(torchtitan_recompute, tr_info);
