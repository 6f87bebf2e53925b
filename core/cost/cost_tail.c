/* cost_tail.c - the tail of every rank's iteration: the data-parallel
 * gradient sync over the rank's DP x CP group, the parameter all-gather
 * and the optimizer step, from the cost source for the parameters static
 * memory placed on the rank. */
#include <stdlib.h>
#include "cost_rules.h"

void loom_cost_rank_state(const loom_cost_ranks *cr, const loom_problem *pb,
                          const loom_partition *pt, int32_t r, loom_rank_state *st)
{
    int32_t cp = loom_parallel_cp(&pb->parallel);
    /* context-parallel GPUs hold the same weights: gradients are reduced
     * (and optimizer states sharded) over dp x cp, Megatron's dp-cp group */
    int32_t dp = (pb->parallel.dp > 0 ? pb->parallel.dp : 1) * cp;
    int32_t tp = (int32_t)(loom_cost_rank_width(cr, r) / cp), rdp = dp;
    const loom_module_layout *own = NULL;
    for (int32_t i = 0; i < pt->n_positions && !own; i++)
        if (pt->positions[i].rank == r && pt->positions[i].n_spans > 0)
            own = loom_cost_listed_layout(pb, pt, pt->spans[pt->positions[i].span_off].module);
    if (own && own->placement == LOOM_LAYOUT_DISJOINT) {
        /* a rank of a disjoint module syncs over that module's dp x cp */
        tp = (int32_t)(loom_cost_rank_width(cr, r) / own->cp);
        rdp = own->dp * own->cp;
    }
    *st = (loom_rank_state){(uint32_t)sizeof *st, r, tp, rdp, cr->rank_chunks[r],
                            loom_dp_group_same_node(pb->cluster, tp, rdp), cr->rank_params[r],
                            cr->rank_trainable[r]};
}

/* Each chunk's share of its rank's trainable parameters
 * (g->tail_chunk_share); the overlapped gradient sync divides by it. */
static int chunk_shares(const loom_cost_ranks *cr, const loom_partition *pt,
                        loom_stage_graph *g, loom_error *err)
{
    int32_t C = cr->max_chunks;
    double *share = calloc((size_t)pt->n_ranks * (size_t)C, sizeof(double));
    if (!share)
        return loom_set_error(err, LOOM_ENOMEM, "graph builder: out of memory");
    for (int32_t idx = 0; idx < pt->n_positions; idx++) {
        int32_t r = pt->positions[idx].rank;
        if (cr->rank_trainable[r] > 0)
            share[(size_t)r * (size_t)C + (size_t)cr->chunk_of[idx]] =
                cr->pos_trainable[idx] / cr->rank_trainable[r];
    }
    free(g->tail_chunk_share);
    g->tail_chunk_share = share;
    g->tail_chunks = C;
    return LOOM_OK;
}

int loom_cost_iteration_tail(const loom_cost_ranks *cr, const loom_cost_source *src,
                             const loom_problem *pb, const loom_partition *pt,
                             loom_stage_graph *g, loom_error *err)
{
    for (int32_t r = 0; r < pt->n_ranks; r++) {
        loom_rank_state st;
        loom_cost_rank_state(cr, pb, pt, r, &st);
        loom_rank_tail t = {.struct_size = (uint32_t)sizeof t};
        int rc = src->rank_tail(src->ctx, &st, &t, err);
        if (rc != LOOM_OK)
            return rc;
        /* one set of settings for the whole job, else unknown */
        g->assumed = r == 0 || g->assumed == t.assumed ? t.assumed : 0;
        g->tail_grad_sync_ms[r] = t.grad_sync_ms;
        g->tail_grad_bucket_ms[r] = t.grad_bucket_ms;
        g->tail_overlap[r] = t.overlap_grad_reduce != 0;
        g->tail_param_gather_ms[r] = t.param_gather_ms;
        g->tail_optimizer_ms[r] = t.optimizer_ms;
        g->tail_param_prefetch_ms[r] = t.param_prefetch_ms > 0 ? t.param_prefetch_ms : 0;
    }
    return chunk_shares(cr, pt, g, err);
}
