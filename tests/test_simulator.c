/* test_simulator.c - the core simulator on stage-times graphs: closed-form
 * makespans, memory peaks, bubble ratio, and the errors it must report. */
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "engine_api.h"

static double fwd[64], bwd[64], act[64], scale[64];

/* A uniform stage-times problem: P ranks, M microbatches, V chunks. */
static loom_stage_times uniform(int P, int M, int V, double f, double b)
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

/* Stage id of (mb, position, kind) in a non-split stage-times graph. */
static int32_t sid(int P, int V, int mb, int s, int backward)
{
    int S = P * V;
    return mb * 2 * S + (backward ? S + (S - 1 - s) : s);
}

/* Megatron 1F1B order for V = 1, written independently of the plugin. */
static loom_schedule *one_f_one_b(int P, int M)
{
    loom_schedule *sc = loom_schedule_new(P, 2 * P * M);
    int k = 0;
    for (int r = 0; r < P; r++) {
        sc->rank_off[r] = k;
        int warm = P - r - 1 < M ? P - r - 1 : M, f = 0, b = 0;
        for (; f < warm; f++)
            sc->order[k++] = sid(P, 1, f, r, 0);
        while (f < M) {
            sc->order[k++] = sid(P, 1, f++, r, 0);
            sc->order[k++] = sid(P, 1, b++, r, 1);
        }
        while (b < M)
            sc->order[k++] = sid(P, 1, b++, r, 1);
    }
    sc->rank_off[P] = k;
    return sc;
}

static loom_schedule *gpipe(int P, int M)
{
    loom_schedule *sc = loom_schedule_new(P, 2 * P * M);
    int k = 0;
    for (int r = 0; r < P; r++) {
        sc->rank_off[r] = k;
        for (int mb = 0; mb < M; mb++)
            sc->order[k++] = sid(P, 1, mb, r, 0);
        for (int mb = 0; mb < M; mb++)
            sc->order[k++] = sid(P, 1, mb, r, 1);
    }
    sc->rank_off[P] = k;
    return sc;
}

START_TEST(test_1f1b_closed_form)
{
    loom_stage_times st = uniform(4, 8, 1, 1, 2);
    loom_stage_graph *g = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_graph_from_stage_times(&st, 0, &g, &err), LOOM_OK);
    loom_schedule *sc = one_f_one_b(4, 8);
    int64_t peak[4];
    loom_metrics m = LOOM_METRICS_INIT;
    m.peak_bytes = peak;
    ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_OK);
    ck_assert_double_eq_tol(m.makespan_ms, 33.0, 1e-9);
    ck_assert_double_eq_tol(m.bubble_ratio, 3.0 / 11.0, 1e-12);
    for (int r = 0; r < 4; r++)
        ck_assert_int_eq(peak[r], 4 - r); /* min(P - r, M) */
    loom_schedule_free(sc);

    sc = gpipe(4, 8);
    ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_OK);
    ck_assert_double_eq_tol(m.makespan_ms, 33.0, 1e-9);
    for (int r = 0; r < 4; r++)
        ck_assert_int_eq(peak[r], 8);
    loom_schedule_free(sc);
    loom_graph_free(g);
}
END_TEST

START_TEST(test_p2p_and_scale)
{
    /* P=2, M=1: F0 -> F1 -> B1 -> B0 with 0.5 ms per hop, scale 2. */
    loom_stage_times st = uniform(2, 1, 1, 1, 2);
    scale[0] = 2;
    st.p2p_ms = 0.5;
    loom_stage_graph *g = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_graph_from_stage_times(&st, 0, &g, &err), LOOM_OK);
    loom_schedule *sc = one_f_one_b(2, 1);
    double start[4], end[4];
    loom_metrics m = LOOM_METRICS_INIT;
    m.start_ms = start;
    m.end_ms = end;
    ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_OK);
    /* 2 + 0.5 + 2 + 4 + 0.5 + 4 */
    ck_assert_double_eq_tol(m.makespan_ms, 13.0, 1e-9);
    ck_assert_double_eq_tol(start[sid(2, 1, 0, 1, 0)], 2.5, 1e-12);
    loom_schedule_free(sc);
    loom_graph_free(g);
}
END_TEST

/* The iteration tail (docs/cost-models.md, "Iteration tail"): P=2, M=1, F0 [0,1] F1 [1,2]
 * B1 [2,4] B0 [4,6]; each rank syncs 3 ms of gradients, gathers 0.5 ms of
 * parameters, steps its optimizer in 1 (rank 0) or 2 ms (rank 1). */
/* Per-rank breakdown arrays (up to 2 ranks) wired into a metrics struct. */
typedef struct breakdown {
    double cm[2], p2p[2], dp[2], opt[2], bub[2];
} breakdown;

