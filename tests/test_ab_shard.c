/* test_ab_shard.c - `loom ab --shard K/N` and `loom ab merge`: the K/N
 * syntax and selection; a 5-case suite (one case with a broken model file,
 * exit 2) run whole and as 2, 3 and 6 shards, whose merges give the whole
 * run's JSON byte for byte and its Markdown and JUnit up to the measured
 * plan times; with --timings and the whole run's plan times put into the
 * shard reports, all three reports byte for byte; a segfaulting ranker
 * carried through the merge (exit 3); and the merge's errors: a missing,
 * a duplicated shard, shards of other suites, manifests, options or
 * memory thresholds, a report that is not a shard's, a damaged one, and
 * bad --shard values. */
#define _DEFAULT_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "testutil.h"
#include "ab.h"
#include "ab_shard.h"

#define PLANNERS LOOM_TEST_BINARY_DIR "/tests/isolation-fixtures/planners/"

/* Asserts that `text` contains `frag`. */
static void has(const char *text, const char *frag)
{
    ck_assert_msg(strstr(text, frag) != NULL, "missing \"%s\" in:\n%s", frag, text);
}

/* Reads a whole file into a malloc'd string. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    int c;
    while ((c = fgetc(f)) != EOF)
        fputc(c, m);
    fclose(f);
    fclose(m);
    return buf;
}

/* Writes text to path. */
static void spit(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
}

