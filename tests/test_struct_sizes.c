/* test_struct_sizes.c - the size-prefixed structs a plugin hands the host
 * to fill or read (loom_metrics, loom_schedule, loom_shape,
 * loom_layer_cost): a struct_size below the v1 size is rejected with
 * LOOM_EABI naming expected and found sizes, the normal path works, and a
 * caller's struct larger than the host's keeps its unknown tail. */
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "engine_api.h"
#include "pipeline.h"
#include <loom/sys/problem.h>
#include <loom/sys/session.h>
#include "run_priv.h"

/* Asserts that `text` contains `frag`. */
static void has(const char *text, const char *frag)
{
    ck_assert_msg(strstr(text, frag) != NULL, "missing \"%s\" in: %s", frag, text);
}

static double fwd[4] = {1, 1, 1, 1}, bwd[4] = {2, 2, 2, 2}, act[4] = {1, 1, 1, 1};

/* GPipe on a 4-rank, 4-microbatch stage-times graph: makespan 7 * 3. */
static void gpipe_graph(loom_stage_graph **g, loom_schedule **sc)
{
    loom_stage_times st;
    memset(&st, 0, sizeof st);
    st.ranks = 4;
    st.microbatches = 4;
    st.virtual_stages = 1;
    st.forward_ms = fwd;
    st.backward_ms = bwd;
    st.activation_bytes = act;
    loom_error err = {0};
    ck_assert_int_eq(loom_graph_from_stage_times(&st, 0, g, &err), LOOM_OK);
    *sc = loom_schedule_new(4, (*g)->n_stages);
    ck_assert_ptr_nonnull(*sc);
    int32_t k = 0;
    for (int32_t r = 0; r < 4; r++) {
        (*sc)->rank_off[r] = k;
        for (int back = 0; back < 2; back++)
            for (int32_t v = 0; v < (*g)->n_stages; v++)
                if ((*g)->rank[v] == r &&
                    ((*g)->kind[v] == LOOM_STAGE_F) == !back)
                    (*sc)->order[k++] = v;
    }
    (*sc)->rank_off[4] = k;
}

START_TEST(simulator_rejects_small_metrics)
{
    const loom_simulator_service *sim = loom_service_lookup(LOOM_SERVICE_SIMULATOR, 1);
    ck_assert_ptr_nonnull(sim);
    loom_stage_graph *g = NULL;
    loom_schedule *sc = NULL;
    gpipe_graph(&g, &sc);
    loom_sim_scratch *scratch = sim->scratch_new();

    loom_metrics small = LOOM_METRICS_INIT;
    small.struct_size = 8;
    loom_error err = {0};
    ck_assert_int_eq(sim->simulate(scratch, g, sc, &small, &err), LOOM_EABI);
    ck_assert_int_eq(err.code, LOOM_EABI);
    char want[160];
    snprintf(want, sizeof want, "loom_metrics struct_size is 8 bytes, expected at least %u",
             (unsigned)LOOM_METRICS_SIZE_V1);
    has(err.message, want);
    has(err.message, "simulator");
    ck_assert_double_eq(small.makespan_ms, 0); /* nothing written */

    loom_metrics zero;
    memset(&zero, 0, sizeof zero); /* never initialised: size 0 */
    ck_assert_int_eq(sim->simulate(scratch, g, sc, &zero, &err), LOOM_EABI);
    has(err.message, "struct_size is 0 bytes");

    loom_metrics m = LOOM_METRICS_INIT;
    memset(&err, 0, sizeof err);
    ck_assert_msg(sim->simulate(scratch, g, sc, &m, &err) == LOOM_OK, "%s", err.message);
    ck_assert_double_eq_tol(m.makespan_ms, 21.0, 1e-12);
    ck_assert_uint_eq(m.struct_size, sizeof(loom_metrics));
    sim->scratch_free(scratch);
    loom_schedule_free(sc);
    loom_graph_free(g);
}
END_TEST

