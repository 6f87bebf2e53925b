/* graph_stage_times.c - the stage graph of a stage-times problem: one flow
 * of P*V positions, position s on rank stage_rank[s] (s % P, Megatron's
 * interleaved placement, when the problem gives none), every microbatch
 * through every position forward and back. */
#include <math.h>
#include <stdlib.h>
#include <loom/kits/graph.h>
#include <loom/common.h>

int loom_graph_from_stage_times(const loom_stage_times *st, int split_backward,
                                loom_stage_graph **out, loom_error *err)
{
    int32_t P = st->ranks, V = st->virtual_stages, M = st->microbatches;
    if (P < 1 || V < 1 || M < 1)
        return loom_error_format(err, LOOM_EINVAL,
                              "stage-times: ranks, virtual_stages and microbatches must be >= 1");
    int32_t S = P * V;
    int split = split_backward || st->split_backward;
    int32_t per_mb = S * (split ? 3 : 2);
    int64_t n_stages = (int64_t)M * per_mb;
    /* edges per mb: F chain S-1, F->B 1, B chain S-1, W<-I S */
    int64_t n_edges = (int64_t)M * ((S - 1) + 1 + (S - 1) + (split ? S : 0));
    if (n_stages > 50000000 || n_edges > 100000000)
        return loom_error_format(err, LOOM_EINVAL,
                              "stage-times: %lld stages is more than Loom plans at once",
                              (long long)n_stages);
    loom_stage_graph *g = loom_graph_alloc((int32_t)n_stages, (int32_t)n_edges,
                                           P, M, M * S, M * S);
    if (!g)
        return loom_error_format(err, LOOM_ENOMEM, "stage-times: out of memory");
    g->n_microbatches = M;
    g->memory_cap_bytes = st->memory_cap_bytes;
    int64_t *held = split ? loom_graph_alloc_weight_held(g) : NULL;
    /* rank and chunk (index among its rank's stages) of every position */
    int32_t *rank_of = calloc((size_t)S, sizeof *rank_of);
    int32_t *chunk_of = calloc((size_t)S, sizeof *chunk_of);
    int32_t *seen = calloc((size_t)P, sizeof *seen);
    if ((split && !held) || !rank_of || !chunk_of || !seen) {
        free(rank_of);
        free(chunk_of);
        free(seen);
        loom_graph_free(g);
        return loom_error_format(err, LOOM_ENOMEM, "stage-times: out of memory");
    }
    int rc = LOOM_OK;
    for (int32_t s = 0; s < S && rc == LOOM_OK; s++) {
        rank_of[s] = st->stage_rank ? st->stage_rank[s] : s % P;
        if (rank_of[s] < 0 || rank_of[s] >= P)
            rc = loom_error_format(err, LOOM_EINVAL, "stage-times: stage %d on rank %d, "
                                "expected 0..%d", s, rank_of[s], P - 1);
        else
            chunk_of[s] = seen[rank_of[s]]++;
    }
    for (int32_t r = 0; r < P && rc == LOOM_OK; r++)
        if (seen[r] != V)
            rc = loom_error_format(err, LOOM_EINVAL, "stage-times: rank %d runs %d stages, "
                                "expected virtual_stages = %d", r, seen[r], V);
    free(seen);
    if (rc != LOOM_OK) {
        free(rank_of);
        free(chunk_of);
        loom_graph_free(g);
        return rc;
    }

    int32_t e = 0;
    for (int32_t mb = 0; mb < M; mb++) {
        double scale = st->microbatch_scale ? st->microbatch_scale[mb] : 1.0;
        int32_t base = mb * per_mb;
        g->group_flow[mb] = 0;
        g->group_microbatch[mb] = mb;
        for (int32_t i = 0; i < per_mb; i++) {
            int32_t id = base + i;
            int32_t s, kind;
            if (i < S) {
                s = i;
                kind = LOOM_STAGE_F;
            } else if (!split) {
                s = S - 1 - (i - S);
                kind = LOOM_STAGE_B;
            } else {
                int32_t j = i - S; /* I/W interleaved per position, last first */
                s = S - 1 - j / 2;
                kind = (j % 2) ? LOOM_STAGE_W : LOOM_STAGE_I;
            }
            int32_t pair = mb * S + s;
            g->rank[id] = rank_of[s];
            g->kind[id] = (uint8_t)kind;
            g->module[id] = -1;
            g->flow[id] = 0;
            g->position[id] = s;
            g->chunk[id] = chunk_of[s];
            g->microbatch[id] = mb;
            g->sub[id] = 0;
            g->group[id] = mb;
            g->pair[id] = pair;
            g->pred_off[id] = e;
            if (kind == LOOM_STAGE_F) {
                g->pair_forward[pair] = id;
                if (s > 0) {
                    g->pred[e] = id - 1;
                    g->pred_p2p_ms[e++] = rank_of[s - 1] == rank_of[s] ? 0
                                        : st->p2p_stage_ms ? st->p2p_stage_ms[s - 1]
                                                           : st->p2p_ms;
                }
            } else if (kind == LOOM_STAGE_W) {
                g->pair_weight[pair] = id;
                g->pred[e] = id - 1; /* its I */
                g->pred_p2p_ms[e++] = 0;
            } else { /* B or I */
                g->pair_backward[pair] = id;
                if (s == S - 1) {
                    g->pred[e] = base + S - 1; /* own forward */
                    g->pred_p2p_ms[e++] = 0;
                } else {
                    /* the previous backward (B or I) of position s + 1 */
                    g->pred[e] = split ? id - 2 : id - 1;
                    g->pred_p2p_ms[e++] = rank_of[s + 1] == rank_of[s] ? 0
                                        : st->p2p_stage_ms ? st->p2p_stage_ms[s + 1]
                                                           : st->p2p_ms;
                }
            }
        }
        for (int32_t s = 0; s < S; s++) {
            int32_t pair = mb * S + s;
            double f = st->forward_ms[s] * scale, b, w;
            if (st->split_backward) {
                w = st->weight_grad_ms[s] * scale;
                b = st->input_grad_ms[s] * scale + w;
            } else {
                b = st->backward_ms[s] * scale;
                w = split ? b / 2 : 0;
            }
            double act = st->activation_bytes ? st->activation_bytes[s] : 1.0;
            int64_t bytes = (int64_t)llround(act * scale);
            int64_t keep = st->weight_grad_bytes
                               ? (int64_t)llround(st->weight_grad_bytes[s] * scale) : bytes;
            g->pair_layer_off[pair] = pair; /* one entry per pair */
            g->pair_layer_off[pair + 1] = pair + 1;
            for (int p = 0; p < LOOM_POLICY_COUNT; p++) {
                loom_policy_option *o = &g->layer_options[(size_t)pair * LOOM_POLICY_COUNT + p];
                o->forward_ms = f;
                o->backward_ms = b;
                o->weight_grad_ms = split ? w : 0;
                o->activation_bytes = bytes;
                if (held)
                    held[(size_t)pair * LOOM_POLICY_COUNT + p] = keep < bytes ? keep : bytes;
            }
        }
    }
    free(rank_of);
    free(chunk_of);
    g->pred_off[n_stages] = e;
    g->n_edges = e;
    g->group_pred_off[0] = 0;
    for (int32_t k = 1; k <= M; k++)
        g->group_pred_off[k] = 0;
    loom_graph_apply_policies(g);
    *out = g;
    return LOOM_OK;
}
