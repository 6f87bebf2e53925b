/* test_roofline.c - the `roofline` cost model: closed-form FLOPs, bytes,
 * times, activation sizes and parameter counts, frozen-aware backward,
 * params and error messages. Problems are built by hand here. */
#include <loom/mock_host.h>

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "roofline_model.h"
#include "testutil.h"

const loom_plugin_info *loom_static_roofline(void);

/* A one-module model problem around one layer shape. */
typedef struct fixture {
    loom_layer layer;
    loom_module module;
    loom_model model;
    loom_cluster cluster;
    loom_problem problem;
} fixture;

#define ASSERT_REL(got, want)                                                  \
    do {                                                                       \
        double g_ = (got), w_ = (want);                                        \
        ck_assert_msg(fabs(g_ - w_) <= 1e-9 * fabs(w_) + 1e-300,               \
                      "%s = %.17g, expected %.17g", #got, g_, w_);             \
    } while (0)

static const loom_layer LLAMA3_8B = {4096, 14336, 32, 8, 1, 1, 0, 0};
static const loom_layer QWEN2_72B = {8192, 29568, 64, 8, 1, 1, 0, 0};
static const loom_layer GPT_175B = {12288, 49152, 96, 96, 0, 1, 0, 0};
static const loom_layer VIT_5B = {1792, 15360, 16, 16, 0, 0, 0, 0};
static const loom_layer VIT_22B = {6144, 24576, 48, 48, 0, 0, 0, 0};
static const loom_layer DIT_5B = {3584, 10240, 28, 28, 0, 0, 1, 0};
static const loom_layer DIT_30B = {6144, 24576, 48, 48, 0, 0, 1, 0};

/* An H800-like cluster with distinct efficiency factors. */
static loom_cluster test_cluster(void)
{
    loom_cluster c;
    memset(&c, 0, sizeof c);
    c.name = "test";
    c.peak_flops = 989e12;
    c.hbm_bytes_per_s = 3.35e12;
    c.hbm_bytes = 80LL << 30;
    c.gpus_per_node = 8;
    c.nvlink_bytes_per_s = 200e9;
    c.net_bytes_per_s = 25e9;
    c.eff_gemm = 0.7;
    c.eff_attention = 0.6;
    c.eff_memory = 0.8;
    c.eff_collective = 0.75;
    return c;
}

/* Fills a fixture: one module named "llm" of `n_layers` copies of the
 * layer (all point at the same shape, so n_layers is only for bounds). */
static void fx_init(fixture *fx, loom_layer layer, int32_t n_layers,
                    int32_t kind, int64_t vocab, int32_t frozen)
{
    memset(fx, 0, sizeof *fx);
    fx->layer = layer;
    fx->module.name = "llm";
    fx->module.kind = kind;
    fx->module.modality = LOOM_MODALITY_TEXT;
    fx->module.n_layers = n_layers;
    fx->module.layers = &fx->layer;
    fx->module.tokens_per_item = 1;
    fx->module.vocab = vocab;
    fx->module.frozen = frozen;
    fx->model.name = "test-model";
    fx->model.n_modules = 1;
    fx->model.modules = &fx->module;
    fx->cluster = test_cluster();
    fx->problem.struct_size = sizeof fx->problem;
    fx->problem.kind = LOOM_PROBLEM_MODEL;
    fx->problem.model = &fx->model;
    fx->problem.cluster = &fx->cluster;
    fx->problem.parallel.tp = 1;
    fx->problem.parallel.pp = 1;
    fx->problem.parallel.dp = 1;
    fx->problem.parallel.vpp = 1;
    fx->problem.parallel.microbatches = 1;
}

/* A shape of `sequences` equal sequences of `len` tokens. */
static loom_shape seq_shape(int64_t sequences, int64_t len, int32_t tp,
                            int32_t trainable_upstream)
{
    loom_shape s = LOOM_SHAPE_INIT;
    s.tokens = sequences * len;
    s.seq_sq_sum = (double)sequences * (double)len * (double)len;
    s.sequences = sequences;
    s.tp = tp;
    s.trainable_upstream = trainable_upstream;
    return s;
}

/* The plugin's cost_model vtable through its static twin. */
static const loom_cost_model_vtable *vtable(void)
{
    const loom_plugin_info *info = loom_static_roofline();
    ck_assert_ptr_nonnull(info);
    const loom_role_header *h = info->role(LOOM_ROLE_COST_MODEL);
    ck_assert_ptr_nonnull(h);
    return (const loom_cost_model_vtable *)h;
}

/* create + estimate layer `index` + destroy on a mock host with the given
 * params (key and value strings, NULL-terminated list or NULL). */
static int estimate_at(fixture *fx, const char *const *params, int32_t index,
                       loom_shape shape, int32_t policy, loom_layer_cost *out,
                       loom_error *err)
{
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    for (int i = 0; params && params[i]; i += 2)
        loom_mock_host_set_param(h, params[i], params[i + 1]);
    loom_mock_host_set_problem(h, &fx->problem);
    const loom_cost_model_vtable *vt = vtable();
    void *self = NULL;
    int rc = vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h), NULL,
                        &self, err);
    if (rc == LOOM_OK) {
        rc = vt->estimate(self, &fx->problem, 0, index, &shape, policy, out, err);
        vt->destroy(self);
    }
    loom_mock_host_free(h);
    return rc;
}

/* estimate_at() of the module's first layer. */
static int estimate_with(fixture *fx, const char *const *params,
                         loom_shape shape, int32_t policy,
                         loom_layer_cost *out, loom_error *err)
{
    return estimate_at(fx, params, 0, shape, policy, out, err);
}

/* estimate_with() asserting success. */
static loom_layer_cost estimate_ok(fixture *fx, const char *const *params,
                                   loom_shape shape, int32_t policy)
{
    loom_layer_cost c = LOOM_LAYER_COST_INIT;
    loom_error err = {0, ""};
    int rc = estimate_with(fx, params, shape, policy, &c, &err);
    ck_assert_msg(rc == LOOM_OK, "estimate failed: %s", err.message);
    return c;
}

/* estimate_with() asserting that the params are refused with exactly
 * `message`. */
