/* test_graph.c - the graph kit (<loom/kits/graph.h>) on its own: a 2-rank,
 * 2-microbatch stage-times graph value by value (and its split-backward
 * twin), the builder making the same graph stage by stage, groups and
 * group precedence, clone and schedule storage, and the error messages
 * for bad input (stage-times counts, an edge to a missing stage, a cycle,
 * zero ranks, malformed pairs). */
#include <string.h>
#include <loom/kits/graph.h>
#include "testutil.h"

static const double F2[2] = {1, 2}, B2[2] = {3, 4}, ACT2[2] = {10, 20},
                    SCALE2[2] = {1, 2};

/* 2 ranks, 1 chunk each, 2 microbatches (the second twice as heavy),
 * F = {1, 2}, B = {3, 4}, 10 / 20 bytes of activation, 0.5 ms P2P. */
static loom_stage_times st_2x2(void)
{
    loom_stage_times st;
    memset(&st, 0, sizeof st);
    st.ranks = 2;
    st.microbatches = 2;
    st.virtual_stages = 1;
    st.forward_ms = F2;
    st.backward_ms = B2;
    st.activation_bytes = ACT2;
    st.microbatch_scale = SCALE2;
    st.p2p_ms = 0.5;
    st.memory_cap_bytes = 1000;
    return st;
}

static void ck_ints(const int32_t *got, const int32_t *want, int n, const char *what)
{
    for (int i = 0; i < n; i++)
        ck_assert_msg(got[i] == want[i], "%s[%d] = %d, expected %d", what, i, got[i],
                      want[i]);
}

/* Asserts a and b are the same graph, array by array. */
static void ck_same_graph(const loom_stage_graph *a, const loom_stage_graph *b)
{
    ck_assert_int_eq(a->n_stages, b->n_stages);
    ck_assert_int_eq(a->n_ranks, b->n_ranks);
    ck_assert_int_eq(a->n_groups, b->n_groups);
    ck_assert_int_eq(a->n_microbatches, b->n_microbatches);
    ck_assert_int_eq(a->n_edges, b->n_edges);
    ck_assert_int_eq(a->n_pairs, b->n_pairs);
    ck_assert_int_eq(a->n_layer_entries, b->n_layer_entries);
    int S = a->n_stages;
    ck_ints(a->rank, b->rank, S, "rank");
    ck_ints(a->module, b->module, S, "module");
    ck_ints(a->flow, b->flow, S, "flow");
    ck_ints(a->position, b->position, S, "position");
    ck_ints(a->chunk, b->chunk, S, "chunk");
    ck_ints(a->microbatch, b->microbatch, S, "microbatch");
    ck_ints(a->sub, b->sub, S, "sub");
    ck_ints(a->group, b->group, S, "group");
    ck_ints(a->pair, b->pair, S, "pair");
    ck_assert_int_eq(memcmp(a->kind, b->kind, (size_t)S), 0);
    for (int s = 0; s < S; s++) {
        ck_assert_double_eq(a->duration_ms[s], b->duration_ms[s]);
        ck_assert_int_eq(a->mem_delta_bytes[s], b->mem_delta_bytes[s]);
        ck_assert_double_eq(a->flops[s], b->flops[s]);
    }
    ck_ints(a->pred_off, b->pred_off, S + 1, "pred_off");
    ck_ints(a->pred, b->pred, a->n_edges, "pred");
    for (int e = 0; e < a->n_edges; e++)
        ck_assert_double_eq(a->pred_p2p_ms[e], b->pred_p2p_ms[e]);
    ck_ints(a->group_flow, b->group_flow, a->n_groups, "group_flow");
    ck_ints(a->group_microbatch, b->group_microbatch, a->n_groups, "group_microbatch");
    ck_ints(a->group_pred_off, b->group_pred_off, a->n_groups + 1, "group_pred_off");
    ck_assert_int_eq(a->group_pred == NULL, b->group_pred == NULL);
    if (a->group_pred)
        ck_ints(a->group_pred, b->group_pred, a->group_pred_off[a->n_groups], "group_pred");
    ck_ints(a->pair_forward, b->pair_forward, a->n_pairs, "pair_forward");
    ck_ints(a->pair_backward, b->pair_backward, a->n_pairs, "pair_backward");
    ck_ints(a->pair_weight, b->pair_weight, a->n_pairs, "pair_weight");
    ck_ints(a->pair_layer_off, b->pair_layer_off, a->n_pairs + 1, "pair_layer_off");
    ck_assert_int_eq(memcmp(a->layer_options, b->layer_options,
                            (size_t)a->n_layer_entries * LOOM_POLICY_COUNT *
                                sizeof *a->layer_options), 0);
    ck_assert_int_eq(memcmp(a->layer_policy, b->layer_policy, (size_t)a->n_layer_entries),
                     0);
    for (int r = 0; r < a->n_ranks; r++)
        ck_assert_int_eq(a->static_bytes[r], b->static_bytes[r]);
    ck_assert_double_eq(a->memory_cap_bytes, b->memory_cap_bytes);
    ck_assert_double_eq(a->total_flops, b->total_flops);
    ck_assert_double_eq(a->peak_flops_per_rank, b->peak_flops_per_rank);
}

