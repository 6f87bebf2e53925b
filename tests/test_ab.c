/* test_ab.c - `loom ab`: the paired statistics and verdict rule on exact
 * inputs, the exit-code rule, the three report writers, the suite file's
 * validation, the progress line, and the CLI end to end: 1f1b against
 * dual-queue over a 3-case suite (exit 0, swapped exit 1, byte-identical
 * JSON), the segfaulting and never-returning fixture rankers (reported
 * while the other cases complete, exit 3) and bad input (exit 2). */
#define _DEFAULT_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "testutil.h"
#include "ab.h"
#include "progress.h"

#define PLANNERS LOOM_TEST_BINARY_DIR "/tests/isolation-fixtures/planners/"

/* Asserts that `text` contains `frag`. */
static void has(const char *text, const char *frag)
{
    ck_assert_msg(strstr(text, frag) != NULL, "missing \"%s\" in:\n%s", frag, text);
}

/* ---- statistics ------------------------------------------------------------ */

START_TEST(quantiles)
{
    const double v[] = {1, 2, 3, 4};
    ck_assert_double_eq(loom_ab_quantile(v, 4, 0.5), 2.5);
    ck_assert_double_eq(loom_ab_quantile(v, 4, 0.25), 1.75);
    ck_assert_double_eq(loom_ab_quantile(v, 4, 0), 1);
    ck_assert_double_eq(loom_ab_quantile(v, 4, 1), 4);
    ck_assert_double_eq(loom_ab_quantile(v, 1, 0.3), 1);
    const double w[] = {10, 20, 30};
    ck_assert_double_eq(loom_ab_quantile(w, 3, 0.5), 20);
    ck_assert_double_eq_tol(loom_ab_quantile(w, 3, 0.975), 29.5, 1e-12);
}
END_TEST

START_TEST(identical_sides_are_the_same)
{
    const double a[] = {100, 200, 300};
    loom_ab_stats s;
    loom_error err = {0};
    ck_assert_int_eq(loom_ab_compare(a, a, 3, 0.01, 1, 2000, &s, &err), LOOM_OK);
    ck_assert_int_eq(s.n_pairs, 3);
    ck_assert_double_eq(s.mean_ratio, 1);
    ck_assert_double_eq(s.median_ratio, 1);
    ck_assert_double_eq(s.ci_low, 1);
    ck_assert_double_eq(s.ci_high, 1);
    ck_assert_int_eq(s.ties, 3);
    ck_assert_int_eq(s.wins + s.losses, 0);
    ck_assert_int_eq(s.verdict, LOOM_AB_SAME);
}
END_TEST

START_TEST(constant_ratios_give_a_point_interval)
{
    const double a[] = {100, 200, 400, 50};
    double slow[4], fast[4];
    for (int i = 0; i < 4; i++) {
        slow[i] = a[i] * 1.25;
        fast[i] = a[i] * 0.5;
    }
    loom_ab_stats s;
    loom_error err = {0};
    ck_assert_int_eq(loom_ab_compare(a, slow, 4, 0.01, 7, 500, &s, &err), LOOM_OK);
    ck_assert_double_eq(s.mean_ratio, 1.25);
    ck_assert_double_eq(s.ci_low, 1.25);
    ck_assert_double_eq(s.ci_high, 1.25);
    ck_assert_int_eq(s.losses, 4);
    ck_assert_int_eq(s.verdict, LOOM_AB_WORSE);
    ck_assert_int_eq(loom_ab_compare(a, fast, 4, 0.01, 7, 500, &s, &err), LOOM_OK);
    ck_assert_double_eq(s.mean_ratio, 0.5);
    ck_assert_int_eq(s.wins, 4);
    ck_assert_int_eq(s.verdict, LOOM_AB_BETTER);
    /* a threshold larger than the change makes it "same" */
    ck_assert_int_eq(loom_ab_compare(a, slow, 4, 0.3, 7, 500, &s, &err), LOOM_OK);
    ck_assert_int_eq(s.verdict, LOOM_AB_SAME);
    ck_assert_int_eq(s.ties, 4);
}
END_TEST

START_TEST(wins_losses_ties_and_median)
{
    const double a[] = {100, 100, 100, 100};
    const double b[] = {90, 110, 100, 100.5};
    loom_ab_stats s;
    loom_error err = {0};
    ck_assert_int_eq(loom_ab_compare(a, b, 4, 0.01, 3, 2000, &s, &err), LOOM_OK);
    ck_assert_int_eq(s.wins, 1);
    ck_assert_int_eq(s.losses, 1);
    ck_assert_int_eq(s.ties, 2);
    ck_assert_double_eq_tol(s.mean_ratio, 1.00125, 1e-12);
    ck_assert_double_eq_tol(s.median_ratio, 1.0025, 1e-12);
    ck_assert_double_lt(s.ci_low, 1);
    ck_assert_double_gt(s.ci_high, 1);
    ck_assert_int_eq(s.verdict, LOOM_AB_SAME);
}
END_TEST

START_TEST(mean_beyond_threshold_but_interval_over_one_is_same)
{
    /* ratios 0.9 and 1.3: mean 1.1 > 1.01, but resample means are 0.9, 1.1
     * or 1.3, so the 2.5 % quantile is 0.9 < 1 */
    const double a[] = {100, 100};
    const double b[] = {90, 130};
    loom_ab_stats s;
    loom_error err = {0};
    ck_assert_int_eq(loom_ab_compare(a, b, 2, 0.01, 11, 2000, &s, &err), LOOM_OK);
    ck_assert_double_eq_tol(s.mean_ratio, 1.1, 1e-12);
    ck_assert_double_eq_tol(s.ci_low, 0.9, 1e-12);
    ck_assert_double_eq_tol(s.ci_high, 1.3, 1e-12);
    ck_assert_int_eq(s.verdict, LOOM_AB_SAME);
}
END_TEST

