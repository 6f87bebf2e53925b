/* test_dualpipe_v.c - the DualPipeV interleaver: its bubble against the
 * DualPipe closed form (deepseek-ai/DualPipe README, "Pipeline bubbles and
 * memory usage comparison": DualPipeV on PP/2 devices idles
 * (PP/2 - 1)(F&B + B - 3W), so (P - 1)(F&B + B - 3W) on P ranks), the
 * overlapped pairs (fills over a full backward), the full-backward marks,
 * the peak memory, and the refusals. */
#include <loom/mock_host.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <loom/kits/graph.h>
#include <loom/mock_sim.h>
#include "testutil.h"

const loom_plugin_info *loom_static_dualpipe_v(void);

#define MAXS 64
static double fwd[MAXS], igr[MAXS], wgr[MAXS], bwd[MAXS], act[MAXS], scale[MAXS];
static int32_t map[MAXS];

/* A split stage-times problem: P ranks, two chunks each (V placement when
 * v), uniform chunk times F, I, W and activation a. */
static loom_stage_graph *graph_v(int P, int M, double f, double i, double w, int v)
{
    for (int k = 0; k < 2 * P; k++) {
        fwd[k] = f;
        igr[k] = i;
        wgr[k] = w;
        bwd[k] = i + w;
        act[k] = 1;
        map[k] = loom_placement_rank(v ? LOOM_PLACEMENT_V : LOOM_PLACEMENT_LOOP, k, P);
    }
    for (int k = 0; k < M; k++)
        scale[k] = 1;
    loom_stage_times st = {0};
    st.ranks = P;
    st.microbatches = M;
    st.virtual_stages = 2;
    st.split_backward = 1;
    st.forward_ms = fwd;
    st.input_grad_ms = igr;
    st.weight_grad_ms = wgr;
    st.activation_bytes = act;
    st.microbatch_scale = scale;
    st.stage_rank = map;
    loom_stage_graph *g = NULL;
    loom_error err = {0};
    ck_assert_msg(loom_graph_from_stage_times(&st, 1, &g, &err) == LOOM_OK, "%s", err.message);
    return g;
}

/* Interleaves g into sc (allocated by the caller); returns the status. */
static int interleave(const loom_stage_graph *g, loom_schedule *sc, loom_error *err)
{
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    const loom_interleaver_vtable *vt = (const loom_interleaver_vtable *)
        loom_static_dualpipe_v()->role(LOOM_ROLE_INTERLEAVER);
    ck_assert_ptr_nonnull(vt);
    ck_assert_int_eq(vt->wants_split_backward(NULL), 1);
    void *self = NULL;
    ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h), NULL, &self, err),
                     LOOM_OK);
    int rc = vt->interleave(self, g, NULL, sc, err);
    vt->destroy(self);
    loom_mock_host_free(h);
    return rc;
}

/* Plans and simulates; fills m (with per-rank compute and peaks). */
static void plan(const loom_stage_graph *g, loom_schedule *sc, loom_metrics *m,
                 double *compute, int64_t *peaks)
{
    loom_error err = {0};
    ck_assert_msg(interleave(g, sc, &err) == LOOM_OK, "%s", err.message);
    loom_metrics_init(m);
    m->compute_ms = compute;
    m->peak_bytes = peaks;
    ck_assert_msg(loom_mock_simulate(g, sc, m, &err) == LOOM_OK, "%s", err.message);
}

START_TEST(closed_form_bubble)
{
    /* F = I = W = w per chunk (the zero-bubble papers' F = B = W, B the
     * input-gradient half): DualPipe's full backward is 2w and, with no
     * communication to hide, an overlapped pair F&B = F + B = 3w, so every
     * rank idles (P - 1)(3w + 2w - 3w) = 2(P - 1)w; its peak holds
     * PP + 1 = 2P + 1 chunk activations (the README's DualPipeV row). */
    static const double ws[] = {1, 0.5};
    for (int P = 2; P <= 8; P++)
        for (int d = 0; d < 3; d++)
            for (int k = 0; k < 2; k++) {
                int M = d == 0 ? 2 * P : d == 1 ? 2 * P + 3 : 3 * P;
                double w = ws[k];
                loom_stage_graph *g = graph_v(P, M, w, w, w, 1);
                loom_schedule *sc = loom_schedule_new(g->n_ranks, g->n_stages);
                loom_metrics m;
                double compute[8];
                int64_t peaks[8];
                plan(g, sc, &m, compute, peaks);
                ck_assert_double_eq_tol(m.makespan_ms, 6 * M * w + 2 * (P - 1) * w, 1e-9);
                for (int r = 0; r < P; r++) {
                    ck_assert_double_eq_tol(compute[r], 6 * M * w, 1e-9);
                    ck_assert_double_eq_tol(m.makespan_ms - compute[r], 2 * (P - 1) * w, 1e-9);
                    ck_assert_int_eq(peaks[r], 2 * P + 1);
                }
                loom_schedule_free(sc);
                loom_graph_free(g);
            }
}
END_TEST