/* A fresh folder for one test's files (rm_dir removes it). */
static void make_dir(char *dir, size_t size)
{
    snprintf(dir, size, "/tmp/loom-shard-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void rm_dir(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(loom_test_run(cmd, NULL), 0);
}

/* A fifo-ranker manifest with `interleaver`, written to dir/name. */
static void manifest(const char *dir, const char *name, const char *interleaver)
{
    char text[1024], path[512];
    snprintf(text, sizeof text,
             "{\"loom_planner\": 1, \"name\": \"uniform-%s\", \"seed\": 1, \"pipeline\": ["
             "{\"role\": \"cost_model\", \"use\": \"roofline\"},"
             "{\"role\": \"partitioner\", \"use\": \"uniform\"},"
             "{\"role\": \"ranker\", \"use\": \"fifo\"},"
             "{\"role\": \"interleaver\", \"use\": \"%s\"},"
             "{\"role\": \"memory_tuner\", \"use\": \"none\"}]}",
             interleaver, interleaver);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    spit(path, text);
}

/* Five small cases; "broken" names a model file that does not parse, so
 * both sides fail while opening the session (bad input, exit 2). The
 * others give better and same verdicts, and with --memory-threshold 0.1
 * a worse memory verdict. */
static const char *const five_cases =
    "{\"description\": \"five small VLM cases\", \"cases\": ["
    "{\"name\": \"tp4-pp4\", \"model\": \"vlm-s\", \"parallel\": \"tp=4,pp=4,mb=8\", "
    "\"generate\": \"interleaved\", \"iterations\": 2, \"seed\": 3},"
    "{\"name\": \"tp2-pp8\", \"model\": \"vlm-s\", \"parallel\": \"tp=2,pp=8,mb=16\", "
    "\"generate\": \"image-pairs\", \"iterations\": 2, \"seed\": 5},"
    "{\"name\": \"tp4-pp2\", \"model\": \"vlm-s\", \"parallel\": \"tp=4,pp=2,mb=8\", "
    "\"iterations\": 2},"
    "{\"name\": \"broken\", \"model\": \"broken-model.json\", \"parallel\": \"tp=4,pp=4,mb=8\", "
    "\"iterations\": 2},"
    "{\"name\": \"video\", \"model\": \"vlm-s\", \"parallel\": \"tp=4,pp=2,mb=8\", "
    "\"generate\": \"video\", \"iterations\": 2, \"seed\": 7}]}";

/* Writes a.json (1f1b), b.json (dual-queue), broken-model.json and
 * suite.json (five_cases) into dir. */
static void five_case_setup(const char *dir)
{
    char path[512];
    manifest(dir, "a.json", "1f1b");
    manifest(dir, "b.json", "dual-queue");
    snprintf(path, sizeof path, "%s/broken-model.json", dir);
    spit(path, "{\"name\": 3}");
    snprintf(path, sizeof path, "%s/suite.json", dir);
    spit(path, five_cases);
}

/* Runs the n shards of `run` (loom ab arguments before --shard) into
 * dir/<prefix>-<k>.json; each exits with a report (0 to 3). */
static void run_shards(const char *run, const char *dir, const char *prefix, int n)
{
    char args[4096];
    for (int k = 1; k <= n; k++) {
        snprintf(args, sizeof args, "%s --shard %d/%d --json %s/%s-%d.json --quiet", run, k, n,
                 dir, prefix, k);
        int code = loom_test_cli(args, NULL);
        ck_assert_msg(code >= 0 && code <= 3, "shard %d/%d exited %d", k, n, code);
    }
}

/* "dir/prefix-n.json ... dir/prefix-1.json" (last shard first: the order
 * of the files does not matter). */
static void shard_list(char *buf, size_t size, const char *dir, const char *prefix, int n)
{
    size_t len = 0;
    buf[0] = 0;
    for (int k = n; k >= 1 && len < size; k--)
        len += (size_t)snprintf(buf + len, size - len, "%s%s/%s-%d.json", k < n ? " " : "", dir,
                                prefix, k);
}

/* The text with the "plan ms A / B" cells of Markdown table rows and the
 * time attributes of JUnit test cases replaced by '#': what a run
 * measures rather than computes. */
static char *mask_times(const char *text)
{
    char *out = malloc(strlen(text) + 1), *o = out;
    const char *p = text;
    int bars = 0, row = 0;
    while (*p) {
        if (p == text || p[-1] == '\n') {
            row = *p == '|';
            bars = 0;
        }
        if (row && *p == '|' && ++bars == 11) {
            *o++ = *p++;
            while (*p && *p != '|' && *p != '\n')
                p++;
            *o++ = '#';
            continue;
        }
        if (!strncmp(p, " time=\"", 7)) {
            memcpy(o, p, 7);
            o += 7;
            p += 7;
            while (*p && *p != '"')
                p++;
            *o++ = '#';
            continue;
        }
        *o++ = *p++;
    }
    *o = 0;
    return out;
}

/* Asserts two files are equal byte for byte. */
static void same_file(const char *x, const char *y)
{
    char *a = slurp(x), *b = slurp(y);
    ck_assert_msg(!strcmp(a, b), "%s and %s differ:\n%s\n----\n%s", x, y, a, b);
    free(a);
    free(b);
}

/* Asserts two files are equal once mask_times has been applied. */
static void same_but_times(const char *x, const char *y)
{
    char *a = slurp(x), *b = slurp(y);
    char *ma = mask_times(a), *mb = mask_times(b);
    ck_assert_msg(!strcmp(ma, mb), "%s and %s differ beyond plan times:\n%s\n----\n%s", x, y, ma,
                  mb);
    ck_assert_msg(strcmp(a, ma) != 0, "nothing masked in %s", x);
    free(a);
    free(b);
    free(ma);
    free(mb);
}

/* ---- K/N ---------------------------------------------------------------------- */

START_TEST(shard_syntax_and_selection)
{
    int32_t k = 0, n = 0;
    loom_error err = {0};
    ck_assert_int_eq(loom_ab_shard_parse("2/4", &k, &n, &err), LOOM_OK);
    ck_assert_int_eq(k, 2);
    ck_assert_int_eq(n, 4);
    ck_assert_int_eq(loom_ab_shard_parse("1/1", &k, &n, &err), LOOM_OK);
    static const char *const bad[] = {"0/2", "3/2", "x", "2", "/2", "1/", "1/2x", "-1/2",
                                      "1/1001", "", "1 /2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(loom_ab_shard_parse(bad[i], &k, &n, &err), LOOM_EINVAL);
        has(err.message, "--shard: expected K/N with integers 1 <= K <= N <= 1000");
        char found[64];
        snprintf(found, sizeof found, "found '%s'", bad[i]);
        has(err.message, found);
    }
    ck_assert_int_eq(loom_ab_shard_parse(NULL, &k, &n, &err), LOOM_EINVAL);
    has(err.message, "found ''");
    /* 7 cases over 3 shards: 0 3 6 / 1 4 / 2 5 */
    int hits[7] = {0};
    for (int32_t kk = 1; kk <= 3; kk++)
        for (int32_t i = 0; i < 7; i++)
            if (loom_ab_shard_selects(kk, 3, i))
                hits[i] += kk;
    static const int want[7] = {1, 2, 3, 1, 2, 3, 1};
    for (int i = 0; i < 7; i++)
        ck_assert_int_eq(hits[i], want[i]);
    ck_assert_int_eq(loom_ab_shard_index(2, 3, 0), 1);
    ck_assert_int_eq(loom_ab_shard_index(2, 3, 1), 4);
    ck_assert_int_eq(loom_ab_shard_index(1, 1, 5), 5);
}
END_TEST

/* ---- merges equal the whole run ------------------------------------------------ */

START_TEST(cli_merges_equal_the_whole_run)
{
    char dir[64], run[2048], args[8192], files[4096], *out = NULL;
    make_dir(dir, sizeof dir);
    five_case_setup(dir);
    snprintf(run, sizeof run, "ab %s/a.json %s/b.json --suite %s/suite.json "
             "--memory-threshold 0.1", dir, dir, dir);

    snprintf(args, sizeof args, "%s --json %s/u.json --markdown %s/u.md --junit %s/u.xml",
             run, dir, dir, dir);
    ck_assert_int_eq(loom_test_cli(args, &out), 2);
    has(out, "| tp4-pp4 | 2 |");
    has(out, "; memory worse (+");
    has(out, "- case `broken`, A: LOOM\\_EINVAL while opening the session");
    has(out, "**Result: bad input**");
    free(out);

    static const int shards[] = {2, 3, 6}; /* 6: one shard has no case */
    for (size_t s = 0; s < sizeof shards / sizeof shards[0]; s++) {
        int n = shards[s];
        char prefix[16], name[600], other[600];
        snprintf(prefix, sizeof prefix, "s%d", n);
        run_shards(run, dir, prefix, n);
        shard_list(files, sizeof files, dir, prefix, n);
        snprintf(args, sizeof args,
                 "ab merge %s --json %s/m%d.json --markdown %s/m%d.md --junit %s/m%d.xml --quiet",
                 files, dir, n, dir, n, dir, n);
        ck_assert_int_eq(loom_test_cli(args, &out), 2);
        snprintf(name, sizeof name, "%s/m%d.md", dir, n);
        char *md = slurp(name);
        has(out, md); /* the Markdown on stdout too */
        has(out, "loom ab: case broken, B (");
        free(md);
        free(out);
        snprintf(name, sizeof name, "%s/m%d.json", dir, n);
        snprintf(other, sizeof other, "%s/u.json", dir);
        same_file(name, other);
        snprintf(name, sizeof name, "%s/m%d.md", dir, n);
        snprintf(other, sizeof other, "%s/u.md", dir);
        same_but_times(name, other);
        snprintf(name, sizeof name, "%s/m%d.xml", dir, n);
        snprintf(other, sizeof other, "%s/u.xml", dir);
        same_but_times(name, other);
    }

    /* a shard report: the shard's own report plus the shard's members */
    snprintf(files, sizeof files, "%s/s3-2.json", dir);
    char *json = slurp(files);
    cJSON *root = cJSON_Parse(json);
    ck_assert_ptr_nonnull(root);
    ck_assert_int_eq(cJSON_GetObjectItem(root, "loom_ab")->valueint, 1);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(root, "cases")), 2);
    cJSON *shard = cJSON_GetObjectItem(root, "shard");
    ck_assert_int_eq(cJSON_GetObjectItem(shard, "k")->valueint, 2);
    ck_assert_int_eq(cJSON_GetObjectItem(shard, "n")->valueint, 3);
    ck_assert_int_eq(cJSON_GetObjectItem(shard, "suite_cases")->valueint, 5);
    cJSON *runs = cJSON_GetObjectItem(root, "runs");
    ck_assert_int_eq(cJSON_GetArraySize(runs), 2);
    ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(runs, 0), "index")->valueint, 1);
    ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(runs, 1), "index")->valueint, 4);
    ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(runs, 1), "name")->valuestring,
                     "video");
    cJSON *r0 = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
                                       cJSON_GetArrayItem(runs, 0), "a"), "results"), 0);
    static const char *const fields[] = {"iteration", "makespan_ms", "bubble_ratio", "mfu",
                                         "peak_bytes", "cap_violations", "evaluations", "ranks",
                                         "plan_time_ms"};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        ck_assert_msg(cJSON_IsNumber(cJSON_GetObjectItem(r0, fields[i])), "no %s", fields[i]);
    cJSON_Delete(root);
    free(json);
    snprintf(files, sizeof files, "%s/s2-2.json", dir); /* cases 1 and 3: the broken one */
    json = slurp(files);
    has(json, "\"failure\": {\"kind\": \"status\", \"status\": -1, \"signal\": 0, "
              "\"exit_code\": 0, \"limit_ms\": 0, \"limit_mb\": 0, \"phase\": \"open\", "
              "\"iteration\": -1, \"step\": -1, \"plugin\": \"\", \"message\": ");
    free(json);
    rm_dir(dir);
}
END_TEST