START_TEST(bootstrap_is_seeded_and_bounded)
{
    double a[20], b[20];
    for (int i = 0; i < 20; i++) {
        a[i] = 100 + i;
        b[i] = a[i] * (1.0 + 0.01 * ((i * 7) % 5));
    }
    loom_ab_stats s1, s2, s3;
    loom_error err = {0};
    ck_assert_int_eq(loom_ab_compare(a, b, 20, 0.01, 42, 2000, &s1, &err), LOOM_OK);
    ck_assert_int_eq(loom_ab_compare(a, b, 20, 0.01, 42, 2000, &s2, &err), LOOM_OK);
    ck_assert_int_eq(loom_ab_compare(a, b, 20, 0.01, 43, 2000, &s3, &err), LOOM_OK);
    ck_assert_double_eq(s1.ci_low, s2.ci_low);
    ck_assert_double_eq(s1.ci_high, s2.ci_high);
    ck_assert_msg(s1.ci_low != s3.ci_low || s1.ci_high != s3.ci_high, "seed ignored");
    /* ratios are 1.00 .. 1.04: mean 1.02 */
    ck_assert_double_eq_tol(s1.mean_ratio, 1.02, 1e-12);
    ck_assert_double_ge(s1.ci_low, 1.0);
    ck_assert_double_le(s1.ci_high, 1.04);
    ck_assert_double_lt(s1.ci_low, s1.mean_ratio);
    ck_assert_double_gt(s1.ci_high, s1.mean_ratio);
    ck_assert_int_eq(s1.verdict, LOOM_AB_WORSE);
    ck_assert_uint_eq(loom_ab_case_seed("x"), loom_ab_case_seed("x"));
    ck_assert_uint_ne(loom_ab_case_seed("x"), loom_ab_case_seed("y"));
}
END_TEST

START_TEST(statistics_reject_bad_input)
{
    const double a[] = {100, 0}, b[] = {100, 100};
    loom_ab_stats s;
    loom_error err = {0};
    ck_assert_int_eq(loom_ab_compare(a, b, 0, 0.01, 1, 10, &s, &err), LOOM_EINVAL);
    has(err.message, "at least one paired iteration");
    ck_assert_int_eq(loom_ab_compare(a, b, 1, 1.5, 1, 10, &s, &err), LOOM_EINVAL);
    has(err.message, "threshold: expected a number in [0, 1), found 1.5");
    ck_assert_int_eq(loom_ab_compare(a, b, 2, 0.01, 1, 10, &s, &err), LOOM_EINVAL);
    has(err.message, "pair 1: expected positive finite makespans, found A 0 ms");
    ck_assert_int_eq(s.verdict, LOOM_AB_ERROR);
}
END_TEST

/* ---- reports and exit codes ------------------------------------------------- */

/* A run output with n results of makespan base * (1 + step * k). */
static void fake_run(loom_run_output *o, int n, double base, double step)
{
    memset(o, 0, sizeof *o);
    o->results = calloc((size_t)n, sizeof *o->results);
    o->n_results = o->n_iterations = n;
    for (int k = 0; k < n; k++) {
        o->results[k].iteration = k;
        o->results[k].makespan_ms = base * (1 + step * k);
        o->results[k].bubble_ratio = 0.25;
        o->results[k].peak_bytes = (int64_t)1 << 30;
        o->results[k].plan_time_ms = 2;
        o->results[k].mfu = -1;
    }
    o->failure.iteration = -1;
    o->failure.step = -1;
}

/* Three cases: same, worse (B 5 % slower), B crashed at iteration 1. */
static void fake_report(loom_ab_report *r, loom_ab_case_result res[3])
{
    memset(res, 0, 3 * sizeof *res);
    static const char *const names[] = {"same-case", "slow-case", "crash-case"};
    for (int i = 0; i < 3; i++) {
        res[i].name = names[i];
        res[i].problem = "model vlm-s, cluster h800";
    }
    fake_run(&res[0].a, 3, 100, 0.1);
    fake_run(&res[0].b, 3, 100, 0.1);
    fake_run(&res[1].a, 3, 100, 0.1);
    fake_run(&res[1].b, 3, 105, 0.1);
    fake_run(&res[2].a, 3, 100, 0);
    fake_run(&res[2].b, 1, 100, 0);
    loom_failure *f = &res[2].b.failure;
    f->kind = LOOM_FAIL_SIGNAL;
    f->status = LOOM_EPLUGIN;
    f->signal = 11;
    f->phase = LOOM_PHASE_ITERATION;
    f->iteration = 1;
    f->step = 2;
    snprintf(f->plugin_id, sizeof f->plugin_id, "fixture.crash-rank");
    loom_error err = {0};
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(loom_ab_evaluate(&res[i], 0.01, 2000, &err), LOOM_OK);
    memset(r, 0, sizeof *r);
    r->manifest_a = "a.json";
    r->manifest_b = "b&c.json";
    r->name_a = "base";
    r->name_b = "new <b>";
    r->threshold = 0.01;
    r->memory_threshold = -1;
    r->resamples = 2000;
    r->cases = res;
    r->n_cases = 3;
}

/* Writes a report into a malloc'd string. */
static char *render(int (*w)(const loom_ab_report *, FILE *, loom_error *),
                    const loom_ab_report *r)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    loom_error err = {0};
    ck_assert_int_eq(w(r, f, &err), LOOM_OK);
    fclose(f);
    return buf;
}

START_TEST(evaluate_pairs_and_summaries)
{
    loom_ab_report r;
    loom_ab_case_result res[3];
    fake_report(&r, res);
    ck_assert_int_eq(res[0].n_pairs, 3);
    ck_assert_int_eq(res[0].stats.verdict, LOOM_AB_SAME);
    ck_assert_int_eq(res[1].stats.verdict, LOOM_AB_WORSE);
    ck_assert_double_eq_tol(res[1].stats.mean_ratio, 1.05, 1e-12);
    ck_assert_double_eq_tol(res[1].sum_a.mean_makespan_ms, 110, 1e-9);
    ck_assert_double_eq_tol(res[1].sum_b.mean_makespan_ms, 115.5, 1e-9);
    ck_assert_int_eq(res[2].n_pairs, 1);
    ck_assert_int_eq(res[2].stats.verdict, LOOM_AB_ERROR);
    ck_assert_int_eq(loom_ab_case_status(&res[2]), LOOM_EPLUGIN);
    ck_assert_int_eq(loom_ab_exit_code(&r), 3);
    r.n_cases = 2;
    ck_assert_int_eq(loom_ab_exit_code(&r), 1);
    r.n_cases = 1;
    ck_assert_int_eq(loom_ab_exit_code(&r), 0);
    /* bad input outranks a plugin failure */
    res[0].a.failure.kind = LOOM_FAIL_STATUS;
    res[0].a.failure.status = LOOM_EINVAL;
    r.n_cases = 3;
    ck_assert_int_eq(loom_ab_exit_code(&r), 2);
    /* an infeasible plan is a planning failure: exit 1 */
    res[0].a.failure.status = LOOM_EINFEASIBLE;
    res[2].b.failure.kind = LOOM_FAIL_NONE;
    res[1].stats.verdict = LOOM_AB_SAME;
    res[2].stats.verdict = LOOM_AB_SAME;
    ck_assert_int_eq(loom_ab_exit_code(&r), 1);
    for (int i = 0; i < 3; i++)
        loom_ab_case_result_clear(&res[i]);
}
END_TEST

