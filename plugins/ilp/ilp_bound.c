/*
 * ilp_bound.c - the lower bound at a node of the exact interleaver's
 * search: longest paths through heads and tails, per rank the earliest
 * head + remaining work + the shortest tail after, Jackson's preemptive
 * one-rank schedule, with a memory cap the memory floors of the stages
 * that allocate, and, once an incumbent is known, the orders it forces
 * on a rank (pairs and edge finding) raising heads and tails
 * (docs/memory-and-ilp.md).
 */
#include <math.h>
#include "ilp_bnb.h"

/* Preemptive one-rank bound (Jackson): rank r's unplaced stages with
 * their heads and tails after them; the latest completion plus tail. */
static double bnb_jps(loom_ilpi_bnb *b, int32_t r)
{
    const loom_ilpi_problem *pb = b->pb;
    const loom_stage_graph *g = b->g;
    int32_t a = pb->rank_off[r], z = pb->rank_off[r + 1], left = 0;
    double t = INFINITY, lb = 0.0;
    for (int32_t i = a; i < z; i++) {
        int32_t v = pb->rank_stages[i];
        b->jps_rem[v] = b->start[v] < 0.0 ? g->duration_ms[v] : 0.0;
        if (b->start[v] < 0.0) {
            left++;
            t = b->head[v] < t ? b->head[v] : t;
        }
    }
    while (left > 0) {
        int32_t pick = -1;
        double next = INFINITY;
        for (int32_t i = a; i < z; i++) {
            int32_t v = pb->rank_stages[i];
            if (b->start[v] >= 0.0 || b->jps_rem[v] < 0.0)
                continue;
            if (b->head[v] <= t) {
                if (pick < 0 || b->qd[v] - g->duration_ms[v] >
                                    b->qd[pick] - g->duration_ms[pick])
                    pick = v;
            } else if (b->head[v] < next) {
                next = b->head[v];
            }
        }
        if (pick < 0) {
            t = next;
            continue;
        }
        double run = b->jps_rem[pick];
        if (t + run > next)
            run = next - t;
        t += run;
        b->jps_rem[pick] -= run;
        if (b->jps_rem[pick] <= 0.0) {
            b->jps_rem[pick] = -1.0; /* done */
            left--;
            double end = t + b->qd[pick] - g->duration_ms[pick];
            lb = end > lb ? end : lb;
        }
    }
    return lb;
}

/* Earliest starts of the unplaced stages from the placed ones, the
 * predecessors' heads, the twins' and each stage's floor (floor may be
 * NULL); returns the largest head + tail and the placed stages' end. */
static double bnb_heads(loom_ilpi_bnb *b, const double *floor)
{
    const loom_stage_graph *g = b->g;
    double lb = b->makespan;
    for (int32_t i = 0; i < b->n; i++) {
        int32_t v = b->topo[i];
        if (b->start[v] >= 0.0)
            continue;
        double h = b->free_ms[g->rank[v]];
        if (floor && floor[v] > h)
            h = floor[v];
        for (int32_t k = g->pred_off[v]; k < g->pred_off[v + 1]; k++) {
            int32_t u = g->pred[k];
            double x = (b->start[u] < 0.0 ? b->head[u] : b->start[u]) +
                       g->duration_ms[u] + g->pred_p2p_ms[k];
            h = x > h ? x : h;
        }
        int32_t tw = b->twin[v];
        if (tw >= 0 && b->start[tw] < 0.0) {
            double x = b->head[tw] + g->duration_ms[tw];
            h = x > h ? x : h;
        }
        b->head[v] = h;
        lb = h + b->qd[v] > lb ? h + b->qd[v] : lb;
    }
    return lb;
}

/* Memory floors. When an unplaced stage v that allocates runs, its rank
 * holds what it holds now, plus what v and every unplaced stage of its
 * rank that must precede it (an ancestor through edges or twins)
 * allocate, minus what such ancestors free; any excess over the cap must
 * be freed first by other unplaced stages of the rank that do not depend
 * on v, so v starts no earlier than the smallest head + duration by which
 * enough of them can have ended (taking them by that time). Raises
 * floor[v] (INFINITY: nothing frees enough); returns 1 when one rose. */
