/* test_listsched.c - the list-scheduling kit (<loom/kits/listsched.h>) on
 * its own: the pending heap and the rank queue orders, a complete list
 * schedule of a 2-rank, 2-microbatch graph worked out by hand (one queue
 * type, earlier microbatches first), scratch reuse without allocation,
 * the errors of a schedule left unfinished or a bad stage, and the orders
 * of random graphs against a straightforward reference. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <loom/kits/listsched.h>
#include <loom/mock_host.h>
#include <loom/kits/graph.h>
#include "testutil.h"

START_TEST(heap_and_rank_queue_orders)
{
    loom_ls_entry store[4];
    loom_ls_heap hp = {store, 0, 0, INFINITY};
    const loom_ls_entry in[4] = {{3, 0, 0}, {1, 5, 0}, {1, 2, 0}, {2, 1, 0}};
    const double top_after_push[4] = {3, 1, 1, 1};
    for (int i = 0; i < 4; i++) {
        loom_ls_heap_push(&hp, in[i]);
        ck_assert_double_eq(hp.top_ms, top_after_push[i]); /* the top's time */
    }
    /* by time, then slot */
    const double t[4] = {1, 1, 2, 3};
    const int32_t slot[4] = {2, 5, 1, 0};
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(hp.n, 4 - i);
        ck_assert_double_eq(hp.e[0].t_ms, t[i]);
        ck_assert_int_eq(hp.e[0].slot, slot[i]);
        ck_assert_double_eq(hp.top_ms, t[i]);
        loom_ls_heap_pop(&hp);
    }
    ck_assert_int_eq(hp.n, 0);
    ck_assert(isinf(hp.top_ms) && hp.top_ms > 0); /* empty: infinity */

    /* the rank queue: smallest start first, ties to the lower rank */
    loom_ls ls;
    memset(&ls, 0, sizeof ls);
    double rank_t[3];
    int32_t tree[8];
    ls.rank_t_ms = rank_t;
    ls.rank_tree = tree;
    ls.n_ranks = 3;
    loom_ls_rank_reset(&ls);
    ck_assert_int_eq(ls.rank_leaves, 4);
    ck_assert_int_eq(loom_ls_rank_pop(&ls), -1);
    loom_ls_rank_push(&ls, 0, 5);
    loom_ls_rank_push(&ls, 1, 3);
    loom_ls_rank_push(&ls, 2, 3);
    loom_ls_rank_push(&ls, 0, 4); /* replaces 5 */
    ck_assert_int_eq(loom_ls_rank_pop(&ls), 1);
    ck_assert_int_eq(loom_ls_rank_pop(&ls), 2);
    loom_ls_rank_push(&ls, 1, 9);
    loom_ls_rank_drop(&ls, 1);
    ck_assert_int_eq(loom_ls_rank_pop(&ls), 0);
    ck_assert_int_eq(loom_ls_rank_pop(&ls), -1);
}
END_TEST

/* The rank queue against a reference scan for the smallest start (ties
 * to the lower rank) over random pushes, drops and pops, for rank counts
 * on both sides of powers of two and of the queue's switch from a scan to
 * a tournament tree at 32 ranks. */
