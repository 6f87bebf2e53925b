/* test_cluster_io.c - cluster presets, cluster.json parsing and errors. */
#include <math.h>
#include <string.h>
#include <loom/sys/problem.h>
#include "testutil.h"

/* Loads a cluster that must load. */
static loom_cluster_data *must_load(const char *spec)
{
    loom_error e;
    loom_cluster_data *c = NULL;
    memset(&e, 0, sizeof e);
    int rc = loom_cluster_load(spec, &c, &e);
    ck_assert_msg(rc == LOOM_OK, "%s: %s", spec, e.message);
    ck_assert_ptr_nonnull(c);
    return c;
}

/* Asserts that cluster JSON `json` fails with EINVAL naming the file and
 * containing `frag`. */
static void expect_error(const char *json, const char *frag)
{
    loom_error e;
    loom_cluster_data *c = NULL;
    memset(&e, 0, sizeof e);
    int rc = loom_cluster_load(loom_test_tmpfile(".json", json), &c, &e);
    ck_assert_int_eq(rc, LOOM_EINVAL);
    ck_assert_ptr_null(c);
    ck_assert_msg(strstr(e.message, frag) != NULL, "message \"%s\" lacks \"%s\"", e.message,
                  frag);
    ck_assert_msg(strstr(e.message, "/tmp/loom-test-") != NULL, "message \"%s\" lacks the file",
                  e.message);
}

START_TEST(test_presets)
{
    const char *const *names = loom_cluster_preset_names();
    int n = 0;
    while (names[n])
        n++;
    ck_assert_int_eq(n, 5);

    loom_cluster_data *d = must_load("H800");
    const loom_cluster *c = loom_cluster_data_cluster(d);
    ck_assert_str_eq(c->name, "h800");
    ck_assert_double_eq(c->peak_flops, 989e12);
    ck_assert_double_eq(c->hbm_bytes_per_s, 3.35e12);
    ck_assert_int_eq(c->hbm_bytes, 85899345920LL); /* 80 GiB */
    ck_assert_int_eq(c->gpus_per_node, 8);
    ck_assert_double_eq(c->nvlink_bytes_per_s, 200e9);
    ck_assert_double_eq(c->net_bytes_per_s, 25e9); /* 8 x 200 Gb/s RoCE over 8 GPUs */
    /* the Hopper set fitted to the fidelity table (docs/cost-models.md) */
    ck_assert_double_eq(c->eff_gemm, 0.6);
    ck_assert_double_eq(c->eff_attention, 0.45);
    ck_assert_double_eq(c->eff_memory, 0.8);
    ck_assert_double_eq(c->eff_collective, 0.7);
    ck_assert_double_eq(c->gemm_half_flops, 4e9);
    ck_assert_double_eq(c->attention_half_flops, 4e9);
    ck_assert_double_eq(c->p2p_latency_ms, 0.02);
    ck_assert_double_eq(c->peak_flops_tf32, 494.7e12); /* H100 SXM datasheet, dense */
    ck_assert_double_eq(c->peak_flops_fp8, 1978.9e12);
    loom_cluster_data_free(d);

    d = must_load("h100");
    c = loom_cluster_data_cluster(d);
    ck_assert_double_eq(c->nvlink_bytes_per_s, 450e9);
    ck_assert_double_eq(c->net_bytes_per_s, 50e9);
    loom_cluster_data_free(d);

    d = must_load("a100");
    c = loom_cluster_data_cluster(d);
    ck_assert_double_eq(c->peak_flops, 312e12);
    ck_assert_double_eq(c->hbm_bytes_per_s, 2.0e12);
    ck_assert_double_eq(c->nvlink_bytes_per_s, 300e9);
    ck_assert_double_eq(c->eff_gemm, 0.75); /* no fitted set: the defaults, no curve */
    ck_assert_double_eq(c->gemm_half_flops, 0);
    loom_cluster_data_free(d);

    d = must_load("a40");
    c = loom_cluster_data_cluster(d);
    ck_assert_double_eq(c->peak_flops, 149.7e12);
    ck_assert_double_eq(c->hbm_bytes_per_s, 696e9);
    ck_assert_int_eq(c->hbm_bytes, 48LL << 30);
    ck_assert_double_eq(c->nvlink_bytes_per_s, 32e9);
    ck_assert_double_eq(c->net_bytes_per_s, 12.5e9);
    loom_cluster_data_free(d);

    /* FlashAttention-2 on Hopper: the fused factor times 0.62, the
     * FlashAttention-3 paper's FA2 over cuDNN (docs/cost-models.md,
     * "Attention kernels"), to four places; none before Hopper */
    for (int i = 0; names[i]; i++) {
        d = must_load(names[i]);
        c = loom_cluster_data_cluster(d);
        if (names[i][0] == 'h')
            ck_assert_msg(fabs(c->eff_attention_flash2 - 0.62 * c->eff_attention) < 5e-5,
                          "%s: attention_flash2 %g, expected 0.62 x %g", names[i],
                          c->eff_attention_flash2, c->eff_attention);
        else
            ck_assert_double_eq(c->eff_attention_flash2, 0);
        loom_cluster_data_free(d);
    }
}
END_TEST

