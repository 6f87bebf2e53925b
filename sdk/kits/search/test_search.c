/* test_search.c - the search kit (<loom/kits/search.h>) on its own:
 * group precedence in both directions with its topological order, the
 * reference order, orders <-> priorities (exact values), precedence
 * errors, local moves that keep orders valid and reach every valid order,
 * uniformly drawn random orders, and batches settled in job order. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <loom/kits/search.h>
#include <loom/mock_search.h>

/* Five groups: 3 before 0 before 1, 4 before 2, as bare precedence rows
 * (the kit reads n_groups, group_pred_off and group_pred only). */
static int32_t hand_off[6] = {0, 1, 2, 3, 3, 3};
static int32_t hand_pred[3] = {3, 0, 4};

static loom_stage_graph hand_graph(void)
{
    loom_stage_graph g;
    memset(&g, 0, sizeof g);
    g.n_groups = 5;
    g.group_pred_off = hand_off;
    g.group_pred = hand_pred;
    return g;
}

START_TEST(precedence_and_orders_by_hand)
{
    loom_mock_host *h = loom_mock_host_new();
    const loom_host_api *api = loom_mock_host_api(h);
    loom_stage_graph g = hand_graph();
    loom_sk_prec pc;
    loom_error err = {0};
    ck_assert_int_eq(loom_sk_prec_build(api, "t", &g, &pc, &err), LOOM_OK);
    ck_assert_int_eq(pc.n, 5);
    ck_assert_int_eq(pc.n_edges, 3);
    /* successors: 0 -> 1, 3 -> 0, 4 -> 2 */
    static const int32_t succ_off[6] = {0, 1, 1, 1, 2, 3};
    static const int32_t succ[3] = {1, 0, 2};
    ck_assert_mem_eq(pc.succ_off, succ_off, sizeof succ_off);
    ck_assert_mem_eq(pc.succ, succ, sizeof succ);
    /* Kahn: sources 3, 4, then 0, 2, then 1 */
    static const int32_t topo[5] = {3, 4, 0, 2, 1};
    ck_assert_mem_eq(pc.topo, topo, sizeof topo);

    /* the reference order: the lowest-index group whose predecessors are
     * placed, again and again */
    int32_t left[5], order[5];
    loom_sk_first_order(&pc, left, order);
    static const int32_t first[5] = {3, 0, 1, 4, 2};
    ck_assert_mem_eq(order, first, sizeof first);

    /* slot k gets priority n - k, and back */
    float prio[5];
    loom_sk_order_to_prio(order, 5, prio);
    static const float want_prio[5] = {4, 3, 1, 5, 2};
    ck_assert_mem_eq(prio, want_prio, sizeof want_prio);
    ck_assert_int_eq(loom_sk_prio_valid(&pc, prio), 1);
    int32_t back[5];
    loom_sk_prio_to_order(prio, 5, back);
    ck_assert_mem_eq(back, first, sizeof first);

    /* 2 above its predecessor 4 is invalid, and so is a tie */
    float bad[5] = {4, 3, 3, 5, 2};
    ck_assert_int_eq(loom_sk_prio_valid(&pc, bad), 0);
    bad[2] = 2;
    ck_assert_int_eq(loom_sk_prio_valid(&pc, bad), 0);

    /* ties go to the lower group */
    const float tied[4] = {1, 2, 2, 1};
    int32_t tord[4];
    loom_sk_prio_to_order(tied, 4, tord);
    static const int32_t want_tord[4] = {1, 2, 0, 3};
    ck_assert_mem_eq(tord, want_tord, sizeof want_tord);

    loom_sk_prec_free(api, &pc);
    ck_assert_ptr_null(pc.topo);
    loom_mock_host_free(h);
}
END_TEST

