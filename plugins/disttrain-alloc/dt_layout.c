/*
 * dt_layout.c - a DistTrain plan as a Loom partition: one flow per module
 * on disjoint ranks, one modelled backbone pipeline. See dt_layout.h.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "dt_layout.h"

int loom_dt_find_units(const loom_model *model,
                       int32_t unit_module[LOOM_DT_UNITS], loom_error *err)
{
    static const char *const names[LOOM_DT_UNITS] = {"encoder", "backbone",
                                                     "decoder"};
    static const int32_t unit_of_kind[3] = {LOOM_DT_ENC, LOOM_DT_LLM,
                                            LOOM_DT_GEN};
    for (int u = 0; u < LOOM_DT_UNITS; u++)
        unit_module[u] = -1;
    for (int32_t m = 0; m < model->n_modules; m++) {
        int32_t kind = model->modules[m].kind;
        if (kind < 0 || kind > 2)
            return loom_error_format(err, LOOM_EINVAL,
                            "disttrain-alloc: module %s: unknown kind %d",
                            model->modules[m].name, kind);
        int u = unit_of_kind[kind];
        if (unit_module[u] >= 0)
            return loom_error_format(err, LOOM_EINVAL,
                            "disttrain-alloc: expected at most one %s module "
                            "(DistTrain's encoder, backbone, generator), "
                            "found %s and %s", names[u],
                            model->modules[unit_module[u]].name,
                            model->modules[m].name);
        unit_module[u] = m;
    }
    if (unit_module[LOOM_DT_LLM] < 0)
        return loom_error_format(err, LOOM_EINVAL,
                        "disttrain-alloc: expected a backbone module, found "
                        "none among %d modules", model->n_modules);
    return LOOM_OK;
}

int32_t loom_dt_share_positions(int32_t pp, int32_t dp, int32_t dp_llm,
                                int32_t layers)
{
    int64_t num = (int64_t)pp * dp;
    int64_t q = dp_llm > 0 ? (2 * num + dp_llm) / (2 * (int64_t)dp_llm) : 1;
    if (q < 1)
        q = 1;
    if (q > layers)
        q = layers;
    return (int32_t)q;
}

int32_t loom_dt_unit_of(const loom_iteration *it, int32_t i, int32_t units)
{
    int32_t own = it->samples[i].microbatch;
    if (own >= 0)
        return own;
    return (int32_t)((int64_t)i * units / it->n_samples);
}

/* Appends one flow of `n_pos` positions over module `module` (layers split
 * evenly, span TP `tp`) on ranks starting at *next_rank. */
static int lay_flow(const loom_model *model, int32_t module, int32_t n_pos,
                    int32_t tp, int32_t *next_rank, loom_partition *part,
                    loom_error *err)
{
    int32_t layers = model->modules[module].n_layers;
    if (part->n_flows >= part->cap_flows ||
        part->n_positions + n_pos > part->cap_positions ||
        part->n_spans + n_pos > part->cap_spans)
        return loom_error_format(err, LOOM_EINVAL,
                        "disttrain-alloc: candidate has room for %d flows, %d "
                        "positions and %d spans, the plan needs more",
                        part->cap_flows, part->cap_positions, part->cap_spans);
    loom_flow *fl = &part->flows[part->n_flows];
    memset(fl, 0, sizeof *fl);
    fl->pos_off = part->n_positions;
    fl->n_pos = n_pos;
    fl->module = module;
    fl->segments = 1;
    int32_t first = 0;
    for (int32_t p = 0; p < n_pos; p++) {
        int32_t count = layers / n_pos + (p < layers % n_pos);
        loom_position *pos = &part->positions[part->n_positions++];
        pos->rank = (*next_rank)++;
        pos->span_off = part->n_spans;
        pos->n_spans = 1;
        pos->reserved = 0;
        loom_span *sp = &part->spans[part->n_spans++];
        sp->module = module;
        sp->first_layer = first;
        sp->n_layers = count;
        sp->tp = tp;
        first += count;
    }
    part->n_flows++;
    return LOOM_OK;
}

/* Makes flow `f` consume the flows of its module's upstream modules. */
static void lay_inputs(const loom_model *model, const int32_t *flow_of_module,
                       loom_partition *part, int32_t f)
{
    loom_flow *fl = &part->flows[f];
    const loom_module *mod = &model->modules[fl->module];
    for (int32_t k = 0; k < mod->n_inputs && fl->n_inputs < LOOM_MAX_FLOW_INPUTS; k++) {
        int32_t in = flow_of_module[mod->inputs[k]];
        if (in >= 0 && in < f)
            fl->inputs[fl->n_inputs++] = in;
    }
}

