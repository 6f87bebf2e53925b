/* test_mckp.c - the multiple-choice knapsack kit (<loom/kits/mckp.h>) on
 * its own: a hand-computed candidate list at two resolutions, Pareto
 * order and extremes on seeded graphs, bucket optimality against brute
 * force, pairs with identical options sharing candidates, adding a
 * combination, and the candidates as descent units (by hand). */
#include <math.h>
#include <stdio.h>
#include <loom/kits/memtune.h>
#include <loom/kits/mckp.h>
#include <loom/mock_memtune.h>

/* The hand-picked pair of the memtune test helpers. */
static loom_stage_graph *hand_graph(void)
{
    return mtt_hand_pair();
}

/* Asserts candidate c of the set is (ms, bytes, p0, p1). */
static void want(const loom_mckp_set *set, const loom_stage_graph *g,
                 int32_t c, double ms, int64_t bytes, int p0, int p1)
{
    ck_assert_double_eq_tol(set->cand_ms[c], ms, 1e-12);
    ck_assert_int_eq(set->cand_bytes[c], bytes);
    uint8_t pol[2];
    loom_mckp_apply(set, g, 0, c, pol);
    ck_assert_int_eq(pol[0], p0);
    ck_assert_int_eq(pol[1], p1);
}

/* Combinations (ms, bytes): NN 6/180, NS 7/130, NF 7.2/120, SN 6.5/130,
 * SS 7.5/80, SF 7.7/70, FN 8/90, FS 9/40, FF 9.2/30. With k = 4 the
 * bounds are 80 and 130 bytes. */
START_TEST(hand_candidates)
{
    loom_mock_host *h = loom_mock_host_new();
    const loom_host_api *host = loom_mock_host_api(h);
    loom_stage_graph *g = hand_graph();
    loom_mckp_set set;
    memset(&set, 0, sizeof set);
    loom_error err = {0};
    /* one step per byte: the buckets find SN (130) and SS (80) exactly */
    ck_assert_int_eq(loom_mckp_build(host, &set, g, 4, 150, &err), LOOM_OK);
    ck_assert_int_eq(set.cand_off[0], 0);
    ck_assert_int_eq(set.cand_off[1], 4);
    want(&set, g, 0, 6.0, 180, 0, 0);
    want(&set, g, 1, 6.5, 130, 1, 0);
    want(&set, g, 2, 7.5, 80, 1, 1);
    want(&set, g, 3, 9.2, 30, 2, 2);
    /* three steps of 50 bytes: weights round up, so the buckets settle for
     * NF (120 <= 130) and SF (70 <= 80) */
    ck_assert_int_eq(loom_mckp_build(host, &set, g, 4, 3, &err), LOOM_OK);
    ck_assert_int_eq(set.cand_off[1], 4);
    want(&set, g, 1, 7.2, 120, 0, 2);
    want(&set, g, 2, 7.7, 70, 1, 2);
    /* k = 2: the extremes only */
    ck_assert_int_eq(loom_mckp_build(host, &set, g, 2, 64, &err), LOOM_OK);
    ck_assert_int_eq(set.cand_off[1], 2);
    want(&set, g, 0, 6.0, 180, 0, 0);
    want(&set, g, 1, 9.2, 30, 2, 2);
    ck_assert_int_eq(loom_mckp_build(host, &set, g, 1, 64, &err), LOOM_EINVAL);
    loom_mckp_free(host, &set);
    loom_graph_free(g);
    loom_mock_host_free(h);
}
END_TEST

/* Brute force over 3^n combinations of one pair: the fastest time whose
 * bytes are at most `bound` (HUGE_VAL when none). */
static double brute_fastest(const loom_stage_graph *g, int32_t e0, int32_t n,
                            double bound)
{
    int32_t total = 1;
    for (int32_t i = 0; i < n; i++)
        total *= 3;
    double best = HUGE_VAL;
    for (int32_t code = 0; code < total; code++) {
        double ms = 0;
        int64_t bytes = 0;
        for (int32_t i = 0, c = code; i < n; i++, c /= 3) {
            ms += loom_mt_entry_ms(g, e0 + i, c % 3);
            bytes += loom_mt_entry_bytes(g, e0 + i, c % 3);
        }
        if ((double)bytes <= bound && ms < best)
            best = ms;
    }
    return best;
}

