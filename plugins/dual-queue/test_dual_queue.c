/* test_dual_queue.c - the dual-queue interleaver on stage-times graphs:
 * 1F1B's closed form on uniform pipelines, memory caps, priorities, random
 * graphs that must never deadlock, the rule written out as a brute-force
 * reference on random graphs and priorities, non-uniform microbatches
 * against 1F1B,
 * no allocation after the first call, and input errors. */
#include <loom/mock_host.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <loom/kits/graph.h>
#include <loom/mock_sim.h>
#include "testutil.h"

const loom_plugin_info *loom_static_dual_queue(void);
const loom_plugin_info *loom_static_1f1b(void);

static double fwd[256], bwd[256], act[256], scale[256];

/* A stage-times problem with F/B times per position and unit activations. */
static loom_stage_times times(int P, int M, int V, double f, double b)
{
    for (int i = 0; i < P * V; i++) {
        fwd[i] = f;
        bwd[i] = b;
        act[i] = 1;
    }
    for (int i = 0; i < M; i++)
        scale[i] = 1;
    loom_stage_times st = {0};
    st.ranks = P;
    st.microbatches = M;
    st.virtual_stages = V;
    st.forward_ms = fwd;
    st.backward_ms = bwd;
    st.activation_bytes = act;
    st.microbatch_scale = scale;
    return st;
}

/* An interleaver instance of a static plugin on a mock host. */
typedef struct inst {
    loom_mock_host *h;
    const loom_interleaver_vtable *vt;
    void *self;
} inst;

static inst open_inst(const loom_plugin_info *info)
{
    inst in;
    loom_error err = {0};
    in.h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    in.vt = (const loom_interleaver_vtable *)info->role(LOOM_ROLE_INTERLEAVER);
    ck_assert_ptr_nonnull(in.vt);
    ck_assert_int_eq(in.vt->create(loom_mock_host_api(in.h),
                                   loom_mock_host_ctx(in.h), NULL, &in.self,
                                   &err),
                     LOOM_OK);
    return in;
}

static void close_inst(inst *in)
{
    in->vt->destroy(in->self);
    loom_mock_host_free(in->h);
}

/* Interleaves g with `in` (priorities may be NULL), simulates, fills m and
 * the per-rank peaks; returns the simulator's status. */
static int run(inst *in, const loom_stage_graph *g, const float *prio,
               loom_metrics *m, int64_t *peaks)
{
    loom_error err = {0};
    loom_schedule *sc = loom_schedule_new(g->n_ranks, g->n_stages);
    int rc = in->vt->interleave(in->self, g, prio, sc, &err);
    ck_assert_msg(rc == LOOM_OK, "interleave: %s", err.message);
    loom_metrics_init(m);
    m->peak_bytes = peaks;
    rc = loom_mock_simulate(g, sc, m, &err);
    ck_assert_msg(rc == LOOM_OK, "simulate: %s", err.message);
    loom_schedule_free(sc);
    return rc;
}

/* Fifo priorities: group g gets n - g. */
static float *fifo(int n)
{
    float *p = malloc((size_t)n * sizeof *p);
    for (int i = 0; i < n; i++)
        p[i] = (float)(n - i);
    return p;
}

START_TEST(uniform_matches_1f1b)
{
    /* P=4, M=8, F=1, B=2: (M + P - 1)(F + B) = 33, the lower bound. */
    loom_stage_times st = times(4, 8, 1, 1, 2);
    st.memory_cap_bytes = 4; /* 1F1B's peak: P activations on rank 0 */
    loom_stage_graph *g = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_graph_from_stage_times(&st, 0, &g, &err), LOOM_OK);
    inst dq = open_inst(loom_static_dual_queue());
    float *p = fifo(g->n_groups);
    loom_metrics m = LOOM_METRICS_INIT;
    int64_t peaks[4];
    run(&dq, g, p, &m, peaks);
    ck_assert_double_eq_tol(m.makespan_ms, 33.0, 1e-9);
    ck_assert_int_eq(m.cap_violations, 0);
    ck_assert_int_le(m.max_peak_bytes, 4);
    ck_assert_int_eq(peaks[3], 1); /* the last rank runs F, B, F, B ... */

    /* Without a cap the same makespan; ranks fill their warm-up bubble
     * with forwards, so rank 0 holds all 8 microbatches. */
    g->memory_cap_bytes = 0;
    run(&dq, g, NULL, &m, peaks);
    ck_assert_double_eq_tol(m.makespan_ms, 33.0, 1e-9);
    ck_assert_int_eq(peaks[0], 8);
    free(p);
    close_inst(&dq);
    loom_graph_free(g);
}
END_TEST

