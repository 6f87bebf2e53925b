/* test_ffi.c - the `ffi` cost model against tests/ffi-lib: exact costs
 * from declared C functions (int64 / double arguments, double, float,
 * int64 and int32 results, policy-aware activations, zero arguments),
 * planning with it end to end, the header check (a function of the wrong
 * arity, a 32-bit parameter, a wrong return type) and every declaration
 * error, in the library and through `loom validate`. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "pipeline.h"
#include <loom/sys/session.h>
#include "run_priv.h"

#define TESTLIB LOOM_TEST_BINARY_DIR "/tests/ffi-lib/libloomffitest.so"
#define HEADER LOOM_TEST_SOURCE_DIR "/tests/ffi-lib/loomffitest.h"

/* Asserts that `text` contains `frag`. */
static void has(const char *text, const char *frag)
{
    ck_assert_msg(strstr(text, frag) != NULL, "missing \"%s\" in:\n%s", frag, text);
}

/* A planner manifest with the ffi cost model and `params` (a JSON object
 * body without braces); returns its path. */
static const char *manifest(const char *params)
{
    char text[4096];
    snprintf(text, sizeof text,
             "{\"loom_planner\": 1, \"name\": \"ffi-test\", \"pipeline\": ["
             "{\"role\": \"cost_model\", \"use\": \"ffi\", \"params\": {%s}},"
             "{\"role\": \"partitioner\", \"use\": \"uniform\"},"
             "{\"role\": \"ranker\", \"use\": \"fifo\"},"
             "{\"role\": \"interleaver\", \"use\": \"1f1b\"},"
             "{\"role\": \"memory_tuner\", \"use\": \"none\"}]}",
             params);
    return loom_test_tmpfile(".json", text);
}

/* Opens a session over vlm-s (tp=4, pp=4) with the manifest. */
static int open_session(loom_session *s, const char *params, loom_error *err)
{
    loom_session_args a;
    loom_session_args_init(&a);
    a.manifest = manifest(params);
    a.model = "vlm-s";
    a.parallel = "tp=4,pp=4,mb=8";
    a.iterations = 1;
    return loom_session_init(s, &a, err);
}

/* Calls the session's cost model for module/layer/tokens/policy. */
static loom_layer_cost estimate(loom_session *s, int32_t module, int32_t layer, int64_t tokens,
                                int upstream, int32_t policy)
{
    loom_step *st = &s->pl->steps[s->pl->cost_model];
    loom_shape shape = {.struct_size = (uint32_t)sizeof(loom_shape), .tokens = tokens,
                        .seq_sq_sum = (double)tokens * 100, .sequences = tokens / 100,
                        .tp = 4, .trainable_upstream = upstream};
    loom_layer_cost c = LOOM_LAYER_COST_INIT;
    loom_error err = {0};
    int rc = st->vt.cost_model.estimate(st->instance, &s->problem, module, layer, &shape, policy,
                                        &c, &err);
    ck_assert_msg(rc == LOOM_OK, "%s", err.message);
    return c;
}

/* 4 h^2 + 2 h f of a layer. */
static double weights(double h, double f)
{
    return 4 * h * h + 2 * h * f;
}

