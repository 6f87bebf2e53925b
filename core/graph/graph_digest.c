/* graph_digest.c - a 64-bit digest of what plugins must not change in a
 * stage graph, so the engine can tell when one wrote into it. */
#include <string.h>
#include "stage_graph.h"

#define DIGEST_PRIME 0x100000001b3ULL

/* Four FNV-1a lanes: 32-byte blocks feed one 8-byte word to each lane, so
 * the four multiplications run in parallel; the remaining words and bytes
 * go to lane 0. Each step (lane ^ word) * prime is a bijection of the
 * lane, so a change confined to one word always changes its lane, and
 * fold() is a bijection of each lane given the others. */
typedef struct digest_state {
    uint64_t lane[4];
} digest_state;

/* Feeds n bytes at p (NULL: nothing) into s. */
static void mix(digest_state *s, const void *p, size_t n)
{
    const unsigned char *b = p;
    if (!p)
        return;
    uint64_t l0 = s->lane[0], l1 = s->lane[1], l2 = s->lane[2], l3 = s->lane[3];
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        uint64_t w[4];
        memcpy(w, b + i, sizeof w);
        l0 = (l0 ^ w[0]) * DIGEST_PRIME;
        l1 = (l1 ^ w[1]) * DIGEST_PRIME;
        l2 = (l2 ^ w[2]) * DIGEST_PRIME;
        l3 = (l3 ^ w[3]) * DIGEST_PRIME;
    }
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, sizeof w);
        l0 = (l0 ^ w) * DIGEST_PRIME;
    }
    for (; i < n; i++)
        l0 = (l0 ^ b[i]) * DIGEST_PRIME;
    s->lane[0] = l0, s->lane[1] = l1, s->lane[2] = l2, s->lane[3] = l3;
}

/* A state with four distinct starting lanes. */
static digest_state start(void)
{
    digest_state s = {{0xcbf29ce484222325ULL, 0x84222325cbf29ce4ULL, 0x9ce484222325cbf2ULL,
                       0x2325cbf29ce48422ULL}};
    return s;
}

/* The digest of the four lanes. */
static uint64_t fold(const digest_state *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (int k = 0; k < 4; k++)
        h = (h ^ s->lane[k]) * DIGEST_PRIME;
    return h;
}

uint64_t loom_graph_digest(const loom_stage_graph *g)
{
    size_t n = (size_t)g->n_stages, e = (size_t)g->n_edges, r = (size_t)g->n_ranks;
    size_t opts = (size_t)g->n_layer_entries * LOOM_POLICY_COUNT;
    digest_state st = start(), *h = &st;
    mix(h, &g->n_stages, sizeof g->n_stages);
    mix(h, g->rank, n * sizeof *g->rank);
    mix(h, g->kind, n * sizeof *g->kind);
    mix(h, g->group, n * sizeof *g->group);
    mix(h, g->pair, n * sizeof *g->pair);
    mix(h, g->duration_ms, n * sizeof *g->duration_ms);
    mix(h, g->mem_delta_bytes, n * sizeof *g->mem_delta_bytes);
    mix(h, g->pred_off, (n + 1) * sizeof *g->pred_off);
    mix(h, g->pred, e * sizeof *g->pred);
    mix(h, g->pred_p2p_ms, e * sizeof *g->pred_p2p_ms);
    mix(h, g->static_bytes, r * sizeof *g->static_bytes);
    mix(h, g->layer_options, opts * sizeof *g->layer_options);
    mix(h, g->layer_weight_held_bytes, opts * sizeof(int64_t));
    mix(h, g->layer_policy, (size_t)g->n_layer_entries * sizeof *g->layer_policy);
    mix(h, &g->memory_cap_bytes, sizeof g->memory_cap_bytes);
    if (g->tail_grad_sync_ms) { /* the iteration tail, when the graph has one */
        mix(h, g->tail_grad_sync_ms, r * sizeof *g->tail_grad_sync_ms);
        mix(h, g->tail_grad_bucket_ms, r * sizeof *g->tail_grad_bucket_ms);
        mix(h, g->tail_overlap, r * sizeof *g->tail_overlap);
        mix(h, g->tail_param_gather_ms, r * sizeof *g->tail_param_gather_ms);
        mix(h, g->tail_optimizer_ms, r * sizeof *g->tail_optimizer_ms);
        if (LOOM_STRUCT_HAS(g, loom_stage_graph, tail_param_prefetch_ms))
            mix(h, g->tail_param_prefetch_ms, r * sizeof(double));
    }
    if (LOOM_STRUCT_HAS(g, loom_stage_graph, tail_chunk_share) && g->tail_chunk_share &&
        g->tail_chunks > 0)
        mix(h, g->tail_chunk_share, r * (size_t)g->tail_chunks * sizeof(double));
    if (LOOM_STRUCT_HAS(g, loom_stage_graph, comm_ms) && g->comm_ms)
        mix(h, g->comm_ms, n * sizeof *g->comm_ms);
    if (LOOM_STRUCT_HAS(g, loom_stage_graph, revision))
        mix(h, &g->revision, sizeof g->revision);
    return fold(h);
}

uint64_t loom_graph_policy_digest(const loom_stage_graph *g)
{
    digest_state st = start();
    size_t n = (size_t)g->n_stages;
    mix(&st, g, sizeof *g); /* the fields themselves: counts, pointers */
    mix(&st, g->duration_ms, n * sizeof *g->duration_ms);
    mix(&st, g->mem_delta_bytes, n * sizeof *g->mem_delta_bytes);
    mix(&st, g->layer_policy, (size_t)g->n_layer_entries * sizeof *g->layer_policy);
    return fold(&st);
}
