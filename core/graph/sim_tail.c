/* sim_tail.c - the iteration tail of a simulation: when every rank's
 * data-parallel gradient sync ends, overlapped chunk by chunk with the
 * backward or after the rank's last stage (docs/cost-models.md,
 * "Iteration tail"). */
#include <stdlib.h>
#include "sim_scratch.h"

/* Makes room for ranks x chunks per-chunk times (no-op when it fits). */
static int reserve_chunks(loom_sim_scratch *s, int64_t cells)
{
    if (cells <= s->cap_chunks)
        return LOOM_OK;
    free(s->chunk_start);
    free(s->chunk_end);
    s->chunk_start = malloc((size_t)cells * sizeof(double));
    s->chunk_end = malloc((size_t)cells * sizeof(double));
    if (!s->chunk_start || !s->chunk_end) {
        s->cap_chunks = 0;
        return LOOM_ENOMEM;
    }
    s->cap_chunks = (int32_t)cells;
    return LOOM_OK;
}

/* The end of every rank's gradient sync (sync_end_ms), after its stages
 * have run (free_ms). Without overlap the whole sync follows the rank's
 * last stage. With overlap each model chunk's share (the sync divided
 * evenly over the rank's chunks) is reduced in buckets while the chunk's
 * last backward runs: it starts with that backward (or when the link is
 * free) and ends no earlier than one bucket after it; chunks take the
 * link in the order their last backwards end. No tail: sync_end = free. */
int loom_sim_tail(loom_sim_scratch *s, const loom_stage_graph *g, loom_error *err)
{
    int32_t P = g->n_ranks, C = 1;
    for (int32_t r = 0; r < P; r++)
        s->sync_end_ms[r] = s->free_ms[r];
    if (!g->tail_grad_sync_ms)
        return LOOM_OK;
    int overlapped = 0; /* only an overlapped sync needs the stages' times */
    for (int32_t r = 0; r < P; r++) {
        if (g->tail_grad_sync_ms[r] > 0 && !g->tail_overlap[r])
            s->sync_end_ms[r] = s->free_ms[r] + g->tail_grad_sync_ms[r];
        overlapped |= g->tail_grad_sync_ms[r] > 0 && g->tail_overlap[r];
    }
    if (!overlapped)
        return LOOM_OK;
    for (int32_t st = 0; st < g->n_stages; st++)
        if (g->chunk[st] >= C)
            C = g->chunk[st] + 1;
    if ((int64_t)P * C > 0x7fffffff || reserve_chunks(s, (int64_t)P * C) != LOOM_OK)
        return loom_set_error(err, LOOM_ENOMEM, "simulator: out of memory");
    for (int64_t i = 0; i < (int64_t)P * C; i++)
        s->chunk_start[i] = s->chunk_end[i] = -1;
    for (int32_t st = 0; st < g->n_stages; st++) {
        if (g->kind[st] == LOOM_STAGE_F || g->kind[st] == LOOM_STAGE_I ||
            g->chunk[st] < 0)
            continue; /* weight gradients are final after B or W */
        int64_t k = (int64_t)g->rank[st] * C + g->chunk[st];
        if (s->end_ms[st] > s->chunk_end[k]) {
            s->chunk_end[k] = s->end_ms[st];
            s->chunk_start[k] = s->start_ms[st];
        }
    }
    /* each chunk's share of its rank's trainable parameters, when the
     * graph carries them for these chunks */
    const double *weights = LOOM_STRUCT_HAS(g, loom_stage_graph, tail_chunk_share) &&
                                    g->tail_chunk_share && g->tail_chunks >= C
                                ? g->tail_chunk_share
                                : NULL;
    for (int32_t r = 0; r < P; r++) {
        double sync = g->tail_grad_sync_ms[r];
        if (!(sync > 0) || !g->tail_overlap[r])
            continue; /* set above */
        double *cs = &s->chunk_start[(int64_t)r * C], *ce = &s->chunk_end[(int64_t)r * C];
        const double *w = weights ? &weights[(int64_t)r * g->tail_chunks] : NULL;
        int32_t used = 0;
        double held = 0; /* the weight of the chunks with a backward */
        for (int32_t c = 0; c < C; c++)
            if (ce[c] >= 0) {
                used++;
                held += w && w[c] > 0 ? w[c] : 0;
            }
        if (!used) {
            s->sync_end_ms[r] = s->free_ms[r] + sync;
            continue;
        }
        if (!(held > 0))
            w = NULL; /* no weights for these chunks: equal shares */
        double bucket = g->tail_grad_bucket_ms[r] / used;
        double link = 0;
        for (int32_t done = 0; done < used; done++) {
            int32_t next = -1; /* the earliest-ending chunk left */
            for (int32_t c = 0; c < C; c++)
                if (ce[c] >= 0 && (next < 0 || ce[c] < ce[next]))
                    next = c;
            /* its share of the sync: its parameters' fraction, or equal */
            double share = w ? sync * (w[next] > 0 ? w[next] : 0) / held : sync / used;
            double last = bucket < share ? bucket : share;
            double begin = link > cs[next] ? link : cs[next];
            double end = begin + share;
            if (ce[next] + last > end)
                end = ce[next] + last;
            link = end;
            ce[next] = -1;
        }
        s->sync_end_ms[r] = link > s->free_ms[r] ? link : s->free_ms[r];
    }
    return LOOM_OK;
}
