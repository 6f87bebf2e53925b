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
 * consumer flow. Test code only (static functions), over the SDK and the
 * graph kit (<loom/kits/graph.h>, link Loom::kit_graph) alone, so it is
 * installed with the SDK.
 */
#ifndef LOOM_MOCK_COLOCATED_H
#define LOOM_MOCK_COLOCATED_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <loom/kits/graph.h>

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
 * microbatches, with the graph kit's builder. Caller frees with
 * loom_graph_free; NULL when the builder refuses the flows. */
static loom_stage_graph *co_tg_build(const co_tg_flow *fl, int32_t n_flows,
                                     int32_t n_ranks, int32_t M)
{
    loom_graph_builder *b = loom_graph_builder_new(n_ranks);
    if (!b)
        return NULL;
    int32_t pair = 0;
    for (int32_t mb = 0; mb < M; mb++)
        for (int32_t f = 0; f < n_flows; f++) {
            int32_t grp = mb * n_flows + f, n = fl[f].n_pos;
            loom_graph_builder_set_group(b, grp, f, mb);
            for (int32_t k = 0; k < fl[f].n_inputs; k++)
                if (co_tg_runs(fl, fl[f].inputs[k], mb))
                    loom_graph_builder_add_group_pred(b, grp, mb * n_flows + fl[f].inputs[k]);
            if (!co_tg_runs(fl, f, mb))
                continue;
            for (int32_t k = 0; k < 2 * n; k++) {
                int back = k >= n;
                int32_t p = back ? n - 1 - (k - n) : k;
                int32_t pid = pair + p;
                loom_graph_stage st;
                memset(&st, 0, sizeof st);
                st.rank = fl[f].rank[p];
                st.kind = back ? LOOM_STAGE_B : LOOM_STAGE_F;
                st.pair = pid;
                st.group = grp;
                st.module = fl[f].module;
                st.flow = f;
                st.position = p;
                st.microbatch = mb;
                st.duration_ms = back ? fl[f].b_ms[p] : fl[f].f_ms[p];
                st.mem_delta_bytes = back ? -1 : 1;
                int32_t id = loom_graph_builder_add_stage(b, &st); /* co_tg_id(.., p, back) */
                if (!back) {
                    loom_policy_option o[LOOM_POLICY_COUNT];
                    memset(o, 0, sizeof o);
                    for (int q = 0; q < LOOM_POLICY_COUNT; q++) {
                        o[q].forward_ms = fl[f].f_ms[p];
                        o[q].backward_ms = fl[f].b_ms[p];
                        o[q].activation_bytes = 1;
                    }
                    loom_graph_builder_add_entry(b, pid, o);
                    if (p > 0)
                        loom_graph_builder_add_edge(b, id - 1, id, 0);
                    else
                        for (int32_t k2 = 0; k2 < fl[f].n_inputs; k2++) {
                            int32_t in = fl[f].inputs[k2];
                            if (co_tg_runs(fl, in, mb))
                                loom_graph_builder_add_edge(
                                    b, co_tg_id(fl, n_flows, mb, in, fl[in].n_pos - 1, 0), id, 0);
                        }
                } else {
                    if (p == n - 1) {
                        loom_graph_builder_add_edge(b, co_tg_id(fl, n_flows, mb, f, p, 0), id, 0);
                        for (int32_t c = 0; c < n_flows; c++)
                            for (int32_t k2 = 0; k2 < fl[c].n_inputs; k2++)
                                if (fl[c].inputs[k2] == f && co_tg_runs(fl, c, mb))
                                    loom_graph_builder_add_edge(
                                        b, co_tg_id(fl, n_flows, mb, c, 0, 1), id, 0);
                    } else {
                        loom_graph_builder_add_edge(b, co_tg_id(fl, n_flows, mb, f, p + 1, 1),
                                                    id, 0);
                    }
                }
            }
            pair += n;
        }
    loom_stage_graph *g = NULL;
    loom_error err = {0, ""};
    if (loom_graph_builder_finish(b, &g, &err) != LOOM_OK)
        fprintf(stderr, "co_tg_build: %s\n", err.message);
    loom_graph_builder_free(b);
    return g;
}

#endif