START_TEST(markdown_report)
{
    loom_ab_report r;
    loom_ab_case_result res[3];
    fake_report(&r, res);
    char *md = render(loom_ab_write_markdown, &r);
    has(md, "## loom ab: `base` (A) vs `new <b>` (B)");
    has(md, "| case | pairs | A makespan ms | B makespan ms | mean B/A |");
    has(md, "| same-case | 3 | 110.000 | 110.000 | 1.0000 | 1.0000 | 1.0000 – 1.0000 | 0/0/3 |");
    has(md, "| slow-case | 3 | 110.000 | 115.500 | 1.0500 | 1.0500 | 1.0500 – 1.0500 | 0/3/0 |");
    has(md, "25.00 % → 25.00 % | 1.00 → 1.00 | 2.0 / 2.0 | **worse** |");
    has(md, "| crash-case | 1 |");
    has(md, "**error** |");
    has(md, "### Failures");
    has(md, "- case `crash-case`, B: plugin fixture.crash-rank (pipeline[2]) was killed by "
            "signal 11 (SIGSEGV) at iteration 1");
    has(md, "**Result: plugin failure** — 0 better, 1 same, 1 worse, 1 failed (exit 3)");
    free(md);
    for (int i = 0; i < 3; i++)
        loom_ab_case_result_clear(&res[i]);
}
END_TEST

START_TEST(json_report)
{
    loom_ab_report r;
    loom_ab_case_result res[3];
    fake_report(&r, res);
    char *js = render(loom_ab_write_json, &r);
    cJSON *root = cJSON_Parse(js);
    ck_assert_msg(root != NULL, "not JSON:\n%s", js);
    ck_assert_int_eq(cJSON_GetObjectItem(root, "loom_ab")->valueint, 1);
    ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "b"), "manifest")->valuestring,
                     "b&c.json");
    ck_assert_double_eq(cJSON_GetObjectItem(root, "threshold")->valuedouble, 0.01);
    cJSON *cases = cJSON_GetObjectItem(root, "cases");
    ck_assert_int_eq(cJSON_GetArraySize(cases), 3);
    cJSON *slow = cJSON_GetArrayItem(cases, 1);
    ck_assert_str_eq(cJSON_GetObjectItem(slow, "verdict")->valuestring, "worse");
    cJSON *ratio = cJSON_GetObjectItem(slow, "makespan_ratio");
    ck_assert_double_eq_tol(cJSON_GetObjectItem(ratio, "mean")->valuedouble, 1.05, 1e-12);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(ratio, "ci95")), 2);
    ck_assert_int_eq(cJSON_GetObjectItem(slow, "losses")->valueint, 3);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(slow, "iterations")), 3);
    cJSON *crash = cJSON_GetArrayItem(cases, 2);
    cJSON *fb = cJSON_GetObjectItem(cJSON_GetObjectItem(crash, "b"), "failure");
    ck_assert_str_eq(cJSON_GetObjectItem(fb, "kind")->valuestring, "signal");
    ck_assert_str_eq(cJSON_GetObjectItem(fb, "signal_name")->valuestring, "SIGSEGV");
    ck_assert_str_eq(cJSON_GetObjectItem(fb, "plugin")->valuestring, "fixture.crash-rank");
    ck_assert_int_eq(cJSON_GetObjectItem(fb, "iteration")->valueint, 1);
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(crash, "a"), "failure")));
    cJSON *sum = cJSON_GetObjectItem(root, "summary");
    ck_assert_int_eq(cJSON_GetObjectItem(sum, "exit_code")->valueint, 3);
    ck_assert_int_eq(cJSON_GetObjectItem(sum, "worse")->valueint, 1);
    ck_assert_ptr_null(strstr(js, "plan_time_ms"));
    cJSON_Delete(root);
    r.timings = 1;
    char *timed = render(loom_ab_write_json, &r);
    has(timed, "\"plan_time_ms\": 2");
    has(timed, "\"mean_plan_time_ms\": 2");
    r.timings = 0;
    char *again = render(loom_ab_write_json, &r);
    ck_assert_str_eq(js, again);
    free(js);
    free(timed);
    free(again);
    for (int i = 0; i < 3; i++)
        loom_ab_case_result_clear(&res[i]);
}
END_TEST

