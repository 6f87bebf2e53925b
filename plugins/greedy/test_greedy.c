/* test_greedy.c - the greedy memory tuner: a hand-computed descent, the
 * cap on seeded graphs (checked with the core simulator), infeasible caps
 * and bad schedules. The memory timeline itself is tested with its kit
 * (sdk/kits/memtune/test_memtune.c). */
#include <stdio.h>

#include <loom/kits/memtune.h>
#include <loom/mock_memtune.h>

const loom_plugin_info *loom_static_greedy(void);

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

/* One rank, two microbatches, two entries per pair, GPipe order: the peak
 * holds all four entries. Ratios (bytes per ms) of the first moves:
 * e0 80, e1 60, e2 50, e3 16.7 (its SELECTIVE saves nothing). */
static loom_stage_graph *hand_graph(void)
{
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
    return g;
}

START_TEST(hand_computed_descent)
{
    loom_stage_graph *g = hand_graph();
    loom_schedule *s = mtt_order(1, 2, 0, 1);
    const loom_memory_tuner_vtable *vt = mtt_vtable(loom_static_greedy());
    uint8_t pol[4];
    loom_error err = {0};
    for (int with_sim = 0; with_sim < 2; with_sim++) {
        /* 400 bytes at NONE, cap 300: e0 -> SELECTIVE (360), e1 -> SELECTIVE */
        g->memory_cap_bytes = 300;
        g->static_bytes[0] = 0;
        ck_assert_int_eq(mtt_tune(vt, NULL, with_sim, g, s, pol, &err), LOOM_OK);
        ck_assert_int_eq(pol[0], LOOM_POLICY_SELECTIVE);
        ck_assert_int_eq(pol[1], LOOM_POLICY_SELECTIVE);
        ck_assert_int_eq(pol[2], LOOM_POLICY_NONE);
        ck_assert_int_eq(pol[3], LOOM_POLICY_NONE);
        /* 50 static bytes: then e2 -> SELECTIVE (ratio 50) and e2 -> FULL
         * (90 bytes for 1.8 ms, ratio 50, beating e1's 40 and e0's 33) */
        g->static_bytes[0] = 50;
        ck_assert_int_eq(mtt_tune(vt, NULL, with_sim, g, s, pol, &err), LOOM_OK);
        ck_assert_int_eq(pol[0], LOOM_POLICY_SELECTIVE);
        ck_assert_int_eq(pol[1], LOOM_POLICY_SELECTIVE);
        ck_assert_int_eq(pol[2], LOOM_POLICY_FULL);
        ck_assert_int_eq(pol[3], LOOM_POLICY_NONE);
        loom_metrics m = mtt_simulate(g, s, pol, NULL);
        ck_assert_int_eq(m.max_peak_bytes, 50 + 60 + 40 + 0 + 100);
        /* the most frugal choice holds 10 + 20 + 0 + 50 = 80 bytes */
        g->memory_cap_bytes = 90;
        ck_assert_int_eq(mtt_tune(vt, NULL, with_sim, g, s, pol, &err),
                         LOOM_EINFEASIBLE);
        ck_assert_ptr_nonnull(strstr(err.message, "rank 0 is 40 bytes short"));
    }
    loom_schedule_free(s);
    loom_graph_free(g);
}
END_TEST

START_TEST(no_pressure_keeps_none)
{
    loom_stage_graph *g = mtt_chain(3, 4, 2, 0, 7);
    loom_schedule *s = mtt_order(3, 4, 0, 0);
    const loom_memory_tuner_vtable *vt = mtt_vtable(loom_static_greedy());
    uint8_t *pol = malloc((size_t)g->n_layer_entries);
    loom_error err = {0};
    g->memory_cap_bytes = 0; /* no cap */
    ck_assert_int_eq(mtt_tune(vt, NULL, 1, g, s, pol, &err), LOOM_OK);
    for (int32_t e = 0; e < g->n_layer_entries; e++)
        ck_assert_int_eq(pol[e], LOOM_POLICY_NONE);
    g->memory_cap_bytes = (double)mtt_uniform_peak(g, s, LOOM_POLICY_NONE);
    ck_assert_int_eq(mtt_tune(vt, NULL, 1, g, s, pol, &err), LOOM_OK);
    for (int32_t e = 0; e < g->n_layer_entries; e++)
        ck_assert_int_eq(pol[e], LOOM_POLICY_NONE);
    free(pol);
    loom_schedule_free(s);
    loom_graph_free(g);
}
END_TEST

/* Seeded graphs with caps between the most frugal and the NONE peak: the
 * result never exceeds the cap, and ranks that fit at NONE keep NONE. */
