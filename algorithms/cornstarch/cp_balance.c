/*
 * cp_balance.c - token-block workloads of an attention mask and their
 * assignment to the GPUs of a context-parallel group (Cornstarch §3.3.2,
 * Algorithm 1), plus the zigzag baseline. Uses only the C library.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <loom/algorithms/cp_balance.h>

/* Fills err (code + message) and returns code. */
static int cp_fail(loom_error *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return code;
}

int64_t loom_cp_block_count(int64_t tokens, int32_t block)
{
    if (tokens < 1 || block < 1)
        return -1;
    return (tokens + block - 1) / block;
}

/* A run clipped to one block: [lo, hi) positions and its run. */
typedef struct cp_piece {
    int64_t lo, hi;
    int32_t run;
} cp_piece;

/* 1 when some query in piece q attends some key in piece k. */
static int cp_pair(const loom_cp_run *runs, const cp_piece *q,
                   const cp_piece *k)
{
    const loom_cp_run *rq = &runs[q->run], *rk = &runs[k->run];
    if (rq->doc != rk->doc)
        return 0;
    uint64_t mq = rq->bits & ~LOOM_CP_CAUSAL_BIT;
    uint64_t mk = rk->bits & ~LOOM_CP_CAUSAL_BIT;
    if (rq->bits & LOOM_CP_CAUSAL_BIT)
        return (mq & mk) != 0 && k->lo <= q->hi - 1; /* earliest key <= last query */
    return mq != 0 && mq == mk;
}

int loom_cp_block_workloads(const loom_cp_run *runs, int32_t n_runs,
                            int32_t block, int64_t *w, loom_error *err)
{
    if (!runs || n_runs < 1 || block < 1 || !w)
        return cp_fail(err, LOOM_EINVAL,
                       "cp-balance: expected >= 1 run and a block size >= 1, "
                       "found %d runs and block %d", n_runs, block);
    int64_t tokens = 0;
    for (int32_t r = 0; r < n_runs; r++) {
        if (runs[r].tokens < 0)
            return cp_fail(err, LOOM_EINVAL,
                           "cp-balance: runs[%d].tokens: expected >= 0, "
                           "found %lld", r, (long long)runs[r].tokens);
        tokens += runs[r].tokens;
        if (tokens > LOOM_CP_MAX_TOKENS)
            return cp_fail(err, LOOM_EINVAL,
                           "cp-balance: more than %lld tokens",
                           (long long)LOOM_CP_MAX_TOKENS);
    }
    int64_t nb = loom_cp_block_count(tokens, block);
    if (nb < 1 || nb > LOOM_CP_MAX_BLOCKS)
        return cp_fail(err, LOOM_EINVAL,
                       "cp-balance: %lld tokens in blocks of %d give %lld "
                       "blocks, expected 1 to %d", (long long)tokens, block,
                       (long long)nb, LOOM_CP_MAX_BLOCKS);
    /* pieces of every block, block after block */
    int64_t *off = malloc(((size_t)nb + 1) * sizeof *off);
    size_t cap = (size_t)nb + (size_t)n_runs, n = 0;
    cp_piece *pc = malloc(cap * sizeof *pc);
    if (!off || !pc) {
        free(off);
        free(pc);
        return cp_fail(err, LOOM_ENOMEM, "cp-balance: out of memory");
    }
    int64_t pos = 0;
    int32_t r = 0;
    int64_t used = 0; /* tokens of run r already placed */
    for (int64_t b = 0; b < nb; b++) {
        off[b] = (int64_t)n;
        int64_t end = (b + 1) * block < tokens ? (b + 1) * block : tokens;
        while (pos < end) {
            while (r < n_runs && used == runs[r].tokens) {
                r++;
                used = 0;
            }
            int64_t take = runs[r].tokens - used;
            if (take > end - pos)
                take = end - pos;
            pc[n].lo = pos;
            pc[n].hi = pos + take;
            pc[n].run = r;
            n++;
            pos += take;
            used += take;
        }
    }
    off[nb] = (int64_t)n;
    for (int64_t b = 0; b < nb; b++) {
        int64_t count = 0;
        for (int64_t c = 0; c < nb; c++) {
            int hit = 0;
            for (int64_t i = off[b]; i < off[b + 1] && !hit; i++)
                for (int64_t j = off[c]; j < off[c + 1] && !hit; j++)
                    hit = cp_pair(runs, &pc[i], &pc[j]);
            count += hit;
        }
        w[b] = count;
    }
    free(off);
    free(pc);
    return LOOM_OK;
}

int loom_cp_runs_from_bits(const uint64_t *bits, int64_t tokens,
                           loom_cp_run **out, int32_t *n_out, loom_error *err)
{
    *out = NULL;
    *n_out = 0;
    if (!bits || tokens < 1 || tokens > LOOM_CP_MAX_TOKENS)
        return cp_fail(err, LOOM_EINVAL,
                       "cp-balance: expected 1 to %lld tokens, found %lld",
                       (long long)LOOM_CP_MAX_TOKENS, (long long)tokens);
    int32_t n = 1;
    for (int64_t i = 1; i < tokens; i++) {
        n += bits[i] != bits[i - 1];
        if (n > LOOM_CP_MAX_BLOCKS)
            return cp_fail(err, LOOM_EINVAL,
                           "cp-balance: more than %d runs of equal bits",
                           LOOM_CP_MAX_BLOCKS);
    }
    loom_cp_run *runs = calloc((size_t)n, sizeof *runs);
    if (!runs)
        return cp_fail(err, LOOM_ENOMEM, "cp-balance: out of memory");
    int32_t k = 0;
    runs[0].bits = bits[0];
    for (int64_t i = 0; i < tokens; i++) {
        if (i > 0 && bits[i] != bits[i - 1]) {
            k++;
            runs[k].bits = bits[i];
        }
        runs[k].tokens++;
    }
    *out = runs;
    *n_out = n;
    return LOOM_OK;
}