static loom_metrics with_breakdown(breakdown *b)
{
    loom_metrics m = LOOM_METRICS_INIT;
    m.compute_ms = b->cm;
    m.p2p_wait_ms = b->p2p;
    m.dp_sync_ms = b->dp;
    m.optimizer_ms = b->opt;
    m.bubble_ms = b->bub;
    return m;
}

/* Gives the one rank of g two chunks holding shares a and b of its
 * trainable parameters (the row is allocated on first use). */
static void set_chunk_shares(loom_stage_graph *g, double a, double b)
{
    if (!g->tail_chunk_share) {
        g->tail_chunks = 2;
        g->tail_chunk_share = malloc(2 * sizeof(double));
        ck_assert_ptr_nonnull(g->tail_chunk_share);
    }
    g->tail_chunk_share[0] = a;
    g->tail_chunk_share[1] = b;
}

/* uniform(P, M, V, 1, 2) as a graph with a zeroed iteration tail. */
static loom_stage_graph *tail_graph(int P, int M, int V)
{
    loom_stage_times st = uniform(P, M, V, 1, 2);
    loom_stage_graph *g = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_graph_from_stage_times(&st, 0, &g, &err), LOOM_OK);
    ck_assert_int_eq(loom_graph_alloc_tail(g), LOOM_OK);
    return g;
}

/* P=1, M=1, V=2 with a zeroed tail; *sc gets the order F0 F1 B1 B0
 * (F0 [0,1] F1 [1,2] B1 [2,4] B0 [4,6] without a tail). */
static loom_stage_graph *two_chunks(loom_schedule **sc)
{
    loom_stage_graph *g = tail_graph(1, 1, 2);
    *sc = loom_schedule_new(1, 4);
    for (int k = 0; k < 4; k++)
        (*sc)->order[k] = k;
    (*sc)->rank_off[0] = 0;
    (*sc)->rank_off[1] = 4;
    return g;
}

START_TEST(test_iteration_tail)
{
    loom_stage_times st = uniform(2, 1, 1, 1, 2);
    loom_stage_graph *g = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_graph_from_stage_times(&st, 0, &g, &err), LOOM_OK);
    loom_schedule *sc = one_f_one_b(2, 1);
    breakdown b;
    loom_metrics m = with_breakdown(&b);
    double *cm = b.cm, *p2p = b.p2p, *dp = b.dp, *opt = b.opt, *bub = b.bub;
    /* no tail: the stages alone, the rest is bubble */
    ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_OK);
    ck_assert_double_eq_tol(m.makespan_ms, 6.0, 1e-12);
    ck_assert_double_eq_tol(bub[1], 3.0, 1e-12);
    ck_assert_double_eq_tol(dp[0] + opt[0], 0.0, 1e-12);
    ck_assert(m.hfu < 0); /* stage-times: FLOPs unknown */

    ck_assert_int_eq(loom_graph_alloc_tail(g), LOOM_OK);
    for (int r = 0; r < 2; r++) {
        g->tail_grad_sync_ms[r] = 3;
        g->tail_grad_bucket_ms[r] = 0.5;
        g->tail_param_gather_ms[r] = 0.5;
        g->tail_optimizer_ms[r] = r ? 2 : 1;
    }
    /* without overlap the sync follows each rank's last stage: rank 0
     * syncs until 9, rank 1 until 7; both step after 9 */
    ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_OK);
    ck_assert_double_eq_tol(m.makespan_ms, 9.0 + 2.0 + 0.5, 1e-12);
    ck_assert_double_eq_tol(dp[0], 3.5, 1e-12);
    ck_assert_double_eq_tol(dp[1], 3.5, 1e-12);
    ck_assert_double_eq_tol(opt[1], 2.0, 1e-12);
    ck_assert_double_eq_tol(bub[0], 11.5 - 3.0 - 3.5 - 1.0, 1e-12);
    ck_assert_double_eq_tol(bub[1], 11.5 - 3.0 - 3.5 - 2.0, 1e-12);
    /* with overlap each rank's sync starts with its last backward (B0 at
     * 4, B1 at 2) and ends one bucket after it at the earliest: rank 0
     * at max(4 + 3, 6 + 0.5) = 7, rank 1 at max(2 + 3, 4 + 0.5) = 5 */
    g->tail_overlap[0] = g->tail_overlap[1] = 1;
    ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_OK);
    ck_assert_double_eq_tol(m.makespan_ms, 7.0 + 2.0 + 0.5, 1e-12);
    ck_assert_double_eq_tol(dp[0], 1.0 + 0.5, 1e-12);
    ck_assert_double_eq_tol(dp[1], 1.0 + 0.5, 1e-12);
    for (int r = 0; r < 2; r++) {
        ck_assert_double_eq_tol(cm[r], 3.0, 1e-12);
        ck_assert_double_eq_tol(cm[r] + p2p[r] + dp[r] + opt[r] + bub[r], m.makespan_ms, 1e-9);
    }
    /* a graph copy keeps the tail */
    loom_stage_graph *c = loom_graph_clone(g);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(loom_simulate(c, sc, &m, &err), LOOM_OK);
    ck_assert_double_eq_tol(m.makespan_ms, 9.5, 1e-12);
    loom_graph_free(c);
    loom_schedule_free(sc);
    loom_graph_free(g);
}
END_TEST