static void expect_refused(fixture *fx, const char *const *params, loom_shape shape,
                           const char *message)
{
    loom_layer_cost c = LOOM_LAYER_COST_INIT;
    loom_error err = {0, ""};
    ck_assert_int_eq(estimate_with(fx, params, shape, LOOM_POLICY_NONE, &c, &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, message);
}

/* The unfused attention and plain tensor parallelism the closed forms
 * below count (flash_attention=false, sequence_parallel=false). */
static loom_layer_cost estimate(fixture *fx, loom_shape shape, int32_t policy)
{
    const char *const plain[] = {"flash_attention", "false",
                                 "sequence_parallel", "false", NULL};
    return estimate_ok(fx, plain, shape, policy);
}

/* estimate() with sequence parallelism on (still unfused attention). */
static loom_layer_cost estimate_sp(fixture *fx, loom_shape shape,
                                   int32_t policy)
{
    const char *const sp[] = {"flash_attention", "false",
                              "sequence_parallel", "true", NULL};
    return estimate_ok(fx, sp, shape, policy);
}

/* Forward FLOPs of a layer, written out term by term from the formulas. */
static double analytic_forward_flops(loom_layer L, double N, double S)
{
    double h = (double)L.hidden, f = (double)L.ffn_hidden;
    double qkv = 2 * N * h * (h + 2 * h * L.kv_heads / L.heads);
    double scores_values = 4 * h * S * (L.causal ? 0.5 : 1.0);
    double out_proj = 2 * N * h * h;
    double mlp = (L.gated_ffn ? 6 : 4) * N * h * f;
    double cross = L.cross_attention ? 4 * N * h * h : 0;
    return qkv + scores_values + out_proj + mlp + cross;
}

START_TEST(llama3_8b_forward_flops)
{
    fixture fx;
    fx_init(&fx, LLAMA3_8B, 32, LOOM_MODULE_BACKBONE, 128256, 1);
    /* frozen and nothing trainable upstream: model FLOPs = forward only */
    loom_layer_cost c = estimate(&fx, seq_shape(1, 8192, 1, 0),
                                 LOOM_POLICY_NONE);
    double N = 8192, S = 8192.0 * 8192.0;
    double qkv = 2 * N * 4096 * (4096 + 2 * 1024);
    double attn = 4 * 4096 * S / 2;
    double out = 2 * N * 4096 * 4096;
    double mlp = 6 * N * 4096 * 14336;
    ck_assert_double_eq(c.flops, qkv + attn + out + mlp);
    ck_assert_double_eq(c.flops, 4123168604160.0);
    ck_assert_double_eq(c.flops, analytic_forward_flops(LLAMA3_8B, N, S));

    double gemm, att;
    loom_roofline_forward_flops(&fx.layer, &(loom_shape){.struct_size = (uint32_t)sizeof(loom_shape), .tokens = 8192,
                                               .seq_sq_sum = S, .sequences = 1, .tp = 1},
                                &gemm, &att);
    ck_assert_double_eq(gemm, qkv + out + mlp);
    ck_assert_double_eq(att, attn);

    /* everything paid: F x 3, the attention core twice in input grads */
    fx.module.frozen = 0;
    c = estimate(&fx, seq_shape(1, 8192, 1, 1), LOOM_POLICY_NONE);
    ck_assert_double_eq(c.flops, 3 * (gemm + att));
    /* input grads only: gemm x 2 + attention x 3 */
    fx.module.frozen = 1;
    c = estimate(&fx, seq_shape(1, 8192, 1, 1), LOOM_POLICY_NONE);
    ck_assert_double_eq(c.flops, 2 * gemm + 3 * att);
    /* weight grads only: gemm x 2 + attention x 1 */
    fx.module.frozen = 0;
    c = estimate(&fx, seq_shape(1, 8192, 1, 0), LOOM_POLICY_NONE);
    ck_assert_double_eq(c.flops, 2 * gemm + att);
    /* model FLOPs do not depend on TP */
    c = estimate(&fx, seq_shape(1, 8192, 4, 0), LOOM_POLICY_NONE);
    ck_assert_double_eq(c.flops, 2 * gemm + att);
}
END_TEST

START_TEST(causal_and_cross_attention_flops)
{
    loom_layer L = VIT_5B;
    double g1, a1, g2, a2;
    loom_shape s = seq_shape(4, 1000, 1, 1);
    loom_roofline_forward_flops(&L, &s, &g1, &a1);
    L.causal = 1;
    loom_roofline_forward_flops(&L, &s, &g2, &a2);
    ck_assert_double_eq(g1, g2);
    ck_assert_double_eq(a2, a1 / 2);
    ck_assert_double_eq(a1, 4.0 * 1792 * 4 * 1000.0 * 1000.0);
    L.cross_attention = 1;
    loom_roofline_forward_flops(&L, &s, &g2, &a2);
    ck_assert_double_eq(g2 - g1, 4.0 * 4000 * 1792 * 1792);
    ck_assert_double_eq(g2 + a2, analytic_forward_flops(L, 4000, 4e6));
}
END_TEST

START_TEST(operator_time_is_max_of_three_terms)
{
    loom_roofline_hw hw = {100e12, 1e12, 1e11, 0.5, 0.25, 0.5, 0.5, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0};
    loom_roofline_op op = {"gemm", LOOM_ROOFLINE_GEMM, 1e12, 1e9, 0, 0, 0, 0, 0, 0, 0.0};
    /* compute 1e12 / 50e12 = 20 ms; HBM 1e9 / 0.5e12 = 2 ms */
    ASSERT_REL(loom_roofline_op_ms(&op, &hw), 20.0);
    op.mem_bytes = 2e10; /* HBM 40 ms wins */
    ASSERT_REL(loom_roofline_op_ms(&op, &hw), 40.0);
    op.net_bytes = 3e9;  /* link 3e9 / 0.5e11 = 60 ms wins */
    ASSERT_REL(loom_roofline_op_ms(&op, &hw), 60.0);
    loom_roofline_op att = {"attn", LOOM_ROOFLINE_ATTENTION, 1e12, 0, 0, 0, 0, 0, 0, 0, 0.0};
    ASSERT_REL(loom_roofline_op_ms(&att, &hw), 40.0); /* eff_attention */
    loom_roofline_op mem = {"norm", LOOM_ROOFLINE_MEMORY, 0, 5e9, 0, 0, 0, 0, 0, 0, 0.0};
    ASSERT_REL(loom_roofline_op_ms(&mem, &hw), 10.0);
}
END_TEST

START_TEST(compute_bound_layer_time_closed_form)
{
    fixture fx;
    fx_init(&fx, LLAMA3_8B, 32, LOOM_MODULE_BACKBONE, 0, 0);
    fx.cluster.hbm_bytes_per_s = 1e30;
    fx.cluster.nvlink_bytes_per_s = 1e30;
    loom_layer_cost c = estimate(&fx, seq_shape(1, 8192, 1, 1),
                                 LOOM_POLICY_NONE);
    double gemm, att;
    loom_roofline_forward_flops(&fx.layer, &(loom_shape){.struct_size = (uint32_t)sizeof(loom_shape),
                                               .tokens = 8192, .seq_sq_sum = 8192.0 * 8192,
                                               .sequences = 1, .tp = 1,
                                               .trainable_upstream = 1},
                                &gemm, &att);
    double gemm_ms = gemm / (989e12 * 0.7) * 1e3;
    /* unfused, the core computes every score: twice the causal model FLOPs */
    double att_ms = 2.0 * att / (989e12 * 0.6) * 1e3;
    ASSERT_REL(c.forward_ms, gemm_ms + att_ms);
    ASSERT_REL(c.weight_grad_ms, gemm_ms);
    ASSERT_REL(c.input_grad_ms, gemm_ms + 2 * att_ms);
    ck_assert_double_eq(c.recompute_ms, 0);

    /* a pure GEMM layer (no attention scores) */
    loom_shape s = seq_shape(1, 8192, 1, 1);
    s.seq_sq_sum = 0;
    c = estimate(&fx, s, LOOM_POLICY_NONE);
    ASSERT_REL(c.forward_ms, gemm_ms);
}
END_TEST

/* HBM bytes of one forward pass at TP 1, counted from the operator list
 * in docs/cost-models.md: norms 2 elements per token*hidden, GEMMs
 * weights + input + output, attention core Q,K,V,O + scores + probs,
 * softmax 2*a*S, activation (m+1)*N*f, residual adds 3*N*h. */
static double forward_bytes_t1(loom_layer L, double N, double S,
                               double *gemm, double *attn, double *mem)
{
    double h = (double)L.hidden, f = (double)L.ffn_hidden, a = L.heads;
    double kv = h * L.kv_heads / L.heads, m = L.gated_ffn ? 2 : 1;
    *gemm = 2 * (h * (h + 2 * kv) + N * h + N * (h + 2 * kv)) /* qkv */
            + 2 * (h * h + N * h + N * h)                    /* out */
            + 2 * (h * m * f + N * h + N * m * f)            /* fc1 */
            + 2 * (f * h + N * f + N * h);                   /* fc2 */
    *attn = 2 * (2 * N * h + 2 * N * kv) + 2 * 2 * a * S;
    *mem = 2 * (2 * N * h) * 2      /* two norms */
           + 2 * 2 * a * S          /* softmax */
           + 2 * (m + 1) * N * f    /* activation */
           + 2 * (3 * N * h) * 2;   /* two residual adds */
    return *gemm + *attn + *mem;
}

START_TEST(memory_bound_layer_time_closed_form)
{
    loom_layer small = {64, 256, 4, 2, 1, 0, 0, 0};
    fixture fx;
    fx_init(&fx, small, 2, LOOM_MODULE_ENCODER, 0, 0);
    fx.cluster.peak_flops = 1e30;
    loom_layer_cost c = estimate(&fx, seq_shape(2, 50, 1, 1),
                                 LOOM_POLICY_NONE);
    double gemm, attn, mem;
    double total = forward_bytes_t1(small, 100, 5000, &gemm, &attn, &mem);
    double bw = 3.35e12 * 0.8 / 1e3; /* bytes per ms */
    ck_assert_double_eq(total, 54784 + 33792 + 180736 + 96768 + 118400 +
                                   2 * 25600 + 80000 + 153600 + 2 * 38400);
    ASSERT_REL(c.forward_ms, total / bw);
    ASSERT_REL(c.weight_grad_ms, gemm / bw);
    ASSERT_REL(c.input_grad_ms, (gemm + 2 * attn + 1.5 * mem) / bw);
    /* transient: the largest operator, fc1 here */
    ck_assert_int_eq(c.transient_bytes, 180736);
}
END_TEST

/* Hugging Face transformers' eager layers (layer_kernels hf-gpt2 and
 * hf-bert): on an HBM-bound GPU the forward and input-gradient times are
 * the fused counts of forward_bytes_t1 with the eager kernels added, each
 * written out from the kernel list in docs/cost-models.md. Elements are
 * 2 bytes; the dropout masks 1 byte an element. */
START_TEST(hf_eager_kernels_closed_form)
{
    double N = 100, S = 5000, h = 64, f = 256, a = 4;
    double aS = a * S, bw = 3.35e12 * 0.8 / 1e3; /* bytes per ms */
    for (int bert = 0; bert <= 1; bert++) {
        loom_layer L = {64, 256, 4, 4, 0, !bert, 0, 0};
        fixture fx;
        fx_init(&fx, L, 2, LOOM_MODULE_BACKBONE, 0, 0);
        fx.cluster.peak_flops = 1e30;
        const char *const eager[] = {"flash_attention", "false", "sequence_parallel", "false",
                                     "layer_kernels", bert ? "hf-bert" : "hf-gpt2", NULL};
        loom_layer_cost c = estimate_ok(&fx, eager, seq_shape(2, 50, 1, 1), LOOM_POLICY_NONE);
        double gemm, attn, mem;
        forward_bytes_t1(L, N, S, &gemm, &attn, &mem);
        double act = 2 * 2 * N * f;          /* the fused activation */
        double rest = mem - act;             /* norms, softmax, residual adds */
        /* scale, causal mask (GPT-2 only), padding mask, dropout on the scores;
         * dropouts after the attention output and the MLP */
        double scores_fwd = 2 * (2 + (bert ? 0 : 2) + 2 + 2) * aS + aS;
        double scores_bwd = 2 * (2 + (bert ? 0 : 2) + 0 + 2) * aS + aS;
        double drops = 2 * (2 * 2 * N * h + N * h);
        double act_fwd = bert ? act : 2 * 18 * N * f, act_bwd = bert ? 1.5 * act : 2 * 28 * N * f;
        ASSERT_REL(c.forward_ms, (gemm + attn + rest + act_fwd + scores_fwd + drops) / bw);
        ASSERT_REL(c.input_grad_ms,
                   (gemm + 2 * attn + 1.5 * rest + act_bwd + scores_bwd + drops) / bw);
        ASSERT_REL(c.weight_grad_ms, gemm / bw);
        /* full recomputation reruns the whole eager forward */
        loom_layer_cost full = estimate_ok(&fx, eager, seq_shape(2, 50, 1, 1), LOOM_POLICY_FULL);
        ASSERT_REL(full.recompute_ms, c.forward_ms);
        /* selective reruns the core and every kernel on the scores */
        loom_layer_cost sel = estimate_ok(&fx, eager, seq_shape(2, 50, 1, 1),
                                          LOOM_POLICY_SELECTIVE);
        ASSERT_REL(sel.recompute_ms, (attn + 2 * 2 * aS + scores_fwd) / bw);
        /* model FLOPs do not change with the kernels */
        loom_layer_cost fused = estimate(&fx, seq_shape(2, 50, 1, 1), LOOM_POLICY_NONE);
        ck_assert_double_eq(c.flops, fused.flops);
    }
}
END_TEST

/* An unfused attention core computes every score, so a causal layer's
 * core takes the time of a bidirectional one unless fused. */
START_TEST(unfused_attention_computes_every_score)
{
    fixture fx;
    fx_init(&fx, LLAMA3_8B, 32, LOOM_MODULE_BACKBONE, 0, 0);
    fx.cluster.hbm_bytes_per_s = 1e30;
    const char *const fused[] = {"flash_attention", "true", NULL};
    loom_shape s = seq_shape(1, 8192, 1, 1);
    loom_layer_cost causal = estimate(&fx, s, LOOM_POLICY_NONE);
    loom_layer_cost causal_flash = estimate_ok(&fx, fused, s, LOOM_POLICY_NONE);
    fx.layer.causal = 0;
    loom_layer_cost full = estimate(&fx, s, LOOM_POLICY_NONE);
    loom_layer_cost full_flash = estimate_ok(&fx, fused, s, LOOM_POLICY_NONE);
    ASSERT_REL(causal.forward_ms, full.forward_ms);
    ck_assert(causal_flash.forward_ms < full_flash.forward_ms);
    ck_assert(causal.flops < full.flops); /* model FLOPs count the causal half */
}
END_TEST

/* layer_kernels hf-* run the attention unfused, so flash_attention must
 * be false. */
START_TEST(hf_eager_kernels_refuse_flash_attention)
{
    fixture fx;
    fx_init(&fx, LLAMA3_8B, 32, LOOM_MODULE_BACKBONE, 0, 0);
    const char *const bad[] = {"layer_kernels", "hf-gpt2", NULL};
    expect_refused(&fx, bad, seq_shape(1, 8192, 1, 1),
                   "roofline: param layer_kernels: hf-gpt2 runs the attention unfused, so "
                   "expected flash_attention false, found true");
}
END_TEST

/* attention_kernel flash2 runs the attention core at the cluster's
 * eff_attention_flash2: with the HBM term out of the way the forward grows
 * by exactly the core's FLOPs at the new factor less at the old, the input
 * gradient by twice that (its backward does twice the forward's FLOPs),
 * the GEMMs stay; a cluster without the factor runs the fused one. */
START_TEST(flash2_attention_kernel_closed_form)
{
    fixture fx;
    fx_init(&fx, LLAMA3_8B, 32, LOOM_MODULE_BACKBONE, 0, 0);
    fx.cluster.hbm_bytes_per_s = 1e30;
    fx.cluster.eff_attention_flash2 = 0.3;
    const char *const fused[] = {"attention_kernel", "fused", NULL};
    const char *const flash2[] = {"attention_kernel", "flash2", NULL};
    loom_shape s = seq_shape(1, 8192, 1, 1);
    loom_layer_cost a = estimate_ok(&fx, fused, s, LOOM_POLICY_NONE);
    loom_layer_cost b = estimate_ok(&fx, flash2, s, LOOM_POLICY_NONE);
    double gemm, att;
    loom_roofline_forward_flops(&fx.layer, &s, &gemm, &att);
    /* fused, the causal core skips the masked half: the model FLOPs */
    double extra_ms = att / 989e12 * (1.0 / 0.3 - 1.0 / 0.6) * 1e3;
    ASSERT_REL(b.forward_ms - a.forward_ms, extra_ms);
    ASSERT_REL(b.input_grad_ms - a.input_grad_ms, 2.0 * extra_ms);
    ck_assert_double_eq(b.weight_grad_ms, a.weight_grad_ms);
    ck_assert_double_eq(b.flops, a.flops);

    fx.cluster.eff_attention_flash2 = 0;
    loom_layer_cost c = estimate_ok(&fx, flash2, s, LOOM_POLICY_NONE);
    ck_assert_double_eq(c.forward_ms, a.forward_ms);
    ck_assert_double_eq(c.input_grad_ms, a.input_grad_ms);

    const char *const unfused[] = {"attention_kernel", "flash2", "flash_attention", "false",
                                   NULL};
    expect_refused(&fx, unfused, s,
                   "roofline: param attention_kernel: flash2 is a fused kernel, so expected "
                   "flash_attention true, found false");
}
END_TEST

START_TEST(tensor_parallel_halves_compute_and_adds_collectives)
{
    fixture fx;
    fx_init(&fx, LLAMA3_8B, 32, LOOM_MODULE_BACKBONE, 0, 0);
    fx.cluster.hbm_bytes_per_s = 1e30;
    loom_layer_cost t1 = estimate(&fx, seq_shape(1, 8192, 1, 1),
                                  LOOM_POLICY_NONE);
    loom_layer_cost t2 = estimate(&fx, seq_shape(1, 8192, 2, 1),
                                  LOOM_POLICY_NONE);
    double buffer = 8192.0 * 4096 * 2;                 /* N*h bf16 bytes */
    double ring2 = 2.0 * (2 - 1) / 2 * buffer;         /* per GPU, t = 2 */
    double coll2 = 2 * ring2 / (200e9 * 0.75) * 1e3;   /* two all-reduces */
    ck_assert(coll2 > 0);
    ASSERT_REL(t2.forward_ms, t1.forward_ms / 2 + coll2);
    ASSERT_REL(t2.input_grad_ms, t1.input_grad_ms / 2 + coll2);
    ASSERT_REL(t2.weight_grad_ms, t1.weight_grad_ms / 2);

    /* t = 16 spans two 8-GPU nodes: the network carries the all-reduce */
    loom_layer_cost t16 = estimate(&fx, seq_shape(1, 8192, 16, 1),
                                   LOOM_POLICY_NONE);
    double ring16 = 2.0 * 15 / 16 * buffer;
    ASSERT_REL(t16.forward_ms,
               t1.forward_ms / 16 + 2 * ring16 / (25e9 * 0.75) * 1e3);

    /* a cross-attention block adds a third all-reduce */
    fx.layer.cross_attention = 1;
    t1 = estimate(&fx, seq_shape(1, 8192, 1, 1), LOOM_POLICY_NONE);
    t2 = estimate(&fx, seq_shape(1, 8192, 2, 1), LOOM_POLICY_NONE);
    ASSERT_REL(t2.forward_ms, t1.forward_ms / 2 + 1.5 * coll2);
}
END_TEST

START_TEST(frozen_aware_backward)
{
    fixture fx;
    fx_init(&fx, LLAMA3_8B, 32, LOOM_MODULE_BACKBONE, 0, 0);
    loom_shape s = seq_shape(2, 2048, 2, 1);
    loom_layer_cost all = estimate(&fx, s, LOOM_POLICY_NONE);
    ck_assert(all.input_grad_ms > 0 && all.weight_grad_ms > 0);
    ck_assert(all.state_bytes > 0);

    fx.module.frozen = 1; /* frozen LLM behind a trainable projector */
    loom_layer_cost frozen = estimate(&fx, s, LOOM_POLICY_NONE);
    ck_assert_double_eq(frozen.weight_grad_ms, 0);
    ck_assert_double_eq(frozen.input_grad_ms, all.input_grad_ms);
    ck_assert_double_eq(frozen.forward_ms, all.forward_ms);
    ck_assert_int_eq(frozen.activation_bytes, all.activation_bytes);
    ck_assert_int_eq(frozen.state_bytes, 0);
    ck_assert_int_eq(frozen.param_bytes, all.param_bytes);

    fx.module.frozen = 0; /* trainable, nothing trainable before it */
    s.trainable_upstream = 0;
    loom_layer_cost first = estimate(&fx, s, LOOM_POLICY_NONE);
    ck_assert_double_eq(first.input_grad_ms, 0);
    ck_assert_double_eq(first.weight_grad_ms, all.weight_grad_ms);

    fx.module.frozen = 1; /* frozen encoder, nothing upstream: forward only */
    loom_layer_cost none = estimate(&fx, s, LOOM_POLICY_FULL);
    ck_assert_double_eq(none.input_grad_ms, 0);
    ck_assert_double_eq(none.weight_grad_ms, 0);
    ck_assert_double_eq(none.recompute_ms, 0);
    ck_assert_int_eq(none.activation_bytes, 0);
    ck_assert_double_eq(none.forward_ms, all.forward_ms);
}
END_TEST

START_TEST(policies_order_memory_and_recompute)
{
    fixture fx;
    fx_init(&fx, LLAMA3_8B, 32, LOOM_MODULE_BACKBONE, 0, 0);
    loom_shape s = seq_shape(1, 8192, 2, 1);
    loom_layer_cost n = estimate(&fx, s, LOOM_POLICY_NONE);
    loom_layer_cost sel = estimate(&fx, s, LOOM_POLICY_SELECTIVE);
    loom_layer_cost full = estimate(&fx, s, LOOM_POLICY_FULL);
    double N = 8192, h = 4096, S = 8192.0 * 8192;
    ck_assert_int_eq(n.activation_bytes,
                     (int64_t)(N * h * (10 + 24 / 2) + 5 * 32 * S / 2));
    ck_assert_int_eq(sel.activation_bytes, (int64_t)(N * h * (10 + 12)));
    ck_assert_int_eq(full.activation_bytes, (int64_t)(2 * N * h));
    ck_assert(n.activation_bytes > sel.activation_bytes);
    ck_assert(sel.activation_bytes > full.activation_bytes);

    ck_assert_double_eq(n.recompute_ms, 0);
    ck_assert(sel.recompute_ms > 0 && sel.recompute_ms < full.recompute_ms);
    ck_assert_double_eq(full.recompute_ms, full.forward_ms);
    /* the policy changes neither forward nor backward proper */
    ck_assert_double_eq(sel.forward_ms, n.forward_ms);
    ck_assert_double_eq(full.input_grad_ms, n.input_grad_ms);

    /* selective recomputes the attention core and softmax */
    loom_roofline_op ops[LOOM_ROOFLINE_MAX_OPS];
    int k = loom_roofline_forward_ops(&fx.layer, &s, 0, ops);
    loom_roofline_hw hw = {989e12, 3.35e12, 200e9, 0.7, 0.6, 0.8, 0.75, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0};
    double att_ms = 0;
    for (int i = 0; i < k; i++)
        if (!strcmp(ops[i].name, "attn_core") || !strcmp(ops[i].name, "softmax"))
            att_ms += loom_roofline_op_ms(&ops[i], &hw);
    ASSERT_REL(sel.recompute_ms, att_ms);

    /* recomputation rebuilds the dropped activations during backward */
    ck_assert_int_ge(full.transient_bytes,
                     n.activation_bytes - full.activation_bytes);
    ck_assert_int_ge(sel.transient_bytes,
                     n.activation_bytes - sel.activation_bytes);
}
END_TEST

START_TEST(flash_attention_param)
{
    fixture fx;
    fx_init(&fx, LLAMA3_8B, 32, LOOM_MODULE_BACKBONE, 0, 0);
    loom_shape s = seq_shape(1, 8192, 2, 1);
    const char *const flash[] = {"flash_attention", "true", NULL};
    loom_layer_cost a = LOOM_LAYER_COST_INIT, b = LOOM_LAYER_COST_INIT,
                    plain = estimate(&fx, s, LOOM_POLICY_NONE);
    loom_error err = {0, ""};
    ck_assert_int_eq(estimate_with(&fx, flash, s, LOOM_POLICY_NONE, &a, &err),
                     LOOM_OK);
    ck_assert_int_eq(estimate_with(&fx, flash, s, LOOM_POLICY_SELECTIVE, &b,
                                   &err), LOOM_OK);
    ck_assert_int_eq(a.activation_bytes, b.activation_bytes);
    ck_assert(a.forward_ms < plain.forward_ms);
    ck_assert(a.transient_bytes < plain.transient_bytes);
    ck_assert_double_eq(a.flops, plain.flops);

    loom_roofline_op ops[LOOM_ROOFLINE_MAX_OPS];
    int n_plain = loom_roofline_forward_ops(&fx.layer, &s, 0, ops);
    int n_flash = loom_roofline_forward_ops(&fx.layer, &s, 1, ops);
    ck_assert_int_eq(n_plain, n_flash + 1); /* no separate softmax */
}
END_TEST

START_TEST(sequence_parallel_splits_activations_and_collectives)
{
    fixture fx;
    fx_init(&fx, LLAMA3_8B, 32, LOOM_MODULE_BACKBONE, 0, 0);
    loom_shape s = seq_shape(1, 8192, 2, 1);
    double N = 8192, h = 4096, S = 8192.0 * 8192;
    loom_layer_cost n = estimate_sp(&fx, s, LOOM_POLICY_NONE);
    loom_layer_cost sel = estimate_sp(&fx, s, LOOM_POLICY_SELECTIVE);
    loom_layer_cost full = estimate_sp(&fx, s, LOOM_POLICY_FULL);
    /* Korthikanti et al. 2022, Table 2, with sequence parallelism */
    ck_assert_int_eq(n.activation_bytes,
                     (int64_t)(N * h * 34 / 2 + 5 * 32 * S / 2));
    ck_assert_int_eq(sel.activation_bytes, (int64_t)(N * h * 34 / 2));
    ck_assert_int_eq(full.activation_bytes, (int64_t)(2 * N * h / 2));
    ck_assert_double_eq(full.recompute_ms, full.forward_ms);

    /* compute-bound: the same FLOPs and link bytes as plain TP, so the
     * same times (all-gather + reduce-scatter move one all-reduce) */
    fx.cluster.hbm_bytes_per_s = 1e30;
    loom_layer_cost plain = estimate(&fx, s, LOOM_POLICY_NONE);
    n = estimate_sp(&fx, s, LOOM_POLICY_NONE);
    ASSERT_REL(n.forward_ms, plain.forward_ms);
    ASSERT_REL(n.input_grad_ms, plain.input_grad_ms);
    ASSERT_REL(n.weight_grad_ms, plain.weight_grad_ms);
    ck_assert_double_eq(n.flops, plain.flops);

    /* the operators: collectives around the GEMMs, norms on N / t */
    loom_roofline_op ops[LOOM_ROOFLINE_MAX_OPS];
    unsigned flags = LOOM_ROOFLINE_FLASH | LOOM_ROOFLINE_SEQ_PARALLEL;
    int k_plain = loom_roofline_forward_ops(&fx.layer, &s, LOOM_ROOFLINE_FLASH,
                                            ops);
    int k = loom_roofline_forward_ops(&fx.layer, &s, flags, ops);
    ck_assert_int_eq(k, k_plain + 2);
    const char *const order[] = {"norm1", "allgather_attn", "qkv",
                                 "attn_core", "attn_out",
                                 "reducescatter_attn", "residual1", "norm2",
                                 "allgather_mlp", "fc1", "activation", "fc2",
                                 "reducescatter_mlp", "residual2"};
    ck_assert_int_eq(k, (int)(sizeof order / sizeof order[0]));
    for (int i = 0; i < k; i++) {
        ck_assert_str_eq(ops[i].name, order[i]);
        if (ops[i].unit == LOOM_ROOFLINE_COLLECTIVE)
            ck_assert_double_eq(ops[i].net_bytes, 0.5 * 2 * N * h);
    }
    ck_assert_double_eq(ops[0].mem_bytes, 2 * 2 * (N / 2) * h);  /* norm1 */
    ck_assert_double_eq(ops[6].mem_bytes, 2 * 3 * (N / 2) * h);  /* residual1 */

    /* cross-attention adds 8 N h / t stored and one more collective pair */
    fx.layer.cross_attention = 1;
    sel = estimate_sp(&fx, s, LOOM_POLICY_SELECTIVE);
    ck_assert_int_eq(sel.activation_bytes, (int64_t)(N * h * (34 + 8) / 2));
    ck_assert_int_eq(loom_roofline_forward_ops(&fx.layer, &s, flags, ops),
                     k + 6);

    /* without tensor parallelism there is nothing to split */
    fx.layer.cross_attention = 0;
    s = seq_shape(1, 8192, 1, 1);
    plain = estimate(&fx, s, LOOM_POLICY_NONE);
    n = estimate_sp(&fx, s, LOOM_POLICY_NONE);
    ck_assert_int_eq(n.activation_bytes, plain.activation_bytes);
    ck_assert_double_eq(n.forward_ms, plain.forward_ms);
    ck_assert_double_eq(n.input_grad_ms, plain.input_grad_ms);
}
END_TEST

/* Total parameters of a model of `n_layers` x `L` plus its embeddings, as
 * the plugin reports them (bytes / 2 at TP 1). */
static double model_params(loom_layer L, int32_t n_layers, int32_t kind,
                           int64_t vocab)
{
    fixture fx;
    fx_init(&fx, L, n_layers, kind, vocab, 0);
    loom_layer_cost c = estimate(&fx, seq_shape(1, 16, 1, 1),
                                 LOOM_POLICY_NONE);
    int64_t extra_p = -1, extra_s = -1;
    loom_error err = {0, ""};
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    const loom_cost_model_vtable *vt = vtable();
    void *self = NULL;
    ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h),
                                NULL, &self, &err), LOOM_OK);
    ck_assert_int_eq(vt->module_extra(self, &fx.problem, 0, 1, &extra_p,
                                      &extra_s, &err), LOOM_OK);
    vt->destroy(self);
    loom_mock_host_free(h);
    ck_assert_int_eq(c.param_bytes % 2, 0);
    return (double)n_layers * (double)(c.param_bytes / 2) +
           (double)(extra_p / 2);
}

