/* graph.c - stage graph and schedule storage: allocation, copy, policy
 * application and structural checks (see <loom/kits/graph.h>). */
#include <stdlib.h>
#include <string.h>
#include <loom/kits/graph.h>
#include <loom/common.h>

static void *zalloc(size_t n, size_t size)
{
    return calloc(n ? n : 1, size);
}

loom_stage_graph *loom_graph_alloc(int32_t n_stages, int32_t n_edges,
                                   int32_t n_ranks, int32_t n_groups,
                                   int32_t n_pairs, int32_t n_entries)
{
    loom_stage_graph *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->struct_size = sizeof *g;
    g->n_stages = n_stages;
    g->n_edges = n_edges;
    g->n_ranks = n_ranks;
    g->n_groups = n_groups;
    g->n_pairs = n_pairs;
    g->n_layer_entries = n_entries;
    size_t S = (size_t)n_stages;
    g->rank = zalloc(S, sizeof(int32_t));
    g->kind = zalloc(S, 1);
    g->module = zalloc(S, sizeof(int32_t));
    g->flow = zalloc(S, sizeof(int32_t));
    g->position = zalloc(S, sizeof(int32_t));
    g->chunk = zalloc(S, sizeof(int32_t));
    g->microbatch = zalloc(S, sizeof(int32_t));
    g->sub = zalloc(S, sizeof(int32_t));
    g->group = zalloc(S, sizeof(int32_t));
    g->pair = zalloc(S, sizeof(int32_t));
    g->duration_ms = zalloc(S, sizeof(double));
    g->mem_delta_bytes = zalloc(S, sizeof(int64_t));
    g->flops = zalloc(S, sizeof(double));
    g->pred_off = zalloc(S + 1, sizeof(int32_t));
    g->pred = zalloc((size_t)n_edges, sizeof(int32_t));
    g->pred_p2p_ms = zalloc((size_t)n_edges, sizeof(double));
    g->group_flow = zalloc((size_t)n_groups, sizeof(int32_t));
    g->group_microbatch = zalloc((size_t)n_groups, sizeof(int32_t));
    g->group_pred_off = zalloc((size_t)n_groups + 1, sizeof(int32_t));
    g->group_pred = NULL; /* set by the builder when groups have precedence */
    g->pair_forward = zalloc((size_t)n_pairs, sizeof(int32_t));
    g->pair_backward = zalloc((size_t)n_pairs, sizeof(int32_t));
    g->pair_weight = zalloc((size_t)n_pairs, sizeof(int32_t));
    g->pair_layer_off = zalloc((size_t)n_pairs + 1, sizeof(int32_t));
    g->layer_options = zalloc((size_t)n_entries * LOOM_POLICY_COUNT,
                              sizeof(loom_policy_option));
    g->layer_policy = zalloc((size_t)n_entries, 1);
    g->static_bytes = zalloc((size_t)n_ranks, sizeof(int64_t));
    if (!g->rank || !g->kind || !g->module || !g->flow || !g->position ||
        !g->chunk || !g->microbatch || !g->sub || !g->group || !g->pair ||
        !g->duration_ms || !g->mem_delta_bytes || !g->flops || !g->pred_off ||
        !g->pred || !g->pred_p2p_ms || !g->group_flow ||
        !g->group_microbatch || !g->group_pred_off || !g->pair_forward ||
        !g->pair_backward || !g->pair_weight || !g->pair_layer_off ||
        !g->layer_options || !g->layer_policy || !g->static_bytes) {
        loom_graph_free(g);
        return NULL;
    }
    for (int32_t p = 0; p < n_pairs; p++)
        g->pair_weight[p] = -1;
    return g;
}

void loom_graph_free(loom_stage_graph *g)
{
    if (!g)
        return;
    free(g->rank);
    free(g->kind);
    free(g->module);
    free(g->flow);
    free(g->position);
    free(g->chunk);
    free(g->microbatch);
    free(g->sub);
    free(g->group);
    free(g->pair);
    free(g->duration_ms);
    free(g->mem_delta_bytes);
    free(g->flops);
    free(g->pred_off);
    free(g->pred);
    free(g->pred_p2p_ms);
    free(g->group_flow);
    free(g->group_microbatch);
    free(g->group_pred_off);
    free(g->group_pred);
    free(g->pair_forward);
    free(g->pair_backward);
    free(g->pair_weight);
    free(g->pair_layer_off);
    free(g->layer_options);
    free(g->layer_policy);
    free(g->static_bytes);
    free(g->tail_grad_sync_ms);
    free(g->tail_grad_bucket_ms);
    free(g->tail_overlap);
    free(g->tail_param_gather_ms);
    free(g->tail_optimizer_ms);
    free(g->tail_param_prefetch_ms);
    free(g->layer_recompute_flops);
    free(g->layer_weight_held_bytes);
    free(g->tail_chunk_share);
    free(g->comm_ms);
    free(g);
}

