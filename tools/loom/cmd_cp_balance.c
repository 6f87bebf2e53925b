/* cmd_cp_balance.c - `loom cp-balance`: Cornstarch's token-workload-balanced
 * context parallelism (dissertation §3.3.2, Algorithm 1) for given block
 * workloads or an attention mask described by token segments; compares
 * longest-first assignment with the zigzag split. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include <loom/algorithms/cp_balance.h>

/* Prints the command's help text. */
static void usage(FILE *out)
{
    fprintf(out,
            "usage: loom cp-balance --gpus G (--workloads LIST | --causal TOKENS |\n"
            "                       --segments SPEC) [--block N] [--order sorted|unsorted]\n"
            "                       [--json]\n"
            "\n"
            "Assigns token blocks to the G GPUs of a context-parallel group\n"
            "(dissertation 3.3.2, Algorithm 1): a block's workload is the number of\n"
            "key blocks its attention rows touch; blocks go to the least-loaded GPU,\n"
            "longest first (sorted, the default) or in sequence order (unsorted, the\n"
            "listing as printed). Blocks are numbered from 0.\n"
            "\n"
            "  --gpus G            GPUs of the CP group\n"
            "  --workloads LIST    block workloads, e.g. 1,2,2,4,5,2,2,8\n"
            "  --causal TOKENS     one causal text sequence of TOKENS tokens\n"
            "  --segments SPEC     a multimodal mask: KIND:TOKENS,... with KIND text\n"
            "                      (causal, sees every earlier token of its document)\n"
            "                      or enc1..enc62 / image / audio / video (attends its\n"
            "                      own modality both ways); '/' starts a new document\n"
            "  --block N           tokens per block (default 128)\n"
            "  --order O           sorted (default) or unsorted\n"
            "  --json              print the result as JSON\n"
            "  -h, --help          show this help\n");
}

/* Parses a decimal integer in [lo, hi]; 0 on junk. */
static int parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    if (!s || !*s)
        return 0;
    errno = 0;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return 0;
    *out = v;
    return 1;
}

/* Prints the assignment for people or as JSON (blocks listed per GPU in
 * O(blocks + GPUs): `next` chains each GPU's blocks in order). */
static int report(const int64_t *w, int32_t n, int32_t gpus, int sorted,
                  const int32_t *assign, const int64_t *loads, int64_t zz,
                  int json)
{
    int32_t *first = malloc((size_t)gpus * sizeof *first);
    int32_t *next = malloc(((size_t)n + 1) * sizeof *next);
    if (!first || !next) {
        free(first);
        free(next);
        return LOOM_ENOMEM;
    }
    for (int32_t g = 0; g < gpus; g++)
        first[g] = -1;
    for (int32_t b = n - 1; b >= 0; b--) {
        next[b] = first[assign[b]];
        first[assign[b]] = b;
    }
    int64_t mk = loom_cp_makespan(loads, gpus), lb = loom_cp_lower_bound(w, n, gpus);
    if (json) {
        printf("{\"blocks\": %d, \"order\": \"%s\", \"workloads\": [", n,
               sorted ? "sorted" : "unsorted");
        for (int32_t b = 0; b < n; b++)
            printf("%s%lld", b ? ", " : "", (long long)w[b]);
        printf("], \"gpus\": [");
        for (int32_t g = 0; g < gpus; g++) {
            printf("%s{\"load\": %lld, \"blocks\": [", g ? ", " : "", (long long)loads[g]);
            for (int32_t b = first[g]; b >= 0; b = next[b])
                printf("%s%d", b == first[g] ? "" : ", ", b);
            printf("]}");
        }
        printf("], \"makespan\": %lld, \"zigzag_makespan\": %lld, \"lower_bound\": %lld}\n",
               (long long)mk, (long long)zz, (long long)lb);
        free(first);
        free(next);
        return LOOM_OK;
    }
    printf("%d block(s) over %d GPU(s), %s: makespan %lld tiles (lower bound %lld, "
           "zigzag %lld)\n", n, gpus, sorted ? "longest first" : "in sequence order",
           (long long)mk, (long long)lb, (long long)zz);
    for (int32_t g = 0; g < gpus; g++) {
        printf("  GPU %d: load %lld, blocks", g, (long long)loads[g]);
        for (int32_t b = first[g]; b >= 0; b = next[b])
            printf(" %d", b);
        printf("\n");
    }
    free(first);
    free(next);
    return LOOM_OK;
}

enum { OPT_GPUS = 0x100, OPT_BLOCK, OPT_CAUSAL, OPT_WORKLOADS, OPT_SEGMENTS, OPT_ORDER,
       OPT_JSON };

static const loom_cli_option cp_options[] = {
    {"gpus", 1, OPT_GPUS},         {"block", 1, OPT_BLOCK},       {"causal", 1, OPT_CAUSAL},
    {"workloads", 1, OPT_WORKLOADS}, {"segments", 1, OPT_SEGMENTS}, {"order", 1, OPT_ORDER},
    {"json", 0, OPT_JSON},         {NULL, 0, 0}};

/* What `loom cp-balance` was asked for. */
typedef struct cp_cli {
    const char *list, *segs, *order;
    int64_t gpus, block, causal;
    int json;
} cp_cli;

