/* cmd_workload.c - `loom workload generate`: writes a seeded synthetic
 * workload as JSON Lines to stdout or, atomically, to a file. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include <loom/sys/util.h>
#include <loom/sys/output.h>
#include <loom/sys/problem.h>

/* Prints the command's help text. */
static void usage(FILE *out)
{
    const char *const *fam = loom_workload_family_names();
    fprintf(out,
            "usage: loom workload generate --family F [--iterations N] [--microbatches M]\n"
            "                              [--seed S] [--sequence-tokens N]\n"
            "                              [--tokens-per-image N] [--packing-window N]\n"
            "                              [--out FILE]\n"
            "\n"
            "Writes a synthetic workload as JSON Lines (one iteration per line; see\n"
            "docs/formats.md). The same arguments always give the same bytes.\n"
            "\n"
            "  --family F        dataset family (required), one of:\n");
    for (int i = 0; fam[i]; i++)
        fprintf(out, "                      %s\n", fam[i]);
    fprintf(out,
            "  --iterations N    iterations (default 40 for rise-and-fall, else 8)\n"
            "  --microbatches M  packed microbatches per iteration (default 16)\n"
            "  --seed S          unsigned 64-bit seed (default 1)\n"
            "  --sequence-tokens N\n"
            "                    tokens per packed microbatch, 2048..1048576 (default 8192)\n"
            "  --tokens-per-image N\n"
            "                    sequence tokens one image takes, 1..N/4 (default 169)\n"
            "  --packing-window N\n"
            "                    a microbatch takes the first of N samples drawn ahead that\n"
            "                    fits (first-fit), 1..4096; 1 (default): the next only\n"
            "  --out FILE        write FILE atomically (temporary file + rename); \"-\" or\n"
            "                    no --out writes to stdout\n"
            "  -h, --help        show this help\n");
}

/* Parses a decimal unsigned integer (no sign, no junk) into *out. */
static int parse_u64(const char *s, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return 0;
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return 0;
    *out = (uint64_t)v;
    return 1;
}

/* loom_write_atomic callback: writes the workload `ctx` as JSON Lines. */
static int write_workload(void *ctx, FILE *out, loom_error *err)
{
    return loom_workload_write(ctx, out, err);
}

enum {
    OPT_FAMILY = 0x100,
    OPT_OUT,
    OPT_ITERATIONS,
    OPT_MICROBATCHES,
    OPT_SEED,
    OPT_SEQUENCE_TOKENS,
    OPT_TOKENS_PER_IMAGE,
    OPT_PACKING_WINDOW
};

static const loom_cli_option generate_options[] = {
    {"family", 1, OPT_FAMILY},
    {"out", 1, OPT_OUT},
    {"iterations", 1, OPT_ITERATIONS},
    {"microbatches", 1, OPT_MICROBATCHES},
    {"seed", 1, OPT_SEED},
    {"sequence-tokens", 1, OPT_SEQUENCE_TOKENS},
    {"tokens-per-image", 1, OPT_TOKENS_PER_IMAGE},
    {"packing-window", 1, OPT_PACKING_WINDOW},
    {NULL, 0, 0}};

/* What `loom workload generate` was asked for. */
typedef struct generate_cli {
    const char *family, *out;
    uint64_t iterations, microbatches, seed;
    int have_iterations;
    loom_workload_packing packing;
} generate_cli;