START_TEST(never_exceeds_a_feasible_cap)
{
    const loom_memory_tuner_vtable *vt = mtt_vtable(loom_static_greedy());
    loom_error err = {0};
    for (uint64_t seed = 1; seed <= 24; seed++) {
        int P = 2 + (int)(seed % 3), M = 3 + (int)(seed % 4);
        int E = 1 + (int)(seed % 4), split = (int)(seed / 2 % 2);
        int gpipe = (int)(seed / 4 % 2);
        loom_stage_graph *g = mtt_chain(P, M, E, split, seed);
        loom_schedule *s = mtt_order(P, M, split, gpipe);
        for (int r = 0; r < P; r++)
            g->static_bytes[r] = 3000 * r;
        int64_t lo = mtt_uniform_peak(g, s, LOOM_POLICY_FULL);
        int64_t hi = mtt_uniform_peak(g, s, LOOM_POLICY_NONE);
        g->memory_cap_bytes = (double)(lo + (hi - lo) * (int64_t)(seed % 5 + 1) / 7);
        int64_t none_peaks[8];
        uint8_t *none = calloc((size_t)g->n_layer_entries, 1);
        mtt_simulate(g, s, none, none_peaks);
        uint8_t *pol = malloc((size_t)g->n_layer_entries);
        ck_assert_int_eq(mtt_tune(vt, NULL, (int)(seed % 2), g, s, pol, &err),
                         LOOM_OK);
        int64_t peaks[8];
        loom_metrics m = mtt_simulate(g, s, pol, peaks);
        ck_assert_int_eq(m.cap_violations, 0);
        ck_assert(m.max_peak_bytes <= (int64_t)g->memory_cap_bytes);
        for (int32_t p = 0; p < g->n_pairs; p++) {
            int r = g->rank[g->pair_forward[p]];
            if ((double)none_peaks[r] > g->memory_cap_bytes)
                continue;
            for (int32_t e = g->pair_layer_off[p]; e < g->pair_layer_off[p + 1]; e++)
                ck_assert_int_eq(pol[e], LOOM_POLICY_NONE);
        }
        free(none);
        free(pol);
        loom_schedule_free(s);
        loom_graph_free(g);
    }
}
END_TEST

START_TEST(infeasible_cap_names_rank_and_bytes)
{
    loom_stage_graph *g = mtt_chain(4, 6, 3, 0, 99);
    loom_schedule *s = mtt_order(4, 6, 0, 0);
    for (int r = 0; r < 4; r++)
        g->static_bytes[r] = 100000 - 1000 * r;
    int64_t peaks[4];
    uint8_t *full = malloc((size_t)g->n_layer_entries);
    memset(full, LOOM_POLICY_FULL, (size_t)g->n_layer_entries);
    mtt_simulate(g, s, full, peaks);
    int worst = 0;
    for (int r = 1; r < 4; r++)
        if (peaks[r] > peaks[worst])
            worst = r;
    g->memory_cap_bytes = (double)(peaks[worst] - 7);
    const loom_memory_tuner_vtable *vt = mtt_vtable(loom_static_greedy());
    loom_error err = {0};
    for (int with_sim = 0; with_sim < 2; with_sim++) {
        ck_assert_int_eq(mtt_tune(vt, NULL, with_sim, g, s, full, &err),
                         LOOM_EINFEASIBLE);
        char want[64];
        snprintf(want, sizeof want, "rank %d is 7 bytes short", worst);
        ck_assert_msg(strstr(err.message, want), "%s", err.message);
        ck_assert_ptr_nonnull(strstr(err.message, "greedy"));
    }
    free(full);
    loom_schedule_free(s);
    loom_graph_free(g);
}
END_TEST

START_TEST(bad_schedules_are_rejected)
{
    loom_stage_graph *g = mtt_chain(2, 2, 1, 0, 3);
    loom_schedule *s = mtt_order(2, 2, 0, 0);
    g->memory_cap_bytes = 1; /* forces the timeline */
    int32_t tmp = s->order[0]; /* move a rank-0 stage into rank 1's list */
    s->order[0] = s->order[s->rank_off[1]];
    s->order[s->rank_off[1]] = tmp;
    const loom_memory_tuner_vtable *vt = mtt_vtable(loom_static_greedy());
    uint8_t pol[8];
    loom_error err = {0};
    ck_assert_int_eq(mtt_tune(vt, NULL, 0, g, s, pol, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "another rank"));
    loom_schedule_free(s);
    /* backward listed before its forward on rank 1 */
    s = mtt_order(2, 2, 0, 0);
    int32_t a = s->rank_off[1];
    tmp = s->order[a];
    s->order[a] = s->order[a + 1];
    s->order[a + 1] = tmp;
    ck_assert_int_eq(mtt_tune(vt, NULL, 0, g, s, pol, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "before its forward"));
    loom_schedule_free(s);
    loom_graph_free(g);
}
END_TEST

