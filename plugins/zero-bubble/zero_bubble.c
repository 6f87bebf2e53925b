/*
 * zero_bubble.c - a zero-bubble interleaver (ZB-H1 / ZB-H2 behaviour of Qi
 * et al., "Zero Bubble Pipeline Parallelism", ICLR 2024) for graphs whose
 * backward is split into I (input gradient) and W (weight gradient).
 *
 * A greedy list scheduler over the shared list-scheduling core: every rank
 * keeps three queues (F; I or unsplit B; W) and the rank that can start
 * something earliest places one stage:
 *   - I is on the critical path: the backward chain waits for it, so it
 *     runs as soon as it is ready, alternating with F 1F1B-style when both
 *     are ready (after an F the I goes first, after an I or W the F);
 *   - F only while the rank's in-flight microbatches (F started, W not yet
 *     ended) stay under `max_inflight` and its activation fits the memory
 *     cap (memory_cap_bytes - static_bytes[rank], when cap > 0);
 *   - W only when neither an I nor an allowed F can start at that moment,
 *     i.e. it fills otherwise-idle time, and always when the in-flight
 *     limit blocks the forwards (a W frees its microbatch's activation).
 * max_inflight: 0 derives the limit from the memory cap (bytes only), or
 * P microbatches when the graph has no cap; P is ZB-H1's memory, 2P
 * ZB-H2's. Ties inside a queue: higher priority, lower sub-microbatch,
 * position order (forwards ascending, backwards descending), stage id.
 * When every rank with work is blocked by the limit or the cap, the
 * blocked forward leaving its rank with the least memory runs anyway.
 */
#include <string.h>
#include <loom/kits/listsched.h>

#define ZB_F 0
#define ZB_I 1
#define ZB_W 2

typedef struct zb_self {
    const loom_host_api *host;
    loom_ctx *ctx;
    int64_t max_inflight;  /* param; 0 = derive */
    loom_ls ls;
    int32_t *choice;       /* per rank: stage decided at its last update */
    int32_t *blocked_f;    /* per rank: blocked forward, or -1 */
    int32_t *open_mb;      /* per rank: microbatches in flight */
    int32_t cap_ranks;
    int32_t *open;         /* per (rank, microbatch): open stage pairs */
    int64_t cap_open;
} zb_self;

/* Creates an instance; reads max_inflight. */
static int zb_create(const loom_host_api *host, loom_ctx *ctx,
                     void *plugin_state, void **self, loom_error *err)
{
    (void)plugin_state;
    int64_t limit = 0;
    int rc = host->param_int(ctx, "max_inflight", &limit);
    if (rc == LOOM_ENOTFOUND)
        return loom_param_error(host, err, "zero-bubble", "max_inflight", "int", rc);
    else if (rc != LOOM_OK)
        return host->error(err, rc, "zero-bubble: params.max_inflight: "
                           "expected an integer >= 0");
    if (limit < 0)
        return host->error(err, LOOM_EINVAL, "zero-bubble: params.max_inflight:"
                           " expected an integer >= 0, found %lld",
                           (long long)limit);
    zb_self *s = host->alloc(sizeof *s);
    if (!s)
        return host->error(err, LOOM_ENOMEM, "zero-bubble: out of memory");
    memset(s, 0, sizeof *s);
    s->host = host;
    s->ctx = ctx;
    s->max_inflight = limit;
    *self = s;
    return LOOM_OK;
}

/* Releases an instance and its scratch. */
static void zb_destroy(void *self)
{
    zb_self *s = self;
    if (!s)
        return;
    loom_ls_release(&s->ls);
    s->host->free(s->choice);
    s->host->free(s->blocked_f);
    s->host->free(s->open_mb);
    s->host->free(s->open);
    s->host->free(s);
}

/* The host builds I + W stages for this interleaver. */
static int zb_wants_split(void *self)
{
    (void)self;
    return 1;
}

