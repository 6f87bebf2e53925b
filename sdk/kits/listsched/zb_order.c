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
    }
    memset(zb, 0, sizeof *zb);
}

/* Grows the per-rank and per-(rank, microbatch) arrays. */
static int zb_reserve(loom_zb *zb, const loom_host_api *host,
                      const loom_stage_graph *g, const char *who, loom_error *err)
{
    int rc = loom_ls_reserve(&zb->ls, host, g, 3, who, err);
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

/* Fills the per-stage queue type, priority and tie key; checks the
 * microbatch ids the in-flight count is indexed by. */
static int zb_keys(loom_zb *zb, const loom_host_api *host, const loom_stage_graph *g,
                   const float *priorities, const char *who, loom_error *err)
{
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
        zb->ls.type[v] = k == LOOM_STAGE_F ? ZB_F
                         : k == LOOM_STAGE_W ? ZB_W
                         : k <= LOOM_STAGE_I ? ZB_I : 255;
        int32_t sub = g->sub[v] < 0 ? 0 : (g->sub[v] > 16383 ? 16383 : g->sub[v]);
        int32_t pos = g->position[v] < 0 ? 0
                      : (g->position[v] > 65535 ? 65535 : g->position[v]);
        zb->ls.prio[v] = p;
        zb->ls.tie[v] = sub * 65536 + (k == LOOM_STAGE_F ? pos : 65535 - pos);
    }
    return LOOM_OK;
}

/* 1 when rank r may start forward f now (in-flight limit and cap). */
static int zb_forward_fits(loom_zb *zb, const loom_stage_graph *g, int32_t r,
                           int32_t f, int64_t limit)
{
    int32_t mb = g->microbatch[f];
    if (limit > 0 && zb->open[(int64_t)r * g->n_microbatches + mb] == 0 &&
        zb->open_mb[r] >= limit)
        return 0;
    int64_t stat = g->static_bytes ? g->static_bytes[r] : 0;
    if (g->memory_cap_bytes > 0 &&
        (double)(stat + zb->ls.mem_bytes[r] + g->mem_delta_bytes[f]) > g->memory_cap_bytes)
        return 0;
    return 1;
}

/* Decides what rank r would run next; returns its start or -1. */
static double zb_decide(loom_zb *zb, const loom_stage_graph *g, int32_t r,
                        int64_t limit)
{
    loom_ls *ls = &zb->ls;
    double t[3];
    int32_t c[3];
    for (int q = 0; q < 3; q++)
        c[q] = loom_ls_peek(ls, r, q, &t[q]);
    zb->blocked_f[r] = -1;
    if (c[ZB_F] >= 0 && !zb_forward_fits(zb, g, r, c[ZB_F], limit)) {
        if (c[ZB_I] < 0 && c[ZB_W] < 0)
            zb->blocked_f[r] = c[ZB_F];
        c[ZB_F] = -1;
    }
    /* Preference among the queues that can start earliest. */
    static const int after_f[3] = {ZB_I, ZB_F, ZB_W};
    static const int after_other[3] = {ZB_F, ZB_I, ZB_W};
    const int *order = ls->last_type[r] == ZB_F ? after_f : after_other;
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
    if (k == LOOM_STAGE_F) {
        if ((*o)++ == 0)
            zb->open_mb[r]++;
    } else if (k == LOOM_STAGE_W || k == LOOM_STAGE_B) {
        if (*o > 0 && --(*o) == 0)
            zb->open_mb[r]--;
    }
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
        int32_t v = r >= 0 ? zb->choice[r] : loom_ls_pick_forced(ls, g, zb->blocked_f);
        if (v < 0)
            break;
        if (r < 0)
            zb->blocked_f[g->rank[v]] = -1;
        zb_track(zb, g, v);
        loom_ls_place(ls, g, v, out);
    }
    return loom_ls_end(ls, g, out, who, err);
}
