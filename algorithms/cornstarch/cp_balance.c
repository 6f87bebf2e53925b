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

int64_t loom_cp_block_count(int64_t tokens, int32_t block)
{
    if (tokens < 1 || block < 1)
        return -1;
    return tokens / block + (tokens % block != 0); /* no overflow near INT64_MAX */
}

/* Key blocks [c0, c1] holding attended keys; the first attended key of
 * block c0 is at position m0, of every later block c at c * block. */
typedef struct cp_range {
    int64_t c0, c1, m0;
    int64_t before; /* blocks of the class's earlier ranges */
} cp_range;

/* What every query of one class (the runs of one document with one
 * bitfield) attends: ranges[first .. first + count) of the shared array. */
typedef struct cp_class {
    int64_t first, count;
    int causal;
} cp_class;

/* The state of one loom_cp_block_workloads call. */
typedef struct cp_work {
    int32_t block;
    cp_range *ranges;      /* every class's ranges, class after class */
    int64_t n_ranges, cap_ranges;
} cp_work;

/* 1 when a query with bitfield `q` attends a key with bitfield `k` of its
 * own document at some position (the causal limit aside). */
static int cp_attends(uint64_t q, uint64_t k)
{
    uint64_t mq = q & ~LOOM_CP_CAUSAL_BIT, mk = k & ~LOOM_CP_CAUSAL_BIT;
    if (q & LOOM_CP_CAUSAL_BIT)
        return (mq & mk) != 0;
    return mq != 0 && mq == mk;
}

/* A run's sort key: its document, bitfield and index. */
typedef struct cp_key {
    int32_t doc, run;
    uint64_t bits;
} cp_key;

/* Orders runs by (document, bitfield, index). */
static int cp_by_class(const void *a, const void *b)
{
    const cp_key *x = a, *y = b;
    if (x->doc != y->doc)
        return x->doc < y->doc ? -1 : 1;
    if (x->bits != y->bits)
        return x->bits < y->bits ? -1 : 1;
    return (x->run > y->run) - (x->run < y->run);
}

/* Orders runs by (document, index): every document's runs in position
 * order. */
static int cp_by_doc(const void *a, const void *b)
{
    const cp_key *x = a, *y = b;
    if (x->doc != y->doc)
        return x->doc < y->doc ? -1 : 1;
    return (x->run > y->run) - (x->run < y->run);
}

/* Appends key positions [lo, hi) to the ranges of the class being built
 * (whose ranges start at index `first`), merging with the previous range
 * when contiguous and never counting a block twice. */
static int cp_add_keys(cp_work *w, int64_t first, int64_t lo, int64_t hi)
{
    int64_t B = w->block, c0 = lo / B, c1 = (hi - 1) / B;
    if (w->n_ranges > first) {
        cp_range *last = &w->ranges[w->n_ranges - 1];
        /* keys come in increasing order: block c0 is the last range's last
         * block (whose first key came earlier), or a block whose first key
         * is its first position; either way the range grows */
        if (c0 <= last->c1 || (c0 == last->c1 + 1 && lo == c0 * B)) {
            if (c1 > last->c1)
                last->c1 = c1;
            return 0;
        }
    }
    if (w->n_ranges == w->cap_ranges) {
        int64_t cap = w->cap_ranges ? 2 * w->cap_ranges : 64;
        cp_range *r = realloc(w->ranges, (size_t)cap * sizeof *r);
        if (!r)
            return -1;
        w->ranges = r;
        w->cap_ranges = cap;
    }
    w->ranges[w->n_ranges++] = (cp_range){c0, c1, lo, 0};
    return 0;
}
/* Key blocks a query of class k attends when its last position is t - 1
 * (t = INT64_MAX: a bidirectional query, every attended block): the blocks
 * whose first attended key is before t. */
