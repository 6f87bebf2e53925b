/* candidates.c - the host-owned candidate set partitioners fill: each
 * partition's arrays are allocated with capacities large enough for the
 * problem, so plugins write counts and elements and never allocate. */
#include <stdlib.h>
#include <string.h>
#include "engine_api.h"

typedef struct cand_private {
    int32_t cap_flows, cap_positions, cap_spans, cap_microbatches;
    int32_t n_samples, n_modules, n_ranks, tp;
    int32_t cap_items;
} cand_private;

void loom_partition_free(loom_partition *p)
{
    if (!p)
        return;
    free(p->flows);
    free(p->positions);
    free(p->spans);
    free(p->sample_mb);
    free(p->subs);
    free(p->cp_attention_scale);
    free(p->layouts);
    free(p);
}

static loom_partition *partition_alloc(const cand_private *c)
{
    loom_partition *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->struct_size = sizeof *p;
    p->cap_flows = c->cap_flows;
    p->cap_positions = c->cap_positions;
    p->cap_spans = c->cap_spans;
    p->cap_microbatches = c->cap_microbatches;
    p->n_samples = c->n_samples;
    p->n_modules = c->n_modules;
    p->n_ranks = c->n_ranks;
    p->tp = c->tp;
    p->flows = calloc((size_t)c->cap_flows, sizeof(loom_flow));
    p->positions = calloc((size_t)c->cap_positions, sizeof(loom_position));
    p->spans = calloc((size_t)c->cap_spans, sizeof(loom_span));
    size_t nmb = (size_t)c->n_modules * (size_t)c->n_samples;
    p->sample_mb = malloc((nmb ? nmb : 1) * sizeof(int32_t));
    p->subs = malloc((size_t)c->cap_flows * (size_t)c->cap_microbatches * sizeof(int32_t));
    p->cp_attention_scale = malloc((size_t)(c->cap_microbatches > 0 ? c->cap_microbatches : 1) *
                                   sizeof(double));
    p->cap_layouts = c->n_modules;
    p->layouts = calloc((size_t)(c->n_modules > 0 ? c->n_modules : 1), sizeof(loom_module_layout));
    if (!p->flows || !p->positions || !p->spans || !p->sample_mb || !p->subs ||
        !p->cp_attention_scale || !p->layouts) {
        loom_partition_free(p);
        return NULL;
    }
    for (size_t i = 0; i < nmb; i++)
        p->sample_mb[i] = -1;
    for (size_t i = 0; i < (size_t)c->cap_flows * (size_t)c->cap_microbatches; i++)
        p->subs[i] = 1;
    for (int32_t i = 0; i < c->cap_microbatches; i++)
        p->cp_attention_scale[i] = 1.0;
    return p;
}

loom_partition *loom_partition_clone(const loom_partition *src)
{
    cand_private c = {src->cap_flows, src->cap_positions, src->cap_spans,
                      src->cap_microbatches, src->n_samples, src->n_modules,
                      src->n_ranks, src->tp, 0};
    loom_partition *p = partition_alloc(&c);
    if (!p)
        return NULL;
    p->n_flows = src->n_flows;
    p->n_positions = src->n_positions;
    p->n_spans = src->n_spans;
    p->n_microbatches = src->n_microbatches;
    p->split_backward = src->split_backward;
    memcpy(p->label, src->label, sizeof p->label);
    memcpy(p->flows, src->flows, (size_t)src->cap_flows * sizeof(loom_flow));
    memcpy(p->positions, src->positions, (size_t)src->cap_positions * sizeof(loom_position));
    memcpy(p->spans, src->spans, (size_t)src->cap_spans * sizeof(loom_span));
    memcpy(p->sample_mb, src->sample_mb,
           (size_t)src->n_modules * (size_t)src->n_samples * sizeof(int32_t));
    memcpy(p->subs, src->subs,
           (size_t)src->cap_flows * (size_t)src->cap_microbatches * sizeof(int32_t));
    if (LOOM_STRUCT_HAS(src, loom_partition, cp_attention_scale) && src->cp_attention_scale)
        memcpy(p->cp_attention_scale, src->cp_attention_scale,
               (size_t)src->cap_microbatches * sizeof(double));
    if (LOOM_STRUCT_HAS(src, loom_partition, layouts) && src->layouts && src->n_layouts > 0 &&
        src->n_layouts <= p->cap_layouts) {
        memcpy(p->layouts, src->layouts, (size_t)src->n_layouts * sizeof(loom_module_layout));
        p->n_layouts = src->n_layouts;
    }
    return p;
}

