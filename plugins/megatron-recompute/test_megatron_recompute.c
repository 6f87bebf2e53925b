/* test_megatron_recompute.c - the megatron-recompute memory tuner: one
 * Megatron-LM setting for the whole model (none, selective, block
 * recomputation of each chunk's first N layers, full), the one whose
 * busiest rank recomputes least among those whose peak (static bytes plus
 * the order's activation peak) fits the cap; LOOM_EINFEASIBLE naming the
 * rank and the bytes short when full does not fit. */
#include <stdio.h>

#include <loom/kits/memtune.h>
#include <loom/mock_memtune.h>

const loom_plugin_info *loom_static_megatron_recompute(void);

/* One rank, two microbatches of two entries each, GPipe order: the peak
 * holds all four entries: 400 bytes under none, 60 + 40 + 90 + 100 = 290
 * under selective, 10 + 100 + 0 + 100 = 210 under block 1 (each pair's
 * first entry full), 10 + 20 + 0 + 50 = 80 under full. Recomputation
 * added: selective 0.5 + 1 + 0.2 + 0.1 = 1.8 ms, block 1 2 + 2 = 4 ms,
 * full 2 + 1.5 + 2 + 3 = 8.5 ms. */
static loom_stage_graph *hand_graph(void)
{
    loom_stage_graph *g = mtt_chain(1, 2, 2, 0, 1);
    const double ms0[3] = {3, 3.5, 5}, ms1[3] = {3, 4, 4.5},
                 ms2[3] = {3, 3.2, 5}, ms3[3] = {3, 3.1, 6};
    const int64_t b0[3] = {100, 60, 10}, b1[3] = {100, 40, 20},
                  b2[3] = {100, 90, 0}, b3[3] = {100, 100, 50};
    mtt_set_entry(g, 0, ms0, b0);
    mtt_set_entry(g, 1, ms1, b1);
    mtt_set_entry(g, 2, ms2, b2);
    mtt_set_entry(g, 3, ms3, b3);
    loom_graph_apply_policies(g);
    return g;
}

/* Tunes at `cap` with `static_bytes` and checks every entry got `want`,
 * or with want = BLOCK1 each pair's first entry full and the second none. */
#define BLOCK1 (-1)
static void expect_policy(const loom_memory_tuner_vtable *vt, loom_stage_graph *g,
                          const loom_schedule *s, double cap, int64_t static_bytes, int want)
{
    uint8_t pol[4];
    g->static_bytes[0] = static_bytes;
    mtt_tune_within(vt, g, s, cap, pol);
    for (int e = 0; e < 4; e++)
        ck_assert_int_eq(pol[e], want != BLOCK1 ? want
                                 : e % 2 == 0 ? LOOM_POLICY_FULL : LOOM_POLICY_NONE);
}

START_TEST(cheapest_setting_that_fits)
{
    loom_stage_graph *g = hand_graph();
    loom_schedule *s = mtt_order(1, 2, 0, 1);
    const loom_memory_tuner_vtable *vt = mtt_vtable(loom_static_megatron_recompute());
    expect_policy(vt, g, s, 0, 0, LOOM_POLICY_NONE);     /* no cap */
    expect_policy(vt, g, s, 400, 0, LOOM_POLICY_NONE);   /* 400 fits exactly */
    expect_policy(vt, g, s, 399, 0, LOOM_POLICY_SELECTIVE);
    expect_policy(vt, g, s, 290, 0, LOOM_POLICY_SELECTIVE);
    expect_policy(vt, g, s, 289, 0, BLOCK1);    /* cheaper than full, 210 fits */
    expect_policy(vt, g, s, 210, 0, BLOCK1);
    expect_policy(vt, g, s, 209, 0, LOOM_POLICY_FULL);
    expect_policy(vt, g, s, 330, 50, BLOCK1);   /* 450, 340, 260, 130 */
    expect_policy(vt, g, s, 250, 50, LOOM_POLICY_FULL);
    expect_policy(vt, g, s, 340, 50, LOOM_POLICY_SELECTIVE);
    /* full holds 80 bytes: a cap of 70 is 10 bytes short */
    uint8_t pol[4];
    loom_error err = {0};
    g->memory_cap_bytes = 70;
    g->static_bytes[0] = 0;
    ck_assert_int_eq(mtt_tune(vt, NULL, 0, g, s, pol, &err), LOOM_EINFEASIBLE);
    ck_assert_str_eq(err.message, "megatron-recompute: rank 0 cannot fit the memory cap of 70 "
                                  "bytes even with full recomputation: 10 bytes short");
    loom_schedule_free(s);
    loom_graph_free(g);
}
END_TEST

START_TEST(order_decides_the_peak)
{
    /* 1F1B order: one microbatch in flight, so the peak is one pair's
     * two entries (200 bytes under none), not all four as with GPipe */
    loom_stage_graph *g = hand_graph();
    loom_schedule *s = mtt_order(1, 2, 0, 0);
    const loom_memory_tuner_vtable *vt = mtt_vtable(loom_static_megatron_recompute());
    expect_policy(vt, g, s, 200, 0, LOOM_POLICY_NONE);
    /* pair 1 under selective: 90 + 100 = 190 */
    expect_policy(vt, g, s, 199, 0, LOOM_POLICY_SELECTIVE);
    /* block 1: pair 0 holds 10 + 100, pair 1 0 + 100 */
    expect_policy(vt, g, s, 189, 0, BLOCK1);
    expect_policy(vt, g, s, 110, 0, BLOCK1);
    expect_policy(vt, g, s, 109, 0, LOOM_POLICY_FULL);
    loom_schedule_free(s);
    loom_graph_free(g);
}
END_TEST

/* The first block setting that fits ends the search only when no layer's
 * full backward is shorter than its none one. Here entries 1 and 3
 * recompute in 0 ms against 3 stored (a measured cost model may say so):
 * full adds 2 - 3 + 2 - 3 = -2 ms, block 1 adds 4, so at a cap both fit
 * under (210) full wins. */
START_TEST(full_cheaper_than_a_block)
{
    loom_stage_graph *g = hand_graph();
    const double ms1[3] = {3, 4, 0}, ms3[3] = {3, 3.1, 0};
    const int64_t b1[3] = {100, 40, 20}, b3[3] = {100, 100, 50};
    mtt_set_entry(g, 1, ms1, b1);
    mtt_set_entry(g, 3, ms3, b3);
    loom_graph_apply_policies(g);
    loom_schedule *s = mtt_order(1, 2, 0, 1);
    const loom_memory_tuner_vtable *vt = mtt_vtable(loom_static_megatron_recompute());
    expect_policy(vt, g, s, 290, 0, LOOM_POLICY_FULL); /* -2 ms beats selective's 1.8 */
    expect_policy(vt, g, s, 210, 0, LOOM_POLICY_FULL); /* block 1 fits too, at 4 ms */
    expect_policy(vt, g, s, 80, 0, LOOM_POLICY_FULL);
    loom_schedule_free(s);
    loom_graph_free(g);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("megatron-recompute");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, cheapest_setting_that_fits);
    tcase_add_test(tc, order_decides_the_peak);
    tcase_add_test(tc, full_cheaper_than_a_block);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(suite());
}