START_TEST(junit_report)
{
    loom_ab_report r;
    loom_ab_case_result res[3];
    fake_report(&r, res);
    char *x = render(loom_ab_write_junit, &r);
    has(x, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
    has(x, "<testsuites name=\"loom ab\" tests=\"3\" failures=\"1\" errors=\"1\">");
    has(x, "<testsuite name=\"base vs new &lt;b&gt;\"");
    has(x, "<property name=\"manifest_b\" value=\"b&amp;c.json\"/>");
    has(x, "<testcase classname=\"loom.ab\" name=\"slow-case\" time=\"0.012\">");
    has(x, "<failure type=\"regression\" message=\"B/A makespan mean 1.0500 (median 1.0500, "
           "95% CI 1.0500-1.0500) is above 1 + threshold 1.0100; A 110.000 ms, B 115.500 ms "
           "mean over 3 iterations; wins/losses/ties 0/3/0\">");
    has(x, "<error type=\"signal\" message=\"B: plugin fixture.crash-rank (pipeline[2]) was "
           "killed by signal 11 (SIGSEGV) at iteration 1\">");
    has(x, "</testsuites>\n");
    free(x);
    for (int i = 0; i < 3; i++)
        loom_ab_case_result_clear(&res[i]);
}
END_TEST

/* ---- suite file -------------------------------------------------------------- */

/* Loads suite text; returns the status and leaves the message in err. */
static int load_suite(const char *text, loom_ab_suite **out, loom_error *err)
{
    return loom_ab_suite_load(loom_test_tmpfile(".json", text), out, err);
}

START_TEST(suite_good)
{
    const char *wl = loom_test_tmpfile(".jsonl", "{\"samples\": [{\"text_tokens\": 100}]}\n");
    const char *base = strrchr(wl, '/') + 1;
    char text[1024];
    snprintf(text, sizeof text,
             "{\"description\": \"d\", \"cases\": ["
             "{\"name\": \"one\", \"model\": \"VLM-S\", \"cluster\": \"h800\", \"parallel\": "
             "\"tp=4,pp=4\", \"generate\": \"video\", \"iterations\": 3, \"seed\": 9},"
             "{\"name\": \"two.b_c-d\", \"workload\": \"%s\"},"
             "{\"name\": \"three\", \"stage_times\": \"%s\"}]}",
             base, base);
    loom_ab_suite *s = NULL;
    loom_error err = {0};
    ck_assert_msg(load_suite(text, &s, &err) == LOOM_OK, "%s", err.message);
    ck_assert_int_eq(s->n_cases, 3);
    ck_assert_str_eq(s->description, "d");
    ck_assert_str_eq(s->cases[0].model, "VLM-S");
    ck_assert_str_eq(s->cases[0].generate, "video");
    ck_assert_int_eq(s->cases[0].iterations, 3);
    ck_assert_int_eq(s->cases[0].has_seed, 1);
    ck_assert_uint_eq(s->cases[0].seed, 9);
    ck_assert_str_eq(s->cases[1].workload, wl);
    ck_assert_ptr_null(s->cases[1].model);
    ck_assert_int_eq(s->cases[1].has_seed, 0);
    ck_assert_str_eq(s->cases[2].stage_times, wl);
    loom_session_args base_args, out;
    loom_session_args_init(&base_args);
    base_args.iterations = 5;
    base_args.n_uses = 1;
    base_args.uses[0] = "ranker=mcts";
    loom_ab_case_args(&s->cases[0], &base_args, "m.json", &out);
    ck_assert_str_eq(out.manifest, "m.json");
    ck_assert_int_eq(out.iterations, 3);
    ck_assert_int_eq(out.n_uses, 1);
    ck_assert_str_eq(out.parallel, "tp=4,pp=4");
    loom_ab_case_args(&s->cases[1], &base_args, "m.json", &out);
    ck_assert_int_eq(out.iterations, 5);
    ck_assert_str_eq(out.workload, wl);
    loom_ab_suite_free(s);
}
END_TEST

START_TEST(suite_errors)
{
    static const struct {
        const char *text, *frag;
    } cases[] = {
        {"{\"cases\": []}", "cases: expected 1 to 1000 cases, found 0"},
        {"{\"casez\": []}", "unknown field \"casez\""},
        {"{\"cases\": [{\"name\": \"a\", \"modle\": \"vlm-s\"}]}",
         "cases[0]: unknown field \"modle\""},
        {"{\"cases\": [{\"model\": \"vlm-s\"}]}", "cases[0].name"},
        {"{\"cases\": [{\"name\": \"a b\"}]}", "cases[0].name: expected a name"},
        {"{\"cases\": [{\"name\": \"a\"}, {\"name\": \"a\"}]}",
         "cases[1].name: expected a name not used before, found \"a\" (also cases[0].name)"},
        {"{\"cases\": [{\"name\": \"a\", \"iterations\": 0}]}", "cases[0].iterations"},
        {"{\"cases\": [{\"name\": \"a\", \"generate\": \"cats\"}]}",
         "cases[0].generate: expected a workload family"},
        {"{\"cases\": [{\"name\": \"a\", \"workload\": \"no-such-file.jsonl\"}]}",
         "cases[0].workload: expected a readable file"},
        {"{\"cases\": [{\"name\": \"a\", \"model\": \"missing-model.json\"}]}",
         "cases[0].model: expected a readable file"},
        {"{\"cases\": [{\"name\": \"a\", \"model\": 3}]}", "cases[0].model"},
        {"{\"cases\": [{\"name\": \"a\", \"seed\": -1}]}", "cases[0].seed"},
        {"{\"cases\": [{\"name\": \"a\", \"stage_times\": \"/dev/null\", \"model\": \"vlm-s\"}]}",
         "cases[0]: expected \"stage_times\" alone"},
        {"{\"cases\": [{\"name\": \"a\", \"generate\": \"video\", \"workload\": \"/dev/null\"}]}",
         "cases[0]: expected \"generate\" or \"workload\", found both"},
        {"{\"cases\": [", "malformed JSON"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        loom_ab_suite *s = NULL;
        loom_error err = {0};
        ck_assert_int_eq(load_suite(cases[i].text, &s, &err), LOOM_EINVAL);
        ck_assert_ptr_null(s);
        has(err.message, cases[i].frag);
        has(err.message, "/tmp/loom-test-");
    }
}
END_TEST

/* ---- progress line ------------------------------------------------------------- */

START_TEST(progress_format)
{
    char buf[256], d[24];
    loom_progress_view v = {"case x, A", 2, 8, 5, 20, 10000, -1, 0};
    ck_assert_str_eq(loom_progress_format(buf, sizeof buf, &v, 0),
                     "loom:  25% (5/20) case x, A iteration 3/8 elapsed 10.0 s, estimate 30.0 s "
                     "left");
    ck_assert_str_eq(loom_progress_format(buf, sizeof buf, &v, 8),
                     "[##......]  25% (5/20) case x, A iteration 3/8 elapsed 10.0 s, estimate "
                     "30.0 s left");
    loom_progress_view w = {"", 0, 1, 0, 0, 1500, 1234.5, 77};
    ck_assert_str_eq(loom_progress_format(buf, sizeof buf, &w, 0),
                     "loom: iteration 1/1 best 1234.500 ms (77 evaluations) elapsed 1.5 s");
    ck_assert_str_eq(loom_progress_duration(d, sizeof d, 185000), "3m05s");
    ck_assert_str_eq(loom_progress_duration(d, sizeof d, 3720000), "1h02m");
    ck_assert_str_eq(loom_progress_duration(d, sizeof d, 59000), "59.0 s");
}
END_TEST

START_TEST(progress_lines_and_quiet)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    loom_progress *p = loom_progress_new(f, 0);
    loom_progress_configure(p, 0, 0);
    loom_progress_set_total(p, 4);
    loom_progress_update(p, "case a, A", 0, 2, 0);
    loom_progress_update(p, "case a, A", 1, 2, 1);
    loom_progress_finish(p);
    loom_progress_free(p);
    fclose(f);
    has(buf, "loom:   0% (0/4) case a, A iteration 1/2 elapsed");
    has(buf, "loom:  25% (1/4) case a, A iteration 2/2 elapsed");
    ck_assert_ptr_null(strchr(buf, '\r'));
    free(buf);

    buf = NULL;
    f = open_memstream(&buf, &len);
    p = loom_progress_new(f, 0);
    loom_progress_configure(p, 1, 0);
    loom_progress_set_total(p, 2);
    loom_progress_update(p, "case b, B", 0, 1, 1);
    loom_progress_finish(p);
    loom_progress_free(p);
    fclose(f);
    has(buf, "\r[############............]  50% (1/2) case b, B iteration 1/1");
    has(buf, "\r\033[K");
    free(buf);

    buf = NULL;
    f = open_memstream(&buf, &len);
    p = loom_progress_new(f, 1);
    loom_progress_configure(p, 0, 0);
    loom_progress_update(p, "case c, A", 0, 1, 0);
    loom_progress_search(p, 12, 3);
    loom_progress_finish(p);
    loom_progress_free(p);
    fclose(f);
    ck_assert_uint_eq(len, 0);
    free(buf);
}
END_TEST

/* ---- the CLI end to end ----------------------------------------------------------- */

/* Reads a whole file into a malloc'd string. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    int c;
    while ((c = fgetc(f)) != EOF)
        fputc(c, m);
    fclose(f);
    fclose(m);
    return buf;
}

static const char *manifest_for(const char *interleaver)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"loom_planner\": 1, \"name\": \"uniform-%s\", \"seed\": 1, \"pipeline\": ["
             "{\"role\": \"cost_model\", \"use\": \"roofline\"},"
             "{\"role\": \"partitioner\", \"use\": \"uniform\"},"
             "{\"role\": \"ranker\", \"use\": \"fifo\"},"
             "{\"role\": \"interleaver\", \"use\": \"%s\"},"
             "{\"role\": \"memory_tuner\", \"use\": \"none\"}]}",
             interleaver, interleaver);
    return loom_test_tmpfile(".json", text);
}

static const char *const three_cases =
    "{\"description\": \"three small VLM cases\", \"cases\": ["
    "{\"name\": \"vlm-s-tp4-pp4\", \"model\": \"vlm-s\", \"cluster\": \"h800\", "
    "\"parallel\": \"tp=4,pp=4,mb=8\", \"generate\": \"interleaved\", \"iterations\": 4, "
    "\"seed\": 3},"
    "{\"name\": \"vlm-s-tp2-pp8\", \"model\": \"vlm-s\", \"parallel\": \"tp=2,pp=8,mb=16\", "
    "\"generate\": \"image-pairs\", \"iterations\": 3, \"seed\": 5},"
    "{\"name\": \"vlm-s-tp4-pp2\", \"model\": \"vlm-s\", \"parallel\": \"tp=4,pp=2,mb=8\", "
    "\"iterations\": 3}]}";

START_TEST(cli_1f1b_vs_dual_queue)
{
    char mf_a[512], mf_b[512], suite[512], js[512], js2[512], xml[512], md[512];
    snprintf(mf_a, sizeof mf_a, "%s", manifest_for("1f1b"));
    snprintf(mf_b, sizeof mf_b, "%s", manifest_for("dual-queue"));
    snprintf(suite, sizeof suite, "%s", loom_test_tmpfile(".json", three_cases));
    snprintf(js, sizeof js, "%s", loom_test_tmpfile(".json", ""));
    snprintf(js2, sizeof js2, "%s", loom_test_tmpfile(".json", ""));
    snprintf(xml, sizeof xml, "%s", loom_test_tmpfile(".xml", ""));
    snprintf(md, sizeof md, "%s", loom_test_tmpfile(".md", ""));
    char args[4096], *out = NULL;

    /* time alone: dual-queue's extra peak memory is judged in
     * cli_memory_aware_verdicts */
    snprintf(args, sizeof args, "ab %s %s --suite %s --json %s --junit %s --markdown %s "
             "--memory-threshold -1", mf_a, mf_b, suite, js, xml, md);
    ck_assert_int_eq(loom_test_cli(args, &out), 0);
    has(out, "## loom ab: `uniform-1f1b` (A) vs `uniform-dual-queue` (B)");
    has(out, "| case | pairs | A makespan ms | B makespan ms | mean B/A | median B/A | 95 % CI |");
    has(out, "| vlm-s-tp4-pp4 | 4 |");
    has(out, "| vlm-s-tp2-pp8 | 3 |");
    has(out, "| vlm-s-tp4-pp2 | 3 |");
    has(out, "**Result: no regression**");
    ck_assert_ptr_null(strstr(out, "**worse** |"));
    char *mdtext = slurp(md);
    has(out, mdtext);
    free(mdtext);
    free(out);

    char *json = slurp(js);
    cJSON *root = cJSON_Parse(json);
    ck_assert_msg(root != NULL, "bad JSON:\n%s", json);
    cJSON *cases = cJSON_GetObjectItem(root, "cases");
    ck_assert_int_eq(cJSON_GetArraySize(cases), 3);
    int better = 0;
    for (int i = 0; i < 3; i++) {
        cJSON *c = cJSON_GetArrayItem(cases, i);
        const char *v = cJSON_GetObjectItem(c, "verdict")->valuestring;
        ck_assert_msg(!strcmp(v, "better") || !strcmp(v, "same"), "verdict %s", v);
        better += !strcmp(v, "better");
        double mean = cJSON_GetObjectItem(cJSON_GetObjectItem(c, "makespan_ratio"), "mean")
                          ->valuedouble;
        ck_assert_double_le(mean, 1.0);
    }
    ck_assert_int_ge(better, 1);
    ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "summary"), "exit_code")
                         ->valueint, 0);
    cJSON_Delete(root);
    char *junit = slurp(xml);
    has(junit, "<testsuites name=\"loom ab\" tests=\"3\" failures=\"0\" errors=\"0\">");
    has(junit, "name=\"vlm-s-tp2-pp8\"");
    free(junit);

    /* same inputs, same bytes (isolated or not) */
    snprintf(args, sizeof args, "ab %s %s --suite %s --json %s --no-isolate --quiet "
             "--memory-threshold -1", mf_a, mf_b, suite, js2);
    ck_assert_int_eq(loom_test_cli(args, NULL), 0);
    char *json2 = slurp(js2);
    ck_assert_str_eq(json, json2);
    free(json2);
    free(json);

    /* swapped: B is now the slower interleaver */
    snprintf(args, sizeof args, "ab %s %s --suite %s --json %s --junit %s --quiet --markdown -",
             mf_b, mf_a, suite, js, xml);
    ck_assert_int_eq(loom_test_cli(args, &out), 1);
    has(out, "**worse** |");
    has(out, "**Result: regression**");
    free(out);
    junit = slurp(xml);
    has(junit, "<failure type=\"regression\" message=\"B/A makespan mean 1.0");
    free(junit);
}
END_TEST

