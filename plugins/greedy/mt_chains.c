/*
 * mt_chains.c - per-layer policy chains: each layer entry's sequence of
 * ever more frugal policies, starting from NONE, that the greedy descent
 * walks (PipeWeaver section 6.3's per-layer memory options).
 */
#include <string.h>
#include "memtune.h"

/* Releases the chains' arrays. */
void loom_mt_entry_chains_free(const loom_host_api *host,
                               loom_mt_entry_chains *c)
{
    host->free(c->chain_off);
    host->free(c->chain_ms);
    host->free(c->chain_bytes);
    host->free(c->chain_pol);
    host->free(c->state);
    host->free(c->pair_bytes);
    memset(c, 0, sizeof *c);
}

/* Grows the arrays for n_entries entries and n_pairs pairs. */
static int mt_chains_reserve(const loom_host_api *host,
                             loom_mt_entry_chains *c, int32_t n_entries,
                             int32_t n_pairs)
{
    if (n_entries <= c->cap_entries && n_pairs <= c->cap_pairs && c->chain_off)
        return LOOM_OK;
    loom_mt_entry_chains_free(host, c);
    size_t ne = (size_t)n_entries + 1, np = (size_t)n_pairs + 1;
    size_t ns = ne * LOOM_POLICY_COUNT;
    c->chain_off = host->alloc(ne * sizeof *c->chain_off);
    c->chain_ms = host->alloc(ns * sizeof *c->chain_ms);
    c->chain_bytes = host->alloc(ns * sizeof *c->chain_bytes);
    c->chain_pol = host->alloc(ns * sizeof *c->chain_pol);
    c->state = host->alloc(ne * sizeof *c->state);
    c->pair_bytes = host->alloc(np * sizeof *c->pair_bytes);
    if (!c->chain_off || !c->chain_ms || !c->chain_bytes || !c->chain_pol ||
        !c->state || !c->pair_bytes) {
        loom_mt_entry_chains_free(host, c);
        return LOOM_ENOMEM;
    }
    c->cap_entries = n_entries;
    c->cap_pairs = n_pairs;
    return LOOM_OK;
}

/* The policy after `cur` on entry e's chain, or -1 (see header). */
static int mt_next_policy(const loom_stage_graph *g, int32_t e, int cur)
{
    int64_t cur_bytes = loom_mt_entry_bytes(g, e, cur);
    int best = -1;
    for (int p = 0; p < LOOM_POLICY_COUNT; p++) {
        int64_t b = loom_mt_entry_bytes(g, e, p);
        if (b >= cur_bytes)
            continue;
        if (best < 0 || b > loom_mt_entry_bytes(g, e, best) ||
            (b == loom_mt_entry_bytes(g, e, best) &&
             loom_mt_entry_ms(g, e, p) < loom_mt_entry_ms(g, e, best)))
            best = p;
    }
    return best;
}

/* Builds the chains (see header). */
int loom_mt_entry_chains_build(const loom_host_api *host,
                               loom_mt_entry_chains *c,
                               const loom_stage_graph *g, loom_error *err)
{
    if (mt_chains_reserve(host, c, g->n_layer_entries, g->n_pairs) != LOOM_OK)
        return host->error(err, LOOM_ENOMEM, "memory tuner: out of memory");
    int32_t k = 0;
    for (int32_t e = 0; e < g->n_layer_entries; e++) {
        c->chain_off[e] = k;
        c->state[e] = 0;
        for (int p = LOOM_POLICY_NONE; p >= 0; p = mt_next_policy(g, e, p)) {
            c->chain_pol[k] = (uint8_t)p;
            c->chain_ms[k] = loom_mt_entry_ms(g, e, p);
            c->chain_bytes[k] = loom_mt_entry_bytes(g, e, p);
            k++;
        }
    }
    c->chain_off[g->n_layer_entries] = k;
    for (int32_t p = 0; p < g->n_pairs; p++) {
        int64_t sum = 0;
        for (int32_t e = g->pair_layer_off[p]; e < g->pair_layer_off[p + 1]; e++)
            sum += c->chain_bytes[c->chain_off[e]];
        c->pair_bytes[p] = sum;
    }
    return LOOM_OK;
}

/* The units view (see header). */
loom_mt_units loom_mt_entry_units(loom_mt_entry_chains *c,
                                  const loom_stage_graph *g)
{
    loom_mt_units u = {g->n_pairs, g->pair_layer_off, c->chain_off,
                       c->chain_ms, c->chain_bytes, c->state};
    return u;
}

/* Writes every entry's policy from its chain state (u may be NULL: the
 * chains hold the states the units view points at). */
void loom_mt_entry_materialise(void *user, const loom_stage_graph *g,
                               const loom_mt_units *u, uint8_t *policies)
{
    const loom_mt_entry_chains *c = user;
    (void)u;
    for (int32_t e = 0; e < g->n_layer_entries; e++)
        policies[e] = c->chain_pol[c->chain_off[e] + c->state[e]];
}

/* Total latency at the current states (see header). */
double loom_mt_entry_total_ms(const loom_mt_entry_chains *c,
                              const loom_stage_graph *g)
{
    double sum = 0.0;
    for (int32_t e = 0; e < g->n_layer_entries; e++)
        sum += c->chain_ms[c->chain_off[e] + c->state[e]];
    return sum;
}
