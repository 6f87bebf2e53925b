/* test_memtune.c - the memory-tuning kit (<loom/kits/memtune.h>) on its
 * own: a memory timeline by hand (slots, peaks, live pairs, crests),
 * per-layer policy chains and the tuning loop by hand (the moves, the
 * policies, the bytes left, an infeasible cap's message), params and
 * input checks, and timeline peaks equal to the core simulator's. */
#include <stdio.h>
#include <loom/kits/memtune.h>
#include <loom/mock_memtune.h>

/* One rank, two microbatches, one entry per pair: GPipe runs F0 F1 B0 B1,
 * 1F1B runs F0 B0 F1 B1 (stage ids 0 = F0, 1 = B0, 2 = F1, 3 = B1). */
/* loom_offload_option, the worked cases of docs/memory-and-ilp.md
 * ("Offload"): none = 2 ms forward, 4 ms backward (1 ms of it W), 6 MB;
 * full = 1 MB. At 10 GB/s the 5 MB copy (0.5 ms) is hidden; at 1 GB/s
 * (5 ms) it exposes 3 ms on the forward and 1 ms on the backward; without
 * host bandwidth the option is none's. */
START_TEST(offload_option_closed_form)
{
    loom_policy_option none = {2.0, 4.0, 1.0, 6000000}, full = {2.0, 6.0, 1.0, 1000000};
    loom_cluster c;
    memset(&c, 0, sizeof c);
    c.host_bytes_per_s = 10e9;
    loom_policy_option o = loom_offload_option(&c, &none, &full);
    ck_assert_double_eq_tol(o.forward_ms, 2.0, 1e-12);
    ck_assert_double_eq_tol(o.backward_ms, 4.0, 1e-12);
    ck_assert_double_eq(o.weight_grad_ms, 1.0);
    ck_assert_int_eq(o.activation_bytes, 1000000);
    c.host_bytes_per_s = 1e9;
    o = loom_offload_option(&c, &none, &full);
    ck_assert_double_eq_tol(o.forward_ms, 5.0, 1e-12);
    ck_assert_double_eq_tol(o.backward_ms, 5.0, 1e-12);
    ck_assert_double_eq(o.weight_grad_ms, 1.0);
    ck_assert_int_eq(o.activation_bytes, 1000000);
    c.host_bytes_per_s = 0;
    o = loom_offload_option(&c, &none, &full);
    ck_assert(!memcmp(&o, &none, sizeof o));
    o = loom_offload_option(NULL, &none, &full);
    ck_assert(!memcmp(&o, &none, sizeof o));
}
END_TEST

START_TEST(timeline_by_hand)
{
    loom_mock_host *h = loom_mock_host_new();
    const loom_host_api *host = loom_mock_host_api(h);
    loom_stage_graph *g = mtt_chain(1, 2, 1, 0, 1);
    loom_schedule *gp = mtt_order(1, 2, 0, 1), *ob = mtt_order(1, 2, 0, 0);
    static const int32_t gp_order[4] = {0, 2, 1, 3}, ob_order[4] = {0, 1, 2, 3};
    ck_assert_mem_eq(gp->order, gp_order, sizeof gp_order);
    ck_assert_mem_eq(ob->order, ob_order, sizeof ob_order);
    loom_mt_timeline t;
    memset(&t, 0, sizeof t);
    loom_error err = {0};

    ck_assert_int_eq(loom_mt_timeline_build(host, &t, g, gp, &err), LOOM_OK);
    ck_assert_int_eq(t.n_pairs, 2);
    ck_assert_int_eq(t.pair_open[0], 0);
    ck_assert_int_eq(t.pair_open[1], 1);
    ck_assert_int_eq(t.pair_close[0], 2);
    ck_assert_int_eq(t.pair_close[1], 3);
    int64_t bytes[2] = {100, 40};
    ck_assert_int_eq(loom_mt_rank_peak(&t, 0, bytes), 140);
    ck_assert_int_eq(t.peak_bytes[0], 140);
    ck_assert_int_eq(t.peak_slot[0], 1);
    int32_t live[2];
    ck_assert_int_eq(loom_mt_live_pairs(&t, 0, 1, live), 2);
    ck_assert_int_eq(live[0] + live[1], 1); /* pairs 0 and 1 */
    ck_assert_int_eq(loom_mt_live_pairs(&t, 0, 2, live), 1);
    ck_assert_int_eq(live[0], 1);
    ck_assert_int_eq(loom_mt_is_crest(&t, 0, 0), 0); /* F1 allocates next */
    ck_assert_int_eq(loom_mt_is_crest(&t, 0, 1), 1);
    ck_assert_int_eq(loom_mt_is_crest(&t, 0, 2), 0); /* frees */

    /* the same pairs in 1F1B order: never both live */
    ck_assert_int_eq(loom_mt_timeline_build(host, &t, g, ob, &err), LOOM_OK);
    ck_assert_int_eq(loom_mt_rank_peak(&t, 0, bytes), 100);
    ck_assert_int_eq(t.peak_slot[0], 0);
    int64_t later[2] = {100, 140};
    ck_assert_int_eq(loom_mt_rank_peak(&t, 0, later), 140);
    ck_assert_int_eq(t.peak_slot[0], 2);
    int64_t none[2] = {0, 0};
    ck_assert_int_eq(loom_mt_rank_peak(&t, 0, none), 0);
    ck_assert_int_eq(t.peak_slot[0], -1);

    /* B0 as a fill inside F1 frees with F1's end, as the simulator frees
     * it: both pairs are live at F1's slot */
    ob->fill_hosts[1] = 1;
    ck_assert_int_eq(loom_mt_timeline_build(host, &t, g, ob, &err), LOOM_OK);
    ck_assert_int_eq(t.pair_close[0], 2);
    ck_assert_int_eq(loom_mt_rank_peak(&t, 0, bytes), 140);
    ck_assert_int_eq(t.peak_slot[0], 2);
    ck_assert_int_eq(loom_mt_live_pairs(&t, 0, 2, live), 1); /* freed at the end of slot 2 */
    uint8_t pol[2] = {LOOM_POLICY_NONE, LOOM_POLICY_NONE};
    ck_assert_int_eq(mtt_simulate(g, ob, pol, NULL).max_peak_bytes,
                     loom_mt_rank_peak(&t, 0, (int64_t[2]){g->layer_options[0].activation_bytes,
                                                          g->layer_options[LOOM_POLICY_COUNT]
                                                              .activation_bytes}));
    ob->fill_hosts[1] = 0;

    loom_mt_timeline_free(host, &t);
    loom_schedule_free(gp);
    loom_schedule_free(ob);
    loom_graph_free(g);
    loom_mock_host_free(h);
}
END_TEST

