/*
 * zb_order.c - the zero-bubble greedy order (see <loom/kits/listsched.h>)
 * on the list-scheduling core: the zero-bubble interleaver's algorithm,
 * shared with the exact interleaver's warm start.
 */
#include <string.h>
#include <loom/kits/listsched.h>

#define ZB_F 0
#define ZB_I 1
#define ZB_W 2
#define ZB_FC 3 /* a forward of a later chunk on its rank (V, interleaved) */

/* Releases every array of zb. */
void loom_zb_release(loom_zb *zb, const loom_host_api *host)
{
    if (!zb)
        return;
    loom_ls_release(&zb->ls);
    if (host) {
        host->free(zb->choice);
        host->free(zb->blocked_f);
        host->free(zb->open_mb);
        host->free(zb->open);
        host->free(zb->reserve);
    }
    memset(zb, 0, sizeof *zb);
}

/* Grows the per-rank and per-(rank, microbatch) arrays. */
static int zb_reserve(loom_zb *zb, const loom_host_api *host,
                      const loom_stage_graph *g, const char *who, loom_error *err)
{
    int rc = loom_ls_reserve(&zb->ls, host, g, 4, who, err);
    if (rc != LOOM_OK)
        return rc;
    if (g->n_ranks > zb->cap_ranks) {
        size_t n = (size_t)g->n_ranks;
        int32_t *a = host->realloc(zb->choice, n * sizeof *a);
        if (a)
            zb->choice = a;
        int32_t *b = host->realloc(zb->blocked_f, n * sizeof *b);
        if (b)
            zb->blocked_f = b;
        int32_t *c = host->realloc(zb->open_mb, n * sizeof *c);
        if (c)
            zb->open_mb = c;
        if (!a || !b || !c)
            return host->error(err, LOOM_ENOMEM, "%s: out of memory", who);
        zb->cap_ranks = g->n_ranks;
    }
    int64_t n_open = (int64_t)g->n_ranks * (g->n_microbatches > 0 ? g->n_microbatches : 1);
    if (n_open > zb->cap_open) {
        int32_t *o = host->realloc(zb->open, (size_t)n_open * sizeof *o);
        if (!o)
            return host->error(err, LOOM_ENOMEM, "%s: out of memory", who);
        zb->open = o;
        zb->cap_open = n_open;
    }
    return LOOM_OK;
}

/* Fills the headroom tables (see loom_zb) for g: per (rank, microbatch)
 * the bytes of all its forwards on that rank (total), every rank's
 * reservation and every microbatch's pending share zeroed. */
static int zb_reserve_headroom(loom_zb *zb, const loom_host_api *host,
                               const loom_stage_graph *g, const char *who, loom_error *err)
{
    int64_t RM = (int64_t)g->n_ranks * (g->n_microbatches > 0 ? g->n_microbatches : 1);
    int64_t n = 2 * RM + g->n_ranks;
    if (n > zb->cap_reserve) {
        int64_t *a = host->realloc(zb->reserve, (size_t)n * sizeof *a);
        if (!a)
            return host->error(err, LOOM_ENOMEM, "%s: out of memory", who);
        zb->reserve = a;
        zb->cap_reserve = n;
    }
    memset(zb->reserve, 0, (size_t)n * sizeof *zb->reserve);
    zb->total = zb->reserve;
    zb->pending = zb->reserve + RM;
    zb->held_back = zb->pending + RM;
    for (int32_t v = 0; v < g->n_stages; v++)
        if (g->kind[v] == LOOM_STAGE_F && g->mem_delta_bytes[v] > 0)
            zb->total[(int64_t)g->rank[v] * g->n_microbatches + g->microbatch[v]] +=
                g->mem_delta_bytes[v];
    return LOOM_OK;
}

/* Fills the per-stage queue type, priority and tie key; checks the
 * microbatch ids the in-flight count is indexed by. */