/* |got / want - 1| <= 2 %. */
static int within_2pct(double got, double want)
{
    return fabs(got / want - 1.0) <= 0.02;
}

START_TEST(preset_parameter_counts)
{
    ck_assert_double_eq(loom_roofline_layer_params(&LLAMA3_8B), 218120192);
    double llama = model_params(LLAMA3_8B, 32, LOOM_MODULE_BACKBONE, 128256);
    ck_assert_double_eq(llama, 8030519296.0);
    ck_assert(within_2pct(llama, 8.0e9));
    double qwen = model_params(QWEN2_72B, 80, LOOM_MODULE_BACKBONE, 152064);
    ck_assert_double_eq(qwen, 72706686976.0);
    ck_assert(within_2pct(qwen, 72.7e9));
    /* untied head: GPT-3 ties it, which would give 174.57e9 */
    double gpt = model_params(GPT_175B, 96, LOOM_MODULE_BACKBONE, 50257);
    ck_assert_double_eq(gpt, 175186010112.0);
    ck_assert(within_2pct(gpt, 175e9));
    double vit22 = model_params(VIT_22B, 48, LOOM_MODULE_ENCODER, 0);
    ck_assert_double_eq(vit22, 21744451584.0);
    ck_assert(within_2pct(vit22, 22e9));

    /* Table 3's ViT 5B and DiT shapes fall short of their names */
    double vit5 = model_params(VIT_5B, 63, LOOM_MODULE_ENCODER, 0);
    ck_assert_double_eq(vit5, 4277855232.0);
    ck_assert(!within_2pct(vit5, 5e9));
    double dit5 = model_params(DIT_5B, 28, LOOM_MODULE_DECODER, 0);
    ck_assert_double_eq(dit5, 4213579776.0);
    ck_assert(!within_2pct(dit5, 5e9));
    double dit30 = model_params(DIT_30B, 48, LOOM_MODULE_DECODER, 0);
    ck_assert_double_eq(dit30, 25368330240.0);
    ck_assert(!within_2pct(dit30, 30e9));
}
END_TEST