/* A rank that never idles has no bubble: one rank, F [0,1] B [1,3], then
 * its gradient sync and optimizer step, swept over tail times whose sums
 * round differently in the makespan and in the busy time (without the
 * clamp, some read -2.2e-16). The ratio is 0 up to rounding, never
 * negative. */
START_TEST(test_busy_rank_has_no_negative_bubble)
{
    loom_stage_graph *g = tail_graph(1, 1, 1);
    loom_schedule *sc = one_f_one_b(1, 1);
    loom_error err = {0};
    loom_metrics m = LOOM_METRICS_INIT;
    for (int i = 1; i <= 200; i++) {
        g->tail_grad_sync_ms[0] = 0.1 * i;
        g->tail_optimizer_ms[0] = 0.7 / i;
        ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_OK);
        ck_assert(m.bubble_ratio >= 0);
        ck_assert(m.bubble_ratio < 1e-12);
    }
    loom_schedule_free(sc);
    loom_graph_free(g);
}
END_TEST

/* The overlapped sync divided by the chunks' parameters: P=1, M=1, V=2:
 * F0 [0,1] F1 [1,2] B1 [2,4] B0 [4,6]; 3 ms of sync, one bucket 0.5 ms
 * (0.25 a chunk). Chunk 1 (its last backward B1 ends at 4) reduces first,
 * then chunk 0 (B0 ends at 6); each share ends at least a bucket after its
 * backward. Equal shares (1.5 each): 2 + 1.5 < 4.25, then 4.25 + 1.5 <
 * 6.25, so the sync ends at 6.25. Chunk 0 holding 90 %: chunk 1's 0.3 ms
 * ends at 4.25, chunk 0's 2.7 ms at 6.95. Chunk 0 holding 10 %: chunk 1's
 * 2.7 ms ends at 4.7, chunk 0's 0.3 ms at max(5.0, 6.25). */
START_TEST(test_sync_shares_follow_parameters)
{
    loom_schedule *sc = NULL;
    loom_stage_graph *g = two_chunks(&sc);
    loom_error err = {0};
    g->tail_grad_sync_ms[0] = 3;
    g->tail_grad_bucket_ms[0] = 0.5;
    g->tail_overlap[0] = 1;
    double dp[1];
    loom_metrics m = LOOM_METRICS_INIT;
    m.dp_sync_ms = dp;
    ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_OK);
    ck_assert_double_eq_tol(m.makespan_ms, 6.25, 1e-12);
    ck_assert_double_eq_tol(dp[0], 0.25, 1e-12);
    set_chunk_shares(g, 0.9, 0.1);
    ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_OK);
    ck_assert_double_eq_tol(m.makespan_ms, 6.95, 1e-12);
    ck_assert_double_eq_tol(dp[0], 0.95, 1e-12);
    loom_stage_graph *c = loom_graph_clone(g); /* a copy keeps the shares */
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(loom_simulate(c, sc, &m, &err), LOOM_OK);
    ck_assert_double_eq_tol(m.makespan_ms, 6.95, 1e-12);
    ck_assert(loom_graph_digest(c) == loom_graph_digest(g));
    set_chunk_shares(g, 0.1, 0.9);
    ck_assert(loom_graph_digest(c) != loom_graph_digest(g));
    ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_OK);
    ck_assert_double_eq_tol(m.makespan_ms, 6.25, 1e-12);
    ck_assert_double_eq_tol(dp[0], 0.25, 1e-12);
    loom_graph_free(c);
    loom_schedule_free(sc);
    loom_graph_free(g);
}
END_TEST

/* The parameter prefetch (--overlap-param-gather): P=1, M=1, V=2, F0
 * F1 B1 B0 of 1, 1, 2 and 2 ms, 4 ms of all-gather from the step's start
 * in the order of the chunks' first forwards (chunk 0, then 1). Equal
 * parts: chunk 0's arrive at 2, chunk 1's at 4, so F0 runs [2,3], F1
 * [4,5], B1 [5,7], B0 [7,9]: makespan 9, 3 ms of it DP sync. Chunk 0
 * holding 90 %: 3.6 and 4, F0 [3.6,4.6], F1 [4.6,5.6] (its part came
 * first), end 9.6. Chunk 0 frozen (no part to gather): F0 [0,1], F1 waits
 * for all 4 ms, end 9. No prefetch: end 6. */
