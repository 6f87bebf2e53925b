/* test_table.c - the `table` cost model: CSV and JSON loading,
 * interpolation and extrapolation in tokens, policies, frozen-aware
 * backward, and error messages naming file, line / JSON path, expected
 * and found. */
#include <loom/mock_host.h>

#include <math.h>
#include <string.h>

#include "table_data.h"
#include "testutil.h"

const loom_plugin_info *loom_static_table(void);

/* A two-module model: "vit" (2 layers, frozen) -> "llm" (4 layers). */
typedef struct fixture {
    loom_layer layer;
    loom_module modules[2];
    int32_t llm_inputs[1];
    loom_model model;
    loom_problem problem;
} fixture;

/* Fills the fixture. */
static void fx_init(fixture *fx)
{
    memset(fx, 0, sizeof *fx);
    fx->layer = (loom_layer){1024, 4096, 16, 16, 0, 0, 0, 0};
    fx->modules[0].name = "vit";
    fx->modules[0].kind = LOOM_MODULE_ENCODER;
    fx->modules[0].modality = LOOM_MODALITY_IMAGE;
    fx->modules[0].n_layers = 2;
    fx->modules[0].layers = &fx->layer;
    fx->modules[0].frozen = 1;
    fx->modules[1].name = "llm";
    fx->modules[1].kind = LOOM_MODULE_BACKBONE;
    fx->modules[1].n_layers = 4;
    fx->modules[1].layers = &fx->layer;
    fx->llm_inputs[0] = 0;
    fx->modules[1].n_inputs = 1;
    fx->modules[1].inputs = fx->llm_inputs;
    fx->model.name = "toy-vlm";
    fx->model.n_modules = 2;
    fx->model.modules = fx->modules;
    fx->problem.struct_size = sizeof fx->problem;
    fx->problem.kind = LOOM_PROBLEM_MODEL;
    fx->problem.model = &fx->model;
    fx->problem.parallel = (loom_parallel){1, 2, 4, 1, 4, 0};
}

/* The cost_model vtable through the static twin. */
static const loom_cost_model_vtable *vtable(void)
{
    const loom_role_header *h = loom_static_table()->role(LOOM_ROLE_COST_MODEL);
    ck_assert_ptr_nonnull(h);
    return (const loom_cost_model_vtable *)h;
}

/* An instance on a mock host: params are "key", "value" pairs. */
typedef struct inst {
    loom_mock_host *host;
    void *self;
} inst;

/* Creates an instance; returns the status (err filled on failure). */
static int inst_new(inst *in, const char *const *params, loom_error *err)
{
    in->host = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    in->self = NULL;
    for (int i = 0; params && params[i]; i += 2)
        loom_mock_host_set_param(in->host, params[i], params[i + 1]);
    int rc = vtable()->create(loom_mock_host_api(in->host),
                              loom_mock_host_ctx(in->host), NULL, &in->self,
                              err);
    if (rc != LOOM_OK) {
        loom_mock_host_free(in->host);
        in->host = NULL;
    }
    return rc;
}

/* Destroys an instance from inst_new. */
static void inst_free(inst *in)
{
    if (in->self)
        vtable()->destroy(in->self);
    loom_mock_host_free(in->host);
}

/* Creates an instance over a table file, asserting success. */
static inst open_table(const char *path)
{
    inst in;
    loom_error err = {0, ""};
    const char *const params[] = {"file", path, NULL};
    int rc = inst_new(&in, params, &err);
    ck_assert_msg(rc == LOOM_OK, "create failed: %s", err.message);
    return in;
}

/* A shape of `tokens` tokens at TP 1. */
static loom_shape shape(int64_t tokens, int32_t trainable_upstream)
{
    loom_shape s = {.struct_size = (uint32_t)sizeof(loom_shape), .tokens = tokens,
                    .seq_sq_sum = (double)tokens * 100.0, .sequences = 1, .tp = 1,
                    .trainable_upstream = trainable_upstream};
    return s;
}

/* estimate() asserting success. */
static loom_layer_cost est(inst *in, fixture *fx, int32_t module,
                           int32_t layer, loom_shape s, int32_t policy)
{
    loom_layer_cost c = LOOM_LAYER_COST_INIT;
    loom_error err = {0, ""};
    int rc = vtable()->estimate(in->self, &fx->problem, module, layer, &s,
                                policy, &c, &err);
    ck_assert_msg(rc == LOOM_OK, "estimate failed: %s", err.message);
    return c;
}