/* Sets entry e's three options: (forward + backward ms, bytes) each; the
 * forward is 1 ms of it. */
static void set_entry(loom_stage_graph *g, int32_t e, const double ms[3],
                      const int64_t bytes[3])
{
    for (int q = 0; q < 3; q++) {
        loom_policy_option *o = &g->layer_options[(size_t)e * LOOM_POLICY_COUNT + (size_t)q];
        o->forward_ms = 1.0;
        o->backward_ms = ms[q] - 1.0;
        o->weight_grad_ms = 0.0;
        o->activation_bytes = bytes[q];
    }
}

/* One rank, two microbatches, two entries per pair (GPipe: the peak holds
 * all four). Bytes per ms of the first moves: e0 80, e1 60, e2 50, e3
 * 16.7 (e3's SELECTIVE saves nothing, so its chain skips it). */
START_TEST(chains_and_tuning_loop_by_hand)
{
    loom_mock_host *h = loom_mock_host_new();
    const loom_host_api *host = loom_mock_host_api(h);
    loom_stage_graph *g = mtt_chain(1, 2, 2, 0, 1);
    const double ms0[3] = {3, 3.5, 5}, ms1[3] = {3, 4, 4.5},
                 ms2[3] = {3, 3.2, 5}, ms3[3] = {3, 3.1, 6};
    const int64_t b0[3] = {100, 60, 10}, b1[3] = {100, 40, 20},
                  b2[3] = {100, 90, 0}, b3[3] = {100, 100, 50};
    set_entry(g, 0, ms0, b0);
    set_entry(g, 1, ms1, b1);
    set_entry(g, 2, ms2, b2);
    set_entry(g, 3, ms3, b3);
    loom_graph_apply_policies(g);
    loom_schedule *s = mtt_order(1, 2, 0, 1);
    ck_assert_double_eq(loom_mt_entry_ms(g, 0, LOOM_POLICY_SELECTIVE), 3.5);
    ck_assert_int_eq(loom_mt_entry_bytes(g, 2, LOOM_POLICY_FULL), 0);

    loom_mt_entry_chains c;
    memset(&c, 0, sizeof c);
    loom_error err = {0};
    ck_assert_int_eq(loom_mt_entry_chains_build(host, &c, g, &err), LOOM_OK);
    static const int32_t off[5] = {0, 3, 6, 9, 11};
    static const uint8_t pol[11] = {0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 2};
    static const int64_t cb[11] = {100, 60, 10, 100, 40, 20, 100, 90, 0, 100, 50};
    ck_assert_mem_eq(c.chain_off, off, sizeof off);
    ck_assert_mem_eq(c.chain_end, off + 1, 4 * sizeof *off);
    ck_assert_mem_eq(c.chain_pol, pol, sizeof pol);
    ck_assert_mem_eq(c.chain_bytes, cb, sizeof cb);
    ck_assert_double_eq(c.chain_ms[10], 6.0);
    ck_assert_int_eq(c.pair_bytes[0], 200);
    ck_assert_int_eq(c.pair_bytes[1], 200);
    ck_assert_double_eq(loom_mt_entry_total_ms(&c, g), 12.0);

    /* cap 300 of a 400-byte peak: e0 -> SELECTIVE (360), then e1 ->
     * SELECTIVE (60 bytes per ms, beating e2's 50 and e0's next 33) */
    loom_mt_driver d;
    loom_mt_driver_init(host, loom_mock_host_ctx(h), &d);
    ck_assert_ptr_null(d.sim); /* no simulator on this host */
    g->memory_cap_bytes = 300;
    loom_mt_units u = loom_mt_entry_units(&c, g);
    uint8_t got[4];
    ck_assert_int_eq(loom_mt_driver_run(host, &d, g, s, &u, c.pair_bytes,
                                        loom_mt_entry_materialise, &c, got,
                                        "t", &err), LOOM_OK);
    static const uint8_t want[4] = {LOOM_POLICY_SELECTIVE, LOOM_POLICY_SELECTIVE,
                                    LOOM_POLICY_NONE, LOOM_POLICY_NONE};
    ck_assert_mem_eq(got, want, sizeof want);
    ck_assert_int_eq(d.descended, 1);
    ck_assert_int_eq(d.moves, 2);
    ck_assert_int_eq(c.pair_bytes[0], 100);
    ck_assert_int_eq(c.pair_bytes[1], 200);
    ck_assert_double_eq(loom_mt_entry_total_ms(&c, g), 13.5);
    ck_assert_int_eq(loom_mt_driver_confirm(host, &d, g, s, got, "t", &err), LOOM_OK);

    /* every layer at its most frugal choice holds 80 bytes: cap 10 fails */
    ck_assert_int_eq(loom_mt_entry_chains_build(host, &c, g, &err), LOOM_OK);
    g->memory_cap_bytes = 10;
    u = loom_mt_entry_units(&c, g);
    ck_assert_int_eq(loom_mt_driver_run(host, &d, g, s, &u, c.pair_bytes,
                                        loom_mt_entry_materialise, &c, got,
                                        "t", &err), LOOM_EINFEASIBLE);
    ck_assert_str_eq(err.message,
                     "t: rank 0 is 70 bytes short of the memory cap of 10 bytes: "
                     "static 0 + activations 80 bytes at its peak, with every "
                     "layer live there at its most frugal choice");

    /* without a cap nothing moves */
    ck_assert_int_eq(loom_mt_entry_chains_build(host, &c, g, &err), LOOM_OK);
    g->memory_cap_bytes = 0;
    u = loom_mt_entry_units(&c, g);
    ck_assert_int_eq(loom_mt_driver_run(host, &d, g, s, &u, c.pair_bytes,
                                        loom_mt_entry_materialise, &c, got,
                                        "t", &err), LOOM_OK);
    ck_assert_int_eq(d.descended, 0);
    for (int e = 0; e < 4; e++)
        ck_assert_int_eq(got[e], LOOM_POLICY_NONE);

    loom_mt_driver_free(host, &d);
    loom_mt_entry_chains_free(host, &c);
    loom_schedule_free(s);
    loom_graph_free(g);
    loom_mock_host_free(h);
}
END_TEST

