/* graph_builder.c - stage graphs made by hand: stages, edges, groups,
 * group precedence and layer entries collected in the order given, then
 * laid out as the compressed rows of a loom_stage_graph and checked (see
 * <loom/kits/graph.h>). */
#include <stdlib.h>
#include <string.h>
#include <loom/kits/graph.h>
#include <loom/common.h>

typedef struct gb_edge {
    int32_t from, to;
    double p2p_ms;
} gb_edge;

typedef struct gb_group {
    int32_t flow, microbatch;
    int declared;
} gb_group;

typedef struct gb_gpred {
    int32_t group, pred;
} gb_gpred;

typedef struct gb_entry {
    int32_t pair;
    loom_policy_option options[LOOM_POLICY_COUNT];
} gb_entry;

struct loom_graph_builder {
    int32_t n_ranks;
    loom_error failed; /* the first failed call: finish reports it */
    loom_graph_stage *stages;
    int32_t n_stages, cap_stages;
    gb_edge *edges;
    int32_t n_edges, cap_edges;
    gb_group *groups;
    int32_t n_groups, cap_groups; /* declared: ids below n_groups */
    gb_gpred *gpreds;
    int32_t n_gpreds, cap_gpreds;
    gb_entry *entries;
    int32_t n_entries, cap_entries;
};

/* Records the first failure of an add / set call for finish. */
static int fail(loom_graph_builder *b, int code, const char *what, int32_t id)
{
    if (b->failed.code == LOOM_OK) {
        if (code == LOOM_ENOMEM)
            loom_error_format(&b->failed, code, "graph builder: out of memory");
        else
            loom_error_format(&b->failed, code, "graph builder: %s %d, expected >= 0", what, id);
    }
    return code;
}

/* Makes room for one more element in *arr (count n, capacity *cap). */
static int grow(void **arr, int32_t n, int32_t *cap, size_t size)
{
    if (n < *cap)
        return 1;
    if (*cap > INT32_MAX / 2)
        return 0;
    int32_t c = *cap ? 2 * *cap : 16;
    void *p = realloc(*arr, (size_t)c * size);
    if (!p)
        return 0;
    *arr = p;
    *cap = c;
    return 1;
}

loom_graph_builder *loom_graph_builder_new(int32_t n_ranks)
{
    loom_graph_builder *b = calloc(1, sizeof *b);
    if (b)
        b->n_ranks = n_ranks;
    return b;
}

void loom_graph_builder_free(loom_graph_builder *b)
{
    if (!b)
        return;
    free(b->stages);
    free(b->edges);
    free(b->groups);
    free(b->gpreds);
    free(b->entries);
    free(b);
}

int32_t loom_graph_builder_add_stage(loom_graph_builder *b,
                                     const loom_graph_stage *stage)
{
    if (!grow((void **)&b->stages, b->n_stages, &b->cap_stages, sizeof *b->stages)) {
        fail(b, LOOM_ENOMEM, NULL, 0);
        return -1;
    }
    b->stages[b->n_stages] = *stage;
    return b->n_stages++;
}

int loom_graph_builder_add_edge(loom_graph_builder *b, int32_t from,
                                int32_t to, double p2p_ms)
{
    if (!grow((void **)&b->edges, b->n_edges, &b->cap_edges, sizeof *b->edges))
        return fail(b, LOOM_ENOMEM, NULL, 0);
    gb_edge *e = &b->edges[b->n_edges++];
    e->from = from;
    e->to = to;
    e->p2p_ms = p2p_ms;
    return LOOM_OK;
}

int loom_graph_builder_set_group(loom_graph_builder *b, int32_t group,
                                 int32_t flow, int32_t microbatch)
{
    if (group < 0)
        return fail(b, LOOM_EINVAL, "group", group);
    while (b->n_groups <= group) {
        if (!grow((void **)&b->groups, b->n_groups, &b->cap_groups, sizeof *b->groups))
            return fail(b, LOOM_ENOMEM, NULL, 0);
        memset(&b->groups[b->n_groups++], 0, sizeof *b->groups);
    }
    b->groups[group].flow = flow;
    b->groups[group].microbatch = microbatch;
    b->groups[group].declared = 1;
    return LOOM_OK;
}

int loom_graph_builder_add_group_pred(loom_graph_builder *b, int32_t group,
                                      int32_t pred)
{
    if (!grow((void **)&b->gpreds, b->n_gpreds, &b->cap_gpreds, sizeof *b->gpreds))
        return fail(b, LOOM_ENOMEM, NULL, 0);
    b->gpreds[b->n_gpreds].group = group;
    b->gpreds[b->n_gpreds++].pred = pred;
    return LOOM_OK;
}