/* estimate() expecting a failure whose message contains `fragment`. */
static void est_fails(inst *in, fixture *fx, int32_t module, int32_t layer,
                      const char *fragment)
{
    loom_layer_cost c = LOOM_LAYER_COST_INIT;
    loom_error err = {0, ""};
    loom_shape s = shape(1000, 1);
    int rc = vtable()->estimate(in->self, &fx->problem, module, layer, &s,
                                LOOM_POLICY_NONE, &c, &err);
    ck_assert_int_eq(rc, LOOM_EINVAL);
    ck_assert_msg(strstr(err.message, fragment) != NULL,
                  "message \"%s\" lacks \"%s\"", err.message, fragment);
}

static const char *const CSV_TWO =
    "module,layer,tokens,forward_ms,input_grad_ms,weight_grad_ms,"
    "activation_bytes,param_bytes\n"
    "llm,*,1000,2,3,1,1000,500\n"
    "llm,*,3000,6,7,5,5000,500\n"
    "vit,*,1000,1,1,1,100,50\n";

START_TEST(csv_interpolates_linearly)
{
    fixture fx;
    fx_init(&fx);
    inst in = open_table(loom_test_tmpfile(".csv", CSV_TWO));
    loom_layer_cost c = est(&in, &fx, 1, 2, shape(2000, 1), LOOM_POLICY_NONE);
    ck_assert_double_eq(c.forward_ms, 4);
    ck_assert_double_eq(c.input_grad_ms, 5);
    ck_assert_double_eq(c.weight_grad_ms, 3);
    ck_assert_int_eq(c.activation_bytes, 3000);
    ck_assert_int_eq(c.param_bytes, 500);
    ck_assert_double_eq(c.recompute_ms, 0);
    ck_assert_double_eq(c.flops, 0); /* unknown */
    c = est(&in, &fx, 1, 0, shape(1500, 1), LOOM_POLICY_NONE);
    ck_assert_double_eq(c.forward_ms, 3);
    ck_assert_double_eq(c.input_grad_ms, 4);
    ck_assert_double_eq(c.weight_grad_ms, 2);
    ck_assert_int_eq(c.activation_bytes, 2000);
    /* on a measured point: the measurement */
    c = est(&in, &fx, 1, 3, shape(3000, 1), LOOM_POLICY_NONE);
    ck_assert_double_eq(c.forward_ms, 6);
    inst_free(&in);
}
END_TEST

START_TEST(extrapolates_from_nearest_two_and_clamps)
{
    fixture fx;
    fx_init(&fx);
    inst in = open_table(loom_test_tmpfile(".csv", CSV_TWO));
    loom_layer_cost c = est(&in, &fx, 1, 0, shape(4000, 1), LOOM_POLICY_NONE);
    ck_assert_double_eq(c.forward_ms, 8);
    ck_assert_double_eq(c.input_grad_ms, 9);
    ck_assert_double_eq(c.weight_grad_ms, 7);
    ck_assert_int_eq(c.activation_bytes, 7000);
    c = est(&in, &fx, 1, 0, shape(500, 1), LOOM_POLICY_NONE);
    ck_assert_double_eq(c.forward_ms, 1);
    ck_assert_double_eq(c.input_grad_ms, 2);
    ck_assert_double_eq(c.weight_grad_ms, 0);
    ck_assert_int_eq(c.activation_bytes, 0);
    c = est(&in, &fx, 1, 0, shape(200, 1), LOOM_POLICY_NONE);
    ck_assert_double_eq_tol(c.forward_ms, 0.4, 1e-12);
    ck_assert_double_eq(c.weight_grad_ms, 0); /* -0.6 clamped */
    inst_free(&in);

    /* three points: the segment around the query, then the last two */
    in = open_table(loom_test_tmpfile(".csv",
        "module,layer,tokens,forward_ms,input_grad_ms,weight_grad_ms,"
        "activation_bytes,param_bytes\n"
        "llm,*,5000,14,0,0,0,0\n"
        "llm,*,1000,2,0,0,0,0\n"
        "llm,*,3000,6,0,0,0,0\n"));
    c = est(&in, &fx, 1, 0, shape(4000, 1), LOOM_POLICY_NONE);
    ck_assert_double_eq(c.forward_ms, 10);
    c = est(&in, &fx, 1, 0, shape(6000, 1), LOOM_POLICY_NONE);
    ck_assert_double_eq(c.forward_ms, 18);
    c = est(&in, &fx, 1, 0, shape(2000, 1), LOOM_POLICY_NONE);
    ck_assert_double_eq(c.forward_ms, 4);
    inst_free(&in);
}
END_TEST

