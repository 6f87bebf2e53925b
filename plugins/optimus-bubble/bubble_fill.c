/*
 * bubble_fill.c - Optimus's greedy fine-grained bubble scheduling
 * (Algorithm 2, forward then backward) over a coarse colocated order.
 * See bubble_fill.h.
 */
#include <string.h>
#include "bubble_fill.h"

void loom_bf_free(loom_bf *bf)
{
    if (!bf || !bf->host)
        return;
    const loom_host_api *h = bf->host;
    h->free(bf->trial);
    h->free(bf->trial_fill);
    h->free(bf->vstart);
    h->free(bf->vend);
    h->free(bf->zero);
    h->free(bf->moving);
    h->free(bf->moved_f);
    h->free(bf->moved_b);
    h->free(bf->cur.start_ms);
    h->free(bf->cur.end_ms);
    h->free(bf->next.start_ms);
    h->free(bf->next.end_ms);
    h->free(bf->rank_len);
    h->free(bf->rank_busy);
    memset(bf, 0, sizeof *bf);
}

/* Reallocates *p to n elements of `size` bytes; 0 on failure. */
static int bf_grow(const loom_host_api *h, void **p, int32_t n, size_t size)
{
    void *q = h->realloc(*p, (size_t)(n > 0 ? n : 1) * size);
    if (!q)
        return 0;
    *p = q;
    return 1;
}

/* Sizes the scratch for g with n_units units. */
static int bf_reserve(loom_bf *bf, const loom_stage_graph *g, int32_t n_units)
{
    const loom_host_api *h = bf->host;
    int32_t n = g->n_stages;
    bf->cur.struct_size = bf->next.struct_size = (uint32_t)sizeof(loom_metrics);
    if (n > bf->cap_stages) {
        if (!bf_grow(h, (void **)&bf->trial, n, sizeof(int32_t)) ||
            !bf_grow(h, (void **)&bf->trial_fill, n, sizeof(int32_t)) ||
            !bf_grow(h, (void **)&bf->vstart, n, sizeof(double)) ||
            !bf_grow(h, (void **)&bf->vend, n, sizeof(double)) ||
            !bf_grow(h, (void **)&bf->zero, n, sizeof(double)) ||
            !bf_grow(h, (void **)&bf->moving, n, 1) ||
            !bf_grow(h, (void **)&bf->cur.start_ms, n, sizeof(double)) ||
            !bf_grow(h, (void **)&bf->cur.end_ms, n, sizeof(double)) ||
            !bf_grow(h, (void **)&bf->next.start_ms, n, sizeof(double)) ||
            !bf_grow(h, (void **)&bf->next.end_ms, n, sizeof(double)))
            return 0;
        bf->cap_stages = n;
    }
    if (n_units > bf->cap_units) {
        if (!bf_grow(h, (void **)&bf->moved_f, n_units, 1) ||
            !bf_grow(h, (void **)&bf->moved_b, n_units, 1))
            return 0;
        bf->cap_units = n_units;
    }
    if (g->n_ranks > bf->cap_ranks) {
        if (!bf_grow(h, (void **)&bf->rank_len, g->n_ranks, sizeof(int32_t)) ||
            !bf_grow(h, (void **)&bf->rank_busy, g->n_ranks, sizeof(double)))
            return 0;
        bf->cap_ranks = g->n_ranks;
    }
    return 1;
}

/* Swaps the current and trial simulations. */
static void bf_swap(loom_bf *bf)
{
    loom_metrics t = bf->cur;
    bf->cur = bf->next;
    bf->next = t;
}

/* Earliest start of stage v: every predecessor's (placed or simulated)
 * end plus its transfer time. */
static double bf_ready(const loom_bf *bf, const loom_stage_graph *g, int32_t v)
{
    double ready = 0;
    for (int32_t e = g->pred_off[v]; e < g->pred_off[v + 1]; e++) {
        double t = bf->vend[g->pred[e]] + g->pred_p2p_ms[e];
        ready = t > ready ? t : ready;
    }
    return ready;
}