int loom_graph_alloc_tail(loom_stage_graph *g)
{
    size_t R = (size_t)g->n_ranks, E = (size_t)g->n_layer_entries * LOOM_POLICY_COUNT;
    double *sync = zalloc(R, sizeof(double)), *bucket = zalloc(R, sizeof(double));
    double *gather = zalloc(R, sizeof(double)), *opt = zalloc(R, sizeof(double));
    double *prefetch = zalloc(R, sizeof(double)), *rf = zalloc(E, sizeof(double));
    uint8_t *overlap = zalloc(R, 1);
    if (!sync || !bucket || !gather || !opt || !prefetch || !rf || !overlap) {
        free(sync);
        free(bucket);
        free(gather);
        free(opt);
        free(prefetch);
        free(rf);
        free(overlap);
        return LOOM_ENOMEM;
    }
    free(g->tail_grad_sync_ms);
    free(g->tail_grad_bucket_ms);
    free(g->tail_overlap);
    free(g->tail_param_gather_ms);
    free(g->tail_optimizer_ms);
    free(g->tail_param_prefetch_ms);
    free(g->layer_recompute_flops);
    g->tail_grad_sync_ms = sync;
    g->tail_grad_bucket_ms = bucket;
    g->tail_overlap = overlap;
    g->tail_param_gather_ms = gather;
    g->tail_optimizer_ms = opt;
    g->tail_param_prefetch_ms = prefetch;
    g->layer_recompute_flops = rf;
    return LOOM_OK;
}

int64_t *loom_graph_alloc_weight_held(loom_stage_graph *g)
{
    if (!g->layer_weight_held_bytes)
        g->layer_weight_held_bytes =
            zalloc((size_t)g->n_layer_entries * LOOM_POLICY_COUNT, sizeof(int64_t));
    return g->layer_weight_held_bytes;
}

#define COPY(field, count)                                                     \
    memcpy(c->field, g->field, (size_t)(count) * sizeof *g->field)

loom_stage_graph *loom_graph_clone(const loom_stage_graph *g)
{
    loom_stage_graph *c = loom_graph_alloc(g->n_stages, g->n_edges, g->n_ranks,
                                           g->n_groups, g->n_pairs,
                                           g->n_layer_entries);
    if (!c)
        return NULL;
    c->n_microbatches = g->n_microbatches;
    COPY(rank, g->n_stages);
    COPY(kind, g->n_stages);
    COPY(module, g->n_stages);
    COPY(flow, g->n_stages);
    COPY(position, g->n_stages);
    COPY(chunk, g->n_stages);
    COPY(microbatch, g->n_stages);
    COPY(sub, g->n_stages);
    COPY(group, g->n_stages);
    COPY(pair, g->n_stages);
    COPY(duration_ms, g->n_stages);
    COPY(mem_delta_bytes, g->n_stages);
    COPY(flops, g->n_stages);
    COPY(pred_off, g->n_stages + 1);
    COPY(pred, g->n_edges);
    COPY(pred_p2p_ms, g->n_edges);
    COPY(group_flow, g->n_groups);
    COPY(group_microbatch, g->n_groups);
    COPY(group_pred_off, g->n_groups + 1);
    if (g->group_pred) {
        int32_t n = g->group_pred_off[g->n_groups];
        c->group_pred = malloc((size_t)(n ? n : 1) * sizeof(int32_t));
        if (!c->group_pred) {
            loom_graph_free(c);
            return NULL;
        }
        COPY(group_pred, n);
    }
    COPY(pair_forward, g->n_pairs);
    COPY(pair_backward, g->n_pairs);
    COPY(pair_weight, g->n_pairs);
    COPY(pair_layer_off, g->n_pairs + 1);
    COPY(layer_options, (size_t)g->n_layer_entries * LOOM_POLICY_COUNT);
    COPY(layer_policy, g->n_layer_entries);
    COPY(static_bytes, g->n_ranks);
    if (g->layer_weight_held_bytes) {
        if (!loom_graph_alloc_weight_held(c)) {
            loom_graph_free(c);
            return NULL;
        }
        COPY(layer_weight_held_bytes, (size_t)g->n_layer_entries * LOOM_POLICY_COUNT);
    }
    c->memory_cap_bytes = g->memory_cap_bytes;
    c->total_flops = g->total_flops;
    c->peak_flops_per_rank = g->peak_flops_per_rank;
    c->recompute_flops = g->recompute_flops;
    if (g->tail_grad_sync_ms) {
        if (loom_graph_alloc_tail(c) != LOOM_OK) {
            loom_graph_free(c);
            return NULL;
        }
        COPY(tail_grad_sync_ms, g->n_ranks);
        COPY(tail_grad_bucket_ms, g->n_ranks);
        COPY(tail_overlap, g->n_ranks);
        COPY(tail_param_gather_ms, g->n_ranks);
        COPY(tail_optimizer_ms, g->n_ranks);
        if (LOOM_STRUCT_HAS(g, loom_stage_graph, tail_param_prefetch_ms) &&
            g->tail_param_prefetch_ms)
            COPY(tail_param_prefetch_ms, g->n_ranks);
        COPY(layer_recompute_flops, (size_t)g->n_layer_entries * LOOM_POLICY_COUNT);
    }
    if (LOOM_STRUCT_HAS(g, loom_stage_graph, tail_chunk_share) && g->tail_chunk_share &&
        g->tail_chunks > 0) {
        size_t n = (size_t)g->n_ranks * (size_t)g->tail_chunks;
        c->tail_chunk_share = malloc(n * sizeof(double));
        if (!c->tail_chunk_share) {
            loom_graph_free(c);
            return NULL;
        }
        c->tail_chunks = g->tail_chunks;
        COPY(tail_chunk_share, n);
    }
    if (LOOM_STRUCT_HAS(g, loom_stage_graph, assumed))
        c->assumed = g->assumed;
    if (LOOM_STRUCT_HAS(g, loom_stage_graph, comm_ms) && g->comm_ms) {
        c->comm_ms = malloc((size_t)(g->n_stages ? g->n_stages : 1) * sizeof(double));
        if (!c->comm_ms) {
            loom_graph_free(c);
            return NULL;
        }
        COPY(comm_ms, g->n_stages);
    }
    return c;
}