START_TEST(cap_of_two_microbatches)
{
    loom_stage_times st = times(4, 8, 1, 1, 2);
    st.memory_cap_bytes = 2;
    loom_stage_graph *g = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_graph_from_stage_times(&st, 0, &g, &err), LOOM_OK);
    inst dq = open_inst(loom_static_dual_queue());
    loom_metrics m = LOOM_METRICS_INIT;
    int64_t peaks[4];
    run(&dq, g, NULL, &m, peaks);
    for (int r = 0; r < 4; r++)
        ck_assert_int_le(peaks[r], 2);
    ck_assert_int_eq(m.cap_violations, 0);
    /* Two in flight: a microbatch's round trip is 4F + 4B = 12 ms and
     * only two overlap, so the makespan exceeds 1F1B's 33. */
    ck_assert_double_gt(m.makespan_ms, 33.0);
    close_inst(&dq);
    loom_graph_free(g);
}
END_TEST

START_TEST(cap_below_one_activation_still_progresses)
{
    loom_stage_times st = times(3, 4, 1, 1, 1);
    for (int i = 0; i < 3; i++)
        act[i] = 5;
    st.memory_cap_bytes = 4; /* no forward ever fits */
    loom_stage_graph *g = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_graph_from_stage_times(&st, 0, &g, &err), LOOM_OK);
    inst dq = open_inst(loom_static_dual_queue());
    loom_metrics m = LOOM_METRICS_INIT;
    int64_t peaks[3];
    run(&dq, g, NULL, &m, peaks);
    ck_assert_int_eq(m.cap_violations, 3);
    /* A forced forward goes to the rank left with the least memory, so
     * every rank holds one microbatch at a time. */
    for (int r = 0; r < 3; r++)
        ck_assert_int_eq(peaks[r], 5);
    close_inst(&dq);
    loom_graph_free(g);
}
END_TEST

START_TEST(priorities_order_forwards)
{
    /* Reversed priorities: the last microbatch is the first forward on
     * rank 0, and rank 0's forwards come in priority order. */
    loom_stage_times st = times(2, 4, 1, 1, 1);
    loom_stage_graph *g = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_graph_from_stage_times(&st, 0, &g, &err), LOOM_OK);
    inst dq = open_inst(loom_static_dual_queue());
    float prio[4] = {1, 2, 3, 4};
    loom_schedule *sc = loom_schedule_new(2, g->n_stages);
    ck_assert_int_eq(dq.vt->interleave(dq.self, g, prio, sc, &err), LOOM_OK);
    int want = 3;
    for (int i = sc->rank_off[0]; i < sc->rank_off[1]; i++) {
        int v = sc->order[i];
        if (g->kind[v] == LOOM_STAGE_F)
            ck_assert_int_eq(g->microbatch[v], want--);
    }
    ck_assert_int_eq(want, -1);
    loom_schedule_free(sc);
    close_inst(&dq);
    loom_graph_free(g);
}
END_TEST