START_TEST(last_batch_cut_to_the_waves_that_fit)
{
    loom_mock_host *h = loom_mock_host_new();
    loom_sk sk;
    memset(&sk, 0, sizeof sk);
    sk.host = loom_mock_host_api(h);
    sk.n_workers = 2;
    /* 8 jobs on 2 workers are 4 waves: 90 ms a batch is 22.5 ms a wave */
    ck_assert_double_eq(loom_sk_wave_ms(&sk, 90, 8), 22.5);
    ck_assert_double_eq(loom_sk_wave_ms(&sk, 90, 7), 22.5);
    ck_assert_double_eq(loom_sk_wave_ms(&sk, 90, 0), 0);
    /* no wave time yet: only max_evaluations bounds the batch */
    ck_assert(loom_sk_batch_room(&sk, 0) == INT64_MAX);
    sk.prm.max_evaluations = 50;
    sk.evaluations = 45;
    ck_assert(loom_sk_batch_room(&sk, 0) == 5);
    /* 100 ms left (less the time this test takes) at 30 ms a wave: 3
     * whole waves of 2 jobs; max_evaluations still caps it */
    sk.prm.max_evaluations = 0;
    sk.deadline_ms = sk.host->now_ms() + 100;
    ck_assert(loom_sk_batch_room(&sk, 30) == 6);
    sk.prm.max_evaluations = 50;
    ck_assert(loom_sk_batch_room(&sk, 30) == 5);
    /* past the deadline, at least one wave (the caller's stop test said go) */
    sk.prm.max_evaluations = 0;
    sk.deadline_ms = sk.host->now_ms() - 1;
    ck_assert(loom_sk_batch_room(&sk, 30) == 2);
    loom_mock_host_free(h);
}
END_TEST

/* Four groups of one F and one B stage each: (f, b) = (3, 1), (1, 4),
 * (2, 5), (4, 2); flows 1, 1, 0, 0; microbatches 0, 1, 1, 0, so
 * microbatch 1 (5 + 7 = 12) outweighs microbatch 0 (4 + 6 = 10). */
static int32_t seed_group[8] = {0, 0, 1, 1, 2, 2, 3, 3};
static uint8_t seed_kind[8] = {LOOM_STAGE_F, LOOM_STAGE_B, LOOM_STAGE_F, LOOM_STAGE_B,
                               LOOM_STAGE_F, LOOM_STAGE_B, LOOM_STAGE_F, LOOM_STAGE_B};
static double seed_ms[8] = {3, 1, 1, 4, 2, 5, 4, 2};
static int32_t seed_flow[4] = {1, 1, 0, 0};
static int32_t seed_mb[4] = {0, 1, 1, 0};
static int32_t seed_off[5] = {0, 0, 0, 0, 0};
static int32_t seed_pred[1] = {2};

static loom_stage_graph seed_graph(void)
{
    loom_stage_graph g;
    memset(&g, 0, sizeof g);
    g.n_stages = 8;
    g.n_groups = 4;
    g.n_microbatches = 2;
    g.group = seed_group;
    g.kind = seed_kind;
    g.duration_ms = seed_ms;
    g.group_flow = seed_flow;
    g.group_microbatch = seed_mb;
    g.group_pred_off = seed_off;
    g.group_pred = seed_pred;
    return g;
}

/* Builds g's precedence and group work, asserting both succeed. */
static void open_work(const loom_host_api *api, const loom_stage_graph *g, loom_sk_prec *pc,
                      loom_sk_group_work *w)
{
    loom_error err = {0};
    ck_assert_int_eq(loom_sk_prec_build(api, "t", g, pc, &err), LOOM_OK);
    ck_assert_int_eq(loom_sk_group_work_build(api, "t", g, w, &err), LOOM_OK);
}

/* Each seed order on the worked example above: Johnson's rule with the
 * backward first (S. M. Johnson, 1954), by total work, by microbatch
 * work; the three shares of the heaviest microbatches are all one of
 * two microbatches here. Then with group 2 before group 0. */