static int zb_keys(loom_zb *zb, const loom_host_api *host, const loom_stage_graph *g,
                   const float *priorities, const char *who, loom_error *err)
{
    int groups_ok = 1;
    for (int32_t v = 0; v < g->n_stages; v++) {
        int32_t grp = g->group[v], mb = g->microbatch[v];
        if (mb < 0 || mb >= g->n_microbatches)
            return host->error(err, LOOM_EINVAL, "%s: stage %d is in microbatch %d, "
                               "expected 0..%d", who, v, mb, g->n_microbatches - 1);
        float p = priorities && grp >= 0 && grp < g->n_groups
                      ? priorities[grp]
                      : -(float)grp;
        if (p != p)
            p = -3.0e38f; /* NaN runs last */
        uint8_t k = g->kind[v];
        zb->ls.type[v] = k == LOOM_STAGE_F ? (g->chunk[v] > 0 ? ZB_FC : ZB_F)
                         : k == LOOM_STAGE_W ? ZB_W
                         : k <= LOOM_STAGE_I ? ZB_I : 255;
        int32_t sub = g->sub[v] < 0 ? 0 : (g->sub[v] > 16383 ? 16383 : g->sub[v]);
        int32_t pos = g->position[v] < 0 ? 0
                      : (g->position[v] > 65535 ? 65535 : g->position[v]);
        zb->ls.prio[v] = p;
        zb->ls.tie[v] = sub * 65536 + (k == LOOM_STAGE_F ? pos : 65535 - pos);
        zb->ls.group[v] = grp;
        groups_ok &= grp >= 0 && grp < g->n_groups;
    }
    /* the same priorities per group, for the kit's counting sort */
    zb->ls.n_groups = groups_ok ? g->n_groups : 0;
    for (int32_t k = 0; k < zb->ls.n_groups; k++) {
        float p = priorities ? priorities[k] : -(float)k;
        zb->ls.group_prio[k] = p != p ? -3.0e38f : p;
    }
    return LOOM_OK;
}

static int64_t zb_need(const loom_zb *zb, const loom_stage_graph *g, int32_t f);

/* 1 when rank r may start forward f now (in-flight limit and cap). */
static int zb_forward_fits(loom_zb *zb, const loom_stage_graph *g, int32_t r,
                           int32_t f, int64_t limit)
{
    int32_t mb = g->microbatch[f];
    if (limit > 0 && zb->open[(int64_t)r * g->n_microbatches + mb] == 0 &&
        zb->open_mb[r] >= limit)
        return 0;
    return !(g->memory_cap_bytes > 0) || (double)zb_need(zb, g, f) <= g->memory_cap_bytes;
}

/* 1 when forward a (start ta) comes before forward b (start tb) in one
 * queue: earlier start, then higher priority, lower tie key, lower id. */
static int zb_f_before(const loom_ls *ls, int32_t a, double ta, int32_t b, double tb)
{
    if (ta != tb)
        return ta < tb;
    if (ls->prio[a] != ls->prio[b])
        return ls->prio[a] > ls->prio[b];
    if (ls->tie[a] != ls->tie[b])
        return ls->tie[a] < ls->tie[b];
    return a < b;
}

/* Decides what rank r would run next; returns its start or -1. */
static double zb_decide(loom_zb *zb, const loom_stage_graph *g, int32_t r,
                        int64_t limit)
{
    loom_ls *ls = &zb->ls;
    double t[4];
    int32_t c[4];
    for (int q = 0; q < 4; q++)
        c[q] = loom_ls_peek(ls, r, q, &t[q]);
    zb->blocked_f[r] = -1;
    /* the two forward queues act as one (earliest start, then priority,
     * tie key, id); a blocked first choice lets the other through */
    int first = ZB_F, second = ZB_FC;
    if (c[ZB_FC] >= 0 && (c[ZB_F] < 0 || zb_f_before(ls, c[ZB_FC], t[ZB_FC], c[ZB_F], t[ZB_F]))) {
        first = ZB_FC;
        second = ZB_F;
    }
    int32_t blocked = -1;
    if (c[first] >= 0 && !zb_forward_fits(zb, g, r, c[first], limit)) {
        blocked = c[first];
        c[first] = -1;
    }
    if (c[first] < 0 && c[second] >= 0) {
        if (zb_forward_fits(zb, g, r, c[second], limit)) {
            c[first] = c[second];
            t[first] = t[second];
        } else if (blocked < 0 || zb_need(zb, g, c[second]) < zb_need(zb, g, blocked)) {
            blocked = c[second];
        }
    }
    c[ZB_F] = c[first];
    t[ZB_F] = t[first];
    if (blocked >= 0 && c[ZB_F] < 0 && c[ZB_I] < 0 && c[ZB_W] < 0)
        zb->blocked_f[r] = blocked;
    /* Preference among the queues that can start earliest. */
    static const int after_f[3] = {ZB_I, ZB_F, ZB_W};
    static const int after_other[3] = {ZB_F, ZB_I, ZB_W};
    const int *order = ls->last_type[r] == ZB_F || ls->last_type[r] == ZB_FC ? after_f
                                                                            : after_other;
    double best = -1;
    for (int q = 0; q < 3; q++)
        if (c[q] >= 0 && (best < 0 || t[q] < best))
            best = t[q];
    zb->choice[r] = -1;
    for (int i = 0; i < 3 && best >= 0; i++) {
        int q = order[i];
        if (c[q] >= 0 && t[q] == best) {
            zb->choice[r] = c[q];
            break;
        }
    }
    return best;
}