/* splitmix64 for the random cases. */
static uint64_t rnd(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A random stage-times problem: up to max_p ranks, 1-3 virtual stages, up
 * to max_m microbatches of uneven scale, random F/B times, activations,
 * P2P time and (half the time) a memory cap. */
static loom_stage_times random_times(uint64_t *seed, int max_p, int max_m)
{
    int P = 1 + (int)(rnd(seed) % (uint64_t)max_p), V = 1 + (int)(rnd(seed) % 3);
    int M = 1 + (int)(rnd(seed) % (uint64_t)max_m);
    loom_stage_times st = times(P, M, V, 1, 2);
    for (int i = 0; i < P * V; i++) {
        fwd[i] = 0.5 + (double)(rnd(seed) % 8) / 4;
        bwd[i] = 0.5 + (double)(rnd(seed) % 12) / 4;
        act[i] = 1 + (double)(rnd(seed) % 3);
    }
    for (int i = 0; i < M; i++)
        scale[i] = 0.25 + (double)(rnd(seed) % 12) / 4;
    st.p2p_ms = (double)(rnd(seed) % 3) / 4;
    st.memory_cap_bytes = (rnd(seed) % 2) ? 0 : (double)(2 + rnd(seed) % 8);
    return st;
}

START_TEST(random_graphs_never_deadlock)
{
    uint64_t seed = 42;
    inst dq = open_inst(loom_static_dual_queue());
    for (int it = 0; it < 200; it++) {
        loom_stage_times st = random_times(&seed, 6, 12);
        int P = st.ranks, V = st.virtual_stages, M = st.microbatches;
        int split = (int)(rnd(&seed) % 2);
        loom_stage_graph *g = NULL;
        loom_error err = {0};
        ck_assert_int_eq(loom_graph_from_stage_times(&st, split, &g, &err),
                         LOOM_OK);
        float *p = malloc((size_t)M * sizeof *p);
        for (int i = 0; i < M; i++)
            p[i] = (float)(rnd(&seed) % 100);
        loom_metrics m = LOOM_METRICS_INIT;
        int64_t peaks[8];
        /* run() asserts that the simulator accepts the schedule: every
         * stage exactly once, on its rank, and no deadlock. */
        run(&dq, g, p, &m, peaks);
        ck_assert_double_gt(m.makespan_ms, 0);
        if (g->memory_cap_bytes > 0 && V == 1) {
            /* One chunk per rank: the cap holds whenever the largest
             * single activation fits (a rank can always drain). */
            int64_t most = 0;
            for (int i = 0; i < P; i++)
                for (int k = 0; k < M; k++)
                    if (llround(act[i] * scale[k]) > most)
                        most = llround(act[i] * scale[k]);
            if ((double)most <= g->memory_cap_bytes)
                ck_assert_int_eq(m.cap_violations, 0);
        }
        free(p);
        loom_graph_free(g);
    }
    close_inst(&dq);
}
END_TEST

/* The dual-queue rule written out directly (docs/search.md, steps 1-5):
 * every step scans every released stage, with no queues or caches. */
static float ref_prio(const loom_stage_graph *g, const float *prio, int32_t v)
{
    int32_t grp = g->group[v];
    float p = prio && grp >= 0 && grp < g->n_groups ? prio[grp] : -(float)grp;
    return p != p ? -3.0e38f : p;
}

static int32_t ref_tie(const loom_stage_graph *g, int32_t v)
{
    int32_t sub = g->sub[v], pos = g->position[v];
    if (g->kind[v] == LOOM_STAGE_F)
        return sub * 131072 + pos;
    return sub * 131072 + (g->kind[v] == LOOM_STAGE_W ? 65536 : 0) + (65535 - pos);
}

/* 1 when stage a (starting at ta) is taken before stage b (at tb). */
static int ref_before(const loom_stage_graph *g, const float *prio, int32_t a,
                      double ta, int32_t b, double tb)
{
    if (ta != tb)
        return ta < tb;
    float pa = ref_prio(g, prio, a), pb = ref_prio(g, prio, b);
    if (pa != pb)
        return pa > pb;
    if (ref_tie(g, a) != ref_tie(g, b))
        return ref_tie(g, a) < ref_tie(g, b);
    return a < b;
}

static void ref_schedule(const loom_stage_graph *g, const float *prio,
                         int32_t *order)
{
    int32_t n = g->n_stages, P = g->n_ranks;
    int32_t *left = calloc((size_t)n, sizeof *left), *fill = calloc((size_t)P, sizeof *fill);
    int32_t *last_type = malloc((size_t)P * sizeof *last_type);
    double *ready = calloc((size_t)n, sizeof *ready), *last = calloc((size_t)P, sizeof *last);
    int64_t *mem = calloc((size_t)P, sizeof *mem);
    char *done = calloc((size_t)n, 1);
    for (int32_t v = 0; v < n; v++) {
        left[v] = g->pred_off[v + 1] - g->pred_off[v];
        fill[g->rank[v]]++;
    }
    for (int32_t r = 0, k = 0; r < P; r++) {
        int32_t c = fill[r];
        fill[r] = k;
        k += c;
        last_type[r] = -1;
    }
    for (int32_t placed = 0; placed < n; placed++) {
        int32_t best = -1, best_r = -1, forced = -1;
        double best_t = 0, forced_t = 0;
        int64_t forced_bytes = 0;
        for (int32_t r = 0; r < P; r++) {
            int32_t c[2] = {-1, -1};
            double t[2] = {0, 0};
            for (int32_t v = 0; v < n; v++) {
                if (done[v] || left[v] || g->rank[v] != r)
                    continue;
                int q = g->kind[v] == LOOM_STAGE_F ? 0 : 1;
                double tv = ready[v] > last[r] ? ready[v] : last[r];
                if (c[q] < 0 || ref_before(g, prio, v, tv, c[q], t[q])) {
                    c[q] = v;
                    t[q] = tv;
                }
            }
            int32_t f = c[0], b = c[1];
            if (f >= 0 && g->memory_cap_bytes > 0 &&
                (double)(g->static_bytes[r] + mem[r] + g->mem_delta_bytes[f]) >
                    g->memory_cap_bytes) {
                if (b < 0) {
                    int64_t bytes = g->static_bytes[r] + mem[r] + g->mem_delta_bytes[f];
                    if (forced < 0 || bytes < forced_bytes ||
                        (bytes == forced_bytes && t[0] < forced_t)) {
                        forced = f;
                        forced_bytes = bytes;
                        forced_t = t[0];
                    }
                }
                f = -1;
            }
            int32_t pick;
            if (f < 0 || b < 0)
                pick = f < 0 ? b : f;
            else if (t[0] != t[1])
                pick = t[0] < t[1] ? f : b;
            else if (t[0] <= last[r])
                pick = last_type[r] == 0 ? b : f;
            else
                pick = f;
            if (pick < 0)
                continue;
            double tp = pick == f ? t[0] : t[1];
            if (best < 0 || tp < best_t) {
                best = pick;
                best_t = tp;
                best_r = r;
            }
        }
        if (best < 0)
            best = forced;
        ck_assert_int_ge(best, 0);
        best_r = g->rank[best];
        double start = ready[best] > last[best_r] ? ready[best] : last[best_r];
        double end = start + g->duration_ms[best];
        last[best_r] = end;
        mem[best_r] += g->mem_delta_bytes[best];
        last_type[best_r] = g->kind[best] == LOOM_STAGE_F ? 0 : 1;
        done[best] = 1;
        order[fill[best_r]++] = best;
        for (int32_t s = 0; s < n; s++)
            for (int32_t e = g->pred_off[s]; e < g->pred_off[s + 1]; e++)
                if (g->pred[e] == best) {
                    if (end + g->pred_p2p_ms[e] > ready[s])
                        ready[s] = end + g->pred_p2p_ms[e];
                    left[s]--;
                }
    }
    free(left);
    free(fill);
    free(last_type);
    free(ready);
    free(last);
    free(mem);
    free(done);
}

/* A copy of g with its stages numbered by perm (stage v becomes perm[v]):
 * the same problem with other predecessor rows and tie keys. */
static loom_stage_graph *relabel(const loom_stage_graph *g, const int32_t *perm)
{
    loom_stage_graph *c = loom_graph_alloc(g->n_stages, g->n_edges, g->n_ranks, g->n_groups,
                                           g->n_pairs, g->n_layer_entries);
    int32_t *inv = malloc((size_t)g->n_stages * sizeof *inv);
    for (int32_t v = 0; v < g->n_stages; v++)
        inv[perm[v]] = v;
    c->n_microbatches = g->n_microbatches;
    int32_t e = 0;
    for (int32_t w = 0; w < g->n_stages; w++) {
        int32_t v = inv[w];
        c->rank[w] = g->rank[v];
        c->kind[w] = g->kind[v];
        c->position[w] = g->position[v];
        c->microbatch[w] = g->microbatch[v];
        c->sub[w] = g->sub[v];
        c->group[w] = g->group[v];
        c->duration_ms[w] = g->duration_ms[v];
        c->mem_delta_bytes[w] = g->mem_delta_bytes[v];
        c->pred_off[w] = e;
        for (int32_t k = g->pred_off[v]; k < g->pred_off[v + 1]; k++, e++) {
            c->pred[e] = perm[g->pred[k]];
            c->pred_p2p_ms[e] = g->pred_p2p_ms[k];
        }
    }
    c->pred_off[g->n_stages] = e;
    memcpy(c->static_bytes, g->static_bytes, (size_t)g->n_ranks * sizeof *c->static_bytes);
    c->memory_cap_bytes = g->memory_cap_bytes;
    free(inv);
    return c;
}

START_TEST(matches_the_rule_written_out)
{
    /* Random graphs and priorities with ties, -0 and +0 and NaN; one
     * instance serves them all, so its caches must follow every change of
     * graph, including a relabelled copy of the same size. */
    static const float pool[] = {3, 3, 1, -0.0f, 0.0f, 2.5f, -1, 7};
    uint64_t seed = 7;
    inst dq = open_inst(loom_static_dual_queue());
    for (int it = 0; it < 150; it++) {
        loom_stage_times st = random_times(&seed, 5, 8);
        loom_stage_graph *g = NULL;
        loom_error err = {0};
        ck_assert_int_eq(loom_graph_from_stage_times(&st, (int)(rnd(&seed) % 2), &g, &err),
                         LOOM_OK);
        float *p = malloc((size_t)g->n_groups * sizeof *p);
        for (int i = 0; i < g->n_groups; i++)
            p[i] = rnd(&seed) % 10 == 0 ? NAN : pool[rnd(&seed) % 8];
        int32_t *perm = malloc((size_t)g->n_stages * sizeof *perm);
        for (int32_t v = 0; v < g->n_stages; v++)
            perm[v] = v;
        for (int32_t v = g->n_stages - 1; v > 0; v--) {
            int32_t k = (int32_t)(rnd(&seed) % (uint64_t)(v + 1)), x = perm[v];
            perm[v] = perm[k];
            perm[k] = x;
        }
        loom_stage_graph *h = relabel(g, perm);
        const loom_stage_graph *graphs[2] = {g, h};
        for (int k = 0; k < 2; k++) {
            const loom_stage_graph *x = graphs[k];
            loom_schedule *sc = loom_schedule_new(x->n_ranks, x->n_stages);
            int32_t *want = malloc((size_t)x->n_stages * sizeof *want);
            ck_assert_int_eq(dq.vt->interleave(dq.self, x, it % 7 ? p : NULL, sc, &err), LOOM_OK);
            ref_schedule(x, it % 7 ? p : NULL, want);
            for (int32_t i = 0; i < x->n_stages; i++)
                ck_assert_msg(sc->order[i] == want[i],
                              "case %d graph %d: slot %d holds stage %d, expected %d", it, k, i,
                              sc->order[i], want[i]);
            free(want);
            loom_schedule_free(sc);
        }
        free(perm);
        free(p);
        loom_graph_free(h);
        loom_graph_free(g);
    }
    close_inst(&dq);
}
END_TEST

START_TEST(non_uniform_microbatches_vs_1f1b)
{
    /* P=4, F=1, B=2, M=8 with one long microbatch in the middle: 1F1B
     * stalls every rank behind it; the dual queue moves the other
     * microbatches' stages into those bubbles. */
    loom_stage_times st = times(4, 8, 1, 1, 2);
    double sc[8] = {1, 1, 1, 3, 1, 1, 1, 1};
    memcpy(scale, sc, sizeof sc);
    loom_stage_graph *g = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_graph_from_stage_times(&st, 0, &g, &err), LOOM_OK);
    inst dq = open_inst(loom_static_dual_queue());
    inst ob = open_inst(loom_static_1f1b());
    loom_metrics a = LOOM_METRICS_INIT, b = LOOM_METRICS_INIT;
    int64_t pa[8], pb[8];
    float *p = fifo(8);
    run(&dq, g, p, &a, pa);
    run(&ob, g, p, &b, pb);
    ck_assert_double_lt(a.makespan_ms, b.makespan_ms);
    free(p);
    loom_graph_free(g);

    /* Random non-uniform cases without a cap: better on average and far
     * more often better than worse (the greedy rule has no look-ahead, so
     * a single case can lose a little; docs/search.md shows one). */
    uint64_t seed = 7;
    double sum_dq = 0, sum_ob = 0;
    int better = 0, worse = 0;
    for (int it = 0; it < 150; it++) {
        int P = 2 + (int)(rnd(&seed) % 5), M = 1 + (int)(rnd(&seed) % 16);
        double f = 1 + (double)(rnd(&seed) % 2), bw = 1 + (double)(rnd(&seed) % 3);
        st = times(P, M, 1, f, bw);
        for (int i = 0; i < M; i++)
            scale[i] = 0.5 * (double)(1 + rnd(&seed) % 6);
        ck_assert_int_eq(loom_graph_from_stage_times(&st, 0, &g, &err), LOOM_OK);
        p = fifo(M);
        run(&dq, g, p, &a, pa);
        run(&ob, g, p, &b, pb);
        sum_dq += a.makespan_ms;
        sum_ob += b.makespan_ms;
        better += a.makespan_ms < b.makespan_ms - 1e-9;
        worse += a.makespan_ms > b.makespan_ms + 1e-9;
        free(p);
        loom_graph_free(g);
    }
    ck_assert_double_lt(sum_dq, sum_ob);
    ck_assert_int_gt(better, 3 * worse);
    close_inst(&ob);
    close_inst(&dq);
}
END_TEST