START_TEST(check_inputs)
{
    loom_mock_host *h = loom_mock_host_new();
    const loom_host_api *host = loom_mock_host_api(h);
    loom_error err = {0};
    loom_stage_graph *g = mtt_chain(2, 2, 1, 0, 3);
    loom_schedule *s = mtt_order(2, 2, 0, 0);
    uint8_t pol[4];
    ck_assert_int_eq(loom_mt_check_inputs(host, g, s, pol, "t", &err), LOOM_OK);
    ck_assert_int_eq(loom_mt_check_inputs(host, g, NULL, pol, "t", &err),
                     LOOM_EINVAL);
    ck_assert_str_eq(err.message, "t: the stage graph has no per-layer memory "
                                  "options, or the schedule or policy array is "
                                  "missing");
    loom_schedule_free(s);
    loom_graph_free(g);
    loom_mock_host_free(h);
}
END_TEST

/* The timeline's prefix-sum peaks equal the simulator's for random
 * policies, orders and split backward. */
START_TEST(timeline_peaks_match_simulator)
{
    loom_mock_host *h = loom_mock_host_new();
    const loom_host_api *host = loom_mock_host_api(h);
    loom_mt_timeline t;
    memset(&t, 0, sizeof t);
    uint64_t rng = 5;
    for (uint64_t seed = 1; seed <= 16; seed++) {
        int P = 1 + (int)(seed % 4), M = 1 + (int)(seed % 5);
        int split = (int)(seed % 2), gpipe = (int)(seed / 2 % 2);
        loom_stage_graph *g = mtt_chain(P, M, 2, split, seed);
        loom_schedule *s = mtt_order(P, M, split, gpipe);
        uint8_t *pol = malloc((size_t)g->n_layer_entries);
        for (int32_t e = 0; e < g->n_layer_entries; e++)
            pol[e] = (uint8_t)(mtt_uniform(&rng) * 3);
        int64_t peaks[8];
        mtt_simulate(g, s, pol, peaks);
        loom_error err = {0};
        ck_assert_int_eq(loom_mt_timeline_build(host, &t, g, s, &err), LOOM_OK);
        int64_t *bytes = calloc((size_t)g->n_pairs, sizeof *bytes);
        for (int32_t p = 0; p < g->n_pairs; p++)
            for (int32_t e = g->pair_layer_off[p]; e < g->pair_layer_off[p + 1]; e++)
                bytes[p] += loom_mt_entry_bytes(g, e, pol[e]);
        for (int r = 0; r < P; r++) {
            int64_t peak = loom_mt_rank_peak(&t, r, bytes);
            ck_assert_int_eq(peak + g->static_bytes[r], peaks[r]);
            /* the live set at the peak sums to the peak */
            int32_t live[64];
            int32_t n = loom_mt_live_pairs(&t, r, t.peak_slot[r], live);
            int64_t sum = 0;
            for (int32_t i = 0; i < n; i++)
                sum += bytes[live[i]];
            ck_assert_int_eq(sum, peak);
            ck_assert(loom_mt_is_crest(&t, r, t.peak_slot[r]));
        }
        free(bytes);
        free(pol);
        loom_schedule_free(s);
        loom_graph_free(g);
    }
    loom_mt_timeline_free(host, &t);
    loom_mock_host_free(h);
}
END_TEST