START_TEST(metrics_init_function_and_macro_agree)
{
    loom_metrics a = LOOM_METRICS_INIT, b;
    memset(&b, 0xff, sizeof b);
    loom_metrics_init(&b);
    ck_assert_uint_eq(a.struct_size, sizeof(loom_metrics));
    ck_assert_uint_eq(b.struct_size, sizeof(loom_metrics));
    ck_assert_ptr_null(b.span_ms);
    ck_assert_double_eq(b.makespan_ms, 0);
    ck_assert(LOOM_METRICS_SIZE_V1 <= sizeof(loom_metrics));
    ck_assert(LOOM_METRICS_HAS(&a, end_ms));
    a.struct_size = LOOM_METRICS_SIZE_V1 - 1;
    ck_assert(!LOOM_METRICS_HAS(&a, end_ms));
}
END_TEST

/* A caller built against a newer SDK: its struct is larger than the
 * host's; the host fills what it knows and leaves the rest alone. */
START_TEST(simulator_keeps_newer_callers_tail)
{
    loom_stage_graph *g = NULL;
    loom_schedule *sc = NULL;
    gpipe_graph(&g, &sc);
    union {
        loom_metrics m;
        unsigned char bytes[sizeof(loom_metrics) + 32];
    } big;
    memset(&big, 0xab, sizeof big);
    loom_metrics_init(&big.m);
    big.m.struct_size = (uint32_t)sizeof big;
    loom_error err = {0};
    ck_assert_msg(loom_simulate(g, sc, &big.m, &err) == LOOM_OK, "%s", err.message);
    ck_assert_double_eq_tol(big.m.makespan_ms, 21.0, 1e-12);
    for (size_t i = sizeof(loom_metrics); i < sizeof big; i++)
        ck_assert_uint_eq(big.bytes[i], 0xab);
    loom_schedule_free(sc);
    loom_graph_free(g);
}
END_TEST

START_TEST(simulator_rejects_small_schedule)
{
    loom_stage_graph *g = NULL;
    loom_schedule *sc = NULL;
    gpipe_graph(&g, &sc);
    loom_schedule copy = *sc;
    copy.struct_size = 4;
    loom_metrics m = LOOM_METRICS_INIT;
    loom_error err = {0};
    ck_assert_int_eq(loom_simulate(g, &copy, &m, &err), LOOM_EABI);
    char want[160];
    snprintf(want, sizeof want, "loom_schedule struct_size is 4 bytes, expected at least %u",
             (unsigned)LOOM_SCHEDULE_SIZE_V1);
    has(err.message, want);
    copy.struct_size = (uint32_t)sizeof copy;
    ck_assert_int_eq(loom_simulate(g, &copy, &m, &err), LOOM_OK);
    loom_schedule_free(sc);
    loom_graph_free(g);
}
END_TEST

static loom_session s;

/* Opens session s: the shipped `manifest` on preset `model`, `iterations`
 * generated iterations. */
static void open_model(const char *manifest, const char *model, int32_t iterations)
{
    loom_session_args a;
    loom_session_args_init(&a);
    a.manifest = loom_test_src(manifest);
    a.model = model;
    a.iterations = iterations;
    loom_error err = {0};
    int rc = loom_session_init(&s, &a, &err);
    ck_assert_msg(rc == LOOM_OK, "%s", err.message);
}

/* The megatron-1f1b session on vlm-s, one planned iteration. */
static void open_session(loom_plan *plan)
{
    open_model("examples/manifests/megatron-1f1b.json", "vlm-s", 1);
    loom_error err = {0};
    int rc = loom_session_plan(&s, 0, plan, &err);
    ck_assert_msg(rc == LOOM_OK, "%s", err.message);
}

