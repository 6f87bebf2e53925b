/* test_fixedpolicy.c - the fixed-policy kit (<loom/kits/fixedpolicy.h>)
 * on its own: frugal bytes per pair (with and without layer options), the
 * cap check's exact message, tune() writing exactly the entries, the
 * view, and the per-rank scratch growing with the graph. The plugins
 * built on it ("none", "full-recompute") run the shared suite in
 * <loom/mock_fixedpolicy.h>. */
#include <string.h>
#include <loom/kits/fixedpolicy.h>
#include <loom/mock_host.h>
#include <loom/kits/graph.h>
#include "testutil.h"

/* One rank, one microbatch, one pair of three layer entries with
 * activation bytes per policy {NONE, SELECTIVE, FULL}: {40, 30, 10},
 * {50, 20, 5}, {7, 9, 8}. */
static loom_stage_graph *three_entries(void)
{
    loom_graph_builder *b = loom_graph_builder_new(1);
    ck_assert_ptr_nonnull(b);
    loom_graph_stage st;
    memset(&st, 0, sizeof st);
    st.kind = LOOM_STAGE_F;
    ck_assert_int_eq(loom_graph_builder_add_stage(b, &st), 0);
    st.kind = LOOM_STAGE_B;
    ck_assert_int_eq(loom_graph_builder_add_stage(b, &st), 1);
    loom_graph_builder_add_edge(b, 0, 1, 0);
    static const int64_t bytes[3][3] = {{40, 30, 10}, {50, 20, 5}, {7, 9, 8}};
    for (int e = 0; e < 3; e++) {
        loom_policy_option o[LOOM_POLICY_COUNT];
        memset(o, 0, sizeof o);
        for (int p = 0; p < LOOM_POLICY_OFFLOAD; p++) {
            o[p].forward_ms = 1.0;
            o[p].backward_ms = 2.0;
            o[p].activation_bytes = bytes[e][p];
        }
        loom_graph_builder_add_entry(b, 0, o);
    }
    loom_stage_graph *g = NULL;
    loom_error err = {0, ""};
    ck_assert_msg(loom_graph_builder_finish(b, &g, &err) == LOOM_OK, "%s", err.message);
    loom_graph_builder_free(b);
    loom_graph_apply_policies(g);
    return g;
}

START_TEST(frugal_bytes_and_cap_by_hand)
{
    loom_mock_host *h = loom_mock_host_new();
    loom_stage_graph *g = three_entries();
    /* 10 + 5 + 7: each entry's smallest option, whichever policy it is */
    ck_assert_int_eq(loom_fp_frugal_bytes(g, 0), 22);
    loom_fp *fp = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_fp_create(loom_mock_host_api(h), "fixed",
                                    LOOM_POLICY_SELECTIVE, LOOM_VIEW_FRUGAL,
                                    &fp, &err), LOOM_OK);
    ck_assert_int_eq(loom_fp_view(fp), LOOM_VIEW_FRUGAL);
    ck_assert_int_eq(loom_fp_check_cap(fp, g, &err), LOOM_OK); /* no cap */
    g->static_bytes[0] = 100;
    g->memory_cap_bytes = 122;
    ck_assert_int_eq(loom_fp_check_cap(fp, g, &err), LOOM_OK);
    ck_assert_int_eq(fp->cap_need, 1);
    ck_assert_int_eq(fp->need[0], 22);
    g->memory_cap_bytes = 121.5;
    ck_assert_int_eq(loom_fp_check_cap(fp, g, &err), LOOM_EINFEASIBLE);
    ck_assert_str_eq(err.message, "fixed: rank 0 cannot fit the memory cap of "
                                  "122 bytes under any policy: static 100 + "
                                  "largest activation 22 bytes, 0 bytes short");
    g->memory_cap_bytes = 100;
    ck_assert_int_eq(loom_fp_check_cap(fp, g, &err), LOOM_EINFEASIBLE);
    ck_assert_ptr_nonnull(strstr(err.message, "cap of 100 bytes"));
    ck_assert_ptr_nonnull(strstr(err.message, ", 22 bytes short"));

    /* tune writes the policy to exactly the graph's entries, and nothing
     * when the cap is out of reach */
    uint8_t pol[5] = {9, 9, 9, 9, 9};
    ck_assert_int_eq(loom_fp_tune(fp, g, pol, &err), LOOM_EINFEASIBLE);
    for (int e = 0; e < 5; e++)
        ck_assert_int_eq(pol[e], 9);
    g->memory_cap_bytes = 0;
    ck_assert_int_eq(loom_fp_tune(fp, g, pol, &err), LOOM_OK);
    const uint8_t want[5] = {1, 1, 1, 9, 9};
    ck_assert_mem_eq(pol, want, sizeof want);

    /* without layer options: the F stage's delta as built */
    loom_policy_option *opts = g->layer_options;
    g->layer_options = NULL;
    g->mem_delta_bytes[0] = 33;
    ck_assert_int_eq(loom_fp_frugal_bytes(g, 0), 33);
    g->layer_options = opts;
    loom_fp_destroy(fp);
    loom_fp_destroy(NULL);
    loom_graph_free(g);
    loom_mock_host_free(h);
}
END_TEST