/* Removes every moving stage from the trial order; len[r] gets each
 * rank's remaining length. */
static void bf_remove_moving(loom_bf *bf, const loom_schedule *s, int32_t *len)
{
    for (int32_t r = 0; r < s->n_ranks; r++) {
        int32_t k = s->rank_off[r];
        for (int32_t i = s->rank_off[r]; i < s->rank_off[r + 1]; i++)
            if (!bf->moving[bf->trial[i]])
                bf->trial[k++] = bf->trial[i];
            else
                bf->trial_fill[bf->trial[i]] = 0;
        len[r] = k - s->rank_off[r];
    }
}

/* Whether v can run as a fill hosted from entry k of rank r's trial list
 * on: backbone stages, none of them a fill, the first starting no earlier
 * than `ready`, whose exposed communication and compute, with the rank's
 * idle time between them, hold v's compute and communication. On success
 * *hosts gets their count and *end the last one's end. */
static int bf_fill_span(const loom_bf *bf, const loom_co *co, const loom_stage_graph *g,
                        const loom_schedule *s, const int32_t *len, int32_t v, int32_t k,
                        double ready, double tol, int32_t *hosts, double *end)
{
    int32_t r = g->rank[v], off = s->rank_off[r];
    if (k >= len[r] || bf->vstart[bf->trial[off + k]] + tol < ready)
        return 0;
    double need_comm = loom_stage_comm_ms(g, v);
    double comm = 0, compute = 0, idle = 0, rest = g->duration_ms[v];
    double free_at = k > 0 ? bf->vend[bf->trial[off + k - 1]] : 0;
    free_at = free_at > ready ? free_at : ready;
    int32_t j = k;
    while (j < len[r] && rest > tol) {
        int32_t h = bf->trial[off + j];
        if (g->flow[h] != co->main_flow || bf->trial_fill[h] != 0)
            return 0;
        double c = loom_stage_comm_ms(g, h);
        comm += c;
        compute += g->duration_ms[h] - c;
        if (bf->vstart[h] > free_at) /* the rank idles: the fill runs there */
            idle += bf->vstart[h] - free_at;
        free_at = bf->vend[h];
        rest = loom_fill_left_ms(g->duration_ms[v], need_comm, comm, compute) - idle;
        j++;
    }
    if (rest > tol || j == k)
        return 0;
    *hosts = j - k;
    *end = bf->vend[bf->trial[off + j - 1]];
    return 1;
}

/* Inserts v before entry k of rank r's trial list, over `hosts` hosts (0:
 * an ordinary stage), with its estimated times. */
static void bf_insert(loom_bf *bf, const loom_schedule *s, int32_t *len, int32_t r,
                      int32_t k, int32_t v, int32_t hosts, double start, double end)
{
    int32_t off = s->rank_off[r];
    memmove(&bf->trial[off + k + 1], &bf->trial[off + k], (size_t)(len[r] - k) * sizeof(int32_t));
    bf->trial[off + k] = v;
    bf->trial_fill[v] = hosts;
    bf->vstart[v] = start;
    bf->vend[v] = end;
    len[r]++;
}

/* Places stage v (and w >= 0 right after it, e.g. a W after its I) on its
 * rank between entries lo..hi (gap k is before entry k), starting no
 * earlier than `ready`, where it ends first, by `deadline`: in an idle gap
 * that holds it, or with `fills` as a fill from entry k on (bf_fill_span;
 * w then as a fill of its own on the hosts after v's). Gaps inside another
 * fill's hosts are skipped; ties go to the earlier gap, then to the idle
 * gap. Returns 0 when nothing fits. */