START_TEST(evaluator_rejects_small_metrics)
{
    loom_plan plan;
    open_session(&plan);
    const loom_evaluator_service *evs = loom_service_lookup(LOOM_SERVICE_EVALUATOR, 1);
    ck_assert_ptr_nonnull(evs);
    loom_ctx *ctx = &s.pl->steps[s.pl->ranker].ctx;
    loom_evaluator *ev = NULL;
    loom_error err = {0};
    ck_assert_int_eq(evs->create(ctx, plan.graph, &ev, &err), LOOM_OK);

    loom_metrics small = LOOM_METRICS_INIT;
    small.struct_size = LOOM_METRICS_SIZE_V1 - 8;
    ck_assert_int_eq(evs->run(ev, plan.priorities, &small, &err), LOOM_EABI);
    char want[160];
    snprintf(want, sizeof want, "evaluator: loom_metrics struct_size is %u bytes, expected at least %u",
             (unsigned)(LOOM_METRICS_SIZE_V1 - 8), (unsigned)LOOM_METRICS_SIZE_V1);
    has(err.message, want);

    loom_metrics m = LOOM_METRICS_INIT;
    memset(&err, 0, sizeof err);
    ck_assert_msg(evs->run(ev, plan.priorities, &m, &err) == LOOM_OK, "%s", err.message);
    ck_assert_double_eq_tol(m.makespan_ms, plan.metrics.makespan_ms, 1e-9);
    evs->destroy(ev);
    loom_plan_clear(&plan);
    loom_session_release(&s);
}
END_TEST

START_TEST(cost_service_checks_shapes_and_costs)
{
    loom_plan plan;
    open_session(&plan);
    const loom_cost_service *cost = loom_service_lookup(LOOM_SERVICE_COST, 1);
    ck_assert_ptr_nonnull(cost);
    loom_ctx *ctx = &s.pl->steps[s.pl->ranker].ctx;
    const loom_iteration *it = &s.workload->iterations[0];
    int32_t M = s.problem.parallel.microbatches;
    loom_error err = {0};

    /* module_shape: an output shape too small */
    loom_shape shape = LOOM_SHAPE_INIT;
    shape.struct_size = 2;
    ck_assert_int_eq(cost->module_shape(ctx, 1, it, M, 0, 1, &shape, &err), LOOM_EABI);
    char want[160];
    snprintf(want, sizeof want, "loom_shape struct_size is 2 bytes, expected at least %u",
             (unsigned)LOOM_SHAPE_SIZE_V1);
    has(err.message, want);
    ck_assert_int_eq(shape.tokens, 0);

    /* the normal path */
    shape = (loom_shape)LOOM_SHAPE_INIT;
    ck_assert_msg(cost->module_shape(ctx, 1, it, M, 0, 1, &shape, &err) == LOOM_OK, "%s",
                  err.message);
    ck_assert_int_gt(shape.tokens, 0);
    ck_assert_uint_eq(shape.struct_size, sizeof(loom_shape));
    loom_shape direct;
    loom_shape_for(&s.problem, 1, it, NULL, M, 0, 1, &direct);
    ck_assert_int_eq(shape.tokens, direct.tokens);
    ck_assert_double_eq(shape.seq_sq_sum, direct.seq_sq_sum);

    loom_layer_cost c = LOOM_LAYER_COST_INIT;
    ck_assert_msg(cost->layer(ctx, 1, 0, &shape, LOOM_POLICY_NONE, &c, &err) == LOOM_OK, "%s",
                  err.message);
    ck_assert(c.forward_ms > 0);
    ck_assert_uint_eq(c.struct_size, sizeof(loom_layer_cost));
    loom_layer_cost ref = LOOM_LAYER_COST_INIT;
    ck_assert_int_eq(loom_cost_estimate(&s.pl->steps[s.pl->cost_model].ctx, 1, 0, &shape,
                                        LOOM_POLICY_NONE, &ref, &err),
                     LOOM_OK);
    ck_assert_double_eq(c.forward_ms, ref.forward_ms);
    ck_assert_int_eq(c.activation_bytes, ref.activation_bytes);
    /* offload is the host's to derive: no cost model is asked for it */
    ck_assert_int_eq(cost->layer(ctx, 1, 0, &shape, LOOM_POLICY_OFFLOAD, &c, &err), LOOM_EINVAL);
    has(err.message, "cost model: expected a memory policy in [0, 3) (none, selective, full; "
                     "offload is derived from none and full by loom_offload_option), found 3");

    /* layer: an input shape, then an output cost, too small */
    loom_shape old = shape;
    old.struct_size = 0;
    ck_assert_int_eq(cost->layer(ctx, 1, 0, &old, LOOM_POLICY_NONE, &c, &err), LOOM_EABI);
    has(err.message, "loom_shape struct_size is 0 bytes");
    loom_layer_cost small = LOOM_LAYER_COST_INIT;
    small.struct_size = 12;
    ck_assert_int_eq(cost->layer(ctx, 1, 0, &shape, LOOM_POLICY_NONE, &small, &err), LOOM_EABI);
    snprintf(want, sizeof want, "loom_layer_cost struct_size is 12 bytes, expected at least %u",
             (unsigned)LOOM_LAYER_COST_SIZE_V1);
    has(err.message, want);
    ck_assert_double_eq(small.forward_ms, 0);

    /* a newer caller's larger struct: the tail stays as it was */
    union {
        loom_layer_cost c;
        unsigned char bytes[sizeof(loom_layer_cost) + 24];
    } big;
    memset(&big, 0xcd, sizeof big);
    big.c.struct_size = (uint32_t)sizeof big;
    ck_assert_int_eq(cost->layer(ctx, 1, 0, &shape, LOOM_POLICY_NONE, &big.c, &err), LOOM_OK);
    ck_assert_double_eq(big.c.forward_ms, ref.forward_ms);
    ck_assert_uint_eq(big.c.struct_size, sizeof big);
    for (size_t i = sizeof(loom_layer_cost); i < sizeof big; i++)
        ck_assert_uint_eq(big.bytes[i], 0xcd);
    loom_plan_clear(&plan);
    loom_session_release(&s);
}
END_TEST