START_TEST(seed_orders_by_hand)
{
    loom_mock_host *h = loom_mock_host_new();
    const loom_host_api *api = loom_mock_host_api(h);
    loom_stage_graph g = seed_graph();
    loom_sk_prec pc;
    loom_sk_group_work w;
    loom_error err = {0};
    open_work(api, &g, &pc, &w);
    static const double fwd[4] = {3, 1, 2, 4}, bwd[4] = {1, 4, 5, 2};
    static const int32_t unit_rank[4] = {1, 0, 0, 1};
    ck_assert_mem_eq(w.forward_ms, fwd, sizeof fwd);
    ck_assert_mem_eq(w.backward_ms, bwd, sizeof bwd);
    ck_assert_mem_eq(w.unit_rank, unit_rank, sizeof unit_rank);
    ck_assert_int_eq(w.n_units, 2);
    static const int32_t want[LOOM_SK_SEED_ORDERS][4] = {
        {0, 3, 2, 1}, /* b <= f by b (1, 2), then by f descending (2, 1) */
        {2, 3, 1, 0}, /* heaviest first: 7, 6, 5, 4 */
        {1, 2, 0, 3}, /* microbatch 1, then 0, each in group order */
        {1, 2, 0, 3}, /* ceil(2 / 16) = 1 microbatch first, then the reference */
        {1, 2, 0, 3}, /* ceil(2 / 8) = 1 */
        {1, 2, 0, 3}, /* ceil(2 / 4) = 1 */
    };
    int32_t scratch[8], order[4];
    for (int32_t k = 0; k < LOOM_SK_SEED_ORDERS; k++) {
        loom_sk_seed_order(&pc, &w, k, scratch, order);
        ck_assert_msg(!memcmp(order, want[k], sizeof order), "seed order %d: %d %d %d %d", k,
                      order[0], order[1], order[2], order[3]);
    }
    loom_sk_prec_free(api, &pc);

    /* group 2 before group 0: Johnson's rule waits for 2 to place 0 */
    int32_t off[5] = {0, 1, 1, 1, 1};
    g.group_pred_off = off;
    ck_assert_int_eq(loom_sk_prec_build(api, "t", &g, &pc, &err), LOOM_OK);
    loom_sk_seed_order(&pc, &w, 0, scratch, order);
    static const int32_t held[4] = {3, 2, 0, 1};
    ck_assert_mem_eq(order, held, sizeof held);
    loom_sk_prec_free(api, &pc);
    loom_sk_group_work_free(api, &w);
    loom_mock_host_free(h);
}
END_TEST

/* Nine groups of one F stage each, their own microbatches (the graph
 * names none), of work 1, 9, 2, 8, 3, 7, 4, 6, 5. */