void loom_graph_apply_policies(loom_stage_graph *g)
{
    double recompute = 0;
    for (int32_t p = 0; p < g->n_pairs; p++) {
        loom_policy_option o = {0};
        int64_t held = 0;
        for (int32_t e = g->pair_layer_off[p]; e < g->pair_layer_off[p + 1]; e++) {
            size_t at = (size_t)e * LOOM_POLICY_COUNT + g->layer_policy[e];
            const loom_policy_option *x = &g->layer_options[at];
            if (g->layer_recompute_flops)
                recompute += g->layer_recompute_flops[at];
            o.forward_ms += x->forward_ms;
            o.backward_ms += x->backward_ms;
            o.weight_grad_ms += x->weight_grad_ms;
            o.activation_bytes += x->activation_bytes;
            held += g->layer_weight_held_bytes ? g->layer_weight_held_bytes[at]
                                               : x->activation_bytes;
        }
        int32_t f = g->pair_forward[p], b = g->pair_backward[p],
                w = g->pair_weight[p];
        g->duration_ms[f] = o.forward_ms;
        g->mem_delta_bytes[f] = o.activation_bytes;
        if (w >= 0) {
            g->duration_ms[b] = o.backward_ms - o.weight_grad_ms;
            g->duration_ms[w] = o.weight_grad_ms;
            g->mem_delta_bytes[b] = held - o.activation_bytes;
            g->mem_delta_bytes[w] = -held;
        } else if (b >= 0) {
            g->duration_ms[b] = o.backward_ms;
            g->mem_delta_bytes[b] = -o.activation_bytes;
        }
    }
    g->recompute_flops = recompute;
}

void loom_graph_recompute_ms(const loom_stage_graph *g, double *per_rank_ms)
{
    for (int32_t r = 0; r < g->n_ranks; r++)
        per_rank_ms[r] = 0;
    for (int32_t p = 0; p < g->n_pairs; p++) {
        int32_t f = g->pair_forward[p];
        if (f < 0 || f >= g->n_stages || g->rank[f] < 0 || g->rank[f] >= g->n_ranks)
            continue;
        double extra = 0;
        for (int32_t e = g->pair_layer_off[p]; e < g->pair_layer_off[p + 1]; e++) {
            const loom_policy_option *o = &g->layer_options[(size_t)e * LOOM_POLICY_COUNT];
            const loom_policy_option *x = &o[g->layer_policy[e]];
            extra += (x->forward_ms + x->backward_ms) -
                     (o[LOOM_POLICY_NONE].forward_ms + o[LOOM_POLICY_NONE].backward_ms);
        }
        per_rank_ms[g->rank[f]] += extra;
    }
}