/* With memory per phase (W keeps only part of a pair's bytes, I frees the
 * rest) the timeline, which counts a pair's bytes until its W, bounds the
 * simulator's peaks from above (and meets them when W keeps everything:
 * timeline_peaks_match_simulator). */
START_TEST(timeline_bounds_per_phase_peaks)
{
    loom_mock_host *h = loom_mock_host_new();
    const loom_host_api *host = loom_mock_host_api(h);
    loom_mt_timeline t;
    memset(&t, 0, sizeof t);
    uint64_t rng = 9;
    for (uint64_t seed = 1; seed <= 16; seed++) {
        int P = 1 + (int)(seed % 4), M = 1 + (int)(seed % 5), gpipe = (int)(seed / 2 % 2);
        loom_stage_graph *g = mtt_chain(P, M, 2, 1, seed);
        loom_schedule *s = mtt_order(P, M, 1, gpipe);
        int64_t *held = loom_graph_alloc_weight_held(g);
        ck_assert_ptr_nonnull(held);
        for (int32_t k = 0; k < g->n_layer_entries * LOOM_POLICY_COUNT; k++)
            held[k] = (int64_t)(mtt_uniform(&rng) * (double)(g->layer_options[k].activation_bytes + 1));
        uint8_t *pol = malloc((size_t)g->n_layer_entries + 1);
        for (int32_t e = 0; e < g->n_layer_entries; e++)
            pol[e] = (uint8_t)(mtt_uniform(&rng) * 3);
        int64_t peaks[8];
        mtt_simulate(g, s, pol, peaks);
        loom_error err = {0};
        ck_assert_int_eq(loom_mt_timeline_build(host, &t, g, s, &err), LOOM_OK);
        int64_t *bytes = calloc((size_t)g->n_pairs, sizeof *bytes);
        for (int32_t p = 0; p < g->n_pairs; p++)
            for (int32_t e = g->pair_layer_off[p]; e < g->pair_layer_off[p + 1]; e++)
                bytes[p] += loom_mt_entry_bytes(g, e, pol[e]);
        for (int r = 0; r < P; r++) {
            int64_t peak = loom_mt_rank_peak(&t, r, bytes) + g->static_bytes[r];
            ck_assert_int_ge(peak, peaks[r]);
        }
        free(bytes);
        free(pol);
        loom_schedule_free(s);
        loom_graph_free(g);
    }
    loom_mt_timeline_free(host, &t);
    loom_mock_host_free(h);
}
END_TEST

/* Runs the descent on g under order s with the cap at `share` of its
 * peak with no recomputation, fixing `rescans` peaks a rank by rescans
 * before the tree takes over, adding a slot's moves to it slot by slot
 * up to `batch_span` slots a move (loom_mt_descent); the units' states
 * and pair bytes into state[] and bytes[], the peaks into peak[] and
 * peak_slot[]. */
