/*
 * test_bad_inputs.c - the bad-input catalogue (tests/bad-inputs/cases.tsv):
 * every case runs bin/loom with its arguments and must exit with the
 * expected code and print the expected message fragment. One loop test,
 * one iteration per case.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "testutil.h"

#define MAX_CASES 512
#define LINE_BYTES 2048

typedef struct bad_case {
    char name[96];
    int exit_code;
    char fragment[768];
    char args[1024];
    int line;
} bad_case;

static bad_case cases[MAX_CASES];
static int n_cases;
static char load_error[512];

/* Replaces every "@BAD@" / "@SRC@" in `in` by the catalogue folder or the
 * source tree, writing at most `size` bytes to out. */
static void expand(const char *in, char *out, size_t size)
{
    const char *bad = loom_test_src("tests/bad-inputs");
    char bad_dir[4096], src_dir[4096];
    snprintf(bad_dir, sizeof bad_dir, "%s", bad);
    snprintf(src_dir, sizeof src_dir, "%s", LOOM_TEST_SOURCE_DIR);
    size_t n = 0;
    while (*in && n + 1 < size) {
        const char *sub = NULL;
        if (!strncmp(in, "@BAD@", 5))
            sub = bad_dir;
        else if (!strncmp(in, "@SRC@", 5))
            sub = src_dir;
        if (sub) {
            n += (size_t)snprintf(out + n, size - n, "%s", sub);
            if (n >= size)
                n = size - 1;
            in += 5;
        } else {
            out[n++] = *in++;
        }
    }
    out[n] = 0;
}

/* Splits one tab-separated line into a case; 0 on success. */
static int parse_line(char *line, int lineno, bad_case *c)
{
    char *fields[4];
    int n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(line, "\t", &save); tok && n < 4; tok = strtok_r(NULL, "\t", &save))
        fields[n++] = tok;
    if (n != 4)
        return -1;
    char *end = NULL;
    long code = strtol(fields[1], &end, 10);
    if (!end || *end || code < 0 || code > 255)
        return -1;
    snprintf(c->name, sizeof c->name, "%s", fields[0]);
    c->exit_code = (int)code;
    expand(fields[2], c->fragment, sizeof c->fragment);
    expand(fields[3], c->args, sizeof c->args);
    c->line = lineno;
    return 0;
}

/* Reads cases.tsv into `cases`; on failure leaves a message in load_error. */
static void load_cases(void)
{
    const char *path = loom_test_src("tests/bad-inputs/cases.tsv");
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(load_error, sizeof load_error, "%s: cannot open", path);
        return;
    }
    char line[LINE_BYTES];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0] || line[0] == '#')
            continue;
        if (n_cases == MAX_CASES || parse_line(line, lineno, &cases[n_cases])) {
            snprintf(load_error, sizeof load_error,
                     "%s:%d: expected name<TAB>exit<TAB>fragment<TAB>arguments", path, lineno);
            break;
        }
        n_cases++;
    }
    fclose(f);
}

/* Appends `arg` to cmd single-quoted for the shell. */
static void append_quoted(char *cmd, size_t size, const char *arg)
{
    size_t n = strlen(cmd);
    if (n + 2 < size) {
        cmd[n++] = ' ';
        cmd[n++] = '\'';
    }
    for (; *arg && n + 5 < size; arg++) {
        if (*arg == '\'') {
            memcpy(cmd + n, "'\\''", 4);
            n += 4;
        } else {
            cmd[n++] = *arg;
        }
    }
    if (n + 1 < size)
        cmd[n++] = '\'';
    cmd[n] = 0;
}

START_TEST(catalogue_loads_and_is_large)
{
    ck_assert_msg(!load_error[0], "%s", load_error);
    ck_assert_int_ge(n_cases, 60);
    for (int i = 0; i < n_cases; i++)
        for (int k = i + 1; k < n_cases; k++)
            ck_assert_msg(strcmp(cases[i].name, cases[k].name) != 0,
                          "case name %s used twice (lines %d and %d)", cases[i].name,
                          cases[i].line, cases[k].line);
}
END_TEST