START_TEST(problem_lists_the_planned_iterations)
{
    /* the session hands every step the iterations it plans ... */
    open_model("examples/manifests/megatron-balanced.json", "vlm-m", 3);
    loom_error err = {0};
    int rc = LOOM_OK;
    int32_t n = -1;
    ck_assert_ptr_eq(loom_problem_iterations(&s.problem, &n), s.workload->iterations);
    ck_assert_int_eq(n, 3);
    /* ... so Megatron-LM's balanced split is the same in every iteration,
     * as a real run cuts its layers once, while the data differ */
    char first[64] = "";
    double first_ms = 0.0;
    int differ = 0;
    for (int32_t k = 0; k < 3; k++) {
        loom_plan plan;
        rc = loom_session_plan(&s, k, &plan, &err);
        ck_assert_msg(rc == LOOM_OK, "%s", err.message);
        if (k == 0) {
            snprintf(first, sizeof first, "%s", plan.partition->label);
            first_ms = plan.metrics.makespan_ms;
        } else {
            ck_assert_str_eq(plan.partition->label, first);
            differ |= plan.metrics.makespan_ms != first_ms;
        }
        loom_plan_clear(&plan);
    }
    ck_assert_msg(differ, "the three iterations should carry different data");
    /* a problem from a host older than the list reads as none */
    loom_problem old = s.problem;
    old.struct_size = (uint32_t)offsetof(loom_problem, iterations);
    ck_assert_ptr_null(loom_problem_iterations(&old, &n));
    ck_assert_int_eq(n, 0);
    loom_session_release(&s);
}
END_TEST