static int bf_place(loom_bf *bf, const loom_co *co, const loom_stage_graph *g,
                    const loom_schedule *s, int32_t *len, int32_t v, int32_t w, int32_t lo,
                    int32_t hi, double ready, double deadline, int fills)
{
    int32_t r = g->rank[v], off = s->rank_off[r];
    double dur = g->duration_ms[v] + (w >= 0 ? g->duration_ms[w] : 0);
    /* relative to the makespan: the backward pass has no deadline (1e300) */
    double tol = 1e-9 * (bf->cur.makespan_ms > 1 ? bf->cur.makespan_ms : 1);
    int32_t hosts_left = 0; /* of the fill whose hosts gap k is among */
    int32_t best_k = -1, best_hv = 0, best_hw = 0;
    double best_end = deadline + tol, best_start = 0, best_mid = 0;
    for (int32_t k = 0; k <= hi && k <= len[r]; k++) {
        if (k > 0) {
            int32_t prev = bf->trial[off + k - 1];
            hosts_left = bf->trial_fill[prev] > 0 ? bf->trial_fill[prev]
                         : hosts_left > 0          ? hosts_left - 1
                                                   : 0;
        }
        if (k < lo || hosts_left > 0)
            continue;
        double from = k > 0 ? bf->vend[bf->trial[off + k - 1]] : 0;
        if (from > best_end) /* nothing from here on ends sooner */
            break;
        double to = k < len[r] ? bf->vstart[bf->trial[off + k]] : 1e300;
        double start = from > ready ? from : ready;
        if (start + dur <= to + tol && start + dur < best_end - tol) {
            best_k = k;
            best_hv = best_hw = 0;
            best_start = start;
            best_mid = start + g->duration_ms[v];
            best_end = start + dur;
            continue;
        }
        int32_t hv, hw = 0;
        double end_v, end = 0;
        if (!fills || !bf_fill_span(bf, co, g, s, len, v, k, ready, tol, &hv, &end_v))
            continue;
        end = end_v;
        if (w >= 0 && !bf_fill_span(bf, co, g, s, len, w, k + hv, end_v, tol, &hw, &end))
            continue;
        if (end < best_end - tol) {
            best_k = k;
            best_hv = hv;
            best_hw = hw;
            best_start = bf->vstart[bf->trial[off + k]];
            best_mid = end_v;
            best_end = end;
        }
    }
    if (best_k < 0)
        return 0;
    if (best_hv == 0) { /* an idle gap: v, then w right after it */
        bf_insert(bf, s, len, r, best_k, v, 0, best_start, best_mid);
        if (w >= 0)
            bf_insert(bf, s, len, r, best_k + 1, w, 0, best_mid, best_end);
        return 1;
    }
    bf_insert(bf, s, len, r, best_k, v, best_hv, best_start, best_mid);
    if (w >= 0) {
        int32_t kw = best_k + 1 + best_hv;
        bf_insert(bf, s, len, r, kw, w, best_hw, bf->vstart[bf->trial[off + kw]], best_end);
    }
    return 1;
}

/* First and last index of a backbone stage in rank r's trial list. */
static void bf_main_span(const loom_bf *bf, const loom_co *co,
                         const loom_stage_graph *g, const loom_schedule *s,
                         const int32_t *len, int32_t r, int32_t *first,
                         int32_t *last)
{
    *first = *last = -1;
    for (int32_t k = 0; k < len[r]; k++)
        if (g->flow[bf->trial[s->rank_off[r] + k]] == co->main_flow) {
            if (*first < 0)
                *first = k;
            *last = k;
        }
}

/* Earliest start of a backbone forward at position 0 for microbatch mb
 * in metrics m (the dependency point F of Optimus §4.3). */
static double bf_llm_start(const loom_co *co, const loom_metrics *m, int32_t mb)
{
    double t = 1e300;
    int32_t f = co->main_flow;
    for (int32_t sub = 0; sub < co->mb_subs[f * co->M + mb]; sub++) {
        int32_t v = loom_co_stage(co, co->mb_base[f * co->M + mb] + sub, 0, 0);
        if (v >= 0 && m->start_ms[v] < t)
            t = m->start_ms[v];
    }
    return t;
}

/* The unit the pass moves next, or -1: FWD - the last PRE unit of the
 * flow whose last PRE forward ends latest; BWD - the first POST unit of
 * the flow whose POST backwards end latest. Ties: the lowest flow. */
