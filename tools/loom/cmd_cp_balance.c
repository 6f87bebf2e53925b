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

/* Encoder bit of a segment kind, 0 for text, -1 when unknown. */
static int kind_bit(const char *k, size_t n)
{
    if (n == 4 && !strncmp(k, "text", 4))
        return 0;
    if (n == 5 && !strncmp(k, "image", 5))
        return 1;
    if (n == 5 && !strncmp(k, "audio", 5))
        return 2;
    if (n == 5 && !strncmp(k, "video", 5))
        return 3;
    if (n > 3 && !strncmp(k, "enc", 3)) {
        int v = 0;
        for (size_t i = 3; i < n; i++) {
            if (k[i] < '0' || k[i] > '9')
                return -1;
            v = v * 10 + (k[i] - '0');
        }
        return v >= 1 && v <= 62 ? v : -1;
    }
    return -1;
}

/* Parses --segments into runs; every text run sees all encoders of its
 * document. Returns the run count or -1 (message printed). */
static int parse_segments(const char *spec, loom_cp_run *runs, int cap)
{
    int n = 0, doc = 0, doc_first = 0;
    const char *s = spec;
    while (*s) {
        const char *colon = strchr(s, ':');
        size_t klen = colon ? (size_t)(colon - s) : 0;
        int bit = colon ? kind_bit(s, klen) : -1;
        char *end = NULL;
        long long t = colon ? strtoll(colon + 1, &end, 10) : -1;
        if (bit < 0 || t < 1 || t > LOOM_CP_MAX_TOKENS || n == cap ||
            (end && *end && *end != ',' && *end != '/')) {
            fprintf(stderr, "loom cp-balance: --segments: expected KIND:TOKENS "
                            "(KIND text, image, audio, video or enc1..enc62), "
                            "found \"%s\"\n", s);
            return -1;
        }
        runs[n].tokens = t;
        runs[n].bits = bit ? LOOM_CP_ENCODER_BIT(bit) : LOOM_CP_CAUSAL_BIT;
        runs[n].doc = doc;
        runs[n].reserved = 0;
        n++;
        s = end;
        if (*s == '/' || !*s) {
            /* text runs of the document see every modality in it */
            uint64_t all = LOOM_CP_TEXT_BIT;
            for (int i = doc_first; i < n; i++)
                if (!(runs[i].bits & LOOM_CP_CAUSAL_BIT))
                    all |= runs[i].bits;
            for (int i = doc_first; i < n; i++)
                if (runs[i].bits & LOOM_CP_CAUSAL_BIT)
                    runs[i].bits = all | LOOM_CP_CAUSAL_BIT;
            doc++;
            doc_first = n;
        }
        if (*s)
            s++;
    }
    return n;
}

/* Prints the assignment for people or as JSON. */
static void report(const int64_t *w, int32_t n, int32_t gpus, int sorted,
                   const int32_t *assign, const int64_t *loads, int64_t zz,
                   int json)
{
    int64_t mk = loom_cp_makespan(loads, gpus), lb = loom_cp_lower_bound(w, n, gpus);
    if (json) {
        printf("{\"blocks\": %d, \"order\": \"%s\", \"workloads\": [", n,
               sorted ? "sorted" : "unsorted");
        for (int32_t b = 0; b < n; b++)
            printf("%s%lld", b ? ", " : "", (long long)w[b]);
        printf("], \"gpus\": [");
        for (int32_t g = 0; g < gpus; g++) {
            printf("%s{\"load\": %lld, \"blocks\": [", g ? ", " : "", (long long)loads[g]);
            int first = 1;
            for (int32_t b = 0; b < n; b++)
                if (assign[b] == g) {
                    printf("%s%d", first ? "" : ", ", b);
                    first = 0;
                }
            printf("]}");
        }
        printf("], \"makespan\": %lld, \"zigzag_makespan\": %lld, \"lower_bound\": %lld}\n",
               (long long)mk, (long long)zz, (long long)lb);
        return;
    }
    printf("%d block(s) over %d GPU(s), %s: makespan %lld tiles (lower bound %lld, "
           "zigzag %lld)\n", n, gpus, sorted ? "longest first" : "in sequence order",
           (long long)mk, (long long)lb, (long long)zz);
    for (int32_t g = 0; g < gpus; g++) {
        printf("  GPU %d: load %lld, blocks", g, (long long)loads[g]);
        for (int32_t b = 0; b < n; b++)
            if (assign[b] == g)
                printf(" %d", b);
        printf("\n");
    }
}