/* Updates the in-flight counts for a placed stage. */
static void zb_track(loom_zb *zb, const loom_stage_graph *g, int32_t v)
{
    int32_t r = g->rank[v];
    int32_t *o = &zb->open[(int64_t)r * g->n_microbatches + g->microbatch[v]];
    uint8_t k = g->kind[v];
    int64_t rm = (int64_t)r * g->n_microbatches + g->microbatch[v];
    int64_t *pend = &zb->pending[rm];
    if (k == LOOM_STAGE_F) {
        int64_t d = g->mem_delta_bytes[v] > 0 ? g->mem_delta_bytes[v] : 0;
        if (*o == 0) { /* reserve room for its other forwards here */
            *pend = zb->total[rm] > d ? zb->total[rm] - d : 0;
            zb->held_back[r] += *pend;
        } else { /* a later forward uses (part of) its reservation */
            int64_t use = d < *pend ? d : *pend;
            *pend -= use;
            zb->held_back[r] -= use;
        }
        if ((*o)++ == 0)
            zb->open_mb[r]++;
    } else if (k == LOOM_STAGE_W || k == LOOM_STAGE_B) {
        if (*o > 0 && --(*o) == 0) {
            zb->open_mb[r]--;
            zb->held_back[r] -= *pend; /* closed: what it did not use */
            *pend = 0;
        }
    }
}

/* Bytes rank r would hold, reservations included, once forward f starts:
 * what it holds and every microbatch's reservation there, plus f's
 * activation out of its microbatch's reservation, or plus all the
 * forwards of f's microbatch on the rank when f opens it there (a
 * banker's rule: whatever a rank admits, every microbatch in flight can
 * still take its remaining forwards through it). */
static int64_t zb_need(const loom_zb *zb, const loom_stage_graph *g, int32_t f)
{
    int32_t r = g->rank[f];
    int64_t rm = (int64_t)r * g->n_microbatches + g->microbatch[f];
    int64_t need = (g->static_bytes ? g->static_bytes[r] : 0) + zb->ls.mem_bytes[r] +
                   zb->held_back[r];
    if (zb->open[rm] == 0)
        return need + (zb->total[rm] > g->mem_delta_bytes[f] ? zb->total[rm]
                                                              : g->mem_delta_bytes[f]);
    int64_t d = g->mem_delta_bytes[f];
    return need + d - (d < zb->pending[rm] ? d : zb->pending[rm]);
}

/* When every rank with work is blocked: the blocked forward to run anyway
 * (loom_ls_pick_forced's choice without a cap; with one, the least
 * demanding that fits it with its headroom), -1 when none is blocked, -2
 * when every blocked one would break the cap. */
static int32_t zb_pick_forced(loom_zb *zb, const loom_stage_graph *g, int64_t limit)
{
    (void)limit;
    if (!(g->memory_cap_bytes > 0))
        return loom_ls_pick_forced(&zb->ls, g, zb->blocked_f);
    int32_t best = -1, any = 0;
    int64_t best_need = 0;
    double best_start = 0;
    for (int32_t r = 0; r < g->n_ranks; r++) {
        int32_t f = zb->blocked_f[r];
        if (f < 0)
            continue;
        any = 1;
        int64_t need = zb_need(zb, g, f);
        if ((double)need > g->memory_cap_bytes)
            continue;
        double start = zb->ls.last_ms[r] > zb->ls.ready_ms[f] ? zb->ls.last_ms[r]
                                                                 : zb->ls.ready_ms[f];
        if (best < 0 || need < best_need || (need == best_need && start < best_start)) {
            best = f;
            best_need = need;
            best_start = start;
        }
    }
    return best >= 0 ? best : any ? -2 : -1;
}

