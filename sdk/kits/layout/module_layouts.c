/*
 * module_layouts.c - a partition from the problem's per-module layouts:
 * one flow per module, on the ranks of the GPU set the module runs on
 * (see <loom/kits/layout.h>).
 */
#include <stdio.h>
#include <string.h>
#include <loom/kits/layout.h>

/* The disjoint module owning module m's GPUs (following colocated_with),
 * or -1 for the top-level GPUs. */
static int32_t owner_set(const loom_module_layout *layouts, int32_t n, int32_t m)
{
    for (int32_t hops = 0; m >= 0 && m < n && hops <= n; hops++) {
        const loom_module_layout *l = &layouts[m];
        if (l->placement == LOOM_LAYOUT_DISJOINT)
            return m;
        if (l->placement != LOOM_LAYOUT_COLOCATED || l->colocated_with < 0)
            return -1;
        m = l->colocated_with;
    }
    return -1;
}

/* Fills places[m] for every module: ranks of the top-level set first,
 * then each disjoint module's new ranks in model order. Returns the ranks
 * used. */
static int32_t place_modules(const loom_problem *pb, const loom_module_layout *layouts,
                             loom_lk_module_place *places)
{
    const loom_model *model = pb->model;
    int32_t pp = pb->parallel.pp > 0 ? pb->parallel.pp : 1;
    int32_t dp = pb->parallel.dp > 0 ? pb->parallel.dp : 1;
    for (int32_t m = 0; m < model->n_modules; m++)
        if (layouts[m].placement == LOOM_LAYOUT_TOP) { /* the top-level layout */
            pp = layouts[m].pp > 0 ? layouts[m].pp : pp;
            dp = layouts[m].dp > 0 ? layouts[m].dp : dp;
            break;
        }
    int32_t next = pp;
    for (int32_t m = 0; m < model->n_modules; m++) {
        int32_t layers = model->modules[m].n_layers;
        places[m].set = owner_set(layouts, model->n_modules, m);
        if (places[m].set != m)
            continue;
        const loom_module_layout *l = &layouts[m];
        int64_t share = (2 * (int64_t)l->pp * l->dp + dp) / (2 * (int64_t)dp); /* rounded */
        int32_t n = share < 1 ? 1 : share > layers ? layers : (int32_t)share;
        places[m].first_rank = next;
        places[m].n_pos = n;
        next += n;
    }
    for (int32_t m = 0; m < model->n_modules; m++) {
        int32_t layers = model->modules[m].n_layers, s = places[m].set;
        if (s == m)
            continue;
        int32_t ranks = s < 0 ? pp : places[s].n_pos;
        places[m].first_rank = s < 0 ? 0 : places[s].first_rank;
        places[m].n_pos = ranks < layers ? ranks : layers;
    }
    return next;
}

int loom_lk_module_layouts(const loom_host_api *host, const char *who,
                           const loom_problem *problem, const loom_module_layout *layouts,
                           const loom_iteration *it,
                           int32_t microbatches, loom_partition *part,
                           loom_lk_module_place *places, loom_error *err)
{
    const loom_model *model = problem->model;
    loom_lk_module_place own[64];
    if (!model || !layouts || model->n_modules > 64)
        return host->error(err, LOOM_EINVAL,
                           "%s: expected a model problem of at most 64 modules and its layouts",
                           who);
    if (!places)
        places = own;
    int32_t n_ranks = place_modules(problem, layouts, places);
    int32_t flow_of[64], total_pos = 0;
    for (int32_t m = 0; m < model->n_modules; m++)
        total_pos += places[m].n_pos;
    if (part->cap_flows < model->n_modules || part->cap_positions < total_pos ||
        part->cap_spans < total_pos)
        return host->error(err, LOOM_EINVAL,
                           "%s: candidate has room for %d flows, %d positions and %d spans, "
                           "the layouts need %d, %d and %d", who, part->cap_flows,
                           part->cap_positions, part->cap_spans, model->n_modules, total_pos,
                           total_pos);
    part->n_flows = part->n_positions = part->n_spans = 0;
    for (int32_t m = 0; m < model->n_modules; m++) {
        int32_t layers = model->modules[m].n_layers, n = places[m].n_pos, first = 0;
        loom_flow *fl = &part->flows[part->n_flows];
        memset(fl, 0, sizeof *fl);
        fl->pos_off = part->n_positions;
        fl->n_pos = n;
        fl->module = m;
        fl->segments = 1;
        for (int32_t p = 0; p < n; p++) {
            int32_t count = layers / n + (p < layers % n);
            loom_position *pos = &part->positions[part->n_positions++];
            *pos = (loom_position){places[m].first_rank + p, part->n_spans, 1, 0};
            part->spans[part->n_spans++] = (loom_span){m, first, count, 0};
            first += count;
        }
        const loom_module *mod = &model->modules[m];
        for (int32_t k = 0; k < mod->n_inputs && fl->n_inputs < LOOM_MAX_FLOW_INPUTS; k++)
            fl->inputs[fl->n_inputs++] = flow_of[mod->inputs[k]];
        flow_of[m] = part->n_flows++;
    }
    part->n_ranks = n_ranks;
    part->tp = problem->parallel.tp;
    for (int32_t m = 0; m < model->n_modules; m++)
        if (layouts[m].placement == LOOM_LAYOUT_TOP && layouts[m].tp > 0) {
            part->tp = layouts[m].tp; /* the top-level layout's */
            break;
        }
    if (LOOM_STRUCT_HAS(part, loom_partition, layouts) && part->layouts &&
        part->cap_layouts >= model->n_modules) {
        memcpy(part->layouts, layouts, (size_t)model->n_modules * sizeof *layouts);
        part->n_layouts = model->n_modules;
    }
    int rc = loom_lk_assign_samples(host, who, model, it, microbatches, part, err);
    if (rc != LOOM_OK)
        return rc;
    int k = snprintf(part->label, sizeof part->label, "layouts");
    for (int32_t m = 0; m < model->n_modules && k > 0 && k < (int)sizeof part->label; m++) {
        const loom_module_layout *l = &layouts[m];
        k += snprintf(part->label + k, sizeof part->label - (size_t)k, " %.12s:t%dp%dd%d%s",
                      model->modules[m].name, l->tp, l->pp, l->dp,
                      l->placement == LOOM_LAYOUT_DISJOINT ? "D" : "");
    }
    return LOOM_OK;
}
