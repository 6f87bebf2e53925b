/*
 * layout.c - layer-split layouts and sample assignment shared by the
 * uniform, balanced-dp and frozen-aware partitioners (see
 * <loom/kits/layout.h>).
 */
#include <string.h>
#include <loom/kits/layout.h>

int loom_lk_layout(const loom_host_api *host, const char *who,
                   const loom_model *model, int32_t pp, int32_t n_pos,
                   const int32_t *sizes, loom_partition *part,
                   loom_error *err)
{
    if (part->cap_flows < 1 || part->cap_positions < n_pos)
        return host->error(err, LOOM_EINVAL,
                           "%s: candidate has room for %d flows and %d "
                           "positions, need 1 and %d", who,
                           part->cap_flows, part->cap_positions, n_pos);
    int32_t module = 0, layer = 0, n_spans = 0, used_modules = 0;
    for (int32_t m = 0; m < model->n_modules; m++)
        used_modules += model->modules[m].n_layers > 0;
    for (int32_t s = 0; s < n_pos; s++) {
        loom_position *pos = &part->positions[s];
        pos->rank = s % pp;
        pos->span_off = n_spans;
        pos->n_spans = 0;
        pos->reserved = 0;
        for (int32_t left = sizes[s]; left > 0;) {
            while (module < model->n_modules &&
                   layer >= model->modules[module].n_layers) {
                module++;
                layer = 0;
            }
            if (module >= model->n_modules)
                return host->error(err, LOOM_EINVAL,
                                   "%s: position %d asks for more layers "
                                   "than the model has", who, s);
            if (n_spans >= part->cap_spans)
                return host->error(err, LOOM_EINVAL,
                                   "%s: candidate has room for %d spans, "
                                   "position %d needs more", who,
                                   part->cap_spans, s);
            int32_t take = model->modules[module].n_layers - layer;
            if (take > left)
                take = left;
            part->spans[n_spans++] = (loom_span){module, layer, take, 0};
            pos->n_spans++;
            layer += take;
            left -= take;
        }
    }
    loom_flow *fl = &part->flows[0];
    memset(fl, 0, sizeof *fl);
    fl->n_pos = n_pos;
    fl->module = -1;
    if (used_modules == 1 && n_spans > 0)
        fl->module = part->spans[0].module;
    fl->segments = n_pos / pp;
    part->n_flows = 1;
    part->n_positions = n_pos;
    part->n_spans = n_spans;
    part->n_ranks = pp;
    return LOOM_OK;
}

int loom_lk_place(const loom_host_api *host, const char *who, const char *placement,
                  int32_t pp, loom_partition *part, loom_error *err)
{
    int32_t style = -1, n_pos = part->n_positions;
    if (strcmp(placement, "loop") == 0)
        style = LOOM_PLACEMENT_LOOP;
    else if (strcmp(placement, "v") == 0)
        style = LOOM_PLACEMENT_V;
    else if (strcmp(placement, "zigzag") == 0)
        style = LOOM_PLACEMENT_ZIGZAG;
    if (style < 0)
        return host->error(err, LOOM_EINVAL, "%s: params.placement: expected \"loop\", "
                           "\"v\" or \"zigzag\", found \"%s\"", who, placement);
    if (style == LOOM_PLACEMENT_V && n_pos != 2 * pp)
        return host->error(err, LOOM_EINVAL, "%s: params.placement: \"v\" expected 2 "
                           "positions per rank (vpp = 2), found %d on %d ranks "
                           "(\"zigzag\" takes any vpp)", who, n_pos, pp);
    for (int32_t s = 0; s < n_pos; s++)
        part->positions[s].rank = loom_placement_rank(style, s, pp);
    return LOOM_OK;
}

int loom_lk_assign_samples(const loom_host_api *host, const char *who,
                           const loom_model *model, const loom_iteration *it,
                           int32_t microbatches, loom_partition *part,
                           loom_error *err)
{
    if (part->cap_microbatches < microbatches)
        return host->error(err, LOOM_EINVAL,
                           "%s: candidate has room for %d microbatches, "
                           "parallel.microbatches is %d", who,
                           part->cap_microbatches, microbatches);
    int32_t n = it ? it->n_samples : 0;
    if (n > 0 && !part->sample_mb)
        return host->error(err, LOOM_EINVAL,
                           "%s: candidate has no sample map for %d samples",
                           who, n);
    for (int32_t i = 0; i < n; i++) {
        int32_t mb = it->samples[i].microbatch;
        if (mb >= microbatches)
            return host->error(err, LOOM_EINVAL,
                               "iteration %d: samples[%d].microbatch: "
                               "expected < %d (parallel.microbatches), "
                               "found %d",
                               it->index, i, microbatches, mb);
        if (mb < 0)
            mb = (int32_t)((int64_t)i * microbatches / n);
        for (int32_t m = 0; m < model->n_modules; m++)
            part->sample_mb[(size_t)m * (size_t)n + (size_t)i] = mb;
    }
    part->n_microbatches = microbatches;
    part->n_samples = n;
    part->n_modules = model->n_modules;
    if (part->subs)
        for (int32_t mb = 0; mb < microbatches; mb++)
            part->subs[mb] = 1;
    return LOOM_OK;
}
