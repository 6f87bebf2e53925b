/* out_data.c - which samples every (flow, microbatch, sub) unit of a model
 * plan runs (plan.json "data"), and the tensor each dependency edge carries
 * (the "tensor" of isend / irecv actions).
 *
 * A flow sees sample i in microbatch sample_mb[module][i] of its module
 * (a mixed flow: of the first of its modules that sees the sample). The
 * cost model splits a microbatch's tokens evenly among its subs; the
 * samples themselves stay whole: largest first (by the tokens of the
 * flow's modules, ties by lower index), each goes to the sub holding the
 * fewest tokens so far (ties: the lower sub). */
#include <stdlib.h>
#include <string.h>
#include <loom/tokens.h>
#include "output.h"

void loom_out_data_free(loom_out_data *d)
{
    free(d->unit_off);
    free(d->unit_mb);
    free(d->unit_sub);
    free(d->unit_flow);
    free(d->list_off);
    free(d->list);
    free(d->unit_of);
    memset(d, 0, sizeof *d);
}

/* Sub-microbatches of (flow f, microbatch mb); 0 when the flow skips mb. */
static int32_t subs_of(const loom_partition *part, int32_t f, int32_t mb)
{
    if (!part->subs)
        return 1;
    int32_t s = part->subs[(size_t)f * (size_t)part->cap_microbatches + (size_t)mb];
    return s > 0 ? s : 0;
}

/* 1 when flow f holds layers of module m. */
static int flow_holds(const loom_partition *part, int32_t f, int32_t m)
{
    const loom_flow *fl = &part->flows[f];
    for (int32_t p = 0; p < fl->n_pos; p++) {
        const loom_position *pos = &part->positions[fl->pos_off + p];
        for (int32_t k = 0; k < pos->n_spans; k++)
            if (part->spans[pos->span_off + k].module == m)
                return 1;
    }
    return 0;
}

/* Microbatch in which module m sees sample i (-1: never). */
static int32_t module_mb(const loom_plan *plan, int32_t m, int32_t i)
{
    const loom_partition *part = plan->partition;
    if (part->sample_mb)
        return part->sample_mb[(size_t)m * (size_t)part->n_samples + (size_t)i];
    return loom_default_microbatch(plan->iteration, i, part->n_microbatches);
}

/* Sample i's microbatch on flow f and its weight (tokens of the flow's
 * modules); -1 when the flow does not see it. */
static int32_t flow_mb(const loom_plan *plan, const uint8_t *held, int32_t i, int64_t *weight)
{
    const loom_model *model = plan->problem->model;
    int32_t mb = -1;
    *weight = 0;
    for (int32_t m = 0; m < model->n_modules; m++) {
        if (!held[m])
            continue;
        int32_t k = module_mb(plan, m, i);
        if (mb < 0 && k >= 0)
            mb = k;
        if (k >= 0)
            *weight += loom_sample_tokens(model, m, &plan->iteration->samples[i]);
    }
    return mb;
}

/* A sample waiting to be dealt to a sub. */
typedef struct dealt {
    int64_t weight;
    int32_t sample;
} dealt;

/* Heaviest first, then lower sample index. */
static int dealt_cmp(const void *a, const void *b)
{
    const dealt *x = a, *y = b;
    if (x->weight != y->weight)
        return x->weight > y->weight ? -1 : 1;
    return (x->sample > y->sample) - (x->sample < y->sample);
}

/* Deals the samples of one (flow, mb) to its subs (unit ids u0 ...). */
static void deal(loom_out_data *d, int32_t f, int32_t u0, int32_t subs, dealt *items,
                 int32_t n, int64_t *load)
{
    qsort(items, (size_t)n, sizeof *items, dealt_cmp);
    for (int32_t s = 0; s < subs; s++)
        load[s] = 0;
    for (int32_t k = 0; k < n; k++) {
        int32_t best = 0;
        for (int32_t s = 1; s < subs; s++)
            if (load[s] < load[best])
                best = s;
        load[best] += items[k].weight;
        d->unit_of[(size_t)f * (size_t)d->n_samples + (size_t)items[k].sample] = u0 + best;
    }
}

