/* graph_digest.c - a 64-bit digest of what plugins must not change in a
 * stage graph, so the engine can tell when one wrote into it. */
#include <string.h>
#include "stage_graph.h"

/* FNV-1a over n bytes at p (NULL: nothing), continuing from h, taken
 * eight bytes at a time: each step (h ^ word) * prime is a bijection of h,
 * so a change confined to one word always changes the digest. */
static uint64_t mix(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    if (!p)
        return h;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, sizeof w);
        h ^= w;
        h *= 0x100000001b3ULL;
    }
    for (; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

uint64_t loom_graph_digest(const loom_stage_graph *g)
{
    size_t n = (size_t)g->n_stages, e = (size_t)g->n_edges, r = (size_t)g->n_ranks;
    size_t opts = (size_t)g->n_layer_entries * LOOM_POLICY_COUNT;
    uint64_t h = 0xcbf29ce484222325ULL;
    h = mix(h, &g->n_stages, sizeof g->n_stages);
    h = mix(h, g->rank, n * sizeof *g->rank);
    h = mix(h, g->kind, n * sizeof *g->kind);
    h = mix(h, g->group, n * sizeof *g->group);
    h = mix(h, g->pair, n * sizeof *g->pair);
    h = mix(h, g->duration_ms, n * sizeof *g->duration_ms);
    h = mix(h, g->mem_delta_bytes, n * sizeof *g->mem_delta_bytes);
    h = mix(h, g->pred_off, (n + 1) * sizeof *g->pred_off);
    h = mix(h, g->pred, e * sizeof *g->pred);
    h = mix(h, g->pred_p2p_ms, e * sizeof *g->pred_p2p_ms);
    h = mix(h, g->static_bytes, r * sizeof *g->static_bytes);
    h = mix(h, g->layer_options, opts * sizeof *g->layer_options);
    h = mix(h, g->layer_weight_held_bytes, opts * sizeof(int64_t));
    h = mix(h, g->layer_policy, (size_t)g->n_layer_entries * sizeof *g->layer_policy);
    h = mix(h, &g->memory_cap_bytes, sizeof g->memory_cap_bytes);
    if (g->tail_grad_sync_ms) { /* the iteration tail, when the graph has one */
        h = mix(h, g->tail_grad_sync_ms, r * sizeof *g->tail_grad_sync_ms);
        h = mix(h, g->tail_grad_bucket_ms, r * sizeof *g->tail_grad_bucket_ms);
        h = mix(h, g->tail_overlap, r * sizeof *g->tail_overlap);
        h = mix(h, g->tail_param_gather_ms, r * sizeof *g->tail_param_gather_ms);
        h = mix(h, g->tail_optimizer_ms, r * sizeof *g->tail_optimizer_ms);
        if (LOOM_STRUCT_HAS(g, loom_stage_graph, tail_param_prefetch_ms))
            h = mix(h, g->tail_param_prefetch_ms, r * sizeof(double));
    }
    if (LOOM_STRUCT_HAS(g, loom_stage_graph, tail_chunk_share) && g->tail_chunk_share &&
        g->tail_chunks > 0)
        h = mix(h, g->tail_chunk_share, r * (size_t)g->tail_chunks * sizeof(double));
    if (LOOM_STRUCT_HAS(g, loom_stage_graph, comm_ms) && g->comm_ms)
        h = mix(h, g->comm_ms, n * sizeof *g->comm_ms);
    if (LOOM_STRUCT_HAS(g, loom_stage_graph, revision))
        h = mix(h, &g->revision, sizeof g->revision);
    return h;
}
