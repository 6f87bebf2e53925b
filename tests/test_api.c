/*
 * test_api.c - the embedding C API (loom/api.h) on hostile arguments: the
 * samples of loom_planner_plan pass the workload file's rules (NaN or
 * negative seconds, negative or huge token counts, empty samples, mixed
 * packing are refused with the field named), every result getter and
 * loom_result_* call has a documented answer for NULL, and a planned
 * result's numbers are finite.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <loom/api.h>
#include "testutil.h"

static loom_planner *planner;

/* Opens the default planner (vlm-s, megatron-1f1b) once for the suite. */
static void open_planner(void)
{
    loom_planner_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.manifest = loom_test_src("examples/manifests/megatron-1f1b.json");
    loom_error err = {0, ""};
    ck_assert_msg(loom_planner_open(&o, &planner, &err) == LOOM_OK, "%s", err.message);
}

static void close_planner(void)
{
    loom_planner_close(planner);
    planner = NULL;
}

/* Plans `n` samples and expects LOOM_EINVAL with `fragment` in the message. */
static void expect_refused(const loom_sample *s, int32_t n, const char *fragment)
{
    loom_result *r = (loom_result *)&r; /* must be reset to NULL */
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_planner_plan(planner, s, n, &r, &err), LOOM_EINVAL);
    ck_assert_ptr_null(r);
    ck_assert_msg(strstr(err.message, fragment) != NULL, "missing \"%s\" in: %s", fragment,
                  err.message);
}

START_TEST(samples_checked_like_workload_files)
{
    loom_sample ok = {812, 3, -1, 0, 0};
    loom_sample s[2] = {ok, ok};
    s[1].video_seconds = NAN;
    expect_refused(s, 2, "samples[1].video_seconds: expected a number in [0, 1000000], found nan");
    s[1] = ok;
    s[1].video_seconds = -1;
    expect_refused(s, 2, "samples[1].video_seconds: expected a number in [0, 1000000], found -1");
    s[1] = ok;
    s[1].audio_seconds = INFINITY;
    expect_refused(s, 2, "samples[1].audio_seconds: expected a number in [0, 1000000], found inf");
    s[1] = ok;
    s[1].text_tokens = -5;
    expect_refused(s, 2, "samples[1].text_tokens: expected an integer in [0, 4294967296], found -5");
    s[1] = ok;
    s[1].text_tokens = (int64_t)1 << 40;
    expect_refused(s, 2, "samples[1].text_tokens: expected an integer in [0, 4294967296]");
    s[1] = ok;
    s[1].images = -1;
    expect_refused(s, 2, "samples[1].images: expected an integer in [0, 1048576], found -1");
    s[1] = ok;
    s[1].microbatch = -7;
    expect_refused(s, 2, "samples[1].microbatch: expected an integer in [-1, 65535], found -7");
    s[1] = (loom_sample){0, 0, -1, 0, 0};
    expect_refused(s, 2, "samples[1]: expected a sample with text tokens, images, video or "
                         "audio, found an empty sample");
    s[1] = ok;
    s[1].microbatch = 0;
    expect_refused(s, 2, "samples[1].microbatch: expected no microbatch like samples[0], "
                         "found one");
    expect_refused(s, 0, "expected 1 to 1000000 samples, found 0");
    expect_refused(NULL, 1, "expected 1 to 1000000 samples");
    /* the JSON form refuses the same sample with the same words */
    loom_result *r = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_planner_plan_json(planner, "{\"samples\": [{\"text_tokens\": 8, "
                                                     "\"video_seconds\": -1}]}", &r, &err),
                     LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "samples[0].video_seconds: expected a number "
                                              "in [0, 1000000], found -1"));
}
END_TEST

START_TEST(null_arguments_have_answers)
{
    loom_error err = {0, ""};
    ck_assert_double_eq(loom_result_makespan_ms(NULL), -1);
    ck_assert_double_eq(loom_result_bubble_ratio(NULL), -1);
    ck_assert_double_eq(loom_result_mfu(NULL), -1);
    ck_assert_double_eq(loom_result_plan_time_ms(NULL), -1);
    ck_assert_int_eq(loom_result_ranks(NULL), 0);
    ck_assert_int_eq(loom_result_peak_bytes(NULL, 0), -1);
    ck_assert_ptr_null(loom_result_plan_json(NULL, &err));
    ck_assert_int_eq(err.code, LOOM_EINVAL);
    ck_assert_int_eq(loom_result_write(NULL, "/tmp", &err), LOOM_EINVAL);
    loom_result_free(NULL);
    loom_planner_close(NULL);
    loom_free(NULL);
    loom_sample ok = {812, 3, -1, 0, 0};
    loom_result *r = NULL;
    ck_assert_int_eq(loom_planner_plan(NULL, &ok, 1, &r, &err), LOOM_EINVAL);
    ck_assert_ptr_null(r);
    ck_assert_int_eq(loom_planner_plan(planner, &ok, 1, NULL, &err), LOOM_EINVAL);
    ck_assert_int_eq(loom_planner_plan_json(NULL, "{\"samples\": [{\"text_tokens\": 8}]}", &r,
                                            &err), LOOM_EINVAL);
    loom_planner *none = (loom_planner *)&none;
    ck_assert_int_eq(loom_planner_open(NULL, &none, &err), LOOM_EABI);
    ck_assert_ptr_null(none);
    ck_assert_int_eq(loom_planner_open(NULL, NULL, &err), LOOM_EINVAL);
    ck_assert_int_eq(loom_replan_json("{}", NULL, 0, 0, NULL, &err), LOOM_EINVAL);
    /* a NULL error pointer is allowed everywhere */
    ck_assert_int_eq(loom_planner_plan(planner, NULL, 0, &r, NULL), LOOM_EINVAL);
}
END_TEST

START_TEST(results_are_finite)
{
    loom_sample s[4] = {{812, 3, -1, 0, 0}, {40, 1, -1, 0, 0}, {96, 0, -1, 4.5, 0},
                        {64, 0, -1, 0, 12.25}};
    loom_result *r = NULL;
    loom_error err = {0, ""};
    ck_assert_msg(loom_planner_plan(planner, s, 4, &r, &err) == LOOM_OK, "%s", err.message);
    ck_assert(isfinite(loom_result_makespan_ms(r)) && loom_result_makespan_ms(r) > 0);
    ck_assert(isfinite(loom_result_bubble_ratio(r)));
    ck_assert(isfinite(loom_result_mfu(r)));
    ck_assert(isfinite(loom_result_plan_time_ms(r)));
    ck_assert_int_gt(loom_result_ranks(r), 0);
    ck_assert_int_ge(loom_result_peak_bytes(r, 0), 0);
    ck_assert_int_eq(loom_result_peak_bytes(r, loom_result_ranks(r)), -1);
    ck_assert_int_eq(loom_result_peak_bytes(r, -1), -1);
    char *json = loom_result_plan_json(r, &err);
    ck_assert_ptr_nonnull(json);
    ck_assert_ptr_null(strstr(json, "inf"));
    ck_assert_ptr_null(strstr(json, "nan"));
    loom_free(json);
    loom_result_free(r);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("api");
    TCase *tc = tcase_create("hostile");
    tcase_add_unchecked_fixture(tc, open_planner, close_planner);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, samples_checked_like_workload_files);
    tcase_add_test(tc, null_arguments_have_answers);
    tcase_add_test(tc, results_are_finite);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(suite());
}
