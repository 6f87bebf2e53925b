/* test_hostile_plugins.c - plugins whose output breaks the rules: every one
 * ends in exit 3 (plugin error) naming the plugin, never in a crash, a
 * sanitizer report, or a plan that passes. Fixtures: tests/fixtures/
 * hostile-inter (bad schedules, writes into the read-only graph, an error
 * message without NUL) and hostile-cost (infinite, NaN, negative and huge
 * figures). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

/* Runs `loom plan` with planner fixture `planner` and `--param` `param`;
 * asserts exit 3 and that the output contains every fragment. */
static void expect_plugin_error(const char *planner, const char *param,
                                const char *const *frags)
{
    char cmd[4096], *out = NULL;
    snprintf(cmd, sizeof cmd,
             "'%s' plan --manifest '%s' --param '%s' --iterations 1 --json 2>&1",
             loom_test_bin("bin/loom"), loom_test_bin(planner), param);
    int rc = loom_test_run(cmd, &out);
    ck_assert_msg(rc == 3, "%s: exit %d, expected 3:\n%s", param, rc, out);
    for (int i = 0; frags[i]; i++)
        ck_assert_msg(strstr(out, frags[i]) != NULL, "%s: missing \"%s\" in:\n%s", param,
                      frags[i], out);
    ck_assert_msg(!strstr(out, "\"makespan_ms\""), "%s: a plan was printed:\n%s", param, out);
    /* the plugin that failed is named once, not behind the ranker's id */
    ck_assert_msg(!strstr(out, "plugin org.loom.fifo: plugin"), "%s: stacked blame:\n%s", param,
                  out);
    free(out);
}

#define INTER "tests/fixtures/planners/hostile-inter.json"
#define COST "tests/fixtures/planners/hostile-cost.json"
#define MEM "tests/fixtures/planners/hostile-mem.json"
#define INTER_TUNED "tests/fixtures/planners/hostile-inter-tuned.json"

START_TEST(well_behaved_fixtures_plan)
{
    char cmd[4096], *out = NULL;
    snprintf(cmd, sizeof cmd, "'%s' plan --manifest '%s' --iterations 1 --json 2>&1",
             loom_test_bin("bin/loom"), loom_test_bin(INTER));
    ck_assert_msg(loom_test_run(cmd, &out) == 0, "%s", out);
    ck_assert_ptr_nonnull(strstr(out, "\"makespan_ms\""));
    free(out);
    snprintf(cmd, sizeof cmd, "'%s' plan --manifest '%s' --iterations 1 --json 2>&1",
             loom_test_bin("bin/loom"), loom_test_bin(COST));
    ck_assert_msg(loom_test_run(cmd, &out) == 0, "%s", out);
    free(out);
}
END_TEST

START_TEST(schedule_offsets_out_of_range)
{
    static const char *const f[] = {"plugin fixture.hostile-inter: ",
                                    "schedule: rank_off[0..1] = 0..1073741824, expected non-decreasing offsets in 0..", NULL};
    expect_plugin_error(INTER, "interleaver.mode=offsets-out-of-range", f);
}
END_TEST

START_TEST(schedule_offsets_decreasing)
{
    static const char *const f[] = {"plugin fixture.hostile-inter: ",
                                    "expected non-decreasing offsets", NULL};
    expect_plugin_error(INTER, "interleaver.mode=offsets-decreasing", f);
}
END_TEST

START_TEST(schedule_arrays_replaced)
{
    static const char *const f[] = {"plugin fixture.hostile-inter: replaced the schedule's "
                                    "arrays or sizes, which the host owns", NULL};
    expect_plugin_error(INTER, "interleaver.mode=replace-arrays", f);
}
END_TEST

/* A write into the graph an interleaver is given is named; behind a
 * memory tuner that graph is the evaluator's own (the most frugal
 * policies' memory), and a write there is caught too. */
START_TEST(read_only_graph_written)
{
    static const char *const f[] = {"plugin fixture.hostile-inter: wrote into the stage graph "
                                    "it was given read-only", NULL};
    expect_plugin_error(INTER, "interleaver.mode=write-graph", f);
    expect_plugin_error(INTER_TUNED, "interleaver.mode=write-graph", f);
}
END_TEST

/* The fifo ranker evaluates its one order once, and the engine takes that
 * evaluation as the plan's instead of running the interleaver again:
 * one interleave call per plan, with and without a memory tuner. */
START_TEST(fifo_plan_interleaves_once)
{
    const char *planners[] = {INTER, INTER_TUNED};
    for (int i = 0; i < 2; i++) {
        char cmd[4096], *out = NULL;
        snprintf(cmd, sizeof cmd,
                 "'%s' plan --manifest '%s' --param interleaver.mode=count-calls "
                 "--iterations 1 --json 2>&1",
                 loom_test_bin("bin/loom"), loom_test_bin(planners[i]));
        ck_assert_msg(loom_test_run(cmd, &out) == 0, "%s", out);
        ck_assert_msg(strstr(out, "fixture: interleave call 1") != NULL, "%s: no call:\n%s",
                      planners[i], out);
        ck_assert_msg(strstr(out, "fixture: interleave call 2") == NULL,
                      "%s: the interleaver ran twice:\n%s", planners[i], out);
        ck_assert_ptr_nonnull(strstr(out, "\"makespan_ms\""));
        free(out);
    }
}
END_TEST