int loom_dt_layout(const loom_model *model,
                   const int32_t unit_module[LOOM_DT_UNITS],
                   const loom_dt_plan *plan, const loom_iteration *it,
                   int32_t units, int32_t global_batch, loom_partition *part,
                   loom_error *err)
{
    int32_t dp_llm = plan->dp[LOOM_DT_LLM];
    int32_t flow_of_module[64];
    if (model->n_modules > 64 || dp_llm < 1 || units < 1)
        return loom_error_format(err, LOOM_EINVAL,
                        "disttrain-alloc: expected <= 64 modules, DP_lm >= 1 "
                        "and >= 1 microbatch, found %d, %d and %d",
                        model->n_modules, dp_llm, units);
    for (int32_t m = 0; m < model->n_modules; m++)
        flow_of_module[m] = -1;
    int32_t rank = 0;
    part->n_flows = part->n_positions = part->n_spans = 0;
    for (int u = 0; u < LOOM_DT_UNITS; u++) {
        int32_t m = unit_module[u];
        if (m < 0)
            continue;
        int32_t layers = model->modules[m].n_layers;
        int32_t n_pos = u == LOOM_DT_LLM
                            ? plan->pp[u]
                            : loom_dt_share_positions(plan->pp[u], plan->dp[u],
                                                      dp_llm, layers);
        if (n_pos < 1 || n_pos > layers)
            return loom_error_format(err, LOOM_EINVAL,
                            "disttrain-alloc: module %s: expected 1 to %d "
                            "pipeline positions, found %d",
                            model->modules[m].name, layers, n_pos);
        flow_of_module[m] = part->n_flows;
        int rc = lay_flow(model, m, n_pos, plan->tp[u], &rank, part, err);
        if (rc != LOOM_OK)
            return rc;
    }
    for (int32_t f = 0; f < part->n_flows; f++)
        lay_inputs(model, flow_of_module, part, f);
    part->n_ranks = rank;
    part->tp = plan->tp[LOOM_DT_LLM];

    int32_t want = global_batch / dp_llm > 0 ? global_batch / dp_llm : 1;
    int32_t stride = units / want > 1 ? units / want : 1;
    int32_t mbs = (units + stride - 1) / stride < want ? (units + stride - 1) / stride
                                                       : want;
    if (mbs > part->cap_microbatches)
        return loom_error_format(err, LOOM_EINVAL,
                        "disttrain-alloc: candidate has room for %d "
                        "microbatches, the plan needs %d",
                        part->cap_microbatches, mbs);
    int32_t n = it ? it->n_samples : 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t unit = loom_dt_unit_of(it, i, units);
        if (unit < 0 || unit >= units)
            return loom_error_format(err, LOOM_EINVAL,
                            "iteration %d: samples[%d].microbatch: expected "
                            "< %d, found %d", it->index, i, units, unit);
        int32_t mb = unit % stride == 0 && unit / stride < mbs ? unit / stride : -1;
        for (int32_t m = 0; m < model->n_modules; m++)
            part->sample_mb[(size_t)m * (size_t)n + (size_t)i] = mb;
    }
    part->n_samples = n;
    part->n_modules = model->n_modules;
    part->n_microbatches = mbs;
    for (int32_t f = 0; f < part->n_flows; f++)
        for (int32_t mb = 0; mb < mbs; mb++)
            part->subs[f * part->cap_microbatches + mb] = 1;

    /* the plan's per-module layouts: the backbone as the top-level
     * layout, the encoder and the generator on their own GPUs */
    if (LOOM_STRUCT_HAS(part, loom_partition, layouts) && part->layouts &&
        part->cap_layouts >= model->n_modules) {
        int32_t first_gpu = plan->gpus[LOOM_DT_LLM];
        for (int32_t m = 0; m < model->n_modules; m++)
            part->layouts[m] = (loom_module_layout){(uint32_t)sizeof(loom_module_layout),
                                                    1, 1, 1, 1, LOOM_LAYOUT_TOP, -1, 0,
                                                    plan->gpus[LOOM_DT_LLM], 0};
        for (int u = 0; u < LOOM_DT_UNITS; u++) {
            int32_t m = unit_module[u];
            if (m < 0)
                continue;
            loom_module_layout *lo = &part->layouts[m];
            lo->tp = plan->tp[u];
            lo->pp = plan->pp[u];
            lo->dp = plan->dp[u];
            if (u != LOOM_DT_LLM) {
                lo->placement = LOOM_LAYOUT_DISJOINT;
                lo->listed = 1;
                lo->first_gpu = first_gpu;
                lo->gpus = plan->gpus[u];
                first_gpu += plan->gpus[u];
            }
        }
        part->n_layouts = model->n_modules;
    }
    int32_t e = LOOM_DT_ENC, g = LOOM_DT_GEN, l = LOOM_DT_LLM;
    snprintf(part->label, sizeof part->label,
             "disttrain e%d.%d.%d l%d.%d.%d g%d.%d.%d conn%d,%d",
             plan->tp[e], plan->dp[e], plan->pp[e], plan->tp[l], plan->dp[l],
             plan->pp[l], plan->tp[g], plan->dp[g], plan->pp[g],
             plan->dp[e] ? loom_dt_gcd(plan->dp[e], dp_llm) : 0,
             plan->dp[g] ? loom_dt_gcd(dp_llm, plan->dp[g]) : 0);
    return LOOM_OK;
}
