/*
 * fixedpolicy.c - a memory tuner that gives every layer entry one fixed
 * policy, shared by the "none" and "full-recompute" plugins (see
 * <loom/kits/fixedpolicy.h>).
 */
#include <string.h>
#include <loom/kits/fixedpolicy.h>

int loom_fp_create(const loom_host_api *host, const char *who, uint8_t policy,
                   int view, loom_fp **out, loom_error *err)
{
    loom_fp *s = host->alloc(sizeof *s);
    if (!s)
        return host->error(err, LOOM_ENOMEM, "%s: out of memory", who);
    memset(s, 0, sizeof *s);
    s->host = host;
    s->who = who;
    s->policy = policy;
    s->view = view;
    *out = s;
    return LOOM_OK;
}

void loom_fp_destroy(loom_fp *fp)
{
    if (!fp)
        return;
    fp->host->free(fp->need);
    fp->host->free(fp);
}

int64_t loom_fp_frugal_bytes(const loom_stage_graph *g, int32_t p)
{
    if (!g->layer_options || !g->pair_layer_off)
        return g->mem_delta_bytes[g->pair_forward[p]];
    int64_t sum = 0;
    for (int32_t e = g->pair_layer_off[p]; e < g->pair_layer_off[p + 1]; e++) {
        const loom_policy_option *o =
            &g->layer_options[(size_t)e * LOOM_POLICY_COUNT];
        int64_t best = o[0].activation_bytes;
        for (int i = 1; i < LOOM_POLICY_OFFLOAD; i++) /* recomputation only */
            if (o[i].activation_bytes < best)
                best = o[i].activation_bytes;
        sum += best;
    }
    return sum;
}

int loom_fp_check_cap(loom_fp *s, const loom_stage_graph *g, loom_error *err)
{
    if (!(g->memory_cap_bytes > 0.0))
        return LOOM_OK;
    if (g->n_ranks > s->cap_need) {
        void *p = s->host->realloc(s->need, (size_t)g->n_ranks * sizeof *s->need);
        if (!p)
            return s->host->error(err, LOOM_ENOMEM, "%s: out of memory", s->who);
        s->need = p;
        s->cap_need = g->n_ranks;
    }
    memset(s->need, 0, (size_t)g->n_ranks * sizeof *s->need);
    for (int32_t p = 0; p < g->n_pairs; p++) {
        int32_t r = g->rank[g->pair_forward[p]];
        int64_t b = loom_fp_frugal_bytes(g, p);
        if (r >= 0 && r < g->n_ranks && b > s->need[r])
            s->need[r] = b;
    }
    for (int32_t r = 0; r < g->n_ranks; r++) {
        int64_t stat = g->static_bytes ? g->static_bytes[r] : 0;
        double total = (double)stat + (double)s->need[r];
        if (total > g->memory_cap_bytes)
            return s->host->error(
                err, LOOM_EINFEASIBLE,
                "%s: rank %d cannot fit the memory cap of %.0f bytes under "
                "any policy: static %lld + largest activation %lld bytes, "
                "%.0f bytes short",
                s->who, r, g->memory_cap_bytes, (long long)stat,
                (long long)s->need[r], total - g->memory_cap_bytes);
    }
    return LOOM_OK;
}

int loom_fp_tune(loom_fp *fp, const loom_stage_graph *g, uint8_t *policies,
                 loom_error *err)
{
    int rc = loom_fp_check_cap(fp, g, err);
    if (rc != LOOM_OK)
        return rc;
    for (int32_t e = 0; e < g->n_layer_entries; e++)
        policies[e] = fp->policy;
    return LOOM_OK;
}

int loom_fp_view(const loom_fp *fp)
{
    return fp->view;
}