/* Per microbatch: F on rank 0, F on rank 1, B on rank 1, B on rank 0. */
START_TEST(stage_times_2x2_values)
{
    loom_stage_times st = st_2x2();
    loom_stage_graph *g = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_graph_from_stage_times(&st, 0, &g, &err), LOOM_OK);
    ck_assert_uint_eq(g->struct_size, sizeof *g);
    ck_assert_int_eq(g->n_stages, 8);
    ck_assert_int_eq(g->n_ranks, 2);
    ck_assert_int_eq(g->n_groups, 2);
    ck_assert_int_eq(g->n_microbatches, 2);
    ck_assert_int_eq(g->n_edges, 6);
    ck_assert_int_eq(g->n_pairs, 4);
    ck_assert_int_eq(g->n_layer_entries, 4);
    static const int32_t rank[8] = {0, 1, 1, 0, 0, 1, 1, 0};
    static const int32_t pos[8] = {0, 1, 1, 0, 0, 1, 1, 0};
    static const int32_t mb[8] = {0, 0, 0, 0, 1, 1, 1, 1};
    static const int32_t pair[8] = {0, 1, 1, 0, 2, 3, 3, 2};
    static const uint8_t kind[8] = {LOOM_STAGE_F, LOOM_STAGE_F, LOOM_STAGE_B, LOOM_STAGE_B,
                                    LOOM_STAGE_F, LOOM_STAGE_F, LOOM_STAGE_B, LOOM_STAGE_B};
    static const double dur[8] = {1, 2, 4, 3, 2, 4, 8, 6};
    static const int64_t mem[8] = {10, 20, -20, -10, 20, 40, -40, -20};
    static const int32_t pred_off[9] = {0, 0, 1, 2, 3, 3, 4, 5, 6};
    static const int32_t pred[6] = {0, 1, 2, 4, 5, 6};
    static const double p2p[6] = {0.5, 0, 0.5, 0.5, 0, 0.5};
    ck_ints(g->rank, rank, 8, "rank");
    ck_ints(g->position, pos, 8, "position");
    ck_ints(g->microbatch, mb, 8, "microbatch");
    ck_ints(g->group, mb, 8, "group");
    ck_ints(g->pair, pair, 8, "pair");
    ck_ints(g->pred_off, pred_off, 9, "pred_off");
    ck_ints(g->pred, pred, 6, "pred");
    for (int s = 0; s < 8; s++) {
        ck_assert_int_eq(g->kind[s], kind[s]);
        ck_assert_int_eq(g->module[s], -1);
        ck_assert_int_eq(g->flow[s], 0);
        ck_assert_int_eq(g->chunk[s], 0);
        ck_assert_int_eq(g->sub[s], 0);
        ck_assert_double_eq(g->duration_ms[s], dur[s]);
        ck_assert_int_eq(g->mem_delta_bytes[s], mem[s]);
    }
    for (int e = 0; e < 6; e++)
        ck_assert_double_eq(g->pred_p2p_ms[e], p2p[e]);
    static const int32_t zero2[2] = {0, 0}, mb2[2] = {0, 1}, gpo[3] = {0, 0, 0};
    ck_ints(g->group_flow, zero2, 2, "group_flow");
    ck_ints(g->group_microbatch, mb2, 2, "group_microbatch");
    ck_ints(g->group_pred_off, gpo, 3, "group_pred_off");
    ck_assert_ptr_null(g->group_pred);
    static const int32_t fwd[4] = {0, 1, 4, 5}, bwd[4] = {3, 2, 7, 6}, none[4] = {-1, -1, -1, -1},
                         lo[5] = {0, 1, 2, 3, 4};
    ck_ints(g->pair_forward, fwd, 4, "pair_forward");
    ck_ints(g->pair_backward, bwd, 4, "pair_backward");
    ck_ints(g->pair_weight, none, 4, "pair_weight");
    ck_ints(g->pair_layer_off, lo, 5, "pair_layer_off");
    /* pair 3 is microbatch 1 at position 1: F 2*2, B 4*2, 20*2 bytes */
    for (int p = 0; p < LOOM_POLICY_COUNT; p++) {
        const loom_policy_option *o = &g->layer_options[3 * LOOM_POLICY_COUNT + p];
        ck_assert_double_eq(o->forward_ms, 4);
        ck_assert_double_eq(o->backward_ms, 8);
        ck_assert_double_eq(o->weight_grad_ms, 0);
        ck_assert_int_eq(o->activation_bytes, 40);
    }
    ck_assert_double_eq(g->memory_cap_bytes, 1000);
    ck_assert_int_eq(loom_graph_check(g, &err), LOOM_OK);
    ck_assert_int_eq(loom_graph_check_acyclic(g, &err), LOOM_OK);
    loom_graph_free(g);
}
END_TEST