START_TEST(one_row_scales_proportionally)
{
    fixture fx;
    fx_init(&fx);
    inst in = open_table(loom_test_tmpfile(".csv", CSV_TWO));
    loom_layer_cost c = est(&in, &fx, 0, 1, shape(2500, 1), LOOM_POLICY_NONE);
    ck_assert_double_eq(c.forward_ms, 2.5);
    ck_assert_double_eq(c.input_grad_ms, 2.5);
    ck_assert_double_eq(c.weight_grad_ms, 0); /* vit is frozen */
    ck_assert_int_eq(c.activation_bytes, 250);
    ck_assert_int_eq(c.param_bytes, 50);     /* not scaled */
    inst_free(&in);

    loom_table_row r = {"x", LOOM_TABLE_ANY_LAYER, 1, 400, 8, 4, 2, 40, 9};
    loom_table_point p;
    loom_table_interpolate(&r, 1, 100, &p);
    ck_assert_double_eq(p.forward_ms, 2);
    ck_assert_double_eq(p.input_grad_ms, 1);
    ck_assert_double_eq(p.weight_grad_ms, 0.5);
    ck_assert_double_eq(p.activation_bytes, 10);
    ck_assert_double_eq(p.param_bytes, 9);
}
END_TEST

START_TEST(exact_layer_rows_override_star)
{
    fixture fx;
    fx_init(&fx);
    inst in = open_table(loom_test_tmpfile(".csv",
        "module,layer,tokens,forward_ms,input_grad_ms,weight_grad_ms,"
        "activation_bytes,param_bytes\n"
        "llm,*,1000,2,2,2,0,0\n"
        "llm,3,1000,7,7,7,0,1000\n"));
    ck_assert_double_eq(est(&in, &fx, 1, 3, shape(1000, 1), 0).forward_ms, 7);
    ck_assert_double_eq(est(&in, &fx, 1, 2, shape(1000, 1), 0).forward_ms, 2);
    inst_free(&in);
}
END_TEST

START_TEST(policies_use_the_ratios)
{
    fixture fx;
    fx_init(&fx);
    const char *path = loom_test_tmpfile(".csv", CSV_TWO);
    inst in = open_table(path);
    loom_shape s = shape(1000, 1);
    loom_layer_cost n = est(&in, &fx, 1, 0, s, LOOM_POLICY_NONE);
    loom_layer_cost sel = est(&in, &fx, 1, 0, s, LOOM_POLICY_SELECTIVE);
    loom_layer_cost full = est(&in, &fx, 1, 0, s, LOOM_POLICY_FULL);
    ck_assert_int_eq(n.activation_bytes, 1000);
    ck_assert_int_eq(sel.activation_bytes, 500);
    ck_assert_int_eq(full.activation_bytes, 100);
    ck_assert_double_eq(n.recompute_ms, 0);
    ck_assert_double_eq_tol(sel.recompute_ms, 0.3, 1e-12);
    ck_assert_double_eq(full.recompute_ms, 2);
    ck_assert_int_eq(full.transient_bytes, 900);
    ck_assert_double_eq(sel.forward_ms, n.forward_ms);
    inst_free(&in);

    loom_error err = {0, ""};
    const char *const params[] = {"file", path,
                                  "selective_activation_ratio", "0.25",
                                  "full_activation_ratio", "0",
                                  "selective_recompute_ratio", "0.5", NULL};
    ck_assert_int_eq(inst_new(&in, params, &err), LOOM_OK);
    sel = est(&in, &fx, 1, 0, s, LOOM_POLICY_SELECTIVE);
    full = est(&in, &fx, 1, 0, s, LOOM_POLICY_FULL);
    ck_assert_int_eq(sel.activation_bytes, 250);
    ck_assert_double_eq(sel.recompute_ms, 1);
    ck_assert_int_eq(full.activation_bytes, 0);
    inst_free(&in);

    const char *const bad[] = {"file", path, "full_activation_ratio", "1.5",
                               NULL};
    ck_assert_int_eq(inst_new(&in, bad, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message,
        "params.full_activation_ratio: expected a number in [0, 1], found 1.5"));
}
END_TEST