static int32_t bf_pick(const loom_bf *bf, const loom_co *co, int backward)
{
    int32_t best_u = -1;
    double best_t = -1;
    for (int32_t f = 0; f < co->n_flows; f++) {
        if (!co->is_encoder[f])
            continue;
        int32_t cand = -1;
        double t = -1;
        for (int32_t i = 0; i < co->n_units; i++) {
            int32_t u = co->order[i];
            if (co->units[u].flow != f || (backward ? bf->moved_b[u] : bf->moved_f[u]))
                continue;
            int32_t v = backward ? loom_co_stage(co, u, 0, 1)
                                 : loom_co_stage(co, u, co->flow_pos[f] - 1, 0);
            if (v < 0)
                continue;
            if (!backward) {
                cand = u;
                t = bf->cur.end_ms[v];
            } else {
                cand = cand < 0 ? u : cand;
                t = bf->cur.end_ms[v] > t ? bf->cur.end_ms[v] : t;
            }
        }
        if (cand >= 0 && t > best_t) {
            best_t = t;
            best_u = cand;
        }
    }
    return best_u;
}

/* Tries one move of unit u; 1 when kept, 2 when it left the order as it
 * was (the unit already sat where it would go), 0 when rejected, < 0 on
 * error. */
static int bf_move(loom_bf *bf, const loom_co *co, const loom_stage_graph *g,
                   loom_schedule *s, int32_t u, int backward, loom_bf_sim_fn sim,
                   void *user, int32_t *len, loom_error *err)
{
    int32_t f = co->units[u].flow, np = co->flow_pos[f], mb = co->units[u].mb;
    int fills = loom_schedule_fills(s) != NULL;
    memcpy(bf->trial, s->order, (size_t)g->n_stages * sizeof(int32_t));
    if (fills)
        memcpy(bf->trial_fill, s->fill_hosts, (size_t)g->n_stages * sizeof(int32_t));
    else
        memset(bf->trial_fill, 0, (size_t)g->n_stages * sizeof(int32_t));
    memcpy(bf->vstart, bf->cur.start_ms, (size_t)g->n_stages * sizeof(double));
    memcpy(bf->vend, bf->cur.end_ms, (size_t)g->n_stages * sizeof(double));
    memset(bf->moving, 0, (size_t)g->n_stages);
    for (int32_t p = 0; p < np; p++) {
        int32_t v = loom_co_stage(co, u, p, backward);
        if (v < 0)
            continue;
        bf->moving[v] = 1;
        if (backward && g->kind[v] == LOOM_STAGE_I)
            bf->moving[g->pair_weight[g->pair[v]]] = 1;
    }
    bf_remove_moving(bf, s, len);
    double deadline = backward ? 1e300 : bf_llm_start(co, &bf->cur, mb);
    for (int32_t i = 0; i < np; i++) {
        int32_t p = backward ? np - 1 - i : i;
        int32_t v = loom_co_stage(co, u, p, backward);
        if (v < 0)
            continue;
        int32_t w = backward && g->kind[v] == LOOM_STAGE_I
                        ? g->pair_weight[g->pair[v]] : -1;
        int32_t first, last;
        bf_main_span(bf, co, g, s, len, g->rank[v], &first, &last);
        if (first < 0)
            return 0;
        int ok = backward ? bf_place(bf, co, g, s, len, v, w, 0, len[g->rank[v]],
                                     bf_ready(bf, g, v), deadline, fills)
                          : bf_place(bf, co, g, s, len, v, w, first + 1, len[g->rank[v]] - 1,
                                     bf_ready(bf, g, v), deadline, fills);
        if (!ok)
            return 0;
    }
    loom_schedule trial = *s;
    trial.struct_size = (uint32_t)sizeof trial; /* a copy is this build's size */
    trial.order = bf->trial;
    if (fills)
        trial.fill_hosts = bf->trial_fill;
    loom_error why = {0, ""};
    int rc = sim(user, g, &trial, &bf->next, &why);
    if (rc == LOOM_ENOMEM) {
        *err = why;
        return rc;
    }
    if (rc != LOOM_OK)
        return 0;
    double T = bf->cur.makespan_ms, tol = 1e-9 * (T > 1 ? T : 1);
    if (bf->next.makespan_ms > T + tol)
        return 0;
    if (!backward && bf_llm_start(co, &bf->next, mb) > deadline + tol)
        return 0;
    int same = !memcmp(s->order, bf->trial, (size_t)g->n_stages * sizeof(int32_t)) &&
               (!fills || !memcmp(s->fill_hosts, bf->trial_fill,
                                  (size_t)g->n_stages * sizeof(int32_t)));
    memcpy(s->order, bf->trial, (size_t)g->n_stages * sizeof(int32_t));
    if (fills)
        memcpy(s->fill_hosts, bf->trial_fill, (size_t)g->n_stages * sizeof(int32_t));
    bf_swap(bf);
    return same ? 2 : 1;
}