START_TEST(pairs_and_marks)
{
    /* Per rank r: phase 4 overlaps 2(M - 2P + r + 1) pairs (one fewer on
     * the last rank), phase 5 P - r - 1; each is a forward filled over an
     * I and its own W, and ends with that W (F + I + W = 3 ms here). Every
     * full-backward mark is an I right before its W. */
    int P = 4, M = 10;
    loom_stage_graph *g = graph_v(P, M, 1, 1, 1, 1);
    loom_schedule *sc = loom_schedule_new(g->n_ranks, g->n_stages);
    loom_error err = {0};
    ck_assert_int_eq(interleave(g, sc, &err), LOOM_OK);
    loom_metrics m;
    loom_metrics_init(&m);
    m.start_ms = calloc((size_t)g->n_stages, sizeof(double));
    m.end_ms = calloc((size_t)g->n_stages, sizeof(double));
    ck_assert_int_eq(loom_mock_simulate(g, sc, &m, &err), LOOM_OK);
    for (int r = 0; r < P; r++) {
        int fills = 0, marks = 0;
        for (int32_t i = sc->rank_off[r]; i < sc->rank_off[r + 1]; i++) {
            int32_t v = sc->order[i], k = sc->fill_hosts[v];
            if (k == 2) {
                int32_t h = sc->order[i + 1], w = sc->order[i + 2];
                ck_assert_int_eq(g->kind[v], LOOM_STAGE_F);
                ck_assert_int_eq(g->kind[h], LOOM_STAGE_I);
                ck_assert_int_eq(g->pair_weight[g->pair[h]], w);
                ck_assert_int_ne(g->position[v], g->position[h]);
                ck_assert_double_eq_tol(m.end_ms[v], m.end_ms[w], 1e-9);
                ck_assert_double_eq_tol(m.end_ms[w] - m.start_ms[h], 3, 1e-9);
                fills++;
            } else if (k == LOOM_FILL_FULL_BACKWARD) {
                ck_assert_int_eq(g->kind[v], LOOM_STAGE_I);
                ck_assert_int_eq(g->pair_weight[g->pair[v]], sc->order[i + 1]);
                marks++;
            } else {
                ck_assert_int_eq(k, 0);
            }
        }
        ck_assert_int_eq(fills, 2 * (M - 2 * P + r + 1) - (r == P - 1) + (P - r - 1));
        ck_assert_int_gt(marks, 0);
    }
    free(m.start_ms);
    free(m.end_ms);
    loom_schedule_free(sc);
    loom_graph_free(g);
}
END_TEST

START_TEST(refusals)
{
    loom_error err = {0};
    loom_stage_graph *g = graph_v(4, 8, 1, 1, 1, 0); /* loop placement */
    loom_schedule *sc = loom_schedule_new(g->n_ranks, g->n_stages);
    ck_assert_int_eq(interleave(g, sc, &err), LOOM_EINVAL);
    ck_assert_msg(strstr(err.message, "position 4 is on rank 0, expected rank 3 (the V "
                                      "placement"), "%s", err.message);
    loom_schedule_free(sc);
    loom_graph_free(g);
    g = graph_v(4, 8, 1, 1, 1, 1); /* sets the chunk time arrays used below */
    loom_graph_free(g);
    {
        /* one chunk per rank: 4 positions on 4 ranks */
        loom_stage_times st = {0};
        for (int k = 0; k < 8; k++)
            scale[k] = 1;
        st.ranks = 4;
        st.microbatches = 8;
        st.virtual_stages = 1;
        st.split_backward = 1;
        st.forward_ms = fwd;
        st.input_grad_ms = igr;
        st.weight_grad_ms = wgr;
        st.activation_bytes = act;
        st.microbatch_scale = scale;
        ck_assert_int_eq(loom_graph_from_stage_times(&st, 1, &g, &err), LOOM_OK);
    }
    sc = loom_schedule_new(g->n_ranks, g->n_stages);
    ck_assert_int_eq(interleave(g, sc, &err), LOOM_EINVAL);
    ck_assert_msg(strstr(err.message, "needs two positions per rank (8 on 4 ranks, the V "
                                      "placement), found 4"), "%s", err.message);
    loom_schedule_free(sc);
    loom_graph_free(g);
    g = graph_v(4, 7, 1, 1, 1, 1); /* M < 2P */
    sc = loom_schedule_new(g->n_ranks, g->n_stages);
    ck_assert_int_eq(interleave(g, sc, &err), LOOM_EINVAL);
    ck_assert_msg(strstr(err.message, "needs at least as many microbatches as stages "
                                      "(2 x 4 ranks = 8), found 7"), "%s", err.message);
    loom_schedule_free(sc);
    loom_graph_free(g);
}
END_TEST

START_TEST(simulator_checks_marks)
{
    /* A full-backward mark on a forward, or on an I not followed by its
     * W, is refused with the stage named. */
    loom_stage_graph *g = graph_v(2, 4, 1, 1, 1, 1);
    loom_schedule *sc = loom_schedule_new(g->n_ranks, g->n_stages);
    loom_error err = {0};
    ck_assert_int_eq(interleave(g, sc, &err), LOOM_OK);
    int32_t first = sc->order[0];
    ck_assert_int_eq(g->kind[first], LOOM_STAGE_F);
    sc->fill_hosts[first] = LOOM_FILL_FULL_BACKWARD;
    loom_metrics m;
    loom_metrics_init(&m);
    ck_assert_int_eq(loom_mock_simulate(g, sc, &m, &err), LOOM_EINVAL);
    ck_assert_msg(strstr(err.message, "is marked a full backward (fill_hosts -1); expected an "
                                      "I stage followed on its rank by its own W"),
                  "%s", err.message);
    loom_schedule_free(sc);
    loom_graph_free(g);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("dualpipe-v");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, closed_form_bubble);
    tcase_add_test(tc, pairs_and_marks);
    tcase_add_test(tc, refusals);
    tcase_add_test(tc, simulator_checks_marks);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(suite());
}