/* Appends p to the set, growing the item array. */
static int push(loom_candidates *set, loom_partition *p, loom_error *err)
{
    cand_private *c = set->host_private;
    if (set->n == c->cap_items) {
        int32_t cap = c->cap_items ? c->cap_items * 2 : 8;
        if (cap > 4096)
            return loom_set_error(err, LOOM_EINVAL,
                                  "candidate set: more than 4096 candidates");
        loom_partition **items = realloc(set->items, (size_t)cap * sizeof *items);
        if (!items)
            return loom_set_error(err, LOOM_ENOMEM, "candidate set: out of memory");
        set->items = items;
        c->cap_items = cap;
    }
    set->items[set->n++] = p;
    return LOOM_OK;
}

static int cand_add_sized(loom_candidates *set, int32_t cap_microbatches, loom_partition **out,
                          loom_error *err)
{
    cand_private c = *(const cand_private *)set->host_private;
    if (cap_microbatches < 1 || cap_microbatches > c.cap_microbatches)
        return loom_set_error(err, LOOM_EINVAL,
                              "candidate set: room for %d microbatches asked, expected 1 to %d",
                              cap_microbatches, c.cap_microbatches);
    c.cap_microbatches = cap_microbatches;
    loom_partition *p = partition_alloc(&c);
    if (!p)
        return loom_set_error(err, LOOM_ENOMEM, "candidate set: out of memory");
    int rc = push(set, p, err);
    if (rc != LOOM_OK) {
        loom_partition_free(p);
        return rc;
    }
    *out = p;
    return LOOM_OK;
}

static int cand_add(loom_candidates *set, loom_partition **out, loom_error *err)
{
    const cand_private *c = set->host_private;
    return cand_add_sized(set, c->cap_microbatches, out, err);
}

static int cand_clone(loom_candidates *set, int32_t index, loom_partition **out,
                      loom_error *err)
{
    if (index < 0 || index >= set->n)
        return loom_set_error(err, LOOM_EINVAL, "candidate set: no candidate %d", index);
    loom_partition *p = loom_partition_clone(set->items[index]);
    if (!p)
        return loom_set_error(err, LOOM_ENOMEM, "candidate set: out of memory");
    int rc = push(set, p, err);
    if (rc != LOOM_OK) {
        loom_partition_free(p);
        return rc;
    }
    *out = p;
    return LOOM_OK;
}

static void cand_remove(loom_candidates *set, int32_t index)
{
    if (index < 0 || index >= set->n)
        return;
    loom_partition_free(set->items[index]);
    memmove(&set->items[index], &set->items[index + 1],
            (size_t)(set->n - index - 1) * sizeof *set->items);
    set->n--;
}

loom_candidates *loom_candidates_new(const loom_problem *problem,
                                     const loom_iteration *it)
{
    loom_candidates *set = calloc(1, sizeof *set);
    cand_private *c = calloc(1, sizeof *c);
    if (!set || !c) {
        free(set);
        free(c);
        return NULL;
    }
    int32_t layers = 0, modules = problem->model ? problem->model->n_modules : 0;
    for (int32_t m = 0; m < modules; m++)
        layers += problem->model->modules[m].n_layers;
    c->n_modules = modules;
    c->n_samples = it ? it->n_samples : 0;
    c->cap_flows = modules + 8;
    c->cap_positions = layers + 8;
    c->cap_spans = layers + modules + 8;
    int32_t mbs = problem->parallel.microbatches;
    c->cap_microbatches = (c->n_samples > mbs ? c->n_samples : mbs) + 1;
    c->n_ranks = problem->parallel.pp;
    c->tp = problem->parallel.tp;
    set->struct_size = sizeof *set;
    set->add = cand_add;
    set->clone = cand_clone;
    set->remove = cand_remove;
    set->host_private = c;
    set->add_sized = cand_add_sized;
    return set;
}

void loom_candidates_free(loom_candidates *set)
{
    if (!set)
        return;
    for (int32_t i = 0; i < set->n; i++)
        loom_partition_free(set->items[i]);
    free(set->items);
    free(set->host_private);
    free(set);
}
