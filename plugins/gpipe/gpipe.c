/*
 * gpipe.c - the GPipe interleaver: on every rank, all forward stages first,
 * then all backward stages.
 *
 * Forwards are ordered by (flow, position, microbatch, sub), backwards by
 * (flow descending, position descending, microbatch, sub); a split backward
 * runs its I stage and then its W stage back to back. Flows are ordered by
 * their depth in the flow DAG (inputs before consumers), then by index, so
 * the order is a topological order of the graph for any flow layout and
 * never deadlocks. Priorities are ignored: GPipe is first-microbatch-first.
 */
#include <stdlib.h>
#include <string.h>
#include <loom/loom.h>

/* One stage to sort: rank, phase, then the GPipe keys; `id` the stage. */
typedef struct gpipe_item {
    int32_t key[7];
    int32_t id;
} gpipe_item;

typedef struct gpipe_self {
    const loom_host_api *host;
    loom_ctx *ctx;
    gpipe_item *items;     /* cap_items entries, reused across calls */
    int32_t cap_items;
    int32_t *level;        /* per flow depth in the flow DAG */
    int32_t cap_level;
} gpipe_self;

/* Creates an instance with empty scratch. */
static int gpipe_create(const loom_host_api *host, loom_ctx *ctx,
                        void *plugin_state, void **self, loom_error *err)
{
    (void)plugin_state;
    gpipe_self *s = host->alloc(sizeof *s);
    if (!s)
        return host->error(err, LOOM_ENOMEM, "gpipe: out of memory");
    memset(s, 0, sizeof *s);
    s->host = host;
    s->ctx = ctx;
    *self = s;
    return LOOM_OK;
}

/* Releases an instance and its scratch. */
static void gpipe_destroy(void *self)
{
    gpipe_self *s = self;
    if (!s)
        return;
    s->host->free(s->items);
    s->host->free(s->level);
    s->host->free(s);
}