/* Shortest "%.15g" / "%.17g" that reads back as v (as the reports print). */
static void number_text(char *buf, size_t size, double v)
{
    snprintf(buf, size, "%.15g", v);
    if (strtod(buf, NULL) != v)
        snprintf(buf, size, "%.17g", v);
}

/* Puts the plan times of the whole run's JSON report (`whole`, written
 * with --timings) into the "runs" of shard report `path`, in place: the
 * shard then holds exactly what the whole run measured. Every result of
 * the shard must be a paired iteration of the whole run. */
static void transplant_plan_times(const char *whole, const char *path)
{
    char *wtext = slurp(whole), *stext = slurp(path);
    cJSON *w = cJSON_Parse(wtext), *s = cJSON_Parse(stext);
    ck_assert_ptr_nonnull(w);
    ck_assert_ptr_nonnull(s);
    cJSON *wcases = cJSON_GetObjectItem(w, "cases"), *runs = cJSON_GetObjectItem(s, "runs");
    /* the values in the order "plan_time_ms" appears in the runs */
    double values[256];
    int n_values = 0;
    for (int j = 0; j < cJSON_GetArraySize(runs); j++) {
        cJSON *run = cJSON_GetArrayItem(runs, j);
        int index = cJSON_GetObjectItem(run, "index")->valueint;
        cJSON *iters = cJSON_GetObjectItem(cJSON_GetArrayItem(wcases, index), "iterations");
        static const char *const sides[] = {"a", "b"};
        for (int k = 0; k < 2; k++) {
            cJSON *results = cJSON_GetObjectItem(cJSON_GetObjectItem(run, sides[k]), "results");
            ck_assert_int_eq(cJSON_GetArraySize(results), cJSON_GetArraySize(iters));
            for (int p = 0; p < cJSON_GetArraySize(results); p++) {
                cJSON *x = cJSON_GetObjectItem(cJSON_GetArrayItem(iters, p), sides[k]);
                ck_assert_int_lt(n_values, 256);
                values[n_values++] = cJSON_GetObjectItem(x, "plan_time_ms")->valuedouble;
            }
        }
    }
    cJSON_Delete(w);
    cJSON_Delete(s);
    char *runs_at = strstr(stext, "\n  \"runs\": [");
    ck_assert_ptr_nonnull(runs_at);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fwrite(stext, 1, (size_t)(runs_at - stext), f);
    const char *p = runs_at, *key = "\"plan_time_ms\": ";
    int used = 0;
    for (const char *q; (q = strstr(p, key)) != NULL;) {
        fwrite(p, 1, (size_t)(q - p) + strlen(key), f);
        q += strlen(key);
        while (*q && *q != ',' && *q != '}')
            q++;
        char num[40];
        ck_assert_int_lt(used, n_values);
        number_text(num, sizeof num, values[used++]);
        fputs(num, f);
        p = q;
    }
    fputs(p, f);
    fclose(f);
    ck_assert_int_eq(used, n_values);
    free(wtext);
    free(stext);
}

