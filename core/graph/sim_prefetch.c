/* sim_prefetch.c - the parameter prefetch of a simulation. With the
 * distributed optimizer's all-gather overlapped with the next step's
 * forward (Megatron-LM's --overlap-param-gather), a model chunk's first
 * forward waits until the chunk's parameters have arrived, and the
 * gathers run one chunk ahead of the forwards: Megatron-LM's interleaved
 * schedule dispatches the first two chunks' all-gathers at the step's
 * start and each later chunk's as the forwards reach the chunk before it
 * (param_sync_func in core/pipeline_parallel/schedules.py), so the first
 * chunk's gather is never hidden (Optimus section 2.2, after MegaScale).
 * A rank's chunks are taken in the order of their first forwards and
 * gathered one after another on its DP link; a chunk's part of the
 * rank's gather is its share of the trainable parameters (frozen ones
 * are not gathered). See docs/cost-models.md, "Iteration tail". */
#include <stdlib.h>
#include "sim_scratch.h"

/* Makes room for ranks x chunks cells and the per-rank state. */
static int reserve_gates(loom_sim_scratch *s, int64_t cells, int32_t ranks)
{
    if (cells > s->cap_gate) {
        free(s->gate_ms);
        free(s->gate_part);
        free(s->gate_order);
        s->gate_ms = malloc((size_t)cells * sizeof(double));
        s->gate_part = malloc((size_t)cells * sizeof(double));
        s->gate_order = malloc((size_t)cells * sizeof(int32_t));
        if (!s->gate_ms || !s->gate_part || !s->gate_order) {
            s->cap_gate = 0;
            return LOOM_ENOMEM;
        }
        s->cap_gate = (int32_t)cells;
    }
    if (ranks > s->cap_gate_ranks) {
        free(s->gate_used);
        free(s->gate_pos);
        free(s->gate_link);
        s->gate_used = malloc((size_t)ranks * sizeof(int32_t));
        s->gate_pos = malloc((size_t)ranks * sizeof(int32_t));
        s->gate_link = malloc((size_t)ranks * sizeof(double));
        if (!s->gate_used || !s->gate_pos || !s->gate_link) {
            s->cap_gate_ranks = 0;
            return LOOM_ENOMEM;
        }
        s->cap_gate_ranks = ranks;
    }
    return LOOM_OK;
}

/* Dispatches rank r's gather of the k-th chunk in its order at t_ms (the
 * link takes it once free); no-op past the last chunk. */
static void dispatch(loom_sim_scratch *s, int32_t r, int32_t k, double t_ms)
{
    if (k >= s->gate_used[r])
        return;
    int64_t base = (int64_t)r * s->gate_chunks;
    int32_t c = s->gate_order[base + k];
    double from = s->gate_link[r] > t_ms ? s->gate_link[r] : t_ms;
    s->gate_link[r] = from + s->gate_part[base + c];
    s->gate_ms[base + c] = s->gate_link[r];
}

/* Rank r's chunk order (first forwards in sched), each chunk's part of
 * the gather (its trainable share, equal without weights) and the first
 * two gathers, dispatched at 0. */
static void rank_gates(loom_sim_scratch *s, const loom_stage_graph *g,
                       const loom_schedule *sched, int32_t r, const double *weights)
{
    int32_t C = s->gate_chunks, used = 0;
    int64_t base = (int64_t)r * C;
    double *part = &s->gate_part[base];
    int32_t *order = &s->gate_order[base];
    for (int32_t c = 0; c < C; c++) {
        part[c] = -1; /* no forward seen yet */
        s->gate_ms[base + c] = 0;
    }
    for (int32_t i = sched->rank_off[r]; i < sched->rank_off[r + 1]; i++) {
        int32_t st = sched->order[i], c = g->chunk[st];
        if (g->kind[st] == LOOM_STAGE_F && c >= 0 && c < C && part[c] < 0) {
            part[c] = 0;
            order[used++] = c;
        }
    }
    const double *w = weights ? &weights[(int64_t)r * g->tail_chunks] : NULL;
    double held = 0;
    for (int32_t k = 0; k < used; k++)
        held += w && w[order[k]] > 0 ? w[order[k]] : 0;
    if (!(held > 0))
        w = NULL; /* no weights for these chunks: equal parts */
    double total = g->tail_param_prefetch_ms[r];
    for (int32_t k = 0; k < used; k++) {
        int32_t c = order[k];
        part[c] = w ? total * (w[c] > 0 ? w[c] : 0) / held : total / used;
    }
    s->gate_used[r] = used;
    s->gate_pos[r] = 0;
    s->gate_link[r] = 0;
    s->gate_wait_ms[r] = 0;
    dispatch(s, r, 0, 0);
    dispatch(s, r, 1, 0);
}

int loom_sim_gates(loom_sim_scratch *s, const loom_stage_graph *g, const loom_schedule *sched,
                   loom_error *err)
{
    int32_t P = g->n_ranks, C = 1;
    s->gate_on = 0;
    if (!g->tail_grad_sync_ms || !LOOM_STRUCT_HAS(g, loom_stage_graph, tail_param_prefetch_ms) ||
        !g->tail_param_prefetch_ms)
        return LOOM_OK;
    int any = 0;
    for (int32_t r = 0; r < P; r++)
        any |= g->tail_param_prefetch_ms[r] > 0;
    if (!any)
        return LOOM_OK;
    for (int32_t st = 0; st < g->n_stages; st++)
        if (g->chunk[st] >= C)
            C = g->chunk[st] + 1;
    if ((int64_t)P * C > 0x7fffffff || reserve_gates(s, (int64_t)P * C, P) != LOOM_OK)
        return loom_set_error(err, LOOM_ENOMEM, "simulator: out of memory");
    s->gate_chunks = C;
    const double *weights = LOOM_STRUCT_HAS(g, loom_stage_graph, tail_chunk_share) &&
                                    g->tail_chunk_share && g->tail_chunks >= C
                                ? g->tail_chunk_share
                                : NULL;
    for (int32_t r = 0; r < P; r++)
        rank_gates(s, g, sched, r, weights);
    s->gate_on = 1;
    return LOOM_OK;
}

double loom_sim_gate(loom_sim_scratch *s, const loom_stage_graph *g, int32_t r, int32_t st,
                     double *start_ms)
{
    int32_t k = s->gate_pos[r], c = g->chunk[st];
    if (g->kind[st] != LOOM_STAGE_F || k >= s->gate_used[r] ||
        s->gate_order[(int64_t)r * s->gate_chunks + k] != c)
        return 0;
    double arrived = s->gate_ms[(int64_t)r * s->gate_chunks + c], wait = 0;
    if (arrived > *start_ms) {
        wait = arrived - *start_ms;
        *start_ms = arrived;
    }
    s->gate_pos[r] = k + 1;
    if (k >= 1) /* the next chunk's gather, one ahead of the forwards */
        dispatch(s, r, k + 1, *start_ms);
    return wait;
}
