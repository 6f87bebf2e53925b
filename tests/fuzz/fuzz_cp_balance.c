/* fuzz_cp_balance.c - libFuzzer harness for the `loom cp-balance` inputs
 * (algorithms/cornstarch: the --segments and --workloads parsers, block
 * workloads, LPT and zigzag). Input: "GPUS BLOCK MODE SPEC" with MODE w
 * (SPEC a workload list), s (a segment spec) or c (causal token count).
 * Small masks are checked tile by tile against the mask's definition. */
#include <stdlib.h>
#include <string.h>
#include "fuzz_input.h"
#include <loom/algorithms/cp_balance.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Blocks past this are not balanced (kept fast); Loom allows 2^20. */
#define FUZZ_MAX_BLOCKS 65536

/* Block b's workload tile by tile (the definition of the mask). */
static int64_t reference(const loom_cp_run *runs, const int32_t *run_of, int64_t tokens,
                         int32_t block, int64_t b)
{
    int64_t count = 0, nb = loom_cp_block_count(tokens, block);
    for (int64_t c = 0; c < nb; c++) {
        int hit = 0;
        for (int64_t q = b * block; q < (b + 1) * block && q < tokens && !hit; q++)
            for (int64_t k = c * block; k < (c + 1) * block && k < tokens && !hit; k++) {
                const loom_cp_run *rq = &runs[run_of[q]], *rk = &runs[run_of[k]];
                uint64_t mq = rq->bits & ~LOOM_CP_CAUSAL_BIT, mk = rk->bits & ~LOOM_CP_CAUSAL_BIT;
                if (rq->doc != rk->doc)
                    continue;
                hit = (rq->bits & LOOM_CP_CAUSAL_BIT) ? (mq & mk) != 0 && k <= q
                                                      : mq != 0 && mq == mk;
            }
        count += hit;
    }
    return count;
}

/* Workloads of a parsed mask; checks small ones against the reference. */
static int64_t *mask_workloads(const loom_cp_run *runs, int32_t n, int32_t block, int32_t *nb)
{
    int64_t tokens = 0;
    for (int32_t r = 0; r < n; r++)
        tokens += runs[r].tokens;
    int64_t count = loom_cp_block_count(tokens, block);
    if (count < 1 || count > FUZZ_MAX_BLOCKS)
        return NULL;
    int64_t *w = malloc((size_t)count * sizeof *w);
    loom_error err = {0, ""};
    if (!w || loom_cp_block_workloads(runs, n, block, w, &err) != LOOM_OK) {
        if (w && !err.message[0])
            loom_fuzz_fail("block workloads failed without a message");
        free(w);
        return NULL;
    }
    for (int64_t b = 0; b < count; b++)
        if (w[b] < 0 || w[b] > count)
            loom_fuzz_fail("a block workload is outside [0, blocks]");
    if (tokens <= 512) {
        int32_t run_of[512];
        for (int32_t r = 0, at = 0; r < n; r++)
            for (int64_t t = 0; t < runs[r].tokens; t++)
                run_of[at++] = r;
        for (int64_t b = 0; b < count; b++)
            if (w[b] != reference(runs, run_of, tokens, block, b))
                loom_fuzz_fail("a block workload differs from the mask's tile count");
    }
    *nb = (int32_t)count;
    return w;
}

/* Balances w over gpus both ways and checks the loads. */
static void balance(const int64_t *w, int32_t n, int32_t gpus)
{
    int32_t *assign = malloc((size_t)n * sizeof *assign);
    int64_t *loads = malloc((size_t)gpus * sizeof *loads);
    if (!assign || !loads) {
        free(assign);
        free(loads);
        return;
    }
    loom_error err = {0, ""};
    int64_t sum = 0, lb = loom_cp_lower_bound(w, n, gpus);
    for (int32_t b = 0; b < n; b++)
        sum += w[b];
    for (int way = 0; way < 3; way++) {
        int rc = way == 2 ? loom_cp_zigzag(w, n, gpus, assign, loads, &err)
                          : loom_cp_lpt(w, n, gpus, way, assign, loads, &err);
        if (rc != LOOM_OK) {
            if (!err.message[0])
                loom_fuzz_fail("balancing failed without a message");
            continue;
        }
        int64_t total = 0;
        for (int32_t g = 0; g < gpus; g++)
            total += loads[g];
        for (int32_t b = 0; b < n; b++)
            if (assign[b] < 0 || assign[b] >= gpus)
                loom_fuzz_fail("a block went to no GPU");
        if (total != sum || loom_cp_makespan(loads, gpus) < lb)
            loom_fuzz_fail("loads do not add up or beat the lower bound");
    }
    free(assign);
    free(loads);
}

/* libFuzzer entry: never fails on bad input, only on a crash, a leak or a
 * broken invariant. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = loom_fuzz_strdup(data, size);
    if (!text)
        return 0;
    char *p = text, *end = NULL;
    long gpus = strtol(p, &end, 10);
    long block = end != p ? strtol(end, &p, 10) : 0;
    while (*p == ' ')
        p++;
    char mode = *p ? *p++ : 0;
    while (*p == ' ')
        p++;
    if (gpus < 1 || gpus > LOOM_CP_MAX_GPUS || block < 1 || block > (1 << 20)) {
        free(text);
        return 0;
    }
    loom_error err = {0, ""};
    int64_t *w = NULL;
    int32_t n = 0;
    if (mode == 'w') {
        if (loom_cp_parse_workloads(p, &w, &n, &err) != LOOM_OK) {
            if (!err.message[0] || w)
                loom_fuzz_fail("workload list refused without a message, or kept");
        } else if (n > FUZZ_MAX_BLOCKS) {
            free(w);
            w = NULL;
        }
    } else if (mode == 's' || mode == 'c') {
        loom_cp_run runs[LOOM_CP_MAX_SEGMENTS];
        int32_t nr = 1;
        if (mode == 's') {
            nr = loom_cp_parse_segments(p, runs, LOOM_CP_MAX_SEGMENTS, &err);
            if (nr < 0 && !err.message[0])
                loom_fuzz_fail("segment spec refused without a message");
        } else {
            long long t = strtoll(p, NULL, 10);
            runs[0] = (loom_cp_run){t, LOOM_CP_TEXT_BIT | LOOM_CP_CAUSAL_BIT, 0, 0};
        }
        if (nr > 0)
            w = mask_workloads(runs, nr, (int32_t)block, &n);
    }
    if (w)
        balance(w, n, (int32_t)gpus);
    free(w);
    free(text);
    return 0;
}
