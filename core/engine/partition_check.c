/* partition_check.c - what the graph builder requires of a partition
 * before it builds a stage graph from it: its flows, positions and spans
 * well formed, every layer placed and run once per microbatch, and under
 * per-module layouts one GPU set per rank. Errors say which flow,
 * position, span, layer or rank is wrong. */
#include <stdlib.h>
#include <string.h>
#include "engine_api.h"
#include "cost_rules.h"

/* The partition's shape: counts, flows, positions on ranks, spans that are
 * layer ranges of modules, every layer placed and run once per microbatch,
 * samples in range. */
static int check_shape(const loom_problem *pb, const loom_partition *pt, loom_error *err)
{
    const loom_model *model = pb->model;
    if (pt->n_flows < 1 || pt->n_ranks < 1 || pt->n_microbatches < 1)
        return loom_set_error(err, LOOM_EINVAL,
                              "partition: %d flows on %d ranks with %d microbatches",
                              pt->n_flows, pt->n_ranks, pt->n_microbatches);
    int32_t total_layers = 0;
    for (int32_t m = 0; m < model->n_modules; m++)
        total_layers += model->modules[m].n_layers;
    int32_t *placed = calloc((size_t)total_layers + 1, sizeof(int32_t));
    int32_t *first = calloc((size_t)model->n_modules + 1, sizeof(int32_t));
    if (!placed || !first) {
        free(placed);
        free(first);
        return loom_set_error(err, LOOM_ENOMEM, "partition: out of memory");
    }
    for (int32_t m = 1; m < model->n_modules; m++)
        first[m] = first[m - 1] + model->modules[m - 1].n_layers;
    int rc = LOOM_OK;
    for (int32_t f = 0; f < pt->n_flows && rc == LOOM_OK; f++) {
        const loom_flow *fl = &pt->flows[f];
        if (fl->n_pos < 1 || fl->pos_off < 0 || fl->pos_off + fl->n_pos > pt->n_positions)
            rc = loom_set_error(err, LOOM_EINVAL, "partition: flow %d has positions %d..%d of %d",
                                f, fl->pos_off, fl->pos_off + fl->n_pos - 1, pt->n_positions);
        for (int32_t k = 0; k < fl->n_inputs && rc == LOOM_OK; k++)
            if (fl->inputs[k] < 0 || fl->inputs[k] >= f)
                rc = loom_set_error(err, LOOM_EINVAL,
                                    "partition: flow %d input %d must be an earlier flow", f,
                                    fl->inputs[k]);
        for (int32_t p = 0; p < fl->n_pos && rc == LOOM_OK; p++) {
            const loom_position *pos = &pt->positions[fl->pos_off + p];
            if (pos->rank < 0 || pos->rank >= pt->n_ranks)
                rc = loom_set_error(err, LOOM_EINVAL, "partition: flow %d position %d on rank %d of %d",
                                    f, p, pos->rank, pt->n_ranks);
            else if (pos->span_off < 0 || pos->n_spans < 1 || pos->span_off + pos->n_spans > pt->n_spans)
                rc = loom_set_error(err, LOOM_EINVAL, "partition: flow %d position %d has no valid spans",
                                    f, p);
            for (int32_t s = 0; s < pos->n_spans && rc == LOOM_OK; s++) {
                const loom_span *sp = &pt->spans[pos->span_off + s];
                if (sp->module < 0 || sp->module >= model->n_modules || sp->n_layers < 1 ||
                    sp->first_layer < 0 ||
                    sp->first_layer + sp->n_layers > model->modules[sp->module].n_layers) {
                    rc = loom_set_error(err, LOOM_EINVAL,
                                        "partition: flow %d position %d span %d is not a layer range of a module",
                                        f, p, s);
                    break;
                }
                for (int32_t l = 0; l < sp->n_layers; l++)
                    placed[first[sp->module] + sp->first_layer + l]++;
            }
        }
    }
    for (int32_t m = 0; m < model->n_modules && rc == LOOM_OK; m++)
        for (int32_t l = 0; l < model->modules[m].n_layers; l++)
            if (!placed[first[m] + l]) {
                rc = loom_set_error(err, LOOM_EINVAL, "partition: layer %d of module %s is not placed", l,
                                    model->modules[m].name);
                break;
            }
    /* A layer held by several flows (replica pipelines) must run exactly
     * once in every microbatch: the flows holding it run disjoint ones. */
    int replicas = 0;
    for (int32_t i = 0; i < total_layers && rc == LOOM_OK; i++)
        replicas |= placed[i] > 1;
    for (int32_t mb = 0; replicas && mb < pt->n_microbatches && rc == LOOM_OK; mb++) {
        memset(placed, 0, (size_t)total_layers * sizeof(int32_t));
        for (int32_t f = 0; f < pt->n_flows; f++) {
            if (pt->subs && pt->subs[f * pt->cap_microbatches + mb] < 1)
                continue;
            const loom_flow *fl = &pt->flows[f];
            for (int32_t p = 0; p < fl->n_pos; p++) {
                const loom_position *pos = &pt->positions[fl->pos_off + p];
                for (int32_t s = 0; s < pos->n_spans; s++) {
                    const loom_span *sp = &pt->spans[pos->span_off + s];
                    for (int32_t l = 0; l < sp->n_layers; l++)
                        placed[first[sp->module] + sp->first_layer + l]++;
                }
            }
        }
        for (int32_t m = 0; m < model->n_modules && rc == LOOM_OK; m++)
            for (int32_t l = 0; l < model->modules[m].n_layers; l++)
                if (placed[first[m] + l] != 1) {
                    rc = loom_set_error(err, LOOM_EINVAL,
                                        "partition: layer %d of module %s runs %d times in "
                                        "microbatch %d (flows holding a layer must run disjoint "
                                        "microbatches)",
                                        l, model->modules[m].name, placed[first[m] + l], mb);
                    break;
                }
    }
    for (int32_t i = 0; i < pt->n_modules * pt->n_samples && rc == LOOM_OK; i++)
        if (pt->sample_mb[i] < -1 || pt->sample_mb[i] >= pt->n_microbatches)
            rc = loom_set_error(err, LOOM_EINVAL, "partition: sample %d of module %d in microbatch %d of %d",
                                i % pt->n_samples, i / pt->n_samples, pt->sample_mb[i], pt->n_microbatches);
    free(placed);
    free(first);
    return rc;
}

