/* cmd_tune_merge.c - `loom tune merge SHARD.json... --json OUT`: puts the
 * shard files of `loom tune --shard K/N` runs together and writes the
 * report of the whole search, the bytes the unsharded run prints. Each
 * shard simulated at least what the whole run simulates of its slice
 * (its own best is never better than the whole run's), so the merge walks
 * the whole space in bound order again, reading simulations from the
 * shards. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include <loom/sys/output.h>
#include <loom/sys/json.h>
#include "tune.h"

/* Prints the usage text. */
static void usage(FILE *out)
{
    fputs("usage: loom tune merge SHARD.json... --json OUT [--quiet]\n\n"
          "Merges the shard files of `loom tune ... --shard K/N --json SHARD.json` runs (one\n"
          "per shard 1..N, in any order) into the JSON report of the whole search: the bytes\n"
          "`loom tune ... --json` prints without --shard. The shards must come from one\n"
          "search: same model, cluster, GPUs, batch, manifests and planning options.\n\n"
          "  --json OUT   write the merged report to OUT (\"-\": standard output)\n"
          "  --quiet      no summary line on stderr\n"
          "exit codes: 0 ok, 2 shard files that do not fit together or cannot be read,\n"
          "or a search where nothing fits\n", out);
}

enum { OPT_JSON = 0x100, OPT_QUIET };

static const loom_cli_option merge_options[] = {
    {"json", 1, OPT_JSON}, {"quiet", 0, OPT_QUIET}, {NULL, 0, 0}};

/* What `loom tune merge` was asked for. */
typedef struct merge_cli {
    const char *json;
    int quiet, n_files;
    const char **files;
} merge_cli;

/* One option or shard file (loom_cli_spec.handle). */
static int merge_option(void *ctx, int key, const char *name, const char *v)
{
    merge_cli *o = ctx;
    (void)name;
    switch (key) {
    case LOOM_CLI_OPERAND: o->files[o->n_files++] = v; return 0;
    case OPT_JSON: o->json = v; return 0;
    case OPT_QUIET: o->quiet = 1; return 0;
    default: return -1;
    }
}

/* Walk callback of a merge: a configuration the whole run would simulate
 * must have been simulated by its shard. */
static int lookup(void *user, loom_tune_config *c)
{
    (void)user;
    if (c->simulated)
        return LOOM_OK;
    fprintf(stderr, "loom tune merge: configuration %d was not simulated by its shard\n",
            c->index);
    return LOOM_EINVAL;
}

/* The merged report in the shape loom_write_atomic calls. */
typedef struct merged {
    loom_tune_search *t;
    loom_tune_walk *w;
} merged;

/* Writes the merged report. */
static int write_merged(void *ctx, FILE *out, loom_error *err)
{
    merged *m = ctx;
    if (loom_tune_write_json(m->t, m->w, out) != LOOM_OK)
        return loom_set_error(err, LOOM_EIO, "cannot write the report");
    return LOOM_OK;
}

/* Frees what a merged search owns beyond loom_tune_search_clear. */
static void free_merged(loom_tune_search *t)
{
    free((char *)t->model);
    free((char *)t->cluster);
    free((char *)t->runtime);
    loom_tune_search_clear(t);
}

int loom_cmd_tune_merge(int argc, char **argv)
{
    merge_cli o = {NULL, 0, 0, NULL};
    o.files = calloc((size_t)(argc > 0 ? argc : 1), sizeof *o.files);
    if (!o.files) {
        fprintf(stderr, "loom tune merge: out of memory\n");
        return LOOM_EXIT_USAGE;
    }
    loom_cli_spec spec = {"tune merge", merge_options, NULL, NULL, merge_option, &o};
    int parsed = loom_cli_parse(&spec, argc, argv);
    if (parsed != 0 || o.n_files < 1 || !o.json) {
        if (parsed == 0)
            fprintf(stderr, "loom tune merge: expected shard files and --json OUT\n");
        usage(parsed > 0 ? loom_cli_out() : stderr);
        free(o.files);
        return parsed > 0 ? LOOM_EXIT_OK : LOOM_EXIT_USAGE;
    }
    loom_tune_search t;
    memset(&t, 0, sizeof t);
    loom_error err = {0};
    int rc = loom_tune_read_shards(o.files, o.n_files, &t, &err);
    free(o.files);
    if (rc != LOOM_OK) {
        fprintf(stderr, "loom tune merge: %s\n", err.message);
        free_merged(&t);
        return LOOM_EXIT_USAGE;
    }
    loom_tune_walk w;
    int code = LOOM_EXIT_OK;
    if (loom_tune_walk_run(&t, lookup, NULL, &w) != LOOM_OK) {
        free_merged(&t);
        return LOOM_EXIT_USAGE;
    }
    merged m = {&t, &w};
    if (!strcmp(o.json, "-") ? write_merged(&m, loom_cli_out(), &err) != LOOM_OK
                             : loom_write_atomic(o.json, write_merged, &m, &err) != LOOM_OK) {
        fprintf(stderr, "loom tune merge: %s\n", err.message);
        code = LOOM_EXIT_USAGE;
    } else if (w.n_ranked == 0) {
        fprintf(stderr, "loom tune merge: nothing fits (the report lists why)\n");
        code = LOOM_EXIT_USAGE;
    }
    if (!o.quiet)
        fprintf(stderr, "loom tune merge: %d configurations, %d simulated, %d pruned\n",
                w.considered, w.simulated, w.pruned);
    loom_tune_walk_clear(&w);
    free_merged(&t);
    return loom_cli_io_check(code);
}