/* Split backward from backward_ms alone: I = W = B/2; per microbatch F0 F1
 * I1 W1 I0 W0, each W after its I, I0 after I1. */
START_TEST(stage_times_split_backward)
{
    loom_stage_times st = st_2x2();
    st.microbatches = 1;
    loom_stage_graph *g = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_graph_from_stage_times(&st, 1, &g, &err), LOOM_OK);
    ck_assert_int_eq(g->n_stages, 6);
    ck_assert_int_eq(g->n_edges, 5);
    static const uint8_t kind[6] = {LOOM_STAGE_F, LOOM_STAGE_F, LOOM_STAGE_I,
                                    LOOM_STAGE_W, LOOM_STAGE_I, LOOM_STAGE_W};
    static const int32_t rank[6] = {0, 1, 1, 1, 0, 0};
    static const double dur[6] = {1, 2, 2, 2, 1.5, 1.5};
    static const int64_t mem[6] = {10, 20, 0, -20, 0, -10};
    static const int32_t pred_off[7] = {0, 0, 1, 2, 3, 4, 5}, pred[5] = {0, 1, 2, 2, 4};
    static const double p2p[5] = {0.5, 0, 0, 0.5, 0};
    for (int s = 0; s < 6; s++) {
        ck_assert_int_eq(g->kind[s], kind[s]);
        ck_assert_double_eq(g->duration_ms[s], dur[s]);
        ck_assert_int_eq(g->mem_delta_bytes[s], mem[s]);
    }
    ck_ints(g->rank, rank, 6, "rank");
    ck_ints(g->pred_off, pred_off, 7, "pred_off");
    ck_ints(g->pred, pred, 5, "pred");
    for (int e = 0; e < 5; e++)
        ck_assert_double_eq(g->pred_p2p_ms[e], p2p[e]);
    static const int32_t fwd[2] = {0, 1}, bwd[2] = {4, 2}, wgt[2] = {5, 3};
    ck_ints(g->pair_forward, fwd, 2, "pair_forward");
    ck_ints(g->pair_backward, bwd, 2, "pair_backward");
    ck_ints(g->pair_weight, wgt, 2, "pair_weight");
    ck_assert_double_eq(g->layer_options[0].weight_grad_ms, 1.5);
    loom_graph_free(g);
}
END_TEST