START_TEST(test_example_files_equal_presets)
{
    const char *const *names = loom_cluster_preset_names();
    for (int i = 0; names[i]; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "examples/clusters/%s.json", names[i]);
        loom_cluster_data *f = must_load(loom_test_src(rel));
        loom_cluster_data *p = must_load(names[i]);
        const loom_cluster *a = loom_cluster_data_cluster(f), *b = loom_cluster_data_cluster(p);
        ck_assert_str_eq(a->name, b->name);
        ck_assert_double_eq(a->peak_flops, b->peak_flops);
        ck_assert_double_eq(a->hbm_bytes_per_s, b->hbm_bytes_per_s);
        ck_assert_int_eq(a->hbm_bytes, b->hbm_bytes);
        ck_assert_int_eq(a->gpus_per_node, b->gpus_per_node);
        ck_assert_double_eq(a->nvlink_bytes_per_s, b->nvlink_bytes_per_s);
        ck_assert_double_eq(a->net_bytes_per_s, b->net_bytes_per_s);
        ck_assert_double_eq(a->eff_gemm, b->eff_gemm);
        ck_assert_double_eq(a->eff_attention, b->eff_attention);
        ck_assert_double_eq(a->eff_memory, b->eff_memory);
        ck_assert_double_eq(a->eff_collective, b->eff_collective);
        ck_assert_double_eq(a->gemm_half_flops, b->gemm_half_flops);
        ck_assert_double_eq(a->attention_half_flops, b->attention_half_flops);
        ck_assert_double_eq(a->p2p_latency_ms, b->p2p_latency_ms);
        ck_assert_double_eq(a->host_bytes_per_s, b->host_bytes_per_s);
        ck_assert_double_eq(a->kernel_launch_us, b->kernel_launch_us);
        ck_assert_double_eq(a->attention_backward, b->attention_backward);
        ck_assert_double_eq(a->eff_optimizer, b->eff_optimizer);
        ck_assert_double_eq(a->eff_attention_flash2, b->eff_attention_flash2);
        ck_assert_double_eq(a->peak_flops_tf32, b->peak_flops_tf32);
        ck_assert_double_eq(a->peak_flops_fp32, b->peak_flops_fp32);
        ck_assert_double_eq(a->peak_flops_fp8, b->peak_flops_fp8);
        ck_assert_double_gt(b->peak_flops_fp32, 0); /* every preset gives FP32 and TF32 */
        ck_assert_double_gt(b->peak_flops_tf32, b->peak_flops_fp32);
        loom_cluster_data_free(f);
        loom_cluster_data_free(p);
    }
}
END_TEST

#define REQUIRED "\"name\": \"lab\", \"peak_flops\": 1e14, \"hbm_bytes_per_s\": 1e12, " \
    "\"hbm_bytes\": 1000, \"nvlink_bytes_per_s\": 1e11, \"net_bytes_per_s\": 1e10"

START_TEST(test_defaults)
{
    loom_cluster_data *d = must_load(loom_test_tmpfile(".json", "{" REQUIRED "}"));
    const loom_cluster *c = loom_cluster_data_cluster(d);
    ck_assert_str_eq(c->name, "lab");
    ck_assert_int_eq(c->hbm_bytes, 1000);
    ck_assert_int_eq(c->gpus_per_node, 8);
    ck_assert_double_eq(c->eff_gemm, 0.75);
    ck_assert_double_eq(c->eff_attention, 0.6);
    ck_assert_double_eq(c->eff_memory, 0.8);
    ck_assert_double_eq(c->eff_collective, 0.7);
    ck_assert_double_eq(c->gemm_half_flops, 0); /* no size curve unless set */
    ck_assert_double_eq(c->attention_half_flops, 0);
    ck_assert_double_eq(c->p2p_latency_ms, 0.02);
    ck_assert_double_eq(c->peak_flops_tf32, 0); /* other precisions: not given */
    ck_assert_double_eq(c->peak_flops_fp8, 0);
    ck_assert_double_eq(c->eff_attention_flash2, 0); /* absent: the fused factor */
    loom_cluster_data_free(d);
    d = must_load(loom_test_tmpfile(".json", "{" REQUIRED ", \"peak_flops_tf32\": 5e13, "
                                    "\"peak_flops_fp32\": 2.5e13, \"peak_flops_fp8\": 2e14}"));
    c = loom_cluster_data_cluster(d);
    ck_assert_double_eq(c->peak_flops_tf32, 5e13);
    ck_assert_double_eq(c->peak_flops_fp32, 2.5e13);
    ck_assert_double_eq(c->peak_flops_fp8, 2e14);
    loom_cluster_data_free(d);

    d = must_load(loom_test_tmpfile(".json", "{" REQUIRED ", \"gpus_per_node\": 4, "
                                    "\"efficiency\": {\"gemm\": 1, \"attention_flash2\": 0.3}, "
                                    "\"p2p_latency_ms\": 0}"));
    c = loom_cluster_data_cluster(d);
    ck_assert_int_eq(c->gpus_per_node, 4);
    ck_assert_double_eq(c->eff_gemm, 1.0);
    ck_assert_double_eq(c->eff_attention, 0.6);
    ck_assert_double_eq(c->eff_attention_flash2, 0.3);
    ck_assert_double_eq(c->p2p_latency_ms, 0.0);
    loom_cluster_data_free(d);
}
END_TEST

