/* cost_groups.c - the GPU groups of pipeline ranks: each rank's TP x CP
 * width (per-module layouts included), laid out on consecutive GPUs, and
 * each rank's chunks (its positions in flow order). */
#include <stdlib.h>
#include "cost_rules.h"

const loom_module_layout *loom_cost_layout_of(const loom_problem *pb, const loom_partition *pt,
                                              int32_t m)
{
    if (pt && LOOM_STRUCT_HAS(pt, loom_partition, layouts) && pt->layouts && pt->n_layouts > 0) {
        if (m < 0 || m >= pt->n_layouts || pt->layouts[m].struct_size < LOOM_MODULE_LAYOUT_SIZE_V1)
            return NULL;
        return &pt->layouts[m];
    }
    return loom_problem_module_layout(pb, m);
}

int loom_cost_has_layouts(const loom_problem *pb, const loom_partition *pt)
{
    return loom_cost_layout_of(pb, pt, 0) != NULL;
}

const loom_module_layout *loom_cost_listed_layout(const loom_problem *pb,
                                                  const loom_partition *pt, int32_t m)
{
    const loom_module_layout *l = loom_cost_layout_of(pb, pt, m);
    return l && l->listed ? l : NULL;
}

int32_t loom_cost_span_tp(const loom_problem *pb, const loom_partition *pt, const loom_span *sp)
{
    if (sp->tp > 0)
        return sp->tp;
    const loom_module_layout *l = loom_cost_listed_layout(pb, pt, sp->module);
    if (l && l->tp > 0)
        return l->tp;
    if (pt && pt->tp > 0)
        return pt->tp;
    return pb->parallel.tp > 0 ? pb->parallel.tp : 1;
}

int32_t loom_cost_span_cp(const loom_problem *pb, const loom_partition *pt, const loom_span *sp)
{
    const loom_module_layout *l = loom_cost_listed_layout(pb, pt, sp->module);
    return l && l->cp > 0 ? l->cp : loom_parallel_cp(&pb->parallel);
}

/* GPUs in one pipeline rank's group of the set module m runs on: a
 * disjoint module's own tp x cp; a colocated one's, the tp x cp of the
 * module owning its set (following colocated_with), or of the top-level
 * layout; an unlisted module's, its span's tp x problem cp. */
static int64_t set_width(const loom_problem *pb, const loom_partition *pt, const loom_span *sp)
{
    const loom_module_layout *l = loom_cost_listed_layout(pb, pt, sp->module);
    if (!l)
        return (int64_t)loom_cost_span_tp(pb, pt, sp) * loom_parallel_cp(&pb->parallel);
    for (int32_t hops = 0; l && l->placement == LOOM_LAYOUT_COLOCATED &&
                           hops < 64; hops++) /* 64: more modules than a model has */
        l = l->colocated_with >= 0 ? loom_cost_layout_of(pb, pt, l->colocated_with) : NULL;
    if (l && l->placement == LOOM_LAYOUT_DISJOINT)
        return (int64_t)l->tp * l->cp;
    /* the top-level set: the widest group of the modules it runs as the
     * top-level layout (a search may have chosen another TP than the
     * problem's), else the problem's */
    int64_t w = 0;
    for (int32_t m = 0; m < pb->model->n_modules; m++) {
        const loom_module_layout *t = loom_cost_layout_of(pb, pt, m);
        if (t && t->placement == LOOM_LAYOUT_TOP && (int64_t)t->tp * t->cp > w)
            w = (int64_t)t->tp * t->cp;
    }
    return w > 0 ? w
                 : (int64_t)(pb->parallel.tp > 0 ? pb->parallel.tp : 1) *
                       loom_parallel_cp(&pb->parallel);
}

int32_t loom_cost_owner_set(const loom_problem *pb, const loom_partition *pt, int32_t m)
{
    for (int32_t hops = 0; hops < 64; hops++) { /* 64: more modules than a model has */
        const loom_module_layout *l = loom_cost_layout_of(pb, pt, m);
        if (!l || (l->placement == LOOM_LAYOUT_COLOCATED && l->colocated_with < 0) ||
            l->placement == LOOM_LAYOUT_TOP)
            return -1;
        if (l->placement == LOOM_LAYOUT_DISJOINT)
            return m;
        m = l->colocated_with;
    }
    return -1;
}

int64_t loom_cost_rank_width(const loom_cost_ranks *cr, int32_t r)
{
    int64_t next = r + 1 < cr->n_ranks ? cr->gpu0[r + 1] : cr->gpus;
    return next - cr->gpu0[r];
}