static int bnb_memory_floors(loom_ilpi_bnb *b)
{
    const loom_ilpi_problem *pb = b->pb;
    const loom_stage_graph *g = b->g;
    size_t n = (size_t)b->n;
    int raised = 0;
    for (int32_t r = 0; r < b->P; r++) {
        int32_t a = pb->rank_off[r], z = pb->rank_off[r + 1];
        double room = g->memory_cap_bytes - (double)(g->static_bytes ? g->static_bytes[r] : 0) -
                      b->mem[r];
        for (int32_t i = a; i < z; i++) {
            int32_t v = pb->rank_stages[i];
            double dv = (double)g->mem_delta_bytes[v];
            if (b->start[v] >= 0.0 || dv <= 0.0)
                continue;
            double need = dv - room;
            int32_t nc = 0;
            for (int32_t k = a; k < z; k++) {
                int32_t u = pb->rank_stages[k];
                double du = (double)g->mem_delta_bytes[u];
                if (u == v || b->start[u] >= 0.0 || du == 0.0)
                    continue;
                if (b->creach[(size_t)u * n + (size_t)v])
                    need += du; /* runs before v whatever the order */
                else if (du < 0.0 && !b->creach[(size_t)v * n + (size_t)u])
                    b->fcand[nc++] = u;
            }
            if (need <= 0.0)
                continue;
            /* the candidates by head + duration; enough of them must end */
            for (int32_t x = 1; x < nc; x++) {
                int32_t u = b->fcand[x], y = x - 1;
                double ku = b->head[u] + g->duration_ms[u];
                while (y >= 0 && b->head[b->fcand[y]] + g->duration_ms[b->fcand[y]] > ku) {
                    b->fcand[y + 1] = b->fcand[y];
                    y--;
                }
                b->fcand[y + 1] = u;
            }
            double t = INFINITY;
            for (int32_t x = 0; x < nc; x++) {
                int32_t u = b->fcand[x];
                need += (double)g->mem_delta_bytes[u];
                if (need <= 0.0) {
                    t = b->head[u] + g->duration_ms[u];
                    break;
                }
            }
            if (t > b->head[v] + b->tol && t > b->floor[v] + b->tol) {
                b->floor[v] = t;
                raised = 1;
            }
        }
    }
    return raised;
}

/* Sorts list[0..nc) by key ascending (insertion sort). */
static void bnb_sort_by(int32_t *list, int32_t nc, const double *key)
{
    for (int32_t x = 1; x < nc; x++) {
        int32_t u = list[x], y = x - 1;
        while (y >= 0 && key[list[y]] > key[u]) {
            list[y + 1] = list[y];
            y--;
        }
        list[y + 1] = u;
    }
}

/* Tails of the unplaced stages from their successors' tails, the next
 * identical microbatch's stage and each stage's floor of the work after
 * it (tfloor). */
static void bnb_tails(loom_ilpi_bnb *b)
{
    const loom_ilpi_problem *pb = b->pb;
    const loom_stage_graph *g = b->g;
    for (int32_t i = b->n - 1; i >= 0; i--) {
        int32_t v = b->topo[i];
        if (b->start[v] >= 0.0)
            continue;
        double p = g->duration_ms[v], t = p + b->tfloor[v];
        for (int32_t k = pb->succ_off[v]; k < pb->succ_off[v + 1]; k++) {
            double x = p + pb->succ_p2p[k] + b->qd[pb->succ[k]];
            t = x > t ? x : t;
        }
        int32_t tn = b->twin_next[v];
        if (tn >= 0 && p + b->qd[tn] > t)
            t = p + b->qd[tn];
        b->qd[v] = t;
    }
}