START_TEST(rank_queue_matches_a_scan)
{
    enum { MAX_RANKS = 130 };
    double rank_t[MAX_RANKS], ref[MAX_RANKS];
    int32_t tree[2 * 256];
    uint64_t seed = 12345;
    const int32_t sizes[] = {1, 2, 3, 8, 9, 31, 32, 33, 64, 67, 130}; /* scan and tree */
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        loom_ls ls;
        memset(&ls, 0, sizeof ls);
        ls.rank_t_ms = rank_t;
        ls.rank_tree = tree;
        ls.n_ranks = sizes[k];
        loom_ls_rank_reset(&ls);
        for (int32_t r = 0; r < ls.n_ranks; r++)
            ref[r] = INFINITY;
        for (int step = 0; step < 4000; step++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            uint32_t x = (uint32_t)(seed >> 33);
            int32_t r = (int32_t)(x % (uint32_t)ls.n_ranks);
            int op = (int)((x >> 16) % 4);
            if (op < 2) { /* few distinct times, so ties are common */
                double t = (double)((x >> 8) % 5);
                loom_ls_rank_push(&ls, r, t);
                ref[r] = t;
            } else if (op == 2) {
                loom_ls_rank_drop(&ls, r);
                ref[r] = INFINITY;
            } else {
                int32_t want = -1;
                for (int32_t i = 0; i < ls.n_ranks; i++)
                    if (ref[i] < INFINITY && (want < 0 || ref[i] < ref[want]))
                        want = i;
                ck_assert_int_eq(loom_ls_rank_pop(&ls), want);
                if (want >= 0)
                    ref[want] = INFINITY;
            }
        }
    }
}
END_TEST

/* P = 2 ranks, M = 2 microbatches, F = 1 ms, B = 2 ms. */
static loom_stage_graph *two_by_two(void)
{
    double fw[2] = {1, 1}, bw[2] = {2, 2};
    loom_stage_times st;
    memset(&st, 0, sizeof st);
    st.ranks = 2;
    st.microbatches = 2;
    st.virtual_stages = 1;
    st.forward_ms = fw;
    st.backward_ms = bw;
    loom_stage_graph *g = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_graph_from_stage_times(&st, 0, &g, &err), LOOM_OK);
    return g;
}

/* One queue type, priority M - microbatch (earlier microbatches first);
 * each step places what loom_ls_peek offers on the rank the rank queue
 * pops (the smallest start, ties to the lower rank). */
static int list_schedule(loom_ls *ls, const loom_stage_graph *g,
                         loom_schedule *out, loom_error *err)
{
    for (int32_t v = 0; v < g->n_stages; v++) {
        ls->type[v] = 0;
        ls->prio[v] = (float)(g->n_microbatches - g->microbatch[v]);
        ls->tie[v] = 0;
    }
    int rc = loom_ls_begin(ls, g, out, "t", err);
    if (rc != LOOM_OK)
        return rc;
    while (ls->placed < g->n_stages) {
        for (int32_t i = 0; i < ls->n_dirty; i++) {
            int32_t r = ls->dirty[i];
            double t;
            ls->is_dirty[r] = 0;
            if (loom_ls_peek(ls, r, 0, &t) >= 0)
                loom_ls_rank_push(ls, r, t);
            else
                loom_ls_rank_drop(ls, r);
        }
        ls->n_dirty = 0;
        int32_t r = loom_ls_rank_pop(ls);
        if (r < 0)
            break;
        double t;
        loom_ls_place(ls, g, loom_ls_peek(ls, r, 0, &t), out);
    }
    return loom_ls_end(ls, g, out, "t", err);
}

/* Asserts that slot k of rank r's order is (kind, microbatch). */
static void at(const loom_stage_graph *g, const loom_schedule *s, int32_t r,
               int32_t k, int kind, int32_t mb)
{
    int32_t v = s->order[s->rank_off[r] + k];
    ck_assert_int_eq(g->rank[v], r);
    ck_assert_int_eq(g->kind[v], kind);
    ck_assert_int_eq(g->microbatch[v], mb);
}

/* The mock host's allocator, counting calls. */
static void *(*base_alloc)(size_t);
static void *(*base_realloc)(void *, size_t);
static int64_t n_allocs;

static void *count_alloc(size_t n)
{
    n_allocs++;
    return base_alloc(n);
}

static void *count_realloc(void *p, size_t n)
{
    n_allocs++;
    return base_realloc(p, n);
}