START_TEST(candidates_pareto_extremes_and_buckets)
{
    loom_mock_host *h = loom_mock_host_new();
    const loom_host_api *host = loom_mock_host_api(h);
    loom_mckp_set set;
    memset(&set, 0, sizeof set);
    loom_error err = {0};
    for (uint64_t seed = 1; seed <= 12; seed++) {
        int E = 1 + (int)(seed % 5), k = 2 + (int)(seed % 6);
        int32_t R = seed % 2 ? 64 : 1000;
        loom_stage_graph *g = mtt_chain(2, 2, E, (int)(seed % 2), seed);
        ck_assert_int_eq(loom_mckp_build(host, &set, g, k, R, &err), LOOM_OK);
        uint8_t *all = calloc((size_t)g->n_layer_entries, 1);
        for (int32_t p = 0; p < g->n_pairs; p++) {
            int32_t a = set.cand_off[p], b = set.cand_off[p + 1];
            int32_t e0 = g->pair_layer_off[p];
            ck_assert(b - a >= 1 && b - a <= k);
            double fast_ms = 0, frugal_ms = 0;
            int64_t min_bytes = 0;
            for (int32_t e = e0; e < e0 + E; e++) {
                double f = HUGE_VAL;
                int64_t m = INT64_MAX;
                for (int o = 0; o < 3; o++) {
                    if (loom_mt_entry_ms(g, e, o) < f)
                        f = loom_mt_entry_ms(g, e, o);
                    if (loom_mt_entry_bytes(g, e, o) < m)
                        m = loom_mt_entry_bytes(g, e, o);
                }
                fast_ms += f;
                min_bytes += m;
            }
            frugal_ms = brute_fastest(g, e0, E, (double)min_bytes);
            ck_assert_double_eq_tol(set.cand_ms[a], fast_ms, 1e-9);
            ck_assert_int_eq(set.cand_bytes[b - 1], min_bytes);
            ck_assert_double_eq_tol(set.cand_ms[b - 1], frugal_ms, 1e-9);
            for (int32_t c = a; c < b; c++) {
                if (c > a) { /* more memory -> less time */
                    ck_assert(set.cand_ms[c] > set.cand_ms[c - 1]);
                    ck_assert(set.cand_bytes[c] < set.cand_bytes[c - 1]);
                }
                /* the recorded cost is the cost of its policies */
                loom_mckp_apply(&set, g, p, c, all);
                double ms = 0;
                int64_t bytes = 0;
                for (int32_t e = e0; e < e0 + E; e++) {
                    ms += loom_mt_entry_ms(g, e, all[e]);
                    bytes += loom_mt_entry_bytes(g, e, all[e]);
                }
                ck_assert_double_eq_tol(set.cand_ms[c], ms, 1e-9);
                ck_assert_int_eq(set.cand_bytes[c], bytes);
            }
            /* every bucket: some candidate within its bound is at least as
             * fast as anything that fits with the rounding slack */
            int64_t range = set.cand_bytes[a] - min_bytes;
            for (int j = 1; range > 0 && j <= k - 2; j++) {
                double bound = (double)min_bytes + (double)range * j / (k - 1);
                int64_t steps = (int64_t)R * j / (k - 1) - E;
                double slack_bound =
                    (double)min_bytes + (double)range * (double)steps / R;
                double brute = brute_fastest(g, e0, E, slack_bound);
                int found = 0;
                for (int32_t c = a; c < b; c++)
                    if ((double)set.cand_bytes[c] <= bound &&
                        set.cand_ms[c] <= brute + 1e-9)
                        found = 1;
                ck_assert_msg(found, "seed %llu pair %d bucket %d",
                              (unsigned long long)seed, p, j);
            }
        }
        free(all);
        loom_graph_free(g);
    }
    loom_mckp_free(host, &set);
    loom_mock_host_free(h);
}
END_TEST