/* Memory in the verdicts: dual-queue is faster than 1f1b but holds more
 * activations (vlm-s-tp4-pp4: 29.34 -> 34.99 GiB, tp2-pp8: 38.75 -> 76.37
 * GiB peak). Time decides, so with both plans within the cap it is better
 * or the same, never worse; --memory-threshold adds a separate memory
 * verdict that fails the run; a plan over the memory cap always loses,
 * whichever side it is on. */
START_TEST(cli_memory_aware_verdicts)
{
    char mf_a[512], mf_b[512], suite[512], js[512], xml[512], html[512], args[4096];
    char *out = NULL;
    snprintf(mf_a, sizeof mf_a, "%s", manifest_for("1f1b"));
    snprintf(mf_b, sizeof mf_b, "%s", manifest_for("dual-queue"));
    snprintf(suite, sizeof suite, "%s", loom_test_tmpfile(".json", three_cases));
    snprintf(js, sizeof js, "%s", loom_test_tmpfile(".json", ""));
    snprintf(xml, sizeof xml, "%s", loom_test_tmpfile(".xml", ""));
    snprintf(html, sizeof html, "%s", loom_test_tmpfile(".html", ""));

    /* the default: time decides, more memory within the cap is no regression */
    snprintf(args, sizeof args, "ab %s %s --suite %s --json %s --junit %s --html %s --quiet "
             "--markdown -", mf_a, mf_b, suite, js, xml, html);
    ck_assert_int_eq(loom_test_cli(args, &out), 0);
    has(out, "| vlm-s-tp4-pp4 | 4 |");
    has(out, "29.34 → 34.99 |");
    has(out, "**Rule:** Time decides: ratio = B/A makespan per paired iteration;");
    has(out, "a plan that fits is never worse for using more memory. No memory verdict "
             "(--memory-threshold not given): peaks are reported only.");
    ck_assert_ptr_null(strstr(out, "**worse**"));
    ck_assert_ptr_null(strstr(out, "memory worse"));
    has(out, "**Result: no regression**");
    free(out);
    char *json = slurp(js);
    has(json, "\"memory_threshold\": null,");
    has(json, "\"rule\": \"Time decides: ratio = B/A makespan per paired iteration;");
    ck_assert_ptr_null(strstr(json, "memory_verdict"));
    ck_assert_ptr_null(strstr(json, "\"verdict\": \"worse\""));
    free(json);
    char *junit = slurp(xml);
    has(junit, "<testsuites name=\"loom ab\" tests=\"3\" failures=\"0\" errors=\"0\">");
    has(junit, "<property name=\"rule\" value=\"Time decides: ratio = B/A makespan");
    free(junit);
    char *page = slurp(html);
    has(page, "<b>Rule:</b> Time decides: ratio = B/A makespan per paired iteration;");
    has(page, "a plan that fits is never worse for using more memory.");
    free(page);

    /* a memory verdict when asked for: side by side with the time verdict */
    snprintf(args, sizeof args, "ab %s %s --suite %s --json %s --junit %s --html %s --quiet "
             "--markdown - --memory-threshold 0.1", mf_a, mf_b, suite, js, xml, html);
    ck_assert_int_eq(loom_test_cli(args, &out), 1);
    has(out, "29.34 → 34.99 | ");
    has(out, "; memory worse (+19.3 %) |");
    has(out, "Separate memory verdict (--memory-threshold 0.1): worse when B's peak memory "
             "exceeds A's by more than 10.0 %");
    has(out, "**Result: regression**");
    has(out, "**same**; memory worse (+97.1 %) |");
    has(out, "**same**; memory same (+0.0 %) |");
    has(out, "memory worse in 2 (exit 1)");
    free(out);
    json = slurp(js);
    has(json, "\"memory_threshold\": 0.1,");
    has(json, "\"memory_verdict\": \"worse\"");
    ck_assert_ptr_null(strstr(json, "\"verdict\": \"worse\""));
    free(json);
    junit = slurp(xml);
    has(junit, "tests=\"3\" failures=\"2\" errors=\"0\"");
    has(junit, "message=\"memory verdict worse: B&apos;s peak memory 34.99 GiB is more than "
               "10.0 % above A&apos;s 29.34 GiB (--memory-threshold); time verdict ");
    free(junit);
    page = slurp(html);
    has(page, "<span class=\"note\">memory worse (+19.3 %)</span>");
    free(page);

    /* a 38.6 GiB cap: on tp2-pp8 1f1b (A, 38.75 GiB) is over it and
     * dual-queue fits; on tp4-pp2 (37.92 GiB of weights, gradients and
     * optimizer states at dp 1) both need more, so B is over it too */
    snprintf(args, sizeof args, "ab %s %s --suite %s --quiet --markdown - --html %s "
             "--memory-cap 41446434406", mf_a, mf_b, suite, html);
    ck_assert_int_eq(loom_test_cli(args, &out), 1);
    has(out, "| vlm-s-tp2-pp8 | 3 |");
    has(out, "**better** (infeasible: A over the memory cap) |");
    has(out, "**worse** (infeasible: B over the memory cap) |");
    free(out);
    page = slurp(html);
    has(page, "<span class=\"v worse\">worse</span><br><span class=\"note\">(infeasible: B "
              "over the memory cap)</span>");
    free(page);
}
END_TEST