/* Context parallelism: a layer on cp GPUs costs what 1/cp of the tokens
 * and of the attention work cost on one (ring attention's K/V hops hide
 * behind the long sequence's attention here), times the slowest GPU's
 * share; model FLOPs stay the whole microbatch's; optimizer states are
 * sharded over dp x cp. */
START_TEST(context_parallel_splits_the_sequence)
{
    fixture fx;
    fx_init(&fx, LLAMA3_8B, 32, LOOM_MODULE_BACKBONE, 0, 0);
    const double L = 32768;
    loom_shape whole = seq_shape(1, (int64_t)L, 1, 1);
    loom_shape local = whole;
    local.tokens = (int64_t)L / 2;
    local.seq_sq_sum = L * L / 2;
    loom_shape cp2 = whole;
    cp2.cp = 2;
    loom_layer_cost a = estimate(&fx, cp2, LOOM_POLICY_NONE);
    loom_layer_cost b = estimate(&fx, local, LOOM_POLICY_NONE);
    loom_layer_cost w = estimate(&fx, whole, LOOM_POLICY_NONE);
    ASSERT_REL(a.forward_ms, b.forward_ms);
    ASSERT_REL(a.input_grad_ms, b.input_grad_ms);
    ASSERT_REL(a.weight_grad_ms, b.weight_grad_ms);
    ck_assert_int_eq(a.activation_bytes, b.activation_bytes);
    ASSERT_REL(a.flops, w.flops);
    ck_assert(a.forward_ms < w.forward_ms);
    /* the slowest GPU does 1.5x the mean attention work */
    cp2.cp_attention_scale = 1.5;
    local.seq_sq_sum *= 1.5;
    a = estimate(&fx, cp2, LOOM_POLICY_NONE);
    b = estimate(&fx, local, LOOM_POLICY_NONE);
    ASSERT_REL(a.forward_ms, b.forward_ms);
    ASSERT_REL(a.flops, w.flops);
    /* optimizer states over dp x cp */
    fx.problem.parallel.cp = 2;
    const double p = 218120192;
    a = estimate(&fx, cp2, LOOM_POLICY_NONE);
    ck_assert_int_eq(a.state_bytes, (int64_t)(4 * p + 12 * p / 2));
}
END_TEST

/* Size-aware efficiency: eff * F / (F + half), per operator. */
START_TEST(size_curve_lowers_small_operators)
{
    loom_roofline_hw hw = {100e12, 1e12, 1e11, 0.6, 0.5, 0.5, 0.5, 0, 4e9, 2e9, 0, 1, 0, 0, 0, 0, 0};
    loom_roofline_op gemm = {"gemm", LOOM_ROOFLINE_GEMM, 4e9, 0, 0, 0, 0, 0, 0, 0, 0.0};
    ASSERT_REL(loom_roofline_eff(&gemm, &hw), 0.3);
    /* 4e9 FLOPs at 100e12 * 0.3 per second: 4e9 / 3e13 s */
    ASSERT_REL(loom_roofline_op_ms(&gemm, &hw), 4e9 / 3e13 * 1e3);
    loom_roofline_op attn = {"attn_core", LOOM_ROOFLINE_ATTENTION, 6e9, 0, 0, 0, 0, 0, 0, 0, 0.0};
    ASSERT_REL(loom_roofline_eff(&attn, &hw), 0.5 * 0.75);
    gemm.flops = 4e12; /* large: within 0.1 % of eff_gemm */
    ck_assert(loom_roofline_eff(&gemm, &hw) > 0.6 * 0.999);
    hw.gemm_half_flops = 0; /* off */
    gemm.flops = 1e3;
    ASSERT_REL(loom_roofline_eff(&gemm, &hw), 0.6);
}
END_TEST

/* The memo returns exactly what computing returns: the same estimate
 * twice is bytewise equal, and a change to the layer, the shape, the
 * policy or the cluster's factors is a new key, priced as a fresh
 * instance prices it. */
START_TEST(memo_returns_what_computing_returns)
{
    fixture fx;
    fx_init(&fx, LLAMA3_8B, 32, LOOM_MODULE_BACKBONE, 0, 0);
    loom_layer layers[32];
    for (int i = 0; i < 32; i++)
        layers[i] = LLAMA3_8B;
    fx.module.layers = layers;
    loom_shape sh = seq_shape(1, 4096, 1, 1);
    loom_error err = {0, ""};
    loom_mock_host *hst = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    loom_mock_host_set_problem(hst, &fx.problem);
    const loom_cost_model_vtable *vt = vtable();
    void *self = NULL, *fresh = NULL;
    ck_assert_int_eq(vt->create(loom_mock_host_api(hst), loom_mock_host_ctx(hst), NULL, &self,
                                &err), LOOM_OK);
    loom_layer_cost a = LOOM_LAYER_COST_INIT, b = LOOM_LAYER_COST_INIT, c = LOOM_LAYER_COST_INIT;
    ck_assert_int_eq(vt->estimate(self, &fx.problem, 0, 5, &sh, 1, &a, &err), LOOM_OK);
    ck_assert_int_eq(vt->estimate(self, &fx.problem, 0, 6, &sh, 1, &b, &err), LOOM_OK);
    ck_assert_int_eq(memcmp(&a, &b, sizeof a), 0); /* identical layers share a key */
    layers[6].ffn_hidden *= 2;
    ck_assert_int_eq(vt->estimate(self, &fx.problem, 0, 6, &sh, 1, &b, &err), LOOM_OK);
    ck_assert(b.forward_ms > a.forward_ms);
    ck_assert_int_eq(vt->create(loom_mock_host_api(hst), loom_mock_host_ctx(hst), NULL, &fresh,
                                &err), LOOM_OK);
    ck_assert_int_eq(vt->estimate(fresh, &fx.problem, 0, 6, &sh, 1, &c, &err), LOOM_OK);
    ck_assert_int_eq(memcmp(&b, &c, sizeof b), 0);
    sh.tokens *= 2;
    ck_assert_int_eq(vt->estimate(self, &fx.problem, 0, 5, &sh, 1, &b, &err), LOOM_OK);
    ck_assert(b.forward_ms > a.forward_ms);
    ck_assert_int_eq(vt->estimate(self, &fx.problem, 0, 5, &sh, LOOM_POLICY_FULL, &c, &err),
                     LOOM_OK);
    ck_assert(c.activation_bytes < b.activation_bytes); /* full recomputation keeps less */
    /* a cluster factor changed in place (as loom calibrate does) is a new key */
    ck_assert_int_eq(vt->estimate(self, &fx.problem, 0, 5, &sh, 1, &b, &err), LOOM_OK);
    fx.cluster.eff_gemm /= 2;
    ck_assert_int_eq(vt->estimate(self, &fx.problem, 0, 5, &sh, 1, &c, &err), LOOM_OK);
    ck_assert(c.forward_ms > b.forward_ms);
    vt->destroy(fresh);
    vt->destroy(self);
    loom_mock_host_free(hst);
}
END_TEST

/* The vocabulary's work: the LM head adds 2 N h V FLOPs per GEMM pass
 * (6 N h V trainable) to a backbone's last layer and time to its forward;
 * the embedding adds time, no FLOPs, to layer 0; an encoder has no head. */
START_TEST(vocabulary_costs_first_and_last_layer)
{
    fixture fx;
    const double V = 128256, N = 4096, h = 4096;
    fx_init(&fx, LLAMA3_8B, 32, LOOM_MODULE_BACKBONE, (int64_t)V, 0);
    loom_layer layers[32];
    for (int i = 0; i < 32; i++)
        layers[i] = LLAMA3_8B;
    fx.module.layers = layers;
    loom_shape sh = seq_shape(1, (int64_t)N, 1, 1);
    loom_layer_cost mid = LOOM_LAYER_COST_INIT, last = LOOM_LAYER_COST_INIT,
                    first = LOOM_LAYER_COST_INIT;
    loom_error err = {0, ""};
    loom_mock_host *hst = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    loom_mock_host_set_problem(hst, &fx.problem);
    const loom_cost_model_vtable *vt = vtable();
    void *self = NULL;
    ck_assert_int_eq(vt->create(loom_mock_host_api(hst), loom_mock_host_ctx(hst), NULL, &self,
                                &err), LOOM_OK);
    ck_assert_int_eq(vt->estimate(self, &fx.problem, 0, 5, &sh, 0, &mid, &err), LOOM_OK);
    ck_assert_int_eq(vt->estimate(self, &fx.problem, 0, 31, &sh, 0, &last, &err), LOOM_OK);
    ck_assert_int_eq(vt->estimate(self, &fx.problem, 0, 0, &sh, 0, &first, &err), LOOM_OK);
    ASSERT_REL(last.flops - mid.flops, 6 * N * h * V);
    ck_assert(last.forward_ms > mid.forward_ms);
    ck_assert(last.weight_grad_ms > mid.weight_grad_ms);
    ck_assert(last.transient_bytes >= (int64_t)(8 * N * V));
    ASSERT_REL(first.flops, mid.flops);
    ck_assert(first.forward_ms > mid.forward_ms);
    fx.module.kind = LOOM_MODULE_ENCODER;
    ck_assert_int_eq(vt->estimate(self, &fx.problem, 0, 31, &sh, 0, &last, &err), LOOM_OK);
    ASSERT_REL(last.flops, mid.flops);
    vt->destroy(self);
    loom_mock_host_free(hst);
}
END_TEST

