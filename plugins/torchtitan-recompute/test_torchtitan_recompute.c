/* test_torchtitan_recompute.c - the torchtitan-recompute memory tuner:
 * one torchtitan activation-checkpointing setting for the whole model
 * (mode none, selective with option N: the j-th block a rank builds
 * checkpointed when j mod N = 0, full), the one whose busiest rank
 * recomputes least among those whose peak (static bytes plus the order's
 * activation peak) fits the cap; LOOM_EINFEASIBLE naming the rank and the
 * bytes short when full does not fit. */
#include <stdio.h>

#include <loom/kits/memtune.h>
#include <loom/mock_memtune.h>

const loom_plugin_info *loom_static_torchtitan_recompute(void);

/* One rank, one microbatch of four blocks: stored (none) they hold 100,
 * 100, 150 and 100 bytes, checkpointed (full) 10 each, and a checkpointed
 * block recomputes 2, 2, 3 and 2 ms. The settings: none 450 bytes, 0 ms;
 * option 4 (block 4) 360 bytes, 2 ms; option 3 (block 3) 310 bytes, 3 ms;
 * option 2 (blocks 2 and 4) 270 bytes, 4 ms; full 40 bytes, 9 ms. */
static loom_stage_graph *four_blocks(void)
{
    loom_stage_graph *g = mtt_chain(1, 1, 4, 0, 1);
    const int64_t stored[4] = {100, 100, 150, 100};
    const double recompute[4] = {2, 2, 3, 2};
    for (int e = 0; e < 4; e++) {
        const double ms[3] = {3, 3, 3 + recompute[e]};
        const int64_t bytes[3] = {stored[e], stored[e], 10};
        mtt_set_entry(g, e, ms, bytes);
    }
    loom_graph_apply_policies(g);
    return g;
}

/* Tunes at `cap` and checks that exactly the blocks in `full` (a bit per
 * entry) recompute, and that the simulated peak is within the cap. */
static void expect_full(const loom_memory_tuner_vtable *vt, loom_stage_graph *g,
                        const loom_schedule *s, double cap, unsigned full)
{
    uint8_t pol[4];
    mtt_tune_within(vt, g, s, cap, pol);
    for (int e = 0; e < 4; e++)
        ck_assert_int_eq(pol[e], (full >> e) & 1 ? LOOM_POLICY_FULL : LOOM_POLICY_NONE);
}

START_TEST(cheapest_setting_that_fits)
{
    loom_stage_graph *g = four_blocks();
    loom_schedule *s = mtt_order(1, 1, 0, 0);
    const loom_memory_tuner_vtable *vt = mtt_vtable(loom_static_torchtitan_recompute());
    expect_full(vt, g, s, 0, 0x0);    /* no cap */
    expect_full(vt, g, s, 450, 0x0);  /* none fits exactly */
    expect_full(vt, g, s, 449, 0x8);  /* option 4: block 4 */
    expect_full(vt, g, s, 360, 0x8);
    expect_full(vt, g, s, 359, 0x4);  /* option 3: block 3 */
    expect_full(vt, g, s, 310, 0x4);
    expect_full(vt, g, s, 309, 0xa);  /* option 2: blocks 2 and 4 */
    expect_full(vt, g, s, 270, 0xa);
    expect_full(vt, g, s, 269, 0xf);  /* full */
    expect_full(vt, g, s, 40, 0xf);
    /* full holds 40 bytes: a cap of 39 is 1 byte short */
    uint8_t pol[4];
    loom_error err = {0};
    g->memory_cap_bytes = 39;
    ck_assert_int_eq(mtt_tune(vt, NULL, 0, g, s, pol, &err), LOOM_EINFEASIBLE);
    ck_assert_str_eq(err.message, "torchtitan-recompute: rank 0 cannot fit the memory cap of "
                                  "39 bytes even with full recomputation: 1 bytes short");
    loom_schedule_free(s);
    loom_graph_free(g);
}
END_TEST

START_TEST(the_count_restarts_on_every_rank)
{
    /* two ranks of two blocks each (one stage a rank): option 2
     * checkpoints each rank's second block, so entries 1 of both pairs of
     * every microbatch, on both ranks */
    loom_stage_graph *g = mtt_chain(2, 2, 2, 0, 3);
    loom_schedule *s = mtt_order(2, 2, 0, 0);
    const loom_memory_tuner_vtable *vt = mtt_vtable(loom_static_torchtitan_recompute());
    uint8_t *pol = calloc((size_t)g->n_layer_entries, 1);
    ck_assert_ptr_nonnull(pol);
    loom_error err = {0};
    /* the cap: option 2's simulated peak, below none's */
    uint8_t *probe = calloc((size_t)g->n_layer_entries, 1);
    ck_assert_ptr_nonnull(probe);
    for (int32_t p = 0; p < g->n_pairs; p++)
        probe[g->pair_layer_off[p] + 1] = LOOM_POLICY_FULL;
    loom_metrics two = mtt_simulate(g, s, probe, NULL);
    memset(probe, LOOM_POLICY_NONE, (size_t)g->n_layer_entries);
    loom_metrics none = mtt_simulate(g, s, probe, NULL);
    ck_assert(two.max_peak_bytes < none.max_peak_bytes);
    g->memory_cap_bytes = (double)two.max_peak_bytes;
    ck_assert_int_eq(mtt_tune(vt, NULL, 0, g, s, pol, &err), LOOM_OK);
    for (int32_t p = 0; p < g->n_pairs; p++) {
        ck_assert_int_eq(pol[g->pair_layer_off[p]], LOOM_POLICY_NONE);
        ck_assert_int_eq(pol[g->pair_layer_off[p] + 1], LOOM_POLICY_FULL);
    }
    free(probe);
    free(pol);
    loom_schedule_free(s);
    loom_graph_free(g);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("torchtitan-recompute");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, cheapest_setting_that_fits);
    tcase_add_test(tc, the_count_restarts_on_every_rank);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(suite());
}
