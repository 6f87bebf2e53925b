/* test_calibrate.c - Entrain's batch sizer (core/entrain_calibrate.c and
 * entrain_workload.c): the digest's trial counts, the allocation rounding
 * examples (and the TP-granularity contradiction of Table 4.2), the two
 * proportion estimators, Algorithm 2's doubling, its cap and seeding, and
 * the shape-derived quadratic workloads with frozen modules. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <loom/algorithms/entrain.h>
#include "testutil.h"

START_TEST(trial_counts)
{
    ck_assert_int_eq(loom_entrain_trials(0.05, 0.05), 59); /* the text's k */
    ck_assert_int_eq(loom_entrain_trials(0.01, 0.05), 90);
    ck_assert_int_eq(loom_entrain_trials(0.05, 0.01), 299);
    ck_assert_int_eq(loom_entrain_trials(0.01, 0.01), 459);
    ck_assert_int_eq(loom_entrain_trials(0.1, 0.1), 22);
    ck_assert_int_eq(loom_entrain_trials(0, 0.05), -1);
    ck_assert_int_eq(loom_entrain_trials(0.05, 1), -1);
}
END_TEST

START_TEST(allocation_rounding)
{
    int32_t out[2];
    loom_error err = {0, ""};
    /* 2 GPUs: 1:0.98 and 1:1.12 both round to 1:1 */
    double a[2] = {1, 0.98}, b[2] = {1, 1.12};
    ck_assert_int_eq(loom_entrain_allocate(a, 2, 2, 1, out, &err), LOOM_OK);
    ck_assert_int_eq(out[0], 1);
    ck_assert_int_eq(out[1], 1);
    ck_assert_int_eq(loom_entrain_allocate(b, 2, 2, 1, out, &err), LOOM_OK);
    ck_assert_int_eq(out[0], 1);
    ck_assert_int_eq(out[1], 1);
    /* SynthChartNet-3b, 1.27:1 on 16 GPUs: per GPU 8.95 -> 9:7, but in
     * TP=2 units 4.48 -> 4:4 = 8:8, the split Table 4.2 reports */
    double s[2] = {1.27, 1};
    ck_assert_int_eq(loom_entrain_allocate(s, 2, 16, 1, out, &err), LOOM_OK);
    ck_assert_int_eq(out[0], 9);
    ck_assert_int_eq(out[1], 7);
    ck_assert_int_eq(loom_entrain_allocate(s, 2, 16, 2, out, &err), LOOM_OK);
    ck_assert_int_eq(out[0], 8);
    ck_assert_int_eq(out[1], 8);
    /* a component without work keeps one unit */
    double z[2] = {0, 5};
    ck_assert_int_eq(loom_entrain_allocate(z, 2, 16, 2, out, &err), LOOM_OK);
    ck_assert_int_eq(out[0], 2);
    ck_assert_int_eq(out[1], 14);
    /* errors: odd GPUs with TP 2, fewer units than components */
    ck_assert_int_eq(loom_entrain_allocate(s, 2, 15, 2, out, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "not a multiple"));
    ck_assert_int_eq(loom_entrain_allocate(s, 2, 2, 2, out, &err), LOOM_EINVAL);
}
END_TEST

START_TEST(estimators_differ)
{
    /* ratio of sums (the allocation's estimator) vs mean of ratios (C.1):
     * (100, 1), (0, 10), (0, 10) -> 100/121 = 0.826 vs 0.330 */
    loom_entrain_work pool[4] = {{100, 1}, {0, 10}, {0, 10}, {0, 0}};
    double s = 0;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_entrain_share(pool, NULL, 3, LOOM_ENTRAIN_RATIO_OF_SUMS,
                                        &s, &err), LOOM_OK);
    ck_assert_double_eq_tol(s, 100.0 / 121.0, 1e-12);
    ck_assert_int_eq(loom_entrain_share(pool, NULL, 3, LOOM_ENTRAIN_MEAN_OF_RATIOS,
                                        &s, &err), LOOM_OK);
    ck_assert_double_eq_tol(s, (100.0 / 101.0) / 3, 1e-12);
    /* a zero-work sample is skipped by the mean of ratios */
    ck_assert_int_eq(loom_entrain_share(pool, NULL, 4, LOOM_ENTRAIN_MEAN_OF_RATIOS,
                                        &s, &err), LOOM_OK);
    ck_assert_double_eq_tol(s, (100.0 / 101.0) / 3, 1e-12);
    /* a batch with no work at all */
    int32_t idx[1] = {3};
    ck_assert_int_eq(loom_entrain_share(pool, idx, 1, LOOM_ENTRAIN_RATIO_OF_SUMS,
                                        &s, &err), LOOM_EINVAL);
}
END_TEST

