/* test_python.c - the Python package (python/loom, ctypes over the C API)
 * run with Debian's python3 against this build's libloom.so: the training
 * loop example (examples/python/loom_client.py) plans its iterations,
 * plan_json() plans a workload record, and a bad sample raises LoomError
 * with libloom's message. The package's own tests are python/tests
 * (ctest entry python_package). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "testutil.h"

#define PYTHON "/usr/bin/python3"
#define CLIENT LOOM_TEST_SOURCE_DIR "/examples/python/loom_client.py"
#define LIBLOOM LOOM_TEST_BINARY_DIR "/lib/libloom.so"

/* Asserts that `text` contains `frag`. */
static void has(const char *text, const char *frag)
{
    ck_assert_msg(strstr(text, frag) != NULL, "missing \"%s\" in:\n%s", frag, text);
}

/* Environment prefix that lets a sanitized libloom load into python3. */
static const char *env_prefix(void)
{
#if defined(__SANITIZE_ADDRESS__)
    static char prefix[1024];
    char *lib = NULL;
#if defined(__clang__)
    loom_test_run("clang -print-file-name=libclang_rt.asan-x86_64.so", &lib);
#else
    loom_test_run("gcc -print-file-name=libasan.so", &lib);
#endif
    lib[strcspn(lib, "\n")] = 0;
    snprintf(prefix, sizeof prefix, "LD_PRELOAD=%s ASAN_OPTIONS=detect_leaks=0 ", lib);
    free(lib);
    return prefix;
#else
    return "";
#endif
}

/* Runs python3 with `args`; returns the exit code, output in *out. */
static int python(const char *args, char **out)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s%s %s", env_prefix(), PYTHON, args);
    return loom_test_run(cmd, out);
}

START_TEST(training_loop_example)
{
    ck_assert_msg(access(PYTHON, X_OK) == 0, "Debian's python3 is missing (%s)", PYTHON);
    char *out = NULL;
    char outdir[] = "/tmp/loom-py-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(outdir));
    char args[2048];
    snprintf(args, sizeof args, "%s --lib %s --steps 2 --batch 16 --out %s/plan", CLIENT, LIBLOOM,
             outdir);
    int rc = python(args, &out);
    ck_assert_msg(rc == 0, "exit %d:\n%s", rc, out);
    has(out, "libloom 0.4.0, model vlm-s, tp=4,pp=4,mb=8");
    has(out, "step 0: 16 samples, ");
    has(out, "step 1: 16 samples, ");
    has(out, "rank 0 starts with forward_stage F0");
    has(out, "wrote ");
    free(out);
    char path[512];
    snprintf(path, sizeof path, "%s/plan/plan.json", outdir);
    ck_assert_int_eq(access(path, R_OK), 0);
    char rm[600];
    snprintf(rm, sizeof rm, "rm -rf %s", outdir);
    ck_assert_int_eq(system(rm), 0);
}
END_TEST

START_TEST(plan_json_and_errors)
{
    const char *script = loom_test_tmpfile(
        ".py",
        "import sys\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "import loom\n"
        "with loom.Planner(model='vlm-s', parallel='tp=4,pp=4,mb=4', seed=3,\n"
        "                  library=sys.argv[2]) as p:\n"
        "    rec = {'samples': [{'text_tokens': 812, 'images': 3}, {'text_tokens': 40,\n"
        "           'images': 1}, {'text_tokens': 2048}, {'text_tokens': 300, 'images': 2}]}\n"
        "    a = p.plan_json(rec)\n"
        "    b = p.plan([loom.Sample(**s) for s in rec['samples']])\n"
        "    print('ranks', a.ranks, 'same', a.makespan_ms == b.makespan_ms,\n"
        "          'positive', a.makespan_ms > 0, 'mfu', a.mfu is None or 0 < a.mfu < 1)\n"
        "    print('stages', len(a.plan_json['stages']) > 0)\n"
        "    a.close(); b.close()\n"
        "    try:\n"
        "        p.plan([loom.Sample(10, microbatch=9)])\n"
        "    except loom.LoomError as e:\n"
        "        print(type(e).__name__, e.status)\n"
        "        print('error', e.code, e.message)\n");
    char args[2048], *out = NULL;
    snprintf(args, sizeof args, "%s %s/python %s", script, LOOM_TEST_SOURCE_DIR, LIBLOOM);
    int rc = python(args, &out);
    ck_assert_msg(rc == 0, "exit %d:\n%s", rc, out);
    has(out, "ranks 4 same True positive True mfu True");
    has(out, "stages True");
    has(out, "LoomInputError LOOM_EINVAL");
    has(out, "error -1 iteration 0: samples[0].microbatch: expected -1..3");
    free(out);
}
END_TEST

static Suite *python_suite(void)
{
    Suite *s = suite_create("python");
    TCase *tc = tcase_create("python");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, training_loop_example);
    tcase_add_test(tc, plan_json_and_errors);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(python_suite());
}
