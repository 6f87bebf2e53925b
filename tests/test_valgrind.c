/*
 * test_valgrind.c - valgrind memcheck over `loom plan` (the default example
 * and an MCTS run writing every output) and over a plugin load/unload
 * cycle (this program re-run with --plugin-cycle): no memory definitely
 * lost, no invalid read or write, no use of uninitialised values.
 * Skipped, saying so, in the sanitizer build: valgrind cannot run
 * AddressSanitizer binaries.
 */
#define _DEFAULT_SOURCE /* mkdtemp */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <loom/sys/registry.h>
#include "registry_priv.h"
#include "ctx.h"
#include "testutil.h"

#if defined(__SANITIZE_ADDRESS__)
#define LOOM_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LOOM_TEST_ASAN 1
#endif
#endif
#ifndef LOOM_TEST_ASAN
#define LOOM_TEST_ASAN 0
#endif

/* Exit status valgrind uses when it found an error. */
#define VALGRIND_ERROR_EXIT 99

#define VALGRIND                                                               \
    "valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite "   \
    "--errors-for-leak-kinds=definite --error-exitcode=99 --track-fds=no "     \
    "--num-callers=30 "

static char self_path[4096];

/* 1 (after saying why) when this build cannot run valgrind. */
static int skip_here(void)
{
    if (LOOM_TEST_ASAN) {
        fprintf(stderr, "test_valgrind: skipped: this is the sanitizer build "
                        "(LOOM_SANITIZE=ON); valgrind cannot run AddressSanitizer "
                        "binaries, and ASan/LSan check the same things there\n");
        return 1;
    }
    return 0;
}

/* Runs `cmd` under valgrind and asserts a clean report. */
static void memcheck(const char *cmd)
{
    ck_assert_msg(system("valgrind --version > /dev/null 2>&1") == 0,
                  "valgrind is not installed (make deps installs it)");
    char full[8192];
    snprintf(full, sizeof full, "LOOM_PLUGIN_PATH= " VALGRIND "%s", cmd);
    char *out = NULL;
    int rc = loom_test_run(full, &out);
    ck_assert_ptr_nonnull(out);
    ck_assert_msg(rc != VALGRIND_ERROR_EXIT, "valgrind found errors:\n$ %s\n%s", full, out);
    ck_assert_msg(rc == 0, "exit %d\n$ %s\n%s", rc, full, out);
    ck_assert_msg(strstr(out, "ERROR SUMMARY: 0 errors") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "definitely lost: 0 bytes") != NULL ||
                      strstr(out, "All heap blocks were freed") != NULL,
                  "%s", out);
    free(out);
}

START_TEST(plan_default_example)
{
    if (skip_here())
        return;
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' plan", loom_test_bin("bin/loom"));
    memcheck(cmd);
}
END_TEST

START_TEST(plan_mcts_with_outputs)
{
    if (skip_here())
        return;
    char dir[] = "/tmp/loom-valgrind-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "'%s' plan --quiet --iterations 1 --manifest '%s' --param ranker.threads=2 "
             "--param ranker.max_evaluations=40 --param ranker.budget_ms=600000 --out '%s'",
             loom_test_bin("bin/loom"), loom_test_src("examples/manifests/pipeweaver.json"),
             dir);
    memcheck(cmd);
    char rm[200];
    snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(rm), 0);
}
END_TEST

START_TEST(plugin_load_unload_cycle)
{
    if (skip_here())
        return;
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "'%s' --plugin-cycle", self_path);
    memcheck(cmd);
}
END_TEST

/* The cycle valgrind watches: three times, a registry finds every plugin
 * beside libloom, loads each one (dlopen, handshake, init) and is freed
 * (fini). Returns 0 when some plugin loaded every time (a plugin that fails
 * to load is reported on stderr and left to its own tests). */
static int plugin_cycle(void)
{
    for (int round = 0; round < 3; round++) {
        loom_error err = {0, ""};
        loom_registry *reg = loom_registry_new();
        if (!reg || loom_registry_add_default_dirs(reg, &err) != LOOM_OK) {
            fprintf(stderr, "plugin cycle: %s\n", err.message);
            loom_registry_free(reg);
            return 1;
        }
        int loaded = 0, n = loom_registry_count(reg);
        for (int i = 0; i < n; i++) {
            loom_plugin *p = loom_registry_at(reg, i);
            if (loom_plugin_load(reg, p, &err) == LOOM_OK)
                loaded++;
            else
                fprintf(stderr, "plugin cycle: %s\n", err.message);
        }
        printf("plugin cycle %d: loaded %d of %d plugins\n", round, loaded, n);
        loom_registry_free(reg);
        if (loaded == 0)
            return 1;
    }
    return 0;
}

/* The memcheck suite. */
static Suite *suite(void)
{
    Suite *s = suite_create("valgrind");
    TCase *tc = tcase_create("memcheck");
    tcase_set_timeout(tc, 900);
    tcase_add_test(tc, plan_default_example);
    tcase_add_test(tc, plan_mcts_with_outputs);
    tcase_add_test(tc, plugin_load_unload_cycle);
    suite_add_tcase(s, tc);
    return s;
}

/* Runs the suite, or the plugin cycle when called with --plugin-cycle. */
int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--plugin-cycle"))
        return plugin_cycle();
    ssize_t n = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
    if (n <= 0)
        snprintf(self_path, sizeof self_path, "%s", argv[0]);
    else
        self_path[n] = 0;
    return loom_test_main(suite());
}
