/* cmd_ab_merge.c - `loom ab merge SHARD.json...`: rebuilds the report of a
 * whole suite from the shard reports of `loom ab --shard K/N` runs and
 * writes it with the writers of `loom ab` (same bytes as an unsharded
 * run, same exit code). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ab.h"
#include "ab_shard.h"
#include "cli.h"
#include <loom/sys/isolate.h>
#include <loom/sys/output.h>

/* Prints the usage text. */
static void usage(FILE *out)
{
    fputs("usage: loom ab merge SHARD.json... [--markdown FILE] [--json FILE] [--junit FILE]\n"
          "                     [--quiet]\n\n"
          "Merges the JSON reports of `loom ab ... --shard K/N --json SHARD.json` runs (one\n"
          "per shard 1..N, in any order) into the report of the whole suite, written as\n"
          "`loom ab` writes it: the Markdown table on stdout (and --markdown FILE), --json\n"
          "and --junit. The shards must come from one run: same manifests, suite,\n"
          "threshold, memory threshold, resamples, --timings and planning options.\n\n"
          "  --markdown FILE   also write the Markdown table to FILE\n"
          "  --json FILE       write the JSON report (the unsharded run's bytes)\n"
          "  --junit FILE      write JUnit XML (one test case per case)\n"
          "  --quiet           no summary line on stderr\n"
          "exit codes: as `loom ab` over the whole suite (0 no regression, 1 regression,\n"
          "2 bad input, 3 plugin failure); 2 when the shard reports do not fit together\n",
          out);
}

/* The Markdown writer in the shape loom_write_atomic calls. */
static int write_md(void *r, FILE *out, loom_error *err)
{
    return loom_ab_write_markdown(r, out, err);
}

/* The JSON writer in the shape loom_write_atomic calls. */
static int write_json(void *r, FILE *out, loom_error *err)
{
    return loom_ab_write_json(r, out, err);
}

/* The JUnit writer in the shape loom_write_atomic calls. */
static int write_junit(void *r, FILE *out, loom_error *err)
{
    return loom_ab_write_junit(r, out, err);
}

/* Prints the failed sides as `loom ab` does while it runs. */
static void print_failures(const loom_ab_report *r)
{
    char buf[1024];
    for (int32_t i = 0; i < r->n_cases; i++) {
        const loom_ab_case_result *c = &r->cases[i];
        const loom_failure *f[2] = {&c->a.failure, &c->b.failure};
        const char *manifest[2] = {r->manifest_a, r->manifest_b};
        for (int k = 0; k < 2; k++) {
            if (f[k]->kind == LOOM_FAIL_NONE)
                continue;
            loom_failure_describe(f[k], buf, sizeof buf);
            fprintf(stderr, "loom ab: case %s, %s (%s): %s\n", c->name, k ? "B" : "A",
                    manifest[k], buf);
        }
    }
}

enum { OPT_MARKDOWN = 0x100, OPT_JSON, OPT_JUNIT, OPT_QUIET };

static const loom_cli_option merge_options[] = {
    {"markdown", 1, OPT_MARKDOWN}, {"json", 1, OPT_JSON}, {"junit", 1, OPT_JUNIT},
    {"quiet", 0, OPT_QUIET},       {NULL, 0, 0}};

/* What `loom ab merge` was asked for. */
typedef struct merge_cli {
    const char *paths[3]; /* markdown, json, junit */
    int quiet, n_files;
    const char **files;
} merge_cli;

/* One option or shard report of `loom ab merge` (loom_cli_spec.handle). */
static int merge_option(void *ctx, int key, const char *name, const char *v)
{
    merge_cli *o = ctx;
    (void)name;
    switch (key) {
    case LOOM_CLI_OPERAND: o->files[o->n_files++] = v; return 0;
    case OPT_MARKDOWN: o->paths[0] = v; return 0;
    case OPT_JSON: o->paths[1] = v; return 0;
    case OPT_JUNIT: o->paths[2] = v; return 0;
    case OPT_QUIET: o->quiet = 1; return 0;
    default: return -1;
    }
}

int loom_cmd_ab_merge(int argc, char **argv)
{
    merge_cli o = {{NULL, NULL, NULL}, 0, 0, NULL};
    o.files = calloc((size_t)(argc > 0 ? argc : 1), sizeof *o.files);
    if (!o.files) {
        fprintf(stderr, "loom ab merge: out of memory\n");
        return LOOM_EXIT_USAGE;
    }
    loom_cli_spec spec = {"ab merge", merge_options, NULL, NULL, merge_option, &o};
    int parsed = loom_cli_parse(&spec, argc, argv);
    if (parsed != 0) {
        usage(parsed > 0 ? loom_cli_out() : stderr);
        free(o.files);
        return parsed > 0 ? LOOM_EXIT_OK : LOOM_EXIT_USAGE;
    }
    const char **files = o.files, **paths = o.paths;
    int quiet = o.quiet, n_files = o.n_files;
    if (n_files < 1) {
        fprintf(stderr, "loom ab merge: expected shard reports (SHARD.json...), found none\n");
        usage(stderr);
        free(files);
        return LOOM_EXIT_USAGE;
    }
    loom_ab_merge *m = NULL;
    loom_error err = {0};
    int rc = loom_ab_merge_load(files, n_files, &m, &err);
    free(files);
    if (rc != LOOM_OK) {
        fprintf(stderr, "loom ab merge: %s\n", err.message);
        return LOOM_EXIT_USAGE;
    }
    const loom_ab_report *r = loom_ab_merge_report(m);
    print_failures(r);
    int code = LOOM_EXIT_OK;
    if (loom_ab_write_markdown(r, loom_cli_out(), &err) != LOOM_OK) {
        fprintf(stderr, "loom ab merge: %s\n", err.message);
        code = LOOM_EXIT_USAGE;
    }
    fflush(loom_cli_out());
    int (*writers[3])(void *, FILE *, loom_error *) = {write_md, write_json, write_junit};
    for (int k = 0; k < 3 && code == LOOM_EXIT_OK; k++) {
        if (paths[k] && loom_write_atomic(paths[k], writers[k], (void *)r, &err) != LOOM_OK) {
            fprintf(stderr, "loom ab merge: %s\n", err.message);
            code = LOOM_EXIT_USAGE;
        }
    }
    if (code == LOOM_EXIT_OK)
        code = loom_ab_exit_code(r);
    if (!quiet)
        fprintf(stderr, "loom ab merge: %d shard%s, %d case%s (exit %d)\n", n_files,
                n_files == 1 ? "" : "s", r->n_cases, r->n_cases == 1 ? "" : "s", code);
    loom_ab_merge_free(m);
    return code;
}