/* With per-module layouts, every rank runs modules of one GPU set only: a
 * disjoint module never shares a rank with a module of another set (the
 * error names both, so a layout-unaware partitioner is caught). */
static int check_sets(const loom_problem *pb, const loom_partition *pt, loom_error *err)
{
    if (!loom_cost_has_layouts(pb, pt))
        return LOOM_OK;
    int32_t *first = malloc((size_t)pt->n_ranks * sizeof *first);
    if (!first)
        return loom_set_error(err, LOOM_ENOMEM, "graph builder: out of memory");
    for (int32_t r = 0; r < pt->n_ranks; r++)
        first[r] = -1; /* a module of the rank, once seen */
    int rc = LOOM_OK;
    for (int32_t i = 0; i < pt->n_positions && rc == LOOM_OK; i++) {
        const loom_position *pos = &pt->positions[i];
        for (int32_t k = 0; k < pos->n_spans && rc == LOOM_OK; k++) {
            int32_t m = pt->spans[pos->span_off + k].module;
            if (first[pos->rank] < 0)
                first[pos->rank] = m;
            else if (loom_cost_owner_set(pb, pt, m) != loom_cost_owner_set(pb, pt, first[pos->rank])) {
                int32_t a = first[pos->rank];
                int32_t sa = loom_cost_owner_set(pb, pt, a), sm = loom_cost_owner_set(pb, pt, m);
                rc = loom_set_error(
                    err, LOOM_EINVAL,
                    "partition: rank %d runs modules \"%s\" (GPU set of %s) and \"%s\" (GPU "
                    "set of %s): expected the modules of one GPU set per rank under per-module "
                    "layouts (plan them with a layout-aware partitioner: module-layout, "
                    "hetero-search)",
                    (int)pos->rank, pb->model->modules[a].name,
                    sa < 0 ? "the top-level layout" : pb->model->modules[sa].name,
                    pb->model->modules[m].name,
                    sm < 0 ? "the top-level layout" : pb->model->modules[sm].name);
            }
        }
    }
    free(first);
    return rc;
}

int loom_partition_check(const loom_problem *problem, const loom_partition *part,
                         loom_error *err)
{
    int rc = check_shape(problem, part, err);
    return rc == LOOM_OK ? check_sets(problem, part, err) : rc;
}