/* tp_comm_overlap: a TP collective costs only what outlasts its
 * neighbouring GEMM, so the forward gets faster and never slower than
 * the compute alone. */
START_TEST(tp_comm_overlap_hides_collectives)
{
    fixture fx;
    fx_init(&fx, LLAMA3_8B, 32, LOOM_MODULE_BACKBONE, 0, 0);
    loom_shape sh = seq_shape(1, 4096, 8, 1);
    const char *const on[] = {"tp_comm_overlap", "true", NULL};
    loom_layer_cost plain = estimate_ok(&fx, NULL, sh, LOOM_POLICY_NONE);
    loom_layer_cost hidden = estimate_ok(&fx, on, sh, LOOM_POLICY_NONE);
    ck_assert(hidden.forward_ms < plain.forward_ms);
    ck_assert(hidden.input_grad_ms < plain.input_grad_ms);
    ASSERT_REL(hidden.weight_grad_ms, plain.weight_grad_ms);
    ASSERT_REL(hidden.flops, plain.flops);
}
END_TEST

/* tp_comm_overlap_share: of what the neighbouring GEMMs can hide, that
 * share is hidden, so the times are linear in it between no overlap (0,
 * the plain times) and the full one (1, the default). */
START_TEST(tp_comm_overlap_share_scales_what_is_hidden)
{
    fixture fx;
    fx_init(&fx, LLAMA3_8B, 32, LOOM_MODULE_BACKBONE, 0, 0);
    loom_shape sh = seq_shape(1, 4096, 8, 1);
    const char *const full[] = {"tp_comm_overlap", "true", NULL};
    const char *const part[] = {"tp_comm_overlap", "true", "tp_comm_overlap_share", "0.25", NULL};
    const char *const none[] = {"tp_comm_overlap", "true", "tp_comm_overlap_share", "0", NULL};
    const char *const off[] = {"tp_comm_overlap_share", "0.25", NULL};
    loom_layer_cost plain = estimate_ok(&fx, NULL, sh, LOOM_POLICY_NONE);
    loom_layer_cost all = estimate_ok(&fx, full, sh, LOOM_POLICY_NONE);
    loom_layer_cost q = estimate_ok(&fx, part, sh, LOOM_POLICY_NONE);
    loom_layer_cost zero = estimate_ok(&fx, none, sh, LOOM_POLICY_NONE);
    loom_layer_cost unused = estimate_ok(&fx, off, sh, LOOM_POLICY_NONE);
    ck_assert(all.forward_ms < plain.forward_ms);
    ASSERT_REL(q.forward_ms, plain.forward_ms - 0.25 * (plain.forward_ms - all.forward_ms));
    ASSERT_REL(q.input_grad_ms,
               plain.input_grad_ms - 0.25 * (plain.input_grad_ms - all.input_grad_ms));
    ASSERT_REL(q.forward_comm_ms,
               plain.forward_comm_ms - 0.25 * (plain.forward_comm_ms - all.forward_comm_ms));
    ASSERT_REL(zero.forward_ms, plain.forward_ms);
    ASSERT_REL(unused.forward_ms, plain.forward_ms); /* no effect without tp_comm_overlap */
    ASSERT_REL(q.weight_grad_ms, plain.weight_grad_ms);
}
END_TEST

/* The exposed TP collectives a fill can use: none at TP 1; at TP 8 a
 * part of forward and input-gradient time, and exactly what
 * tp_comm_overlap takes off those times is taken off them. */
START_TEST(exposed_comm_is_the_collectives)
{
    fixture fx;
    fx_init(&fx, LLAMA3_8B, 32, LOOM_MODULE_BACKBONE, 0, 0);
    loom_layer_cost one = estimate_ok(&fx, NULL, seq_shape(1, 4096, 1, 1), LOOM_POLICY_NONE);
    ck_assert_double_eq(one.forward_comm_ms, 0);
    ck_assert_double_eq(one.input_grad_comm_ms, 0);
    loom_shape sh = seq_shape(1, 4096, 8, 1);
    const char *const on[] = {"tp_comm_overlap", "true", NULL};
    loom_layer_cost plain = estimate_ok(&fx, NULL, sh, LOOM_POLICY_NONE);
    loom_layer_cost hidden = estimate_ok(&fx, on, sh, LOOM_POLICY_NONE);
    ck_assert(plain.forward_comm_ms > 0 && plain.forward_comm_ms < plain.forward_ms);
    ck_assert(plain.input_grad_comm_ms > 0 && plain.input_grad_comm_ms < plain.input_grad_ms);
    ASSERT_REL(plain.forward_comm_ms - hidden.forward_comm_ms,
               plain.forward_ms - hidden.forward_ms);
    ASSERT_REL(plain.input_grad_comm_ms - hidden.input_grad_comm_ms,
               plain.input_grad_ms - hidden.input_grad_ms);
}
END_TEST

/* rank_tail_ms of a roofline created with `params` (NULL ended) on fx's
 * problem, asserting success. */
static loom_rank_tail tail_under(fixture *fx, const char *const *params,
                                 const loom_rank_state *st)
{
    loom_mock_host *hst = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    for (int i = 0; params[i]; i += 2)
        loom_mock_host_set_param(hst, params[i], params[i + 1]);
    loom_mock_host_set_problem(hst, &fx->problem);
    const loom_cost_model_vtable *vt = vtable();
    void *self = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(vt->create(loom_mock_host_api(hst), loom_mock_host_ctx(hst), NULL, &self,
                                &err), LOOM_OK);
    loom_rank_tail t = {.struct_size = (uint32_t)sizeof t};
    ck_assert_int_eq(vt->rank_tail_ms(self, &fx->problem, st, &t, &err), LOOM_OK);
    vt->destroy(self);
    loom_mock_host_free(hst);
    return t;
}

/* fsdp: a GPU keeps 1/(dp x cp) of a layer's weights, gradients and
 * states (loom_layer_cost_static_bytes), the gathered weights of this layer
 * and the next and the unsharded gradient are transient, and a pass costs
 * its collectives where they outlast its compute: a one-token layer's
 * forward is its gather, its backward the gather plus the reduce-scatter.
 * A long sequence's compute hides them: the times are fsdp-free. */
START_TEST(fsdp_shards_weights_and_gradients)
{
    fixture fx;
    fx_init(&fx, LLAMA3_8B, 32, LOOM_MODULE_BACKBONE, 0, 0);
    fx.problem.parallel.dp = 4;
    fx.problem.parallel.cp = 2; /* shards over dp x cp = 8 GPUs, one node */
    const double p = 218120192;
    const char *const on[] = {"fsdp", "true", NULL};
    const char *const off[] = {NULL};
    loom_shape one = seq_shape(1, 1, 1, 1), longseq = seq_shape(1, 8192, 1, 1);
    loom_layer_cost f = estimate_ok(&fx, on, one, LOOM_POLICY_NONE);
    loom_layer_cost z = estimate_ok(&fx, off, one, LOOM_POLICY_NONE);
    ck_assert_int_eq(f.param_bytes, (int64_t)(2 * p)); /* still the parameter count */
    ck_assert_int_eq(f.param_shards, 8);
    /* FSDP2: the fp32 weight shard is the master copy, 16 bytes a
     * parameter over the 8 shards: 4 of weight, 8 of Adam moments, 4 of
     * gradient; the bf16 shard param_bytes / 8 counts is part of it */
    ck_assert_int_eq(f.state_bytes, (int64_t)(4 * p / 8 + 10 * p / 8));
    ck_assert_int_eq(loom_layer_cost_static_bytes(&f), (int64_t)(2 * p));
    /* Megatron-FSDP keeps a bf16 shard beside the fp32 one: 18 bytes */
    const char *const mfsdp[] = {"fsdp", "true", "fsdp_implementation", "megatron-fsdp", NULL};
    loom_layer_cost mf = estimate_ok(&fx, mfsdp, one, LOOM_POLICY_NONE);
    ck_assert_int_eq(mf.state_bytes, (int64_t)(4 * p / 8 + 12 * p / 8));
    ck_assert_int_eq(loom_layer_cost_static_bytes(&mf), (int64_t)(2 * p / 8 + 2 * p));
    ck_assert_double_eq(mf.forward_ms, f.forward_ms);
    ck_assert_double_eq(mf.weight_grad_ms, f.weight_grad_ms);
    ck_assert_int_eq(z.param_shards, 0);
    ck_assert_int_eq(loom_layer_cost_static_bytes(&z), (int64_t)(2 * p + 4 * p + 12 * p / 8));
    ck_assert_int_eq(f.transient_bytes, z.transient_bytes + (int64_t)(8 * p));
    const loom_cluster *c = &fx.cluster;
    double bw = c->nvlink_bytes_per_s * c->eff_collective;
    double gather = 7 * c->p2p_latency_ms + 7.0 / 8 * 2 * p / bw * 1e3;
    double scatter = 7 * c->p2p_latency_ms + 7.0 / 8 * 4 * p / bw * 1e3;
    ASSERT_REL(f.forward_ms, gather);
    ASSERT_REL(f.input_grad_ms + f.weight_grad_ms + f.recompute_ms, gather + scatter);
    ASSERT_REL(f.input_grad_ms, z.input_grad_ms); /* the wait is on the W side */
    ck_assert(gather > z.forward_ms);
    f = estimate_ok(&fx, on, longseq, LOOM_POLICY_NONE);
    z = estimate_ok(&fx, off, longseq, LOOM_POLICY_NONE);
    ck_assert(z.forward_ms > gather);
    ASSERT_REL(f.forward_ms, z.forward_ms);
    ASSERT_REL(f.weight_grad_ms, z.weight_grad_ms);
    /* across nodes: 16 shards at tp 1 leave the node's 8 GPUs */
    fx.problem.parallel.dp = 8;
    f = estimate_ok(&fx, on, one, LOOM_POLICY_NONE);
    ck_assert_int_eq(f.param_shards, 16);
    ASSERT_REL(f.forward_ms, 15 * c->p2p_latency_ms +
                                 15.0 / 16 * 2 * p / (c->net_bytes_per_s * c->eff_collective) * 1e3);
    /* under pipeline parallelism the weights stay gathered and the
     * gradients whole from the first forward to the step's last backward:
     * no per-layer collectives, whole gradients beside the sharded copy */
    fx.problem.parallel.pp = 4;
    f = estimate_ok(&fx, on, one, LOOM_POLICY_NONE);
    z = estimate_ok(&fx, off, one, LOOM_POLICY_NONE);
    ck_assert_int_eq(f.param_shards, 0);
    ck_assert_int_eq(f.state_bytes, (int64_t)(4 * p + 16 * p / 16));
    ck_assert_int_eq(f.transient_bytes, z.transient_bytes);
    ASSERT_REL(f.forward_ms, z.forward_ms);
    ASSERT_REL(f.weight_grad_ms, z.weight_grad_ms);
    expect_refused(&fx, mfsdp, one,
                   "roofline: param fsdp_implementation: megatron-fsdp is priced without "
                   "pipeline parallelism, found pp 4 (fsdp2 prices PyTorch's pipelined FSDP2)");
    fx.problem.parallel.pp = 1;
    /* no data parallelism: nothing to shard */
    fx.problem.parallel.dp = 1;
    fx.problem.parallel.cp = 1;
    f = estimate_ok(&fx, on, one, LOOM_POLICY_NONE);
    z = estimate_ok(&fx, off, one, LOOM_POLICY_NONE);
    ck_assert_int_eq(f.param_shards, 0);
    ck_assert_int_eq(loom_layer_cost_static_bytes(&f), loom_layer_cost_static_bytes(&z));
    ASSERT_REL(f.forward_ms, z.forward_ms);
    mf = estimate_ok(&fx, mfsdp, one, LOOM_POLICY_NONE);
    ck_assert_int_eq(loom_layer_cost_static_bytes(&mf), loom_layer_cost_static_bytes(&z));
}
END_TEST