START_TEST(test_not_found)
{
    loom_error e;
    loom_cluster_data *c = NULL;
    memset(&e, 0, sizeof e);
    ck_assert_int_eq(loom_cluster_load("v100", &c, &e), LOOM_ENOTFOUND);
    ck_assert_ptr_nonnull(strstr(e.message, "cluster \"v100\""));
    ck_assert_ptr_nonnull(strstr(e.message, "h800, h100, h200, a100, a40"));
    memset(&e, 0, sizeof e);
    ck_assert_int_eq(loom_cluster_load("/nonexistent/c.json", &c, &e), LOOM_EIO);
    ck_assert_ptr_nonnull(strstr(e.message, "/nonexistent/c.json: cannot open"));
    ck_assert_ptr_nonnull(strstr(e.message, "cluster presets: h800"));
    memset(&e, 0, sizeof e);
    ck_assert_int_eq(loom_cluster_load("", &c, &e), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.message, "found an empty string"));
}
END_TEST

START_TEST(test_errors)
{
    expect_error("{" REQUIRED ", \"peak\": 1}", "unknown field \"peak\"");
    expect_error("{\"name\": \"lab\"}",
                 "peak_flops: expected a number in [1, 1e+18], found nothing (missing field)");
    expect_error("{\"name\": \"lab\", \"peak_flops\": -1}",
                 "peak_flops: expected a number in [1, 1e+18], found -1");
    expect_error("{\"name\": \"lab\", \"peak_flops\": \"fast\"}",
                 "peak_flops: expected a number in [1, 1e+18], found \"fast\"");
    expect_error("{\"name\": \"lab\", \"peak_flops\": 1e999}", "expected a finite number");
    expect_error("{\"name\": \"lab\", \"peak_flops\": 1e14, \"hbm_bytes_per_s\": 1e12, "
                 "\"hbm_bytes\": 1.5}", "hbm_bytes: expected an integer in [1, ");
    expect_error("{\"name\": \"lab\", \"peak_flops\": 1e14, \"hbm_bytes_per_s\": 1e12, "
                 "\"hbm_bytes\": 1000, \"nvlink_bytes_per_s\": 1e11}",
                 "net_bytes_per_s: expected a number in [1, 1e+15], found nothing");
    expect_error("{" REQUIRED ", \"gpus_per_node\": 0}",
                 "gpus_per_node: expected an integer in [1, 1024], found 0");
    expect_error("{" REQUIRED ", \"efficiency\": {\"gemm\": 0}}",
                 "efficiency.gemm: expected a number in (0, 1], found 0");
    expect_error("{" REQUIRED ", \"efficiency\": {\"memory\": 1.5}}",
                 "efficiency.memory: expected a number in [0, 1], found 1.5");
    expect_error("{" REQUIRED ", \"efficiency\": {\"flops\": 0.5}}",
                 "efficiency: unknown field \"flops\" (expected one of: gemm, attention, "
                 "memory, collective, gemm_half_flops, attention_half_flops, kernel_launch_us, "
                 "attention_backward, optimizer, attention_flash2)");
    expect_error("{" REQUIRED ", \"efficiency\": {\"attention_flash2\": 1.5}}",
                 "efficiency.attention_flash2: expected a number in [0, 1], found 1.5");
    expect_error("{" REQUIRED ", \"efficiency\": {\"attention_backward\": 0.5}}",
                 "efficiency.attention_backward: expected a number in [1, 10], found 0.5");
    expect_error("{" REQUIRED ", \"efficiency\": {\"optimizer\": 0}}",
                 "efficiency.optimizer: expected a number in (0, 1], found 0");
    expect_error("{" REQUIRED ", \"efficiency\": {\"kernel_launch_us\": -1}}",
                 "efficiency.kernel_launch_us: expected a number in [0, 1000], found -1");
    expect_error("{" REQUIRED ", \"efficiency\": 0.5}",
                 "efficiency: expected an object, found 0.5");
    expect_error("{" REQUIRED ", \"p2p_latency_ms\": -0.5}",
                 "p2p_latency_ms: expected a number in [0, 1000000], found -0.5");
    expect_error("[1, 2]", "expected an object, found an array");
    expect_error("{\"name\": \"lab\",", "malformed JSON");
}
END_TEST

/* Builds the suite. */
static Suite *cluster_io_suite(void)
{
    Suite *s = suite_create("cluster_io");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_presets);
    tcase_add_test(tc, test_example_files_equal_presets);
    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_not_found);
    tcase_add_test(tc, test_errors);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(cluster_io_suite());
}