START_TEST(bad_input_case)
{
    ck_assert_msg(!load_error[0], "%s", load_error);
    const bad_case *c = &cases[_i];
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "LOOM_PLUGIN_PATH= '%s'", loom_test_bin("bin/loom"));
    char args[sizeof c->args];
    memcpy(args, c->args, sizeof args);
    char *save = NULL;
    for (char *tok = strtok_r(args, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
        append_quoted(cmd, sizeof cmd, tok);
    char *out = NULL;
    int rc = loom_test_run(cmd, &out);
    ck_assert_ptr_nonnull(out);
    ck_assert_msg(rc == c->exit_code,
                  "case %s (cases.tsv line %d): exit %d, expected %d\n$ %s\n%s", c->name,
                  c->line, rc, c->exit_code, cmd, out);
    ck_assert_msg(strstr(out, c->fragment) != NULL,
                  "case %s (cases.tsv line %d): output lacks \"%s\"\n$ %s\n%s", c->name, c->line,
                  c->fragment, cmd, out);
    /* text from the file never reaches the terminal raw: no escape
     * sequence, no line forged by a newline inside a name */
    ck_assert_msg(strchr(out, '\x1b') == NULL,
                  "case %s (cases.tsv line %d): output holds an escape byte\n%s", c->name,
                  c->line, out);
    for (const char *line = out; line; line = strchr(line, '\n'), line = line ? line + 1 : NULL)
        ck_assert_msg(strncmp(line, "loom plan: ok", 13) && strncmp(line, "loom: ok", 8) &&
                          strncmp(line, "loom ab: ok", 11),
                      "case %s (cases.tsv line %d): a forged line reached the output\n%s",
                      c->name, c->line, out);
    free(out);
}
END_TEST

/* Runs `loom ARGS` (ARGS with %s replaced by `fifo`) and expects exit 2
 * with the FIFO named as such, at once (a blocking open would hang until
 * the test's timeout). */
static void expect_fifo_refused(const char *fifo, const char *args_fmt)
{
    char args[1024], cmd[2048];
    snprintf(args, sizeof args, args_fmt, fifo, fifo);
    snprintf(cmd, sizeof cmd, "cd '%s' && LOOM_PLUGIN_PATH= timeout 60 '%s' %s",
             LOOM_TEST_SOURCE_DIR, loom_test_bin("bin/loom"), args);
    char *out = NULL;
    int rc = loom_test_run(cmd, &out);
    ck_assert_ptr_nonnull(out);
    ck_assert_msg(rc == 2, "exit %d, expected 2\n$ %s\n%s", rc, cmd, out);
    ck_assert_msg(strstr(out, "expected a regular file, found a FIFO (named pipe)") != NULL,
                  "no FIFO message\n$ %s\n%s", cmd, out);
    free(out);
}

START_TEST(fifo_inputs_are_refused)
{
    char dir[] = "/tmp/loom-fifo-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char fifo[512];
    snprintf(fifo, sizeof fifo, "%s/input.json", dir);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    expect_fifo_refused(fifo, "plan --quiet --iterations 1 --model %s");
    expect_fifo_refused(fifo, "plan --quiet --iterations 1 --cluster %s");
    expect_fifo_refused(fifo, "plan --quiet --iterations 1 --workload %s");
    expect_fifo_refused(fifo, "plan --quiet --iterations 1 --stage-times %s");
    expect_fifo_refused(fifo, "plan --quiet --iterations 1 --manifest %s");
    expect_fifo_refused(fifo, "validate %s");
    expect_fifo_refused(fifo, "replan --job %s");
    expect_fifo_refused(fifo, "calibrate-batch --model vlm-s --generate text --global-batch 8 "
                              "--costs %s");
    expect_fifo_refused(fifo, "calibrate-batch --model %s --generate text --global-batch 8");
    expect_fifo_refused(fifo, "ab examples/manifests/gpipe.json examples/manifests/gpipe.json "
                              "--quiet --suite %s");
    expect_fifo_refused(fifo, "ab examples/manifests/gpipe.json examples/manifests/gpipe.json "
                              "--quiet --iterations 1 --workload %s");
    expect_fifo_refused(fifo, "ab %s examples/manifests/gpipe.json --quiet --iterations 1");
    expect_fifo_refused(fifo, "plan --quiet --iterations 1 --model tests/bad-inputs/model/tiny.json "
                              "--use cost_model=table --param cost_model.file=%s");
    unlink(fifo);
    rmdir(dir);
}
END_TEST

/* The catalogue suite: one loop iteration per case. */
static Suite *suite(void)
{
    Suite *s = suite_create("bad_inputs");
    TCase *tc = tcase_create("catalogue");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, catalogue_loads_and_is_large);
    tcase_add_test(tc, fifo_inputs_are_refused);
    tcase_add_loop_test(tc, bad_input_case, 0, n_cases > 0 ? n_cases : 1);
    suite_add_tcase(s, tc);
    return s;
}

/* Reads the catalogue, then runs the suite over it. */
int main(void)
{
    load_cases();
    return loom_test_main(suite());
}