/* Grows the per-rank and per-(rank, microbatch) arrays. */
static int zb_reserve(zb_self *s, const loom_stage_graph *g, loom_error *err)
{
    int rc = loom_ls_reserve(&s->ls, s->host, g, 3, "zero-bubble", err);
    if (rc != LOOM_OK)
        return rc;
    if (g->n_ranks > s->cap_ranks) {
        size_t n = (size_t)g->n_ranks;
        int32_t *a = s->host->realloc(s->choice, n * sizeof *a);
        if (a)
            s->choice = a;
        int32_t *b = s->host->realloc(s->blocked_f, n * sizeof *b);
        if (b)
            s->blocked_f = b;
        int32_t *c = s->host->realloc(s->open_mb, n * sizeof *c);
        if (c)
            s->open_mb = c;
        if (!a || !b || !c)
            return s->host->error(err, LOOM_ENOMEM, "zero-bubble: out of memory");
        s->cap_ranks = g->n_ranks;
    }
    int64_t n_open = (int64_t)g->n_ranks * (g->n_microbatches > 0 ? g->n_microbatches : 1);
    if (n_open > s->cap_open) {
        int32_t *o = s->host->realloc(s->open, (size_t)n_open * sizeof *o);
        if (!o)
            return s->host->error(err, LOOM_ENOMEM, "zero-bubble: out of memory");
        s->open = o;
        s->cap_open = n_open;
    }
    return LOOM_OK;
}

/* Fills the per-stage queue type, priority and tie key; checks the
 * microbatch ids the in-flight count is indexed by. */
static int zb_keys(zb_self *s, const loom_stage_graph *g,
                   const float *priorities, loom_error *err)
{
    for (int32_t v = 0; v < g->n_stages; v++) {
        int32_t grp = g->group[v], mb = g->microbatch[v];
        if (mb < 0 || mb >= g->n_microbatches)
            return s->host->error(err, LOOM_EINVAL, "zero-bubble: stage %d is "
                                  "in microbatch %d, expected 0..%d", v, mb,
                                  g->n_microbatches - 1);
        float p = priorities && grp >= 0 && grp < g->n_groups
                      ? priorities[grp]
                      : -(float)grp;
        if (p != p)
            p = -3.0e38f; /* NaN runs last */
        uint8_t k = g->kind[v];
        s->ls.type[v] = k == LOOM_STAGE_F ? ZB_F
                        : k == LOOM_STAGE_W ? ZB_W
                        : k <= LOOM_STAGE_I ? ZB_I : 255;
        int32_t sub = g->sub[v] < 0 ? 0 : (g->sub[v] > 16383 ? 16383 : g->sub[v]);
        int32_t pos = g->position[v] < 0 ? 0
                      : (g->position[v] > 65535 ? 65535 : g->position[v]);
        s->ls.prio[v] = p;
        s->ls.tie[v] = sub * 65536 + (k == LOOM_STAGE_F ? pos : 65535 - pos);
    }
    return LOOM_OK;
}

/* 1 when rank r may start forward f now (in-flight limit and cap). */
static int zb_forward_fits(zb_self *s, const loom_stage_graph *g, int32_t r,
                           int32_t f, int64_t limit)
{
    int32_t mb = g->microbatch[f];
    if (limit > 0 && s->open[(int64_t)r * g->n_microbatches + mb] == 0 &&
        s->open_mb[r] >= limit)
        return 0;
    if (g->memory_cap_bytes > 0 &&
        (double)(g->static_bytes[r] + s->ls.mem_bytes[r] +
                 g->mem_delta_bytes[f]) > g->memory_cap_bytes)
        return 0;
    return 1;
}

