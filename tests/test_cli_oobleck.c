/* test_cli_oobleck.c - `loom replan` and its C-API form loom_replan_json:
 * the digest's 8-node job (templates {2,3,4}), every repair path (simple
 * reinstantiation, borrowing, merging, full re-instantiation), the
 * (f+1)*n0 floor, lost replicas, the JSON report and input errors. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <loom/api.h>
#include <loom/sys/replan.h>
#include "testutil.h"

/* Runs `loom replan ARGS` and returns its exit status; *out is freed. */
static int replan(const char *args, char **out)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s replan %s", loom_test_bin("bin/loom"), args);
    return loom_test_run(cmd, out);
}

/* `loom replan --job examples/replan/NAME --json ARGS` parsed. */
static cJSON *replan_json(const char *name, const char *args)
{
    char a[2048], *out = NULL;
    snprintf(a, sizeof a, "--job %s --json %s",
             loom_test_src(name), args);
    ck_assert_int_eq(replan(a, &out), 0);
    cJSON *r = cJSON_Parse(out);
    ck_assert_msg(r != NULL, "not JSON: %s", out);
    free(out);
    return r;
}

/* Action and node count of pipeline i of the report's "after". */
static void after_pipe(const cJSON *r, int i, const char *action, int nodes)
{
    const cJSON *ps = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "after"), "pipelines");
    const cJSON *p = cJSON_GetArrayItem(ps, i);
    ck_assert_ptr_nonnull(p);
    ck_assert_str_eq(cJSON_GetObjectItem(p, "action")->valuestring, action);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(p, "nodes")), nodes);
}

START_TEST(templates_and_simple_reinstantiation)
{
    cJSON *r = replan_json("examples/replan/eight-nodes.json", "--failed-nodes 3");
    /* N = 8, f = 2, n0 = 2: templates for 2, 3, 4 nodes */
    const cJSON *t = cJSON_GetObjectItem(r, "templates");
    ck_assert_int_eq(cJSON_GetArraySize(t), 3);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(t, i), "nodes")->valueint,
                         2 + i);
    after_pipe(r, 0, "reinstantiate", 3);
    after_pipe(r, 1, "keep", 2);
    after_pipe(r, 2, "keep", 2);
    /* the batch stays 64 microbatches */
    int total = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItem(cJSON_GetObjectItem(r, "after"), "pipelines"))
        total += cJSON_GetObjectItem(p, "microbatches")->valueint;
    ck_assert_int_eq(total, 64);
    ck_assert_int_gt(cJSON_GetArraySize(cJSON_GetObjectItem(r, "copies")), 0);
    cJSON_Delete(r);
}
END_TEST

START_TEST(borrow_merge_and_full)
{
    cJSON *r = replan_json("examples/replan/eight-nodes.json", "--failed-nodes 4");
    after_pipe(r, 0, "lend", 3);
    after_pipe(r, 1, "borrow", 2);
    /* node 5 now holds layers 0..11 and copies them; node 3 gets 12..17 */
    int to5 = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(r, "copies"))
        if (cJSON_GetObjectItem(c, "to_node")->valueint == 5) {
            ck_assert_int_lt(cJSON_GetObjectItem(c, "layer")->valueint, 12);
            to5++;
        }
    ck_assert_int_eq(to5, 12);
    cJSON_Delete(r);
    r = replan_json("examples/replan/two-node-pipelines.json", "--failed-nodes 0");
    after_pipe(r, 0, "merge", 3);
    cJSON_Delete(r);
    r = replan_json("examples/replan/eight-nodes.json", "--failed-nodes 4 --full");
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "after"),
                                               "full_replan")));
    after_pipe(r, 0, "replan", 2);
    cJSON_Delete(r);
    /* human output names the actions */
    char *out = NULL;
    char a[1024];
    snprintf(a, sizeof a, "--job %s --failed-nodes 4",
             loom_test_src("examples/replan/eight-nodes.json"));
    ck_assert_int_eq(replan(a, &out), 0);
    ck_assert_ptr_nonnull(strstr(out, "borrow"));
    ck_assert_ptr_nonnull(strstr(out, "layer 0 -> node 5 from node 0"));
    free(out);
}
END_TEST

