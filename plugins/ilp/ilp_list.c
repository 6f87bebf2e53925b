/*
 * ilp_list.c - replaying per-rank orders, and list schedules that give
 * the exact interleaver its incumbent (and often its answer: when an
 * incumbent meets the lower bound, no solve is needed).
 */
#include <string.h>
#include "ilp.h"

/* Static bytes of rank r. */
static int64_t ilpi_static(const loom_stage_graph *g, int32_t r)
{
    return g->static_bytes ? g->static_bytes[r] : 0;
}

/* 1 when starting v on its rank (now holding mem bytes) keeps the rank
 * under the cap. */
static int ilpi_fits(const loom_stage_graph *g, int32_t v, int64_t mem)
{
    int64_t d = g->mem_delta_bytes[v];
    if (!(g->memory_cap_bytes > 0.0) || d <= 0)
        return 1;
    return (double)(ilpi_static(g, g->rank[v]) + mem + d) <=
           g->memory_cap_bytes;
}

/* Earliest time v's inputs are there, or -1 when a predecessor has not
 * started (start_ms < 0). */
static double ilpi_ready(const loom_stage_graph *g, int32_t v,
                         const double *start_ms)
{
    double ready = 0.0;
    for (int32_t k = g->pred_off[v]; k < g->pred_off[v + 1]; k++) {
        int32_t u = g->pred[k];
        if (start_ms[u] < 0.0)
            return -1.0;
        double t = start_ms[u] + g->duration_ms[u] + g->pred_p2p_ms[k];
        if (t > ready)
            ready = t;
    }
    return ready;
}

/* Replays per-rank orders (see header). */
double loom_ilpi_replay(loom_ilpi_problem *pb, const int32_t *rank_off,
                        const int32_t *order, double *start_ms)
{
    const loom_stage_graph *g = pb->g;
    int32_t n = pb->n, P = pb->n_ranks;
    double *start = start_ms ? start_ms : pb->work;
    double *free_ms = pb->work + n, *mem = free_ms + P;
    for (int32_t v = 0; v < n; v++)
        start[v] = -1.0;
    for (int32_t r = 0; r < P; r++) {
        pb->cursor[r] = rank_off[r];
        free_ms[r] = 0.0;
        mem[r] = 0.0;
    }
    int32_t placed = 0;
    double makespan = 0.0;
    for (int progress = 1; progress;) {
        progress = 0;
        for (int32_t r = 0; r < P; r++) {
            while (pb->cursor[r] < rank_off[r + 1]) {
                int32_t v = order[pb->cursor[r]];
                double ready = ilpi_ready(g, v, start);
                if (ready < 0.0)
                    break;
                if (!ilpi_fits(g, v, (int64_t)mem[r]))
                    return -1.0;
                double st = ready > free_ms[r] ? ready : free_ms[r];
                start[v] = st;
                free_ms[r] = st + g->duration_ms[v];
                mem[r] += (double)g->mem_delta_bytes[v];
                if (free_ms[r] > makespan)
                    makespan = free_ms[r];
                pb->cursor[r]++;
                placed++;
                progress = 1;
            }
        }
    }
    return placed == n ? makespan : -1.0;
}

/* 1 when stage a (start at ta) should go before stage b (at tb) under
 * `rule`: earlier start first, then the rule's preference, then the
 * microbatch's key (mb_key[m], or m when mb_key is NULL; lower first),
 * then the id. */
static int ilpi_before(const loom_ilpi_problem *pb, int rule, const int32_t *mb_key,
                       int32_t a, double ta, int32_t b, double tb)
{
    const loom_stage_graph *g = pb->g;
    if (ta != tb)
        return ta < tb;
    int fa = g->kind[a] == LOOM_STAGE_F, fb = g->kind[b] == LOOM_STAGE_F;
    if (rule == LOOM_ILPI_BACKWARD_FIRST && fa != fb)
        return fb;
    if (rule == LOOM_ILPI_FORWARD_FIRST && fa != fb)
        return fa;
    if (rule != LOOM_ILPI_LONGEST_TAIL) {
        int32_t ma = g->microbatch[a], mbb = g->microbatch[b];
        if (mb_key && ma >= 0 && mbb >= 0 && ma < g->n_microbatches &&
            mbb < g->n_microbatches && mb_key[ma] != mb_key[mbb])
            return mb_key[ma] < mb_key[mbb];
        if (ma != mbb)
            return ma < mbb;
        if (g->sub[a] != g->sub[b])
            return g->sub[a] < g->sub[b];
    }
    if (pb->tail_ms[a] != pb->tail_ms[b])
        return pb->tail_ms[a] > pb->tail_ms[b];
    return a < b;
}

/* List schedule under `rule` (see header). */
double loom_ilpi_list(loom_ilpi_problem *pb, int rule, int32_t *rank_off,
                      int32_t *order)
{
    return loom_ilpi_list_keyed(pb, rule, NULL, rank_off, order);
}

/* List schedule under `rule` and microbatch keys (see header): the
 * stages whose predecessors are placed are kept in a list with their
 * ready times, updated as their predecessors are placed. */
double loom_ilpi_list_keyed(loom_ilpi_problem *pb, int rule, const int32_t *mb_key,
                            int32_t *rank_off, int32_t *order)
{
    const loom_stage_graph *g = pb->g;
    int32_t n = pb->n, P = pb->n_ranks, nc = 0;
    double *start = pb->work, *free_ms = pb->work + n, *mem = free_ms + P;
    double *rdy = mem + P;
    int32_t *left = pb->iwork, *cand = pb->iwork + n;
    for (int32_t v = 0; v < n; v++) {
        start[v] = -1.0;
        rdy[v] = 0.0;
        left[v] = g->pred_off[v + 1] - g->pred_off[v];
        if (left[v] == 0)
            cand[nc++] = v;
    }
    for (int32_t r = 0; r <= P; r++)
        rank_off[r] = pb->rank_off[r];
    for (int32_t r = 0; r < P; r++) {
        pb->cursor[r] = rank_off[r];
        free_ms[r] = 0.0;
        mem[r] = 0.0;
    }
    double makespan = 0.0;
    for (int32_t placed = 0; placed < n; placed++) {
        int32_t best = -1, bi = -1;
        double best_t = 0.0;
        for (int32_t i = 0; i < nc; i++) {
            int32_t v = cand[i], r = g->rank[v];
            if (!ilpi_fits(g, v, (int64_t)mem[r]))
                continue;
            double t = rdy[v] > free_ms[r] ? rdy[v] : free_ms[r];
            if (best < 0 || ilpi_before(pb, rule, mb_key, v, t, best, best_t)) {
                best = v;
                bi = i;
                best_t = t;
            }
        }
        if (best < 0)
            return -1.0; /* the cap blocks every rank */
        cand[bi] = cand[--nc];
        int32_t r = g->rank[best];
        double end = best_t + g->duration_ms[best];
        start[best] = best_t;
        free_ms[r] = end;
        mem[r] += (double)g->mem_delta_bytes[best];
        order[pb->cursor[r]++] = best;
        if (end > makespan)
            makespan = end;
        for (int32_t k = pb->succ_off[best]; k < pb->succ_off[best + 1]; k++) {
            int32_t sv = pb->succ[k];
            double x = end + pb->succ_p2p[k];
            rdy[sv] = x > rdy[sv] ? x : rdy[sv];
            if (--left[sv] == 0)
                cand[nc++] = sv;
        }
    }
    return makespan;
}
