/* cmd_workload.c - `loom workload generate`: writes a seeded synthetic
 * workload as JSON Lines to stdout or, atomically, to a file. */
#include <errno.h>
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
            "                              [--seed S] [--out FILE]\n"
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

/* Returns the option's value (from "--opt=V" or the next argument) or NULL. */
static const char *option_value(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0)
        return NULL;
    if (argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (argv[*i][n] != 0)
        return NULL;
    if (*i + 1 >= argc)
        return "";
    return argv[++*i];
}

/* `loom workload generate ...`. */
static int cmd_generate(int argc, char **argv)
{
    const char *family = NULL, *out = NULL;
    uint64_t iterations = 0, microbatches = 16, seed = 1;
    int have_iterations = 0;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return LOOM_EXIT_OK;
        } else if ((v = option_value(argc, argv, &i, "--family"))) {
            family = v;
        } else if ((v = option_value(argc, argv, &i, "--out"))) {
            if (!*v) {
                fprintf(stderr, "loom workload generate: --out: expected a file name, "
                        "found nothing\n");
                return LOOM_EXIT_USAGE;
            }
            out = v;
        } else if ((v = option_value(argc, argv, &i, "--iterations"))) {
            if (!parse_u64(v, &iterations) || iterations < 1 || iterations > LOOM_MAX_ITERATIONS) {
                fprintf(stderr, "loom workload generate: --iterations: expected an integer in "
                        "[1, %d], found \"%s\"\n", LOOM_MAX_ITERATIONS, v);
                return LOOM_EXIT_USAGE;
            }
            have_iterations = 1;
        } else if ((v = option_value(argc, argv, &i, "--microbatches"))) {
            if (!parse_u64(v, &microbatches) || microbatches < 1 ||
                microbatches > LOOM_MAX_PARALLEL_DEGREE) {
                fprintf(stderr, "loom workload generate: --microbatches: expected an integer in "
                        "[1, %d], found \"%s\"\n", LOOM_MAX_PARALLEL_DEGREE, v);
                return LOOM_EXIT_USAGE;
            }
        } else if ((v = option_value(argc, argv, &i, "--seed"))) {
            if (!parse_u64(v, &seed)) {
                fprintf(stderr, "loom workload generate: --seed: expected an unsigned 64-bit "
                        "integer, found \"%s\"\n", v);
                return LOOM_EXIT_USAGE;
            }
        } else {
            fprintf(stderr, "loom workload generate: unknown argument \"%s\"\n", argv[i]);
            usage(stderr);
            return LOOM_EXIT_USAGE;
        }
    }
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
    int rc = loom_workload_generate(family, (int32_t)iterations, (int32_t)microbatches, seed,
                                    &w, &err);
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