START_TEST(costs_from_declared_functions)
{
    loom_session s;
    loom_error err = {0};
    int rc = open_session(
        &s,
        "\"library\": \"" TESTLIB "\", \"header\": \"" HEADER "\","
        "\"forward\": \"double loomffi_forward_ms(hidden, ffn_hidden, tokens, tp, peak_flops)\","
        "\"activation\": \"int64 loomffi_activation_bytes(hidden, tokens, tp)\","
        "\"params\": \"int64 loomffi_param_bytes(hidden, ffn_hidden, tp)\","
        "\"flops\": \"double loomffi_flops(hidden, ffn_hidden, tokens)\"",
        &err);
    ck_assert_msg(rc == LOOM_OK, "%s", err.message);
    const loom_layer *l = &s.problem.model->modules[1].layers[0];
    ck_assert_int_eq(l->hidden, 4096);
    double peak = s.problem.cluster->peak_flops;
    double w = weights(4096, 14336);
    double fwd = 2.0 * 1000 * w / 4 / peak * 1e3;
    int64_t act = 34 * 4096 * 1000 / 4;
    int64_t par = (int64_t)(2 * w / 4);

    loom_layer_cost c = estimate(&s, 1, 0, 1000, 1, LOOM_POLICY_NONE);
    ck_assert_double_eq_tol(c.forward_ms, fwd, 1e-12 * fwd);
    ck_assert_double_eq_tol(c.input_grad_ms, fwd, 1e-12 * fwd);  /* 2 x fwd, half */
    ck_assert_double_eq_tol(c.weight_grad_ms, fwd, 1e-12 * fwd);
    ck_assert_double_eq(c.recompute_ms, 0);
    ck_assert_int_eq(c.activation_bytes, act);
    ck_assert_int_eq(c.transient_bytes, 0);
    ck_assert_int_eq(c.param_bytes, par);
    ck_assert_int_eq(c.state_bytes, 7 * par);
    ck_assert_double_eq(c.flops, 6.0 * 1000 * w);

    c = estimate(&s, 1, 0, 1000, 1, LOOM_POLICY_SELECTIVE);
    ck_assert_int_eq(c.activation_bytes, act / 2);
    ck_assert_int_eq(c.transient_bytes, act - act / 2);
    ck_assert_double_eq_tol(c.recompute_ms, 0.15 * fwd, 1e-12 * fwd);
    c = estimate(&s, 1, 0, 1000, 1, LOOM_POLICY_FULL);
    ck_assert_int_eq(c.activation_bytes, (int64_t)llround(0.1 * (double)act));
    ck_assert_double_eq_tol(c.recompute_ms, fwd, 1e-12 * fwd);

    /* nothing trainable upstream: no input gradient */
    c = estimate(&s, 1, 0, 1000, 0, LOOM_POLICY_NONE);
    ck_assert_double_eq(c.input_grad_ms, 0);
    ck_assert_double_eq_tol(c.weight_grad_ms, fwd, 1e-12 * fwd);
    /* an empty shape costs only weights */
    c = estimate(&s, 1, 0, 0, 1, LOOM_POLICY_NONE);
    ck_assert_double_eq(c.forward_ms, 0);
    ck_assert_int_eq(c.activation_bytes, 0);
    ck_assert_int_eq(c.param_bytes, par);
    /* the vision encoder's own layer shape reaches the function */
    c = estimate(&s, 0, 3, 500, 0, LOOM_POLICY_NONE);
    double fv = 2.0 * 500 * weights(1792, 15360) / 4 / peak * 1e3;
    ck_assert_double_eq_tol(c.forward_ms, fv, 1e-12 * fv);

    loom_plan plan;
    rc = loom_session_plan(&s, 0, &plan, &err);
    ck_assert_msg(rc == LOOM_OK, "%s", err.message);
    ck_assert_double_gt(plan.metrics.makespan_ms, 0);
    ck_assert_double_gt(plan.metrics.mfu, 0);
    ck_assert_double_lt(plan.metrics.mfu, 1);
    loom_plan_clear(&plan);
    loom_session_release(&s);
}
END_TEST

START_TEST(backward_function_policy_bytes_and_small_types)
{
    loom_session s;
    loom_error err = {0};
    int rc = open_session(
        &s,
        "\"library\": \"" TESTLIB "\", \"header\": \"" HEADER "\","
        "\"forward\": \"int32 loomffi_layer_plus_one(layer)\","
        "\"backward\": \"double loomffi_backward_ms(tokens:double, tp)\","
        "\"activation\": \"int64 loomffi_policy_bytes(tokens, policy)\","
        "\"flops\": \"float loomffi_half(hidden:double)\","
        "\"weight_grad_share\": 0.25",
        &err);
    ck_assert_msg(rc == LOOM_OK, "%s", err.message);
    loom_layer_cost c = estimate(&s, 1, 5, 2000, 1, LOOM_POLICY_FULL);
    ck_assert_double_eq(c.forward_ms, 6);
    ck_assert_double_eq_tol(c.input_grad_ms, 0.75 * 0.5, 1e-12);
    ck_assert_double_eq_tol(c.weight_grad_ms, 0.25 * 0.5, 1e-12);
    ck_assert_int_eq(c.activation_bytes, 2000 * 1 * 100); /* the function's own, no ratio */
    ck_assert_double_eq(c.recompute_ms, 6);
    ck_assert_double_eq(c.flops, 2048);
    c = estimate(&s, 1, 5, 2000, 1, LOOM_POLICY_NONE);
    ck_assert_int_eq(c.activation_bytes, 2000 * 3 * 100);
    ck_assert_int_eq(c.param_bytes, 0);
    loom_session_release(&s);

    rc = open_session(&s,
                      "\"library\": \"" TESTLIB "\", \"header\": \"" HEADER "\","
                      "\"forward\": \"double loomffi_constant()\", \"backward_factor\": 3",
                      &err);
    ck_assert_msg(rc == LOOM_OK, "%s", err.message);
    c = estimate(&s, 1, 0, 10, 1, LOOM_POLICY_NONE);
    ck_assert_double_eq(c.forward_ms, 1.25);
    ck_assert_double_eq(c.input_grad_ms + c.weight_grad_ms, 3.75);
    loom_session_release(&s);
}
END_TEST

