/* test_cli_options.c - the option conventions every `loom` command shares
 * (one getopt_long parser, tools/loom/cli_args.c): "--flag=value" and
 * "--flag value" alike, unambiguous prefixes, "--" ending options, errors
 * that name the flag with one "loom <cmd>: " prefix, contradictory flags
 * refused, sizes with units. Run as a subprocess. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

#define STAGE_TIMES LOOM_TEST_SOURCE_DIR "/examples/stage-times/oracle-1f1b.json"
#define MANIFESTS LOOM_TEST_SOURCE_DIR "/examples/manifests/"
#define FIX LOOM_TEST_BINARY_DIR "/tests/fixtures"

/* Asserts that `text` contains `frag`. */
static void has(const char *text, const char *frag)
{
    ck_assert_msg(strstr(text, frag) != NULL, "missing \"%s\" in:\n%.1500s", frag, text);
}

/* Runs `loom <args>`, expects exit code `code` and `frag` in the output,
 * and (for errors) exactly one "loom " prefix on the line holding it. */
static void expect(const char *args, int code, const char *frag)
{
    char *out = NULL;
    int rc = loom_test_cli(args, &out);
    ck_assert_msg(rc == code, "loom %.300s: exit %d, expected %d; output:\n%.1500s", args, rc, code,
                  out);
    has(out, frag);
    if (code != 0) {
        const char *line = strstr(out, frag);
        while (line > out && line[-1] != '\n')
            line--;
        const char *again = strstr(line + 1, "loom");
        const char *eol = strchr(line, '\n');
        ck_assert_msg(!again || (eol && again > eol), "stacked prefixes in: %s", line);
    }
    free(out);
}

START_TEST(equals_form_everywhere)
{
    /* plan: a session option and a command option, both as --flag=value */
    expect("plan --quiet --manifest=" MANIFESTS "megatron-1f1b.json --stage-times=" STAGE_TIMES
           " --json",
           0, "\"makespan_ms\"");
    /* the same with a space */
    expect("plan --quiet --manifest " MANIFESTS "megatron-1f1b.json --stage-times " STAGE_TIMES
           " --json",
           0, "\"makespan_ms\"");
    expect("validate " MANIFESTS "megatron-1f1b.json --use=interleaver=1f1b", 0, "valid");
    expect("plugins list --plugin-path=" FIX, 0, "fixture.good-rank");
    expect("plugins list --path=" FIX, 0, "fixture.good-rank");
    expect("workload generate --family=text --iterations=1 --microbatches=2", 0, "\"samples\"");
    expect("cp-balance --gpus=2 --causal=1024", 0, "GPU 1");
}
END_TEST

START_TEST(prefixes_and_double_dash)
{
    /* an unambiguous prefix of a long name is that option */
    expect("plan --quiet --stage-t " STAGE_TIMES " --manifest " MANIFESTS "megatron-1f1b.json "
           "--js",
           0, "\"makespan_ms\"");
    /* a prefix of several names is refused with the candidates */
    expect("plan --mem 5", 2,
           "loom plan: ambiguous option '--mem' (could be --memory-limit-mb, --memory-cap)");
    /* after "--" everything is an operand */
    expect("validate -- --not-an-option", 2,
           "loom validate: manifest \"--not-an-option\": expected a shipped manifest name");
}
END_TEST

START_TEST(errors_name_the_flag)
{
    expect("plan --bogus", 2, "loom plan: unknown option '--bogus'");
    expect("plan --bogus=3", 2, "loom plan: unknown option '--bogus'");
    expect("plan --out", 2, "loom plan: option '--out' needs a value");
    expect("plan --json=yes", 2, "loom plan: option '--json' takes no value");
    expect("plan --out=", 2, "loom plan: option '--out' needs a value, found ''");
    expect("plan --iterations=x", 2,
           "loom plan: --iterations: expected a non-negative number, found 'x'");
    expect("plan --memory-cap 80XB", 2, "loom plan: --memory-cap: expected a size such as 80GiB");
    expect("plan --timeout-ms -4", 2,
           "loom plan: --timeout-ms: expected a number in [0, 1e+09], found '-4'");
    expect("ab --threshold 2 a.json b.json", 2,
           "loom ab: --threshold: expected a number in [0, 0.99], found '2'");
    expect("ab a.json b.json c.json", 2, "loom ab: unexpected argument 'c.json'");
    expect("ab merge --markdown", 2, "loom ab merge: option '--markdown' needs a value");
    expect("validate a.json b.json", 2, "loom validate: unexpected argument 'b.json'");
    expect("plugins inspect a b", 2, "loom plugins inspect: unexpected argument 'b'");
    expect("workload generate --family text --seed=-3", 2,
           "loom workload generate: --seed: expected an unsigned 64-bit integer, found '-3'");
    expect("cp-balance --gpus 0 --causal 8", 2,
           "loom cp-balance: --gpus: expected an integer in [1, 65536], found '0'");
    expect("replan --jobs x", 2, "loom replan: unknown option '--jobs'");
    expect("calibrate-batch --alpha 2", 2, "loom calibrate-batch: --alpha: expected a number in");
}
END_TEST