static int32_t share_group[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
static uint8_t share_kind[9] = {LOOM_STAGE_F, LOOM_STAGE_F, LOOM_STAGE_F, LOOM_STAGE_F,
                                LOOM_STAGE_F, LOOM_STAGE_F, LOOM_STAGE_F, LOOM_STAGE_F,
                                LOOM_STAGE_F};
static double share_ms[9] = {1, 9, 2, 8, 3, 7, 4, 6, 5};
static int32_t share_off[10] = {0};

static loom_stage_graph share_graph(void)
{
    loom_stage_graph g;
    memset(&g, 0, sizeof g);
    g.n_stages = 9;
    g.n_groups = 9;
    g.group = share_group;
    g.kind = share_kind;
    g.duration_ms = share_ms;
    g.group_pred_off = share_off;
    return g;
}

/* The heaviest microbatch first, then the heaviest ceil(9 / 16) = 1,
 * ceil(9 / 8) = 2 and ceil(9 / 4) = 3 first with the rest in the
 * reference order. */
START_TEST(seed_orders_by_microbatch_share)
{
    loom_mock_host *h = loom_mock_host_new();
    const loom_host_api *api = loom_mock_host_api(h);
    loom_stage_graph g = share_graph();
    loom_sk_prec pc;
    loom_sk_group_work w;
    open_work(api, &g, &pc, &w);
    ck_assert_int_eq(w.n_units, 9);
    static const int32_t want[4][9] = {
        {1, 3, 5, 7, 8, 6, 4, 2, 0},
        {1, 0, 2, 3, 4, 5, 6, 7, 8},
        {1, 3, 0, 2, 4, 5, 6, 7, 8},
        {1, 3, 5, 0, 2, 4, 6, 7, 8},
    };
    int32_t scratch[18], order[9];
    for (int32_t k = 2; k < LOOM_SK_SEED_ORDERS; k++) {
        loom_sk_seed_order(&pc, &w, k, scratch, order);
        ck_assert_msg(!memcmp(order, want[k - 2], sizeof order), "seed order %d: %d %d %d ...",
                      k, order[0], order[1], order[2]);
    }
    loom_sk_prec_free(api, &pc);
    loom_sk_group_work_free(api, &w);
    loom_mock_host_free(h);
}
END_TEST

/* A stub evaluator service: counts its runs; the makespan is the first
 * group's slot (priorities are n - slot), so an order with group 0 later
 * scores worse. */
static int stub_runs;

static int stub_run(loom_evaluator *ev, const float *prio, loom_metrics *out, loom_error *err)
{
    (void)ev;
    (void)err;
    stub_runs++;
    out->makespan_ms = 100 - prio[0];
    return LOOM_OK;
}

static const loom_evaluator_service stub_service = {
    sizeof(loom_evaluator_service), 1, NULL, stub_run, NULL, NULL, NULL};

/* On share_graph the six seed orders hold four distinct ones that differ
 * from the reference (Johnson's rule is the reference there, heaviest
 * first and heaviest microbatch first coincide). Without a timed
 * screening run all four are evaluated; with a screening run of 400 ms
 * and about 1000 ms left, only the two whole waves of one worker that
 * fit; past the deadline, none. */
START_TEST(seed_orders_fit_the_deadline)
{
    loom_mock_host *h = loom_mock_host_new();
    loom_stage_graph g = share_graph();
    loom_sk sk;
    memset(&sk, 0, sizeof sk);
    sk.host = loom_mock_host_api(h);
    sk.ctx = loom_mock_host_ctx(h);
    sk.who = "t";
    sk.svc = &stub_service;
    sk.graph = &g;
    sk.n_groups = 9;
    sk.n_workers = 1;
    static int token;
    sk.ev[0] = (loom_evaluator *)&token;
    float work[9], best[9];
    int32_t ref[9], left[9];
    sk.work_prio = work;
    sk.best_prio = best;
    sk.ref_order = ref;
    loom_error err = {0};
    ck_assert_int_eq(loom_sk_prec_build(sk.host, "t", &g, &sk.prec, &err), LOOM_OK);
    loom_sk_first_order(&sk.prec, left, ref);
    static const double screen_ms[3] = {0, 400, 400}, left_ms[3] = {1e9, 1000, -1};
    static const int runs[3] = {4, 2, 0};
    for (int i = 0; i < 3; i++) {
        sk.screen_ms = screen_ms[i];
        sk.deadline_ms = left_ms[i] >= 1e9 ? HUGE_VAL : sk.host->now_ms() + left_ms[i];
        sk.evaluations = 0;
        stub_runs = 0;
        ck_assert_int_eq(loom_sk_try_seed_orders(&sk, &err), LOOM_OK);
        ck_assert_int_eq(stub_runs, runs[i]);
        ck_assert_int_eq(sk.evaluations, runs[i]);
    }
    loom_sk_prec_free(sk.host, &sk.prec);
    loom_mock_host_free(h);
}
END_TEST

/* budget_iterations: the deadline is that many reference iterations
 * after the start, unless budget_ms ends the search first or the
 * reference is infeasible. */
START_TEST(iteration_budget_deadline)
{
    ck_assert_double_eq(loom_sk_iteration_deadline(100, 1100, 0.5, 600), 400);
    ck_assert_double_eq(loom_sk_iteration_deadline(100, 1100, 1, 600), 700);
    ck_assert_double_eq(loom_sk_iteration_deadline(100, 1100, 2, 600), 1100); /* budget_ms */
    ck_assert_double_eq(loom_sk_iteration_deadline(100, 1100, 0, 600), 1100); /* off */
    ck_assert_double_eq(loom_sk_iteration_deadline(100, 1100, 1, 0), 1100);   /* infeasible */
}
END_TEST

/* The evaluations a search can afford: the time left over the screening
 * run, on every worker; unbounded without a timing or a deadline. */
START_TEST(affordable_evaluations)
{
    loom_mock_host *h = loom_mock_host_new();
    loom_sk sk;
    memset(&sk, 0, sizeof sk);
    sk.host = loom_mock_host_api(h);
    sk.n_workers = 2;
    sk.deadline_ms = sk.host->now_ms() + 1000;
    ck_assert(loom_sk_evals_affordable(&sk) == INT64_MAX); /* no screening run timed */
    sk.screen_ms = 100;
    /* a little under 1000 ms left (this test's own time): 9 waves of 2 */
    ck_assert(loom_sk_evals_affordable(&sk) == 19);
    sk.deadline_ms = sk.host->now_ms() - 1;
    ck_assert(loom_sk_evals_affordable(&sk) == 0);
    sk.deadline_ms = HUGE_VAL; /* no budget */
    ck_assert(loom_sk_evals_affordable(&sk) == INT64_MAX);
    loom_mock_host_free(h);
}
END_TEST

START_TEST(precedence_errors_name_the_group)
{
    loom_mock_host *h = loom_mock_host_new();
    const loom_host_api *api = loom_mock_host_api(h);
    loom_sk_prec pc;
    loom_error err = {0};
    loom_stage_graph g;
    memset(&g, 0, sizeof g);
    g.n_groups = 3;
    int32_t off[4] = {0, 1, 2, 2};
    int32_t cyc[2] = {1, 0}; /* 1 before 0 and 0 before 1 */
    g.group_pred_off = off;
    g.group_pred = cyc;
    ck_assert_int_eq(loom_sk_prec_build(api, "t", &g, &pc, &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "t: group precedence has a cycle through group 0");
    int32_t self[2] = {0, 0}; /* group 0 after itself */
    g.group_pred = self;
    ck_assert_int_eq(loom_sk_prec_build(api, "t", &g, &pc, &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "t: group 0 must follow group 0, expected a "
                                  "group in 0..2 other than itself");
    g.group_pred = NULL;
    ck_assert_int_eq(loom_sk_prec_build(api, "t", &g, &pc, &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "t: the graph declares 2 group precedence "
                                  "edges but no group_pred array");
    /* no precedence at all: every order is valid, the reference is 0..n-1 */
    g.group_pred_off = NULL;
    ck_assert_int_eq(loom_sk_prec_build(api, "t", &g, &pc, &err), LOOM_OK);
    int32_t left[3], order[3];
    loom_sk_first_order(&pc, left, order);
    static const int32_t ident[3] = {0, 1, 2};
    ck_assert_mem_eq(order, ident, sizeof ident);
    loom_sk_prec_free(api, &pc);
    loom_mock_host_free(h);
}
END_TEST

START_TEST(job_seeds_and_draws)
{
    /* one stream per job: reproducible, distinct per index */
    ck_assert_uint_eq(loom_sk_job_seed(7, 3), loom_sk_job_seed(7, 3));
    ck_assert_uint_ne(loom_sk_job_seed(7, 3), loom_sk_job_seed(7, 4));
    ck_assert_uint_ne(loom_sk_job_seed(7, 3), loom_sk_job_seed(8, 3));
    uint64_t a = 11, b = 11;
    int seen[5] = {0};
    for (int i = 0; i < 1000; i++) {
        uint32_t x = loom_sk_below(&a, 5);
        ck_assert_uint_lt(x, 5);
        ck_assert_uint_eq(x, loom_sk_below(&b, 5));
        seen[x] = 1;
        ck_assert_uint_eq(loom_sk_below(&a, 1), 0);
        (void)loom_sk_below(&b, 1);
    }
    for (int k = 0; k < 5; k++)
        ck_assert(seen[k]);
}
END_TEST

static loom_mock_host *five_host;

/* Five groups, 0 before 1 before 2 (a chain), 3 before 4: the graph, and
 * its precedence in *pc, built through a new mock host in five_host. */
static loom_stage_graph *five_groups(loom_sk_prec *pc)
{
    loom_stage_graph *g = mock_graph(2, 5);
    static const int pairs[] = {0, 1, 1, 2, 3, 4};
    mock_precede(g, pairs, 3);
    five_host = loom_mock_host_new();
    loom_error err = {0};
    ck_assert_int_eq(loom_sk_prec_build(loom_mock_host_api(five_host), "t", g, pc, &err),
                     LOOM_OK);
    return g;
}

/* The moves a polish job may make: 3 up to 255 groups, then n / 64. */
START_TEST(max_moves_by_order_length)
{
    static const int32_t n[] = {0, 2, 64, 255, 256, 319, 320, 512, 4096};
    static const int32_t want[] = {3, 3, 3, 3, 4, 4, 5, 8, 64};
    for (size_t i = 0; i < sizeof n / sizeof n[0]; i++)
        ck_assert_int_eq(loom_sk_max_moves(n[i]), want[i]);
}
END_TEST

START_TEST(polish_moves_keep_orders_valid)
{
    /* Same precedence as above: 0 < 1 < 2 (chain), 3 < 4. Every order a
     * move can reach is valid, the moves reach every valid order (10 of
     * them: choose the slots of 3 and 4 among 5), the same seed moves the
     * same way, and prio_to_order inverts order_to_prio. */
    loom_sk_prec pc;
    loom_stage_graph *g = five_groups(&pc);
    loom_mock_host *h = five_host;
    const loom_host_api *api = loom_mock_host_api(h);
    int32_t seen[1 << 10] = {0}, distinct = 0;
    for (int i = 0; i < 4000; i++) {
        int32_t order[5] = {0, 1, 2, 3, 4}, scratch[15];
        uint64_t rng = (uint64_t)i;
        loom_sk_mutate_order(&pc, &rng, order, scratch, 1 + i % 3);
        float prio[5];
        loom_sk_order_to_prio(order, 5, prio);
        ck_assert(loom_sk_prio_valid(&pc, prio));
        int32_t back[5];
        loom_sk_prio_to_order(prio, 5, back);
        ck_assert_mem_eq(back, order, sizeof order);
        int32_t again[5] = {0, 1, 2, 3, 4};
        rng = (uint64_t)i;
        loom_sk_mutate_order(&pc, &rng, again, scratch, 1 + i % 3);
        ck_assert_mem_eq(again, order, sizeof order);
        int key = 0;
        for (int k = 0; k < 5; k++)
            key = key * 4 + (order[k] == 3 ? 1 : order[k] == 4 ? 2 : 0);
        if (!seen[key]++)
            distinct++;
    }
    ck_assert_int_eq(distinct, 10);
    loom_sk_prec_free(api, &pc);
    loom_mock_host_free(h);
    loom_graph_free(g);
}
END_TEST

START_TEST(moves_carry_neighbours_along)
{
    /* Groups 0 before 1 and 2 before 3, from the order 0 1 2 3. One
     * insertion between neighbours cannot reach 2 3 0 1 (two groups must
     * pass two others); a dragging insertion or a shift of a group with its
     * neighbour does, in one move. */
    loom_stage_graph *g = mock_graph(2, 4);
    static const int pairs[] = {0, 1, 2, 3};
    mock_precede(g, pairs, 2);
    loom_mock_host *h = loom_mock_host_new();
    const loom_host_api *api = loom_mock_host_api(h);
    loom_sk_prec pc;
    loom_error err = {0};
    ck_assert_int_eq(loom_sk_prec_build(api, "t", g, &pc, &err), LOOM_OK);
    int reached = 0;
    for (int i = 0; i < 2000 && !reached; i++) {
        int32_t order[4] = {0, 1, 2, 3}, scratch[12];
        uint64_t rng = (uint64_t)i;
        loom_sk_mutate_order(&pc, &rng, order, scratch, 1);
        reached = order[0] == 2 && order[1] == 3 && order[2] == 0 && order[3] == 1;
    }
    ck_assert(reached);
    loom_sk_prec_free(api, &pc);
    loom_mock_host_free(h);
    loom_graph_free(g);
}
END_TEST

START_TEST(moves_keep_random_dags_valid)
{
    /* Random precedence over 16 groups (the mock graph's most; edges from
     * lower to higher index, chains up to 16 deep, fan-in and fan-out):
     * every move of every kind leaves a valid permutation, and the same
     * seed moves the same way. */
    for (int trial = 0; trial < 30; trial++) {
        uint64_t r = 0x1234 + (uint64_t)trial;
        int pairs[2 * 48], m = 0;
        for (int k = 0; k < 48; k++) {
            int a = (int)loom_sk_below(&r, 16), b = (int)loom_sk_below(&r, 16);
            if (a == b)
                continue;
            pairs[2 * m] = a < b ? a : b;
            pairs[2 * m + 1] = a < b ? b : a;
            m++;
        }
        loom_stage_graph *g = mock_graph(2, 16);
        mock_precede(g, pairs, m);
        loom_mock_host *h = loom_mock_host_new();
        const loom_host_api *api = loom_mock_host_api(h);
        loom_sk_prec pc;
        loom_error err = {0};
        ck_assert_int_eq(loom_sk_prec_build(api, "t", g, &pc, &err), LOOM_OK);
        int32_t order[16], again[16], scratch[48];
        for (int k = 0; k < 16; k++)
            order[k] = pc.topo[k];
        for (int i = 0; i < 300; i++) {
            memcpy(again, order, sizeof order);
            uint64_t a = (uint64_t)i * 7919u + (uint64_t)trial, b = a;
            loom_sk_mutate_order(&pc, &a, order, scratch, 1 + i % 3);
            loom_sk_mutate_order(&pc, &b, again, scratch, 1 + i % 3);
            ck_assert_mem_eq(again, order, sizeof order);
            int seen[16] = {0};
            for (int k = 0; k < 16; k++) {
                ck_assert_int_ge(order[k], 0);
                ck_assert_int_lt(order[k], 16);
                ck_assert_int_eq(seen[order[k]]++, 0);
            }
            float prio[16];
            loom_sk_order_to_prio(order, 16, prio);
            ck_assert(loom_sk_prio_valid(&pc, prio));
        }
        loom_sk_prec_free(api, &pc);
        loom_mock_host_free(h);
        loom_graph_free(g);
    }
}
END_TEST

/* A job for ordered_jobs_settle_in_order: job j sleeps a little when j is
 * even (so later jobs finish first on several workers) and fails when it
 * is `fail`. */
typedef struct ordered_probe {
    int32_t fail;
    int32_t settled[64];
    int32_t n_settled;
    int32_t ran[64];
} ordered_probe;

static int probe_job(void *user, int32_t worker, int32_t job, loom_error *err)
{
    (void)worker;
    ordered_probe *o = user;
    if (job % 2 == 0) {
        volatile double x = 0;
        for (int i = 0; i < 200000; i++)
            x += i;
    }
    __atomic_add_fetch(&o->ran[job], 1, __ATOMIC_RELAXED);
    if (job == o->fail) {
        snprintf(err->message, sizeof err->message, "job %d failed", job);
        return err->code = LOOM_EINVAL;
    }
    return LOOM_OK;
}

static void probe_settle(void *user, int32_t job)
{
    ordered_probe *o = user;
    o->settled[o->n_settled++] = job;
}

/* loom_sk_run_ordered settles every job once, in job order, on 1 to 4
 * workers; a failing job is not settled, nor any after it, and its error
 * is returned. */
START_TEST(ordered_jobs_settle_in_order)
{
    loom_mock_host *h = loom_mock_host_new();
    for (int32_t workers = 1; workers <= 4; workers++) {
        for (int32_t fail = -1; fail <= 20; fail += 7) {
            loom_sk sk;
            memset(&sk, 0, sizeof sk);
            sk.host = loom_mock_host_api(h);
            sk.who = "probe";
            sk.n_workers = workers;
            loom_error err = {0, ""};
            ck_assert_int_eq(loom_sk_pool_start(&sk, &err), LOOM_OK);
            ordered_probe o;
            memset(&o, 0, sizeof o);
            o.fail = fail;
            int rc = loom_sk_run_ordered(&sk, 40, probe_job, probe_settle, &o, &err);
            loom_sk_pool_stop(&sk);
            int32_t expect = fail < 0 ? 40 : fail;
            ck_assert_int_eq(rc, fail < 0 ? LOOM_OK : LOOM_EINVAL);
            if (fail >= 0)
                ck_assert_msg(strstr(err.message, "failed"), "%s", err.message);
            ck_assert_int_eq(o.n_settled, expect);
            for (int32_t j = 0; j < expect; j++) {
                ck_assert_int_eq(o.settled[j], j);
                ck_assert_int_eq(o.ran[j], 1);
            }
        }
    }
    loom_mock_host_free(h);
}
END_TEST

START_TEST(draws_are_uniform_per_slot)
{
    /* Three groups, group 0 before group 1: the valid slot sequences are
     * 201, 021 and 012. Slot 0 draws 0 or 2 with 1/2 each; after 0, slot 1
     * draws 1 or 2 with 1/2 each: 201 half the time, 021 and 012 a quarter
     * each. Checked through the kit's draw directly. */
    loom_stage_graph *g = mock_graph(2, 3);
    static const int pairs[] = {0, 1};
    mock_precede(g, pairs, 1);
    loom_mock_host *h = loom_mock_host_new();
    loom_sk_prec pc;
    loom_error err = {0};
    ck_assert_int_eq(loom_sk_prec_build(loom_mock_host_api(h), "t", g, &pc, &err),
                     LOOM_OK);
    int counts[3] = {0}; /* 201, 021, 012 */
    int32_t left[3], avail[3], order[3];
    uint64_t rng = 5;
    for (int i = 0; i < 30000; i++) {
        loom_sk_random_order(&pc, &rng, left, avail, order);
        int code = order[0] * 100 + order[1] * 10 + order[2];
        ck_assert(code == 201 || code == 21 || code == 12);
        counts[code == 201 ? 0 : code == 21 ? 1 : 2]++;
    }
    static const int want[3] = {15000, 7500, 7500};
    for (int k = 0; k < 3; k++)
        ck_assert_msg(counts[k] > want[k] - 600 && counts[k] < want[k] + 600,
                      "order %d drawn %d times, expected about %d", k,
                      counts[k], want[k]);
    loom_sk_prec_free(loom_mock_host_api(h), &pc);
    loom_mock_host_free(h);
    loom_graph_free(g);
}
END_TEST

/* The suite: every test in one case. */
static Suite *suite(void)
{
    Suite *s = suite_create("kit-search");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, precedence_and_orders_by_hand);
    tcase_add_test(tc, last_batch_cut_to_the_waves_that_fit);
    tcase_add_test(tc, precedence_errors_name_the_group);
    tcase_add_test(tc, seed_orders_by_hand);
    tcase_add_test(tc, seed_orders_by_microbatch_share);
    tcase_add_test(tc, seed_orders_fit_the_deadline);
    tcase_add_test(tc, max_moves_by_order_length);
    tcase_add_test(tc, affordable_evaluations);
    tcase_add_test(tc, iteration_budget_deadline);
    tcase_add_test(tc, job_seeds_and_draws);
    tcase_add_test(tc, polish_moves_keep_orders_valid);
    tcase_add_test(tc, moves_carry_neighbours_along);
    tcase_add_test(tc, moves_keep_random_dags_valid);
    tcase_add_test(tc, draws_are_uniform_per_slot);
    tcase_add_test(tc, ordered_jobs_settle_in_order);
    suite_add_tcase(s, tc);
    return s;
}

/* Runs the suite. */
int main(void)
{
    return loom_test_main(suite());
}