/* A fill that names more hosts than follow it on its rank, and a fill
 * array of the plugin's own in place of the host's. */
START_TEST(bad_fills)
{
    static const char *const f[] = {"plugin fixture.hostile-inter:", "fills", "hosts, expected 1..",
                                    NULL};
    expect_plugin_error(INTER, "interleaver.mode=fill-too-long", f);
    static const char *const g[] = {"plugin fixture.hostile-inter: replaced the schedule's arrays",
                                    NULL};
    expect_plugin_error(INTER, "interleaver.mode=replace-fills", g);
}
END_TEST

/* A lower bound above the interleaver's own makespan is a false proof. */
START_TEST(lower_bound_above_makespan)
{
    static const char *const f[] = {"plugin fixture.hostile-inter: claimed a makespan lower "
                                    "bound of 1e+09 ms, expected a number in [0, ", NULL};
    expect_plugin_error(INTER, "interleaver.mode=bound-too-high", f);
}
END_TEST

START_TEST(error_message_without_nul)
{
    static const char *const f[] = {"plugin fixture.hostile-inter: xxxxxxxx", NULL};
    expect_plugin_error(INTER, "interleaver.mode=no-nul", f);
}
END_TEST

START_TEST(cost_not_finite)
{
    static const char *const inf[] = {"plugin fixture.hostile-cost: module 0 layer 0: "
                                      "forward_ms is inf, expected a finite number", NULL};
    expect_plugin_error(COST, "cost_model.mode=inf", inf);
    static const char *const nan[] = {"plugin fixture.hostile-cost: ",
                                      "weight_grad_ms is nan, expected a finite number", NULL};
    expect_plugin_error(COST, "cost_model.mode=nan", nan);
    static const char *const tail[] = {"plugin fixture.hostile-cost: rank_tail_ms for rank 0 "
                                       "returned param_prefetch_ms nan, expected a finite "
                                       "number in 0..", NULL};
    expect_plugin_error(COST, "cost_model.mode=nan-prefetch", tail);
}
END_TEST

START_TEST(cost_bytes_out_of_range)
{
    static const char *const neg[] = {"plugin fixture.hostile-cost: ",
                                      "param_bytes is -1099511627776, expected "
                                      "0..1099511627776 (1 TiB per GPU)", NULL};
    expect_plugin_error(COST, "cost_model.mode=negative-bytes", neg);
    static const char *const huge[] = {"plugin fixture.hostile-cost: ",
                                       "activation_bytes is 9223372036854775807", NULL};
    expect_plugin_error(COST, "cost_model.mode=huge-bytes", huge);
    static const char *const elem[] = {"plugin fixture.hostile-cost: module 0 layer 0: "
                                       "element_bytes is 16, expected 0 (2, bf16) or a number "
                                       "in 1..8", NULL};
    expect_plugin_error(COST, "cost_model.mode=element-bytes", elem);
    static const char *const shards[] = {"plugin fixture.hostile-cost: module 0 layer 0: "
                                         "param_shards is -3, expected 0..1048576 (0 or 1: not "
                                         "sharded)", NULL};
    expect_plugin_error(COST, "cost_model.mode=param-shards", shards);
}
END_TEST

START_TEST(memory_tuner_outputs)
{
    static const char *const pol[] = {"plugin fixture.hostile-mem: chose policy 200 for layer "
                                      "entry 0, expected 0..", NULL};
    expect_plugin_error(MEM, "memory_tuner.mode=bad-policy", pol);
    static const char *const wr[] = {"plugin fixture.hostile-mem: wrote into the stage graph "
                                     "it was given read-only", NULL};
    expect_plugin_error(MEM, "memory_tuner.mode=write-graph", wr);
}
END_TEST

static Suite *hostile_suite(void)
{
    Suite *s = suite_create("hostile_plugins");
    TCase *tc = tcase_create("outputs");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, well_behaved_fixtures_plan);
    tcase_add_test(tc, schedule_offsets_out_of_range);
    tcase_add_test(tc, schedule_offsets_decreasing);
    tcase_add_test(tc, schedule_arrays_replaced);
    tcase_add_test(tc, fifo_plan_interleaves_once);
    tcase_add_test(tc, read_only_graph_written);
    tcase_add_test(tc, error_message_without_nul);
    tcase_add_test(tc, lower_bound_above_makespan);
    tcase_add_test(tc, bad_fills);
    tcase_add_test(tc, cost_not_finite);
    tcase_add_test(tc, cost_bytes_out_of_range);
    tcase_add_test(tc, memory_tuner_outputs);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(hostile_suite());
}