/* The cases of a new user's first hour, with the shipped manifests on
 * vlm-s (3 iterations): PipeWeaver against megatron-tuned and
 * megatron-balanced against megatron-1f1b are faster and fit the cap, so
 * both are better and the run passes, though both use more memory (a
 * memory verdict, when asked for, says so and fails the run). */
START_TEST(cli_faster_fitting_plans_are_better)
{
    static const char *const pairs[][3] = {
        {"megatron-tuned", "pipeweaver", "| 1814.974 | 1346.051 | 0.7418 |"},
        {"megatron-1f1b", "megatron-balanced", "| 2805.069 | 1814.974 | 0.6470 |"}};
    static const char *const memory[] = {"**better**; memory worse (+8.9 %) |",
                                         "**better**; memory worse (+17.9 %) |"};
    for (int i = 0; i < 2; i++) {
        char *out = loom_test_cli_expect(
            0, "ab %s/examples/manifests/%s.json %s/examples/manifests/%s.json --model vlm-s "
               "--iterations 3 --quiet --markdown -", LOOM_TEST_SOURCE_DIR, pairs[i][0],
            LOOM_TEST_SOURCE_DIR, pairs[i][1]);
        has(out, pairs[i][2]);
        has(out, "| **better** |");
        has(out, "**Result: no regression** — 1 better, 0 same, 0 worse, 0 failed (exit 0)");
        free(out);
        out = loom_test_cli_expect(
            1, "ab %s/examples/manifests/%s.json %s/examples/manifests/%s.json --model vlm-s "
               "--iterations 3 --quiet --markdown - --memory-threshold 0.05", LOOM_TEST_SOURCE_DIR,
            pairs[i][0], LOOM_TEST_SOURCE_DIR, pairs[i][1]);
        has(out, memory[i]);
        has(out, "**Result: regression** — 1 better, 0 same, 0 worse, 0 failed; memory worse in "
                 "1 (exit 1)");
        free(out);
    }
}
END_TEST