/* By hand: rank 0 runs F0 [0,1], F1 [1,2]; rank 1 F0 [1,2], then at 2
 * both B0 (released at 2) and F1 (from 2) are ready and B0 has the higher
 * priority: B0 [2,4]; at 4 ranks 0 (B0) and 1 (F1) tie and rank 0 goes
 * first: B0 [4,6]; rank 1 F1 [4,5], B1 [5,7]; rank 0 B1 [7,9]. */
START_TEST(schedule_by_hand)
{
    loom_mock_host *h = loom_mock_host_new();
    loom_host_api api = *loom_mock_host_api(h);
    base_alloc = api.alloc;
    base_realloc = api.realloc;
    api.alloc = count_alloc;
    api.realloc = count_realloc;
    loom_stage_graph *g = two_by_two();
    loom_schedule *s = loom_schedule_new(2, g->n_stages);
    loom_ls ls;
    memset(&ls, 0, sizeof ls);
    loom_error err = {0};
    ck_assert_int_eq(loom_ls_reserve(&ls, &api, g, 1, "t", &err), LOOM_OK);
    ck_assert_int_eq(list_schedule(&ls, g, s, &err), LOOM_OK);
    ck_assert_int_eq(s->n_stages, 8);
    ck_assert_int_eq(s->rank_off[1], 4);
    ck_assert_int_eq(s->rank_off[2], 8);
    at(g, s, 0, 0, LOOM_STAGE_F, 0);
    at(g, s, 0, 1, LOOM_STAGE_F, 1);
    at(g, s, 0, 2, LOOM_STAGE_B, 0);
    at(g, s, 0, 3, LOOM_STAGE_B, 1);
    at(g, s, 1, 0, LOOM_STAGE_F, 0);
    at(g, s, 1, 1, LOOM_STAGE_B, 0);
    at(g, s, 1, 2, LOOM_STAGE_F, 1);
    at(g, s, 1, 3, LOOM_STAGE_B, 1);
    ck_assert_double_eq(ls.last_ms[0], 9.0);
    ck_assert_double_eq(ls.last_ms[1], 7.0);
    ck_assert_int_eq(ls.mem_bytes[0], 0);
    ck_assert_int_eq(ls.mem_bytes[1], 0);
    ck_assert_int_eq(ls.last_type[0], 0);

    /* the same again on the reused scratch: same order, no allocation */
    int32_t first[8];
    memcpy(first, s->order, sizeof first);
    int64_t allocs = n_allocs;
    ck_assert_int_gt(allocs, 0);
    ck_assert_int_eq(loom_ls_reserve(&ls, &api, g, 1, "t", &err), LOOM_OK);
    ck_assert_int_eq(list_schedule(&ls, g, s, &err), LOOM_OK);
    ck_assert_mem_eq(s->order, first, sizeof first);
    ck_assert_int_eq(n_allocs, allocs);

    loom_ls_release(&ls);
    loom_schedule_free(s);
    loom_graph_free(g);
    loom_mock_host_free(h);
}
END_TEST