START_TEST(test_parameter_prefetch)
{
    loom_schedule *sc = NULL;
    loom_stage_graph *g = two_chunks(&sc);
    loom_error err = {0};
    breakdown b;
    double start[4];
    loom_metrics m = with_breakdown(&b);
    double *cm = b.cm, *p2p = b.p2p, *dp = b.dp, *opt = b.opt, *bub = b.bub;
    m.start_ms = start;
    ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_OK);
    ck_assert_double_eq_tol(m.makespan_ms, 6, 1e-12);
    uint64_t before = loom_graph_digest(g);
    g->tail_param_prefetch_ms[0] = 4;
    ck_assert(loom_graph_digest(g) != before); /* the digest sees it */
    ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_OK);
    ck_assert_double_eq_tol(m.makespan_ms, 9, 1e-12);
    ck_assert_double_eq_tol(start[0], 2, 1e-12);
    ck_assert_double_eq_tol(start[1], 4, 1e-12);
    ck_assert_double_eq_tol(start[2], 5, 1e-12);
    ck_assert_double_eq_tol(dp[0], 3, 1e-12);
    ck_assert_double_eq_tol(cm[0] + p2p[0] + dp[0] + opt[0] + bub[0], 9, 1e-12);
    ck_assert_double_eq_tol(bub[0], 0, 1e-12);
    set_chunk_shares(g, 0.9, 0.1);
    ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_OK);
    ck_assert_double_eq_tol(m.makespan_ms, 9.6, 1e-12);
    ck_assert_double_eq_tol(start[0], 3.6, 1e-12);
    ck_assert_double_eq_tol(start[1], 4.6, 1e-12);
    ck_assert_double_eq_tol(dp[0], 3.6, 1e-12);
    set_chunk_shares(g, 0, 1);
    ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_OK);
    ck_assert_double_eq_tol(m.makespan_ms, 9, 1e-12);
    ck_assert_double_eq_tol(start[0], 0, 1e-12);
    ck_assert_double_eq_tol(start[1], 4, 1e-12);
    ck_assert_double_eq_tol(dp[0], 3, 1e-12);
    /* a copy keeps it */
    loom_stage_graph *c = loom_graph_clone(g);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(loom_simulate(c, sc, &m, &err), LOOM_OK);
    ck_assert_double_eq_tol(m.makespan_ms, 9, 1e-12);
    ck_assert(loom_graph_digest(c) == loom_graph_digest(g));
    c->tail_param_prefetch_ms[0] = 5;
    ck_assert(loom_graph_digest(c) != loom_graph_digest(g));
    loom_graph_free(c);
    loom_schedule_free(sc);
    loom_graph_free(g);
}
END_TEST

/* The gathers run one chunk ahead of the forwards: P=2, M=1, V=3 (rank r
 * holds positions r, r+2, r+4 as chunks 0, 1, 2), every F 1 ms and B 2
 * ms, 18 ms without a prefetch. Rank 1 gathers 3 ms, its chunks holding
 * 10, 10 and 80 % (0.3, 0.3 and 2.4 ms). Chunks 0 and 1 are dispatched at
 * the step's start and arrive by 0.6, before their forwards (F1 at 1, F3
 * at 3); chunk 2's gather starts with F3 at 3 and arrives at 5.4, so F5,
 * whose input is ready at 5, waits 0.4 ms and every later stage moves by
 * as much: 18.4 ms. Gathered back to back from the start, chunk 2's part
 * would have arrived at 3.0 and hidden entirely. */
START_TEST(test_prefetch_runs_one_chunk_ahead)
{
    loom_stage_graph *g = tail_graph(2, 1, 3);
    loom_error err = {0};
    loom_schedule *sc = loom_schedule_new(2, 12);
    int k = 0;
    for (int r = 0; r < 2; r++) {
        sc->rank_off[r] = k;
        for (int c = 0; c < 3; c++)
            sc->order[k++] = sid(2, 3, 0, r + 2 * c, 0);
        for (int c = 2; c >= 0; c--)
            sc->order[k++] = sid(2, 3, 0, r + 2 * c, 1);
    }
    sc->rank_off[2] = k;
    double dp[2], start[12];
    loom_metrics m = LOOM_METRICS_INIT;
    m.dp_sync_ms = dp;
    m.start_ms = start;
    ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_OK);
    ck_assert_double_eq_tol(m.makespan_ms, 18, 1e-12);
    g->tail_param_prefetch_ms[1] = 3;
    g->tail_chunks = 3;
    g->tail_chunk_share = calloc(6, sizeof(double));
    g->tail_chunk_share[3] = 0.1;
    g->tail_chunk_share[4] = 0.1;
    g->tail_chunk_share[5] = 0.8;
    ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_OK);
    ck_assert_double_eq_tol(m.makespan_ms, 18.4, 1e-12);
    ck_assert_double_eq_tol(start[sid(2, 3, 0, 1, 0)], 1, 1e-12);
    ck_assert_double_eq_tol(start[sid(2, 3, 0, 3, 0)], 3, 1e-12);
    ck_assert_double_eq_tol(start[sid(2, 3, 0, 5, 0)], 5.4, 1e-12);
    ck_assert_double_eq_tol(dp[0], 0, 1e-12);
    ck_assert_double_eq_tol(dp[1], 0.4, 1e-12);
    loom_schedule_free(sc);
    loom_graph_free(g);
}
END_TEST