/* Counting allocator wrapped around the mock host's. */
static int64_t n_allocs;
static void *(*base_alloc)(size_t);
static void *(*base_realloc)(void *, size_t);
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

START_TEST(no_allocation_after_first_call)
{
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    loom_host_api api = *loom_mock_host_api(h);
    base_alloc = api.alloc;
    base_realloc = api.realloc;
    api.alloc = count_alloc;
    api.realloc = count_realloc;
    const loom_interleaver_vtable *vt = (const loom_interleaver_vtable *)
        loom_static_dual_queue()->role(LOOM_ROLE_INTERLEAVER);
    void *self = NULL;
    loom_error err = {0};
    ck_assert_int_eq(vt->create(&api, loom_mock_host_ctx(h), NULL, &self, &err),
                     LOOM_OK);
    loom_stage_times st = times(4, 16, 2, 1, 2);
    loom_stage_graph *g = NULL;
    ck_assert_int_eq(loom_graph_from_stage_times(&st, 1, &g, &err), LOOM_OK);
    loom_schedule *sc = loom_schedule_new(g->n_ranks, g->n_stages);
    ck_assert_int_eq(vt->interleave(self, g, NULL, sc, &err), LOOM_OK);
    int64_t after_first = n_allocs;
    ck_assert_int_gt(after_first, 0);
    float *p = fifo(g->n_groups);
    for (int i = 0; i < 5; i++) {
        p[i % g->n_groups] = (float)(100 + i);
        ck_assert_int_eq(vt->interleave(self, g, p, sc, &err), LOOM_OK);
    }
    ck_assert_int_eq(n_allocs, after_first);
    free(p);
    loom_schedule_free(sc);
    loom_graph_free(g);
    vt->destroy(self);
    loom_mock_host_free(h);
}
END_TEST