int loom_graph_builder_add_entry(loom_graph_builder *b, int32_t pair,
                                 const loom_policy_option *options)
{
    if (!grow((void **)&b->entries, b->n_entries, &b->cap_entries, sizeof *b->entries))
        return fail(b, LOOM_ENOMEM, NULL, 0);
    gb_entry *e = &b->entries[b->n_entries++];
    e->pair = pair;
    memcpy(e->options, options, sizeof e->options);
    return LOOM_OK;
}

/* The counts of the graph and the first problem with the input. */
static int measure(const loom_graph_builder *b, int32_t *n_pairs,
                   int32_t *n_groups, loom_error *err)
{
    *n_pairs = 0;
    *n_groups = b->n_groups;
    for (int32_t s = 0; s < b->n_stages; s++) {
        const loom_graph_stage *st = &b->stages[s];
        if (st->kind < LOOM_STAGE_F || st->kind > LOOM_STAGE_W)
            return loom_error_format(err, LOOM_EINVAL,
                                  "graph builder: stage %d has kind %d, expected 0..3 "
                                  "(enum loom_stage_kind)", s, st->kind);
        if (st->pair < 0)
            return loom_error_format(err, LOOM_EINVAL,
                                  "graph builder: stage %d has pair %d, expected >= 0",
                                  s, st->pair);
        if (st->pair >= *n_pairs)
            *n_pairs = st->pair + 1;
        if (st->group >= *n_groups)
            *n_groups = st->group + 1;
    }
    for (int32_t e = 0; e < b->n_edges; e++) {
        const gb_edge *ed = &b->edges[e];
        if (ed->from < 0 || ed->from >= b->n_stages || ed->to < 0 || ed->to >= b->n_stages)
            return loom_error_format(err, LOOM_EINVAL,
                                  "graph builder: edge %d (%d -> %d) names a missing stage "
                                  "(%d stages)", e, ed->from, ed->to, b->n_stages);
    }
    for (int32_t k = 0; k < b->n_gpreds; k++) {
        const gb_gpred *gp = &b->gpreds[k];
        if (gp->group < 0 || gp->group >= *n_groups || gp->pred < 0 ||
            gp->pred >= *n_groups || gp->pred == gp->group)
            return loom_error_format(err, LOOM_EINVAL,
                                  "graph builder: group precedence %d -> %d names a missing "
                                  "group or one group twice (%d groups)",
                                  gp->pred, gp->group, *n_groups);
    }
    for (int32_t k = 0; k < b->n_entries; k++)
        if (b->entries[k].pair < 0 || b->entries[k].pair >= *n_pairs)
            return loom_error_format(err, LOOM_EINVAL,
                                  "graph builder: layer entry %d is for pair %d, which has "
                                  "no stages (%d pairs)", k, b->entries[k].pair, *n_pairs);
    return LOOM_OK;
}

/* pair_forward / pair_backward / pair_weight from the stages' pairs. */
static int fill_pairs(loom_stage_graph *g, loom_error *err)
{
    for (int32_t p = 0; p < g->n_pairs; p++)
        g->pair_forward[p] = g->pair_backward[p] = g->pair_weight[p] = -1;
    static const char *const names[] = {"forward", "backward", "backward", "weight"};
    for (int32_t s = 0; s < g->n_stages; s++) {
        int32_t p = g->pair[s];
        int32_t *slot = g->kind[s] == LOOM_STAGE_F   ? &g->pair_forward[p]
                        : g->kind[s] == LOOM_STAGE_W ? &g->pair_weight[p]
                                                     : &g->pair_backward[p];
        if (*slot >= 0)
            return loom_error_format(err, LOOM_EINVAL,
                                  "graph builder: pair %d has two %s stages (%d and %d)", p,
                                  names[g->kind[s]], *slot, s);
        *slot = s;
    }
    for (int32_t p = 0; p < g->n_pairs; p++) {
        if (g->pair_forward[p] < 0)
            return loom_error_format(err, LOOM_EINVAL,
                                  "graph builder: pair %d has no forward stage", p);
        if (g->pair_weight[p] >= 0 && g->pair_backward[p] < 0)
            return loom_error_format(err, LOOM_EINVAL,
                                  "graph builder: pair %d has a W stage (%d) but no I stage",
                                  p, g->pair_weight[p]);
    }
    return LOOM_OK;
}