START_TEST(stage_times_errors)
{
    loom_stage_times st = st_2x2();
    loom_stage_graph *g = NULL;
    loom_error err = {0, ""};
    st.ranks = 0;
    ck_assert_int_eq(loom_graph_from_stage_times(&st, 0, &g, &err), LOOM_EINVAL);
    ck_assert_int_eq(err.code, LOOM_EINVAL);
    ck_assert_str_eq(err.message,
                     "stage-times: ranks, virtual_stages and microbatches must be >= 1");
    ck_assert_ptr_null(g);
    st = st_2x2();
    st.microbatches = 40000000;
    ck_assert_int_eq(loom_graph_from_stage_times(&st, 0, &g, &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message,
                     "stage-times: 160000000 stages is more than Loom plans at once");
}
END_TEST

/* The V placement of 2 ranks (stages 0 1 1 0): ranks, chunks, no P2P time
 * between stages 1 and 2 (the turn on rank 1), and memory per phase from
 * weight_grad_bytes (I frees act - held, W held). */
START_TEST(stage_times_v_placement)
{
    static const double f[4] = {1, 1, 1, 1}, act[4] = {8, 8, 8, 8}, held[4] = {2, 3, 4, 5};
    static const int32_t map[4] = {0, 1, 1, 0};
    loom_stage_times st;
    memset(&st, 0, sizeof st);
    st.ranks = 2;
    st.microbatches = 1;
    st.virtual_stages = 2;
    st.forward_ms = f;
    st.input_grad_ms = f;
    st.weight_grad_ms = f;
    st.split_backward = 1;
    st.activation_bytes = act;
    st.weight_grad_bytes = held;
    st.stage_rank = map;
    st.p2p_ms = 0.5;
    loom_stage_graph *g = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_graph_from_stage_times(&st, 1, &g, &err), LOOM_OK);
    /* F0 F1 F2 F3, then I3 W3 I2 W2 I1 W1 I0 W0 */
    static const int32_t rank[12] = {0, 1, 1, 0, 0, 0, 1, 1, 1, 1, 0, 0};
    static const int32_t chunk[12] = {0, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
    static const int64_t mem[12] = {8, 8, 8, 8, -3, -5, -4, -4, -5, -3, -6, -2};
    ck_ints(g->rank, rank, 12, "rank");
    ck_ints(g->chunk, chunk, 12, "chunk");
    for (int s = 0; s < 12; s++)
        ck_assert_int_eq(g->mem_delta_bytes[s], mem[s]);
    /* F edges: 0->1 0.5, 1->2 0 (same rank), 2->3 0.5; I edges: 4->6 0.5,
     * 6->8 0 (same rank), 8->10 0.5 */
    for (int32_t v = 0; v < 12; v++)
        for (int32_t e = g->pred_off[v]; e < g->pred_off[v + 1]; e++)
            ck_assert_double_eq(g->pred_p2p_ms[e],
                                g->rank[g->pred[e]] == g->rank[v] ? 0 : 0.5);
    ck_assert_int_eq(loom_graph_check(g, &err), LOOM_OK);
    g->layer_weight_held_bytes[3 * LOOM_POLICY_COUNT + 1] = 9; /* above its 8 bytes */
    ck_assert_int_eq(loom_graph_check(g, &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "stage graph: layer entry 3 policy 1 keeps 9 bytes for W, "
                                  "expected 0..8 (its activation bytes)");
    loom_graph_free(g);
    /* a map that gives rank 1 three stages */
    static const int32_t bad[4] = {0, 1, 1, 1};
    st.stage_rank = bad;
    ck_assert_int_eq(loom_graph_from_stage_times(&st, 1, &g, &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "stage-times: rank 0 runs 1 stages, expected virtual_stages = 2");
}
END_TEST

/* The 2x2 stage-times graph, stage by stage through the builder. */
static loom_stage_graph *built_2x2(void)
{
    loom_graph_builder *b = loom_graph_builder_new(2);
    ck_assert_ptr_nonnull(b);
    for (int mb = 0; mb < 2; mb++) {
        double scale = SCALE2[mb];
        for (int i = 0; i < 4; i++) {
            int back = i >= 2, s = back ? 3 - i : i;
            loom_graph_stage st;
            memset(&st, 0, sizeof st);
            st.rank = s;
            st.kind = back ? LOOM_STAGE_B : LOOM_STAGE_F;
            st.pair = mb * 2 + s;
            st.group = mb;
            st.module = -1;
            st.position = s;
            st.microbatch = mb;
            st.duration_ms = (back ? B2[s] : F2[s]) * scale;
            st.mem_delta_bytes = (int64_t)(ACT2[s] * scale) * (back ? -1 : 1);
            int32_t id = loom_graph_builder_add_stage(b, &st);
            ck_assert_int_eq(id, mb * 4 + i);
            if (i > 0)
                ck_assert_int_eq(loom_graph_builder_add_edge(b, id - 1, id, i == 2 ? 0 : 0.5),
                                 LOOM_OK);
        }
        for (int s = 0; s < 2; s++) {
            loom_policy_option o[LOOM_POLICY_COUNT];
            for (int p = 0; p < LOOM_POLICY_COUNT; p++) {
                o[p].forward_ms = F2[s] * scale;
                o[p].backward_ms = B2[s] * scale;
                o[p].weight_grad_ms = 0;
                o[p].activation_bytes = (int64_t)(ACT2[s] * scale);
            }
            ck_assert_int_eq(loom_graph_builder_add_entry(b, mb * 2 + s, o), LOOM_OK);
        }
    }
    loom_stage_graph *g = NULL;
    loom_error err = {0, ""};
    ck_assert_msg(loom_graph_builder_finish(b, &g, &err) == LOOM_OK, "%s", err.message);
    loom_graph_builder_free(b);
    g->memory_cap_bytes = 1000;
    return g;
}

START_TEST(builder_matches_stage_times)
{
    loom_stage_times st = st_2x2();
    loom_stage_graph *want = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_graph_from_stage_times(&st, 0, &want, &err), LOOM_OK);
    loom_stage_graph *got = built_2x2();
    ck_same_graph(got, want);
    /* the durations given stand until the policies are applied; the
     * entries give the same ones back */
    loom_graph_apply_policies(got);
    ck_same_graph(got, want);
    loom_stage_graph *c = loom_graph_clone(got);
    ck_assert_ptr_nonnull(c);
    ck_same_graph(c, want);
    loom_graph_free(c);
    loom_graph_free(got);
    loom_graph_free(want);
}
END_TEST

/* Declared groups (one without stages), group precedence rows in the
 * order added, defaults from a group's first stage, and the clone. */
START_TEST(builder_groups_and_precedence)
{
    loom_graph_builder *b = loom_graph_builder_new(1);
    loom_graph_stage st;
    memset(&st, 0, sizeof st);
    st.flow = 1;
    st.microbatch = 2;
    st.group = 0;
    ck_assert_int_eq(loom_graph_builder_add_stage(b, &st), 0);
    st.kind = LOOM_STAGE_B;
    ck_assert_int_eq(loom_graph_builder_add_stage(b, &st), 1);
    ck_assert_int_eq(loom_graph_builder_set_group(b, 3, 4, 5), LOOM_OK);
    ck_assert_int_eq(loom_graph_builder_add_group_pred(b, 3, 0), LOOM_OK);
    ck_assert_int_eq(loom_graph_builder_add_group_pred(b, 1, 2), LOOM_OK);
    ck_assert_int_eq(loom_graph_builder_add_group_pred(b, 3, 1), LOOM_OK);
    ck_assert_int_eq(loom_graph_builder_add_edge(b, 0, 1, 0), LOOM_OK);
    loom_stage_graph *g = NULL;
    loom_error err = {0, ""};
    ck_assert_msg(loom_graph_builder_finish(b, &g, &err) == LOOM_OK, "%s", err.message);
    loom_graph_builder_free(b);
    ck_assert_int_eq(g->n_groups, 4);
    ck_assert_int_eq(g->n_microbatches, 6);
    ck_assert_int_eq(g->n_pairs, 1);
    ck_assert_int_eq(g->n_layer_entries, 0);
    static const int32_t gflow[4] = {1, 0, 0, 4}, gmb[4] = {2, 0, 0, 5},
                         gpo[5] = {0, 0, 1, 1, 3}, gp[3] = {2, 0, 1}, plo[2] = {0, 0};
    ck_ints(g->group_flow, gflow, 4, "group_flow");
    ck_ints(g->group_microbatch, gmb, 4, "group_microbatch");
    ck_ints(g->group_pred_off, gpo, 5, "group_pred_off");
    ck_ints(g->group_pred, gp, 3, "group_pred");
    ck_ints(g->pair_layer_off, plo, 2, "pair_layer_off");
    ck_assert_int_eq(g->pair_forward[0], 0);
    ck_assert_int_eq(g->pair_backward[0], 1);
    ck_assert_int_eq(g->pair_weight[0], -1);
    loom_stage_graph *c = loom_graph_clone(g);
    ck_same_graph(c, g);
    loom_graph_free(c);
    loom_graph_free(g);
}
END_TEST

/* A builder of `n` stages over `ranks` ranks: F/B pairs (stage 2k F,
 * 2k+1 B of pair k), group 0, rank 0. */
static loom_graph_builder *pairs_builder(int32_t ranks, int n)
{
    loom_graph_builder *b = loom_graph_builder_new(ranks);
    for (int i = 0; i < n; i++) {
        loom_graph_stage st;
        memset(&st, 0, sizeof st);
        st.kind = i % 2 ? LOOM_STAGE_B : LOOM_STAGE_F;
        st.pair = i / 2;
        st.duration_ms = 1;
        loom_graph_builder_add_stage(b, &st);
    }
    return b;
}

/* Finishes b expecting LOOM_EINVAL with `message`; frees b. */
static void ck_finish_fails(loom_graph_builder *b, const char *message)
{
    static loom_stage_graph dummy;
    loom_stage_graph *g = &dummy; /* must be reset to NULL */
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_graph_builder_finish(b, &g, &err), LOOM_EINVAL);
    ck_assert_int_eq(err.code, LOOM_EINVAL);
    ck_assert_str_eq(err.message, message);
    ck_assert_ptr_null(g);
    loom_graph_builder_free(b);
}

START_TEST(builder_errors)
{
    loom_graph_builder *b = pairs_builder(2, 2);
    loom_graph_builder_add_edge(b, 0, 5, 0);
    ck_finish_fails(b, "graph builder: edge 0 (0 -> 5) names a missing stage (2 stages)");

    b = pairs_builder(2, 2);
    loom_graph_builder_add_edge(b, 0, 1, 0);
    loom_graph_builder_add_edge(b, -1, 1, 0);
    ck_finish_fails(b, "graph builder: edge 1 (-1 -> 1) names a missing stage (2 stages)");

    b = pairs_builder(2, 4);
    loom_graph_builder_add_edge(b, 0, 1, 0);
    loom_graph_builder_add_edge(b, 1, 2, 0);
    loom_graph_builder_add_edge(b, 2, 0, 0);
    ck_finish_fails(b, "stage graph: the predecessors of stage 0 lead back to it (a cycle)");

    b = pairs_builder(2, 2);
    loom_graph_builder_add_edge(b, 1, 1, 0);
    ck_finish_fails(b, "stage graph: stage 1 has predecessor 1");

    b = pairs_builder(0, 2);
    ck_finish_fails(b, "stage graph: 2 stages on 0 ranks");

    b = pairs_builder(2, 2);
    loom_graph_stage st;
    memset(&st, 0, sizeof st);
    st.rank = 3;
    st.pair = 1;
    loom_graph_builder_add_stage(b, &st);
    ck_finish_fails(b, "stage graph: stage 2 on rank 3, expected 0..1");

    b = pairs_builder(1, 2);
    st.rank = 0;
    st.pair = 0;
    loom_graph_builder_add_stage(b, &st);
    ck_finish_fails(b, "graph builder: pair 0 has two forward stages (0 and 2)");

    b = pairs_builder(1, 2);
    st.pair = 2;
    loom_graph_builder_add_stage(b, &st);
    ck_finish_fails(b, "graph builder: pair 1 has no forward stage");

    b = pairs_builder(1, 1);
    st.pair = 0;
    st.kind = LOOM_STAGE_W;
    loom_graph_builder_add_stage(b, &st);
    ck_finish_fails(b, "graph builder: pair 0 has a W stage (1) but no I stage");

    b = pairs_builder(1, 1);
    st.kind = 7;
    loom_graph_builder_add_stage(b, &st);
    ck_finish_fails(b, "graph builder: stage 1 has kind 7, expected 0..3 (enum loom_stage_kind)");

    b = pairs_builder(1, 1);
    st.kind = LOOM_STAGE_B;
    st.pair = -1;
    loom_graph_builder_add_stage(b, &st);
    ck_finish_fails(b, "graph builder: stage 1 has pair -1, expected >= 0");

    b = pairs_builder(1, 2);
    loom_policy_option o[LOOM_POLICY_COUNT];
    memset(o, 0, sizeof o);
    loom_graph_builder_add_entry(b, 1, o);
    ck_finish_fails(b, "graph builder: layer entry 0 is for pair 1, which has no stages "
                       "(1 pairs)");

    b = pairs_builder(1, 2);
    ck_assert_int_eq(loom_graph_builder_set_group(b, -2, 0, 0), LOOM_EINVAL);
    ck_finish_fails(b, "graph builder: group -2, expected >= 0");

    b = pairs_builder(1, 2);
    loom_graph_builder_add_group_pred(b, 0, 0);
    ck_finish_fails(b, "graph builder: group precedence 0 -> 0 names a missing group or one "
                       "group twice (1 groups)");

    b = pairs_builder(1, 2);
    st.kind = LOOM_STAGE_F;
    st.pair = 1;
    st.group = -1;
    loom_graph_builder_add_stage(b, &st);
    ck_finish_fails(b, "stage graph: stage 2 in group -1, expected 0..0");
}
END_TEST

START_TEST(empty_graph_and_schedule)
{
    loom_graph_builder *b = loom_graph_builder_new(3);
    loom_stage_graph *g = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_graph_builder_finish(b, &g, &err), LOOM_OK);
    loom_graph_builder_free(b);
    ck_assert_int_eq(g->n_stages, 0);
    ck_assert_int_eq(g->n_ranks, 3);
    ck_assert_int_eq(g->n_microbatches, 0);
    ck_assert_int_eq(g->pred_off[0], 0);
    loom_graph_free(g);
    loom_graph_free(NULL);
    loom_graph_builder_free(NULL);

    loom_schedule *s = loom_schedule_new(2, 5);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(s->n_ranks, 2);
    ck_assert_int_eq(s->n_stages, 5);
    for (int r = 0; r <= 2; r++)
        ck_assert_int_eq(s->rank_off[r], 0);
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(s->order[i], 0);
    loom_schedule_free(s);
    loom_schedule_free(NULL);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("kit-graph");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, stage_times_2x2_values);
    tcase_add_test(tc, stage_times_split_backward);
    tcase_add_test(tc, stage_times_errors);
    tcase_add_test(tc, builder_matches_stage_times);
    tcase_add_test(tc, builder_groups_and_precedence);
    tcase_add_test(tc, builder_errors);
    tcase_add_test(tc, stage_times_v_placement);
    tcase_add_test(tc, empty_graph_and_schedule);
    suite_add_tcase(s, tc);
    return s;
}

/* Runs the suite; exits non-zero when a check fails. */
int main(void)
{
    return loom_test_main(suite());
}
