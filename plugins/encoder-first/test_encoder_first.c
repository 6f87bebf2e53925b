/* test_encoder_first.c - Optimus's coarse-grained schedule: the backbone's
 * Megatron interleaved 1F1B against the digest's F_i / B_i oracle (p 4,
 * V 2, N 8: makespan 57 with Megatron's and the deferred warm-up), the
 * 1F1B per-stage bubbles of §2.4 (T = 33), and the colocated layout's
 * PRE / POST structure with its encoder-backbone dependency invariants. */
#include <stdlib.h>
#include <string.h>
#include <loom/mock_host.h>
#include <loom/kits/graph.h>
#include <loom/mock_sim.h>
#include <cjson/cJSON.h>
#include "testutil.h"
#include <loom/mock_colocated.h>
#include <loom/mock_interleaver.h>

const loom_plugin_info *loom_static_encoder_first(void);

/* Runs encoder-first (warm-up rule `warmup`, NULL: default) on g. */
static int run(const loom_stage_graph *g, const float *prio, const char *warmup,
               loom_schedule **out, loom_error *err)
{
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    if (warmup)
        loom_mock_host_set_param(h, "warmup", warmup);
    return ik_interleave_on(h, loom_static_encoder_first(), g, prio, out, err);
}

/* A stage-times graph: P ranks, V chunks, M microbatches, F 1, B 2. */
static loom_stage_graph *st_graph(int P, int V, int M)
{
    double f[128], b[128];
    for (int s = 0; s < P * V; s++) {
        f[s] = 1;
        b[s] = 2;
    }
    loom_stage_times st;
    memset(&st, 0, sizeof st);
    st.ranks = P;
    st.microbatches = M;
    st.virtual_stages = V;
    st.forward_ms = f;
    st.backward_ms = b;
    loom_stage_graph *g = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_graph_from_stage_times(&st, 0, &g, &err), LOOM_OK);
    return g;
}

/* Simulates s over g with per-stage times into m (arrays allocated). */
static void simulate(const loom_stage_graph *g, const loom_schedule *s,
                     loom_metrics *m)
{
    loom_metrics_init(m);
    m->start_ms = calloc((size_t)g->n_stages, sizeof(double));
    m->end_ms = calloc((size_t)g->n_stages, sizeof(double));
    loom_error err = {0, ""};
    ck_assert_msg(loom_mock_simulate(g, s, m, &err) == LOOM_OK, "%s", err.message);
}

/* The stage of (flow, position, microbatch, kind F or backward). */
static int32_t find(const loom_stage_graph *g, int32_t flow, int32_t pos,
                    int32_t mb, int back)
{
    for (int32_t v = 0; v < g->n_stages; v++)
        if (g->flow[v] == flow && g->position[v] == pos && g->microbatch[v] == mb &&
            (g->kind[v] != LOOM_STAGE_F) == back)
            return v;
    return -1;
}

START_TEST(interleaved_dependency_points_oracle)
{
    /* digest §3.6: p 4, V 2, N 8, t_f 1, t_b 2 per chunk */
    static const double f_meg[8] = {0, 1, 2, 3, 8, 9, 10, 16};
    static const double f_def[8] = {0, 1, 2, 3, 16, 19, 22, 25};
    static const double b_meg[8] = {29, 32, 34, 37, 51, 53, 55, 57};
    static const double b_def[8] = {28, 31, 34, 37, 51, 53, 55, 57};
    loom_stage_graph *g = st_graph(4, 2, 8);
    for (int rule = 0; rule < 2; rule++) {
        loom_schedule *s = NULL;
        loom_error err = {0, ""};
        ck_assert_int_eq(run(g, NULL, rule ? "deferred" : "megatron", &s, &err), LOOM_OK);
        loom_metrics m = LOOM_METRICS_INIT;
        simulate(g, s, &m);
        ck_assert_double_eq(m.makespan_ms, 57);
        for (int i = 0; i < 8; i++) {
            ck_assert_double_eq(m.start_ms[find(g, 0, 0, i, 0)],
                                rule ? f_def[i] : f_meg[i]);
            ck_assert_double_eq(m.end_ms[find(g, 0, 0, i, 1)],
                                rule ? b_def[i] : b_meg[i]);
        }
        free(m.start_ms);
        free(m.end_ms);
        loom_schedule_free(s);
    }
    loom_graph_free(g);
    /* the deferral keeps the makespan on other shapes too */
    static const int shapes[4][3] = {{4, 2, 12}, {8, 2, 16}, {4, 3, 8}, {8, 12, 16}};
    for (int k = 0; k < 4; k++) {
        g = st_graph(shapes[k][0], shapes[k][1], shapes[k][2]);
        double span[2];
        for (int rule = 0; rule < 2; rule++) {
            loom_schedule *s = NULL;
            loom_error err = {0, ""};
            ck_assert_int_eq(run(g, NULL, rule ? "deferred" : "megatron", &s, &err),
                             LOOM_OK);
            loom_metrics m = LOOM_METRICS_INIT;
            simulate(g, s, &m);
            span[rule] = m.makespan_ms;
            free(m.start_ms);
            free(m.end_ms);
            loom_schedule_free(s);
        }
        ck_assert_msg(span[0] == span[1], "shape %d: %g vs %g", k, span[0], span[1]);
        loom_graph_free(g);
    }
}
END_TEST

