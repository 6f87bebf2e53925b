/*
 * 1f1b.c - the Megatron-LM non-interleaved one-forward-one-backward
 * interleaver (PipeDream-Flush).
 *
 * For a single flow with exactly one position per rank. A "unit" is one
 * (microbatch, sub-microbatch); units are taken in the order priority
 * descending, then microbatch, then sub (the same on every rank). The rank
 * holding position p of n_pos runs w = min(n_pos - p - 1, U) warm-up
 * forwards, then alternates one forward and one backward, then drains the
 * remaining w backwards. A split backward's I is followed at once by its W.
 */
#include <string.h>
#include <loom/loom.h>
#include <loom/kits/listsched.h>

/* One stage to sort: rank, phase (0 forward, 1 backward), priority,
 * microbatch, sub; `id` the stage. */
typedef struct ofob_item {
    int32_t rank;
    int32_t back;
    float prio;
    int32_t mb;
    int32_t sub;
    int32_t id;
} ofob_item;

typedef struct ofob_self {
    const loom_host_api *host;
    loom_ctx *ctx;
    ofob_item *items;    /* cap_items entries, reused across calls */
    ofob_item *sorted;   /* the items in ofob_sort() order */
    uint32_t *keys;      /* radix sort scratch: 2 * cap_items keys */
    int32_t *ids;        /* radix sort scratch: 2 * cap_items indices */
    int32_t cap_items;
    int32_t *rank_pos;   /* per rank: its position, -1 when idle */
    int32_t cap_ranks;
} ofob_self;

/* Creates an instance with empty scratch. */
static int ofob_create(const loom_host_api *host, loom_ctx *ctx,
                       void *plugin_state, void **self, loom_error *err)
{
    (void)plugin_state;
    ofob_self *s = host->alloc(sizeof *s);
    if (!s)
        return host->error(err, LOOM_ENOMEM, "1f1b: out of memory");
    memset(s, 0, sizeof *s);
    s->host = host;
    s->ctx = ctx;
    *self = s;
    return LOOM_OK;
}

/* Releases an instance and its scratch. */
static void ofob_destroy(void *self)
{
    ofob_self *s = self;
    if (!s)
        return;
    s->host->free(s->items);
    s->host->free(s->sorted);
    s->host->free(s->keys);
    s->host->free(s->ids);
    s->host->free(s->rank_pos);
    s->host->free(s);
}

/* Sorts the n items (made in ascending id order) into s->sorted by rank,
 * phase, priority (higher first), microbatch, sub, id: stable passes from
 * the least significant key up, so ties keep id order. */
static void ofob_sort(ofob_self *s, int32_t n)
{
    uint32_t *key = s->keys, *key2 = s->keys + n;
    int32_t *id = s->ids, *id2 = s->ids + n;
    for (int32_t i = 0; i < n; i++)
        id[i] = i;
    for (int pass = 0; pass < 4; pass++) {
        for (int32_t i = 0; i < n; i++) {
            const ofob_item *it = &s->items[id[i]];
            key[i] = pass == 0   ? (uint32_t)it->sub ^ 0x80000000u
                     : pass == 1 ? (uint32_t)it->mb ^ 0x80000000u
                     : pass == 2 ? loom_ls_prio_key(it->prio)
                                 : (uint32_t)it->rank * 2u + (uint32_t)it->back;
        }
        int32_t *sorted = loom_ls_radix(key, id, key2, id2, n);
        if (sorted != id) {
            id2 = id;
            id = sorted;
        }
    }
    for (int32_t i = 0; i < n; i++)
        s->sorted[i] = s->items[id[i]];
}

/* Grows the scratch arrays for n_stages stages and n_ranks ranks. */
static int ofob_reserve(ofob_self *s, int32_t n_stages, int32_t n_ranks,
                        loom_error *err)
{
    if (n_stages > s->cap_items) {
        size_t n = (size_t)n_stages;
        void *p = s->host->realloc(s->items, n * sizeof *s->items);
        if (p)
            s->items = p;
        void *q = s->host->realloc(s->sorted, n * sizeof *s->sorted);
        if (q)
            s->sorted = q;
        void *k = s->host->realloc(s->keys, 2 * n * sizeof *s->keys);
        if (k)
            s->keys = k;
        void *d = s->host->realloc(s->ids, 2 * n * sizeof *s->ids);
        if (d)
            s->ids = d;
        if (!p || !q || !k || !d)
            return s->host->error(err, LOOM_ENOMEM, "1f1b: out of memory");
        s->cap_items = n_stages;
    }
    if (n_ranks > s->cap_ranks) {
        void *p = s->host->realloc(s->rank_pos,
                                   (size_t)n_ranks * sizeof *s->rank_pos);
        if (!p)
            return s->host->error(err, LOOM_ENOMEM, "1f1b: out of memory");
        s->rank_pos = p;
        s->cap_ranks = n_ranks;
    }
    return LOOM_OK;
}

/* Checks that the graph is one flow with one position per rank; records
 * each rank's position and returns the number of positions. */