START_TEST(test_deadlock_names_stages)
{
    loom_stage_times st = uniform(2, 2, 1, 1, 2);
    loom_stage_graph *g = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_graph_from_stage_times(&st, 0, &g, &err), LOOM_OK);
    loom_schedule *sc = gpipe(2, 2);
    /* rank 0 runs B0 before its own F0: nothing can start on rank 0. */
    int32_t tmp = sc->order[0];
    sc->order[0] = sc->order[2];
    sc->order[2] = tmp;
    loom_metrics m = LOOM_METRICS_INIT;
    ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_EDEADLOCK);
    ck_assert_ptr_nonnull(strstr(err.message, "deadlock"));
    ck_assert_ptr_nonnull(strstr(err.message, "rank 0 blocked at B(mb 0.0"));
    loom_schedule_free(sc);
    loom_graph_free(g);
}
END_TEST

START_TEST(test_invalid_schedules)
{
    loom_stage_times st = uniform(2, 2, 1, 1, 2);
    loom_stage_graph *g = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_graph_from_stage_times(&st, 0, &g, &err), LOOM_OK);
    loom_schedule *sc = gpipe(2, 2);
    loom_metrics m = LOOM_METRICS_INIT;
    sc->order[1] = sc->order[0];
    ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "scheduled twice"));
    loom_schedule_free(sc);
    sc = gpipe(2, 2);
    int32_t tmp = sc->order[0];
    sc->order[0] = sc->order[4];
    sc->order[4] = tmp;
    ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "belongs to rank"));
    loom_schedule_free(sc);
    loom_graph_free(g);
}
END_TEST

/* A chain of four stages, one a rank, of 1, 2, 3 and 4 ms with 0.5 ms
 * between them, added in chain order or backwards (then every
 * predecessor has a higher id). */
static loom_stage_graph *chain_graph(int backwards)
{
    loom_graph_builder *b = loom_graph_builder_new(4);
    int32_t id[4];
    for (int i = 0; i < 4; i++) {
        int k = backwards ? 3 - i : i;
        loom_graph_stage st = {.rank = k, .kind = LOOM_STAGE_F, .pair = k, .position = k,
                               .duration_ms = 1 + k};
        id[k] = loom_graph_builder_add_stage(b, &st);
    }
    for (int k = 0; k + 1 < 4; k++)
        loom_graph_builder_add_edge(b, id[k], id[k + 1], 0.5);
    loom_stage_graph *g = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_graph_builder_finish(b, &g, &err), LOOM_OK);
    loom_graph_builder_free(b);
    return g;
}

START_TEST(test_lower_bound_is_the_longest_chain)
{
    /* 1 + 2 + 3 + 4 ms of stages and 3 x 0.5 ms of transfers: 11.5 ms,
     * above the busiest rank's 4 ms, whichever way the ids run */
    for (int backwards = 0; backwards < 2; backwards++) {
        loom_stage_graph *g = chain_graph(backwards);
        ck_assert_double_eq_tol(loom_graph_lower_bound_ms(g, NULL), 11.5, 1e-12);
        loom_graph_free(g);
    }
}
END_TEST

/* A fill on rank 1: stage X (input from A on rank 0, 1 ms P2P) runs
 * inside hosts H1..H3 (10 ms each, 4 ms of it exposed TP communication);
 * Y on rank 0 takes X's output; with h2_p2p_ms > 0 H2 also waits for A
 * (that P2P time). Order: rank 0 A Y, rank 1 X H1 H2 H3. */