double loom_cost_replica_gpus(const loom_cost_ranks *cr, const loom_problem *pb,
                              const loom_partition *pt)
{
    if (!loom_cost_has_layouts(pb, pt))
        return (double)cr->gpus;
    int32_t dp = pb->parallel.dp > 0 ? pb->parallel.dp : 1;
    for (int32_t m = 0; m < pb->model->n_modules; m++) {
        const loom_module_layout *l = loom_cost_layout_of(pb, pt, m);
        if (l && l->placement == LOOM_LAYOUT_TOP && l->dp > 0) { /* a partitioner's choice */
            dp = l->dp;
            break;
        }
    }
    int32_t *set_of_rank = malloc((size_t)pt->n_ranks * sizeof *set_of_rank);
    if (!set_of_rank)
        return (double)cr->gpus;
    for (int32_t r = 0; r < pt->n_ranks; r++)
        set_of_rank[r] = -1;
    for (int32_t i = 0; i < pt->n_positions; i++)
        if (pt->positions[i].n_spans > 0)
            set_of_rank[pt->positions[i].rank] =
                loom_cost_owner_set(pb, pt, pt->spans[pt->positions[i].span_off].module);
    double gpus = 0;
    for (int32_t r = 0; r < pt->n_ranks; r++)
        if (set_of_rank[r] < 0)
            gpus += (double)loom_cost_rank_width(cr, r);
    free(set_of_rank);
    for (int32_t m = 0; m < pb->model->n_modules; m++) {
        const loom_module_layout *l = loom_cost_layout_of(pb, pt, m);
        if (l && l->placement == LOOM_LAYOUT_DISJOINT)
            gpus += (double)l->tp * l->cp * l->pp * l->dp / dp;
    }
    return gpus > 0 ? gpus : (double)cr->gpus;
}

/* Lays the ranks' TP x CP groups out on consecutive GPUs: rank r's width
 * is the largest of its spans' tp x cp (each at its module's cp) and
 * their sets' widths; a rank running no span gets the partition's or the
 * problem's tp times the problem's cp. */
static void rank_gpus(loom_cost_ranks *cr, const loom_problem *pb, const loom_partition *pt)
{
    const loom_span none = {0, 0, 0, 0};
    /* gpu0[r] holds rank r's width in GPUs first, then its first GPU */
    int32_t cp = loom_parallel_cp(&pb->parallel);
    for (int32_t i = 0; i < pt->n_positions; i++) {
        const loom_position *pos = &pt->positions[i];
        for (int32_t k = 0; k < pos->n_spans; k++) {
            const loom_span *sp = &pt->spans[pos->span_off + k];
            int64_t w = (int64_t)loom_cost_span_tp(pb, pt, sp) * loom_cost_span_cp(pb, pt, sp);
            int64_t set = set_width(pb, pt, sp);
            w = set > w ? set : w;
            if (w > cr->gpu0[pos->rank])
                cr->gpu0[pos->rank] = w;
        }
    }
    cr->gpus = 0;
    for (int32_t r = 0; r < pt->n_ranks; r++) {
        int64_t width = cr->gpu0[r] > 0 ? cr->gpu0[r]
                                        : (int64_t)loom_cost_span_tp(pb, pt, &none) * cp;
        cr->gpu0[r] = cr->gpus;
        cr->gpus += width;
    }
}

/* Numbers each rank's positions (its chunks, virtual stages) in flow
 * order. */
static void number_chunks(loom_cost_ranks *cr, const loom_partition *pt)
{
    cr->max_chunks = 1;
    for (int32_t f = 0; f < pt->n_flows; f++)
        for (int32_t p = 0; p < pt->flows[f].n_pos; p++) {
            int32_t idx = pt->flows[f].pos_off + p, r = pt->positions[idx].rank;
            cr->chunk_of[idx] = cr->rank_chunks[r]++;
            if (cr->rank_chunks[r] > cr->max_chunks)
                cr->max_chunks = cr->rank_chunks[r];
        }
}

int loom_cost_ranks_init(loom_cost_ranks *cr, const loom_problem *pb, const loom_partition *pt,
                         loom_error *err)
{
    *cr = (loom_cost_ranks){0};
    cr->n_ranks = pt->n_ranks;
    cr->gpu0 = calloc((size_t)pt->n_ranks + 1, sizeof *cr->gpu0);
    cr->chunk_of = calloc((size_t)pt->n_positions + 1, sizeof *cr->chunk_of);
    cr->rank_chunks = calloc((size_t)pt->n_ranks + 1, sizeof *cr->rank_chunks);
    cr->rank_params = calloc((size_t)pt->n_ranks + 1, sizeof *cr->rank_params);
    cr->rank_trainable = calloc((size_t)pt->n_ranks + 1, sizeof *cr->rank_trainable);
    cr->pos_trainable = calloc((size_t)pt->n_positions + 1, sizeof *cr->pos_trainable);
    if (!cr->gpu0 || !cr->chunk_of || !cr->rank_chunks || !cr->rank_params ||
        !cr->rank_trainable || !cr->pos_trainable) {
        loom_cost_ranks_free(cr);
        return loom_set_error(err, LOOM_ENOMEM, "graph builder: out of memory");
    }
    rank_gpus(cr, pb, pt);
    number_chunks(cr, pt);
    return LOOM_OK;
}

void loom_cost_ranks_free(loom_cost_ranks *cr)
{
    free(cr->gpu0);
    free(cr->chunk_of);
    free(cr->rank_chunks);
    free(cr->rank_params);
    free(cr->rank_trainable);
    free(cr->pos_trainable);
    *cr = (loom_cost_ranks){0};
}