START_TEST(unrecoverable_failures)
{
    char a[1024], *out = NULL;
    snprintf(a, sizeof a, "--job %s --failed-nodes 1,4,6",
             loom_test_src("examples/replan/eight-nodes.json"));
    ck_assert_int_eq(replan(a, &out), 1);
    ck_assert_ptr_nonnull(strstr(out, "fewer than (f+1)*n0 = 3*2 = 6"));
    free(out);
    snprintf(a, sizeof a, "--job %s --failed-nodes 0,2,4,6",
             loom_test_src("examples/replan/two-node-pipelines.json"));
    ck_assert_int_eq(replan(a, &out), 1);
    ck_assert_ptr_nonnull(strstr(out, "layer 0 lost every replica"));
    free(out);
}
END_TEST

START_TEST(input_errors)
{
    char a[1024], *out = NULL;
    ck_assert_int_eq(replan("--failed-nodes 1", &out), 2);
    ck_assert_ptr_nonnull(strstr(out, "--job FILE is required"));
    free(out);
    snprintf(a, sizeof a, "--job %s --failed-nodes 1,x",
             loom_test_src("examples/replan/eight-nodes.json"));
    ck_assert_int_eq(replan(a, &out), 2);
    ck_assert_ptr_nonnull(strstr(out, "--failed-nodes"));
    free(out);
    const char *bad = loom_test_tmpfile(".json",
        "{\"nodes\": 8, \"microbatches\": 4, \"min_nodes\": 2, \"speed\": 1,\n"
        " \"layers\": {\"count\": 8, \"forward_ms\": 1, \"backward_ms\": 2}}");
    snprintf(a, sizeof a, "--job %s", bad);
    ck_assert_int_eq(replan(a, &out), 2);
    ck_assert_ptr_nonnull(strstr(out, "unknown field \"speed\""));
    free(out);
    bad = loom_test_tmpfile(".json",
        "{\"nodes\": 8, \"microbatches\": 4, \"min_nodes\": 2, \"fault_tolerance\": 1,\n"
        " \"layers\": {\"count\": 8, \"forward_ms\": 1, \"backward_ms\": 2},\n"
        " \"pipelines\": [[0]]}");
    snprintf(a, sizeof a, "--job %s", bad);
    ck_assert_int_eq(replan(a, &out), 2);
    ck_assert_ptr_nonnull(strstr(out, "pipelines[0]: expected a list of 2 to 6"));
    free(out);
    bad = loom_test_tmpfile(".json", "{\"nodes\": 8,");
    snprintf(a, sizeof a, "--job %s", bad);
    ck_assert_int_eq(replan(a, &out), 2);
    ck_assert_ptr_nonnull(strstr(out, "malformed JSON"));
    free(out);
}
END_TEST

START_TEST(c_api_matches_cli)
{
    char *text = NULL;
    loom_error err = {0, ""};
    FILE *f = fopen(loom_test_src("examples/replan/eight-nodes.json"), "rb");
    ck_assert_ptr_nonnull(f);
    text = calloc(1, 4096);
    ck_assert_int_gt((long)fread(text, 1, 4095, f), 0);
    fclose(f);
    const int32_t failed[1] = {4};
    char *json = NULL;
    ck_assert_int_eq(loom_replan_json(text, failed, 1, 0, &json, &err), LOOM_OK);
    cJSON *api = cJSON_Parse(json);
    cJSON *cli = replan_json("examples/replan/eight-nodes.json", "--failed-nodes 4");
    char *a = cJSON_PrintUnformatted(api), *b = cJSON_PrintUnformatted(cli);
    ck_assert_str_eq(a, b);
    free(a);
    free(b);
    cJSON_Delete(api);
    cJSON_Delete(cli);
    free(json);
    /* no failure: the instantiation only; bad input */
    ck_assert_int_eq(loom_replan_json(text, NULL, 0, 0, &json, &err), LOOM_OK);
    ck_assert_ptr_null(strstr(json, "\"after\""));
    free(json);
    const int32_t gone[3] = {1, 4, 6};
    ck_assert_int_eq(loom_replan_json(text, gone, 3, 0, &json, &err), LOOM_EINFEASIBLE);
    ck_assert_ptr_null(json);
    ck_assert_int_eq(loom_replan_json(NULL, gone, 3, 0, &json, &err), LOOM_EINVAL);
    free(text);
}
END_TEST

/* The suite of this file. */
static Suite *cli_oobleck_suite(void)
{
    Suite *s = suite_create("cli_oobleck");
    TCase *tc = tcase_create("replan");
    tcase_add_test(tc, templates_and_simple_reinstantiation);
    tcase_add_test(tc, borrow_merge_and_full);
    tcase_add_test(tc, unrecoverable_failures);
    tcase_add_test(tc, input_errors);
    tcase_add_test(tc, c_api_matches_cli);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(cli_oobleck_suite());
}