static loom_stage_graph *fill_graph(double x_ms, double x_comm_ms, double h2_p2p_ms)
{
    loom_graph_builder *b = loom_graph_builder_new(2);
    loom_graph_stage a = {.rank = 0, .kind = LOOM_STAGE_F, .pair = 0, .duration_ms = 2};
    loom_graph_stage y = {.rank = 0, .kind = LOOM_STAGE_F, .pair = 1, .position = 2,
                          .duration_ms = 1};
    loom_graph_stage x = {.rank = 1, .kind = LOOM_STAGE_F, .pair = 2, .position = 1,
                          .duration_ms = x_ms};
    loom_graph_stage h = {.rank = 1, .kind = LOOM_STAGE_F, .flow = 1, .group = 1,
                          .duration_ms = 10};
    int32_t ia = loom_graph_builder_add_stage(b, &a); /* 0 */
    int32_t iy = loom_graph_builder_add_stage(b, &y); /* 1 */
    int32_t ix = loom_graph_builder_add_stage(b, &x); /* 2 */
    for (int k = 0; k < 3; k++) {                    /* 3, 4, 5 */
        h.pair = 3 + k;
        h.microbatch = k;
        h.group = 1 + k;
        loom_graph_builder_add_stage(b, &h);
    }
    loom_graph_builder_add_edge(b, ia, ix, 1);
    loom_graph_builder_add_edge(b, ix, iy, 1);
    if (h2_p2p_ms > 0) /* H2 waits for A's output too */
        loom_graph_builder_add_edge(b, ia, 4, h2_p2p_ms);
    loom_stage_graph *g = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_graph_builder_finish(b, &g, &err), LOOM_OK);
    loom_graph_builder_free(b);
    g->comm_ms = calloc(6, sizeof(double));
    g->comm_ms[ix] = x_comm_ms;
    for (int k = 3; k < 6; k++)
        g->comm_ms[k] = 4;
    return g;
}

static loom_schedule *fill_order(int32_t x_hosts)
{
    loom_schedule *sc = loom_schedule_new(2, 6);
    const int32_t order[6] = {0, 1, 2, 3, 4, 5};
    memcpy(sc->order, order, sizeof order);
    sc->rank_off[0] = 0;
    sc->rank_off[1] = 2;
    sc->rank_off[2] = 6;
    sc->fill_hosts[2] = x_hosts;
    return sc;
}

START_TEST(test_fill_runs_in_hosts_communication)
{
    loom_error err = {0};
    double start[6], end[6], busy[2];
    loom_metrics m = LOOM_METRICS_INIT;
    m.start_ms = start;
    m.end_ms = end;
    m.compute_ms = busy;
    /* X: 7 ms of compute in the hosts' 12 ms of collectives, its 2 ms of
     * collectives under their 18 ms of compute: it costs nothing */
    loom_stage_graph *g = fill_graph(9, 2, 0);
    loom_schedule *sc = fill_order(3);
    ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_OK);
    ck_assert_double_eq_tol(start[3], 3, 1e-12); /* H1 waits for X's input */
    ck_assert_double_eq_tol(start[2], 3, 1e-12);
    ck_assert_double_eq_tol(end[2], 33, 1e-12);  /* X ends with its last host */
    ck_assert_double_eq_tol(end[5], 33, 1e-12);
    ck_assert_double_eq_tol(start[1], 34, 1e-12); /* Y: X's end + 1 ms */
    ck_assert_double_eq_tol(m.makespan_ms, 35, 1e-12);
    ck_assert_double_eq_tol(busy[1], 30, 1e-12);
    /* the bound counts rank 1's compute (25 ms) and link (14 ms) apart;
     * without the fill the same order's bound is the ranks' sum, 39 ms */
    ck_assert_double_eq_tol(loom_graph_lower_bound_ms(g, sc), 25, 1e-12);
    ck_assert_double_eq_tol(loom_graph_lower_bound_ms(g, NULL), 39, 1e-12);
    loom_graph_free(g);
    /* X: 18 ms of compute, 6 more than the collectives hold */
    g = fill_graph(20, 2, 0);
    ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_OK);
    ck_assert_double_eq_tol(end[5], 39, 1e-12);
    ck_assert_double_eq_tol(end[2], 39, 1e-12);
    ck_assert_double_eq_tol(busy[1], 36, 1e-12);
    loom_graph_free(g);
    /* X all communication (clamped to its 9 ms), hosted by one 10 ms
     * stage with 6 ms of compute: 3 ms do not fit */
    g = fill_graph(9, 50, 0);
    loom_schedule_free(sc);
    sc = fill_order(1);
    ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_OK);
    ck_assert_double_eq_tol(end[3], 16, 1e-12);
    ck_assert_double_eq_tol(end[2], 16, 1e-12);
    ck_assert_double_eq_tol(end[5], 36, 1e-12);
    /* without comm_ms nothing overlaps: X runs after H1 ends */
    free(g->comm_ms);
    g->comm_ms = NULL;
    ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_OK);
    ck_assert_double_eq_tol(end[2], 22, 1e-12);
    ck_assert_double_eq_tol(end[5], 42, 1e-12);
    loom_schedule_free(sc);
    loom_graph_free(g);
    /* X's 6 ms that the hosts do not hold run while rank 1 waits 9 ms for
     * H2's input (13 to 22): no overflow; 6 of the 10 ms of transfer waits
     * become busy time */
    g = fill_graph(20, 2, 20);
    sc = fill_order(3);
    double part[5][2];
    m.p2p_wait_ms = part[1];
    m.dp_sync_ms = part[2];
    m.optimizer_ms = part[3];
    m.bubble_ms = part[4];
    ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_OK);
    ck_assert_double_eq_tol(start[4], 22, 1e-12);
    ck_assert_double_eq_tol(end[5], 42, 1e-12);
    ck_assert_double_eq_tol(end[2], 42, 1e-12);
    ck_assert_double_eq_tol(m.makespan_ms, 44, 1e-12);
    ck_assert_double_eq_tol(busy[1], 36, 1e-12);
    ck_assert_double_eq_tol(part[1][1], 4, 1e-12);
    ck_assert_double_eq_tol(part[4][1], 4, 1e-12);
    /* without communication figures X's 20 ms run 9 in the wait and 11
     * after H3 */
    free(g->comm_ms);
    g->comm_ms = NULL;
    ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_OK);
    ck_assert_double_eq_tol(start[2], 3, 1e-12);
    ck_assert_double_eq_tol(end[5], 53, 1e-12);
    loom_schedule_free(sc);
    loom_graph_free(g);
}
END_TEST