START_TEST(frozen_aware_and_states)
{
    fixture fx;
    fx_init(&fx);
    inst in = open_table(loom_test_tmpfile(".csv", CSV_TWO));
    /* trainable llm behind a frozen vit: pays both */
    loom_layer_cost c = est(&in, &fx, 1, 0, shape(1000, 1), LOOM_POLICY_NONE);
    ck_assert_double_eq(c.input_grad_ms, 3);
    ck_assert_double_eq(c.weight_grad_ms, 1);
    /* 500 param bytes: 1000 of fp32 grads + 6 x 500 of optimizer / dp 4 */
    ck_assert_int_eq(c.state_bytes, 1000 + 750);
    /* nothing trainable upstream */
    c = est(&in, &fx, 1, 0, shape(1000, 0), LOOM_POLICY_NONE);
    ck_assert_double_eq(c.input_grad_ms, 0);
    ck_assert_double_eq(c.weight_grad_ms, 1);
    /* frozen vit with nothing upstream: forward only, nothing stored */
    c = est(&in, &fx, 0, 0, shape(1000, 0), LOOM_POLICY_FULL);
    ck_assert_double_eq(c.forward_ms, 1);
    ck_assert_double_eq(c.input_grad_ms, 0);
    ck_assert_double_eq(c.weight_grad_ms, 0);
    ck_assert_double_eq(c.recompute_ms, 0);
    ck_assert_int_eq(c.activation_bytes, 0);
    ck_assert_int_eq(c.state_bytes, 0);
    ck_assert_int_eq(c.param_bytes, 50);
    /* no tokens: no stage */
    c = est(&in, &fx, 1, 0, shape(0, 1), LOOM_POLICY_NONE);
    ck_assert_double_eq(c.forward_ms, 0);
    ck_assert_int_eq(c.activation_bytes, 0);
    ck_assert_int_eq(c.param_bytes, 500);
    inst_free(&in);

    loom_error err = {0, ""};
    const char *const params[] = {"file", loom_test_tmpfile(".csv", CSV_TWO),
                                  "distributed_optimizer", "false", NULL};
    ck_assert_int_eq(inst_new(&in, params, &err), LOOM_OK);
    c = est(&in, &fx, 1, 0, shape(1000, 1), LOOM_POLICY_NONE);
    ck_assert_int_eq(c.state_bytes, 500 * 8);
    inst_free(&in);
}
END_TEST

/* One rank's tail from the table instance on cluster c. */
static loom_rank_tail table_tail(inst *in, fixture *fx, const loom_cluster *c,
                                 const loom_rank_state *st)
{
    fx->problem.cluster = c;
    loom_rank_tail t = {.struct_size = sizeof t};
    loom_error err = {0, ""};
    ck_assert(vtable()->rank_tail_ms != NULL);
    ck_assert_msg(vtable()->rank_tail_ms(in->self, &fx->problem, st, &t, &err) == LOOM_OK, "%s",
                  err.message);
    fx->problem.cluster = NULL;
    return t;
}

/* A one-node cluster of 8 GPUs for the tail tests: 1e12 B/s of HBM,
 * 1e11 B/s links, every efficiency 1. */
static loom_cluster toy_cluster(void)
{
    loom_cluster c;
    memset(&c, 0, sizeof c);
    c.name = "toy";
    c.hbm_bytes_per_s = 1e12;
    c.net_bytes_per_s = c.nvlink_bytes_per_s = 1e11;
    c.eff_memory = c.eff_collective = 1.0;
    c.gpus_per_node = 8;
    return c;
}

/* Rank 0 of a dp-4 replica holding 1e9 trainable parameters. */
static loom_rank_state toy_rank(void)
{
    loom_rank_state st = {.struct_size = sizeof st, .rank = 0, .tp = 1, .dp = 4, .chunks = 1,
                          .dp_same_node = 1, .params = 1e9, .trainable_params = 1e9};
    return st;
}