/* Disjunctive floors from the incumbent: on a rank, if running v before
 * u would make every completion reach the incumbent (v's head and
 * duration, then u with its tail), u runs before v in any better
 * completion. v then starts no earlier than the set of such u can all
 * have ended (run in head order from their heads), and symmetrically the
 * work after v is at least what the stages that must follow v need
 * (run in order of the work after them). Raises floor / tfloor; returns
 * 1 when one rose, 0 when none, -1 when some pair can run in neither
 * order (no better completion). */
static int bnb_pair_floors(loom_ilpi_bnb *b)
{
    const loom_ilpi_problem *pb = b->pb;
    const loom_stage_graph *g = b->g;
    double ub = b->best_ms - b->tol;
    int raised = 0;
    for (int32_t r = 0; r < b->P; r++) {
        int32_t a = pb->rank_off[r], z = pb->rank_off[r + 1];
        for (int32_t i = a; i < z; i++) {
            int32_t v = pb->rank_stages[i];
            if (b->start[v] >= 0.0)
                continue;
            double pv = g->duration_ms[v];
            int32_t nb = 0, na = 0;
            for (int32_t k = a; k < z; k++) {
                int32_t u = pb->rank_stages[k];
                if (u == v || b->start[u] >= 0.0)
                    continue;
                int v_first = b->head[v] + pv + b->qd[u] < ub;
                int u_first = b->head[u] + g->duration_ms[u] + b->qd[v] < ub;
                if (!v_first && !u_first)
                    return -1; /* neither order */
                if (!v_first)
                    b->fcand[nb++] = u; /* u before v */
                else if (!u_first)
                    b->tcand[na++] = u; /* u after v */
            }
            if (nb > 0) {
                bnb_sort_by(b->fcand, nb, b->head);
                double t = 0.0;
                for (int32_t x = 0; x < nb; x++) {
                    int32_t u = b->fcand[x];
                    t = (b->head[u] > t ? b->head[u] : t) + g->duration_ms[u];
                }
                if (t > b->head[v] + b->tol && t > b->floor[v] + b->tol) {
                    b->floor[v] = t;
                    raised = 1;
                }
            }
            if (na > 0) {
                for (int32_t x = 0; x < na; x++) { /* work after each: qd - duration */
                    int32_t u = b->tcand[x];
                    b->jps_rem[u] = b->qd[u] - g->duration_ms[u];
                }
                bnb_sort_by(b->tcand, na, b->jps_rem);
                double t = 0.0;
                for (int32_t x = 0; x < na; x++) {
                    int32_t u = b->tcand[x];
                    t = (b->jps_rem[u] > t ? b->jps_rem[u] : t) + g->duration_ms[u];
                }
                if (t > b->qd[v] - pv + b->tol && t > b->tfloor[v] + b->tol) {
                    b->tfloor[v] = t;
                    raised = 1;
                }
            }
        }
    }
    return raised;
}

/* Edge finding on one rank's unplaced stages list[0..m) with releases
 * a, tails after c (both per stage) and durations: for a stage v and a
 * set S of others (the k with the largest c, for every k), if
 * min a(S + v) + d(S + v) + min c(S) reaches the incumbent, the last of
 * S + v to run cannot be in S, so in a better completion v runs after
 * every stage of S and starts no earlier than min a(S) + d(S): floor[v]
 * is raised to that. by_c: scratch of m. Returns 1 when a floor rose. */
static int bnb_edge_rank(loom_ilpi_bnb *b, const int32_t *list, int32_t m, int32_t *by_c,
                         const double *a, const double *c, double *floor)
{
    const loom_stage_graph *g = b->g;
    double ub = b->best_ms - b->tol;
    int raised = 0;
    for (int32_t i = 0; i < m; i++)
        by_c[i] = list[i];
    for (int32_t x = 1; x < m; x++) { /* by c descending */
        int32_t u = by_c[x], y = x - 1;
        while (y >= 0 && c[by_c[y]] < c[u]) {
            by_c[y + 1] = by_c[y];
            y--;
        }
        by_c[y + 1] = u;
    }
    for (int32_t i = 0; i < m; i++) {
        int32_t v = list[i];
        double best = 0.0, sum = 0.0, amin = INFINITY;
        for (int32_t k = 0; k < m; k++) {
            int32_t u = by_c[k];
            if (u == v)
                continue;
            sum += g->duration_ms[u];
            amin = a[u] < amin ? a[u] : amin;
            double a_all = a[v] < amin ? a[v] : amin;
            if (a_all + sum + g->duration_ms[v] + c[u] >= ub && amin + sum > best)
                best = amin + sum;
        }
        if (best > a[v] + b->tol && best > floor[v] + b->tol) {
            floor[v] = best;
            raised = 1;
        }
    }
    return raised;
}