/* Pairs with identical layer options get identical candidates (they are
 * solved once and copied); a pair that differs in one byte count does
 * not share them. */
START_TEST(identical_pairs_share_candidates)
{
    loom_mock_host *h = loom_mock_host_new();
    const loom_host_api *host = loom_mock_host_api(h);
    loom_stage_graph *g = mtt_chain(2, 3, 3, 0, 5);
    size_t opts = 3 * LOOM_POLICY_COUNT * sizeof(loom_policy_option);
    /* pairs 0, 2 and 4 (position 0 of each microbatch) become twins */
    memcpy(&g->layer_options[2 * 3 * LOOM_POLICY_COUNT], g->layer_options, opts);
    memcpy(&g->layer_options[4 * 3 * LOOM_POLICY_COUNT], g->layer_options, opts);
    g->layer_options[4 * 3 * LOOM_POLICY_COUNT].activation_bytes += 1;
    loom_mckp_set set;
    memset(&set, 0, sizeof set);
    loom_error err = {0};
    ck_assert_int_eq(loom_mckp_build(host, &set, g, 6, 64, &err), LOOM_OK);
    int32_t n0 = set.cand_off[1] - set.cand_off[0];
    ck_assert_int_eq(set.cand_off[3] - set.cand_off[2], n0);
    uint8_t a[18], b[18];
    for (int32_t j = 0; j < n0; j++) {
        int32_t c0 = set.cand_off[0] + j, c2 = set.cand_off[2] + j;
        ck_assert_double_eq(set.cand_ms[c0], set.cand_ms[c2]);
        ck_assert_int_eq(set.cand_bytes[c0], set.cand_bytes[c2]);
        loom_mckp_apply(&set, g, 0, c0, a);
        loom_mckp_apply(&set, g, 2, c2, b);
        ck_assert_mem_eq(a, b + 6, 3);
    }
    /* pair 4 differs: its fastest candidate holds one more byte */
    ck_assert_int_eq(set.cand_bytes[set.cand_off[4]],
                     set.cand_bytes[set.cand_off[0]] + 1);
    loom_mckp_free(host, &set);
    loom_graph_free(g);
    loom_mock_host_free(h);
}
END_TEST

/* Adding a combination keeps the Pareto order; it is kept unless a
 * candidate dominates it, and drops what it dominates. */
START_TEST(adding_a_combination)
{
    loom_mock_host *h = loom_mock_host_new();
    const loom_host_api *host = loom_mock_host_api(h);
    loom_stage_graph *g = hand_graph();
    loom_mckp_set set;
    memset(&set, 0, sizeof set);
    loom_error err = {0};
    /* k = 3, bound 105 bytes: NONE,NONE (6/180), NF (7.2/120 is over),
     * SS (7.5/80), FULL,FULL (9.2/30) */
    ck_assert_int_eq(loom_mckp_build(host, &set, g, 3, 150, &err), LOOM_OK);
    ck_assert_int_eq(set.cand_off[1], 3);
    want(&set, g, 1, 7.5, 80, 1, 1);
    const uint8_t sn[2] = {1, 0}; /* 6.5 ms / 130 bytes: a new point */
    loom_mckp_add(&set, g, sn);
    ck_assert_int_eq(set.cand_off[1], 4);
    want(&set, g, 0, 6.0, 180, 0, 0);
    want(&set, g, 1, 6.5, 130, 1, 0);
    want(&set, g, 2, 7.5, 80, 1, 1);
    want(&set, g, 3, 9.2, 30, 2, 2);
    const uint8_t fn[2] = {2, 0}; /* 8 ms / 90 bytes: dominated by SS */
    loom_mckp_add(&set, g, fn);
    ck_assert_int_eq(set.cand_off[1], 4);
    want(&set, g, 2, 7.5, 80, 1, 1);
    /* make SF 7.4 ms / 70 bytes: it dominates SS and replaces it */
    g->layer_options[1 * LOOM_POLICY_COUNT + 2].backward_ms = 2.9;
    const uint8_t sf[2] = {1, 2};
    loom_mckp_add(&set, g, sf);
    ck_assert_int_eq(set.cand_off[1], 4);
    want(&set, g, 2, 7.4, 70, 1, 2);
    want(&set, g, 3, 9.2, 30, 2, 2);
    loom_mckp_free(host, &set);
    loom_graph_free(g);
    loom_mock_host_free(h);
}
END_TEST

