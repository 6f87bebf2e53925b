/*
 * interleaved_1f1b.c - Megatron-LM's interleaved 1F1B schedule (virtual
 * pipeline stages).
 *
 * For a single flow of P * V positions in the Megatron placement: position
 * s on rank s % P as chunk s / P. A "unit" is one (microbatch, sub); units
 * are ordered by priority descending, microbatch, sub, the same on every
 * rank, and U (the unit count) must be a multiple of P when V > 1. On rank
 * r the k-th forward runs chunk (k / P) % V of unit (k / (P V)) P + k % P,
 * the k-th backward chunk V - 1 - (k / P) % V of the same unit. The rank
 * runs w = min(2 (P - r - 1) + (V - 1) P, U V) warm-up forwards, then one
 * forward and one backward alternately, then the last w backwards. With
 * V = 1 the warm-up is min(P - r - 1, U), which is exactly 1F1B. A split
 * backward's I is followed at once by its W.
 */
#include <stdlib.h>
#include <string.h>
#include <loom/loom.h>

/* One stage to sort: rank, phase (0 forward, 1 backward), chunk, priority,
 * microbatch, sub; `id` the stage. */
typedef struct il_item {
    int32_t rank;
    int32_t back;
    int32_t chunk;
    float prio;
    int32_t mb;
    int32_t sub;
    int32_t id;
} il_item;

typedef struct il_self {
    const loom_host_api *host;
    loom_ctx *ctx;
    il_item *items;    /* cap_items entries, reused across calls */
    int32_t cap_items;
    int32_t *bucket_off; /* cap_buckets + 1 entries, reused across calls */
    int32_t cap_buckets;
} il_self;

/* Creates an instance with empty scratch. */
static int il_create(const loom_host_api *host, loom_ctx *ctx,
                     void *plugin_state, void **self, loom_error *err)
{
    (void)plugin_state;
    il_self *s = host->alloc(sizeof *s);
    if (!s)
        return host->error(err, LOOM_ENOMEM, "interleaved-1f1b: out of memory");
    memset(s, 0, sizeof *s);
    s->host = host;
    s->ctx = ctx;
    *self = s;
    return LOOM_OK;
}

/* Releases an instance and its scratch. */
static void il_destroy(void *self)
{
    il_self *s = self;
    if (!s)
        return;
    s->host->free(s->items);
    s->host->free(s->bucket_off);
    s->host->free(s);
}

/* Orders two items of one (rank, phase, chunk) bucket: priority (higher
 * first), microbatch, sub, stage. */