static int64_t descend_with(const loom_host_api *host, loom_stage_graph *g,
                            const loom_schedule *s, double share, int32_t rescans,
                            int32_t batch_span, int32_t *state, int64_t *bytes, int64_t *peak,
                            int32_t *peak_slot)
{
    loom_mt_entry_chains c;
    memset(&c, 0, sizeof c);
    loom_mt_timeline t;
    memset(&t, 0, sizeof t);
    loom_mt_descent d;
    memset(&d, 0, sizeof d);
    d.rescans = rescans;
    d.batch_span = batch_span;
    loom_error err = {0};
    ck_assert_int_eq(loom_mt_entry_chains_build(host, &c, g, &err), LOOM_OK);
    ck_assert_int_eq(loom_mt_timeline_build(host, &t, g, s, &err), LOOM_OK);
    g->memory_cap_bytes = share * (double)mtt_uniform_peak(g, s, LOOM_POLICY_NONE);
    loom_mt_units u = loom_mt_entry_units(&c, g);
    int64_t moves = 0;
    ck_assert_msg(loom_mt_descend(host, &d, &t, g, &u, c.pair_bytes, -1, "t", &moves, &err) ==
                      LOOM_OK, "%s", err.message);
    memcpy(state, c.state, (size_t)g->n_layer_entries * sizeof *state);
    memcpy(bytes, c.pair_bytes, (size_t)g->n_pairs * sizeof *bytes);
    for (int32_t r = 0; r < g->n_ranks; r++) {
        peak[r] = t.peak_bytes[r];
        peak_slot[r] = t.peak_slot[r];
        /* what the descent leaves is what a scan of the rank reads */
        ck_assert_int_eq(loom_mt_rank_peak(&t, r, c.pair_bytes), peak[r]);
        ck_assert_int_eq(t.peak_slot[r], peak_slot[r]);
        ck_assert(g->static_bytes[r] + peak[r] <= g->memory_cap_bytes);
    }
    loom_mt_descent_free(host, &d);
    loom_mt_timeline_free(host, &t);
    loom_mt_entry_chains_free(host, &c);
    return moves;
}

/* A rank with many peaks over the cap (1F1B over 48 microbatches) makes
 * the same moves whether every peak is found by rescanning the rank or,
 * past the first, by the tree of its slots, with each slot's moves added
 * to the tree as the descent chooses, range by range, or slot by slot. */
START_TEST(descent_tree_matches_rescans)
{
    loom_mock_host *h = loom_mock_host_new();
    const loom_host_api *host = loom_mock_host_api(h);
    enum { RUNS = 4 };
    const int32_t rescans[RUNS] = {INT32_MAX, 1, 1, 1}, span[RUNS] = {0, 0, -1, INT32_MAX};
    for (uint64_t seed = 1; seed <= 6; seed++) {
        int P = 1 + (int)(seed % 3), M = 48;
        loom_stage_graph *g = mtt_chain(P, M, 2, 0, seed);
        loom_schedule *s = mtt_order(P, M, 0, 0);
        int32_t *st[RUNS];
        int64_t *by[RUNS], peak[RUNS][8], moves[RUNS];
        int32_t slot[RUNS][8];
        double share = 0.5 + 0.1 * (double)(seed % 3);
        for (int k = 0; k < RUNS; k++) {
            st[k] = malloc((size_t)g->n_layer_entries * sizeof *st[k]);
            by[k] = malloc((size_t)g->n_pairs * sizeof *by[k]);
            moves[k] = descend_with(host, g, s, share, rescans[k], span[k], st[k], by[k],
                                    peak[k], slot[k]);
        }
        ck_assert_int_gt(moves[0], 8); /* the tree took over */
        for (int k = 1; k < RUNS; k++) {
            ck_assert_int_eq(moves[0], moves[k]);
            ck_assert_mem_eq(st[0], st[k], (size_t)g->n_layer_entries * sizeof *st[0]);
            ck_assert_mem_eq(by[0], by[k], (size_t)g->n_pairs * sizeof *by[0]);
            ck_assert_mem_eq(peak[0], peak[k], (size_t)P * sizeof peak[0][0]);
            ck_assert_mem_eq(slot[0], slot[k], (size_t)P * sizeof slot[0][0]);
        }
        for (int k = 0; k < RUNS; k++) {
            free(st[k]);
            free(by[k]);
        }
        loom_schedule_free(s);
        loom_graph_free(g);
    }
    loom_mock_host_free(h);
}
END_TEST

/* 1 when unit y sits where unit x sat before its move (x now at state
 * k + 1, y at k) with the same chain from there on. */
static int same_chain_from(const loom_mt_units *u, int32_t x, int32_t y)
{
    int32_t k = u->state[x] - 1, n = u->chain_end[x] - u->chain_off[x];
    if (u->state[y] != k || u->chain_end[y] - u->chain_off[y] != n)
        return 0;
    for (int32_t i = k; i < n; i++)
        if (u->chain_bytes[u->chain_off[x] + i] != u->chain_bytes[u->chain_off[y] + i] ||
            u->chain_ms[u->chain_off[x] + i] != u->chain_ms[u->chain_off[y] + i])
            return 0;
    return 1;
}

/* The descent's rule, written plainly: while rank r is over the cap, take
 * its peak slot (a scan of the rank) and, until that slot fits, move the
 * unit of a pair live there with the best move (adding no time first, then
 * the most bytes per ms, or bytes when free; ties to the lower unit), and
 * the pair's next units that make the same move while the slot still
 * needs bytes. Every live unit is looked at for every move. */