static int64_t cp_count(const cp_work *w, const cp_class *k, int64_t t)
{
    const cp_range *r = w->ranges + k->first;
    int64_t lo = 0, hi = k->count; /* ranges [0, lo) start before t */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (r[mid].m0 < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return 0;
    const cp_range *j = &r[lo - 1];
    int64_t lim = t == INT64_MAX ? j->c1 : (t + w->block - 1) / w->block - 1;
    if (lim > j->c1)
        lim = j->c1;
    return j->before + 1 + (lim > j->c0 ? lim - j->c0 : 0);
}

/* Orders block intervals by their first block. */
static int cp_by_start(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

/* One class of a query block and its threshold (see cp_count). */
typedef struct cp_query {
    int32_t cls;
    int64_t t;
} cp_query;

/* Orders a block's queries by class, the largest threshold first. */
static int cp_by_query(const void *a, const void *b)
{
    const cp_query *x = a, *y = b;
    if (x->cls != y->cls)
        return x->cls < y->cls ? -1 : 1;
    return (x->t < y->t) - (x->t > y->t);
}

/* Key blocks attended by the queries q[0..n) of one block (distinct
 * classes): the union of their blocks. *steps counts the intervals merged;
 * -1 when out of memory or past LOOM_CP_MAX_STEPS. */
static int64_t cp_union(const cp_work *w, const cp_class *classes, const cp_query *q,
                        int32_t n, int64_t **buf, int64_t *cap, int64_t *steps)
{
    int64_t m = 0;
    for (int32_t i = 0; i < n; i++) {
        const cp_class *k = &classes[q[i].cls];
        const cp_range *r = w->ranges + k->first;
        for (int64_t j = 0; j < k->count && r[j].m0 < q[i].t; j++) {
            if (++*steps > LOOM_CP_MAX_STEPS)
                return -1;
            int64_t lim = q[i].t == INT64_MAX ? r[j].c1 : (q[i].t + w->block - 1) / w->block - 1;
            if (lim > r[j].c1)
                lim = r[j].c1;
            if (lim < r[j].c0)
                lim = r[j].c0;
            if (m == *cap) {
                int64_t nc = *cap ? 2 * *cap : 64;
                int64_t *nb = realloc(*buf, (size_t)nc * 2 * sizeof *nb);
                if (!nb)
                    return -1;
                *buf = nb;
                *cap = nc;
            }
            (*buf)[2 * m] = r[j].c0;
            (*buf)[2 * m + 1] = lim;
            m++;
        }
    }
    if (m > 1) /* qsort may not be given a NULL buffer, even empty */
        qsort(*buf, (size_t)m, 2 * sizeof **buf, cp_by_start);
    int64_t count = 0, end = -1;
    for (int64_t i = 0; i < m; i++) {
        int64_t a = (*buf)[2 * i], b = (*buf)[2 * i + 1];
        if (a <= end)
            a = end + 1;
        if (b >= a)
            count += b - a + 1;
        if (b > end)
            end = b;
    }
    return count;
}

int loom_cp_block_workloads(const loom_cp_run *runs, int32_t n_runs,
                            int32_t block, int64_t *w, loom_error *err)
{
    if (!runs || n_runs < 1 || n_runs > LOOM_CP_MAX_BLOCKS || block < 1 || !w)
        return loom_error_format(err, LOOM_EINVAL,
                       "cp-balance: expected 1 to %d runs and a block size >= 1, "
                       "found %d runs and block %d", LOOM_CP_MAX_BLOCKS, n_runs, block);
    int64_t tokens = 0;
    for (int32_t r = 0; r < n_runs; r++) {
        if (runs[r].tokens < 0)
            return loom_error_format(err, LOOM_EINVAL,
                           "cp-balance: runs[%d].tokens: expected >= 0, "
                           "found %lld", r, (long long)runs[r].tokens);
        if (runs[r].tokens > LOOM_CP_MAX_TOKENS - tokens)
            return loom_error_format(err, LOOM_EINVAL,
                           "cp-balance: more than %lld tokens",
                           (long long)LOOM_CP_MAX_TOKENS);
        tokens += runs[r].tokens;
    }
    int64_t nb = loom_cp_block_count(tokens, block);
    if (nb < 1 || nb > LOOM_CP_MAX_BLOCKS)
        return loom_error_format(err, LOOM_EINVAL,
                       "cp-balance: %lld tokens in blocks of %d give %lld "
                       "blocks, expected 1 to %d", (long long)tokens, block,
                       (long long)nb, LOOM_CP_MAX_BLOCKS);
    cp_work cw = {block, NULL, 0, 0};
    int64_t *start = malloc((size_t)n_runs * sizeof *start);
    int32_t *class_of = malloc((size_t)n_runs * sizeof *class_of);
    cp_key *keys = malloc((size_t)n_runs * sizeof *keys);
    cp_key *bydoc = malloc((size_t)n_runs * sizeof *bydoc);
    cp_class *classes = malloc((size_t)n_runs * sizeof *classes);
    cp_query *q = malloc((size_t)n_runs * sizeof *q);
    int64_t *buf = NULL, cap = 0, steps = 0;
    int rc = LOOM_OK;
    if (!start || !class_of || !keys || !bydoc || !classes || !q) {
        rc = loom_error_format(err, LOOM_ENOMEM, "cp-balance: out of memory");
        goto done;
    }
    for (int32_t r = 0, at = 0; r < n_runs; r++) {
        start[r] = at;
        at += runs[r].tokens;
        keys[r] = (cp_key){runs[r].doc, r, runs[r].bits};
    }
    memcpy(bydoc, keys, (size_t)n_runs * sizeof *bydoc);
    qsort(keys, (size_t)n_runs, sizeof *keys, cp_by_class);
    qsort(bydoc, (size_t)n_runs, sizeof *bydoc, cp_by_doc);
    /* every class's attended key ranges, from its document's runs */
    int32_t n_classes = 0;
    for (int32_t i = 0, d = 0; i < n_runs && rc == LOOM_OK; i++) {
        if (i > 0 && keys[i].doc == keys[i - 1].doc && keys[i].bits == keys[i - 1].bits) {
            class_of[keys[i].run] = n_classes - 1;
            continue;
        }
        while (bydoc[d].doc != keys[i].doc)
            d++; /* first run of the document (both lists are in doc order) */
        cp_class *k = &classes[n_classes];
        class_of[keys[i].run] = n_classes++;
        k->first = cw.n_ranges;
        k->causal = (keys[i].bits & LOOM_CP_CAUSAL_BIT) != 0;
        for (int32_t e = d; e < n_runs && bydoc[e].doc == keys[i].doc; e++) {
            const loom_cp_run *kr = &runs[bydoc[e].run];
            if (++steps > LOOM_CP_MAX_STEPS) {
                rc = -1;
                break;
            }
            if (kr->tokens > 0 && cp_attends(keys[i].bits, kr->bits) &&
                cp_add_keys(&cw, k->first, start[bydoc[e].run],
                            start[bydoc[e].run] + kr->tokens)) {
                rc = loom_error_format(err, LOOM_ENOMEM, "cp-balance: out of memory");
                break;
            }
        }
        k->count = cw.n_ranges - k->first;
        for (int64_t j = 0, before = 0; j < k->count; j++) {
            cp_range *r = &cw.ranges[k->first + j];
            r->before = before;
            before += r->c1 - r->c0 + 1;
        }
    }
    /* every query block: the classes of its pieces and their thresholds */
    int32_t r = 0;
    int64_t used = 0, pos = 0; /* tokens of run r already placed */
    for (int64_t b = 0; b < nb && rc == LOOM_OK; b++) {
        int64_t end = (b + 1) * block < tokens ? (b + 1) * block : tokens;
        int32_t n = 0;
        while (pos < end) {
            while (r < n_runs && used == runs[r].tokens) {
                r++;
                used = 0;
            }
            int64_t take = runs[r].tokens - used;
            if (take > end - pos)
                take = end - pos;
            int32_t c = class_of[r];
            int64_t t = classes[c].causal ? pos + take : INT64_MAX;
            if (n > 0 && q[n - 1].cls == c) {
                if (t > q[n - 1].t)
                    q[n - 1].t = t;
            } else {
                q[n++] = (cp_query){c, t};
            }
            pos += take;
            used += take;
        }
        if (n > 1) { /* one entry per class, with its largest threshold */
            qsort(q, (size_t)n, sizeof *q, cp_by_query);
            int32_t m = 0;
            for (int32_t i = 0; i < n; i++)
                if (m == 0 || q[m - 1].cls != q[i].cls)
                    q[m++] = q[i];
            n = m;
        }
        if (n == 1) {
            w[b] = cp_count(&cw, &classes[q[0].cls], q[0].t);
        } else {
            int64_t c = cp_union(&cw, classes, q, n, &buf, &cap, &steps);
            if (c < 0)
                rc = -1;
            else
                w[b] = c;
        }
    }
    if (rc == -1)
        rc = steps > LOOM_CP_MAX_STEPS
                 ? loom_error_format(err, LOOM_EINVAL,
                           "cp-balance: the mask's %d runs need more than %lld steps "
                           "(run comparisons and key ranges), at most %lld; give fewer "
                           "runs or coarser blocks", n_runs, (long long)LOOM_CP_MAX_STEPS,
                           (long long)LOOM_CP_MAX_STEPS)
                 : loom_error_format(err, LOOM_ENOMEM, "cp-balance: out of memory");
done:
    free(start);
    free(class_of);
    free(keys);
    free(bydoc);
    free(classes);
    free(q);
    free(buf);
    free(cw.ranges);
    return rc;
}

int loom_cp_runs_from_bits(const uint64_t *bits, int64_t tokens,
                           loom_cp_run **out, int32_t *n_out, loom_error *err)
{
    *out = NULL;
    *n_out = 0;
    if (!bits || tokens < 1 || tokens > LOOM_CP_MAX_TOKENS)
        return loom_error_format(err, LOOM_EINVAL,
                       "cp-balance: expected 1 to %lld tokens, found %lld",
                       (long long)LOOM_CP_MAX_TOKENS, (long long)tokens);
    int32_t n = 1;
    for (int64_t i = 1; i < tokens; i++) {
        n += bits[i] != bits[i - 1];
        if (n > LOOM_CP_MAX_BLOCKS)
            return loom_error_format(err, LOOM_EINVAL,
                           "cp-balance: more than %d runs of equal bits",
                           LOOM_CP_MAX_BLOCKS);
    }
    loom_cp_run *runs = calloc((size_t)n, sizeof *runs);
    if (!runs)
        return loom_error_format(err, LOOM_ENOMEM, "cp-balance: out of memory");
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
    if (!w || n < 1 || n > LOOM_CP_MAX_BLOCKS || !assign || !loads || gpus < 1 ||
        gpus > LOOM_CP_MAX_GPUS)
        return loom_error_format(err, LOOM_EINVAL,
                       "cp-balance: expected 1 to %d blocks and 1 to %d GPUs, "
                       "found %d blocks and %d GPUs", LOOM_CP_MAX_BLOCKS, LOOM_CP_MAX_GPUS,
                       n, gpus);
    for (int32_t b = 0; b < n; b++)
        if (w[b] < 0 || w[b] > LOOM_CP_MAX_WORKLOAD)
            return loom_error_format(err, LOOM_EINVAL,
                           "cp-balance: block %d has workload %lld, expected "
                           ">= 0 and <= %lld", b, (long long)w[b],
                           (long long)LOOM_CP_MAX_WORKLOAD);
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
        return loom_error_format(err, LOOM_ENOMEM, "cp-balance: out of memory");
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

/* Encoder bit of a segment kind, 0 for text, -1 when unknown. */
static int cp_kind_bit(const char *k, size_t n)
{
    if (n == 4 && !strncmp(k, "text", 4))
        return 0;
    if (n == 5 && !strncmp(k, "image", 5))
        return 1;
    if (n == 5 && !strncmp(k, "audio", 5))
        return 2;
    if (n == 5 && !strncmp(k, "video", 5))
        return 3;
    if (n > 3 && n <= 5 && !strncmp(k, "enc", 3)) {
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

/* A decimal integer in [lo, hi] spanning s[0..) up to a delimiter of
 * `stops` or the end; *end is set past it. 0 when malformed. */
static int cp_parse_int(const char *s, int64_t lo, int64_t hi, const char *stops,
                        const char **end, int64_t *out)
{
    int64_t v = 0;
    const char *p = s;
    while (*p >= '0' && *p <= '9') {
        if (v > hi)
            return 0; /* keeps v from overflowing: hi < 2^62 */
        v = v * 10 + (*p - '0');
        p++;
    }
    *end = p;
    if (p == s || v < lo || v > hi || (*p && !strchr(stops, *p)))
        return 0;
    *out = v;
    return 1;
}

int32_t loom_cp_parse_segments(const char *spec, loom_cp_run *runs, int32_t cap,
                               loom_error *err)
{
    int32_t n = 0, doc = 0, doc_first = 0;
    const char *s = spec ? spec : "";
    if (!*s) {
        loom_error_format(err, LOOM_EINVAL, "cp-balance: --segments: expected KIND:TOKENS,..., "
                                  "found an empty string");
        return -1;
    }
    while (*s) {
        const char *colon = strchr(s, ':'), *end = NULL;
        size_t klen = colon ? (size_t)(colon - s) : 0;
        int bit = colon ? cp_kind_bit(s, klen) : -1;
        int64_t t = 0;
        if (bit < 0 || !cp_parse_int(colon + 1, 1, LOOM_CP_MAX_TOKENS, ",/", &end, &t)) {
            loom_error_format(err, LOOM_EINVAL, "cp-balance: --segments: expected KIND:TOKENS "
                                      "(KIND text, image, audio, video or enc1..enc62, "
                                      "TOKENS 1 to %lld), found \"%.60s\"",
                    (long long)LOOM_CP_MAX_TOKENS, s);
            return -1;
        }
        if (n == cap) {
            loom_error_format(err, LOOM_EINVAL, "cp-balance: --segments: expected at most %d "
                                      "segments, found more", (int)cap);
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
            for (int32_t i = doc_first; i < n; i++)
                if (!(runs[i].bits & LOOM_CP_CAUSAL_BIT))
                    all |= runs[i].bits;
            for (int32_t i = doc_first; i < n; i++)
                if (runs[i].bits & LOOM_CP_CAUSAL_BIT)
                    runs[i].bits = all | LOOM_CP_CAUSAL_BIT;
            doc++;
            doc_first = n;
        }
        if (*s) {
            s++;
            if (!*s) {
                loom_error_format(err, LOOM_EINVAL, "cp-balance: --segments: expected KIND:TOKENS "
                                          "after the last separator, found the end");
                return -1;
            }
        }
    }
    return n;
}

int loom_cp_parse_workloads(const char *list, int64_t **w, int32_t *n, loom_error *err)
{
    *w = NULL;
    *n = 0;
    const char *s = list ? list : "";
    size_t count = 1;
    for (const char *p = s; *p; p++)
        count += *p == ',';
    if (!*s || count > LOOM_CP_MAX_BLOCKS)
        return loom_error_format(err, LOOM_EINVAL,
                       "cp-balance: --workloads: expected 1 to %d comma-separated "
                       "integers, found %s", LOOM_CP_MAX_BLOCKS,
                       *s ? "more" : "an empty string");
    int64_t *v = malloc(count * sizeof *v);
    if (!v)
        return loom_error_format(err, LOOM_ENOMEM, "cp-balance: out of memory");
    int32_t k = 0;
    while (*s) {
        const char *end = NULL;
        if (!cp_parse_int(s, 0, LOOM_CP_MAX_WORKLOAD, ",", &end, &v[k])) {
            free(v);
            return loom_error_format(err, LOOM_EINVAL,
                           "cp-balance: --workloads: expected comma-separated "
                           "integers in [0, %lld], found \"%.60s\"",
                           (long long)LOOM_CP_MAX_WORKLOAD, s);
        }
        k++;
        s = *end ? end + 1 : end;
        if (*end && !*s) {
            free(v);
            return loom_error_format(err, LOOM_EINVAL, "cp-balance: --workloads: expected an "
                                             "integer after the last ',', found the end");
        }
    }
    *w = v;
    *n = k;
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