START_TEST(cli_merge_is_byte_identical_with_the_same_plan_times)
{
    char dir[64], run[2048], args[8192], files[4096], a[600], b[600];
    make_dir(dir, sizeof dir);
    five_case_setup(dir);
    snprintf(run, sizeof run, "ab %s/a.json %s/b.json --suite %s/suite.json --timings", dir, dir,
             dir);
    snprintf(args, sizeof args, "%s --json %s/u.json --markdown %s/u.md --junit %s/u.xml --quiet",
             run, dir, dir, dir);
    ck_assert_int_eq(loom_test_cli(args, NULL), 2);
    run_shards(run, dir, "s", 3);
    snprintf(a, sizeof a, "%s/u.json", dir);
    for (int k = 1; k <= 3; k++) {
        snprintf(b, sizeof b, "%s/s-%d.json", dir, k);
        transplant_plan_times(a, b);
    }
    shard_list(files, sizeof files, dir, "s", 3);
    snprintf(args, sizeof args, "ab merge %s --json %s/m.json --markdown %s/m.md --junit %s/m.xml",
             files, dir, dir, dir);
    char *out = NULL;
    ck_assert_int_eq(loom_test_cli(args, &out), 2);
    has(out, "loom ab merge: 3 shards, 5 cases (exit 2)");
    free(out);
    /* the Markdown table goes to standard output, like `loom ab`'s */
    snprintf(args, sizeof args, "ab merge %s 2>/dev/null", files);
    ck_assert_int_eq(loom_test_cli(args, &out), 2);
    has(out, "## loom ab: ");
    free(out);
    static const char *const ext[] = {"json", "md", "xml"};
    for (int i = 0; i < 3; i++) {
        snprintf(a, sizeof a, "%s/u.%s", dir, ext[i]);
        snprintf(b, sizeof b, "%s/m.%s", dir, ext[i]);
        same_file(a, b);
    }
    snprintf(a, sizeof a, "%s/m.json", dir);
    char *json = slurp(a);
    has(json, "\"plan_time_ms\": ");
    free(json);
    rm_dir(dir);
}
END_TEST