START_TEST(unfinished_and_bad_stages)
{
    loom_mock_host *h = loom_mock_host_new();
    loom_stage_graph *g = two_by_two();
    loom_schedule *s = loom_schedule_new(2, g->n_stages);
    loom_ls ls;
    memset(&ls, 0, sizeof ls);
    loom_error err = {0};
    ck_assert_int_eq(loom_ls_reserve(&ls, loom_mock_host_api(h), g, 1, "t", &err),
                     LOOM_OK);
    for (int32_t v = 0; v < g->n_stages; v++) {
        ls.type[v] = 0;
        ls.prio[v] = 0;
        ls.tie[v] = 0;
    }
    ck_assert_int_eq(loom_ls_begin(&ls, g, s, "t", &err), LOOM_OK);
    int32_t stuck = 0;
    while (g->pred_off[stuck + 1] == g->pred_off[stuck])
        stuck++;
    char want[160];
    snprintf(want, sizeof want, "t: placed 0 of 8 stages; stage %d still waits "
             "for 1 predecessors (dependency cycle?)", stuck);
    ck_assert_int_eq(loom_ls_end(&ls, g, s, "t", &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, want);

    /* a queue type beyond the ones reserved */
    ls.type[3] = 1;
    ck_assert_int_eq(loom_ls_begin(&ls, g, s, "t", &err), LOOM_EINVAL);
    snprintf(want, sizeof want, "t: stage 3 has kind %d, expected F, B, I or W",
             g->kind[3]);
    ck_assert_str_eq(err.message, want);
    ls.type[3] = 0;
    g->rank[5] = 2;
    ck_assert_int_eq(loom_ls_begin(&ls, g, s, "t", &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "t: stage 5 is on rank 2, expected 0..1");

    loom_ls_release(&ls);
    loom_schedule_free(s);
    loom_graph_free(g);
    loom_mock_host_free(h);
}
END_TEST

/* ---- the kit against a straightforward list scheduler ------------------ */

/* The test's decision rule for rank r, over T types: the earliest start;
 * among types starting together by the rank's free time, the first after
 * the rank's last type (round robin), else the lowest type. Returns the
 * stage (-1 none) and its start in *t_ms. */
static int32_t rule_pick(const int32_t *c, const double *t, int32_t T,
                         int32_t last_type, double last_ms, double *t_ms)
{
    int32_t pick = -1;
    for (int32_t q = 0; q < T; q++)
        if (c[q] >= 0 && (pick < 0 || t[q] < t[pick]))
            pick = q;
    if (pick < 0)
        return -1;
    if (t[pick] <= last_ms)
        for (int32_t k = 1; k <= T; k++) {
            int32_t q = (last_type + k) % T;
            if (last_type >= 0 && c[q] >= 0 && t[q] == t[pick]) {
                pick = q;
                break;
            }
        }
    *t_ms = t[pick];
    return c[pick];
}

/* 1 when priority a runs before priority b in a queue's order: higher
 * first, NaN after every number, -0 equal to +0. */
static int prio_first(float a, float b)
{
    if (a != a || b != b)
        return a == a && b != b;
    return a > b;
}

/* The order of two stages in one queue: priority, tie key, id. */
static int ref_before(const loom_ls *ls, const float *prio, int32_t a, int32_t b)
{
    if (prio_first(prio[a], prio[b]) || prio_first(prio[b], prio[a]))
        return prio_first(prio[a], prio[b]);
    if (ls->tie[a] != ls->tie[b])
        return ls->tie[a] < ls->tie[b];
    return a < b;
}

/* The reference: every step re-decides every rank from scratch over all
 * released stages (no queues, no caches). ls->type/tie give the types and
 * tie keys, prio the priority of every stage. */
static void ref_schedule(const loom_ls *ls, const loom_stage_graph *g, int32_t T,
                         const float *prio, int32_t *order)
{
    int32_t n = g->n_stages, P = g->n_ranks;
    int32_t *left = calloc((size_t)n + 1, sizeof *left);
    uint8_t *done = calloc((size_t)n + 1, 1);
    double *ready = calloc((size_t)n + 1, sizeof *ready);
    double last[8] = {0};
    int32_t last_type[8], fill[8];
    for (int32_t r = 0, k = 0; r < P; r++) {
        last_type[r] = -1;
        fill[r] = k;
        for (int32_t v = 0; v < n; v++)
            k += g->rank[v] == r;
    }
    for (int32_t v = 0; v < n; v++)
        left[v] = g->pred_off[v + 1] - g->pred_off[v];
    for (int32_t step = 0; step < n; step++) {
        int32_t best_v = -1, best_r = -1;
        double best_t = 0;
        for (int32_t r = 0; r < P; r++) {
            int32_t c[4];
            double t[4];
            for (int32_t q = 0; q < T; q++) {
                c[q] = -1;
                int ready_one = 0;
                for (int32_t v = 0; v < n; v++) {
                    if (done[v] || left[v] || g->rank[v] != r || ls->type[v] != q)
                        continue;
                    int now = ready[v] <= last[r];
                    if (c[q] < 0 || (now && !ready_one) ||
                        (now == ready_one &&
                         (now ? ref_before(ls, prio, v, c[q])
                              : ready[v] < t[q] ||
                                    (ready[v] == t[q] && ref_before(ls, prio, v, c[q]))))) {
                        c[q] = v;
                        t[q] = now ? last[r] : ready[v];
                        ready_one = now;
                    }
                }
            }
            double tr = 0;
            int32_t v = rule_pick(c, t, T, last_type[r], last[r], &tr);
            if (v >= 0 && (best_v < 0 || tr < best_t)) {
                best_v = v;
                best_r = r;
                best_t = tr;
            }
        }
        ck_assert_int_ge(best_v, 0);
        int32_t v = best_v, r = best_r;
        double end = (last[r] > ready[v] ? last[r] : ready[v]) + g->duration_ms[v];
        last[r] = end;
        last_type[r] = ls->type[v];
        done[v] = 1;
        order[fill[r]++] = v;
        for (int32_t s = 0; s < n; s++)
            for (int32_t e = g->pred_off[s]; e < g->pred_off[s + 1]; e++)
                if (g->pred[e] == v) {
                    double t = end + g->pred_p2p_ms[e];
                    ready[s] = t > ready[s] ? t : ready[s];
                    left[s]--;
                }
    }
    free(left);
    free(done);
    free(ready);
}

/* The kit under the same rule, the way the interleavers drive it: only
 * dirty ranks re-decide. */
static void kit_schedule(loom_ls *ls, const loom_stage_graph *g, int32_t T,
                         loom_schedule *out)
{
    loom_error err = {0};
    int32_t choice[8];
    ck_assert_int_eq(loom_ls_begin(ls, g, out, "t", &err), LOOM_OK);
    while (ls->placed < g->n_stages) {
        for (int32_t i = 0; i < ls->n_dirty; i++) {
            int32_t r = ls->dirty[i], c[4];
            double t[4], tr = 0;
            ls->is_dirty[r] = 0;
            for (int32_t q = 0; q < T; q++) {
                c[q] = loom_ls_peek(ls, r, q, &t[q]);
                if (c[q] < 0) /* an empty queue starts at infinity */
                    ck_assert(isinf(t[q]) && t[q] > 0);
            }
            choice[r] = rule_pick(c, t, T, ls->last_type[r], ls->last_ms[r], &tr);
            if (choice[r] >= 0)
                loom_ls_rank_push(ls, r, tr);
            else
                loom_ls_rank_drop(ls, r);
        }
        ls->n_dirty = 0;
        int32_t r = loom_ls_rank_pop(ls);
        ck_assert_int_ge(r, 0);
        loom_ls_place(ls, g, choice[r], out);
    }
    ck_assert_int_eq(loom_ls_end(ls, g, out, "t", &err), LOOM_OK);
}

/* A random value for the test's generator. */
static uint32_t rnd(uint64_t *seed)
{
    *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*seed >> 33);
}

/* A priority from a small set with ties, -0, +0 and NaN. */
static float rnd_prio(uint64_t *seed)
{
    static const float set[6] = {-1.0f, 0.0f, -0.0f, 1.0f, 2.5f, NAN};
    return set[rnd(seed) % 6];
}

/* Random graphs (1-5 ranks, 1-3 queue types, release times and durations
 * on a coarse grid so starts tie often), scheduled by the kit and by the
 * reference: the same orders with per-stage priorities (the radix sort),
 * per-group priorities (the counting sort), more groups than stages (the
 * radix sort over group priorities), on one scratch reused across graphs
 * and sizes, with priorities, ranks and types changing between calls. */
START_TEST(orders_match_a_reference)
{
    loom_mock_host *h = loom_mock_host_new();
    loom_ls ls;
    memset(&ls, 0, sizeof ls);
    loom_error err = {0};
    uint64_t seed = 2024;
    for (int trial = 0; trial < 300; trial++) {
        int32_t P = 1 + (int32_t)(rnd(&seed) % 5), T = 1 + (int32_t)(rnd(&seed) % 3);
        int32_t n = 1 + (int32_t)(rnd(&seed) % 120), G = 1 + (int32_t)(rnd(&seed) % 6);
        int mode = trial % 3; /* 0 per stage, 1 per group, 2 groups > stages */
        int32_t n_groups = mode == 2 ? n + 1 + G : G;
        loom_stage_graph *g = loom_graph_alloc(n, 3 * n, P, n_groups, 0, 0);
        ck_assert_ptr_nonnull(g);
        int32_t e = 0;
        for (int32_t v = 0; v < n; v++) {
            g->rank[v] = (int32_t)(rnd(&seed) % (uint32_t)P);
            g->group[v] = (int32_t)(rnd(&seed) % (uint32_t)n_groups);
            g->duration_ms[v] = 0.5 * (rnd(&seed) % 3);
            g->pred_off[v] = e;
            for (int32_t k = (int32_t)(rnd(&seed) % 4); k > 0 && v > 0; k--) {
                g->pred[e] = (int32_t)(rnd(&seed) % (uint32_t)v);
                g->pred_p2p_ms[e++] = 0.5 * (rnd(&seed) % 3);
            }
        }
        g->pred_off[n] = e;
        g->n_edges = e;
        loom_schedule *out = loom_schedule_new(P, n);
        int32_t *want = malloc((size_t)n * sizeof *want);
        float *prio = malloc((size_t)n * sizeof *prio);
        ck_assert_int_eq(loom_ls_reserve(&ls, loom_mock_host_api(h), g, T, "t", &err), LOOM_OK);
        for (int call = 0; call < 3; call++) {
            if (call == 2) { /* one stage moves rank or type: a new layout */
                int32_t v = (int32_t)(rnd(&seed) % (uint32_t)n);
                g->rank[v] = (g->rank[v] + 1) % P;
            }
            ls.n_groups = mode == 0 ? 0 : n_groups;
            for (int32_t k = 0; k < ls.n_groups; k++)
                ls.group_prio[k] = rnd_prio(&seed);
            for (int32_t v = 0; v < n; v++) {
                if (call != 1) {
                    ls.type[v] = (uint8_t)(rnd(&seed) % (uint32_t)T);
                    ls.tie[v] = (int32_t)(rnd(&seed) % 4);
                }
                ls.group[v] = g->group[v];
                ls.prio[v] = mode == 0 ? rnd_prio(&seed) : -7.0f; /* unread */
                prio[v] = mode == 0 ? ls.prio[v] : ls.group_prio[g->group[v]];
            }
            ref_schedule(&ls, g, T, prio, want);
            kit_schedule(&ls, g, T, out);
            for (int32_t k = 0; k < n; k++)
                ck_assert_msg(out->order[k] == want[k],
                              "trial %d call %d: order[%d] = %d, expected %d", trial,
                              call, k, out->order[k], want[k]);
        }
        free(prio);
        free(want);
        loom_schedule_free(out);
        loom_graph_free(g);
    }
    loom_ls_release(&ls);
    loom_mock_host_free(h);
}
END_TEST

/* The suite: every test in one case. */
static Suite *suite(void)
{
    Suite *s = suite_create("kit-listsched");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, heap_and_rank_queue_orders);
    tcase_add_test(tc, rank_queue_matches_a_scan);
    tcase_add_test(tc, schedule_by_hand);
    tcase_add_test(tc, unfinished_and_bad_stages);
    tcase_add_test(tc, orders_match_a_reference);
    suite_add_tcase(s, tc);
    return s;
}

/* Runs the suite. */
int main(void)
{
    return loom_test_main(suite());
}