/* Orders two items by their keys, lexicographically. */
static int gpipe_cmp(const void *a, const void *b)
{
    const gpipe_item *x = a, *y = b;
    for (int i = 0; i < 7; i++)
        if (x->key[i] != y->key[i])
            return x->key[i] < y->key[i] ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* Grows the scratch arrays to n_stages items and n_flows levels. */
static int gpipe_reserve(gpipe_self *s, int32_t n_stages, int32_t n_flows,
                         loom_error *err)
{
    if (n_stages > s->cap_items) {
        void *p = s->host->realloc(s->items, (size_t)n_stages * sizeof *s->items);
        if (!p)
            return s->host->error(err, LOOM_ENOMEM, "gpipe: out of memory");
        s->items = p;
        s->cap_items = n_stages;
    }
    if (n_flows > s->cap_level) {
        void *p = s->host->realloc(s->level, (size_t)n_flows * sizeof *s->level);
        if (!p)
            return s->host->error(err, LOOM_ENOMEM, "gpipe: out of memory");
        s->level = p;
        s->cap_level = n_flows;
    }
    return LOOM_OK;
}

/* Depth of every flow in the DAG formed by forward edges between flows
 * (longest path from a flow without inputs). Fails on a cycle. */
static int gpipe_flow_levels(gpipe_self *s, const loom_stage_graph *g,
                             int32_t n_flows, loom_error *err)
{
    memset(s->level, 0, (size_t)n_flows * sizeof *s->level);
    for (int32_t pass = 0; pass <= n_flows; pass++) {
        int changed = 0;
        for (int32_t v = 0; v < g->n_stages; v++) {
            if (g->kind[v] != LOOM_STAGE_F)
                continue;
            for (int32_t e = g->pred_off[v]; e < g->pred_off[v + 1]; e++) {
                int32_t u = g->pred[e];
                if (g->kind[u] != LOOM_STAGE_F || g->flow[u] == g->flow[v])
                    continue;
                if (s->level[g->flow[v]] < s->level[g->flow[u]] + 1) {
                    s->level[g->flow[v]] = s->level[g->flow[u]] + 1;
                    changed = 1;
                }
            }
        }
        if (!changed)
            return LOOM_OK;
    }
    return s->host->error(err, LOOM_EINVAL,
                          "gpipe: the flows' forward edges form a cycle");
}

/* Checks the per-stage fields the order depends on; counts flows. */
static int gpipe_check(gpipe_self *s, const loom_stage_graph *g,
                       int32_t *n_flows, loom_error *err)
{
    int32_t nf = 0, n_i = 0, n_w = 0;
    for (int32_t v = 0; v < g->n_stages; v++) {
        n_i += g->kind[v] == LOOM_STAGE_I;
        n_w += g->kind[v] == LOOM_STAGE_W;
        if (g->rank[v] < 0 || g->rank[v] >= g->n_ranks || g->flow[v] < 0 ||
            g->kind[v] > LOOM_STAGE_W)
            return s->host->error(err, LOOM_EINVAL,
                                  "gpipe: stage %d: rank %d (of %d), flow %d, "
                                  "kind %d out of range",
                                  v, g->rank[v], g->n_ranks, g->flow[v],
                                  g->kind[v]);
        if (g->kind[v] == LOOM_STAGE_I) {
            int32_t w = g->pair_weight[g->pair[v]];
            if (w < 0 || w >= g->n_stages || g->kind[w] != LOOM_STAGE_W ||
                g->rank[w] != g->rank[v])
                return s->host->error(err, LOOM_EINVAL,
                                      "gpipe: I stage %d has no W stage on "
                                      "its rank %d", v, g->rank[v]);
        }
        if (g->flow[v] + 1 > nf)
            nf = g->flow[v] + 1;
    }
    if (n_i != n_w)
        return s->host->error(err, LOOM_EINVAL,
                              "gpipe: %d I stages but %d W stages", n_i, n_w);
    *n_flows = nf;
    return LOOM_OK;
}

/* Writes the GPipe order of every rank into `out`. */
static int gpipe_interleave(void *self, const loom_stage_graph *g,
                            const float *priorities, loom_schedule *out,
                            loom_error *err)
{
    gpipe_self *s = self;
    (void)priorities;
    int32_t n_flows = 0;
    int rc = gpipe_check(s, g, &n_flows, err);
    if (rc == LOOM_OK)
        rc = gpipe_reserve(s, g->n_stages, n_flows > 0 ? n_flows : 1, err);
    if (rc == LOOM_OK)
        rc = gpipe_flow_levels(s, g, n_flows, err);
    if (rc != LOOM_OK)
        return rc;

    int32_t n = 0;
    for (int32_t v = 0; v < g->n_stages; v++) {
        if (g->kind[v] == LOOM_STAGE_W)
            continue; /* emitted right after its I */
        gpipe_item *it = &s->items[n++];
        int32_t f = g->flow[v];
        int back = g->kind[v] != LOOM_STAGE_F;
        int32_t sign = back ? -1 : 1;
        it->key[0] = g->rank[v];
        it->key[1] = back;
        it->key[2] = sign * s->level[f];
        it->key[3] = sign * f;
        it->key[4] = sign * g->position[v];
        it->key[5] = g->microbatch[v];
        it->key[6] = g->sub[v];
        it->id = v;
    }
    qsort(s->items, (size_t)n, sizeof *s->items, gpipe_cmp);

    out->n_ranks = g->n_ranks;
    int32_t k = 0, i = 0;
    for (int32_t r = 0; r < g->n_ranks; r++) {
        out->rank_off[r] = k;
        for (; i < n && s->items[i].key[0] == r; i++) {
            int32_t v = s->items[i].id;
            out->order[k++] = v;
            if (g->kind[v] == LOOM_STAGE_I)
                out->order[k++] = g->pair_weight[g->pair[v]];
        }
    }
    out->rank_off[g->n_ranks] = k;
    out->n_stages = k;
    if (k != g->n_stages)
        return s->host->error(err, LOOM_EINVAL,
                              "gpipe: placed %d of %d stages (W stages "
                              "without an I stage?)", k, g->n_stages);
    return LOOM_OK;
}

static const loom_interleaver_vtable gpipe_vtable = {
    { sizeof(loom_interleaver_vtable), LOOM_INTERLEAVER_VERSION },
    gpipe_create,
    gpipe_destroy,
    gpipe_interleave,
    NULL,
};

/* Returns the interleaver vtable for role "interleaver", else NULL. */
static const loom_role_header *gpipe_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_INTERLEAVER) == 0)
        return &gpipe_vtable.header;
    return NULL;
}

static const loom_plugin_info gpipe_info = {
    LOOM_PLUGIN_INFO_HEADER,
    "org.loom.gpipe",
    "1.0.0",
    NULL,
    NULL,
    gpipe_role,
    NULL, /* no params */
};

LOOM_PLUGIN_DEFINE(gpipe, gpipe_info);