/* The candidates as descent units: every pair starts at its fastest
 * candidate, and the memory tuners' loop walks one pair's unit down its
 * candidates until the cap holds (180 -> 130 -> 80 bytes under a cap of
 * 100: two moves, to SELECTIVE, SELECTIVE). */
START_TEST(units_walk_the_candidates)
{
    loom_mock_host *h = loom_mock_host_new();
    const loom_host_api *host = loom_mock_host_api(h);
    loom_stage_graph *g = hand_graph();
    loom_schedule *s = mtt_order(1, 1, 0, 0);
    loom_mckp_set set;
    loom_mckp_units mu;
    memset(&set, 0, sizeof set);
    memset(&mu, 0, sizeof mu);
    loom_error err = {0};
    ck_assert_int_eq(loom_mckp_build(host, &set, g, 4, 150, &err), LOOM_OK);
    loom_mt_units u;
    ck_assert_int_eq(loom_mckp_units_reset(host, &mu, &set, &u, "t", &err), LOOM_OK);
    ck_assert_int_eq(u.n_pairs, 1);
    ck_assert_int_eq(u.pair_unit_off[0], 0);
    ck_assert_int_eq(u.pair_unit_off[1], 1);
    ck_assert_int_eq(u.chain_off[1], 4);
    ck_assert_int_eq(mu.state[0], 0);
    ck_assert_int_eq(mu.pair_bytes[0], 180);
    uint8_t pol[2];
    loom_mckp_materialise(&set, g, &u, pol);
    ck_assert_int_eq(pol[0], LOOM_POLICY_NONE);
    ck_assert_int_eq(pol[1], LOOM_POLICY_NONE);
    mu.state[0] = 3;
    loom_mckp_materialise(&set, g, &u, pol);
    ck_assert_int_eq(pol[0], LOOM_POLICY_FULL);
    ck_assert_int_eq(pol[1], LOOM_POLICY_FULL);

    ck_assert_int_eq(loom_mckp_units_reset(host, &mu, &set, &u, "t", &err), LOOM_OK);
    loom_mt_driver d;
    loom_mt_driver_init(host, loom_mock_host_ctx(h), &d);
    g->memory_cap_bytes = 100;
    ck_assert_int_eq(loom_mt_driver_run(host, &d, g, s, &u, mu.pair_bytes,
                                        loom_mckp_materialise, &set, pol, "t",
                                        &err), LOOM_OK);
    ck_assert_int_eq(d.moves, 2);
    ck_assert_int_eq(mu.state[0], 2);
    ck_assert_int_eq(mu.pair_bytes[0], 80);
    ck_assert_int_eq(pol[0], LOOM_POLICY_SELECTIVE);
    ck_assert_int_eq(pol[1], LOOM_POLICY_SELECTIVE);

    loom_mt_driver_free(host, &d);
    loom_mckp_units_free(host, &mu);
    loom_mckp_free(host, &set);
    loom_schedule_free(s);
    loom_graph_free(g);
    loom_mock_host_free(h);
}
END_TEST

/* The suite: every test in one case. */
static Suite *suite(void)
{
    Suite *s = suite_create("kit-mckp");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, hand_candidates);
    tcase_add_test(tc, candidates_pareto_extremes_and_buckets);
    tcase_add_test(tc, adding_a_combination);
    tcase_add_test(tc, identical_pairs_share_candidates);
    tcase_add_test(tc, units_walk_the_candidates);
    suite_add_tcase(s, tc);
    return s;
}

/* Runs the suite. */
int main(void)
{
    return loom_test_main(suite());
}