int loom_cmd_cp_balance(int argc, char **argv)
{
    const char *list = NULL, *segs = NULL, *order = "sorted";
    int64_t gpus = 0, block = 128, causal = 0;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return LOOM_EXIT_OK;
        } else if ((v = loom_cli_opt_value(argc, argv, &i, "--gpus"))) {
            if (!parse_i64(v, 1, LOOM_CP_MAX_GPUS, &gpus)) {
                fprintf(stderr, "loom cp-balance: --gpus: expected an integer in "
                                "[1, %d], found \"%s\"\n", LOOM_CP_MAX_GPUS, v);
                return LOOM_EXIT_USAGE;
            }
        } else if ((v = loom_cli_opt_value(argc, argv, &i, "--block"))) {
            if (!parse_i64(v, 1, 1 << 20, &block)) {
                fprintf(stderr, "loom cp-balance: --block: expected an integer in "
                                "[1, 1048576], found \"%s\"\n", v);
                return LOOM_EXIT_USAGE;
            }
        } else if ((v = loom_cli_opt_value(argc, argv, &i, "--causal"))) {
            if (!parse_i64(v, 1, LOOM_CP_MAX_TOKENS, &causal)) {
                fprintf(stderr, "loom cp-balance: --causal: expected a token "
                                "count >= 1, found \"%s\"\n", v);
                return LOOM_EXIT_USAGE;
            }
        } else if ((v = loom_cli_opt_value(argc, argv, &i, "--workloads"))) {
            list = v;
        } else if ((v = loom_cli_opt_value(argc, argv, &i, "--segments"))) {
            segs = v;
        } else if ((v = loom_cli_opt_value(argc, argv, &i, "--order"))) {
            order = v;
        } else if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else {
            fprintf(stderr, "loom cp-balance: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return LOOM_EXIT_USAGE;
        }
    }
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
        w = malloc((strlen(list) / 2 + 2) * sizeof *w);
        for (const char *s = list; w && *s;) {
            char *end = NULL;
            errno = 0;
            long long v = strtoll(s, &end, 10);
            if (end == s || errno || v < 0 || (*end && *end != ',')) {
                fprintf(stderr, "loom cp-balance: --workloads: expected "
                                "comma-separated integers >= 0, found \"%s\"\n", s);
                free(w);
                return LOOM_EXIT_USAGE;
            }
            w[n++] = v;
            s = *end ? end + 1 : end;
        }
    } else {
        loom_cp_run runs[1024];
        int nr = 1;
        if (segs) {
            nr = parse_segments(segs, runs, 1024);
            if (nr < 0)
                return LOOM_EXIT_USAGE;
        } else {
            runs[0] = (loom_cp_run){causal, LOOM_CP_TEXT_BIT | LOOM_CP_CAUSAL_BIT, 0, 0};
        }
        int64_t tokens = 0;
        for (int r = 0; r < nr; r++)
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
        report(w, n, (int32_t)gpus, !strcmp(order, "sorted"), assign, loads, zz, json);
    else
        fprintf(stderr, "loom cp-balance: %s\n",
                rc == LOOM_ENOMEM ? "out of memory" : err.message);
    free(w);
    free(assign);
    free(loads);
    return loom_cli_exit_for_status(rc);
}
