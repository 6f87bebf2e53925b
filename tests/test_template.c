/* test_template.c - the SDK as a third party sees it: install this build
 * into a temporary prefix, build examples/plugin-template against it with
 * find_package(Loom) and with pkg-config, run its mock-host unit test, and
 * check that the installed `loom` lists and loads the plugin. */
#define _XOPEN_SOURCE 700 /* mkdtemp */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

#ifdef LOOM_TEST_SANITIZE
#define SAN_FLAGS " -fsanitize=address,undefined"
#else
#define SAN_FLAGS ""
#endif

static char prefix[64];

/* Runs a shell command; fails the test with its output unless it exits 0. */
static void run_ok(const char *cmd)
{
    char *out = NULL;
    int rc = loom_test_run(cmd, &out);
    ck_assert_msg(rc == 0, "command failed (%d): %s\n%s", rc, cmd, out);
    free(out);
}

/* Runs a command and returns its output (caller frees); asserts exit 0. */
static char *output_of(const char *cmd)
{
    char *out = NULL;
    int rc = loom_test_run(cmd, &out);
    ck_assert_msg(rc == 0, "command failed (%d): %s\n%s", rc, cmd, out);
    return out;
}

/* Asserts that `text` contains `frag`. */
static void has(const char *text, const char *frag)
{
    ck_assert_msg(strstr(text, frag) != NULL, "missing \"%s\" in:\n%s", frag, text);
}

START_TEST(template_builds_against_installed_sdk)
{
    char cmd[8192];
    snprintf(prefix, sizeof prefix, "/tmp/loom-template-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(prefix));
    snprintf(cmd, sizeof cmd, "cmake --install '%s' --prefix '%s' >/dev/null",
             LOOM_TEST_BINARY_DIR, prefix);
    run_ok(cmd);

    /* find_package(Loom) + loom_add_plugin, warnings as errors. */
    snprintf(cmd, sizeof cmd,
             "cmake -S '%s/examples/plugin-template' -B '%s/build' "
             "-DCMAKE_PREFIX_PATH='%s' "
             "-DCMAKE_C_FLAGS='-Wall -Wextra -Wpedantic -Werror%s' >/dev/null",
             LOOM_TEST_SOURCE_DIR, prefix, prefix, SAN_FLAGS);
    run_ok(cmd);
    snprintf(cmd, sizeof cmd, "cmake --build '%s/build'", prefix);
    run_ok(cmd);
    /* optimised by default: no build type given above */
    snprintf(cmd, sizeof cmd, "grep '^CMAKE_BUILD_TYPE:' '%s/build/CMakeCache.txt'", prefix);
    char *cache = output_of(cmd);
    has(cache, "CMAKE_BUILD_TYPE:STRING=Release\n");
    free(cache);
    /* one version: the installed CLI, and libloom through loom.pc */
    snprintf(cmd, sizeof cmd, "'%s/bin/loom' --version", prefix);
    char *version = output_of(cmd);
    has(version, "loom 0.4.0 (plugin ABI 1)\n");
    free(version);
    snprintf(cmd, sizeof cmd,
             "printf '#include <stdio.h>\\n#include <loom/api.h>\\n"
             "int main(void) { puts(loom_version()); return 0; }\\n' > '%s/embed.c' && "
             "cc -std=c11%s $(PKG_CONFIG_PATH='%s/lib/pkgconfig' pkg-config --cflags loom) "
             "'%s/embed.c' -o '%s/embed' "
             "$(PKG_CONFIG_PATH='%s/lib/pkgconfig' pkg-config --libs loom) && '%s/embed'",
             prefix, SAN_FLAGS, prefix, prefix, prefix, prefix, prefix);
    char *embedded = output_of(cmd);
    ck_assert_str_eq(embedded, "0.4.0\n");
    free(embedded);
    snprintf(cmd, sizeof cmd, "ctest --test-dir '%s/build' --output-on-failure", prefix);
    run_ok(cmd);

    /* The installed loom lists the bundle in the build dir and loads it. */
    snprintf(cmd, sizeof cmd, "'%s/bin/loom' plugins list --load --path '%s/build'", prefix,
             prefix);
    char *out = output_of(cmd);
    char want[512];
    snprintf(want, sizeof want, "%s/build/reverse/loom-reverse.so  loaded", prefix);
    has(out, "org.example.reverse");
    has(out, want);
    free(out);

    /* pkg-config route: plain cc, headers only, no undefined symbols. */
    snprintf(cmd, sizeof cmd,
             "mkdir -p '%s/pc/reverse' && cp '%s/examples/plugin-template/manifest.json' "
             "'%s/pc/reverse/' && cc -std=c11 -shared -fPIC%s "
             "$(PKG_CONFIG_PATH='%s/lib/pkgconfig' pkg-config --cflags loom-sdk) %s "
             "-o '%s/pc/reverse/loom-reverse.so' '%s/examples/plugin-template/reverse.c'",
             prefix, LOOM_TEST_SOURCE_DIR, prefix, SAN_FLAGS, prefix,
             SAN_FLAGS[0] ? "" : "-Wl,--no-undefined", prefix, LOOM_TEST_SOURCE_DIR);
    run_ok(cmd);
    snprintf(cmd, sizeof cmd, "'%s/bin/loom' plugins list --json --load --path '%s/pc'",
             prefix, prefix);
    out = output_of(cmd);
    has(out, "\"loaded\"");
    snprintf(want, sizeof want, "\"%s/pc/reverse/loom-reverse.so\"", prefix);
    has(out, want);
    free(out);

    /* Installed next to Loom's own plugins, it is found without --path. */
    snprintf(cmd, sizeof cmd, "cmake --install '%s/build' --prefix '%s' >/dev/null", prefix,
             prefix);
    run_ok(cmd);
    snprintf(cmd, sizeof cmd, "'%s/bin/loom' plugins inspect reverse --load", prefix);
    out = output_of(cmd);
    snprintf(want, sizeof want, "binary:       %s/lib/loom/plugins/reverse/loom-reverse.so\n",
             prefix);
    has(out, want);
    has(out, "status:       loaded\n");
    has(out, "  evaluate (bool) default true\n");
    free(out);

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", prefix);
    run_ok(cmd);
}
END_TEST

/* Builds the suite. */
static Suite *template_suite(void)
{
    Suite *s = suite_create("template");
    TCase *tc = tcase_create("install");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, template_builds_against_installed_sdk);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(template_suite());
}