START_TEST(one_f_one_b_bubbles)
{
    /* digest §2.4: p 4, N 8, t_f 1, t_b 2: T 33; per stage warm-up,
     * other and tail idle (0,9,0), (1,6,2), (2,3,4), (3,0,6) */
    static const double want[4][3] = {{0, 9, 0}, {1, 6, 2}, {2, 3, 4}, {3, 0, 6}};
    loom_stage_graph *g = st_graph(4, 1, 8);
    loom_schedule *s = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(run(g, NULL, NULL, &s, &err), LOOM_OK);
    loom_metrics m = LOOM_METRICS_INIT;
    simulate(g, s, &m);
    ck_assert_double_eq(m.makespan_ms, 33);
    for (int r = 0; r < 4; r++) {
        double first = 1e30, last = 0, busy = 0;
        for (int32_t k = s->rank_off[r]; k < s->rank_off[r + 1]; k++) {
            int32_t v = s->order[k];
            first = m.start_ms[v] < first ? m.start_ms[v] : first;
            last = m.end_ms[v] > last ? m.end_ms[v] : last;
            busy += g->duration_ms[v];
        }
        ck_assert_double_eq(first, want[r][0]);
        ck_assert_double_eq(33 - last, want[r][2]);
        ck_assert_double_eq(33 - busy - first - (33 - last), want[r][1]);
    }
    free(m.start_ms);
    free(m.end_ms);
    loom_schedule_free(s);
    loom_graph_free(g);
}
END_TEST

/* Encoder flow (4 positions, F 0.5 / B 1) colocated on the 4 ranks of a
 * backbone (F 1 / B 2). */
static loom_stage_graph *colocated(int M)
{
    co_tg_flow fl[2];
    memset(fl, 0, sizeof fl);
    fl[0].n_pos = 4;
    fl[1].n_pos = 4;
    fl[1].n_inputs = 1;
    fl[1].inputs[0] = 0;
    fl[1].module = 1;
    for (int p = 0; p < 4; p++) {
        fl[0].rank[p] = fl[1].rank[p] = p;
        fl[0].f_ms[p] = 0.5;
        fl[0].b_ms[p] = 1;
        fl[1].f_ms[p] = 1;
        fl[1].b_ms[p] = 2;
    }
    return co_tg_build(fl, 2, 4, M);
}

START_TEST(pre_and_post_regions)
{
    loom_stage_graph *g = colocated(4);
    loom_schedule *s = NULL;
    loom_error err = {0, ""};
    ck_assert_msg(run(g, NULL, NULL, &s, &err) == LOOM_OK, "%s", err.message);
    loom_metrics m = LOOM_METRICS_INIT;
    simulate(g, s, &m);
    for (int r = 0; r < 4; r++) {
        /* order: encoder F*, backbone *, encoder B* */
        int phase = 0;
        double llm_first = 1e30, llm_last = 0;
        for (int32_t k = s->rank_off[r]; k < s->rank_off[r + 1]; k++) {
            int32_t v = s->order[k];
            int ph = g->flow[v] == 1 ? 1 : g->kind[v] == LOOM_STAGE_F ? 0 : 2;
            ck_assert_int_ge(ph, phase);
            phase = ph;
            if (ph == 1) {
                llm_first = m.start_ms[v] < llm_first ? m.start_ms[v] : llm_first;
                llm_last = m.end_ms[v] > llm_last ? m.end_ms[v] : llm_last;
            }
        }
        ck_assert_int_eq(s->rank_off[r + 1] - s->rank_off[r], 4 * 4);
        /* every EF before the rank's backbone, every EB after it */
        for (int32_t k = s->rank_off[r]; k < s->rank_off[r + 1]; k++) {
            int32_t v = s->order[k];
            if (g->flow[v] == 0 && g->kind[v] == LOOM_STAGE_F)
                ck_assert_double_le(m.end_ms[v], llm_first);
            if (g->flow[v] == 0 && g->kind[v] != LOOM_STAGE_F)
                ck_assert_double_ge(m.start_ms[v], llm_last);
        }
    }
    /* microbatch i's encoder output is ready when the backbone needs it */
    for (int i = 0; i < 4; i++)
        ck_assert_double_le(m.end_ms[find(g, 0, 3, i, 0)],
                            m.start_ms[find(g, 1, 0, i, 0)]);
    /* the first backbone forward waits for the encoder pipeline: mb 0
     * leaves rank 3 at 2.0 (rank 0 is busy with encoder forwards until 2) */
    ck_assert_double_eq(m.start_ms[find(g, 1, 0, 0, 0)], 2.0);
    free(m.start_ms);
    free(m.end_ms);
    loom_schedule_free(s);
    loom_graph_free(g);
}
END_TEST