START_TEST(declaration_errors)
{
    static const struct {
        const char *params, *frag;
    } cases[] = {
        {"\"library\": \"" TESTLIB "\", \"forward\": \"double loomffi_two_args(hiden, tokens)\"",
         "ffi: params.forward: argument 1: unknown field \"hiden\" (did you mean \"hidden\"? "
         "expected a layer, module, shape, cluster or parallel field listed in docs/ffi.md)"},
        {"\"library\": \"" TESTLIB "\", \"forward\": \"double loomffi_two_args(zzzzzz, tokens)\"",
         "unknown field \"zzzzzz\" (expected a layer, module"},
        {"\"library\": \"" TESTLIB "\", \"forward\": \"double loomffi_two_args(hidden:int32, "
         "tokens)\"",
         "params.forward: argument 1 (hidden): unsupported type \"int32\" (expected int64 or "
         "double)"},
        {"\"library\": \"" TESTLIB "\", \"forward\": \"char *loomffi_two_args(hidden, tokens)\"",
         "params.forward: expected \"<type> <symbol>(<field>, ...)\" with type double, float, "
         "int64 or int32, found unsupported return type \"char\""},
        {"\"library\": \"" TESTLIB "\", \"forward\": \"double loomffi_two_args(hidden tokens)\"",
         "params.forward: expected \",\" or \")\" after argument 1"},
        {"\"library\": \"/nonexistent/libnothing.so\", \"forward\": \"double f(tokens)\"",
         "ffi: params.library: cannot open \"/nonexistent/libnothing.so\": "},
        {"\"forward\": \"double f(tokens)\"",
         "ffi: params.library: expected the path of a shared library, found an empty string"},
        {"\"library\": \"" TESTLIB "\"", "ffi: params.forward: expected a signature"},
        {"\"library\": \"" TESTLIB "\", \"forward\": \"double loomffi_missing(tokens)\"",
         "ffi: params.forward: symbol loomffi_missing not found in " TESTLIB},
        {"\"library\": \"" TESTLIB "\", \"header\": \"" HEADER "\", \"forward\": \"double "
         "loomffi_two_args(hidden, tokens, tp)\"",
         "ffi: params.forward: loomffi_two_args takes 2 parameters in loomffitest.h:45, the "
         "signature passes 3 arguments"},
        {"\"library\": \"" TESTLIB "\", \"header\": \"" HEADER "\", \"backward\": \"double "
         "loomffi_int_param(hidden, tokens)\", \"forward\": \"double loomffi_constant()\"",
         "ffi: params.backward: parameter 1 of loomffi_int_param is a 32-bit int in "
         "loomffitest.h:48, the signature passes hidden as int64"},
        {"\"library\": \"" TESTLIB "\", \"header\": \"" HEADER "\", \"forward\": \"int64 "
         "loomffi_forward_ms(hidden, ffn_hidden, tokens, tp, peak_flops)\"",
         "params.forward: loomffi_forward_ms returns double in loomffitest.h:16, the signature "
         "declares int64"},
        {"\"library\": \"" TESTLIB "\", \"header\": \"" HEADER "\", \"forward\": \"double "
         "loomffi_forward_ms(hidden, ffn_hidden, tokens, tp, peak_flops:int64)\"",
         "parameter 5 of loomffi_forward_ms is double in loomffitest.h:16, the signature passes "
         "peak_flops as int64"},
        {"\"library\": \"" TESTLIB "\", \"header\": \"" HEADER "\", \"forward\": \"double "
         "loomffi_missing(tokens)\"",
         "params.forward: no prototype of loomffi_missing in the header"},
        {"\"library\": \"" TESTLIB "\", \"header\": \"/nonexistent/x.h\", \"forward\": \"double "
         "loomffi_constant()\"",
         "params.header: cannot open \"/nonexistent/x.h\""},
        {"\"library\": \"" TESTLIB "\", \"forward\": \"double loomffi_two_args(hidden, tokens)\", "
         "\"arity\": 2",
         "unknown"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        loom_session s;
        loom_error err = {0};
        int rc = open_session(&s, cases[i].params, &err);
        ck_assert_msg(rc == LOOM_EINVAL, "case %zu: status %d: %s", i, rc, err.message);
        has(err.message, cases[i].frag);
        if (i + 1 < sizeof cases / sizeof cases[0])
            has(err.message, "plugin org.loom.ffi: ");
        loom_session_release(&s);
    }
}
END_TEST

START_TEST(bad_result_fails_the_plan)
{
    loom_session s;
    loom_error err = {0};
    int rc = open_session(&s,
                          "\"library\": \"" TESTLIB "\", \"forward\": \"double "
                          "loomffi_negative(tokens)\"",
                          &err);
    ck_assert_msg(rc == LOOM_OK, "%s", err.message);
    loom_plan plan;
    rc = loom_session_plan(&s, 0, &plan, &err);
    ck_assert_int_eq(rc, LOOM_EPLUGIN);
    has(err.message, "loomffi_negative() (params.forward) returned -1 for module");
    has(err.message, "expected a finite number >= 0");
    loom_session_release(&s);
}
END_TEST

START_TEST(cli_validate_and_plan)
{
    char cmd[8192], *out = NULL;
    const char *bad = manifest("\"library\": \"" TESTLIB "\", \"header\": \"" HEADER "\","
                               "\"forward\": \"double loomffi_two_args(hidden, tokens, tp)\"");
    snprintf(cmd, sizeof cmd, "%s/bin/loom validate %s", LOOM_TEST_BINARY_DIR, bad);
    ck_assert_int_eq(loom_test_run(cmd, &out), 2);
    has(out, "loomffi_two_args takes 2 parameters in loomffitest.h:45, the signature passes 3 "
             "arguments");
    free(out);
    const char *good = manifest(
        "\"library\": \"" TESTLIB "\", \"header\": \"" HEADER "\","
        "\"forward\": \"double loomffi_forward_ms(hidden, ffn_hidden, tokens, tp, peak_flops)\","
        "\"activation\": \"int64 loomffi_activation_bytes(hidden, tokens, tp)\"");
    snprintf(cmd, sizeof cmd, "%s/bin/loom validate %s", LOOM_TEST_BINARY_DIR, good);
    ck_assert_int_eq(loom_test_run(cmd, &out), 0);
    free(out);
    snprintf(cmd, sizeof cmd,
             "%s/bin/loom plan --manifest %s --model vlm-s --parallel tp=4,pp=4,mb=8 "
             "--iterations 2 --json 2>/dev/null",
             LOOM_TEST_BINARY_DIR, good);
    ck_assert_int_eq(loom_test_run(cmd, &out), 0);
    has(out, "\"makespan_ms\": ");
    has(out, "\"iterations\": [");
    free(out);
}
END_TEST

static Suite *ffi_suite(void)
{
    Suite *s = suite_create("ffi");
    TCase *tc = tcase_create("ffi");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, costs_from_declared_functions);
    tcase_add_test(tc, backward_function_policy_bytes_and_small_types);
    tcase_add_test(tc, declaration_errors);
    tcase_add_test(tc, bad_result_fails_the_plan);
    tcase_add_test(tc, cli_validate_and_plan);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(ffi_suite());
}