/* rank_tail_ms under the params: without the distributed optimizer an
 * all-reduce (twice the reduce-scatter's bytes and latencies) and no
 * all-gather; overlap off; bf16 gradients halve the bytes; fsdp keeps one
 * bucket. */
START_TEST(rank_tail_follows_params)
{
    fixture fx;
    fx_init(&fx, LLAMA3_8B, 32, LOOM_MODULE_BACKBONE, 0, 0);
    loom_rank_state st = {(uint32_t)sizeof st, 0, 1, 4, 1, 1, 1e9, 1e9};
    const loom_cluster *c = &fx.cluster;
    double bw = c->nvlink_bytes_per_s * c->eff_collective;
    struct { const char *const *params; double sync, gather, prefetch; int overlap; } cases[3];
    static const char *const dflt[] = {NULL};
    static const char *const noshard[] = {"distributed_optimizer", "false",
                                          "overlap_grad_reduce", "false", NULL};
    static const char *const bf16[] = {"grad_accumulation_fp32", "false",
                                       "overlap_param_gather", "true", NULL};
    cases[0].params = dflt;
    cases[0].sync = 3 * c->p2p_latency_ms + 0.75 * 4e9 / bw * 1e3;
    cases[0].gather = 3 * c->p2p_latency_ms + 0.75 * 2e9 / bw * 1e3;
    cases[0].prefetch = 0;
    cases[0].overlap = 1;
    cases[1].params = noshard;
    cases[1].sync = 6 * c->p2p_latency_ms + 1.5 * 4e9 / bw * 1e3;
    cases[1].gather = 0;
    cases[1].prefetch = 0;
    cases[1].overlap = 0;
    cases[2].params = bf16;
    cases[2].sync = 3 * c->p2p_latency_ms + 0.75 * 2e9 / bw * 1e3;
    cases[2].gather = 0; /* overlapped: gathered from the next step's start */
    cases[2].prefetch = cases[0].gather;
    cases[2].overlap = 1;
    for (int k = 0; k < 3; k++) {
        loom_rank_tail t = tail_under(&fx, cases[k].params, &st);
        ASSERT_REL(t.grad_sync_ms, cases[k].sync);
        if (cases[k].gather > 0)
            ASSERT_REL(t.param_gather_ms, cases[k].gather);
        else
            ck_assert_double_eq(t.param_gather_ms, 0);
        if (cases[k].prefetch > 0)
            ASSERT_REL(t.param_prefetch_ms, cases[k].prefetch);
        else
            ck_assert_double_eq(t.param_prefetch_ms, 0);
        ck_assert_int_eq(t.overlap_grad_reduce, cases[k].overlap);
        /* 40e6 of 1e9 parameters per bucket (Megatron's default at dp 4) */
        ASSERT_REL(t.grad_bucket_ms, t.grad_sync_ms * 0.04);
        double stepped = k == 1 ? 1e9 : 1e9 / 4;
        ASSERT_REL(t.optimizer_ms, stepped * 34 / (c->hbm_bytes_per_s * c->eff_memory) * 1e3);
    }
    /* fsdp: the reduce-scatter of the last bucket only (the backward
     * scattered the rest layer by layer), after the rank's last stage; no
     * all-gather, even with overlap_param_gather (the next step gathers
     * layer by layer); the Adam step over the shard; the settings say
     * sharded weights and the distributed optimizer */
    static const char *const fsdp[] = {"fsdp", "true", "overlap_param_gather", "true", NULL};
    loom_rank_tail t = tail_under(&fx, fsdp, &st);
    ASSERT_REL(t.grad_sync_ms, 3 * c->p2p_latency_ms + 0.75 * 4 * 4e7 / bw * 1e3);
    ASSERT_REL(t.grad_bucket_ms, t.grad_sync_ms);
    ck_assert_int_eq(t.overlap_grad_reduce, 0);
    ck_assert_double_eq(t.param_gather_ms, 0);
    ck_assert_double_eq(t.param_prefetch_ms, 0);
    ASSERT_REL(t.optimizer_ms, 1e9 / 4 * 34 / (c->hbm_bytes_per_s * c->eff_memory) * 1e3);
    const uint32_t sharded = LOOM_ASSUMED_SHARDED_PARAMS | LOOM_ASSUMED_DISTRIBUTED_OPTIMIZER;
    ck_assert_uint_eq(t.assumed & sharded, sharded);
    ck_assert_uint_eq(t.assumed & LOOM_ASSUMED_MEGATRON_FSDP, 0);
    ck_assert_uint_eq(tail_under(&fx, dflt, &st).assumed & LOOM_ASSUMED_SHARDED_PARAMS, 0);
    /* Megatron-FSDP's memory is said, for the exports (the same tail) */
    static const char *const mfsdp[] = {"fsdp", "true", "fsdp_implementation", "megatron-fsdp",
                                        NULL};
    loom_rank_tail mt = tail_under(&fx, mfsdp, &st);
    ck_assert_uint_eq(mt.assumed & (sharded | LOOM_ASSUMED_MEGATRON_FSDP),
                      sharded | LOOM_ASSUMED_MEGATRON_FSDP);
    ck_assert_double_eq(mt.grad_sync_ms, t.grad_sync_ms);
    /* fsdp under pipeline parallelism: the whole sync after each chunk's
     * last backward (one bucket), still no all-gather */
    fx.problem.parallel.pp = 4;
    t = tail_under(&fx, fsdp, &st);
    ASSERT_REL(t.grad_sync_ms, 3 * c->p2p_latency_ms + 0.75 * 4e9 / bw * 1e3);
    ASSERT_REL(t.grad_bucket_ms, t.grad_sync_ms);
    ck_assert_int_eq(t.overlap_grad_reduce, 1);
    ck_assert_double_eq(t.param_gather_ms, 0);
    ck_assert_double_eq(t.param_prefetch_ms, 0);
    ASSERT_REL(t.optimizer_ms, 1e9 / 4 * 34 / (c->hbm_bytes_per_s * c->eff_memory) * 1e3);
    ck_assert_uint_eq(t.assumed & sharded, sharded);
}
END_TEST

/* The Adam step moves 34 bytes per stepped parameter at the cluster's
 * eff_optimizer, or at eff_memory when the cluster leaves it 0. */
START_TEST(optimizer_efficiency)
{
    loom_cluster c;
    memset(&c, 0, sizeof c);
    c.hbm_bytes_per_s = 1e12;
    c.eff_memory = 0.8;
    loom_rank_state st = {(uint32_t)sizeof st, 0, 1, 1, 1, 1, 1e9, 1e9};
    loom_tail_knobs k = {1, 1, 0, 4.0, 0, 0, 0, 0};
    loom_rank_tail t = {.struct_size = (uint32_t)sizeof t};
    loom_rank_tail_compute(&c, &st, &k, &t);
    ASSERT_REL(t.optimizer_ms, 1e9 * 34 / (1e12 * 0.8) * 1e3);
    c.eff_optimizer = 0.5;
    loom_rank_tail_compute(&c, &st, &k, &t);
    ASSERT_REL(t.optimizer_ms, 1e9 * 34 / (1e12 * 0.5) * 1e3);
}
END_TEST

START_TEST(param_and_state_bytes)
{
    fixture fx;
    fx_init(&fx, LLAMA3_8B, 32, LOOM_MODULE_BACKBONE, 128256, 0);
    fx.problem.parallel.dp = 8;
    const double p = 218120192;
    loom_layer_cost c = estimate(&fx, seq_shape(1, 4096, 8, 1),
                                 LOOM_POLICY_NONE);
    ck_assert_int_eq(c.param_bytes, (int64_t)(2 * p / 8));
    /* fp32 gradients 4 bytes, optimizer 12 bytes / dp, all / tp */
    ck_assert_int_eq(c.state_bytes, (int64_t)(4 * p / 8 + 12 * p / 8 / 8));

    const char *const no_dist[] = {"distributed_optimizer", "false", NULL};
    loom_error err = {0, ""};
    ck_assert_int_eq(estimate_with(&fx, no_dist, seq_shape(1, 4096, 8, 1),
                                   LOOM_POLICY_NONE, &c, &err), LOOM_OK);
    ck_assert_int_eq(c.state_bytes, (int64_t)(16 * p / 8));
    /* bf16 gradients: 2 bytes */
    const char *const bf16[] = {"grad_accumulation_fp32", "false", NULL};
    ck_assert_int_eq(estimate_with(&fx, bf16, seq_shape(1, 4096, 8, 1),
                                   LOOM_POLICY_NONE, &c, &err), LOOM_OK);
    ck_assert_int_eq(c.state_bytes, (int64_t)(2 * p / 8 + 12 * p / 8 / 8));

    /* embeddings: input table + untied head of a backbone, vocab-parallel */
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    const loom_cost_model_vtable *vt = vtable();
    void *self = NULL;
    int64_t pb = 0, sb = 0;
    ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h),
                                NULL, &self, &err), LOOM_OK);
    ck_assert_int_eq(vt->module_extra(self, &fx.problem, 0, 8, &pb, &sb, &err),
                     LOOM_OK);
    double e = 2.0 * 128256 * 4096;
    ck_assert_int_eq(pb, (int64_t)(2 * e / 8));
    ck_assert_int_eq(sb, (int64_t)(4 * e / 8 + 12 * e / 8 / 8));
    fx.module.kind = LOOM_MODULE_ENCODER; /* one table */
    ck_assert_int_eq(vt->module_extra(self, &fx.problem, 0, 8, &pb, &sb, &err),
                     LOOM_OK);
    ck_assert_int_eq(pb, (int64_t)(e / 8));
    fx.module.frozen = 1;
    ck_assert_int_eq(vt->module_extra(self, &fx.problem, 0, 8, &pb, &sb, &err),
                     LOOM_OK);
    ck_assert_int_eq(sb, 0);
    fx.module.vocab = 0;
    ck_assert_int_eq(vt->module_extra(self, &fx.problem, 0, 8, &pb, &sb, &err),
                     LOOM_OK);
    ck_assert_int_eq(pb, 0);
    ck_assert_int_eq(sb, 0);
    vt->destroy(self);
    loom_mock_host_free(h);
}
END_TEST