/* A segfaulting ranker in one case (the fixture crashes on its third call
 * in a process: the 4-iteration case's B side at iteration 2). */
START_TEST(cli_merge_carries_a_crash)
{
    static const char *const suite_text =
        "{\"cases\": ["
        "{\"name\": \"one\", \"model\": \"vlm-s\", \"parallel\": \"tp=4,pp=4,mb=8\", "
        "\"iterations\": 2, \"seed\": 1},"
        "{\"name\": \"two\", \"model\": \"vlm-s\", \"parallel\": \"tp=4,pp=2,mb=8\", "
        "\"iterations\": 2, \"seed\": 2},"
        "{\"name\": \"long\", \"model\": \"vlm-s\", \"parallel\": \"tp=4,pp=4,mb=8\", "
        "\"iterations\": 4, \"seed\": 3},"
        "{\"name\": \"four\", \"model\": \"vlm-s\", \"parallel\": \"tp=2,pp=8,mb=16\", "
        "\"iterations\": 2, \"seed\": 4},"
        "{\"name\": \"five\", \"model\": \"vlm-s\", \"parallel\": \"tp=4,pp=2,mb=8\", "
        "\"iterations\": 2, \"seed\": 5}]}";
    char dir[64], run[2048], args[8192], files[4096], a[600], b[600], *out = NULL;
    make_dir(dir, sizeof dir);
    snprintf(a, sizeof a, "%s/suite.json", dir);
    spit(a, suite_text);
    snprintf(run, sizeof run, "ab %sbase.json %scrash.json --suite %s", PLANNERS, PLANNERS, a);
    snprintf(args, sizeof args, "%s --json %s/u.json --junit %s/u.xml --quiet", run, dir, dir);
    ck_assert_int_eq(loom_test_cli(args, NULL), 3);
    run_shards(run, dir, "s", 2);
    shard_list(files, sizeof files, dir, "s", 2);
    snprintf(args, sizeof args, "ab merge %s --json %s/m.json --junit %s/m.xml --quiet", files,
             dir, dir);
    ck_assert_int_eq(loom_test_cli(args, &out), 3);
    has(out, "loom ab: case long, B (" PLANNERS "crash.json): plugin fixture.crash-rank "
             "(pipeline[2]) was killed by signal 11 (SIGSEGV) at iteration 2");
    has(out, "- case `long`, B: plugin fixture.crash-rank (pipeline[2]) was killed by signal 11 "
             "(SIGSEGV) at iteration 2");
    has(out, "**Result: plugin failure** — 0 better, 4 same, 0 worse, 1 failed (exit 3)");
    free(out);
    snprintf(a, sizeof a, "%s/u.json", dir);
    snprintf(b, sizeof b, "%s/m.json", dir);
    same_file(a, b);
    char *json = slurp(b);
    has(json, "\"signal_name\": \"SIGSEGV\"");
    free(json);
    snprintf(a, sizeof a, "%s/u.xml", dir);
    snprintf(b, sizeof b, "%s/m.xml", dir);
    same_but_times(a, b);
    json = slurp(b);
    has(json, "<error type=\"signal\" message=\"B: plugin fixture.crash-rank (pipeline[2]) was "
              "killed by signal 11 (SIGSEGV) at iteration 2\">");
    free(json);
    rm_dir(dir);
}
END_TEST