START_TEST(priorities_order_the_microbatches)
{
    loom_stage_graph *g = colocated(3);
    float prio[6];
    for (int grp = 0; grp < 6; grp++)
        prio[grp] = (float)(grp / 2); /* later microbatches first */
    loom_schedule *s = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(run(g, prio, NULL, &s, &err), LOOM_OK);
    ck_assert_int_eq(g->microbatch[s->order[s->rank_off[0]]], 2);
    ck_assert_int_eq(g->flow[s->order[s->rank_off[0]]], 0);
    /* rank 0's first backbone stage is microbatch 2's forward */
    for (int32_t k = s->rank_off[0]; k < s->rank_off[1]; k++)
        if (g->flow[s->order[k]] == 1) {
            ck_assert_int_eq(g->microbatch[s->order[k]], 2);
            break;
        }
    loom_metrics m = LOOM_METRICS_INIT;
    simulate(g, s, &m);
    free(m.start_ms);
    free(m.end_ms);
    loom_schedule_free(s);
    loom_graph_free(g);
}
END_TEST

START_TEST(shape_errors)
{
    /* two flows nobody consumes: no single backbone */
    co_tg_flow fl[2];
    memset(fl, 0, sizeof fl);
    for (int f = 0; f < 2; f++) {
        fl[f].n_pos = 2;
        fl[f].rank[0] = 0;
        fl[f].rank[1] = 1;
        fl[f].f_ms[0] = fl[f].f_ms[1] = 1;
        fl[f].b_ms[0] = fl[f].b_ms[1] = 1;
    }
    loom_stage_graph *g = co_tg_build(fl, 2, 2, 2);
    loom_schedule *s = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(run(g, NULL, NULL, &s, &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "encoder-first: expects one backbone flow and "
                                  "encoder flows, found non-encoder flows 0 and 1");
    loom_schedule_free(s);
    loom_graph_free(g);
    /* a backbone whose positions do not cycle over its ranks */
    co_tg_flow one;
    memset(&one, 0, sizeof one);
    one.n_pos = 4;
    static const int32_t ranks[4] = {0, 1, 1, 0};
    for (int p = 0; p < 4; p++) {
        one.rank[p] = ranks[p];
        one.f_ms[p] = one.b_ms[p] = 1;
    }
    g = co_tg_build(&one, 1, 2, 2);
    ck_assert_int_eq(run(g, NULL, NULL, &s, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "expects backbone position 2 on the "
                                              "rank of position 0 (Megatron order), "
                                              "found rank 1"));
    loom_schedule_free(s);
    loom_graph_free(g);
}
END_TEST

START_TEST(manifest_matches_binary)
{
    const loom_plugin_info *info = loom_static_encoder_first();
    cJSON *m = loom_test_json(loom_test_src("plugins/encoder-first/manifest.json"));
    ck_assert_str_eq(cJSON_GetObjectItem(m, "id")->valuestring, info->id);
    ck_assert_str_eq(cJSON_GetObjectItem(m, "version")->valuestring, info->version);
    ck_assert_ptr_nonnull(info->role(LOOM_ROLE_INTERLEAVER));
    cJSON_Delete(m);
}
END_TEST

/* The encoder-first suite. */
static Suite *suite(void)
{
    Suite *s = suite_create("encoder-first");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, interleaved_dependency_points_oracle);
    tcase_add_test(tc, one_f_one_b_bubbles);
    tcase_add_test(tc, pre_and_post_regions);
    tcase_add_test(tc, priorities_order_the_microbatches);
    tcase_add_test(tc, shape_errors);
    tcase_add_test(tc, manifest_matches_binary);
    suite_add_tcase(s, tc);
    return s;
}

/* Runs the suite; exits non-zero when a check fails. */
int main(void)
{
    return loom_test_main(suite());
}