START_TEST(input_errors)
{
    loom_stage_times st = times(2, 2, 1, 1, 1);
    loom_stage_graph *g = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_graph_from_stage_times(&st, 0, &g, &err), LOOM_OK);
    inst dq = open_inst(loom_static_dual_queue());
    loom_schedule *sc = loom_schedule_new(2, g->n_stages);

    g->rank[3] = 5;
    ck_assert_int_eq(dq.vt->interleave(dq.self, g, NULL, sc, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "stage 3 is on rank 5, expected 0..1"));
    g->rank[3] = 0;

    /* B of mb 0 at position 1 (stage 2) made to wait for the B after it
     * (stage 3), which waits for stage 2. */
    int32_t saved = g->pred[1];
    g->pred[1] = 3;
    ck_assert_int_eq(dq.vt->interleave(dq.self, g, NULL, sc, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "dependency cycle"));
    g->pred[1] = saved;
    ck_assert_int_eq(dq.vt->interleave(dq.self, g, NULL, sc, &err), LOOM_OK);

    loom_schedule_free(sc);
    close_inst(&dq);
    loom_graph_free(g);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("dual-queue");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, uniform_matches_1f1b);
    tcase_add_test(tc, cap_of_two_microbatches);
    tcase_add_test(tc, cap_below_one_activation_still_progresses);
    tcase_add_test(tc, priorities_order_forwards);
    tcase_add_test(tc, random_graphs_never_deadlock);
    tcase_add_test(tc, matches_the_rule_written_out);
    tcase_add_test(tc, non_uniform_microbatches_vs_1f1b);
    tcase_add_test(tc, no_allocation_after_first_call);
    tcase_add_test(tc, input_errors);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(suite());
}
