/* test_infeasible.c - a plan over the memory cap is marked infeasible and
 * its makespan never shown as a valid result: t2v-l with the balanced
 * Megatron split on the 80 GiB h800 peaks at 161.2 GiB on rank 0.
 * plan.json's metrics.feasible, summary.txt, `loom plan` (table and
 * --json) and `loom ab` (JSON and Markdown) all say so; a plan that fits
 * says feasible. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <loom/sys/json.h>
#include "testutil.h"

/* Reads a whole file; the caller frees it. */
static char *slurp(const char *dir, const char *name)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *text = NULL;
    loom_error err = {0, ""};
    ck_assert_msg(loom_read_file(path, &text, NULL, &err) == LOOM_OK, "%s", err.message);
    return text;
}

START_TEST(plan_outputs_mark_infeasible)
{
    char dir[] = "/tmp/loom-infeasible-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char args[4096], *out = NULL;
    snprintf(args, sizeof args, "plan --manifest %s --model t2v-l --iterations 1 --out %s/p",
             loom_test_src("examples/manifests/megatron-balanced.json"), dir);
    ck_assert_int_eq(loom_test_cli(args, &out), 0);
    ck_assert_msg(strstr(out, "INFEASIBLE (peak 169.429 GiB > cap 80.000 GiB)"), "%s", out);
    ck_assert_msg(strstr(out, "  makespan      INFEASIBLE (peak 169.429 GiB > cap 80.000 GiB); "
                              "the simulated "), "%s", out);
    ck_assert_ptr_null(strstr(out, "  makespan      3")); /* no bare makespan line */
    free(out);
    char sub[4200];
    snprintf(sub, sizeof sub, "%s/p", dir);
    char *summary = slurp(sub, "summary.txt");
    ck_assert_ptr_nonnull(strstr(summary, "makespan      INFEASIBLE (peak 169.429 GiB > cap "
                                          "80.000 GiB)"));
    free(summary);
    char *html = slurp(sub, "report.html");
    ck_assert_ptr_nonnull(strstr(html, "INFEASIBLE (peak 169.429 GiB &gt; cap 80.000 GiB; "
                                       "simulated "));
    ck_assert_ptr_nonnull(strstr(html, "INFEASIBLE: over the memory cap on 2 ranks"));
    free(html);
    char *pj = slurp(sub, "plan.json");
    cJSON *plan = cJSON_Parse(pj);
    free(pj);
    const cJSON *m = cJSON_GetObjectItem(plan, "metrics");
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(m, "feasible")));
    ck_assert_int_eq(cJSON_GetObjectItem(m, "cap_violations")->valueint, 2);
    cJSON_Delete(plan);
    snprintf(args, sizeof args, "rm -rf %s", dir);
    ck_assert_int_eq(system(args), 0);

    /* --json: per iteration and overall */
    snprintf(args, sizeof args, "plan --manifest %s --model t2v-l --iterations 2 --json",
             loom_test_src("examples/manifests/megatron-balanced.json"));
    ck_assert_int_eq(loom_test_cli(args, &out), 0);
    const char *brace = strchr(out, '{');
    ck_assert_ptr_nonnull(brace);
    cJSON *r = cJSON_Parse(brace);
    ck_assert_ptr_nonnull(r);
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(r, "feasible")));
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetArrayItem(
        cJSON_GetObjectItem(r, "iterations"), 1), "feasible")));
    cJSON_Delete(r);
    free(out);
    /* several iterations: no mean is presented as a result */
    snprintf(args, sizeof args, "plan --manifest %s --model t2v-l --iterations 2",
             loom_test_src("examples/manifests/megatron-balanced.json"));
    ck_assert_int_eq(loom_test_cli(args, &out), 0);
    ck_assert_msg(strstr(out, "GiB) in 2 of 2 iterations: the simulated mean iteration"), "%s",
                  out);
    ck_assert_ptr_null(strstr(out, "\nmean iteration "));
    free(out);
    /* a plan that fits */
    ck_assert_int_eq(loom_test_cli("plan --model vlm-s --iterations 1 --json", &out), 0);
    brace = strchr(out, '{');
    r = cJSON_Parse(brace);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(r, "feasible")));
    cJSON_Delete(r);
    free(out);
}
END_TEST

START_TEST(ab_marks_infeasible_side)
{
    char dir[] = "/tmp/loom-infeasible-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char args[8192], *out = NULL;
    /* A: the balanced split with full recomputation, which fits */
    const char *a = loom_test_tmpfile(".json",
        "{\"loom_planner\": 1, \"name\": \"balanced-full\", \"pipeline\": ["
        "{\"role\": \"cost_model\", \"use\": \"roofline\"},"
        "{\"role\": \"partitioner\", \"use\": \"balanced-dp\"},"
        "{\"role\": \"ranker\", \"use\": \"fifo\"},"
        "{\"role\": \"interleaver\", \"use\": \"interleaved-1f1b\"},"
        "{\"role\": \"memory_tuner\", \"use\": \"full-recompute\"}]}");
    snprintf(args, sizeof args, "ab %s %s --model t2v-l --iterations 1 --json %s/r.json "
             "--markdown %s/r.md --html %s/r.html --no-isolate", a,
             loom_test_src("examples/manifests/megatron-balanced.json"), dir, dir, dir);
    int code = loom_test_cli(args, &out);
    ck_assert_msg(code == 1, "%s", out);
    free(out);
    char *md = slurp(dir, "r.md");
    ck_assert_msg(strstr(md, "| INFEASIBLE (over the memory cap; simulated "), "%s", md);
    free(md);
    char *html = slurp(dir, "r.html");
    ck_assert_ptr_nonnull(strstr(html, "<td>INFEASIBLE</td>"));
    free(html);
    char *js = slurp(dir, "r.json");
    cJSON *r = cJSON_Parse(js);
    free(js);
    const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "cases"), 0);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(c, "a"), "feasible")));
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(c, "b"), "feasible")));
    const cJSON *it = cJSON_GetArrayItem(cJSON_GetObjectItem(c, "iterations"), 0);
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(it, "b"), "feasible")));
    ck_assert_str_eq(cJSON_GetObjectItem(c, "reason")->valuestring, "infeasible");
    cJSON_Delete(r);
    snprintf(args, sizeof args, "rm -rf %s", dir);
    ck_assert_int_eq(system(args), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("infeasible");
    TCase *tc = tcase_create("infeasible");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, plan_outputs_mark_infeasible);
    tcase_add_test(tc, ab_marks_infeasible_side);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(suite());
}