/* Param view: the interleaver budgets with the most frugal policies by
 * default, with the layers as built under view as_built. */
START_TEST(view_param_picks_the_interleaver_budget)
{
    const loom_memory_tuner_vtable *vt = mtt_vtable(loom_static_greedy());
    ck_assert(vt->interleave_view != NULL);
    const char *const as_built[] = {"view", "as_built", NULL};
    const char *const frugal[] = {"view", "frugal", NULL};
    const char *const *cases[] = {NULL, frugal, as_built};
    const int want[] = {LOOM_VIEW_FRUGAL, LOOM_VIEW_FRUGAL, LOOM_VIEW_AS_BUILT};
    for (int c = 0; c < 3; c++) {
        loom_mock_host *h = loom_test_mock_host(mtt_info_of(vt, NULL));
        for (int i = 0; cases[c] && cases[c][i]; i += 2)
            ck_assert_int_eq(loom_mock_host_set_param(h, cases[c][i], cases[c][i + 1]),
                             LOOM_OK);
        void *self = NULL;
        loom_error err = {0};
        ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h), NULL,
                                    &self, &err),
                         LOOM_OK);
        ck_assert_int_eq(vt->interleave_view(self), want[c]);
        vt->destroy(self);
        loom_mock_host_free(h);
    }
}
END_TEST

/* A greedy instance on a fresh mock host (*h, freed by the caller). */
static void *greedy_instance(loom_mock_host **h)
{
    const loom_memory_tuner_vtable *vt = mtt_vtable(loom_static_greedy());
    *h = loom_test_mock_host(loom_static_greedy());
    void *self = NULL;
    loom_error err = {0};
    ck_assert_int_eq(vt->create(loom_mock_host_api(*h), loom_mock_host_ctx(*h), NULL, &self,
                                &err), LOOM_OK);
    return self;
}

/* Tunes g with one instance through the six steps of
 * one_instance_follows_every_change; with `stamp`, g carries a revision
 * that changes with every change of its options or pair rows, as the host
 * stamps the graphs it builds, else none (the content is compared). */
static void follow_changes(int stamp)
{
    loom_stage_graph *g = hand_graph();
    loom_schedule *s = mtt_order(1, 2, 0, 1);
    const loom_memory_tuner_vtable *vt = mtt_vtable(loom_static_greedy());
    loom_mock_host *h = NULL;
    void *self = greedy_instance(&h);
    loom_error err = {0};
    static const double caps[] = {300, 1e9, 300, 300, 250, 300};
    g->revision = stamp ? 41 : 0;
    for (int step = 0; step < 6; step++) {
        g->memory_cap_bytes = caps[step];
        if (step == 3) { /* e0's selective option now saves only 5 bytes */
            g->layer_options[LOOM_POLICY_SELECTIVE].activation_bytes = 95;
            loom_graph_apply_policies(g);
            g->revision = stamp ? 42 : 0;
        }
        if (step == 5) { /* the two pairs' entries regrouped: 3 + 1 */
            g->pair_layer_off[1] = 3;
            loom_graph_apply_policies(g);
            g->revision = stamp ? 43 : 0;
        }
        uint8_t got[4], want[4];
        int rc = vt->tune(self, g, s, got, &err);
        ck_assert_int_eq(mtt_tune(vt, NULL, 0, g, s, want, &err), rc);
        ck_assert_int_eq(rc, LOOM_OK);
        ck_assert_msg(!memcmp(got, want, sizeof got), "stamp %d, step %d: %d %d %d %d, "
                      "expected %d %d %d %d", stamp, step, got[0], got[1], got[2], got[3],
                      want[0], want[1], want[2], want[3]);
        if (step == 0) /* the hand-computed descent */
            ck_assert(got[0] == LOOM_POLICY_SELECTIVE && got[1] == LOOM_POLICY_SELECTIVE &&
                      got[2] == LOOM_POLICY_NONE && got[3] == LOOM_POLICY_NONE);
        if (step == 1)
            ck_assert(got[0] == LOOM_POLICY_NONE && got[1] == LOOM_POLICY_NONE &&
                      got[2] == LOOM_POLICY_NONE && got[3] == LOOM_POLICY_NONE);
        if (step == 3) /* e0's move no longer pays: e1 then e2 */
            ck_assert_int_ne(got[0], LOOM_POLICY_SELECTIVE);
    }
    vt->destroy(self);
    loom_mock_host_free(h);
    loom_schedule_free(s);
    loom_graph_free(g);
}

START_TEST(one_instance_follows_every_change)
{
    /* A search tunes one graph many times with one instance: after a
     * descent, with no pressure, and after the options or pair rows
     * changed, every choice equals a fresh instance's, whether the graph
     * has no revision (the options are compared) or a new one with each
     * change (a revision seen before is trusted). */
    follow_changes(0);
    follow_changes(1);
}
END_TEST