/* One option of `loom workload generate` (loom_cli_spec.handle). */
static int generate_option(void *ctx, int key, const char *name, const char *v)
{
    generate_cli *o = ctx;
    switch (key) {
    case OPT_FAMILY: o->family = v; return 0;
    case OPT_OUT: o->out = v; return 0;
    case OPT_ITERATIONS:
        if (!parse_u64(v, &o->iterations) || o->iterations < 1 ||
            o->iterations > LOOM_MAX_ITERATIONS) {
            loom_cli_error("workload generate", "--iterations: expected an integer in [1, %d], "
                           "found '%s'", LOOM_MAX_ITERATIONS, v);
            return -1;
        }
        o->have_iterations = 1;
        return 0;
    case OPT_MICROBATCHES:
        if (!parse_u64(v, &o->microbatches) || o->microbatches < 1 ||
            o->microbatches > LOOM_MAX_PARALLEL_DEGREE) {
            loom_cli_error("workload generate", "--microbatches: expected an integer in "
                           "[1, %d], found '%s'", LOOM_MAX_PARALLEL_DEGREE, v);
            return -1;
        }
        return 0;
    case OPT_SEED:
        if (!parse_u64(v, &o->seed)) {
            loom_cli_error("workload generate", "--seed: expected an unsigned 64-bit integer, "
                           "found '%s'", v);
            return -1;
        }
        return 0;
    case OPT_SEQUENCE_TOKENS:
    case OPT_TOKENS_PER_IMAGE: {
        /* ranges are checked by the generator, which knows both values */
        uint64_t n = 0;
        if (!parse_u64(v, &n) || n > INT64_MAX) {
            loom_cli_error("workload generate", "--%s: expected a positive integer, found '%s'",
                           name, v);
            return -1;
        }
        if (key == OPT_SEQUENCE_TOKENS)
            o->packing.sequence_tokens = (int64_t)n;
        else
            o->packing.tokens_per_image = (int64_t)n;
        return 0;
    }
    case OPT_PACKING_WINDOW: {
        uint64_t n = 0;
        if (!parse_u64(v, &n) || n < 1 || n > LOOM_MAX_PACKING_WINDOW) {
            loom_cli_error("workload generate", "--packing-window: expected an integer in "
                           "[1, %d], found '%s'", LOOM_MAX_PACKING_WINDOW, v);
            return -1;
        }
        o->packing.window = (int32_t)n;
        return 0;
    }
    case LOOM_CLI_OPERAND:
        loom_cli_error("workload generate", "unexpected argument '%s'", v);
        return -1;
    default:
        return -1;
    }
}

/* `loom workload generate ...`. */
static int cmd_generate(int argc, char **argv)
{
    generate_cli o = {NULL,
                      NULL,
                      0,
                      16,
                      1,
                      0,
                      {sizeof(loom_workload_packing), LOOM_DEFAULT_SEQUENCE_TOKENS,
                       LOOM_DEFAULT_TOKENS_PER_IMAGE, 1, 0}};
    loom_cli_spec spec = {"workload generate", generate_options, NULL, NULL, generate_option, &o};
    int parsed = loom_cli_parse(&spec, argc, argv);
    if (parsed != 0) {
        usage(parsed > 0 ? stdout : stderr);
        return parsed > 0 ? LOOM_EXIT_OK : LOOM_EXIT_USAGE;
    }
    const char *family = o.family, *out = o.out;
    uint64_t iterations = o.iterations, microbatches = o.microbatches, seed = o.seed;
    int have_iterations = o.have_iterations;
    if (!family || !*family) {
        fprintf(stderr, "loom workload generate: --family is required\n");
        usage(stderr);
        return LOOM_EXIT_USAGE;
    }
    if (!have_iterations)
        iterations = strcmp(family, "rise-and-fall") == 0 ? 40 : 8;
    loom_error err;
    memset(&err, 0, sizeof err);
    loom_workload *w = NULL;
    int rc = loom_workload_generate_packed(family, (int32_t)iterations, (int32_t)microbatches,
                                           seed, &o.packing, &w, &err);
    if (!rc) {
        if (out) {
            rc = loom_write_atomic(out, write_workload, w, &err);
        } else {
            rc = loom_workload_write(w, stdout, &err);
            if (!rc && fflush(stdout) != 0)
                rc = loom_set_error(&err, LOOM_EIO, "stdout: write failed: %s", strerror(errno));
        }
    }
    loom_workload_free(w);
    if (rc) {
        fprintf(stderr, "loom workload generate: %s\n", err.message);
        return loom_cli_exit_for_status(rc);
    }
    return LOOM_EXIT_OK;
}

int loom_cmd_workload(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return LOOM_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return LOOM_EXIT_OK;
    }
    if (!strcmp(argv[1], "generate"))
        return cmd_generate(argc - 1, argv + 1);
    fprintf(stderr, "loom workload: unknown subcommand \"%s\"\n", argv[1]);
    usage(stderr);
    return LOOM_EXIT_USAGE;
}