START_TEST(fp32_elements_double_the_bytes)
{
    /* element_bytes 4 (fp32 / TF32 training): a memory-bound layer's
     * times, its stored activations and weights double, a compute-bound
     * GEMM's time does not; fp32 weights are their own master copy, so the
     * states are 4 (gradient) + 8 (m, v) bytes a parameter; the layer
     * reports 4-byte elements for the host's pipeline transfers */
    static const char *const plain4[] = {"flash_attention", "false", "sequence_parallel",
                                         "false", "element_bytes", "4", NULL};
    loom_layer small = {64, 256, 4, 2, 1, 0, 0, 0};
    fixture fx;
    fx_init(&fx, small, 2, LOOM_MODULE_ENCODER, 0, 0);
    fx.cluster.peak_flops = 1e30;
    loom_layer_cost two = estimate(&fx, seq_shape(2, 50, 1, 1), LOOM_POLICY_NONE);
    loom_layer_cost four = estimate_ok(&fx, plain4, seq_shape(2, 50, 1, 1), LOOM_POLICY_NONE);
    ASSERT_REL(four.forward_ms, 2 * two.forward_ms);
    ASSERT_REL(four.input_grad_ms, 2 * two.input_grad_ms);
    ck_assert_int_eq(four.activation_bytes, 2 * two.activation_bytes);
    ck_assert_int_eq(four.param_bytes, 2 * two.param_bytes);
    ck_assert_double_eq(four.element_bytes, 4);
    ck_assert_double_eq(two.element_bytes, 2);
    ck_assert_double_eq(four.flops, two.flops);

    fixture big;
    fx_init(&big, LLAMA3_8B, 32, LOOM_MODULE_BACKBONE, 0, 0);
    big.cluster.hbm_bytes_per_s = 1e30; /* every operator compute-bound */
    big.problem.parallel.dp = 8;
    two = estimate(&big, seq_shape(1, 4096, 1, 1), LOOM_POLICY_NONE);
    four = estimate_ok(&big, plain4, seq_shape(1, 4096, 1, 1), LOOM_POLICY_NONE);
    ASSERT_REL(four.forward_ms, two.forward_ms);
    const double p = 218120192;
    ck_assert_int_eq(four.param_bytes, (int64_t)(4 * p));
    ck_assert_int_eq(four.state_bytes, (int64_t)(4 * p + 8 * p / 8));
    /* fp32 gradients whatever grad_accumulation_fp32 says */
    static const char *const four_bf16g[] = {"element_bytes", "4", "grad_accumulation_fp32",
                                             "false", NULL};
    four = estimate_ok(&big, four_bf16g, seq_shape(1, 4096, 1, 1), LOOM_POLICY_NONE);
    ck_assert_int_eq(four.state_bytes, (int64_t)(4 * p + 8 * p / 8));

    /* the tail: the all-gather moves 4-byte weights, the step 32 bytes */
    loom_mock_host *hst = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    loom_mock_host_set_param(hst, "element_bytes", "4");
    loom_mock_host_set_problem(hst, &big.problem);
    const loom_cost_model_vtable *vt = vtable();
    void *self = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(vt->create(loom_mock_host_api(hst), loom_mock_host_ctx(hst), NULL, &self,
                                &err), LOOM_OK);
    loom_rank_state st = {(uint32_t)sizeof st, 0, 1, 4, 1, 1, 1e9, 1e9};
    loom_rank_tail t = {.struct_size = (uint32_t)sizeof t};
    ck_assert_int_eq(vt->rank_tail_ms(self, &big.problem, &st, &t, &err), LOOM_OK);
    const loom_cluster *c = &big.cluster;
    double bw = c->nvlink_bytes_per_s * c->eff_collective;
    ASSERT_REL(t.param_gather_ms, 3 * c->p2p_latency_ms + 0.75 * 4e9 / bw * 1e3);
    ASSERT_REL(t.optimizer_ms, 1e9 / 4 * 32 / (c->hbm_bytes_per_s * c->eff_memory) * 1e3);
    vt->destroy(self);
    loom_mock_host_free(hst);

    /* 3-byte elements are refused by name */
    static const char *const three[] = {"element_bytes", "3", NULL};
    expect_refused(&fx, three, seq_shape(2, 50, 1, 1),
                   "roofline: param element_bytes: expected 2 (bf16, fp16) or 4 (fp32, TF32), "
                   "found 3");
}
END_TEST

START_TEST(matmul_precision_picks_the_peak)
{
    /* matmul_precision is a property of the run: a compute-bound layer
     * (HBM and the size curve out of the way) runs at the cluster's peak
     * for that precision. On an A40 (149.7 bf16, 74.8 TF32, 37.4 FP32
     * TFLOP/s dense) TF32 takes 149.7 / 74.8 times the bf16 forward and
     * FP32 twice the TF32 one; fp16 runs at the bf16 peak, the FLOPs the
     * layer reports do not move, and a precision the cluster gives no peak
     * for is refused naming the field. */
    fixture fx;
    fx_init(&fx, LLAMA3_8B, 32, LOOM_MODULE_BACKBONE, 0, 0);
    fx.cluster.hbm_bytes_per_s = 1e30;
    fx.cluster.gemm_half_flops = fx.cluster.attention_half_flops = 0;
    fx.cluster.kernel_launch_us = 0;
    fx.cluster.peak_flops = 149.7e12;
    fx.cluster.peak_flops_tf32 = 74.8e12;
    fx.cluster.peak_flops_fp32 = 37.4e12;
    static const char *const bf16[] = {"matmul_precision", "bf16", NULL};
    static const char *const fp16[] = {"matmul_precision", "fp16", NULL};
    static const char *const tf32[] = {"matmul_precision", "tf32", NULL};
    static const char *const fp32[] = {"matmul_precision", "fp32", NULL};
    loom_shape sh = seq_shape(1, 4096, 1, 1);
    loom_layer_cost b = estimate_ok(&fx, bf16, sh, LOOM_POLICY_NONE);
    loom_layer_cost h = estimate_ok(&fx, fp16, sh, LOOM_POLICY_NONE);
    loom_layer_cost t = estimate_ok(&fx, tf32, sh, LOOM_POLICY_NONE);
    loom_layer_cost f = estimate_ok(&fx, fp32, sh, LOOM_POLICY_NONE);
    ASSERT_REL(h.forward_ms, b.forward_ms);
    ASSERT_REL(t.forward_ms, b.forward_ms * 149.7 / 74.8);
    ASSERT_REL(f.forward_ms, 2 * t.forward_ms);
    ASSERT_REL(f.input_grad_ms + f.weight_grad_ms, 2 * (t.input_grad_ms + t.weight_grad_ms));
    ck_assert_double_eq(f.flops, b.flops);
    static const char *const fp8[] = {"matmul_precision", "fp8", NULL};
    loom_error err = {0, ""};
    loom_layer_cost out = LOOM_LAYER_COST_INIT;
    ck_assert_int_eq(estimate_with(&fx, fp8, sh, LOOM_POLICY_NONE, &out, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "matmul_precision fp8 needs peak_flops_fp8 > 0"));
    static const char *const bad[] = {"matmul_precision", "int4", NULL};
    ck_assert_int_ne(estimate_with(&fx, bad, sh, LOOM_POLICY_NONE, &out, &err), LOOM_OK);
    ck_assert_ptr_nonnull(strstr(err.message, "matmul_precision"));
}
END_TEST

/* rank_tail_ms reports the settings the times assume: the tail's flags
 * (bf16 gradient reduce included), sequence parallelism, the TP overlap,
 * an unfused attention core, eager layers, and the precision of the elements and matmuls
 * (what megatron.args and torchtitan.toml state or refuse). */
START_TEST(rank_tail_reports_what_it_assumes)
{
    fixture fx;
    fx_init(&fx, LLAMA3_8B, 32, LOOM_MODULE_BACKBONE, 0, 0);
    fx.cluster.peak_flops_tf32 = fx.cluster.peak_flops_fp32 = fx.cluster.peak_flops_fp8 = 1e15;
    loom_rank_state st = {(uint32_t)sizeof st, 0, 1, 4, 1, 1, 1e9, 1e9};
    const uint32_t tail = LOOM_ASSUMED_KNOWN | LOOM_ASSUMED_DISTRIBUTED_OPTIMIZER |
                          LOOM_ASSUMED_OVERLAP_GRAD_REDUCE | LOOM_ASSUMED_SEQUENCE_PARALLEL |
                          LOOM_ASSUMED_PRECISION;
    static const char *const dflt[] = {NULL};
    static const char *const fp16[] = {"matmul_precision", "fp16", NULL};
    static const char *const fp8[] = {"matmul_precision", "fp8", NULL};
    static const char *const tf32[] = {"element_bytes", "4", "matmul_precision", "tf32", NULL};
    static const char *const fp32[] = {"element_bytes", "4", "matmul_precision", "fp32",
                                       "sequence_parallel", "false", NULL};
    static const char *const overlap[] = {"tp_comm_overlap", "true", NULL};
    static const char *const hide_none[] = {"tp_comm_overlap", "true",
                                            "tp_comm_overlap_share", "0", NULL};
    static const char *const bf16_grads[] = {"grad_accumulation_fp32", "false", NULL};
    static const char *const unfused[] = {"flash_attention", "false", NULL};
    static const char *const eager[] = {"flash_attention", "false", "layer_kernels", "hf-gpt2",
                                        NULL};
    static const char *const fp32_grads[] = {"grad_accumulation_fp32", "false", "element_bytes",
                                             "4", "matmul_precision", "fp32", NULL};
    struct { const char *const *params; uint32_t bits; } cases[] = {
        {dflt, tail},
        {fp16, tail | LOOM_ASSUMED_MATMUL_FP16},
        {fp8, tail | LOOM_ASSUMED_MATMUL_FP8},
        {tf32, tail | LOOM_ASSUMED_ELEMENTS_FP32 | LOOM_ASSUMED_MATMUL_TF32},
        {fp32, (tail & ~LOOM_ASSUMED_SEQUENCE_PARALLEL) | LOOM_ASSUMED_ELEMENTS_FP32 |
                   LOOM_ASSUMED_MATMUL_FP32},
        {overlap, tail | LOOM_ASSUMED_TP_COMM_OVERLAP},
        {hide_none, tail}, /* a share of 0 hides nothing: no overlap */
        {bf16_grads, tail | LOOM_ASSUMED_GRAD_REDUCE_BF16},
        {unfused, tail | LOOM_ASSUMED_UNFUSED_ATTENTION},
        {eager, tail | LOOM_ASSUMED_UNFUSED_ATTENTION | LOOM_ASSUMED_EAGER_LAYERS},
        /* fp32 weights keep fp32 gradients */
        {fp32_grads, tail | LOOM_ASSUMED_ELEMENTS_FP32 | LOOM_ASSUMED_MATMUL_FP32},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        loom_rank_tail t = tail_under(&fx, cases[k].params, &st);
        ck_assert_msg(t.assumed == cases[k].bits, "case %zu: assumed %#x, expected %#x", k,
                      t.assumed, cases[k].bits);
    }
}
END_TEST

/* Costs of layer `index` of fx's module under `params` (NULL ended),
 * asserting success. */
static loom_layer_cost estimate_layer(fixture *fx, const char *const *params, int32_t index,
                                      loom_shape shape)
{
    loom_layer_cost c = LOOM_LAYER_COST_INIT;
    loom_error err = {0, ""};
    ck_assert_msg(estimate_at(fx, params, index, shape, LOOM_POLICY_NONE, &c, &err) == LOOM_OK,
                  "%s", err.message);
    return c;
}