START_TEST(test_bad_fills)
{
    loom_error err = {0};
    loom_metrics m = LOOM_METRICS_INIT;
    loom_stage_graph *g = fill_graph(9, 2, 0);
    loom_schedule *sc = fill_order(4);
    ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "fills 4 hosts, expected 1..3"));
    loom_schedule_free(sc);
    sc = fill_order(2);
    sc->fill_hosts[4] = 1; /* H2, a host of X, cannot be a fill */
    ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "is a fill itself"));
    loom_schedule_free(sc);
    sc = fill_order(-2);
    ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "fills -2 hosts"));
    loom_schedule_free(sc);
    /* -1 marks a full backward (an I before its W), not a forward */
    sc = fill_order(LOOM_FILL_FULL_BACKWARD);
    ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "is marked a full backward (fill_hosts -1)"));
    loom_schedule_free(sc);
    loom_graph_free(g);
    /* a host that needs its own fill's output can never start */
    loom_graph_builder *b = loom_graph_builder_new(1);
    loom_graph_stage x = {.rank = 0, .kind = LOOM_STAGE_F, .pair = 0, .duration_ms = 1};
    loom_graph_stage h = {.rank = 0, .kind = LOOM_STAGE_F, .pair = 1, .position = 1,
                          .duration_ms = 1};
    loom_graph_builder_add_stage(b, &x);
    loom_graph_builder_add_stage(b, &h);
    loom_graph_builder_add_edge(b, 0, 1, 0);
    ck_assert_int_eq(loom_graph_builder_finish(b, &g, &err), LOOM_OK);
    loom_graph_builder_free(b);
    sc = loom_schedule_new(1, 2);
    sc->order[1] = 1;
    sc->rank_off[1] = 2;
    sc->fill_hosts[0] = 1;
    ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_EDEADLOCK);
    ck_assert_ptr_nonnull(strstr(err.message, "rank 0 blocked at"));
    loom_schedule_free(sc);
    loom_graph_free(g);
}
END_TEST

/* Random fills on 1F1B orders of random stage-times problems, with random
 * exposed communication: whenever the order runs (a host waiting on its
 * own fill deadlocks), every stage starts after its inputs, a rank's
 * ordinary stages never overlap, a fill starts no earlier than the stage
 * before it ends and ends with its last host, no sooner than its own
 * duration, the breakdown adds up, and the makespan is not below the
 * bound. */