START_TEST(element_size_and_the_tail)
{
    fixture fx;
    fx_init(&fx);
    loom_cluster c = toy_cluster();
    loom_rank_state st = toy_rank();

    /* bf16 (the default): the element size is 2, and the tail is the one
     * the host computes for a cost model without a tail of its own */
    inst in = open_table(loom_test_tmpfile(".csv", CSV_TWO));
    loom_layer_cost b = est(&in, &fx, 1, 0, shape(1000, 1), LOOM_POLICY_NONE);
    ck_assert_int_eq(b.element_bytes, 2);
    loom_rank_tail bf16 = table_tail(&in, &fx, &c, &st);
    loom_tail_knobs host = {1, 1, 0, LOOM_TAIL_GRAD_BYTES, 0, 0, 0, 0};
    loom_rank_tail want = {.struct_size = sizeof want};
    loom_rank_tail_compute(&c, &st, &host, &want);
    ck_assert_double_eq(bf16.grad_sync_ms, want.grad_sync_ms);
    ck_assert_double_eq(bf16.grad_bucket_ms, want.grad_bucket_ms);
    ck_assert_double_eq(bf16.param_gather_ms, want.param_gather_ms);
    ck_assert_double_eq(bf16.optimizer_ms, want.optimizer_ms);
    ck_assert_int_eq(bf16.overlap_grad_reduce, 1);
    ck_assert(bf16.param_gather_ms > 0 && bf16.optimizer_ms > 0);
    inst_free(&in);

    /* fp32: the element size is 4; fp32 gradients as large as the weights
     * and Adam's m and v 2x over dp 4: 500 + 250; the same gradient sync,
     * the weights' all-gather twice as long, the Adam step 32/34 */
    loom_error err = {0, ""};
    const char *const fp32[] = {"file", loom_test_tmpfile(".csv", CSV_TWO), "element_bytes",
                                "4", NULL};
    ck_assert_int_eq(inst_new(&in, fp32, &err), LOOM_OK);
    loom_layer_cost f = est(&in, &fx, 1, 0, shape(1000, 1), LOOM_POLICY_NONE);
    ck_assert_int_eq(f.element_bytes, 4);
    ck_assert_int_eq(f.param_bytes, 500);
    ck_assert_int_eq(f.state_bytes, 500 + 250);
    ck_assert_double_eq(f.forward_ms, b.forward_ms); /* the table's times */
    ck_assert_int_eq(loom_layer_cost_element_bytes(&f), 4);
    loom_rank_tail t = table_tail(&in, &fx, &c, &st);
    ck_assert_double_eq(t.grad_sync_ms, bf16.grad_sync_ms);
    ck_assert_double_eq_tol(t.param_gather_ms, 2.0 * bf16.param_gather_ms, 1e-12);
    ck_assert_double_eq_tol(t.optimizer_ms, bf16.optimizer_ms * 32.0 / 34.0, 1e-12);
    inst_free(&in);

    /* without the distributed optimizer: an all-reduce, no all-gather */
    const char *const plain[] = {"file", loom_test_tmpfile(".csv", CSV_TWO),
                                 "distributed_optimizer", "false", NULL};
    ck_assert_int_eq(inst_new(&in, plain, &err), LOOM_OK);
    t = table_tail(&in, &fx, &c, &st);
    host.distributed_optimizer = 0;
    loom_rank_tail_compute(&c, &st, &host, &want);
    ck_assert_double_eq(t.grad_sync_ms, want.grad_sync_ms);
    ck_assert_double_eq(t.param_gather_ms, 0.0);
    ck_assert_double_eq(t.optimizer_ms, want.optimizer_ms);
    /* a tail needs a cluster */
    loom_rank_tail none = {.struct_size = sizeof none};
    ck_assert_int_eq(vtable()->rank_tail_ms(in.self, &fx.problem, &st, &none, &err),
                     LOOM_EINVAL);
    ck_assert_str_eq(err.message, "table: an iteration tail needs a cluster, found none");
    inst_free(&in);

    /* 3 bytes is no precision the table knows */
    const char *const three[] = {"file", loom_test_tmpfile(".csv", CSV_TWO), "element_bytes",
                                 "3", NULL};
    ck_assert_int_eq(inst_new(&in, three, &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "table: param element_bytes: expected 2 (bf16, fp16) or 4 "
                                  "(fp32, TF32), found 3");
}
END_TEST

/* The profile's precision is a param: unstated by default (no precision
 * bits, so no runtime export states one), else the bits megatron.args and
 * torchtitan.toml read; a precision off its element size is refused. */
START_TEST(matmul_precision_reaches_the_tail)
{
    fixture fx;
    fx_init(&fx);
    loom_cluster c = toy_cluster();
    loom_rank_state st = toy_rank();
    const uint32_t tail = LOOM_ASSUMED_KNOWN | LOOM_ASSUMED_DISTRIBUTED_OPTIMIZER |
                          LOOM_ASSUMED_OVERLAP_GRAD_REDUCE;
    const char *file = loom_test_tmpfile(".csv", CSV_TWO);
    struct { const char *precision, *element; uint32_t bits; } cases[] = {
        {NULL, "2", tail},
        {"bf16", "2", tail | LOOM_ASSUMED_PRECISION},
        {"fp8", "2", tail | LOOM_ASSUMED_PRECISION | LOOM_ASSUMED_MATMUL_FP8},
        {"fp32", "4", tail | LOOM_ASSUMED_PRECISION | LOOM_ASSUMED_ELEMENTS_FP32 |
                          LOOM_ASSUMED_MATMUL_FP32},
    };
    loom_error err = {0, ""};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const char *params[] = {"file", file, "element_bytes", cases[k].element,
                                cases[k].precision ? "matmul_precision" : NULL,
                                cases[k].precision, NULL};
        inst in;
        ck_assert_int_eq(inst_new(&in, params, &err), LOOM_OK);
        loom_rank_tail t = table_tail(&in, &fx, &c, &st);
        ck_assert_msg(t.assumed == cases[k].bits, "case %zu: assumed %#x, expected %#x", k,
                      t.assumed, cases[k].bits);
        inst_free(&in);
    }
    const char *const off[] = {"file", file, "matmul_precision", "tf32", NULL};
    inst in;
    ck_assert_int_eq(inst_new(&in, off, &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "table: param matmul_precision: tf32 runs on 4-byte elements, "
                                  "so expected element_bytes 4, found 2");
}
END_TEST

START_TEST(json_equals_csv)
{
    fixture fx;
    fx_init(&fx);
    inst a = open_table(loom_test_tmpfile(".csv", CSV_TWO));
    inst b = open_table(loom_test_tmpfile(".json",
        "{\"rows\": [\n"
        " {\"module\": \"llm\", \"layer\": \"*\", \"tokens\": 1000,"
        "  \"forward_ms\": 2, \"input_grad_ms\": 3, \"weight_grad_ms\": 1,"
        "  \"activation_bytes\": 1000, \"param_bytes\": 500},\n"
        " {\"module\": \"llm\", \"layer\": \"*\", \"tokens\": 3000,"
        "  \"forward_ms\": 6, \"input_grad_ms\": 7, \"weight_grad_ms\": 5,"
        "  \"activation_bytes\": 5000, \"param_bytes\": 500},\n"
        " {\"module\": \"vit\", \"layer\": 1, \"tokens\": 1000,"
        "  \"forward_ms\": 1, \"input_grad_ms\": 1, \"weight_grad_ms\": 1,"
        "  \"activation_bytes\": 100, \"param_bytes\": 50}]}\n"));
    int64_t tokens[] = {200, 1000, 1700, 3000, 9000};
    for (int i = 0; i < 5; i++) {
        for (int32_t pol = 0; pol < LOOM_POLICY_OFFLOAD; pol++) {
            loom_layer_cost x = est(&a, &fx, 1, 1, shape(tokens[i], 1), pol);
            loom_layer_cost y = est(&b, &fx, 1, 1, shape(tokens[i], 1), pol);
            ck_assert_mem_eq(&x, &y, sizeof x);
            x = est(&a, &fx, 0, 1, shape(tokens[i], 1), pol);
            y = est(&b, &fx, 0, 1, shape(tokens[i], 1), pol);
            ck_assert_mem_eq(&x, &y, sizeof x);
        }
    }
    inst_free(&a);
    inst_free(&b);
}
END_TEST

START_TEST(csv_syntax_is_forgiving_where_harmless)
{
    fixture fx;
    fx_init(&fx);
    inst in = open_table(loom_test_tmpfile(".txt",
        "\xEF\xBB\xBF# profiled on 8xH800, TP 1\r\n"
        "module , layer,tokens,forward_ms,input_grad_ms,weight_grad_ms,"
        "activation_bytes,param_bytes\r\n"
        "\r\n"
        "\"llm\",*, 1000 ,2,3,1,1e3,5e2\r\n"
        "# a comment\n"
        "llm,*,3000,6,7,5,5000,500"));
    loom_layer_cost c = est(&in, &fx, 1, 0, shape(2000, 1), LOOM_POLICY_NONE);
    ck_assert_double_eq(c.forward_ms, 4);
    ck_assert_int_eq(c.param_bytes, 500);
    inst_free(&in);
}
END_TEST

/* Creating over `text` (written with `suffix`) fails with `code` and a
 * message containing the file name and `fragment`. */
static void load_fails(const char *suffix, const char *text, int code,
                       const char *fragment)
{
    const char *path = loom_test_tmpfile(suffix, text);
    inst in;
    loom_error err = {0, ""};
    const char *const params[] = {"file", path, NULL};
    ck_assert_int_eq(inst_new(&in, params, &err), code);
    ck_assert_int_eq(err.code, code);
    ck_assert_msg(strstr(err.message, path) != NULL,
                  "message \"%s\" lacks the file %s", err.message, path);
    ck_assert_msg(strstr(err.message, fragment) != NULL,
                  "message \"%s\" lacks \"%s\"", err.message, fragment);
}

#define HDR                                                                    \
    "module,layer,tokens,forward_ms,input_grad_ms,weight_grad_ms,"             \
    "activation_bytes,param_bytes\n"

START_TEST(csv_errors)
{
    load_fails(".csv", "module,layer,tokens\nllm,*,1\n", LOOM_EINVAL,
               ":1: expected the header \"module,layer,tokens,forward_ms,"
               "input_grad_ms,weight_grad_ms,activation_bytes,param_bytes\", "
               "found \"module,layer,tokens\"");
    load_fails(".csv", HDR "llm,*,1000,2,3,1,1000,500\nllm,*,2000,abc,1,1,1,1\n",
               LOOM_EINVAL,
               ":3: column forward_ms: expected a number >= 0, found \"abc\"");
    load_fails(".csv", HDR "llm,*,1000,2,3,1,1000\n", LOOM_EINVAL,
               ":2: expected 8 comma-separated fields");
    load_fails(".csv", HDR "llm,*,1000,2,3,1,1000\n", LOOM_EINVAL, "found 7");
    load_fails(".csv", HDR "llm,x,1000,2,3,1,1000,5\n", LOOM_EINVAL,
               ":2: column layer: expected a layer index >= 0 or \"*\", "
               "found \"x\"");
    load_fails(".csv", HDR "llm,1,0,2,3,1,1000,5\n", LOOM_EINVAL,
               ":2: column tokens: expected an integer >= 1, found \"0\"");
    load_fails(".csv", HDR "llm,1,10,2,-3,1,1000,5\n", LOOM_EINVAL,
               ":2: column input_grad_ms: expected a number >= 0, "
               "found \"-3\"");
    load_fails(".csv", HDR ",1,10,2,3,1,1000,5\n", LOOM_EINVAL,
               ":2: column module: expected a module name, found \"\"");
    load_fails(".csv", HDR "llm,2,10,1,1,1,1,1\n# x\nllm,2,10,1,1,1,1,1\n",
               LOOM_EINVAL,
               "line 4: expected one row per module, layer and tokens, found "
               "a second row for module \"llm\" layer 2 at 10 tokens (first "
               "at line 2)");
    load_fails(".csv", HDR, LOOM_EINVAL, "expected at least one row, found none");
    load_fails(".csv", "\n\n", LOOM_EINVAL, "found an empty file");
}
END_TEST

START_TEST(json_errors)
{
    load_fails(".json", "{\"rows\": [\n  {\"module\": \"llm\",, }]}",
               LOOM_EINVAL, ":2:21: malformed JSON near \" }]}\"");
    load_fails(".json", "{\"rows\": [", LOOM_EINVAL,
               ":1:10: malformed JSON near \"[\"");
    load_fails(".json", "[1, 2]", LOOM_EINVAL,
               "expected an object with \"rows\", found an array");
    load_fails(".json", "{\"rows\": 3}", LOOM_EINVAL,
               "rows: expected an array, found 3");
    load_fails(".json", "{\"rows\": [], \"note\": 1}", LOOM_EINVAL,
               "unknown field \"note\" (expected one of: rows)");
    load_fails(".json",
               "{\"rows\": [{\"module\": \"llm\", \"layer\": 0, \"tokens\": "
               "10, \"forward_ms\": 1, \"input_grad_ms\": 1, "
               "\"weight_grad_ms\": 1, \"activation_bytes\": 1, "
               "\"param_bytes\": 1}, {\"module\": \"llm\", \"layer\": 0, "
               "\"tokens\": 1.5}]}",
               LOOM_EINVAL,
               "rows[1].tokens: expected an integer >= 1, found 1.5");
    load_fails(".json",
               "{\"rows\": [{\"module\": \"llm\", \"layer\": \"all\"}]}",
               LOOM_EINVAL,
               "rows[0].layer: expected a layer index >= 0 or \"*\", found "
               "\"all\"");
    load_fails(".json",
               "{\"rows\": [{\"module\": \"llm\", \"layer\": 0, \"tokens\": "
               "10, \"forward_ms\": 1, \"input_grad_ms\": 1, "
               "\"weight_grad_ms\": 1, \"activation_bytes\": 1}]}",
               LOOM_EINVAL, "rows[0].param_bytes: expected a number >= 0, "
                            "found nothing");
    load_fails(".json", "{\"rows\": [{\"module\": \"llm\", \"speed\": 1}]}",
               LOOM_EINVAL, "rows[0]: unknown field \"speed\"");
    load_fails(".json", "{\"rows\": [7]}", LOOM_EINVAL,
               "rows[0]: expected an object, found 7");
    load_fails(".json", "{\"rows\": []}", LOOM_EINVAL,
               "expected at least one row");
}
END_TEST

START_TEST(file_param_errors)
{
    inst in;
    loom_error err = {0, ""};
    /* a host with no value for file at all (it knows no manifest): the
     * table's default, "" */
    loom_mock_host *bare = loom_mock_host_new();
    void *self = NULL;
    ck_assert_int_eq(vtable()->create(loom_mock_host_api(bare), loom_mock_host_ctx(bare),
                                      NULL, &self, &err),
                     LOOM_EINVAL);
    loom_mock_host_free(bare);
    ck_assert_ptr_nonnull(strstr(err.message,
        "params.file: expected the path of a CSV or JSON cost table, found an "
        "empty string"));
    /* the manifest's default is "" */
    ck_assert_int_eq(inst_new(&in, NULL, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "found an empty string"));
    const char *const empty[] = {"file", "", NULL};
    ck_assert_int_eq(inst_new(&in, empty, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "found an empty string"));
    const char *const missing[] = {"file", "/nonexistent/loom/costs.csv", NULL};
    ck_assert_int_eq(inst_new(&in, missing, &err), LOOM_EIO);
    ck_assert_ptr_nonnull(strstr(err.message,
        "/nonexistent/loom/costs.csv: cannot open"));
}
END_TEST

START_TEST(estimate_errors_name_the_module)
{
    fixture fx;
    fx_init(&fx);
    inst in = open_table(loom_test_tmpfile(".csv",
        HDR "llm,*,10,1,1,1,1,1\nvit,0,10,1,1,1,1,1\naudio,*,10,1,1,1,1,1\n"));
    est_fails(&in, &fx, 1, 0,
              "line 4: expected a module of model \"toy-vlm\" (vit, llm), "
              "found module \"audio\"");
    inst_free(&in);

    in = open_table(loom_test_tmpfile(".csv",
        HDR "llm,*,10,1,1,1,1,1\nllm,9,10,1,1,1,1,1\nvit,0,10,1,1,1,1,1\n"));
    est_fails(&in, &fx, 1, 0,
              "line 3: expected a layer of module \"llm\" in [0, 4), found 9");
    inst_free(&in);

    in = open_table(loom_test_tmpfile(".csv",
        HDR "llm,*,10,1,1,1,1,1\nvit,0,10,1,1,1,1,1\n"));
    est_fails(&in, &fx, 0, 1,
              "expected rows for module \"vit\" layer 1 (or layer \"*\"), "
              "found none");
    est_fails(&in, &fx, 2, 0, "module index 2 out of range [0, 2)");
    est_fails(&in, &fx, 1, 4, "module \"llm\": layer 4 out of range [0, 4)");
    fx.problem.kind = LOOM_PROBLEM_STAGE_TIMES;
    est_fails(&in, &fx, 1, 0, "expected a model problem");
    inst_free(&in);
}
END_TEST

START_TEST(manifest_matches_binary)
{
    const loom_plugin_info *info = loom_static_table();
    ck_assert_str_eq(info->id, "org.loom.table");
    ck_assert_ptr_null(info->role(LOOM_ROLE_PARTITIONER));
    const loom_cost_model_vtable *vt = vtable();
    ck_assert_uint_eq(vt->header.struct_size, sizeof *vt);
    ck_assert(vt->module_extra == NULL);
    FILE *f = fopen(loom_test_src("plugins/table/manifest.json"), "rb");
    ck_assert_ptr_nonnull(f);
    static char text[8192];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    ck_assert_ptr_nonnull(strstr(text, "\"id\": \"org.loom.table\""));
    ck_assert_ptr_nonnull(strstr(text, "\"version\": \"1.0.0\""));
    ck_assert_ptr_nonnull(strstr(text, "\"name\": \"table\""));
    ck_assert_ptr_nonnull(strstr(text,
        "\"selective_activation_ratio\": { \"type\": \"float\", "
        "\"default\": 0.5"));
    ck_assert_ptr_nonnull(strstr(text,
        "\"full_activation_ratio\": { \"type\": \"float\", \"default\": 0.1"));
    ck_assert_ptr_nonnull(strstr(text,
        "\"selective_recompute_ratio\": { \"type\": \"float\", "
        "\"default\": 0.15"));
}
END_TEST

/* The table suite. */
static Suite *table_suite(void)
{
    Suite *s = suite_create("table");
    TCase *tc = tcase_create("table");
    tcase_add_test(tc, csv_interpolates_linearly);
    tcase_add_test(tc, extrapolates_from_nearest_two_and_clamps);
    tcase_add_test(tc, one_row_scales_proportionally);
    tcase_add_test(tc, exact_layer_rows_override_star);
    tcase_add_test(tc, policies_use_the_ratios);
    tcase_add_test(tc, frozen_aware_and_states);
    tcase_add_test(tc, element_size_and_the_tail);
    tcase_add_test(tc, json_equals_csv);
    tcase_add_test(tc, csv_syntax_is_forgiving_where_harmless);
    tcase_add_test(tc, csv_errors);
    tcase_add_test(tc, json_errors);
    tcase_add_test(tc, file_param_errors);
    tcase_add_test(tc, estimate_errors_name_the_module);
    tcase_add_test(tc, matmul_precision_reaches_the_tail);
    tcase_add_test(tc, manifest_matches_binary);
    suite_add_tcase(s, tc);
    return s;
}

/* Runs the suite. */
int main(void)
{
    return loom_test_main(table_suite());
}