/* --quiet prints no Markdown; --markdown - prints it once. */
START_TEST(cli_quiet_and_markdown_stdout)
{
    char mf[512];
    snprintf(mf, sizeof mf, "%s", manifest_for("1f1b"));
    char *out = loom_test_cli_expect(0, "ab %s %s --model vlm-s --iterations 1 --quiet", mf, mf);
    ck_assert_str_eq(out, "");
    free(out);
    out = loom_test_cli_expect(0, "ab %s %s --model vlm-s --iterations 1 --quiet --markdown -",
                               mf, mf);
    const char *first = strstr(out, "## loom ab:");
    ck_assert_ptr_nonnull(first);
    ck_assert_ptr_null(strstr(first + 1, "## loom ab:"));
    free(out);
    out = loom_test_cli_expect(0, "ab %s %s --model vlm-s --iterations 1 --markdown - 2>/dev/null",
                               mf, mf);
    first = strstr(out, "## loom ab:");
    ck_assert_ptr_nonnull(first);
    ck_assert_ptr_null(strstr(first + 1, "## loom ab:"));
    free(out);
}
END_TEST

/* A searching planner gives the same report twice: `loom ab` runs searches
 * to an evaluation count by default, not to their wall-clock budgets. */
START_TEST(cli_search_reports_repeat)
{
    char js[512], js2[512], args[4096];
    snprintf(js, sizeof js, "%s", loom_test_tmpfile(".json", ""));
    snprintf(js2, sizeof js2, "%s", loom_test_tmpfile(".json", ""));
    const char *a = LOOM_TEST_SOURCE_DIR "/examples/manifests/megatron-1f1b.json";
    const char *b = LOOM_TEST_SOURCE_DIR "/examples/manifests/pipeweaver.json";
    snprintf(args, sizeof args, "ab %s %s --iterations 2 --evaluations 80 --json %s --quiet",
             a, b, js);
    ck_assert_int_le(loom_test_cli(args, NULL), 1);
    snprintf(args, sizeof args, "ab %s %s --iterations 2 --evaluations 80 --json %s --quiet",
             a, b, js2);
    ck_assert_int_le(loom_test_cli(args, NULL), 1);
    char *x = slurp(js), *y = slurp(js2);
    ck_assert_str_eq(x, y);
    free(x);
    free(y);
    char *out = NULL;
    snprintf(args, sizeof args, "ab %s %s --evaluations 80 --wall-clock", a, b);
    ck_assert_int_eq(loom_test_cli(args, &out), 2);
    has(out, "--wall-clock and --evaluations cannot be given together");
    free(out);
}
END_TEST

START_TEST(cli_single_case)
{
    char mf_a[512], mf_b[512], args[2048], *out = NULL;
    snprintf(mf_a, sizeof mf_a, "%s", manifest_for("1f1b"));
    snprintf(mf_b, sizeof mf_b, "%s", manifest_for("1f1b"));
    snprintf(args, sizeof args,
             "ab %s %s --model vlm-s --parallel tp=4,pp=4,mb=8 --iterations 2 --seed 4", mf_a,
             mf_b);
    ck_assert_int_eq(loom_test_cli(args, &out), 0);
    has(out, "| default | 2 |");
    has(out, "| 1.0000 | 1.0000 | 1.0000 – 1.0000 | 0/0/2 |");
    has(out, "**same** |");
    free(out);
}
END_TEST

/* The suite used with the fixture rankers: the middle case runs 4
 * iterations, so the third ranker call happens there. */
static const char *const fixture_cases =
    "{\"cases\": ["
    "{\"name\": \"short\", \"model\": \"vlm-s\", \"parallel\": \"tp=4,pp=4,mb=8\", "
    "\"iterations\": 2, \"seed\": 1},"
    "{\"name\": \"long\", \"model\": \"vlm-s\", \"parallel\": \"tp=4,pp=4,mb=8\", "
    "\"iterations\": 4, \"seed\": 2},"
    "{\"name\": \"after\", \"model\": \"vlm-s\", \"parallel\": \"tp=4,pp=2,mb=8\", "
    "\"iterations\": 2, \"seed\": 3}]}";

/* Checks the JSON of a fixture run: `long` failed on B at iteration 2 with
 * `kind`, the two other cases completed with every iteration paired. */
static void check_fixture_json(const char *path, const char *kind, const char *plugin)
{
    char *json = slurp(path);
    cJSON *root = cJSON_Parse(json);
    ck_assert_msg(root != NULL, "bad JSON:\n%s", json);
    cJSON *cases = cJSON_GetObjectItem(root, "cases");
    static const int pairs[] = {2, 2, 2};
    for (int i = 0; i < 3; i++) {
        cJSON *c = cJSON_GetArrayItem(cases, i);
        ck_assert_int_eq(cJSON_GetObjectItem(c, "pairs")->valueint, pairs[i]);
        const char *v = cJSON_GetObjectItem(c, "verdict")->valuestring;
        if (i == 1) {
            ck_assert_str_eq(v, "error");
            cJSON *f = cJSON_GetObjectItem(cJSON_GetObjectItem(c, "b"), "failure");
            ck_assert_str_eq(cJSON_GetObjectItem(f, "kind")->valuestring, kind);
            ck_assert_str_eq(cJSON_GetObjectItem(f, "plugin")->valuestring, plugin);
            ck_assert_int_eq(cJSON_GetObjectItem(f, "iteration")->valueint, 2);
            ck_assert_int_eq(cJSON_GetObjectItem(f, "step")->valueint, 2);
            ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(c, "a"), "iterations_planned")
                                 ->valueint, 4);
        } else {
            ck_assert_str_eq(v, "same");
            ck_assert(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(c, "b"), "failure")));
        }
    }
    cJSON_Delete(root);
    free(json);
}