START_TEST(cost_service_averages_the_run)
{
    /* run_module_shape: the mean of every planned iteration's mean
     * microbatch, each from module_shape */
    open_model("examples/manifests/megatron-balanced.json", "vlm-m", 3);
    loom_plan plan;
    loom_error err = {0};
    int rc = loom_session_plan(&s, 0, &plan, &err);
    ck_assert_msg(rc == LOOM_OK, "%s", err.message);
    const loom_cost_service *cost = loom_service_lookup(LOOM_SERVICE_COST, 1);
    ck_assert(LOOM_COST_HAS(cost, run_module_shape));
    loom_ctx *ctx = &s.pl->steps[s.pl->first_partitioner].ctx;
    const loom_iteration *its = s.workload->iterations;
    int32_t M = s.problem.parallel.microbatches;
    for (int32_t m = 0; m < s.problem.model->n_modules; m++) {
        int64_t tokens = 0, sequences = 0;
        double seq_sq_sum = 0.0;
        loom_shape one[3];
        for (int32_t i = 0; i < 3; i++) {
            one[i] = (loom_shape)LOOM_SHAPE_INIT;
            rc = cost->module_shape(ctx, m, &its[i], M, -1, 1, &one[i], &err);
            ck_assert_msg(rc == LOOM_OK, "%s", err.message);
            tokens += one[i].tokens;
            sequences += one[i].sequences;
            seq_sq_sum += one[i].seq_sq_sum;
        }
        loom_shape run = LOOM_SHAPE_INIT;
        rc = cost->run_module_shape(ctx, m, &its[1], M, &run, &err);
        ck_assert_msg(rc == LOOM_OK, "%s", err.message);
        ck_assert_int_eq(run.tokens, (tokens + 1) / 3);        /* to nearest */
        ck_assert_int_eq(run.sequences, (sequences + 2) / 3);  /* up */
        ck_assert_double_eq_tol(run.seq_sq_sum, seq_sq_sum / 3, 1e-9 * seq_sq_sum);
        ck_assert_int_eq(run.tp, one[0].tp);
        ck_assert_int_eq(run.trainable_upstream, 0);
        if (m == 0)
            ck_assert_msg(one[0].tokens != one[1].tokens || one[1].tokens != one[2].tokens,
                          "the iterations should carry different image data");
    }
    /* one listed iteration: the iteration given is the run */
    s.problem.n_iterations = 1;
    loom_shape run = LOOM_SHAPE_INIT, own = LOOM_SHAPE_INIT;
    ck_assert_int_eq(cost->run_module_shape(ctx, 0, &its[2], M, &run, &err), LOOM_OK);
    ck_assert_int_eq(cost->module_shape(ctx, 0, &its[2], M, -1, 1, &own, &err), LOOM_OK);
    ck_assert_int_eq(run.tokens, own.tokens);
    ck_assert_int_eq(run.sequences, own.sequences);
    ck_assert_double_eq(run.seq_sq_sum, own.seq_sq_sum);
    s.problem.n_iterations = 3;
    /* an output shape too small */
    loom_shape small = LOOM_SHAPE_INIT;
    small.struct_size = 4;
    ck_assert_int_eq(cost->run_module_shape(ctx, 0, &its[0], M, &small, &err), LOOM_EABI);
    has(err.message, "loom.cost run_module_shape");
    has(err.message, "loom_shape struct_size is 4 bytes");
    ck_assert_int_eq(small.tokens, 0);
    loom_plan_clear(&plan);
    loom_session_release(&s);
}
END_TEST

START_TEST(layer_cost_clear_keeps_size)
{
    loom_layer_cost c = LOOM_LAYER_COST_INIT;
    c.forward_ms = 3;
    c.flops = 9;
    loom_layer_cost_clear(&c);
    ck_assert_uint_eq(c.struct_size, sizeof c);
    ck_assert_double_eq(c.forward_ms, 0);
    ck_assert_double_eq(c.flops, 0);
    /* an older (smaller) caller: members past its size are not touched */
    c.flops = 9;
    c.struct_size = (uint32_t)offsetof(loom_layer_cost, flops);
    c.forward_ms = 3;
    loom_layer_cost_clear(&c);
    ck_assert_double_eq(c.forward_ms, 0);
    ck_assert_double_eq(c.flops, 9);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("struct_sizes");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, simulator_rejects_small_metrics);
    tcase_add_test(tc, metrics_init_function_and_macro_agree);
    tcase_add_test(tc, simulator_keeps_newer_callers_tail);
    tcase_add_test(tc, simulator_rejects_small_schedule);
    tcase_add_test(tc, evaluator_rejects_small_metrics);
    tcase_add_test(tc, cost_service_checks_shapes_and_costs);
    tcase_add_test(tc, layer_cost_clear_keeps_size);
    tcase_add_test(tc, problem_lists_the_planned_iterations);
    tcase_add_test(tc, cost_service_averages_the_run);
    suite_add_tcase(su, tc);
    return loom_test_main(su);
}
