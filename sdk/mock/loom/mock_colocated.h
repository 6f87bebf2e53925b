/*
 * loom/mock_colocated.h - a small stage-graph builder for the tests of the
 * colocated-order kit (<loom/kits/colocated.h>) and the colocated
 * (Optimus) interleavers and planners: flows of positions on given ranks with
 * given forward / backward times, flow inputs, M microbatches, one
 * sub-microbatch each, no split backward, 1 byte of activation per stage,
 * and optionally replica flows that run only some microbatches.
 * It follows the core graph builder's rules: a flow's first forward waits
 * for the last forward of each input flow (same microbatch); a flow's last
 * backward waits for its own last forward and the first backward of each
 * consumer flow. Test code only (static functions).
 * In-tree test code: it builds graphs and runs the simulator with the
 * core's internal engine API (engine_api.h) and Check (testutil.h), so it
 * is not installed with the SDK.
 */
#ifndef LOOM_MOCK_COLOCATED_H
#define LOOM_MOCK_COLOCATED_H

#include <stdlib.h>
#include <string.h>
#include "engine_api.h"

#define CO_TG_MAX_POS 64
#define CO_TG_MAX_FLOWS 8

typedef struct co_tg_flow {
    int32_t n_pos;
    int32_t rank[CO_TG_MAX_POS];
    double f_ms[CO_TG_MAX_POS], b_ms[CO_TG_MAX_POS];
    int32_t n_inputs, inputs[4];
    int32_t module;
    int32_t masked;       /* 1: the flow runs only microbatches with runs[mb] */
    uint8_t runs[64];     /* replica flows: which microbatches it runs */
} co_tg_flow;

/* 1 when flow f runs microbatch mb. */
static int co_tg_runs(const co_tg_flow *fl, int32_t f, int32_t mb)
{
    return !fl[f].masked || fl[f].runs[mb];
}

/* Stage id of (mb, flow f, position p, back): microbatch by microbatch,
 * flow by flow (only flows that run it), F by position then B reversed. */
static int32_t co_tg_id(const co_tg_flow *fl, int32_t n_flows, int32_t mb,
                        int32_t f, int32_t p, int back)
{
    int32_t base = 0;
    for (int32_t m = 0; m <= mb; m++)
        for (int32_t k = 0; k < n_flows; k++) {
            if (m == mb && k == f)
                break;
            if (co_tg_runs(fl, k, m))
                base += 2 * fl[k].n_pos;
        }
    int32_t n = fl[f].n_pos;
    return base + (back ? n + (n - 1 - p) : p);
}

/* Builds the graph of `n_flows` flows over `n_ranks` ranks, M
 * microbatches. Caller frees with loom_graph_free. */
static loom_stage_graph *co_tg_build(const co_tg_flow *fl, int32_t n_flows,
                                     int32_t n_ranks, int32_t M)
{
    int32_t n_stages = 0, edges = 0, pairs = 0;
    for (int32_t mb = 0; mb < M; mb++)
        for (int32_t f = 0; f < n_flows; f++) {
            if (!co_tg_runs(fl, f, mb))
                continue;
            n_stages += 2 * fl[f].n_pos;
            pairs += fl[f].n_pos;
            edges += 2 * (fl[f].n_pos - 1) + 1 + fl[f].n_inputs;
            for (int32_t c = 0; c < n_flows; c++)
                for (int32_t k = 0; k < fl[c].n_inputs; k++)
                    edges += fl[c].inputs[k] == f;
        }
    loom_stage_graph *g = loom_graph_alloc(n_stages, edges, n_ranks, n_flows * M,
                                           pairs, pairs);
    g->n_microbatches = M;
    g->group_pred = calloc((size_t)(n_flows * M * 4 + 1), sizeof(int32_t));
    int32_t e = 0, ge = 0, pair = 0;
    for (int32_t mb = 0; mb < M; mb++)
        for (int32_t f = 0; f < n_flows; f++) {
            int32_t grp = mb * n_flows + f, n = fl[f].n_pos;
            g->group_flow[grp] = f;
            g->group_microbatch[grp] = mb;
            g->group_pred_off[grp] = ge;
            for (int32_t k = 0; k < fl[f].n_inputs; k++)
                if (co_tg_runs(fl, fl[f].inputs[k], mb))
                    g->group_pred[ge++] = mb * n_flows + fl[f].inputs[k];
            if (!co_tg_runs(fl, f, mb))
                continue;
            for (int32_t k = 0; k < 2 * n; k++) {
                int back = k >= n;
                int32_t p = back ? n - 1 - (k - n) : k;
                int32_t id = co_tg_id(fl, n_flows, mb, f, p, back);
                int32_t pid = pair + p;
                g->rank[id] = fl[f].rank[p];
                g->kind[id] = back ? LOOM_STAGE_B : LOOM_STAGE_F;
                g->module[id] = fl[f].module;
                g->flow[id] = f;
                g->position[id] = p;
                g->microbatch[id] = mb;
                g->group[id] = grp;
                g->pair[id] = pid;
                g->duration_ms[id] = back ? fl[f].b_ms[p] : fl[f].f_ms[p];
                g->mem_delta_bytes[id] = back ? -1 : 1;
                g->pred_off[id] = e;
                if (!back) {
                    g->pair_forward[pid] = id;
                    g->pair_layer_off[pid] = pid;
                    g->pair_layer_off[pid + 1] = pid + 1;
                    for (int q = 0; q < LOOM_POLICY_COUNT; q++) {
                        loom_policy_option *o = &g->layer_options[pid * LOOM_POLICY_COUNT + q];
                        o->forward_ms = fl[f].f_ms[p];
                        o->backward_ms = fl[f].b_ms[p];
                        o->activation_bytes = 1;
                    }
                    if (p > 0)
                        g->pred[e++] = id - 1;
                    else
                        for (int32_t k2 = 0; k2 < fl[f].n_inputs; k2++) {
                            int32_t in = fl[f].inputs[k2];
                            if (co_tg_runs(fl, in, mb))
                                g->pred[e++] = co_tg_id(fl, n_flows, mb, in,
                                                        fl[in].n_pos - 1, 0);
                        }
                } else {
                    g->pair_backward[pid] = id;
                    if (p == n - 1) {
                        g->pred[e++] = co_tg_id(fl, n_flows, mb, f, p, 0);
                        for (int32_t c = 0; c < n_flows; c++)
                            for (int32_t k2 = 0; k2 < fl[c].n_inputs; k2++)
                                if (fl[c].inputs[k2] == f && co_tg_runs(fl, c, mb))
                                    g->pred[e++] = co_tg_id(fl, n_flows, mb, c, 0, 1);
                    } else {
                        g->pred[e++] = co_tg_id(fl, n_flows, mb, f, p + 1, 1);
                    }
                }
            }
            pair += n;
        }
    g->group_pred_off[n_flows * M] = ge;
    g->pred_off[n_stages] = e;
    g->n_edges = e;
    return g;
}

#endif