/* Edge finding on every rank, for heads (v after a set) and, mirrored,
 * for the work after a stage (v before a set). Returns 1 when a floor
 * rose. */
static int bnb_edge_find(loom_ilpi_bnb *b)
{
    const loom_ilpi_problem *pb = b->pb;
    const loom_stage_graph *g = b->g;
    int raised = 0;
    for (int32_t v = 0; v < b->n; v++)
        b->jps_rem[v] = b->start[v] < 0.0 ? b->qd[v] - g->duration_ms[v] : 0.0;
    for (int32_t r = 0; r < b->P; r++) {
        int32_t m = 0;
        for (int32_t i = pb->rank_off[r]; i < pb->rank_off[r + 1]; i++)
            if (b->start[pb->rank_stages[i]] < 0.0)
                b->fcand[m++] = pb->rank_stages[i];
        if (m < 2)
            continue;
        raised |= bnb_edge_rank(b, b->fcand, m, b->tcand, b->head, b->jps_rem, b->floor);
        raised |= bnb_edge_rank(b, b->fcand, m, b->tcand, b->jps_rem, b->head, b->tfloor);
    }
    return raised;
}

/* Lower bound of every completion of the node. */
double loom_ilpi_bound(loom_ilpi_bnb *b)
{
    const loom_stage_graph *g = b->g;
    for (int32_t v = 0; v < b->n; v++) {
        b->qd[v] = b->q[v];
        b->tfloor[v] = 0.0;
    }
    double lb = bnb_heads(b, NULL);
    if (lb >= b->best_ms - b->tol)
        return lb;
    for (int32_t v = 0; v < b->n; v++)
        b->floor[v] = 0.0;
    if (g->memory_cap_bytes > 0.0) {
        for (int32_t pass = 0; pass < b->floor_passes && bnb_memory_floors(b); pass++) {
            double x = bnb_heads(b, b->floor);
            lb = x > lb ? x : lb;
            if (lb >= b->best_ms - b->tol)
                return lb;
        }
    }
    if (lb >= b->best_ms - b->tol)
        return lb;
    for (int32_t pass = 0; pass < 4; pass++) {
        int raised = bnb_pair_floors(b);
        if (raised < 0)
            return INFINITY;
        raised |= bnb_edge_find(b);
        if (!raised)
            break;
        bnb_tails(b);
        double x = bnb_heads(b, b->floor);
        lb = x > lb ? x : lb;
        if (lb >= b->best_ms - b->tol)
            return lb;
    }
    /* per rank: min head + remaining work + min tail after */
    for (int32_t r = 0; r < b->P; r++) {
        const loom_ilpi_problem *pb = b->pb;
        double h = INFINITY, after = INFINITY;
        for (int32_t i = pb->rank_off[r]; i < pb->rank_off[r + 1]; i++) {
            int32_t v = pb->rank_stages[i];
            if (b->start[v] >= 0.0)
                continue;
            h = b->head[v] < h ? b->head[v] : h;
            double x = b->qd[v] - g->duration_ms[v];
            after = x < after ? x : after;
        }
        if (h < INFINITY && h + b->rem_ms[r] + after > lb)
            lb = h + b->rem_ms[r] + after;
    }
    if (lb >= b->best_ms - b->tol)
        return lb;
    for (int32_t r = 0; r < b->P; r++) {
        double x = bnb_jps(b, r);
        lb = x > lb ? x : lb;
        if (lb >= b->best_ms - b->tol)
            break;
    }
    return lb;
}
