/* test_knapsack.c - the knapsack memory tuner: the cap on seeded graphs,
 * the fastest choice without a cap, infeasible caps and params. The
 * per-pair candidates themselves are tested with their kit
 * (sdk/kits/mckp/test_mckp.c). */
#include <stdio.h>

#include <loom/mock_memtune.h>

const loom_plugin_info *loom_static_knapsack(void);

/* The hand-picked pair of the memtune test helpers. */
static loom_stage_graph *hand_graph(void)
{
    return mtt_hand_pair();
}

START_TEST(tuner_keeps_the_cap)
{
    const loom_memory_tuner_vtable *vt = mtt_vtable(loom_static_knapsack());
    loom_error err = {0};
    for (uint64_t seed = 1; seed <= 16; seed++) {
        int P = 2 + (int)(seed % 3), M = 3 + (int)(seed % 4);
        int E = 1 + (int)(seed % 4), split = (int)(seed / 2 % 2);
        loom_stage_graph *g = mtt_chain(P, M, E, split, seed);
        loom_schedule *s = mtt_order(P, M, split, (int)(seed / 4 % 2));
        for (int r = 0; r < P; r++)
            g->static_bytes[r] = 2000 * (P - r);
        int64_t lo = mtt_uniform_peak(g, s, LOOM_POLICY_FULL);
        int64_t hi = mtt_uniform_peak(g, s, LOOM_POLICY_NONE);
        g->memory_cap_bytes = (double)(lo + (hi - lo) * (int64_t)(seed % 6) / 6);
        uint8_t *pol = malloc((size_t)g->n_layer_entries);
        const char *params[] = {"k", seed % 2 ? "3" : "6", NULL};
        ck_assert_int_eq(mtt_tune(vt, params, (int)(seed % 2), g, s, pol, &err),
                         LOOM_OK);
        loom_metrics m = mtt_simulate(g, s, pol, NULL);
        ck_assert_int_eq(m.cap_violations, 0);
        ck_assert(m.max_peak_bytes <= (int64_t)g->memory_cap_bytes);
        free(pol);
        loom_schedule_free(s);
        loom_graph_free(g);
    }
}
END_TEST

START_TEST(no_cap_takes_the_fastest)
{
    loom_stage_graph *g = hand_graph();
    loom_schedule *s = mtt_order(1, 1, 0, 0);
    /* make SELECTIVE the fastest option of entry 1 */
    g->layer_options[1 * LOOM_POLICY_COUNT + 1].backward_ms = 1.5;
    const loom_memory_tuner_vtable *vt = mtt_vtable(loom_static_knapsack());
    uint8_t pol[2];
    loom_error err = {0};
    ck_assert_int_eq(mtt_tune(vt, NULL, 1, g, s, pol, &err), LOOM_OK);
    ck_assert_int_eq(pol[0], LOOM_POLICY_NONE);
    ck_assert_int_eq(pol[1], LOOM_POLICY_SELECTIVE);
    /* cap 75: the fastest (130 bytes) and SS (80 bytes) are over */
    g->memory_cap_bytes = 75;
    ck_assert_int_eq(mtt_tune(vt, NULL, 1, g, s, pol, &err), LOOM_OK);
    loom_metrics m = mtt_simulate(g, s, pol, NULL);
    ck_assert(m.max_peak_bytes <= 75);
    g->memory_cap_bytes = 29;
    ck_assert_int_eq(mtt_tune(vt, NULL, 1, g, s, pol, &err), LOOM_EINFEASIBLE);
    ck_assert_ptr_nonnull(strstr(err.message, "knapsack: rank 0 is 1 bytes short"));
    loom_schedule_free(s);
    loom_graph_free(g);
}
END_TEST

START_TEST(params_are_checked)
{
    const loom_memory_tuner_vtable *vt = mtt_vtable(loom_static_knapsack());
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    loom_mock_host_set_param(h, "k", "1");
    void *self = NULL;
    loom_error err = {0};
    ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h),
                                NULL, &self, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "params.k"));
    loom_mock_host_set_param(h, "k", "4");
    loom_mock_host_set_param(h, "resolution", "0");
    ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h),
                                NULL, &self, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "params.resolution"));
    loom_mock_host_free(h);
}
END_TEST

/* Offload (param offload): caps kept, never slower than recomputation
 * alone, chosen when cheaper, and the missing-bandwidth error. */
START_TEST(offload_is_a_superset)
{
    mtt_check_offload(mtt_vtable(loom_static_knapsack()), "knapsack");
}
END_TEST

/* The suite: every test in one case. */
static Suite *suite(void)
{
    Suite *s = suite_create("knapsack");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, tuner_keeps_the_cap);
    tcase_add_test(tc, no_cap_takes_the_fastest);
    tcase_add_test(tc, params_are_checked);
    tcase_add_test(tc, offload_is_a_superset);
    suite_add_tcase(s, tc);
    return s;
}

/* Runs the suite. */
int main(void)
{
    return loom_test_main(suite());
}