/* Numbers the units and allocates the arrays. */
static int data_alloc(const loom_partition *part, loom_out_data *d)
{
    d->n_flows = part->n_flows;
    d->n_mb = part->n_microbatches;
    size_t cells = (size_t)d->n_flows * (size_t)d->n_mb;
    d->unit_off = malloc((cells + 1) * sizeof(int32_t));
    if (!d->unit_off)
        return LOOM_ENOMEM;
    int32_t u = 0;
    for (int32_t f = 0; f < d->n_flows; f++)
        for (int32_t mb = 0; mb < d->n_mb; mb++) {
            d->unit_off[(size_t)f * (size_t)d->n_mb + (size_t)mb] = u;
            u += subs_of(part, f, mb);
        }
    d->unit_off[cells] = u;
    d->n_units = u;
    size_t nu = (size_t)u + 1, ns = (size_t)d->n_flows * (size_t)d->n_samples + 1;
    d->unit_mb = malloc(nu * sizeof(int32_t));
    d->unit_sub = malloc(nu * sizeof(int32_t));
    d->unit_flow = malloc(nu * sizeof(int32_t));
    d->list_off = calloc(nu + 1, sizeof(int32_t));
    d->unit_of = malloc(ns * sizeof(int32_t));
    if (!d->unit_mb || !d->unit_sub || !d->unit_flow || !d->list_off || !d->unit_of)
        return LOOM_ENOMEM;
    for (int32_t f = 0; f < d->n_flows; f++)
        for (int32_t mb = 0; mb < d->n_mb; mb++)
            for (int32_t s = 0; s < subs_of(part, f, mb); s++) {
                int32_t k = d->unit_off[(size_t)f * (size_t)d->n_mb + (size_t)mb] + s;
                d->unit_mb[k] = mb;
                d->unit_sub[k] = s;
                d->unit_flow[k] = f;
            }
    return LOOM_OK;
}

/* Assigns every flow's samples to units (unit_of). */
static int assign(const loom_plan *plan, loom_out_data *d)
{
    const loom_partition *part = plan->partition;
    int32_t n = d->n_samples, n_mod = plan->problem->model->n_modules;
    dealt *items = malloc((size_t)(n > 0 ? n : 1) * sizeof *items);
    int32_t *mb_of = malloc((size_t)(n > 0 ? n : 1) * sizeof *mb_of);
    int64_t *weight = malloc((size_t)(n > 0 ? n : 1) * sizeof *weight);
    uint8_t *held = calloc((size_t)n_mod + 1, 1);
    int32_t max_subs = 1;
    for (int32_t u = 0; u < d->n_units; u++)
        max_subs = d->unit_sub[u] + 1 > max_subs ? d->unit_sub[u] + 1 : max_subs;
    int64_t *load = malloc((size_t)max_subs * sizeof *load);
    int rc = items && mb_of && weight && held && load ? LOOM_OK : LOOM_ENOMEM;
    for (int32_t f = 0; rc == LOOM_OK && f < d->n_flows; f++) {
        for (int32_t m = 0; m < n_mod; m++)
            held[m] = (uint8_t)flow_holds(part, f, m);
        for (int32_t i = 0; i < n; i++) {
            mb_of[i] = flow_mb(plan, held, i, &weight[i]);
            d->unit_of[(size_t)f * (size_t)n + (size_t)i] = -1;
        }
        for (int32_t mb = 0; mb < d->n_mb; mb++) {
            int32_t subs = subs_of(part, f, mb), k = 0;
            if (subs < 1)
                continue;
            for (int32_t i = 0; i < n; i++)
                if (mb_of[i] == mb)
                    items[k++] = (dealt){weight[i], i};
            deal(d, f, d->unit_off[(size_t)f * (size_t)d->n_mb + (size_t)mb], subs, items, k,
                 load);
        }
    }
    free(items);
    free(mb_of);
    free(weight);
    free(held);
    free(load);
    return rc;
}

/* Fills list_off / list from unit_of (samples ascending within a unit). */
static int build_lists(loom_out_data *d)
{
    size_t total = (size_t)d->n_flows * (size_t)d->n_samples;
    for (size_t k = 0; k < total; k++)
        if (d->unit_of[k] >= 0)
            d->list_off[d->unit_of[k] + 2]++;
    for (int32_t u = 0; u < d->n_units; u++)
        d->list_off[u + 2] += d->list_off[u + 1];
    d->list = malloc((size_t)(d->list_off[d->n_units + 1] + 1) * sizeof(int32_t));
    if (!d->list)
        return LOOM_ENOMEM;
    for (int32_t f = 0; f < d->n_flows; f++)
        for (int32_t i = 0; i < d->n_samples; i++) {
            int32_t u = d->unit_of[(size_t)f * (size_t)d->n_samples + (size_t)i];
            if (u >= 0)
                d->list[d->list_off[u + 1]++] = i;
        }
    return LOOM_OK;
}

