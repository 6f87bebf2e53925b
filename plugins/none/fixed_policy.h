/*
 * fixed_policy.h - a memory tuner that gives every layer entry one fixed
 * policy, shared by the "none" and "full-recompute" plugins. Each plugin
 * defines, before including this file once:
 *   LOOM_FP_POLICY  the policy (LOOM_POLICY_NONE, LOOM_POLICY_FULL, ...)
 *   LOOM_FP_WHO     its name for messages, a string literal
 *   LOOM_FP_ID      its plugin id, a string literal
 *   LOOM_FP_VIEW    LOOM_VIEW_FRUGAL or LOOM_VIEW_AS_BUILT
 * and then calls LOOM_PLUGIN_DEFINE(<name>, fp_info).
 *
 * The tuner rejects a graph whose memory cap cannot be met by any choice:
 * when some rank's static bytes plus its largest single pair activation
 * under the most frugal policies already exceed the cap.
 */
#ifndef LOOM_FIXED_POLICY_H
#define LOOM_FIXED_POLICY_H

#include <string.h>
#include <loom/loom.h>

typedef struct fp_self {
    const loom_host_api *host;
    loom_ctx *ctx;
    int64_t *need;     /* per rank: largest frugal activation, bytes */
    int32_t cap_need;
} fp_self;

/* Creates an instance with empty scratch. */
static int fp_create(const loom_host_api *host, loom_ctx *ctx,
                       void *plugin_state, void **self, loom_error *err)
{
    (void)plugin_state;
    fp_self *s = host->alloc(sizeof *s);
    if (!s)
        return host->error(err, LOOM_ENOMEM, LOOM_FP_WHO ": out of memory");
    memset(s, 0, sizeof *s);
    s->host = host;
    s->ctx = ctx;
    *self = s;
    return LOOM_OK;
}

/* Releases an instance and its scratch. */
static void fp_destroy(void *self)
{
    fp_self *s = self;
    if (!s)
        return;
    s->host->free(s->need);
    s->host->free(s);
}

/* Activation bytes of pair p when each of its layers takes its most
 * frugal policy (the sum over the pair's layer entries of the smallest
 * option). Without layer entries: the F stage's current delta. */
static int64_t fp_frugal_bytes(const loom_stage_graph *g, int32_t p)
{
    if (!g->layer_options || !g->pair_layer_off)
        return g->mem_delta_bytes[g->pair_forward[p]];
    int64_t sum = 0;
    for (int32_t e = g->pair_layer_off[p]; e < g->pair_layer_off[p + 1]; e++) {
        const loom_policy_option *o =
            &g->layer_options[(size_t)e * LOOM_POLICY_COUNT];
        int64_t best = o[0].activation_bytes;
        for (int i = 1; i < LOOM_POLICY_COUNT; i++)
            if (o[i].activation_bytes < best)
                best = o[i].activation_bytes;
        sum += best;
    }
    return sum;
}

/* LOOM_EINFEASIBLE when some rank cannot fit its static bytes plus its
 * largest frugal activation under the graph's cap; LOOM_OK otherwise. */
static int fp_check_cap(fp_self *s, const loom_stage_graph *g,
                          loom_error *err)
{
    if (!(g->memory_cap_bytes > 0.0))
        return LOOM_OK;
    if (g->n_ranks > s->cap_need) {
        void *p = s->host->realloc(s->need, (size_t)g->n_ranks * sizeof *s->need);
        if (!p)
            return s->host->error(err, LOOM_ENOMEM, LOOM_FP_WHO ": out of memory");
        s->need = p;
        s->cap_need = g->n_ranks;
    }
    memset(s->need, 0, (size_t)g->n_ranks * sizeof *s->need);
    for (int32_t p = 0; p < g->n_pairs; p++) {
        int32_t r = g->rank[g->pair_forward[p]];
        int64_t b = fp_frugal_bytes(g, p);
        if (r >= 0 && r < g->n_ranks && b > s->need[r])
            s->need[r] = b;
    }
    for (int32_t r = 0; r < g->n_ranks; r++) {
        int64_t stat = g->static_bytes ? g->static_bytes[r] : 0;
        double total = (double)stat + (double)s->need[r];
        if (total > g->memory_cap_bytes)
            return s->host->error(
                err, LOOM_EINFEASIBLE,
                LOOM_FP_WHO ": rank %d cannot fit the memory cap of %.0f bytes under "
                "any policy: static %lld + largest activation %lld bytes, "
                "%.0f bytes short",
                r, g->memory_cap_bytes, (long long)stat,
                (long long)s->need[r], total - g->memory_cap_bytes);
    }
    return LOOM_OK;
}

/* Sets every layer entry to LOOM_FP_POLICY once the cap is reachable. */
static int fp_tune(void *self, const loom_stage_graph *g,
                     const loom_schedule *schedule, uint8_t *policies,
                     loom_error *err)
{
    fp_self *s = self;
    (void)schedule;
    int rc = fp_check_cap(s, g, err);
    if (rc != LOOM_OK)
        return rc;
    for (int32_t e = 0; e < g->n_layer_entries; e++)
        policies[e] = LOOM_FP_POLICY;
    return LOOM_OK;
}

/* LOOM_FP_VIEW (LOOM_VIEW_FRUGAL or LOOM_VIEW_AS_BUILT): how the
 * interleaver should budget memory before this tuner runs. */
static int fp_view(void *self)
{
    (void)self;
    return LOOM_FP_VIEW;
}

static const loom_memory_tuner_vtable fp_vtable = {
    { sizeof(loom_memory_tuner_vtable), LOOM_MEMORY_TUNER_VERSION },
    fp_create,
    fp_destroy,
    fp_tune,
    fp_view,
};

/* Returns the memory_tuner vtable for role "memory_tuner", else NULL. */
static const loom_role_header *fp_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_MEMORY_TUNER) == 0)
        return &fp_vtable.header;
    return NULL;
}

static const loom_plugin_info fp_info = {
    LOOM_PLUGIN_INFO_HEADER,
    LOOM_FP_ID,
    "1.0.0",
    NULL,
    NULL,
    fp_role,
};

#endif