START_TEST(test_random_fills_keep_invariants)
{
    uint64_t st = 11;
    int ran = 0;
    for (int trial = 0; trial < 300; trial++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        int P = 1 + (int)((st >> 33) % 4), M = 1 + (int)((st >> 40) % 6);
        loom_stage_times t = uniform(P, M, 1, 1 + (double)((st >> 45) % 3),
                                     2 + (double)((st >> 50) % 3));
        loom_stage_graph *g = NULL;
        loom_error err = {0};
        ck_assert_int_eq(loom_graph_from_stage_times(&t, 0, &g, &err), LOOM_OK);
        g->comm_ms = calloc((size_t)g->n_stages, sizeof(double));
        loom_schedule *sc = one_f_one_b(P, M);
        for (int32_t v = 0; v < g->n_stages; v++) {
            st = st * 6364136223846793005ull + 1442695040888963407ull;
            g->comm_ms[v] = g->duration_ms[v] * (double)((st >> 40) % 100) / 100.0;
        }
        for (int32_t r = 0; r < P; r++)
            for (int32_t i = sc->rank_off[r]; i < sc->rank_off[r + 1]; i++) {
                st = st * 6364136223846793005ull + 1442695040888963407ull;
                int32_t room = sc->rank_off[r + 1] - i - 1;
                if (room > 0 && (st >> 60) < 4) { /* a quarter of the stages */
                    int32_t k = 1 + (int32_t)((st >> 33) % (uint64_t)(room < 3 ? room : 3));
                    sc->fill_hosts[sc->order[i]] = k;
                    i += k;
                }
            }
        double start[512], end[512], part[5][4];
        ck_assert_int_le(g->n_stages, 512);
        loom_metrics m = LOOM_METRICS_INIT;
        m.start_ms = start;
        m.end_ms = end;
        m.compute_ms = part[0];
        m.p2p_wait_ms = part[1];
        m.dp_sync_ms = part[2];
        m.optimizer_ms = part[3];
        m.bubble_ms = part[4];
        int rc = loom_simulate(g, sc, &m, &err);
        ck_assert_msg(rc == LOOM_OK || rc == LOOM_EDEADLOCK, "%s", err.message);
        if (rc == LOOM_OK) {
            ran++;
            double tol = 1e-9 * (m.makespan_ms > 1 ? m.makespan_ms : 1);
            for (int32_t v = 0; v < g->n_stages; v++)
                for (int32_t e = g->pred_off[v]; e < g->pred_off[v + 1]; e++)
                    ck_assert_double_ge(start[v] + tol, end[g->pred[e]] + g->pred_p2p_ms[e]);
            for (int32_t r = 0; r < P; r++) {
                double free_at = 0;
                for (int32_t i = sc->rank_off[r]; i < sc->rank_off[r + 1]; i++) {
                    int32_t v = sc->order[i], k = sc->fill_hosts[v];
                    if (k > 0) {
                        ck_assert_double_le(start[v], start[sc->order[i + 1]]);
                        ck_assert_double_ge(start[v] + tol, free_at); /* idle time only */
                        ck_assert_double_eq(end[v], end[sc->order[i + k]]);
                        ck_assert_double_ge(end[v] - start[v] + tol, g->duration_ms[v]);
                        continue;
                    }
                    ck_assert_double_ge(start[v] + tol, free_at);
                    free_at = end[v];
                }
            }
            ck_assert_double_ge(m.makespan_ms + tol, loom_graph_lower_bound_ms(g, sc));
            for (int32_t r = 0; r < P; r++) {
                double sum = 0;
                for (int k = 0; k < 5; k++) {
                    ck_assert_double_ge(part[k][r], -tol);
                    sum += part[k][r];
                }
                ck_assert_double_eq_tol(sum, m.makespan_ms, 1e-9 * m.makespan_ms + 1e-9);
            }
        }
        loom_schedule_free(sc);
        loom_graph_free(g);
    }
    ck_assert_int_gt(ran, 50);
}
END_TEST

START_TEST(test_alpa_formula)
{
    /* Uniform microbatches, stage times t_i = F_i + B_i: 1F1B latency is
     * sum t_i + (M - 1) * max t_i when the slowest stage is last. */
    loom_stage_times st = uniform(4, 6, 1, 1, 2);
    double f[4] = {1, 2, 1.5, 3};
    for (int i = 0; i < 4; i++) {
        fwd[i] = f[i];
        bwd[i] = 2 * f[i];
    }
    loom_stage_graph *g = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_graph_from_stage_times(&st, 0, &g, &err), LOOM_OK);
    loom_schedule *sc = one_f_one_b(4, 6);
    loom_metrics m = LOOM_METRICS_INIT;
    ck_assert_int_eq(loom_simulate(g, sc, &m, &err), LOOM_OK);
    double sum = 0, mx = 0;
    for (int i = 0; i < 4; i++) {
        sum += 3 * f[i];
        mx = 3 * f[i] > mx ? 3 * f[i] : mx;
    }
    ck_assert_double_eq_tol(m.makespan_ms, sum + 5 * mx, 1e-9);
    loom_schedule_free(sc);
    loom_graph_free(g);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("simulator");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_1f1b_closed_form);
    tcase_add_test(tc, test_p2p_and_scale);
    tcase_add_test(tc, test_iteration_tail);
    tcase_add_test(tc, test_busy_rank_has_no_negative_bubble);
    tcase_add_test(tc, test_sync_shares_follow_parameters);
    tcase_add_test(tc, test_parameter_prefetch);
    tcase_add_test(tc, test_prefetch_runs_one_chunk_ahead);
    tcase_add_test(tc, test_deadlock_names_stages);
    tcase_add_test(tc, test_invalid_schedules);
    tcase_add_test(tc, test_alpa_formula);
    tcase_add_test(tc, test_fill_runs_in_hosts_communication);
    tcase_add_test(tc, test_lower_bound_is_the_longest_chain);
    tcase_add_test(tc, test_bad_fills);
    tcase_add_test(tc, test_random_fills_keep_invariants);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(suite());
}