/* LOOM_EINFEASIBLE naming the least demanding blocked forward. */
static int zb_refuse(loom_zb *zb, const loom_host_api *host, const loom_stage_graph *g,
                     const char *who, loom_error *err)
{
    int32_t v = -1;
    int64_t need = 0;
    for (int32_t r = 0; r < g->n_ranks; r++) {
        int32_t f = zb->blocked_f[r];
        if (f >= 0 && (v < 0 || zb_need(zb, g, f) < need)) {
            v = f;
            need = zb_need(zb, g, f);
        }
    }
    int32_t r = g->rank[v];
    return host->error(err, LOOM_EINFEASIBLE,
                       "%s: no order within the memory cap of %.0f bytes: every rank with "
                       "work waits for memory; the least demanding forward, stage %d "
                       "(microbatch %d, chunk %d on rank %d), needs %lld bytes with what the "
                       "rank holds (%lld) and the room kept for the microbatches in flight; "
                       "raise the cap or add a memory tuner",
                       who, g->memory_cap_bytes, v, g->microbatch[v], g->chunk[v], r,
                       (long long)need, (long long)zb->ls.mem_bytes[r]);
}

/* Before ordering: LOOM_EINFEASIBLE when some rank cannot hold the
 * forwards of one microbatch through all its chunks (each runs before
 * that microbatch's first backward there) next to its static bytes,
 * whatever the order: every microbatch passes every rank. */
static int zb_precheck(const loom_zb *zb, const loom_host_api *host, const loom_stage_graph *g,
                       const char *who, loom_error *err)
{
    if (!(g->memory_cap_bytes > 0))
        return LOOM_OK;
    for (int32_t r = 0; r < g->n_ranks; r++) {
        int64_t stat = g->static_bytes ? g->static_bytes[r] : 0;
        for (int32_t k = 0; k < g->n_microbatches; k++) {
            int64_t b = zb->total[(int64_t)r * g->n_microbatches + k];
            if (b > 0 && (double)(stat + b) > g->memory_cap_bytes)
                return host->error(err, LOOM_EINFEASIBLE,
                                   "%s: rank %d cannot run within the memory cap of %.0f "
                                   "bytes in any order: microbatch %d's forwards through its "
                                   "chunks there hold %lld bytes together, with %lld static; "
                                   "raise the cap or add a memory tuner",
                                   who, r, g->memory_cap_bytes, k, (long long)b,
                                   (long long)stat);
        }
    }
    return LOOM_OK;
}

/* Writes the zero-bubble order (see the header). */
int loom_zb_order(loom_zb *zb, const loom_host_api *host,
                  const loom_stage_graph *g, const float *priorities,
                  int64_t max_inflight, loom_schedule *out, const char *who,
                  loom_error *err)
{
    loom_ls *ls = &zb->ls;
    int rc = zb_reserve(zb, host, g, who, err);
    if (rc == LOOM_OK)
        rc = zb_keys(zb, host, g, priorities, who, err);
    if (rc == LOOM_OK)
        rc = zb_reserve_headroom(zb, host, g, who, err);
    if (rc == LOOM_OK)
        rc = zb_precheck(zb, host, g, who, err);
    if (rc == LOOM_OK)
        rc = loom_ls_begin(ls, g, out, who, err);
    if (rc != LOOM_OK)
        return rc;
    int64_t limit = max_inflight;
    if (limit == 0 && !(g->memory_cap_bytes > 0))
        limit = g->n_ranks; /* ZB-H1 when nothing else bounds memory */
    memset(zb->open, 0, (size_t)g->n_ranks * (size_t)g->n_microbatches * sizeof *zb->open);
    memset(zb->open_mb, 0, (size_t)g->n_ranks * sizeof *zb->open_mb);

    while (ls->placed < g->n_stages) {
        for (int32_t i = 0; i < ls->n_dirty; i++) {
            int32_t r = ls->dirty[i];
            ls->is_dirty[r] = 0;
            double t = zb_decide(zb, g, r, limit);
            if (t >= 0)
                loom_ls_rank_push(ls, r, t);
            else
                loom_ls_rank_drop(ls, r);
        }
        ls->n_dirty = 0;
        int32_t r = loom_ls_rank_pop(ls);
        int32_t v = r >= 0 ? zb->choice[r] : zb_pick_forced(zb, g, limit);
        if (v == -2) { /* every waiting forward would break the cap */
            out->n_stages = g->n_stages; /* the host's size; the order is unusable */
            return zb_refuse(zb, host, g, who, err);
        }
        if (v < 0)
            break;
        if (r < 0)
            zb->blocked_f[g->rank[v]] = -1;
        zb_track(zb, g, v);
        loom_ls_place(ls, g, v, out);
    }
    return loom_ls_end(ls, g, out, who, err);
}