/* One option of `loom cp-balance` (loom_cli_spec.handle). */
static int cp_option(void *ctx, int key, const char *name, const char *v)
{
    cp_cli *o = ctx;
    (void)name;
    switch (key) {
    case OPT_GPUS:
        if (!parse_i64(v, 1, LOOM_CP_MAX_GPUS, &o->gpus)) {
            loom_cli_error("cp-balance", "--gpus: expected an integer in [1, %d], found '%s'",
                           LOOM_CP_MAX_GPUS, v);
            return -1;
        }
        return 0;
    case OPT_BLOCK:
        if (!parse_i64(v, 1, 1 << 20, &o->block)) {
            loom_cli_error("cp-balance", "--block: expected an integer in [1, 1048576], "
                           "found '%s'", v);
            return -1;
        }
        return 0;
    case OPT_CAUSAL:
        if (!parse_i64(v, 1, LOOM_CP_MAX_TOKENS, &o->causal)) {
            loom_cli_error("cp-balance", "--causal: expected a token count >= 1, found '%s'", v);
            return -1;
        }
        return 0;
    case OPT_WORKLOADS: o->list = v; return 0;
    case OPT_SEGMENTS: o->segs = v; return 0;
    case OPT_ORDER: o->order = v; return 0;
    case OPT_JSON: o->json = 1; return 0;
    case LOOM_CLI_OPERAND:
        loom_cli_error("cp-balance", "unexpected argument '%s'", v);
        return -1;
    default:
        return -1;
    }
}

int loom_cmd_cp_balance(int argc, char **argv)
{
    static const char *const conflicts[][2] = {
        {"workloads", "causal"}, {"workloads", "segments"}, {"causal", "segments"}, {NULL, NULL}};
    cp_cli o = {NULL, NULL, "sorted", 0, 128, 0, 0};
    loom_cli_spec spec = {"cp-balance", cp_options, NULL, conflicts, cp_option, &o};
    int parsed = loom_cli_parse(&spec, argc, argv);
    if (parsed != 0) {
        usage(parsed > 0 ? stdout : stderr);
        return parsed > 0 ? LOOM_EXIT_OK : LOOM_EXIT_USAGE;
    }
    const char *list = o.list, *segs = o.segs, *order = o.order;
    int64_t gpus = o.gpus, block = o.block, causal = o.causal;
    int json = o.json;
    int given = (list != NULL) + (segs != NULL) + (causal > 0);
    if (gpus < 1 || given != 1) {
        fprintf(stderr, "loom cp-balance: --gpus and exactly one of --workloads, "
                        "--causal, --segments are required\n");
        usage(stderr);
        return LOOM_EXIT_USAGE;
    }
    if (strcmp(order, "sorted") && strcmp(order, "unsorted")) {
        fprintf(stderr, "loom cp-balance: --order: expected sorted or unsorted, "
                        "found \"%s\"\n", order);
        return LOOM_EXIT_USAGE;
    }
    int64_t *w = NULL;
    int32_t n = 0;
    loom_error err = {0, ""};
    int rc = LOOM_OK;
    if (list) {
        rc = loom_cp_parse_workloads(list, &w, &n, &err);
        if (rc != LOOM_OK) {
            fprintf(stderr, "loom cp-balance: %s\n", err.message);
            return loom_cli_exit_for_status(rc);
        }
    } else {
        loom_cp_run runs[LOOM_CP_MAX_SEGMENTS];
        int32_t nr = 1;
        if (segs) {
            nr = loom_cp_parse_segments(segs, runs, LOOM_CP_MAX_SEGMENTS, &err);
            if (nr < 0) {
                fprintf(stderr, "loom cp-balance: %s\n", err.message);
                return LOOM_EXIT_USAGE;
            }
        } else {
            runs[0] = (loom_cp_run){causal, LOOM_CP_TEXT_BIT | LOOM_CP_CAUSAL_BIT, 0, 0};
        }
        int64_t tokens = 0;
        for (int32_t r = 0; r < nr; r++)
            tokens += runs[r].tokens;
        int64_t nb = loom_cp_block_count(tokens, (int32_t)block);
        w = nb > 0 && nb <= LOOM_CP_MAX_BLOCKS ? malloc((size_t)nb * sizeof *w) : NULL;
        if (!w) {
            fprintf(stderr, "loom cp-balance: %lld tokens in blocks of %lld: "
                            "expected 1 to %d blocks\n", (long long)tokens,
                    (long long)block, LOOM_CP_MAX_BLOCKS);
            return LOOM_EXIT_USAGE;
        }
        n = (int32_t)nb;
        rc = loom_cp_block_workloads(runs, nr, (int32_t)block, w, &err);
    }
    int32_t *assign = malloc(((size_t)n + 1) * sizeof *assign);
    int64_t *loads = malloc((size_t)gpus * sizeof *loads);
    int64_t zz = 0;
    if (rc == LOOM_OK && (!w || !assign || !loads))
        rc = LOOM_ENOMEM;
    if (rc == LOOM_OK)
        rc = loom_cp_zigzag(w, n, (int32_t)gpus, assign, loads, &err);
    if (rc == LOOM_OK) {
        zz = loom_cp_makespan(loads, (int32_t)gpus);
        rc = loom_cp_lpt(w, n, (int32_t)gpus, !strcmp(order, "sorted"), assign,
                         loads, &err);
    }
    if (rc == LOOM_OK)
        rc = report(w, n, (int32_t)gpus, !strcmp(order, "sorted"), assign, loads, zz, json);
    if (rc != LOOM_OK)
        fprintf(stderr, "loom cp-balance: %s\n",
                rc == LOOM_ENOMEM ? "out of memory" : err.message);
    free(w);
    free(assign);
    free(loads);
    return loom_cli_exit_for_status(rc);
}