START_TEST(contradictions_refused)
{
    expect("plan --isolate --no-isolate", 2,
           "loom plan: --isolate and --no-isolate cannot be given together");
    expect("ab a.json b.json --wall-clock --evaluations 5", 2,
           "loom ab: --wall-clock and --evaluations cannot be given together");
    expect("cp-balance --gpus 2 --causal 8 --segments 4", 2,
           "loom cp-balance: --causal and --segments cannot be given together");
    expect("replan --job j.json --out r.json --json", 2,
           "loom replan: --out and --json cannot be given together");
    expect("calibrate-batch --workload w.jsonl --generate text", 2,
           "loom calibrate-batch: --workload and --generate cannot be given together");
    /* the session's own contradictions, reported once by the session */
    expect("plan --stage-times " STAGE_TIMES " --model vlm-s", 2,
           "loom plan: --stage-times and --model contradict each other");
    expect("plan --stage-times " STAGE_TIMES " --iterations 3", 2,
           "--stage-times and --iterations contradict each other");
}
END_TEST

START_TEST(sizes_with_units)
{
    /* the cap given on the command line replaces the stage-times file's;
     * rank 0 of the 1F1B oracle peaks at 4 bytes */
    static const char *const over[] = {"--memory-cap=3B", "--memory-cap 3", "--memory-cap=0.003KB"};
    for (int i = 0; i < 3; i++) {
        char args[1024];
        snprintf(args, sizeof args, "plan --stage-times %s %s", STAGE_TIMES, over[i]);
        expect(args, 0, "1 rank over the 0.000 GiB memory cap");
    }
    char *out = NULL;
    ck_assert_int_eq(loom_test_cli("plan --stage-times " STAGE_TIMES " --memory-cap=1KiB", &out),
                     0);
    ck_assert_ptr_null(strstr(out, "OVER CAP"));
    has(out, "memory cap    0.000 GiB per rank");
    free(out);
}
END_TEST

/* plan.json's metrics line of `loom plan --stage-times STAGE_TIMES <cap>`
 * (malloc'd). */
static char *metrics_with_cap(const char *cap)
{
    char dir[256], args[1024], path[512];
    loom_test_mkdtemp(dir, sizeof dir, "capedge");
    snprintf(args, sizeof args, "plan --quiet --stage-times %s %s --out %s/o", STAGE_TIMES, cap,
             dir);
    free(loom_test_cli_expect(0, "%s", args));
    snprintf(path, sizeof path, "%s/o/plan.json", dir);
    char *text = loom_test_slurp(path);
    loom_test_rmdir(dir);
    return text;
}

START_TEST(cap_boundaries)
{
    /* Expected peaks, derived from the 1F1B schedule rather than read off
     * Loom's output: examples/stage-times/oracle-1f1b.json has P = 4 ranks,
     * M = 8 microbatches, one stage per rank and the default
     * activation_bytes of 1 per stage (docs/formats.md). Under 1F1B rank r
     * runs P - r forwards before its first backward and from then on frees
     * one activation per backward before the next forward, so it holds at
     * most P - r activations: peaks 4, 3, 2, 1 bytes. */
    char *t = metrics_with_cap("--memory-cap 4"); /* rank 0 exactly at the cap: feasible */
    has(t, "\"peak_mem_bytes\": [4, 3, 2, 1]");
    has(t, "\"cap_violations\": 0, \"memory_cap_bytes\": 4, \"feasible\": true");
    free(t);
    /* one byte below rank 0's peak: rank 0 is over, rank 1 exactly at it is not */
    t = metrics_with_cap("--memory-cap 3");
    has(t, "\"cap_violations\": 1, \"memory_cap_bytes\": 3, \"feasible\": false");
    free(t);
    /* the command line's cap wins over the file's in plan.json too */
    const char *file = loom_test_tmpfile(".json", "{\"kind\": \"stage-times\", \"ranks\": 4, "
                                         "\"microbatches\": 8, \"forward_ms\": 1, "
                                         "\"backward_ms\": 2, \"memory_cap_bytes\": 100}");
    char dir[256], path[512];
    loom_test_mkdtemp(dir, sizeof dir, "capedge");
    free(loom_test_cli_expect(0, "plan --quiet --stage-times %s --memory-cap 2 --out %s/o", file,
                              dir));
    snprintf(path, sizeof path, "%s/o/plan.json", dir);
    t = loom_test_slurp(path);
    has(t, "\"cap_violations\": 2, \"memory_cap_bytes\": 2, \"feasible\": false");
    free(t);
    free(loom_test_cli_expect(0, "plan --quiet --stage-times %s --out %s/o", file, dir));
    t = loom_test_slurp(path);
    has(t, "\"cap_violations\": 0, \"memory_cap_bytes\": 100, \"feasible\": true");
    free(t);
    loom_test_rmdir(dir);
}
END_TEST

START_TEST(help_lists_shared_options)
{
    static const char *const names[] = {"--manifest", "--model", "--cluster", "--parallel",
                                        "--workload", "--generate", "--iterations", "--seed",
                                        "--stage-times", "--memory-cap SIZE", "--evaluations",
                                        "--use", "--param", "--plugin-path",
                                        "--allow-untrusted-plugins"};
    char *out = NULL;
    ck_assert_int_eq(loom_test_cli("plan --help", &out), 0);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        has(out, names[i]);
    free(out);
}
END_TEST

/* Builds the suite. */
static Suite *cli_options_suite(void)
{
    Suite *s = suite_create("cli_options");
    TCase *tc = tcase_create("options");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, equals_form_everywhere);
    tcase_add_test(tc, prefixes_and_double_dash);
    tcase_add_test(tc, errors_name_the_flag);
    tcase_add_test(tc, contradictions_refused);
    tcase_add_test(tc, sizes_with_units);
    tcase_add_test(tc, cap_boundaries);
    tcase_add_test(tc, help_lists_shared_options);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(cli_options_suite());
}
