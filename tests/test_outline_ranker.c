/* test_outline_ranker.c - a ranker that declares LOOM_RANKER_READS_COUNTS
 * (tests/fixtures/outline-rank) is given outlines, counts without arrays,
 * and scores candidates through evaluators that build each graph: its
 * plan is the same whether or not its last evaluation was of the chosen
 * candidate (the plan's graph is built again either way), a write into an outline is
 * refused naming the ranker, and an interleaver writing into a graph built
 * from an outline is named as it is without outlines. */
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

#define PLANNER "tests/fixtures/planners/outline-rank.json"

/* Plans with the fixture planner and `params` into dir; returns the
 * output (malloc'd) after asserting exit code `code`. */
static char *plan(int code, const char *params, const char *dir)
{
    return loom_test_cli_expect(code, "plan --manifest '%s' --iterations 1 %s%s%s",
                                loom_test_bin(PLANNER), params, dir ? " --quiet --out " : "",
                                dir ? dir : "");
}

/* The chosen candidate's plan is the same when the ranker's last
 * evaluation was of it ("last") and when it was of another candidate
 * ("best"). */
START_TEST(kept_and_rebuilt_plans_agree)
{
    char best[256], last[256], path[320];
    loom_test_mkdtemp(best, sizeof best, "outline-best");
    loom_test_mkdtemp(last, sizeof last, "outline-last");
    free(plan(0, "--param ranker.mode=best", best));
    free(plan(0, "--param ranker.mode=last", last));
    const char *same[] = {"schedule.csv", "trace.json", "timeline.svg"};
    for (size_t i = 0; i < sizeof same / sizeof *same; i++) {
        snprintf(path, sizeof path, "%s/%s", best, same[i]);
        char *a = loom_test_slurp(path);
        snprintf(path, sizeof path, "%s/%s", last, same[i]);
        char *b = loom_test_slurp(path);
        ck_assert_msg(strcmp(a, b) == 0, "%s differs between the kept and rebuilt plans",
                      same[i]);
        free(a);
        free(b);
    }
    snprintf(path, sizeof path, "%s/summary.txt", best);
    char *s = loom_test_slurp(path);
    loom_test_has(s, "(2 evaluations)"); /* one per candidate: two partitioners */
    loom_test_has(s, "candidate     1 of 2");
    free(s);
    loom_test_rmdir(best);
    loom_test_rmdir(last);
}
END_TEST

START_TEST(a_write_into_an_outline_is_refused)
{
    char *out = plan(3, "--param ranker.mode=write", NULL);
    loom_test_has(out, "plugin fixture.outline-rank: wrote into the graph outlines it was "
                       "given read-only");
    ck_assert_msg(!strstr(out, "makespan"), "a plan was printed:\n%s", out);
    free(out);
}
END_TEST

START_TEST(an_interleaver_writing_a_built_graph_is_named)
{
    const char *modes[] = {"best", "last"};
    for (int i = 0; i < 2; i++) {
        char params[128];
        snprintf(params, sizeof params,
                 "--param ranker.mode=%s --param interleaver.mode=write-graph", modes[i]);
        char *out = plan(3, params, NULL);
        loom_test_has(out, "plugin fixture.hostile-inter: wrote into the stage graph it was "
                           "given read-only");
        free(out);
    }
}
END_TEST

static Suite *outline_suite(void)
{
    Suite *s = suite_create("outline_ranker");
    TCase *tc = tcase_create("outlines");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, kept_and_rebuilt_plans_agree);
    tcase_add_test(tc, a_write_into_an_outline_is_refused);
    tcase_add_test(tc, an_interleaver_writing_a_built_graph_is_named);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(outline_suite());
}
