/*
 * optimus_layout.c - writes an Optimus plan (colocated encoder pipelines
 * over a Megatron backbone) into a partition. See optimus_layout.h.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "optimus_layout.h"

/* Layers of a module in stage k of n (the first L % n stages one more). */
static int32_t lay_stage_layers(int32_t layers, int32_t n, int32_t k)
{
    return layers / n + (k < layers % n);
}

void loom_optimus_layout_size(const loom_model *model,
                              const loom_optimus_layout *lay, int32_t *flows,
                              int32_t *positions, int32_t *spans)
{
    int32_t f = 1, pos = lay->pp * lay->vpp;
    for (int32_t m = 0; m < model->n_modules; m++) {
        const loom_module *mod = &model->modules[m];
        if (mod->kind != LOOM_MODULE_ENCODER)
            continue;
        int32_t stages = mod->n_layers < lay->pp_enc ? mod->n_layers : lay->pp_enc;
        f += lay->pipelines;
        pos += lay->pipelines * (lay->per_layer ? mod->n_layers : stages);
    }
    int32_t chain = 0;
    for (int32_t m = 0; m < model->n_modules; m++)
        chain += model->modules[m].kind != LOOM_MODULE_ENCODER;
    *flows = f;
    *positions = pos;
    *spans = pos + (chain > 1 ? chain - 1 : 0); /* module boundaries */
}

/* Appends a position of one span on `rank`. */
static void lay_position(loom_partition *part, int32_t rank, int32_t module,
                         int32_t first, int32_t count)
{
    loom_position *p = &part->positions[part->n_positions++];
    p->rank = rank;
    p->span_off = part->n_spans;
    p->n_spans = 1;
    p->reserved = 0;
    loom_span *sp = &part->spans[part->n_spans++];
    sp->module = module;
    sp->first_layer = first;
    sp->n_layers = count;
    sp->tp = 0;
}

/* Appends encoder module m's flow for pipeline a. */
static void lay_encoder(const loom_model *model, const loom_optimus_layout *lay,
                        int32_t m, int32_t a, loom_partition *part)
{
    const loom_module *mod = &model->modules[m];
    loom_flow *fl = &part->flows[part->n_flows++];
    memset(fl, 0, sizeof *fl);
    fl->pos_off = part->n_positions;
    fl->module = m;
    int32_t first = 0;
    for (int32_t k = 0; k < lay->pp_enc; k++) {
        int32_t count = lay_stage_layers(mod->n_layers, lay->pp_enc, k);
        int32_t rank = a * lay->pp_enc + k;
        if (lay->per_layer)
            for (int32_t l = 0; l < count; l++)
                lay_position(part, rank, m, first + l, 1);
        else if (count > 0)
            lay_position(part, rank, m, first, count);
        first += count;
    }
    fl->n_pos = part->n_positions - fl->pos_off;
    fl->segments = 1;
}

int loom_optimus_layout_write(const loom_model *model,
                              const loom_optimus_layout *lay,
                              const loom_iteration *it, loom_partition *part,
                              loom_error *err)
{
    /* the backbone chain: the backbone, then any decoders, in module order */
    int32_t backbone = -1, chain_layers = 0, chain_modules = 0;
    for (int32_t m = 0; m < model->n_modules; m++) {
        int32_t kind = model->modules[m].kind;
        if (kind == LOOM_MODULE_BACKBONE)
            backbone = m;
        if (kind != LOOM_MODULE_ENCODER) {
            chain_layers += model->modules[m].n_layers;
            chain_modules++;
        }
    }
    int32_t P = lay->pp, S = lay->pp * lay->vpp, M = lay->microbatches;
    if (backbone < 0 || chain_layers < S)
        return loom_error_format(err, LOOM_EINVAL,
                        "optimus-planner: the backbone has %d layers, fewer "
                        "than the %d positions (pp %d x vpp %d)",
                        chain_layers, S, P, lay->vpp);
    int32_t nf, np, ns;
    loom_optimus_layout_size(model, lay, &nf, &np, &ns);
    if (nf > part->cap_flows || np > part->cap_positions || ns > part->cap_spans ||
        M > part->cap_microbatches || nf - 1 > LOOM_MAX_FLOW_INPUTS)
        return loom_error_format(err, LOOM_EINVAL,
                        "optimus-planner: the plan needs %d flows, %d "
                        "positions and %d microbatches; the candidate has "
                        "room for %d, %d and %d (and %d flow inputs)",
                        nf, np, M, part->cap_flows, part->cap_positions,
                        part->cap_microbatches, LOOM_MAX_FLOW_INPUTS);
    part->n_flows = part->n_positions = part->n_spans = 0;
    for (int32_t a = 0; a < lay->pipelines; a++)
        for (int32_t m = 0; m < model->n_modules; m++)
            if (model->modules[m].kind == LOOM_MODULE_ENCODER)
                lay_encoder(model, lay, m, a, part);
    int32_t n_enc = part->n_flows;
    loom_flow *fl = &part->flows[part->n_flows++];
    memset(fl, 0, sizeof *fl);
    fl->pos_off = part->n_positions;
    fl->n_pos = S;
    fl->module = chain_modules == 1 ? backbone : -1;
    fl->segments = lay->vpp;
    fl->n_inputs = n_enc;
    for (int32_t f = 0; f < n_enc; f++)
        fl->inputs[f] = f;
    int32_t cm = 0, layer = 0;
    for (int32_t s = 0; s < S; s++) {
        loom_position *pos = &part->positions[part->n_positions++];
        pos->rank = s % P;
        pos->span_off = part->n_spans;
        pos->n_spans = 0;
        pos->reserved = 0;
        for (int32_t left = lay_stage_layers(chain_layers, S, s); left > 0;) {
            while (model->modules[cm].kind == LOOM_MODULE_ENCODER ||
                   layer >= model->modules[cm].n_layers) {
                cm++;
                layer = 0;
            }
            int32_t take = model->modules[cm].n_layers - layer;
            take = take < left ? take : left;
            loom_span *sp = &part->spans[part->n_spans++];
            sp->module = cm;
            sp->first_layer = layer;
            sp->n_layers = take;
            sp->tp = 0;
            pos->n_spans++;
            layer += take;
            left -= take;
        }
    }
    part->n_ranks = P;

    int32_t n = it ? it->n_samples : 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t mb = it->samples[i].microbatch;
        if (mb >= M)
            return loom_error_format(err, LOOM_EINVAL,
                            "iteration %d: samples[%d].microbatch: expected "
                            "< %d (parallel.microbatches), found %d",
                            it->index, i, M, mb);
        if (mb < 0)
            mb = (int32_t)((int64_t)i * M / n);
        for (int32_t m = 0; m < model->n_modules; m++)
            part->sample_mb[(size_t)m * (size_t)n + (size_t)i] = mb;
    }
    part->n_samples = n;
    part->n_modules = model->n_modules;
    part->n_microbatches = M;
    for (int32_t f = 0; f < part->n_flows; f++) {
        int32_t a = f < n_enc ? f / (n_enc / lay->pipelines) : -1;
        for (int32_t mb = 0; mb < M; mb++) {
            int32_t own = lay->owner ? lay->owner[mb] : 0;
            part->subs[f * part->cap_microbatches + mb] = a < 0 || own == a;
        }
    }
    return LOOM_OK;
}