/* Simulates the coarse order with every encoder stage at zero time, and
 * sums the encoder time of the busiest rank. */
static int bf_backbone_alone(loom_bf *bf, const loom_co *co,
                             const loom_stage_graph *g, const loom_schedule *s,
                             loom_bf_sim_fn sim, void *user, loom_error *err)
{
    for (int32_t r = 0; r < g->n_ranks; r++)
        bf->rank_busy[r] = 0;
    for (int32_t v = 0; v < g->n_stages; v++) {
        int enc = co->is_encoder[g->flow[v]];
        bf->zero[v] = enc ? 0 : g->duration_ms[v];
        if (enc)
            bf->rank_busy[g->rank[v]] += g->duration_ms[v];
    }
    bf->encoder_ms = 0;
    for (int32_t r = 0; r < g->n_ranks; r++)
        bf->encoder_ms = bf->rank_busy[r] > bf->encoder_ms ? bf->rank_busy[r]
                                                           : bf->encoder_ms;
    loom_stage_graph gz = *g;
    gz.duration_ms = bf->zero;
    int rc = sim(user, &gz, s, &bf->next, err);
    bf->backbone_ms = bf->next.makespan_ms;
    return rc;
}

int loom_bf_refine(loom_bf *bf, const loom_co *co, const loom_stage_graph *g,
                   int passes, loom_schedule *sched, loom_bf_sim_fn sim,
                   void *user, loom_error *err)
{
    if (!bf_reserve(bf, g, co->n_units))
        return bf->host->error(err, LOOM_ENOMEM, "out of memory");
    bf->fwd_moves = bf->bwd_moves = 0;
    int rc = sim(user, g, sched, &bf->cur, err);
    if (rc != LOOM_OK)
        return rc;
    bf->coarse_ms = bf->fine_ms = bf->cur.makespan_ms;
    rc = bf_backbone_alone(bf, co, g, sched, sim, user, err);
    if (rc != LOOM_OK)
        return rc;
    memset(bf->moved_f, 0, (size_t)co->n_units);
    memset(bf->moved_b, 0, (size_t)co->n_units);
    int32_t *len = bf->rank_len;
    for (int pass = 0; pass < 2; pass++) {
        int backward = pass == 1;
        if (!(passes & (backward ? LOOM_BF_BACKWARD : LOOM_BF_FORWARD)))
            continue;
        for (;;) {
            int32_t u = bf_pick(bf, co, backward);
            if (u < 0)
                break;
            rc = bf_move(bf, co, g, sched, u, backward, sim, user, len, err);
            if (rc < 0)
                return rc;
            if (rc == 0)
                break;
            (backward ? bf->moved_b : bf->moved_f)[u] = 1;
            if (rc == 1)
                (*(backward ? &bf->bwd_moves : &bf->fwd_moves))++;
        }
    }
    bf->fine_ms = bf->cur.makespan_ms;
    return LOOM_OK;
}