/* A pool of n samples alternating encoder shares 0.5 -/+ spread/2: the
 * population share is 0.5 (8:8 of 16 GPUs, the middle of its bucket). */
static loom_entrain_work *mixed_pool(int n, double spread)
{
    loom_entrain_work *p = malloc((size_t)n * sizeof *p);
    for (int i = 0; i < n; i++) {
        double r = (i % 2) ? 1 + spread : 1 - spread;
        p[i].enc_ms = 50 * r;
        p[i].llm_ms = 50 * (2 - r);
    }
    return p;
}

START_TEST(calibrate_doubling)
{
    loom_entrain_calib_options o = {0.05, 0.05, 1, 512, 16, 1,
                                    LOOM_ENTRAIN_RATIO_OF_SUMS, 0, 7};
    loom_entrain_calib_result r;
    loom_error err = {0, ""};
    /* identical samples: stable at the first size */
    loom_entrain_work same[1] = {{60, 40}};
    ck_assert_int_eq(loom_entrain_calibrate(same, 1, &o, &r, &err), LOOM_OK);
    ck_assert_int_eq(r.b_min, 1);
    ck_assert_int_eq(r.trials, 59);
    ck_assert_int_eq(r.alloc[0] + r.alloc[1], 16);
    ck_assert_int_eq(r.rounds[0].trials_run, 59);
    /* more variance needs a larger (power-of-two) batch */
    loom_entrain_work *low = mixed_pool(1000, 0.05), *high = mixed_pool(1000, 0.3);
    loom_entrain_calib_result lo, hi;
    ck_assert_int_eq(loom_entrain_calibrate(low, 1000, &o, &lo, &err), LOOM_OK);
    ck_assert_int_eq(loom_entrain_calibrate(high, 1000, &o, &hi, &err), LOOM_OK);
    ck_assert_int_gt(hi.b_min, lo.b_min);
    ck_assert_int_eq(hi.b_min & (hi.b_min - 1), 0);
    ck_assert_int_eq(hi.rounds[hi.n_rounds - 1].batch, hi.b_min);
    ck_assert_int_eq(hi.rounds[0].stable, 0);
    ck_assert_int_gt(hi.rounds[0].n_seen, 1); /* small batches flip splits */
    for (int i = 0; i + 1 < hi.n_rounds; i++)
        ck_assert_int_eq(hi.rounds[i + 1].batch, 2 * hi.rounds[i].batch);
    /* the same seed gives the same answer; n0 scales the sizes */
    loom_entrain_calib_result again;
    ck_assert_int_eq(loom_entrain_calibrate(high, 1000, &o, &again, &err), LOOM_OK);
    ck_assert_int_eq(again.b_min, hi.b_min);
    ck_assert_int_eq(again.alloc[0], hi.alloc[0]);
    o.n0 = 3;
    ck_assert_int_eq(loom_entrain_calibrate(high, 1000, &o, &again, &err), LOOM_OK);
    ck_assert_int_eq(again.b_min % 3, 0);
    int32_t q = again.b_min / 3;
    ck_assert_int_eq(q & (q - 1), 0);
    free(low);
    free(high);
}
END_TEST