/* ---- errors ------------------------------------------------------------------ */

/* Runs `loom ab merge <files>` expecting exit 2 and `frag` in the output. */
static void merge_fails(const char *files, const char *frag)
{
    char args[8192], *out = NULL;
    snprintf(args, sizeof args, "ab merge %s --quiet", files);
    ck_assert_int_eq(loom_test_cli(args, &out), 2);
    has(out, "loom ab merge: ");
    has(out, frag);
    free(out);
}

/* Replaces the first `from` after `after` in file path with `to`. */
static void edit(const char *path, const char *after, const char *from, const char *to)
{
    char *text = slurp(path);
    char *at = strstr(text, after);
    ck_assert_ptr_nonnull(at);
    char *hit = strstr(at, from);
    ck_assert_ptr_nonnull(hit);
    FILE *f = fopen(path, "wb");
    fwrite(text, 1, (size_t)(hit - text), f);
    fputs(to, f);
    fputs(hit + strlen(from), f);
    fclose(f);
    free(text);
}

START_TEST(cli_merge_errors)
{
    char dir[64], run[2048], args[8192], files[4096], *out = NULL;
    make_dir(dir, sizeof dir);
    five_case_setup(dir);
    /* a second suite: the first three cases */
    char path[600];
    snprintf(path, sizeof path, "%s/suite2.json", dir);
    spit(path, "{\"cases\": [{\"name\": \"tp4-pp4\", \"model\": \"vlm-s\", \"parallel\": "
               "\"tp=4,pp=4,mb=8\", \"iterations\": 2, \"seed\": 3}, {\"name\": \"x\", "
               "\"parallel\": \"tp=4,pp=2,mb=8\", \"iterations\": 2}]}");
    snprintf(run, sizeof run, "ab %s/a.json %s/b.json --suite %s/suite.json "
             "--memory-threshold 0.1", dir, dir, dir);
    run_shards(run, dir, "s", 2);
    run_shards(run, dir, "t", 3);
    snprintf(run, sizeof run, "ab %s/a.json %s/b.json --suite %s/suite2.json --memory-threshold 0.1", dir, dir, dir);
    run_shards(run, dir, "other-suite", 2);
    snprintf(run, sizeof run, "ab %s/a.json %s/a.json --suite %s/suite.json --memory-threshold 0.1", dir, dir, dir);
    run_shards(run, dir, "other-b", 2);
    snprintf(run, sizeof run, "ab %s/a.json %s/b.json --suite %s/suite.json --evaluations 80 "
             "--memory-threshold 0.1",
             dir, dir, dir);
    run_shards(run, dir, "other-options", 2);
    snprintf(run, sizeof run,
             "ab %s/a.json %s/b.json --suite %s/suite.json --memory-threshold 0.2", dir, dir,
             dir);
    run_shards(run, dir, "other-memory", 2);

    /* a missing shard, a shard given twice */
    snprintf(files, sizeof files, "%s/t-1.json %s/t-3.json", dir, dir);
    merge_fails(files, "missing shard 2/3: expected every shard 1..3 once, found 1/3 (");
    snprintf(files, sizeof files, "%s/s-1.json %s/s-2.json %s/s-1.json", dir, dir, dir);
    merge_fails(files, "s-1.json: shard.k: expected each shard of 2 once, found shard 1/2 again "
                       "(also in ");
    /* shards of different runs */
    snprintf(files, sizeof files, "%s/s-1.json %s/other-suite-2.json", dir, dir);
    merge_fails(files, "other-suite-2.json: suite: expected \"");
    snprintf(files, sizeof files, "%s/s-1.json %s/other-b-2.json", dir, dir);
    merge_fails(files, "other-b-2.json: b.manifest: expected \"");
    snprintf(files, sizeof files, "%s/s-1.json %s/other-options-2.json", dir, dir);
    merge_fails(files, "other-options-2.json: shard.options: expected \"\" as in ");
    merge_fails(files, "found \"--evaluations 80\"");
    snprintf(files, sizeof files, "%s/s-1.json %s/other-memory-2.json", dir, dir);
    merge_fails(files, "other-memory-2.json: shard.memory_threshold: expected 0.1 as in ");
    snprintf(files, sizeof files, "%s/s-1.json %s/t-2.json", dir, dir);
    merge_fails(files, "t-2.json: shard.n: expected 2 as in ");
    /* the same suite's text changed between the shard runs */
    snprintf(path, sizeof path, "%s/s-2.json", dir);
    snprintf(files, sizeof files, "%s/changed-2.json", dir);
    char *text = slurp(path);
    spit(files, text);
    free(text);
    edit(files, "\"digests\"", "\"suite\": \"fnv1a:", "\"suite\": \"fnv1a:0");
    snprintf(files, sizeof files, "%s/s-1.json %s/changed-2.json", dir, dir);
    merge_fails(files, "changed-2.json: shard.digests.suite: expected \"fnv1a:");

    /* not a shard report, no report, a damaged one */
    snprintf(args, sizeof args, "ab %s/a.json %s/b.json --suite %s/suite.json --json %s/w.json "
             "--quiet", dir, dir, dir, dir);
    ck_assert_int_eq(loom_test_cli(args, NULL), 2);
    snprintf(files, sizeof files, "%s/w.json", dir);
    merge_fails(files, "w.json: shard: expected the report of a sharded run (loom ab --shard K/N "
                       "--json FILE), found a report without \"shard\"");
    merge_fails("", "expected shard reports (SHARD.json...), found none");
    snprintf(files, sizeof files, "%s/none.json", dir);
    merge_fails(files, "none.json");
    snprintf(path, sizeof path, "%s/s-1.json", dir);
    edit(path, "\"runs\": [", "\"cap_violations\": 0", "\"cap_violations\": -1");
    snprintf(files, sizeof files, "%s/s-1.json %s/s-2.json", dir, dir);
    merge_fails(files, "s-1.json: runs[0].a.results[0].cap_violations: expected");

    /* bad --shard values: usage errors naming the flag */
    snprintf(run, sizeof run, "ab %s/a.json %s/b.json --suite %s/suite.json", dir, dir, dir);
    static const char *const bad[] = {"0/2", "3/2", "x"};
    for (int i = 0; i < 3; i++) {
        snprintf(args, sizeof args, "%s --shard %s", run, bad[i]);
        ck_assert_int_eq(loom_test_cli(args, &out), 2);
        char want[160];
        snprintf(want, sizeof want, "loom ab: --shard: expected K/N with integers 1 <= K <= N <= "
                 "1000 (shard K of N, e.g. 2/4), found '%s'", bad[i]);
        has(out, want);
        free(out);
    }
    snprintf(args, sizeof args, "%s --shard", run);
    ck_assert_int_eq(loom_test_cli(args, &out), 2);
    has(out, "loom ab: option '--shard' needs a value");
    free(out);
    ck_assert_int_eq(loom_test_cli("ab merge --help", &out), 0);
    has(out, "usage: loom ab merge SHARD.json...");
    free(out);
    rm_dir(dir);
}
END_TEST

static Suite *ab_shard_suite(void)
{
    Suite *s = suite_create("ab_shard");
    TCase *unit = tcase_create("unit");
    tcase_add_test(unit, shard_syntax_and_selection);
    suite_add_tcase(s, unit);
    TCase *cli = tcase_create("cli");
    tcase_set_timeout(cli, 240);
    tcase_add_test(cli, cli_merges_equal_the_whole_run);
    tcase_add_test(cli, cli_merge_is_byte_identical_with_the_same_plan_times);
    tcase_add_test(cli, cli_merge_carries_a_crash);
    tcase_add_test(cli, cli_merge_errors);
    suite_add_tcase(s, cli);
    return s;
}

int main(void)
{
    return loom_test_main(ab_shard_suite());
}