START_TEST(fp8_runs_the_linears_and_pays_their_casts)
{
    /* fp8 converts the Linear layers (torchao.float8's tensorwise recipe,
     * as torchtitan trains it): their GEMMs run at the fp8 peak and pay
     * their operands' casts, memory-bound kernels of 4 bytes an input
     * element and 5 a weight element in the forward, 4 bytes an incoming
     * gradient element and 3 a weight element in the input gradient; the
     * weight gradient pays none, and the attention core and the norms run
     * as in bf16. Llama-3-8B at TP 1 on 4096 tokens, all four GEMMs
     * compute-bound: the inputs of qkv, attn_out, fc1 and fc2 hold
     * 3 N h + N f elements, their outputs N (h + 2 kv) + N h + 2 N f + N h,
     * their weights h (h + 2 kv) + h^2 + 2 h f + f h. */
    fixture fx;
    fx_init(&fx, LLAMA3_8B, 32, LOOM_MODULE_BACKBONE, 0, 0);
    fx.cluster.peak_flops_fp8 = 2 * 989e12;
    fx.cluster.hbm_bytes_per_s = 2e12;
    fx.cluster.eff_memory = 1.0;
    fx.cluster.gemm_half_flops = fx.cluster.attention_half_flops = 0;
    fx.cluster.kernel_launch_us = 0;
    static const char *const bf16[] = {"matmul_precision", "bf16", NULL};
    static const char *const fp8[] = {"matmul_precision", "fp8", NULL};
    loom_shape sh = seq_shape(1, 4096, 1, 1);
    loom_layer_cost b = estimate_ok(&fx, bf16, sh, LOOM_POLICY_NONE);
    loom_layer_cost e = estimate_ok(&fx, fp8, sh, LOOM_POLICY_NONE);
    const double N = 4096, h = 4096, kv = 1024, f = 14336;
    double x = 3 * N * h + N * f;
    double y = N * (h + 2 * kv) + N * h + 2 * N * f + N * h;
    double w = h * (h + 2 * kv) + h * h + 2 * h * f + f * h;
    double gemm_ms = 2 * N * w / (989e12 * 0.7) * 1e3; /* the forward GEMMs in bf16 */
    double cast_fwd_ms = (4 * x + 5 * w) / 2e12 * 1e3;
    double cast_back_ms = (4 * y + 3 * w) / 2e12 * 1e3;
    ASSERT_REL(e.forward_ms, b.forward_ms - gemm_ms / 2 + cast_fwd_ms);
    ASSERT_REL(e.input_grad_ms, b.input_grad_ms - gemm_ms / 2 + cast_back_ms);
    ASSERT_REL(e.weight_grad_ms, b.weight_grad_ms / 2);
    ck_assert_double_eq(e.flops, b.flops);

    /* the LM head stays in bf16 (torchtitan's float8 skips "output"): the
     * last layer adds to a middle one what it adds in bf16 */
    fx_init(&fx, LLAMA3_8B, 32, LOOM_MODULE_BACKBONE, 128256, 0);
    fx.cluster.peak_flops_fp8 = 2 * 989e12;
    loom_layer layers[32];
    for (int i = 0; i < 32; i++)
        layers[i] = LLAMA3_8B;
    fx.module.layers = layers;
    loom_layer_cost b_mid = estimate_layer(&fx, bf16, 5, sh);
    loom_layer_cost b_last = estimate_layer(&fx, bf16, 31, sh);
    loom_layer_cost e_mid = estimate_layer(&fx, fp8, 5, sh);
    loom_layer_cost e_last = estimate_layer(&fx, fp8, 31, sh);
    ck_assert(e_mid.forward_ms < b_mid.forward_ms);
    ASSERT_REL(e_last.forward_ms - e_mid.forward_ms, b_last.forward_ms - b_mid.forward_ms);
    ASSERT_REL(e_last.input_grad_ms - e_mid.input_grad_ms,
               b_last.input_grad_ms - b_mid.input_grad_ms);
    ASSERT_REL(e_last.weight_grad_ms - e_mid.weight_grad_ms,
               b_last.weight_grad_ms - b_mid.weight_grad_ms);
}
END_TEST

START_TEST(gemm_efficiency_scale_param)
{
    fixture fx;
    fx_init(&fx, LLAMA3_8B, 32, LOOM_MODULE_BACKBONE, 0, 0);
    fx.cluster.hbm_bytes_per_s = 1e30;
    loom_shape s = seq_shape(1, 8192, 1, 1);
    s.seq_sq_sum = 0; /* GEMMs only */
    loom_layer_cost base = estimate(&fx, s, LOOM_POLICY_NONE), c = LOOM_LAYER_COST_INIT;
    loom_error err = {0, ""};
    const char *const half[] = {"gemm_efficiency_scale", "0.5", NULL};
    ck_assert_int_eq(estimate_with(&fx, half, s, LOOM_POLICY_NONE, &c, &err),
                     LOOM_OK);
    ASSERT_REL(c.forward_ms, 2 * base.forward_ms);
    /* 0.7 x 2 is capped at peak */
    const char *const two[] = {"gemm_efficiency_scale", "2", NULL};
    ck_assert_int_eq(estimate_with(&fx, two, s, LOOM_POLICY_NONE, &c, &err),
                     LOOM_OK);
    ASSERT_REL(c.forward_ms, base.forward_ms * 0.7);

    const char *const zero[] = {"gemm_efficiency_scale", "0", NULL};
    ck_assert_int_eq(estimate_with(&fx, zero, s, LOOM_POLICY_NONE, &c, &err),
                     LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "gemm_efficiency_scale"));
    ck_assert_ptr_nonnull(strstr(err.message, "(0, 2], found 0"));
    const char *const word[] = {"gemm_efficiency_scale", "fast", NULL};
    ck_assert_int_eq(estimate_with(&fx, word, s, LOOM_POLICY_NONE, &c, &err),
                     LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "expected a number"));
    const char *const bad_bool[] = {"distributed_optimizer", "2", NULL};
    ck_assert_int_eq(estimate_with(&fx, bad_bool, s, LOOM_POLICY_NONE, &c,
                                   &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "distributed_optimizer"));
}
END_TEST

START_TEST(zero_tokens_cost_nothing_but_weights)
{
    fixture fx;
    fx_init(&fx, LLAMA3_8B, 32, LOOM_MODULE_BACKBONE, 0, 0);
    loom_layer_cost c = estimate(&fx, seq_shape(0, 0, 4, 1), LOOM_POLICY_NONE);
    ck_assert_double_eq(c.forward_ms, 0);
    ck_assert_double_eq(c.input_grad_ms, 0);
    ck_assert_double_eq(c.flops, 0);
    ck_assert_int_eq(c.activation_bytes, 0);
    ck_assert(c.param_bytes > 0);
}
END_TEST

/* Runs estimate on `fx` and checks the status and a message fragment. */
static void expect_error(fixture *fx, int32_t module, int32_t layer,
                         loom_shape s, int32_t policy, const char *fragment)
{
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    const loom_cost_model_vtable *vt = vtable();
    void *self = NULL;
    loom_error err = {0, ""};
    loom_layer_cost c = LOOM_LAYER_COST_INIT;
    ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h),
                                NULL, &self, &err), LOOM_OK);
    int rc = vt->estimate(self, &fx->problem, module, layer, &s, policy, &c,
                          &err);
    vt->destroy(self);
    loom_mock_host_free(h);
    ck_assert_int_eq(rc, LOOM_EINVAL);
    ck_assert_int_eq(err.code, LOOM_EINVAL);
    ck_assert_msg(strstr(err.message, fragment) != NULL,
                  "message \"%s\" lacks \"%s\"", err.message, fragment);
}

START_TEST(errors_name_what_was_expected)
{
    fixture fx;
    fx_init(&fx, LLAMA3_8B, 1, LOOM_MODULE_BACKBONE, 0, 0);
    loom_shape s = seq_shape(1, 128, 1, 1);
    expect_error(&fx, 3, 0, s, 0, "module index 3 out of range [0, 1)");
    expect_error(&fx, 0, 1, s, 0, "module \"llm\": layer 1 out of range [0, 1)");
    expect_error(&fx, 0, 0, s, 7, "memory policy in [0, 3), found 7");
    s.tp = 0;
    expect_error(&fx, 0, 0, s, 0, "tp >= 1");
    s.tp = 1;
    fx.cluster.eff_gemm = 0;
    expect_error(&fx, 0, 0, s, 0,
                 "cluster \"test\": expected eff_gemm in (0, 1], found 0");
    fx.cluster.eff_gemm = 0.7;
    fx.cluster.peak_flops = -1;
    expect_error(&fx, 0, 0, s, 0, "expected peak_flops > 0, found -1");
    fx.cluster.peak_flops = 989e12;
    fx.cluster.nvlink_bytes_per_s = 0;
    s.tp = 2;
    expect_error(&fx, 0, 0, s, 0, "expected nvlink_bytes_per_s > 0 for TP 2");
    s.tp = 1;
    fx.layer.kv_heads = 64;
    expect_error(&fx, 0, 0, s, 0,
                 "layer 0: expected kv_heads in [1, heads], found 64");
    fx.layer.kv_heads = 8;
    loom_stage_times st;
    memset(&st, 0, sizeof st);
    fx.problem.kind = LOOM_PROBLEM_STAGE_TIMES;
    fx.problem.model = NULL;
    fx.problem.stage_times = &st;
    expect_error(&fx, 0, 0, s, 0,
                 "expected a model problem (model + cluster), found a "
                 "stage-times problem");
}
END_TEST

START_TEST(manifest_matches_binary)
{
    const loom_plugin_info *info = loom_static_roofline();
    ck_assert_uint_eq(info->struct_size, sizeof(loom_plugin_info));
    ck_assert_uint_eq(info->abi_version, LOOM_ABI_VERSION);
    ck_assert_ptr_null(info->role(LOOM_ROLE_RANKER));
    const loom_cost_model_vtable *vt = vtable();
    ck_assert_uint_eq(vt->header.struct_size, sizeof(loom_cost_model_vtable));
    ck_assert_uint_eq(vt->header.role_version, LOOM_COST_MODEL_VERSION);

    FILE *f = fopen(loom_test_src("plugins/roofline/manifest.json"), "rb");
    ck_assert_ptr_nonnull(f);
    static char text[8192];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    cJSON *m = cJSON_Parse(text);
    ck_assert_ptr_nonnull(m);
    ck_assert_str_eq(cJSON_GetObjectItem(m, "id")->valuestring, info->id);
    ck_assert_str_eq(cJSON_GetObjectItem(m, "version")->valuestring,
                     info->version);
    const cJSON *prov = cJSON_GetObjectItem(m, "provides");
    ck_assert_str_eq(cJSON_GetObjectItem(prov, "role")->valuestring,
                     LOOM_ROLE_COST_MODEL);
    ck_assert_str_eq(cJSON_GetObjectItem(prov, "name")->valuestring,
                     "roofline");
    /* the manifest defaults are the ones the plugin falls back to */
    const cJSON *params = cJSON_GetObjectItem(m, "params");
    ck_assert_double_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(
        params, "gemm_efficiency_scale"), "default")->valuedouble, 1.0);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(
        params, "distributed_optimizer"), "default")));
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(
        params, "flash_attention"), "default")));
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(
        params, "sequence_parallel"), "default")));
    cJSON_Delete(m);
}
END_TEST

/* The roofline suite. */
static Suite *roofline_suite(void)
{
    Suite *s = suite_create("roofline");
    TCase *tc = tcase_create("model");
    tcase_add_test(tc, llama3_8b_forward_flops);
    tcase_add_test(tc, fsdp_shards_weights_and_gradients);
    tcase_add_test(tc, causal_and_cross_attention_flops);
    tcase_add_test(tc, operator_time_is_max_of_three_terms);
    tcase_add_test(tc, compute_bound_layer_time_closed_form);
    tcase_add_test(tc, memory_bound_layer_time_closed_form);
    tcase_add_test(tc, tensor_parallel_halves_compute_and_adds_collectives);
    tcase_add_test(tc, frozen_aware_backward);
    tcase_add_test(tc, policies_order_memory_and_recompute);
    tcase_add_test(tc, flash_attention_param);
    tcase_add_test(tc, hf_eager_kernels_closed_form);
    tcase_add_test(tc, unfused_attention_computes_every_score);
    tcase_add_test(tc, hf_eager_kernels_refuse_flash_attention);
    tcase_add_test(tc, flash2_attention_kernel_closed_form);
    tcase_add_test(tc, sequence_parallel_splits_activations_and_collectives);
    tcase_add_test(tc, preset_parameter_counts);
    tcase_add_test(tc, fp32_elements_double_the_bytes);
    tcase_add_test(tc, matmul_precision_picks_the_peak);
    tcase_add_test(tc, rank_tail_reports_what_it_assumes);
    tcase_add_test(tc, fp8_runs_the_linears_and_pays_their_casts);
    tcase_add_test(tc, optimizer_efficiency);
    tcase_add_test(tc, param_and_state_bytes);
    tcase_add_test(tc, gemm_efficiency_scale_param);
    tcase_add_test(tc, zero_tokens_cost_nothing_but_weights);
    tcase_add_test(tc, errors_name_what_was_expected);
    tcase_add_test(tc, context_parallel_splits_the_sequence);
    tcase_add_test(tc, size_curve_lowers_small_operators);
    tcase_add_test(tc, vocabulary_costs_first_and_last_layer);
    tcase_add_test(tc, memo_returns_what_computing_returns);
    tcase_add_test(tc, tp_comm_overlap_hides_collectives);
    tcase_add_test(tc, tp_comm_overlap_share_scales_what_is_hidden);
    tcase_add_test(tc, exposed_comm_is_the_collectives);
    tcase_add_test(tc, rank_tail_follows_params);
    tcase_add_test(tc, manifest_matches_binary);
    suite_add_tcase(s, tc);
    return s;
}

/* Runs the suite. */
int main(void)
{
    return loom_test_main(roofline_suite());
}