/* Checks the common arguments of the assignment functions. */
static int cp_check(const int64_t *w, int32_t n, int32_t gpus,
                    const int32_t *assign, const int64_t *loads,
                    loom_error *err)
{
    if (!w || n < 1 || !assign || !loads || gpus < 1 || gpus > LOOM_CP_MAX_GPUS)
        return cp_fail(err, LOOM_EINVAL,
                       "cp-balance: expected >= 1 block and 1 to %d GPUs, "
                       "found %d blocks and %d GPUs", LOOM_CP_MAX_GPUS, n, gpus);
    for (int32_t b = 0; b < n; b++)
        if (w[b] < 0)
            return cp_fail(err, LOOM_EINVAL,
                           "cp-balance: block %d has workload %lld, expected "
                           ">= 0", b, (long long)w[b]);
    return LOOM_OK;
}

/* A block and its workload, for sorting. */
typedef struct cp_item {
    int64_t w;
    int32_t block;
} cp_item;

/* Decreasing workload, then increasing block index. */
static int cp_by_weight(const void *a, const void *b)
{
    const cp_item *x = a, *y = b;
    if (x->w != y->w)
        return x->w > y->w ? -1 : 1;
    return (x->block > y->block) - (x->block < y->block);
}

/* Heap of GPUs keyed by (load, index). */
static int cp_less(const int64_t *loads, int32_t a, int32_t b)
{
    return loads[a] < loads[b] || (loads[a] == loads[b] && a < b);
}

/* Restores the heap property below position i. */
static void cp_sift_down(int32_t *heap, int32_t n, const int64_t *loads,
                         int32_t i)
{
    for (;;) {
        int32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && cp_less(loads, heap[l], heap[m]))
            m = l;
        if (r < n && cp_less(loads, heap[r], heap[m]))
            m = r;
        if (m == i)
            return;
        int32_t t = heap[i];
        heap[i] = heap[m];
        heap[m] = t;
        i = m;
    }
}

int loom_cp_lpt(const int64_t *w, int32_t n, int32_t gpus, int sorted,
                int32_t *assign, int64_t *loads, loom_error *err)
{
    int rc = cp_check(w, n, gpus, assign, loads, err);
    if (rc != LOOM_OK)
        return rc;
    cp_item *order = malloc((size_t)n * sizeof *order);
    int32_t *heap = malloc((size_t)gpus * sizeof *heap);
    if (!order || !heap) {
        free(order);
        free(heap);
        return cp_fail(err, LOOM_ENOMEM, "cp-balance: out of memory");
    }
    for (int32_t b = 0; b < n; b++) {
        order[b].w = w[b];
        order[b].block = b;
    }
    if (sorted)
        qsort(order, (size_t)n, sizeof *order, cp_by_weight);
    for (int32_t g = 0; g < gpus; g++) {
        loads[g] = 0;
        heap[g] = g; /* equal loads: index order is a valid heap */
    }
    for (int32_t i = 0; i < n; i++) {
        int32_t b = order[i].block, g = heap[0];
        assign[b] = g;
        loads[g] += w[b];
        cp_sift_down(heap, gpus, loads, 0);
    }
    free(order);
    free(heap);
    return LOOM_OK;
}

int loom_cp_zigzag(const int64_t *w, int32_t n, int32_t gpus, int32_t *assign,
                   int64_t *loads, loom_error *err)
{
    int rc = cp_check(w, n, gpus, assign, loads, err);
    if (rc != LOOM_OK)
        return rc;
    int64_t chunks = 2 * (int64_t)gpus;
    for (int32_t g = 0; g < gpus; g++)
        loads[g] = 0;
    for (int32_t b = 0; b < n; b++) {
        int64_t c = (int64_t)b * chunks / n; /* chunk of block b */
        int32_t g = (int32_t)(c < gpus ? c : chunks - 1 - c);
        assign[b] = g;
        loads[g] += w[b];
    }
    return LOOM_OK;
}

int64_t loom_cp_makespan(const int64_t *loads, int32_t gpus)
{
    int64_t m = 0;
    for (int32_t g = 0; g < gpus; g++)
        if (loads[g] > m)
            m = loads[g];
    return m;
}

int64_t loom_cp_lower_bound(const int64_t *w, int32_t n, int32_t gpus)
{
    int64_t sum = 0, mx = 0;
    for (int32_t b = 0; b < n; b++) {
        sum += w[b];
        if (w[b] > mx)
            mx = w[b];
    }
    int64_t avg = gpus > 0 ? (sum + gpus - 1) / gpus : sum;
    return avg > mx ? avg : mx;
}