static void descend_plainly(loom_mt_timeline *t, const loom_stage_graph *g, loom_mt_units *u,
                            int64_t *bytes, int32_t r, int32_t *live)
{
    double cap = g->memory_cap_bytes, stat = (double)g->static_bytes[r];
    int64_t at;
    while (stat + (double)(at = loom_mt_rank_peak(t, r, bytes)) > cap) {
        int32_t n = loom_mt_live_pairs(t, r, t->peak_slot[r], live);
        while (stat + (double)at > cap) {
            int32_t bx = -1, bp = -1, bfree = 0;
            double bkey = 0;
            int64_t bsaved = 0;
            for (int32_t i = 0; i < n; i++)
                for (int32_t x = u->pair_unit_off[live[i]]; x < u->pair_unit_off[live[i] + 1]; x++) {
                    int32_t st = u->chain_off[x] + u->state[x];
                    if (st + 1 >= u->chain_end[x])
                        continue;
                    int64_t saved = u->chain_bytes[st] - u->chain_bytes[st + 1];
                    double added = u->chain_ms[st + 1] - u->chain_ms[st];
                    int is_free = !(added > 0.0);
                    double key = is_free ? (double)saved : (double)saved / added;
                    if (bx < 0 || is_free > bfree ||
                        (is_free == bfree && (key > bkey || (key == bkey && x < bx)))) {
                        bx = x, bp = live[i], bfree = is_free, bkey = key, bsaved = saved;
                    }
                }
            ck_assert_int_ge(bx, 0);
            u->state[bx]++;
            bytes[bp] -= bsaved;
            at -= bsaved;
            for (int32_t y = bx + 1; y < u->pair_unit_off[bp + 1] && stat + (double)at > cap &&
                                     same_chain_from(u, bx, y);
                 y++) {
                u->state[y]++;
                bytes[bp] -= bsaved;
                at -= bsaved;
            }
        }
    }
}

/* The descent makes exactly the moves of its rule written plainly, on
 * GPipe orders (every pair live at the peak, most of them soon at their
 * most frugal state, which the descent then passes over) and 1F1B orders,
 * at caps from half to seven tenths of the peak without recomputation. */
START_TEST(descent_follows_its_rule)
{
    loom_mock_host *h = loom_mock_host_new();
    const loom_host_api *host = loom_mock_host_api(h);
    for (uint64_t seed = 1; seed <= 12; seed++) {
        int P = 1 + (int)(seed % 3), M = 24 + 8 * (int)(seed % 4);
        int gpipe = (int)(seed % 2);
        loom_stage_graph *g = mtt_chain(P, M, 3, 0, seed);
        loom_schedule *s = mtt_order(P, M, 0, gpipe);
        double share = 0.5 + 0.1 * (double)(seed % 3);
        int32_t *state = malloc((size_t)g->n_layer_entries * sizeof *state);
        int64_t *bytes = malloc((size_t)g->n_pairs * sizeof *bytes), peak[8];
        int32_t slot[8];
        descend_with(host, g, s, share, INT32_MAX, 0, state, bytes, peak, slot);

        loom_mt_entry_chains c;
        memset(&c, 0, sizeof c);
        loom_mt_timeline t;
        memset(&t, 0, sizeof t);
        loom_error err = {0};
        ck_assert_int_eq(loom_mt_entry_chains_build(host, &c, g, &err), LOOM_OK);
        ck_assert_int_eq(loom_mt_timeline_build(host, &t, g, s, &err), LOOM_OK);
        loom_mt_units u = loom_mt_entry_units(&c, g);
        int32_t *live = malloc((size_t)g->n_pairs * sizeof *live);
        int moved = 0;
        for (int32_t r = 0; r < g->n_ranks; r++)
            descend_plainly(&t, g, &u, c.pair_bytes, r, live);
        for (int32_t e = 0; e < g->n_layer_entries; e++) {
            ck_assert_msg(c.state[e] == state[e], "seed %d: entry %d at state %d, the rule's %d",
                          (int)seed, e, state[e], c.state[e]);
            moved += state[e] > 0;
        }
        ck_assert_mem_eq(c.pair_bytes, bytes, (size_t)g->n_pairs * sizeof *bytes);
        ck_assert_int_gt(moved, 0);
        free(live);
        loom_mt_timeline_free(host, &t);
        loom_mt_entry_chains_free(host, &c);
        free(state);
        free(bytes);
        loom_schedule_free(s);
        loom_graph_free(g);
    }
    loom_mock_host_free(h);
}
END_TEST

/* Entries with the options of an earlier entry share its chain's states
 * (the entry before, the one at their place in the previous pair, or one
 * further back: pair 6's layers are pair 0's again); a descent
 * over the shared chains makes the moves it makes over a copy of the
 * chain for every entry, given each copy's end or (chain_end NULL) not. Every pair's entries repeat the first pair's,
 * except pair 5's, and entry 2 of every pair repeats entry 1. */