START_TEST(calibrate_cap_and_errors)
{
    /* a mean on the 8:8 / 9:7 breakpoint never stabilises: the cap stops
     * the doubling and the error asks for a larger global batch */
    loom_entrain_work pool[2] = {{17, 0}, {0, 15}}; /* share 17/32: 16 * 17/32 = 8.5 */
    loom_entrain_calib_options o = {0.05, 0.05, 1, 64, 16, 1,
                                    LOOM_ENTRAIN_RATIO_OF_SUMS, 0, 3};
    loom_entrain_calib_result r;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_entrain_calibrate(pool, 2, &o, &r, &err), LOOM_EINFEASIBLE);
    ck_assert_ptr_nonnull(strstr(err.message, "up to 64 samples"));
    ck_assert_ptr_nonnull(strstr(err.message, "global batch must grow"));
    ck_assert_int_eq(r.n_rounds, 7); /* 1, 2, ..., 64 */
    ck_assert_int_eq(r.b_min, 0);
    o.cap = 0;
    ck_assert_int_eq(loom_entrain_calibrate(pool, 2, &o, &r, &err), LOOM_EINVAL);
    o.cap = 64;
    o.gpus = 3;
    o.unit = 2;
    ck_assert_int_eq(loom_entrain_calibrate(pool, 2, &o, &r, &err), LOOM_EINVAL);
    o.gpus = 2;
    o.alpha = 1.5;
    ck_assert_int_eq(loom_entrain_calibrate(pool, 2, &o, &r, &err), LOOM_EINVAL);
}
END_TEST

START_TEST(shape_workloads)
{
    /* one-layer encoder (image, 4 tokens/image) -> one-layer backbone */
    loom_layer enc_l = {8, 16, 2, 2, 0, 0, 0, 0};
    loom_layer llm_l = {8, 16, 2, 1, 1, 1, 0, 0};
    const int32_t in[1] = {0};
    loom_module mods[2] = {
        {"vit", LOOM_MODULE_ENCODER, LOOM_MODALITY_IMAGE, 1, &enc_l, 4, 0, 1, 0,
         NULL, 0},
        {"llm", LOOM_MODULE_BACKBONE, LOOM_MODALITY_TEXT, 1, &llm_l, 1, 0, 1, 1,
         in, 0}};
    loom_model model = {"toy", 2, mods};
    loom_entrain_quad q[2];
    /* everything frozen: forward only */
    loom_entrain_quad_from_shapes(&model, q);
    /* encoder: b = 2*8*(8+16) + 2*64 + 2*8*16*2 = 384 + 128 + 512 = 1024,
     * a = 4*8 = 32 */
    ck_assert_double_eq_tol(q[0].b, 1024, 1e-9);
    ck_assert_double_eq_tol(q[0].a, 32, 1e-9);
    /* backbone: kv = 1 head of 4: b = 2*8*(8+8) + 128 + 2*8*16*3 = 1152,
     * causal a = 16 */
    ck_assert_double_eq_tol(q[1].b, 1152, 1e-9);
    ck_assert_double_eq_tol(q[1].a, 16, 1e-9);
    /* a trainable encoder: encoder F+B_d+B_w (x3), backbone F+B_d (x2) */
    mods[0].frozen = 0;
    loom_entrain_quad_from_shapes(&model, q);
    ck_assert_double_eq_tol(q[0].b, 3 * 1024, 1e-9);
    ck_assert_double_eq_tol(q[1].b, 2 * 1152, 1e-9);
    /* a sample of 2 images and 10 text tokens: encoder 2 * (32*16 + 3072*4),
     * backbone one sequence of 10 + 8 tokens */
    loom_sample s = {10, 2, -1, 0, 0};
    loom_entrain_work w = loom_entrain_sample_work(&model, q, &s);
    ck_assert_double_eq_tol(w.enc_ms, 2 * (3 * 32 * 16 + 3 * 1024 * 4), 1e-6);
    ck_assert_double_eq_tol(w.llm_ms, 2 * 16 * 18 * 18 + 2 * 1152 * 18, 1e-6);
    /* a text-only sample has no encoder work */
    loom_sample t = {10, 0, -1, 0, 0};
    ck_assert_double_eq(loom_entrain_sample_work(&model, q, &t).enc_ms, 0);
}
END_TEST

/* The suite of this file. */
static Suite *calibrate_suite(void)
{
    Suite *s = suite_create("entrain_calibrate");
    TCase *tc = tcase_create("calibrate");
    tcase_add_test(tc, trial_counts);
    tcase_add_test(tc, allocation_rounding);
    tcase_add_test(tc, estimators_differ);
    tcase_add_test(tc, calibrate_doubling);
    tcase_add_test(tc, calibrate_cap_and_errors);
    tcase_add_test(tc, shape_workloads);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(calibrate_suite());
}