START_TEST(a_revision_seen_before_skips_the_compare)
{
    /* The revision is a promise that the options did not change: an
     * instance that meets a revision it built its chains from keeps them
     * without reading the options. Changing them in place under the same
     * revision (which the host never does) therefore leaves the choice as
     * it was, where a graph without a revision is compared and follows. */
    for (int stamp = 0; stamp < 2; stamp++) {
        loom_stage_graph *g = hand_graph();
        loom_schedule *s = mtt_order(1, 2, 0, 1);
        const loom_memory_tuner_vtable *vt = mtt_vtable(loom_static_greedy());
        loom_mock_host *h = NULL;
        void *self = greedy_instance(&h);
        loom_error err = {0};
        g->memory_cap_bytes = 300;
        g->revision = stamp ? 7 : 0;
        uint8_t first[4], second[4];
        ck_assert_int_eq(vt->tune(self, g, s, first, &err), LOOM_OK);
        ck_assert_int_eq(first[0], LOOM_POLICY_SELECTIVE);
        g->layer_options[LOOM_POLICY_SELECTIVE].activation_bytes = 95;
        loom_graph_apply_policies(g);
        ck_assert_int_eq(vt->tune(self, g, s, second, &err), LOOM_OK);
        if (stamp)
            ck_assert_msg(!memcmp(first, second, sizeof first), "a revision seen before "
                          "rebuilt the chains");
        else
            ck_assert_int_ne(second[0], LOOM_POLICY_SELECTIVE);
        vt->destroy(self);
        loom_mock_host_free(h);
        loom_schedule_free(s);
        loom_graph_free(g);
    }
}
END_TEST

/* Bytes the greedy instance under test asked its host for. */
static size_t bytes_asked;
static void *(*host_alloc)(size_t);
static void *(*host_realloc)(void *, size_t);
static void *counting_alloc(size_t n)
{
    bytes_asked += n;
    return host_alloc(n);
}
static void *counting_realloc(void *p, size_t n)
{
    bytes_asked += n;
    return host_realloc(p, n);
}

/* The bytes one tune of the hand graph asks for, the graph stamped with a
 * revision or not. */
static size_t bytes_of_one_tune(int stamp)
{
    loom_mock_host *h = loom_test_mock_host(loom_static_greedy());
    static loom_host_api counted;
    counted = *loom_mock_host_api(h);
    host_alloc = counted.alloc;
    host_realloc = counted.realloc;
    counted.alloc = counting_alloc;
    counted.realloc = counting_realloc;
    const loom_memory_tuner_vtable *vt = mtt_vtable(loom_static_greedy());
    void *self = NULL;
    loom_error err = {0};
    ck_assert_int_eq(vt->create(&counted, loom_mock_host_ctx(h), NULL, &self, &err), LOOM_OK);
    loom_stage_graph *g = hand_graph();
    loom_schedule *s = mtt_order(1, 2, 0, 1);
    g->memory_cap_bytes = 300;
    g->revision = stamp ? 9 : 0;
    uint8_t pol[4];
    bytes_asked = 0;
    ck_assert_int_eq(vt->tune(self, g, s, pol, &err), LOOM_OK);
    size_t n = bytes_asked;
    vt->destroy(self);
    loom_mock_host_free(h);
    loom_schedule_free(s);
    loom_graph_free(g);
    return n;
}

START_TEST(a_stamped_graph_is_not_copied)
{
    /* The host stamps every graph it builds: the instance then keeps the
     * stamp, not a copy of the options and pair rows (at 8,192
     * microbatches of VLM-L that copy is 400 MB). Only an unstamped graph
     * is copied, and that copy is all the difference. */
    size_t stamped = bytes_of_one_tune(1), unstamped = bytes_of_one_tune(0);
    ck_assert_uint_eq(unstamped - stamped,
                      4 * LOOM_POLICY_COUNT * sizeof(loom_policy_option) + 3 * sizeof(int32_t));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("greedy");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, hand_computed_descent);
    tcase_add_test(tc, no_pressure_keeps_none);
    tcase_add_test(tc, never_exceeds_a_feasible_cap);
    tcase_add_test(tc, infeasible_cap_names_rank_and_bytes);
    tcase_add_test(tc, bad_schedules_are_rejected);
    tcase_add_test(tc, view_param_picks_the_interleaver_budget);
    tcase_add_test(tc, one_instance_follows_every_change);
    tcase_add_test(tc, a_revision_seen_before_skips_the_compare);
    tcase_add_test(tc, a_stamped_graph_is_not_copied);
    suite_add_tcase(s, tc);
    return s;
}

/* Runs the suite. */
int main(void)
{
    return loom_test_main(suite());
}