static int ofob_check(ofob_self *s, const loom_stage_graph *g, int32_t *n_pos,
                      loom_error *err)
{
    const loom_host_api *host = s->host;
    for (int32_t r = 0; r < g->n_ranks; r++)
        s->rank_pos[r] = -1;
    int32_t np = 0, n_i = 0, n_w = 0;
    for (int32_t v = 0; v < g->n_stages; v++) {
        int32_t r = g->rank[v];
        n_i += g->kind[v] == LOOM_STAGE_I;
        n_w += g->kind[v] == LOOM_STAGE_W;
        if (r < 0 || r >= g->n_ranks || g->kind[v] > LOOM_STAGE_W)
            return host->error(err, LOOM_EINVAL,
                               "1f1b: stage %d: rank %d (of %d) or kind %d "
                               "out of range", v, r, g->n_ranks, g->kind[v]);
        if (g->flow[v] != 0)
            return host->error(err, LOOM_EINVAL,
                               "1f1b: needs a single-flow graph, found stage "
                               "%d in flow %d (use gpipe or a multi-flow "
                               "interleaver)", v, g->flow[v]);
        if (g->chunk[v] != 0 ||
            (s->rank_pos[r] >= 0 && s->rank_pos[r] != g->position[v]))
            return host->error(err, LOOM_EINVAL,
                               "1f1b: needs one position per rank, found "
                               "rank %d holding positions %d and %d (use "
                               "interleaved-1f1b for virtual stages)",
                               r, s->rank_pos[r] >= 0 ? s->rank_pos[r] : 0,
                               g->position[v]);
        s->rank_pos[r] = g->position[v];
        if (g->position[v] + 1 > np)
            np = g->position[v] + 1;
        if (g->kind[v] == LOOM_STAGE_I) {
            int32_t w = g->pair_weight[g->pair[v]];
            if (w < 0 || w >= g->n_stages || g->kind[w] != LOOM_STAGE_W ||
                g->rank[w] != r)
                return host->error(err, LOOM_EINVAL,
                                   "1f1b: I stage %d has no W stage on its "
                                   "rank %d", v, r);
        }
    }
    if (n_i != n_w)
        return host->error(err, LOOM_EINVAL,
                           "1f1b: %d I stages but %d W stages", n_i, n_w);
    *n_pos = np;
    return LOOM_OK;
}

/* Appends a backward slot (B, or I then its W) to the order at *k. */
static void ofob_emit_back(const loom_stage_graph *g, int32_t v,
                           loom_schedule *out, int32_t *k)
{
    out->order[(*k)++] = v;
    if (g->kind[v] == LOOM_STAGE_I)
        out->order[(*k)++] = g->pair_weight[g->pair[v]];
}

/* Writes the 1F1B order of every rank into `out`. */
static int ofob_interleave(void *self, const loom_stage_graph *g,
                           const float *priorities, loom_schedule *out,
                           loom_error *err)
{
    ofob_self *s = self;
    int32_t n_pos = 0;
    int rc = ofob_reserve(s, g->n_stages, g->n_ranks, err);
    if (rc == LOOM_OK)
        rc = ofob_check(s, g, &n_pos, err);
    if (rc != LOOM_OK)
        return rc;

    int32_t n = 0;
    for (int32_t v = 0; v < g->n_stages; v++) {
        if (g->kind[v] == LOOM_STAGE_W)
            continue;
        ofob_item *it = &s->items[n++];
        it->rank = g->rank[v];
        it->back = g->kind[v] != LOOM_STAGE_F;
        it->prio = priorities ? priorities[g->group[v]] : -(float)g->group[v];
        if (it->prio != it->prio)
            it->prio = -1e30f; /* NaN sorts last */
        it->mb = g->microbatch[v];
        it->sub = g->sub[v];
        it->id = v;
    }
    ofob_sort(s, n);
    const ofob_item *sorted = s->sorted;

    out->n_ranks = g->n_ranks;
    int32_t k = 0, i = 0;
    for (int32_t r = 0; r < g->n_ranks; r++) {
        out->rank_off[r] = k;
        int32_t a = i;
        while (i < n && sorted[i].rank == r && !sorted[i].back)
            i++;
        int32_t units = i - a, b = i;
        while (i < n && sorted[i].rank == r)
            i++;
        if (i - b != units)
            return s->host->error(err, LOOM_EINVAL,
                                  "1f1b: rank %d has %d forward and %d "
                                  "backward stages", r, units, i - b);
        int32_t w = n_pos - s->rank_pos[r] - 1;
        if (s->rank_pos[r] < 0 || w > units)
            w = units;
        for (int32_t j = 0; j < w; j++)
            out->order[k++] = sorted[a + j].id;
        for (int32_t j = 0; j < units - w; j++) {
            out->order[k++] = sorted[a + w + j].id;
            ofob_emit_back(g, sorted[b + j].id, out, &k);
        }
        for (int32_t j = units - w; j < units; j++)
            ofob_emit_back(g, sorted[b + j].id, out, &k);
    }
    out->rank_off[g->n_ranks] = k;
    out->n_stages = k;
    if (k != g->n_stages)
        return s->host->error(err, LOOM_EINVAL,
                              "1f1b: placed %d of %d stages (W stages "
                              "without an I stage?)", k, g->n_stages);
    return LOOM_OK;
}

static const loom_interleaver_vtable ofob_vtable = {
    { sizeof(loom_interleaver_vtable), LOOM_INTERLEAVER_VERSION },
    ofob_create,
    ofob_destroy,
    ofob_interleave,
    NULL,
};

/* Returns the interleaver vtable for role "interleaver", else NULL. */
static const loom_role_header *ofob_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_INTERLEAVER) == 0)
        return &ofob_vtable.header;
    return NULL;
}

static const loom_plugin_info ofob_info = {
    LOOM_PLUGIN_INFO_HEADER,
    "org.loom.1f1b",
    "1.0.0",
    NULL,
    NULL,
    ofob_role,
    NULL, /* no params */
};

LOOM_PLUGIN_DEFINE(1f1b, ofob_info);