static int il_cmp(const void *a, const void *b)
{
    const il_item *x = a, *y = b;
    if (x->prio != y->prio)
        return x->prio > y->prio ? -1 : 1;
    if (x->mb != y->mb)
        return x->mb < y->mb ? -1 : 1;
    if (x->sub != y->sub)
        return x->sub < y->sub ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* Checks for one flow in the Megatron placement and finds V. */
static int il_check(il_self *s, const loom_stage_graph *g, int32_t *v_out,
                    loom_error *err)
{
    const loom_host_api *host = s->host;
    int32_t p = g->n_ranks, n_pos = 0, n_i = 0, n_w = 0;
    if (p < 1)
        return host->error(err, LOOM_EINVAL,
                           "interleaved-1f1b: graph has %d ranks", p);
    for (int32_t v = 0; v < g->n_stages; v++) {
        n_i += g->kind[v] == LOOM_STAGE_I;
        n_w += g->kind[v] == LOOM_STAGE_W;
        if (g->kind[v] > LOOM_STAGE_W)
            return host->error(err, LOOM_EINVAL,
                               "interleaved-1f1b: stage %d has kind %d", v,
                               g->kind[v]);
        if (g->flow[v] != 0)
            return host->error(err, LOOM_EINVAL,
                               "interleaved-1f1b: needs a single-flow graph, "
                               "found stage %d in flow %d", v, g->flow[v]);
        int32_t pos = g->position[v];
        if (pos < 0 || g->rank[v] != pos % p || g->chunk[v] != pos / p)
            return host->error(err, LOOM_EINVAL,
                               "interleaved-1f1b: needs position s on rank "
                               "s %% %d as chunk s / %d, found stage %d at "
                               "position %d on rank %d chunk %d",
                               p, p, v, pos, g->rank[v], g->chunk[v]);
        if (pos + 1 > n_pos)
            n_pos = pos + 1;
        if (g->kind[v] == LOOM_STAGE_I) {
            int32_t w = g->pair_weight[g->pair[v]];
            if (w < 0 || w >= g->n_stages || g->kind[w] != LOOM_STAGE_W ||
                g->rank[w] != g->rank[v])
                return host->error(err, LOOM_EINVAL,
                                   "interleaved-1f1b: I stage %d has no W "
                                   "stage on its rank %d", v, g->rank[v]);
        }
    }
    if (n_i != n_w)
        return host->error(err, LOOM_EINVAL,
                           "interleaved-1f1b: %d I stages but %d W stages",
                           n_i, n_w);
    if (n_pos % p != 0)
        return host->error(err, LOOM_EINVAL,
                           "interleaved-1f1b: %d positions do not fill %d "
                           "ranks evenly", n_pos, p);
    *v_out = n_pos / p;
    return LOOM_OK;
}

/* Appends a backward slot (B, or I then its W) to the order at *k. */
static void il_emit_back(const loom_stage_graph *g, int32_t v,
                         loom_schedule *out, int32_t *k)
{
    out->order[(*k)++] = v;
    if (g->kind[v] == LOOM_STAGE_I)
        out->order[(*k)++] = g->pair_weight[g->pair[v]];
}

/* Checks that rank r's sorted run of n_chunks * units items at `first`
 * holds `units` items of every chunk in chunk order. */
static int il_check_run(il_self *s, const il_item *first, int32_t r,
                        int32_t n_chunks, int32_t units, int32_t have,
                        const char *what, loom_error *err)
{
    if (have != n_chunks * units)
        return s->host->error(err, LOOM_EINVAL,
                              "interleaved-1f1b: rank %d has %d %s stages, "
                              "expected %d chunks x %d microbatches",
                              r, have, what, n_chunks, units);
    for (int32_t c = 0; c < n_chunks; c++)
        if (first[(size_t)c * (size_t)units].chunk != c ||
            first[(size_t)c * (size_t)units + (size_t)units - 1].chunk != c)
            return s->host->error(err, LOOM_EINVAL,
                                  "interleaved-1f1b: rank %d chunk %d does "
                                  "not run every microbatch once (%s)",
                                  r, c, what);
    return LOOM_OK;
}

/* The bucket of stage v: (rank, phase, chunk), phase 0 forward, 1 backward. */
static int32_t il_bucket(const loom_stage_graph *g, int32_t v, int32_t nv)
{
    return (g->rank[v] * 2 + (g->kind[v] != LOOM_STAGE_F)) * nv + g->chunk[v];
}

/* Fills s->items with the F, B and I stages (*n of them) ordered by rank,
 * phase, chunk (placed by counting, keeping the graph's order), then
 * within each bucket by il_cmp; a bucket already in that order, as the
 * graph builder emits microbatches, is left as it is. */
static int il_sort(il_self *s, const loom_stage_graph *g, const float *priorities,
                   int32_t nv, int32_t *n, loom_error *err)
{
    int32_t nb = g->n_ranks * 2 * nv;
    if (nb > s->cap_buckets) {
        void *p = s->host->realloc(s->bucket_off, ((size_t)nb + 1) * sizeof *s->bucket_off);
        if (!p)
            return s->host->error(err, LOOM_ENOMEM, "interleaved-1f1b: out of memory");
        s->bucket_off = p;
        s->cap_buckets = nb;
    }
    int32_t *off = s->bucket_off;
    memset(off, 0, ((size_t)nb + 1) * sizeof *off);
    for (int32_t v = 0; v < g->n_stages; v++)
        if (g->kind[v] != LOOM_STAGE_W)
            off[il_bucket(g, v, nv) + 1]++;
    for (int32_t b = 0; b < nb; b++)
        off[b + 1] += off[b];
    *n = off[nb];
    for (int32_t v = 0; v < g->n_stages; v++) {
        if (g->kind[v] == LOOM_STAGE_W)
            continue;
        il_item *it = &s->items[off[il_bucket(g, v, nv)]++];
        it->rank = g->rank[v];
        it->back = g->kind[v] != LOOM_STAGE_F;
        it->chunk = g->chunk[v];
        it->prio = priorities ? priorities[g->group[v]] : -(float)g->group[v];
        if (it->prio != it->prio)
            it->prio = -1e30f; /* NaN sorts last */
        it->mb = g->microbatch[v];
        it->sub = g->sub[v];
        it->id = v;
    }
    /* off[b] now ends bucket b */
    for (int32_t b = 0, start = 0; b < nb; start = off[b++]) {
        il_item *first = &s->items[start];
        int32_t len = off[b] - start, j = 1;
        while (j < len && il_cmp(&first[j - 1], &first[j]) < 0)
            j++;
        if (j < len)
            qsort(first, (size_t)len, sizeof *first, il_cmp);
    }
    return LOOM_OK;
}

/* Writes the interleaved 1F1B order of every rank into `out`. */
static int il_interleave(void *self, const loom_stage_graph *g,
                         const float *priorities, loom_schedule *out,
                         loom_error *err)
{
    il_self *s = self;
    int32_t nv = 1;
    if (g->n_stages > s->cap_items) {
        void *p = s->host->realloc(s->items, (size_t)g->n_stages * sizeof *s->items);
        if (!p)
            return s->host->error(err, LOOM_ENOMEM,
                                  "interleaved-1f1b: out of memory");
        s->items = p;
        s->cap_items = g->n_stages;
    }
    int rc = il_check(s, g, &nv, err);
    if (rc != LOOM_OK)
        return rc;

    int32_t n = 0;
    rc = il_sort(s, g, priorities, nv, &n, err);
    if (rc != LOOM_OK)
        return rc;

    int32_t p = g->n_ranks, units = -1, k = 0, i = 0;
    out->n_ranks = p;
    for (int32_t r = 0; r < p; r++) {
        out->rank_off[r] = k;
        int32_t a = i;
        while (i < n && s->items[i].rank == r && !s->items[i].back)
            i++;
        int32_t b = i;
        while (i < n && s->items[i].rank == r)
            i++;
        if (units < 0) {
            units = (b - a) / nv;
            if (nv > 1 && units % p != 0)
                return s->host->error(err, LOOM_EINVAL,
                                      "interleaved-1f1b: %d microbatches "
                                      "(counting sub-microbatches) is not a "
                                      "multiple of the %d pipeline ranks; "
                                      "interleaving %d virtual stages needs "
                                      "M %% P == 0", units, p, nv);
        }
        rc = il_check_run(s, &s->items[a], r, nv, units, b - a, "forward", err);
        if (rc == LOOM_OK)
            rc = il_check_run(s, &s->items[b], r, nv, units, i - b,
                              "backward", err);
        if (rc != LOOM_OK)
            return rc;
        int32_t total = units * nv;
        int64_t w = (nv == 1) ? (int64_t)p - r - 1
                              : (int64_t)(p - r - 1) * 2 + (int64_t)(nv - 1) * p;
        if (w > total)
            w = total;
        for (int32_t kk = 0; kk < total; kk++) {
            /* forward kk: warm-up first, then one per steady step */
            int32_t c = (kk / p) % nv;
            int32_t u = (kk / (p * nv)) * p + kk % p;
            out->order[k++] = s->items[a + c * units + u].id;
            if (kk >= w) {
                int32_t kb = kk - (int32_t)w;
                int32_t cb = nv - 1 - (kb / p) % nv;
                int32_t ub = (kb / (p * nv)) * p + kb % p;
                il_emit_back(g, s->items[b + cb * units + ub].id, out, &k);
            }
        }
        for (int32_t kb = total - (int32_t)w; kb < total; kb++) {
            int32_t cb = nv - 1 - (kb / p) % nv;
            int32_t ub = (kb / (p * nv)) * p + kb % p;
            il_emit_back(g, s->items[b + cb * units + ub].id, out, &k);
        }
    }
    out->rank_off[p] = k;
    out->n_stages = k;
    if (k != g->n_stages)
        return s->host->error(err, LOOM_EINVAL,
                              "interleaved-1f1b: placed %d of %d stages",
                              k, g->n_stages);
    return LOOM_OK;
}

static const loom_interleaver_vtable il_vtable = {
    { sizeof(loom_interleaver_vtable), LOOM_INTERLEAVER_VERSION },
    il_create,
    il_destroy,
    il_interleave,
    NULL,
};

/* Returns the interleaver vtable for role "interleaver", else NULL. */
static const loom_role_header *il_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_INTERLEAVER) == 0)
        return &il_vtable.header;
    return NULL;
}

static const loom_plugin_info il_info = {
    LOOM_PLUGIN_INFO_HEADER,
    "org.loom.interleaved-1f1b",
    "1.0.0",
    NULL,
    NULL,
    il_role,
    NULL, /* no params */
};

LOOM_PLUGIN_DEFINE(interleaved_1f1b, il_info);