/* Decides what rank r would run next; returns its start or -1. */
static double zb_decide(zb_self *s, const loom_stage_graph *g, int32_t r,
                        int64_t limit)
{
    loom_ls *ls = &s->ls;
    double t[3];
    int32_t c[3];
    for (int q = 0; q < 3; q++)
        c[q] = loom_ls_peek(ls, r, q, &t[q]);
    s->blocked_f[r] = -1;
    if (c[ZB_F] >= 0 && !zb_forward_fits(s, g, r, c[ZB_F], limit)) {
        if (c[ZB_I] < 0 && c[ZB_W] < 0)
            s->blocked_f[r] = c[ZB_F];
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
    s->choice[r] = -1;
    for (int i = 0; i < 3 && best >= 0; i++) {
        int q = order[i];
        if (c[q] >= 0 && t[q] == best) {
            s->choice[r] = c[q];
            break;
        }
    }
    return best;
}

/* Updates the in-flight counts for a placed stage. */
static void zb_track(zb_self *s, const loom_stage_graph *g, int32_t v)
{
    int32_t r = g->rank[v];
    int32_t *o = &s->open[(int64_t)r * g->n_microbatches + g->microbatch[v]];
    uint8_t k = g->kind[v];
    if (k == LOOM_STAGE_F) {
        if ((*o)++ == 0)
            s->open_mb[r]++;
    } else if (k == LOOM_STAGE_W || k == LOOM_STAGE_B) {
        if (*o > 0 && --(*o) == 0)
            s->open_mb[r]--;
    }
}

/* Writes the zero-bubble order of every rank into `out`. */
static int zb_interleave(void *self, const loom_stage_graph *g,
                         const float *priorities, loom_schedule *out,
                         loom_error *err)
{
    zb_self *s = self;
    loom_ls *ls = &s->ls;
    int rc = zb_reserve(s, g, err);
    if (rc == LOOM_OK)
        rc = zb_keys(s, g, priorities, err);
    if (rc == LOOM_OK)
        rc = loom_ls_begin(ls, g, out, "zero-bubble", err);
    if (rc != LOOM_OK)
        return rc;
    int64_t limit = s->max_inflight;
    if (limit == 0 && !(g->memory_cap_bytes > 0))
        limit = g->n_ranks; /* ZB-H1 when nothing else bounds memory */
    memset(s->open, 0, (size_t)g->n_ranks * (size_t)g->n_microbatches * sizeof *s->open);
    memset(s->open_mb, 0, (size_t)g->n_ranks * sizeof *s->open_mb);

    while (ls->placed < g->n_stages) {
        for (int32_t i = 0; i < ls->n_dirty; i++) {
            int32_t r = ls->dirty[i];
            ls->is_dirty[r] = 0;
            double t = zb_decide(s, g, r, limit);
            if (t >= 0)
                loom_ls_rank_push(ls, r, t);
            else
                loom_ls_rank_drop(ls, r);
        }
        ls->n_dirty = 0;
        int32_t r = loom_ls_rank_pop(ls);
        int32_t v = r >= 0 ? s->choice[r] : loom_ls_pick_forced(ls, g, s->blocked_f);
        if (v < 0)
            break;
        if (r < 0)
            s->blocked_f[g->rank[v]] = -1;
        zb_track(s, g, v);
        loom_ls_place(ls, g, v, out);
    }
    return loom_ls_end(ls, g, out, "zero-bubble", err);
}

static const loom_interleaver_vtable zb_vtable = {
    { sizeof(loom_interleaver_vtable), LOOM_INTERLEAVER_VERSION },
    zb_create,
    zb_destroy,
    zb_interleave,
    zb_wants_split,
};

/* Returns the interleaver vtable for role "interleaver", else NULL. */
static const loom_role_header *zb_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_INTERLEAVER) == 0)
        return &zb_vtable.header;
    return NULL;
}

static const loom_plugin_info zb_info = {
    LOOM_PLUGIN_INFO_HEADER,
    "org.loom.zero-bubble",
    "1.0.0",
    NULL,
    NULL,
    zb_role,
};

LOOM_PLUGIN_DEFINE(zero_bubble, zb_info);