START_TEST(repeated_layers_share_chains)
{
    loom_mock_host *h = loom_mock_host_new();
    const loom_host_api *host = loom_mock_host_api(h);
    for (uint64_t seed = 1; seed <= 6; seed++) {
        int P = 1 + (int)(seed % 3), M = 32, E = 3;
        loom_stage_graph *g = mtt_chain(P, M, E, 0, seed);
        loom_policy_option *o = g->layer_options;
        const size_t row = LOOM_POLICY_COUNT;
        for (int32_t p = 0; p < g->n_pairs; p++)
            for (int32_t i = 0; i < E; i++) {
                int32_t e = g->pair_layer_off[p] + i;
                int32_t from = i == 2 ? e - 1 : p == 5 ? -1 : i;
                if (from >= 0 && from != e)
                    memcpy(&o[(size_t)e * row], &o[(size_t)from * row], row * sizeof *o);
            }
        loom_graph_apply_policies(g);
        loom_schedule *s = mtt_order(P, M, 0, (int)(seed % 2));

        loom_mt_entry_chains c;
        memset(&c, 0, sizeof c);
        loom_error err = {0};
        ck_assert_int_eq(loom_mt_entry_chains_build(host, &c, g, &err), LOOM_OK);
        int32_t n = g->n_layer_entries, p5 = g->pair_layer_off[5];
        for (int32_t e = 0; e < n; e++) {
            int32_t i = e - g->pair_layer_off[e / E], want = i == 2 ? e - 1 : i;
            if (e >= p5 && e < p5 + 2)
                want = e; /* pair 5's own layers; pair 6 has pair 0's again */
            ck_assert_msg(c.chain_off[e] == c.chain_off[want] && c.chain_end[e] == c.chain_end[want],
                          "seed %d: entry %d has chain %d..%d, expected entry %d's %d..%d", (int)seed,
                          e, c.chain_off[e], c.chain_end[e], want, c.chain_off[want], c.chain_end[want]);
        }
        ck_assert_int_eq(c.chain_off[n], c.chain_end[1] + (c.chain_end[p5 + 1] - c.chain_off[p5]));

        /* the same chains, a copy for every entry, each after the one before:
         * with their ends, and without (chain_end NULL, chain_off n + 1) */
        int32_t *off = malloc(((size_t)n + 1) * sizeof *off), *end = malloc((size_t)n * sizeof *end);
        int32_t *state = calloc((size_t)n, sizeof *state);
        double *ms = malloc((size_t)n * row * sizeof *ms);
        int64_t *bytes = malloc((size_t)n * row * sizeof *bytes);
        int64_t *pair_bytes = malloc((size_t)g->n_pairs * sizeof *pair_bytes);
        int32_t k = 0;
        for (int32_t e = 0; e < n; e++) {
            off[e] = k;
            for (int32_t x = c.chain_off[e]; x < c.chain_end[e]; x++, k++) {
                ms[k] = c.chain_ms[x];
                bytes[k] = c.chain_bytes[x];
            }
            end[e] = k;
        }
        off[n] = k;
        int64_t *pair_bytes0 = malloc((size_t)g->n_pairs * sizeof *pair_bytes0);
        memcpy(pair_bytes0, c.pair_bytes, (size_t)g->n_pairs * sizeof *pair_bytes0);
        loom_mt_units copied = {g->n_pairs, g->pair_layer_off, off, ms, bytes, state, end};
        loom_mt_units plain = {g->n_pairs, g->pair_layer_off, off, ms, bytes, state, NULL};
        loom_mt_units shared = loom_mt_entry_units(&c, g);

        loom_mt_timeline t;
        memset(&t, 0, sizeof t);
        ck_assert_int_eq(loom_mt_timeline_build(host, &t, g, s, &err), LOOM_OK);
        g->memory_cap_bytes = 0.55 * (double)mtt_uniform_peak(g, s, LOOM_POLICY_NONE);
        int64_t moves[3] = {0, 0, 0};
        loom_mt_units *units[3] = {&shared, &copied, &plain};
        for (int k2 = 0; k2 < 3; k2++) {
            loom_mt_descent d;
            memset(&d, 0, sizeof d);
            memset(state, 0, (size_t)n * sizeof *state);
            memcpy(pair_bytes, pair_bytes0, (size_t)g->n_pairs * sizeof *pair_bytes);
            ck_assert_int_eq(loom_mt_descend(host, &d, &t, g, units[k2],
                                             k2 ? pair_bytes : c.pair_bytes, -1, "t",
                                             &moves[k2], &err), LOOM_OK);
            loom_mt_descent_free(host, &d);
            if (k2 == 0)
                continue;
            ck_assert_int_eq(moves[0], moves[k2]);
            ck_assert_mem_eq(c.state, state, (size_t)n * sizeof *state);
            ck_assert_mem_eq(c.pair_bytes, pair_bytes, (size_t)g->n_pairs * sizeof *pair_bytes);
        }
        ck_assert_int_gt(moves[0], 0);
        free(pair_bytes0);
        free(off);
        free(end);
        free(state);
        free(ms);
        free(bytes);
        free(pair_bytes);
        loom_mt_timeline_free(host, &t);
        loom_mt_entry_chains_free(host, &c);
        loom_schedule_free(s);
        loom_graph_free(g);
    }
    loom_mock_host_free(h);
}
END_TEST