START_TEST(cli_segfaulting_ranker)
{
    char suite[512], js[512], args[2048], *out = NULL;
    snprintf(suite, sizeof suite, "%s", loom_test_tmpfile(".json", fixture_cases));
    snprintf(js, sizeof js, "%s", loom_test_tmpfile(".json", ""));
    snprintf(args, sizeof args, "ab %sbase.json %scrash.json --suite %s --json %s --quiet "
             "--markdown -", PLANNERS, PLANNERS, suite, js);
    ck_assert_int_eq(loom_test_cli(args, &out), 3);
    has(out, "loom ab: case long, B (" PLANNERS "crash.json): plugin fixture.crash-rank "
             "(pipeline[2]) was killed by signal 11 (SIGSEGV) at iteration 2");
    has(out, "- case `long`, B: plugin fixture.crash-rank (pipeline[2]) was killed by signal 11 "
             "(SIGSEGV) at iteration 2");
    has(out, "| short | 2 |");
    has(out, "| after | 2 |");
    has(out, "**Result: plugin failure** — 0 better, 2 same, 0 worse, 1 failed (exit 3)");
    free(out);
    check_fixture_json(js, "signal", "fixture.crash-rank");
}
END_TEST

START_TEST(cli_never_returning_ranker)
{
    char suite[512], js[512], xml[512], args[2048], *out = NULL;
    snprintf(suite, sizeof suite, "%s", loom_test_tmpfile(".json", fixture_cases));
    snprintf(js, sizeof js, "%s", loom_test_tmpfile(".json", ""));
    snprintf(xml, sizeof xml, "%s", loom_test_tmpfile(".xml", ""));
    snprintf(args, sizeof args,
             "ab %sbase.json %shang.json --suite %s --json %s --junit %s --timeout-ms 700 --quiet "
             "--markdown -",
             PLANNERS, PLANNERS, suite, js, xml);
    ck_assert_int_eq(loom_test_cli(args, &out), 3);
    has(out, "plugin fixture.hang-rank (pipeline[2]) exceeded the time limit of 700 ms at "
             "iteration 2 (timeout)");
    has(out, "**Result: plugin failure**");
    free(out);
    check_fixture_json(js, "timeout", "fixture.hang-rank");
    char *junit = slurp(xml);
    has(junit, "<error type=\"timeout\" message=\"B: plugin fixture.hang-rank (pipeline[2]) "
               "exceeded the time limit of 700 ms at iteration 2 (timeout)\">");
    free(junit);
}
END_TEST

START_TEST(cli_bad_input)
{
    char mf[512], args[2048], *out = NULL;
    snprintf(mf, sizeof mf, "%s", manifest_for("1f1b"));
    snprintf(args, sizeof args, "ab %s", mf);
    ck_assert_int_eq(loom_test_cli(args, &out), 2);
    has(out, "expected two planner manifests (A.json B.json), found 1");
    free(out);
    snprintf(args, sizeof args, "ab %s /nonexistent/b.json", mf);
    ck_assert_int_eq(loom_test_cli(args, &out), 2);
    has(out, "/nonexistent/b.json");
    free(out);
    snprintf(args, sizeof args, "ab %s %s --threshold 2", mf, mf);
    ck_assert_int_eq(loom_test_cli(args, &out), 2);
    has(out, "--threshold: expected a number in [0, 0.99], found '2'");
    free(out);
    const char *suite = loom_test_tmpfile(".json", "{\"cases\": [{\"name\": \"x\", \"seed\": "
                                                   "\"one\"}]}");
    snprintf(args, sizeof args, "ab %s %s --suite %s", mf, mf, suite);
    ck_assert_int_eq(loom_test_cli(args, &out), 2);
    has(out, "cases[0].seed: expected");
    free(out);
    snprintf(args, sizeof args, "ab %s %s --suite %s --model vlm-s", mf, mf, suite);
    ck_assert_int_eq(loom_test_cli(args, &out), 2);
    has(out, "--suite names the problems");
    free(out);
    /* a case whose model file is broken: reported, exit 2 */
    const char *model = loom_test_tmpfile(".json", "{\"name\": 3}");
    snprintf(args, sizeof args, "ab %s %s --model %s --quiet --markdown -", mf, mf, model);
    ck_assert_int_eq(loom_test_cli(args, &out), 2);
    has(out, "loom ab: case default, A (");
    has(out, "**Result: bad input**");
    free(out);
    ck_assert_int_eq(loom_test_cli("ab --help", &out), 0);
    has(out, "usage: loom ab A.json B.json");
    free(out);
}
END_TEST

static Suite *ab_suite(void)
{
    Suite *s = suite_create("ab");
    TCase *stats = tcase_create("stats");
    tcase_add_test(stats, quantiles);
    tcase_add_test(stats, identical_sides_are_the_same);
    tcase_add_test(stats, constant_ratios_give_a_point_interval);
    tcase_add_test(stats, wins_losses_ties_and_median);
    tcase_add_test(stats, mean_beyond_threshold_but_interval_over_one_is_same);
    tcase_add_test(stats, bootstrap_is_seeded_and_bounded);
    tcase_add_test(stats, statistics_reject_bad_input);
    suite_add_tcase(s, stats);
    TCase *rep = tcase_create("reports");
    tcase_add_test(rep, evaluate_pairs_and_summaries);
    tcase_add_test(rep, markdown_report);
    tcase_add_test(rep, json_report);
    tcase_add_test(rep, junit_report);
    tcase_add_test(rep, suite_good);
    tcase_add_test(rep, suite_errors);
    tcase_add_test(rep, progress_format);
    tcase_add_test(rep, progress_lines_and_quiet);
    suite_add_tcase(s, rep);
    TCase *cli = tcase_create("cli");
    tcase_set_timeout(cli, 240);
    tcase_add_test(cli, cli_1f1b_vs_dual_queue);
    tcase_add_test(cli, cli_memory_aware_verdicts);
    tcase_add_test(cli, cli_faster_fitting_plans_are_better);
    tcase_add_test(cli, cli_quiet_and_markdown_stdout);
    tcase_add_test(cli, cli_search_reports_repeat);
    tcase_add_test(cli, cli_single_case);
    tcase_add_test(cli, cli_segfaulting_ranker);
    tcase_add_test(cli, cli_never_returning_ranker);
    tcase_add_test(cli, cli_bad_input);
    suite_add_tcase(s, cli);
    return s;
}

int main(void)
{
    return loom_test_main(ab_suite());
}