/* The per-rank scratch grows with the graph; the rank is the one of each
 * pair's forward. */
START_TEST(scratch_grows_with_ranks)
{
    loom_mock_host *h = loom_mock_host_new();
    double fw[4] = {1, 1, 1, 1}, bw[4] = {2, 2, 2, 2}, act[4] = {5, 6, 7, 8};
    loom_stage_times st;
    memset(&st, 0, sizeof st);
    st.ranks = 4;
    st.microbatches = 2;
    st.virtual_stages = 1;
    st.forward_ms = fw;
    st.backward_ms = bw;
    st.activation_bytes = act;
    loom_stage_graph *g = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_graph_from_stage_times(&st, 0, &g, &err), LOOM_OK);
    loom_fp *fp = NULL;
    ck_assert_int_eq(loom_fp_create(loom_mock_host_api(h), "none", LOOM_POLICY_NONE,
                                    LOOM_VIEW_AS_BUILT, &fp, &err), LOOM_OK);
    ck_assert_int_eq(loom_fp_view(fp), LOOM_VIEW_AS_BUILT);
    g->memory_cap_bytes = 1000;
    ck_assert_int_eq(loom_fp_check_cap(fp, g, &err), LOOM_OK);
    ck_assert_int_eq(fp->cap_need, 4);
    for (int r = 0; r < 4; r++)
        ck_assert_int_eq(fp->need[r], 5 + r);
    g->static_bytes[3] = 993;
    ck_assert_int_eq(loom_fp_check_cap(fp, g, &err), LOOM_EINFEASIBLE);
    ck_assert_str_eq(err.message, "none: rank 3 cannot fit the memory cap of "
                                  "1000 bytes under any policy: static 993 + "
                                  "largest activation 8 bytes, 1 bytes short");
    uint8_t pol[8];
    g->static_bytes[3] = 0;
    ck_assert_int_eq(loom_fp_tune(fp, g, pol, &err), LOOM_OK);
    for (int32_t e = 0; e < g->n_layer_entries; e++)
        ck_assert_int_eq(pol[e], LOOM_POLICY_NONE);
    loom_fp_destroy(fp);
    loom_graph_free(g);
    loom_mock_host_free(h);
}
END_TEST

/* The suite: every test in one case. */
static Suite *suite(void)
{
    Suite *s = suite_create("kit-fixedpolicy");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, frugal_bytes_and_cap_by_hand);
    tcase_add_test(tc, scratch_grows_with_ranks);
    suite_add_tcase(s, tc);
    return s;
}

/* Runs the suite. */
int main(void)
{
    return loom_test_main(suite());
}