int loom_graph_check(const loom_stage_graph *g, loom_error *err)
{
    if (g->n_stages < 0 || g->n_ranks <= 0)
        return loom_error_format(err, LOOM_EINVAL, "stage graph: %d stages on %d ranks",
                              g->n_stages, g->n_ranks);
    for (int32_t s = 0; s < g->n_stages; s++) {
        if (g->rank[s] < 0 || g->rank[s] >= g->n_ranks)
            return loom_error_format(err, LOOM_EINVAL,
                                  "stage graph: stage %d on rank %d, expected 0..%d",
                                  s, g->rank[s], g->n_ranks - 1);
        if (g->group[s] < 0 || g->group[s] >= g->n_groups)
            return loom_error_format(err, LOOM_EINVAL,
                                  "stage graph: stage %d in group %d, expected 0..%d",
                                  s, g->group[s], g->n_groups - 1);
        if (!(g->duration_ms[s] >= 0))
            return loom_error_format(err, LOOM_EINVAL,
                                  "stage graph: stage %d has duration %g ms, expected >= 0",
                                  s, g->duration_ms[s]);
        for (int32_t e = g->pred_off[s]; e < g->pred_off[s + 1]; e++)
            if (g->pred[e] < 0 || g->pred[e] >= g->n_stages || g->pred[e] == s)
                return loom_error_format(err, LOOM_EINVAL,
                                      "stage graph: stage %d has predecessor %d",
                                      s, g->pred[e]);
    }
    /* memory per phase: W keeps a part of what its F allocated, never more */
    size_t n_opts = (size_t)g->n_layer_entries * LOOM_POLICY_COUNT;
    for (size_t k = 0; g->layer_weight_held_bytes && k < n_opts; k++)
        if (g->layer_weight_held_bytes[k] < 0 ||
            g->layer_weight_held_bytes[k] > g->layer_options[k].activation_bytes)
            return loom_error_format(err, LOOM_EINVAL,
                                  "stage graph: layer entry %d policy %d keeps %lld bytes "
                                  "for W, expected 0..%lld (its activation bytes)",
                                  (int)(k / LOOM_POLICY_COUNT), (int)(k % LOOM_POLICY_COUNT),
                                  (long long)g->layer_weight_held_bytes[k],
                                  (long long)g->layer_options[k].activation_bytes);
    return LOOM_OK;
}

int loom_graph_check_acyclic(const loom_stage_graph *g, loom_error *err)
{
    /* depth-first over predecessor edges; a predecessor still on the
     * stack closes a cycle */
    size_t n = (size_t)(g->n_stages > 0 ? g->n_stages : 0);
    uint8_t *state = calloc(n ? n : 1, 1); /* 0 new, 1 on the stack, 2 done */
    int32_t *stack = malloc((n ? n : 1) * sizeof *stack);
    int32_t *next = malloc((n ? n : 1) * sizeof *next); /* next pred edge */
    if (!state || !stack || !next) {
        free(state);
        free(stack);
        free(next);
        return loom_error_format(err, LOOM_ENOMEM, "stage graph: out of memory");
    }
    int rc = LOOM_OK;
    for (int32_t root = 0; root < g->n_stages && rc == LOOM_OK; root++) {
        if (state[root])
            continue;
        int32_t top = 0;
        stack[top++] = root;
        state[root] = 1;
        next[root] = g->pred_off[root];
        while (top > 0) {
            int32_t s = stack[top - 1];
            if (next[s] == g->pred_off[s + 1]) {
                state[s] = 2;
                top--;
                continue;
            }
            int32_t p = g->pred[next[s]++];
            if (state[p] == 1) {
                rc = loom_error_format(err, LOOM_EINVAL,
                                    "stage graph: the predecessors of stage %d lead back to "
                                    "it (a cycle)", p);
                break;
            }
            if (state[p] == 0) {
                state[p] = 1;
                next[p] = g->pred_off[p];
                stack[top++] = p;
            }
        }
    }
    free(state);
    free(stack);
    free(next);
    return rc;
}

loom_schedule *loom_schedule_new(int32_t n_ranks, int32_t n_stages)
{
    loom_schedule *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->struct_size = (uint32_t)sizeof *s;
    s->n_ranks = n_ranks;
    s->n_stages = n_stages;
    s->rank_off = calloc((size_t)n_ranks + 1, sizeof(int32_t));
    s->order = calloc((size_t)(n_stages ? n_stages : 1), sizeof(int32_t));
    s->fill_hosts = calloc((size_t)(n_stages ? n_stages : 1), sizeof(int32_t));
    if (!s->rank_off || !s->order || !s->fill_hosts) {
        loom_schedule_free(s);
        return NULL;
    }
    return s;
}

void loom_schedule_free(loom_schedule *s)
{
    if (!s)
        return;
    free(s->rank_off);
    free(s->order);
    free(s->fill_hosts);
    free(s);
}
