/*
 * ilp_cache.c - the exact interleaver's answer for the last stage graph
 * it solved, kept in the plugin state so that every instance (the
 * search's evaluators and the engine's final replay) reuses one solve:
 * the time limit is spent once per graph. Keyed by a digest of what the
 * answer depends on (ranks, kinds, microbatches, durations, memory,
 * edges, the cap and the time limit).
 */
#include <stdatomic.h>
#include <string.h>
#include "ilp.h"

struct loom_ilpi_cache {
    const loom_host_api *host;
    atomic_flag lock;
    int valid;
    uint64_t digest;
    int32_t n, n_ranks;
    int32_t *rank_off, *order;
    loom_ilpi_result res;
};

/* FNV-1a over bytes. */
static uint64_t ilpi_mix(uint64_t h, const void *p, size_t len)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < len; i++) {
        h ^= c[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* Digest of g and the time limit (see the file comment). */
uint64_t loom_ilpi_digest(const loom_stage_graph *g, double timeout_ms)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    size_t n = (size_t)g->n_stages, e = (size_t)g->pred_off[g->n_stages];
    h = ilpi_mix(h, &g->n_stages, sizeof g->n_stages);
    h = ilpi_mix(h, &g->n_ranks, sizeof g->n_ranks);
    h = ilpi_mix(h, &g->n_microbatches, sizeof g->n_microbatches);
    h = ilpi_mix(h, g->rank, n * sizeof *g->rank);
    h = ilpi_mix(h, g->kind, n * sizeof *g->kind);
    h = ilpi_mix(h, g->microbatch, n * sizeof *g->microbatch);
    h = ilpi_mix(h, g->duration_ms, n * sizeof *g->duration_ms);
    h = ilpi_mix(h, g->mem_delta_bytes, n * sizeof *g->mem_delta_bytes);
    h = ilpi_mix(h, g->pred_off, (n + 1) * sizeof *g->pred_off);
    h = ilpi_mix(h, g->pred, e * sizeof *g->pred);
    h = ilpi_mix(h, g->pred_p2p_ms, e * sizeof *g->pred_p2p_ms);
    if (g->static_bytes)
        h = ilpi_mix(h, g->static_bytes, (size_t)g->n_ranks * sizeof *g->static_bytes);
    h = ilpi_mix(h, &g->memory_cap_bytes, sizeof g->memory_cap_bytes);
    return ilpi_mix(h, &timeout_ms, sizeof timeout_ms);
}

/* Plugin init: an empty cache. */
int loom_ilpi_cache_init(const loom_host_api *host, void **state, loom_error *err)
{
    loom_ilpi_cache *c = host->alloc(sizeof *c);
    if (!c)
        return host->error(err, LOOM_ENOMEM, "ilp: out of memory");
    memset(c, 0, sizeof *c);
    c->host = host;
    atomic_flag_clear(&c->lock);
    *state = c;
    return LOOM_OK;
}

/* Plugin fini: frees the cache. */
void loom_ilpi_cache_fini(void *state)
{
    loom_ilpi_cache *c = state;
    if (!c)
        return;
    c->host->free(c->rank_off);
    c->host->free(c->order);
    c->host->free(c);
}

/* Takes the cache's lock. */
static void ilpi_lock(loom_ilpi_cache *c)
{
    while (atomic_flag_test_and_set_explicit(&c->lock, memory_order_acquire))
        ;
}

/* Copies the cached answer for `digest` into the arrays; 1 on a hit. */
int loom_ilpi_cache_get(loom_ilpi_cache *c, uint64_t digest, const loom_stage_graph *g,
                        int32_t *rank_off, int32_t *order, loom_ilpi_result *res)
{
    if (!c)
        return 0;
    ilpi_lock(c);
    int hit = c->valid && c->digest == digest && c->n == g->n_stages &&
              c->n_ranks == g->n_ranks;
    if (hit) {
        memcpy(rank_off, c->rank_off, ((size_t)c->n_ranks + 1) * sizeof *rank_off);
        memcpy(order, c->order, (size_t)c->n * sizeof *order);
        *res = c->res;
    }
    atomic_flag_clear_explicit(&c->lock, memory_order_release);
    return hit;
}

/* Stores an answer (silently keeps none when out of memory). */
void loom_ilpi_cache_put(loom_ilpi_cache *c, uint64_t digest, const loom_stage_graph *g,
                         const int32_t *rank_off, const int32_t *order,
                         const loom_ilpi_result *res)
{
    if (!c)
        return;
    ilpi_lock(c);
    c->valid = 0;
    int32_t *ro = c->host->realloc(c->rank_off, ((size_t)g->n_ranks + 1) * sizeof *ro);
    if (ro)
        c->rank_off = ro;
    int32_t *o = c->host->realloc(c->order, ((size_t)g->n_stages + 1) * sizeof *o);
    if (o)
        c->order = o;
    if (ro && o) {
        memcpy(c->rank_off, rank_off, ((size_t)g->n_ranks + 1) * sizeof *ro);
        memcpy(c->order, order, (size_t)g->n_stages * sizeof *o);
        c->digest = digest;
        c->n = g->n_stages;
        c->n_ranks = g->n_ranks;
        c->res = *res;
        c->valid = 1;
    }
    atomic_flag_clear_explicit(&c->lock, memory_order_release);
}