/* One rank, six microbatches, one entry each, released out of order:
 * F0 F1 B1 F2 F3 F4 B4 B3 B2 F5 B5 B0. Pairs 2-4 (400 bytes each) make
 * slot 5 the first peak (1,300 bytes with pair 0's 100); fixing it to the
 * 700-byte cap leaves slot 1 (pair 0 and pair 1's 1,000 bytes) over it,
 * so the descent comes back to a slot before one it fixed, where pair 1,
 * freed before slot 5 though opened after pair 0, is live and must move. */
START_TEST(descent_returns_to_an_earlier_slot)
{
    loom_mock_host *h = loom_mock_host_new();
    const loom_host_api *host = loom_mock_host_api(h);
    loom_stage_graph *g = mtt_chain(1, 6, 1, 0, 1);
    static const int64_t big[6] = {100, 1000, 400, 400, 400, 100};
    for (int32_t e = 0; e < 6; e++) {
        const double ms[3] = {3, 3.5, 5};
        const int64_t bytes[3] = {big[e], big[e] / 2, big[e] / 10};
        mtt_set_entry(g, e, ms, bytes);
    }
    loom_graph_apply_policies(g);
    g->memory_cap_bytes = 700;
    loom_schedule *s = loom_schedule_new(1, 12);
    static const int order[12][2] = {{0, 0}, {1, 0}, {1, 1}, {2, 0}, {3, 0}, {4, 0},
                                     {4, 1}, {3, 1}, {2, 1}, {5, 0}, {5, 1}, {0, 1}};
    s->rank_off[0] = 0;
    for (int k = 0; k < 12; k++) /* stage ids: 2 mb for F, 2 mb + 1 for B */
        s->order[k] = 2 * order[k][0] + order[k][1];
    s->rank_off[1] = 12;
    int32_t state[2][6];
    int64_t bytes[2][6];
    for (int plain = 0; plain < 2; plain++) {
        loom_mt_entry_chains c;
        memset(&c, 0, sizeof c);
        loom_mt_timeline t;
        memset(&t, 0, sizeof t);
        loom_mt_descent d;
        memset(&d, 0, sizeof d);
        loom_error err = {0};
        ck_assert_int_eq(loom_mt_entry_chains_build(host, &c, g, &err), LOOM_OK);
        ck_assert_int_eq(loom_mt_timeline_build(host, &t, g, s, &err), LOOM_OK);
        loom_mt_units u = loom_mt_entry_units(&c, g);
        int32_t live[6];
        if (plain)
            descend_plainly(&t, g, &u, c.pair_bytes, 0, live);
        else
            ck_assert_msg(loom_mt_descend(host, &d, &t, g, &u, c.pair_bytes, -1, "t", NULL,
                                          &err) == LOOM_OK, "%s", err.message);
        memcpy(state[plain], c.state, sizeof state[plain]);
        memcpy(bytes[plain], c.pair_bytes, sizeof bytes[plain]);
        loom_mt_descent_free(host, &d);
        loom_mt_timeline_free(host, &t);
        loom_mt_entry_chains_free(host, &c);
    }
    ck_assert_int_gt(state[1][1], 0); /* the scenario: pair 1 had to move */
    ck_assert_mem_eq(state[0], state[1], sizeof state[0]);
    ck_assert_mem_eq(bytes[0], bytes[1], sizeof bytes[0]);
    loom_schedule_free(s);
    loom_graph_free(g);
    loom_mock_host_free(h);
}
END_TEST

/* The suite: every test in one case. */
static Suite *suite(void)
{
    Suite *s = suite_create("kit-memtune");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, timeline_by_hand);
    tcase_add_test(tc, chains_and_tuning_loop_by_hand);
    tcase_add_test(tc, check_inputs);
    tcase_add_test(tc, timeline_peaks_match_simulator);
    tcase_add_test(tc, timeline_bounds_per_phase_peaks);
    tcase_add_test(tc, descent_tree_matches_rescans);
    tcase_add_test(tc, descent_follows_its_rule);
    tcase_add_test(tc, repeated_layers_share_chains);
    tcase_add_test(tc, descent_returns_to_an_earlier_slot);
    tcase_add_test(tc, offload_option_closed_form);
    suite_add_tcase(s, tc);
    return s;
}

/* Runs the suite. */
int main(void)
{
    return loom_test_main(suite());
}
