/* test_blame.c - the right culprit is named: the blame-rank fixture
 * writes past the priorities buffer the host handed it (the guard page
 * behind the buffer stops it inside its own call: under --isolate the
 * report names the plugin and SIGSEGV), writes the float before the
 * buffer (the canary check right after the call makes it a plugin error
 * naming it, in-process and isolated), or closes descriptors 0-1023, the
 * result pipe included, so that the child dies later in core code (the
 * report names the core, then the last plugin whose call ran as the
 * likely cause, and why). A planner's refusal under --isolate is one
 * error, not followed by "garbage on the result pipe". */
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

#define PLANNERS LOOM_TEST_BINARY_DIR "/tests/isolation-fixtures/planners/"
#define BLAME "plan --manifest " PLANNERS "blame.json --model vlm-s --parallel tp=4,pp=4,mb=8 " \
              "--iterations 1 --quiet --param ranker.action="

START_TEST(an_overrun_faults_inside_the_plugin_call)
{
    char *out = loom_test_cli_expect(3, BLAME "overrun --isolate");
    loom_test_has(out, "loom plan: plugin fixture.blame-rank (pipeline[2]) was killed by signal "
                       "11 (SIGSEGV) at iteration 0");
    free(out);
}
END_TEST

START_TEST(an_underrun_is_found_right_after_the_call)
{
    const char *modes[] = {"--isolate", "--no-isolate"};
    for (int i = 0; i < 2; i++) {
        char *out = loom_test_cli_expect(3, BLAME "underrun %s", modes[i]);
        loom_test_has(out, "loom plan: iteration 0: plugin fixture.blame-rank: wrote outside the "
                           "priorities buffer the host handed it (8 floats)");
        ck_assert_msg(strstr(out, "garbage") == NULL, "a second error:\n%s", out);
        free(out);
    }
}
END_TEST

START_TEST(a_core_death_after_plugin_code_names_the_last_plugin)
{
    char *out = loom_test_cli_expect(3, BLAME "closefds --isolate");
    loom_test_has(out, "loom plan: the core (no plugin running): ");
    loom_test_has(out, "; the likely cause is plugin ");
    loom_test_has(out, "the last whose call ran: plugin code shares the planning process and "
                       "can corrupt its memory or close descriptors (such as the result pipe)");
    free(out);
}
END_TEST

START_TEST(a_refusal_under_isolate_is_reported_once)
{
    /* the child ends the refused iteration on the channel: no spurious
     * "garbage on the result pipe" after the planner's own message */
    char *out = loom_test_cli_expect(1, "plan --model vlm-s --parallel tp=4,pp=4,mb=8 "
                                        "--iterations 1 --quiet --isolate --memory-cap 1");
    loom_test_has(out, "loom plan: iteration 0: plugin org.loom.none: none: rank 0 cannot fit "
                       "the memory cap of 1 bytes");
    ck_assert_msg(strstr(out, "garbage") == NULL, "a second error:\n%s", out);
    free(out);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("blame");
    TCase *tc = tcase_create("blame");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, an_overrun_faults_inside_the_plugin_call);
    tcase_add_test(tc, an_underrun_is_found_right_after_the_call);
    tcase_add_test(tc, a_core_death_after_plugin_code_names_the_last_plugin);
    tcase_add_test(tc, a_refusal_under_isolate_is_reported_once);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(make_suite());
}