int loom_out_data_build(const loom_plan *plan, loom_out_data *d, loom_error *err)
{
    memset(d, 0, sizeof *d);
    const loom_partition *part = plan->partition;
    if (!part || !plan->iteration || !plan->problem || !plan->problem->model)
        return LOOM_OK;
    const loom_model *model = plan->problem->model;
    if (part->sample_mb &&
        (part->n_samples != plan->iteration->n_samples || part->n_modules != model->n_modules))
        return loom_set_error(err, LOOM_EINVAL,
                              "plan.json: the partition assigns %d samples of %d modules, "
                              "expected the iteration's %d samples of the model's %d modules",
                              part->n_samples, part->n_modules, plan->iteration->n_samples,
                              model->n_modules);
    d->n_samples = plan->iteration->n_samples;
    int rc = data_alloc(part, d);
    if (rc == LOOM_OK)
        rc = assign(plan, d);
    if (rc == LOOM_OK)
        rc = build_lists(d);
    if (rc != LOOM_OK) {
        loom_out_data_free(d);
        return loom_set_error(err, LOOM_ENOMEM, "plan.json: out of memory");
    }
    return LOOM_OK;
}

/* The last span of the position that graph stage s runs (NULL: none). */
static const loom_span *output_span(const loom_plan *plan, int32_t s)
{
    const loom_partition *part = plan->partition;
    const loom_stage_graph *g = plan->graph;
    int32_t f = g->flow[s], p = g->position[s];
    if (f < 0 || f >= part->n_flows || p < 0 || p >= part->flows[f].n_pos)
        return NULL;
    const loom_position *pos = &part->positions[part->flows[f].pos_off + p];
    if (pos->n_spans < 1)
        return NULL;
    return &part->spans[pos->span_off + pos->n_spans - 1];
}

/* Unit of graph stage s in d, or -1. */
static int32_t stage_unit(const loom_plan *plan, const loom_out_data *d, int32_t s)
{
    const loom_stage_graph *g = plan->graph;
    int32_t f = g->flow[s], mb = g->microbatch[s];
    if (f < 0 || f >= d->n_flows || mb < 0 || mb >= d->n_mb)
        return -1;
    int32_t u = d->unit_off[(size_t)f * (size_t)d->n_mb + (size_t)mb] + g->sub[s];
    return u < d->unit_off[(size_t)f * (size_t)d->n_mb + (size_t)mb + 1] ? u : -1;
}

int loom_out_edge_tensor(const loom_plan *plan, const loom_out_data *d, int32_t edge,
                         int32_t consumer, int64_t *rows, int64_t *cols)
{
    const loom_stage_graph *g = plan->graph;
    *rows = *cols = 0;
    if (!plan->partition || !d->unit_off)
        return 0;
    int32_t p = g->pred[edge];
    /* the forward stage whose output (or its gradient) crosses the edge */
    int32_t fwd = g->kind[p] == LOOM_STAGE_F ? p : g->pair_forward[g->pair[consumer]];
    int32_t other = fwd == p ? consumer : p;
    const loom_span *sp = output_span(plan, fwd);
    int32_t u = stage_unit(plan, d, fwd), v = stage_unit(plan, d, other);
    if (!sp || u < 0 || v < 0)
        return 0;
    const loom_model *model = plan->problem->model;
    const loom_module *mod = &model->modules[sp->module];
    int32_t tp = sp->tp > 0 ? sp->tp
                 : plan->partition->tp > 0 ? plan->partition->tp
                 : plan->problem->parallel.tp > 0 ? plan->problem->parallel.tp
                                                   : 1;
    int64_t tokens = 0;
    int32_t of = d->unit_flow[v];
    for (int32_t k = d->list_off[u]; k < d->list_off[u + 1]; k++) {
        int32_t i = d->list[k];
        if (d->unit_of[(size_t)of * (size_t)d->n_samples + (size_t)i] == v)
            tokens += loom_sample_span_out_tokens(model, sp->module,
                                                  sp->first_layer + sp->n_layers,
                                                  &plan->iteration->samples[i]);
    }
    *rows = (tokens + tp - 1) / tp;
    *cols = mod->layers[sp->first_layer + sp->n_layers - 1].hidden;
    return 1;
}