int loom_graph_builder_finish(const loom_graph_builder *b,
                              loom_stage_graph **out, loom_error *err)
{
    *out = NULL;
    if (b->failed.code != LOOM_OK)
        return loom_error_format(err, b->failed.code, "%s", b->failed.message);
    int32_t n_pairs = 0, n_groups = 0;
    int rc = measure(b, &n_pairs, &n_groups, err);
    if (rc != LOOM_OK)
        return rc;
    int32_t S = b->n_stages;
    loom_stage_graph *g = loom_graph_alloc(S, b->n_edges, b->n_ranks, n_groups, n_pairs,
                                           b->n_entries);
    int32_t *first = calloc((size_t)n_groups + 1, sizeof *first); /* group's first stage */
    if (!g || !first) {
        loom_graph_free(g);
        free(first);
        return loom_error_format(err, LOOM_ENOMEM, "graph builder: out of memory");
    }
    for (int32_t k = 0; k < n_groups; k++)
        first[k] = -1;
    int32_t n_mb = 0;
    for (int32_t s = 0; s < S; s++) {
        const loom_graph_stage *st = &b->stages[s];
        g->rank[s] = st->rank;
        g->kind[s] = (uint8_t)st->kind;
        g->module[s] = st->module;
        g->flow[s] = st->flow;
        g->position[s] = st->position;
        g->chunk[s] = st->chunk;
        g->microbatch[s] = st->microbatch;
        g->sub[s] = st->sub;
        g->group[s] = st->group;
        g->pair[s] = st->pair;
        g->duration_ms[s] = st->duration_ms;
        g->mem_delta_bytes[s] = st->mem_delta_bytes;
        g->flops[s] = st->flops;
        if (st->microbatch >= n_mb)
            n_mb = st->microbatch + 1;
        if (st->group >= 0 && first[st->group] < 0)
            first[st->group] = s;
    }
    /* predecessor rows: counted, then placed in the order added */
    for (int32_t e = 0; e < b->n_edges; e++)
        g->pred_off[b->edges[e].to + 1]++;
    for (int32_t s = 0; s < S; s++)
        g->pred_off[s + 1] += g->pred_off[s];
    int32_t *fill = calloc((size_t)S + 1, sizeof *fill);
    if (!fill) {
        rc = loom_error_format(err, LOOM_ENOMEM, "graph builder: out of memory");
        goto bad;
    }
    for (int32_t e = 0; e < b->n_edges; e++) {
        int32_t to = b->edges[e].to, at = g->pred_off[to] + fill[to]++;
        g->pred[at] = b->edges[e].from;
        g->pred_p2p_ms[at] = b->edges[e].p2p_ms;
    }
    free(fill);
    /* groups and their precedence rows */
    for (int32_t k = 0; k < n_groups; k++) {
        if (k < b->n_groups && b->groups[k].declared) {
            g->group_flow[k] = b->groups[k].flow;
            g->group_microbatch[k] = b->groups[k].microbatch;
        } else if (first[k] >= 0) {
            g->group_flow[k] = g->flow[first[k]];
            g->group_microbatch[k] = g->microbatch[first[k]];
        }
        if (g->group_microbatch[k] >= n_mb)
            n_mb = g->group_microbatch[k] + 1;
    }
    g->n_microbatches = n_mb;
    if (b->n_gpreds > 0) {
        g->group_pred = malloc((size_t)b->n_gpreds * sizeof *g->group_pred);
        if (!g->group_pred) {
            rc = loom_error_format(err, LOOM_ENOMEM, "graph builder: out of memory");
            goto bad;
        }
        for (int32_t i = 0; i < b->n_gpreds; i++)
            g->group_pred_off[b->gpreds[i].group + 1]++;
        for (int32_t k = 0; k < n_groups; k++)
            g->group_pred_off[k + 1] += g->group_pred_off[k];
        memset(first, 0, (size_t)n_groups * sizeof *first); /* now: rows filled */
        for (int32_t i = 0; i < b->n_gpreds; i++) {
            int32_t k = b->gpreds[i].group;
            g->group_pred[g->group_pred_off[k] + first[k]++] = b->gpreds[i].pred;
        }
    }
    /* layer entries, pair by pair in the order added */
    for (int32_t k = 0; k < b->n_entries; k++)
        g->pair_layer_off[b->entries[k].pair + 1]++;
    for (int32_t p = 0; p < n_pairs; p++)
        g->pair_layer_off[p + 1] += g->pair_layer_off[p];
    int32_t *used = calloc((size_t)n_pairs + 1, sizeof *used);
    if (!used) {
        rc = loom_error_format(err, LOOM_ENOMEM, "graph builder: out of memory");
        goto bad;
    }
    for (int32_t k = 0; k < b->n_entries; k++) {
        int32_t p = b->entries[k].pair, at = g->pair_layer_off[p] + used[p]++;
        memcpy(&g->layer_options[(size_t)at * LOOM_POLICY_COUNT], b->entries[k].options,
               sizeof b->entries[k].options);
    }
    free(used);
    rc = fill_pairs(g, err);
    if (rc == LOOM_OK)
        rc = loom_graph_check(g, err);
    if (rc == LOOM_OK)
        rc = loom_graph_check_acyclic(g, err);
    if (rc != LOOM_OK)
        goto bad;
    free(first);
    *out = g;
    return LOOM_OK;
bad:
    free(first);
    loom_graph_free(g);
    return rc;
}
