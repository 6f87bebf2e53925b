/*
 * mt_chains.c - per-layer policy chains: each layer entry's sequence of
 * ever more frugal policies, starting from NONE, that the greedy descent
 * walks (PipeWeaver section 6.3's per-layer memory options).
 */
#include <string.h>
#include <loom/kits/memtune.h>

/* Releases the chains' arrays. */
void loom_mt_entry_chains_free(const loom_host_api *host,
                               loom_mt_entry_chains *c)
{
    host->free(c->chain_off);
    host->free(c->chain_end);
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
    c->chain_end = host->alloc(ne * sizeof *c->chain_end);
    c->chain_ms = host->alloc(ns * sizeof *c->chain_ms);
    c->chain_bytes = host->alloc(ns * sizeof *c->chain_bytes);
    c->chain_pol = host->alloc(ns * sizeof *c->chain_pol);
    c->state = host->alloc(ne * sizeof *c->state);
    c->pair_bytes = host->alloc(np * sizeof *c->pair_bytes);
    if (!c->chain_off || !c->chain_end || !c->chain_ms || !c->chain_bytes || !c->chain_pol ||
        !c->state || !c->pair_bytes) {
        loom_mt_entry_chains_free(host, c);
        return LOOM_ENOMEM;
    }
    c->cap_entries = n_entries;
    c->cap_pairs = n_pairs;
    return LOOM_OK;
}

/* Writes to pol the chain of one entry's options o (its first
 * n_policies): NONE, then each time the policy with the most bytes
 * strictly below the current one (ties: less time, then the lower
 * policy); returns its length. */
static int mt_chain_of(const loom_policy_option *o, int n_policies, uint8_t *pol)
{
    int n = 0;
    for (int cur = LOOM_POLICY_NONE; cur >= 0;) {
        pol[n++] = (uint8_t)cur;
        int best = -1;
        for (int p = 0; p < n_policies; p++) {
            if (o[p].activation_bytes >= o[cur].activation_bytes)
                continue;
            if (best < 0 || o[p].activation_bytes > o[best].activation_bytes ||
                (o[p].activation_bytes == o[best].activation_bytes &&
                 o[p].forward_ms + o[p].backward_ms <
                     o[best].forward_ms + o[best].backward_ms))
                best = p;
        }
        cur = best;
    }
    return n;
}

/* An earlier entry with the same options as entry e, whose chain e can
 * share, or -1: the entry before it (a run of identical layers) or the
 * entry at e's place in the previous pair (the same layer, another
 * microbatch). *p walks the pairs along with e. */
static int32_t mt_same_neighbour(const loom_stage_graph *g, int32_t e, int32_t *p)
{
    const size_t size = LOOM_POLICY_COUNT * sizeof *g->layer_options;
    const loom_policy_option *o = &g->layer_options[(size_t)e * LOOM_POLICY_COUNT];
    if (e > 0 && !memcmp(o, o - LOOM_POLICY_COUNT, size))
        return e - 1;
    while (*p < g->n_pairs && g->pair_layer_off[*p + 1] <= e)
        (*p)++;
    if (*p < 1 || *p >= g->n_pairs || g->pair_layer_off[*p] > e)
        return -1;
    int32_t at = g->pair_layer_off[*p - 1] + (e - g->pair_layer_off[*p]);
    if (at >= g->pair_layer_off[*p] || at < 0 ||
        memcmp(o, &g->layer_options[(size_t)at * LOOM_POLICY_COUNT], size))
        return -1;
    return at;
}

/* Slots of the table of distinct option rows seen while building, which
 * finds entries to share a chain with beyond the neighbours (a layer met
 * again after other layers); past three quarters full, rows not in it
 * get chains of their own. */
#define MT_SEEN_SLOTS 1024

/* An earlier entry in `seen` with entry e's options, or -1 after adding
 * e (while there is room). */
static int32_t mt_seen(const loom_stage_graph *g, int32_t *seen, int32_t *n_seen, int32_t e)
{
    const size_t size = LOOM_POLICY_COUNT * sizeof *g->layer_options;
    const loom_policy_option *o = &g->layer_options[(size_t)e * LOOM_POLICY_COUNT];
    uint64_t h = 1469598103934665603ull, w;
    for (size_t i = 0; i < size; i += sizeof w) {
        memcpy(&w, (const char *)o + i, sizeof w);
        h = (h ^ w) * 1099511628211ull;
    }
    for (uint32_t k = (uint32_t)(h ^ h >> 29) & (MT_SEEN_SLOTS - 1);; k = (k + 1) & (MT_SEEN_SLOTS - 1)) {
        if (seen[k] < 0) {
            if (*n_seen < MT_SEEN_SLOTS / 4 * 3) {
                seen[k] = e;
                (*n_seen)++;
            }
            return -1;
        }
        if (!memcmp(o, &g->layer_options[(size_t)seen[k] * LOOM_POLICY_COUNT], size))
            return seen[k];
    }
}

/* Builds the chains over none, selective and full (see header). */
int loom_mt_entry_chains_build(const loom_host_api *host,
                               loom_mt_entry_chains *c,
                               const loom_stage_graph *g, loom_error *err)
{
    return loom_mt_entry_chains_build_policies(host, c, g, LOOM_POLICY_OFFLOAD, err);
}

/* Builds the chains over the first n_policies policies (see header). */
int loom_mt_entry_chains_build_policies(const loom_host_api *host,
                                        loom_mt_entry_chains *c,
                                        const loom_stage_graph *g,
                                        int n_policies, loom_error *err)
{
    if (n_policies < 1 || n_policies > LOOM_POLICY_COUNT)
        n_policies = LOOM_POLICY_OFFLOAD;
    if (mt_chains_reserve(host, c, g->n_layer_entries, g->n_pairs) != LOOM_OK)
        return host->error(err, LOOM_ENOMEM, "memory tuner: out of memory");
    int32_t k = 0, walk = 0, seen[MT_SEEN_SLOTS], n_seen = 0;
    memset(seen, -1, sizeof seen);
    uint8_t pol[LOOM_POLICY_COUNT];
    for (int32_t e = 0; e < g->n_layer_entries; e++) {
        int32_t same = mt_same_neighbour(g, e, &walk);
        if (same < 0)
            same = mt_seen(g, seen, &n_seen, e);
        c->state[e] = 0;
        if (same >= 0) { /* share that entry's chain */
            c->chain_off[e] = c->chain_off[same];
            c->chain_end[e] = c->chain_end[same];
            continue;
        }
        const loom_policy_option *o =
            &g->layer_options[(size_t)e * LOOM_POLICY_COUNT];
        int len = mt_chain_of(o, n_policies, pol);
        c->chain_off[e] = k;
        for (int i = 0; i < len; i++, k++) {
            c->chain_pol[k] = pol[i];
            c->chain_ms[k] = o[pol[i]].forward_ms + o[pol[i]].backward_ms;
            c->chain_bytes[k] = o[pol[i]].activation_bytes;
        }
        c->chain_end[e] = k;
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
                       c->chain_ms, c->chain_bytes, c->state, c->chain_end};
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
