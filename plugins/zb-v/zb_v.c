/*
 * zb_v.c - V-shape interleavers under a memory budget: ZB-V (Qi et al.,
 * "Zero Bubble Pipeline Parallelism", ICLR 2024, section 6) and the
 * controllable-memory family V-ZB, V-Half and V-Min (Qi et al.,
 * "Pipeline Parallelism with Controllable Memory", NeurIPS 2024), for
 * graphs whose backward is split into I (input gradient) and W (weight
 * gradient), on any placement (built for the V placement, where every
 * rank holds chunk s and chunk 2P-1-s).
 *
 * The variant sets each rank's activation budget as a share of 1F1B's
 * peak, which holds P microbatches of the rank's layers: budget_r =
 * ceil(f * P * share_r) bytes, share_r the most one microbatch's forwards
 * on rank r add, f = 1 (zb-v, v-zb), 1/2 (v-half), 1/3 (v-min). A graph
 * memory cap lowers it further (cap - static bytes).
 *
 * A greedy list scheduler over the list-scheduling kit places one stage
 * at a time on the rank that can start something earliest. Queues per
 * rank: I (or unsplit B), F with predecessors (a later position), F
 * without (the first position of a microbatch: it admits one), W. Among
 * the queues that can start earliest it prefers I (the backward chain
 * waits on it), then F of a later position (it carries a microbatch on
 * to the turn of the V), then a new microbatch, then W (which fills time
 * otherwise idle); or the same with the later F before I (a second order
 * tried). A forward runs only when its bytes fit the rank's budget; a
 * new microbatch only while fewer than K admitted microbatches still
 * have input-gradient work.
 * With K0 = min_r floor(budget_r / share_r) admitted microbatches every
 * one of them fits on every rank, so a blocked forward always leaves a W
 * to run and the greedy cannot stall; a larger K lets ranks hold more of
 * the early chunks. The call tries both preference orders with K = K0 ..
 * 2 K0 + 1 (at most M) and keeps the schedule with the smallest makespan
 * (ties: the first order, then the smaller K), copying the best order
 * aside so no pass runs twice. A change in the admitted count re-decides
 * only the ranks with first-position forwards, whose choice it alone
 * affects.
 * Ties inside a queue: higher priority, lower sub-microbatch, later
 * position, stage id.
 */
#include <math.h>
#include <string.h>
#include <loom/kits/listsched.h>

#define ZV_I 0
#define ZV_F 1
#define ZV_NEW 2
#define ZV_W 3
#define ZV_TYPES 4

typedef struct zv_self {
    const loom_host_api *host;
    loom_ctx *ctx;
    int32_t num, den;      /* budget fraction of 1F1B's peak */
    loom_ls ls;
    int32_t cap_ranks;
    int32_t *choice;       /* per rank: stage decided at its last update */
    int64_t *share;        /* per rank: bytes of one microbatch's forwards */
    int64_t *budget;       /* per rank: activation bytes allowed */
    int64_t cap_mb;
    uint8_t *started;      /* per microbatch: admitted */
    int32_t *back_left;    /* per microbatch: I or B stages not placed */
    int64_t cap_cells;
    int64_t *cell;         /* per (rank, microbatch): forward bytes */
    int32_t *new_ranks;    /* the ranks holding first-position forwards ... */
    int32_t n_new_ranks;   /* ... (the only decisions admission changes) */
    int32_t *best_order;   /* the order of the best pass so far */
    int32_t cap_order;
    int32_t inflight;      /* admitted microbatches with back_left > 0 */
    int32_t admit;         /* K of the current try */
    const int *prefer;     /* queue types in order of preference, this try */
} zv_self;

/* The two preference orders a call tries: I first (the backward chain
 * waits on it), or a forward already admitted first (it reaches the turn
 * of the V sooner, which the smaller budgets need). */
static const int zv_orders[2][ZV_TYPES] = {{ZV_I, ZV_F, ZV_NEW, ZV_W},
                                           {ZV_F, ZV_I, ZV_NEW, ZV_W}};

/* The params, declared once in zv_param_table (manifest.json says the same). */
typedef struct zv_params {
    const char *variant;
} zv_params;

static const loom_param_def zv_param_table[] = {
    LOOM_ENUM_PARAM(zv_params, variant, "zb-v", "zb-v|v-zb|v-half|v-min",
                   "activation budget per rank as a share of 1F1B's peak: zb-v and v-zb 1 "
                   "(the same budget), v-half 1/2, v-min 1/3 (rounded up to whole bytes, "
                   "never below one microbatch)"),
    LOOM_PARAM_END};

/* Creates an instance; reads the variant. */
static int zv_create(const loom_host_api *host, loom_ctx *ctx,
                     void *plugin_state, void **self, loom_error *err)
{
    (void)plugin_state;
    zv_params prm;
    int rc = loom_params_read(host, ctx, "zb-v", zv_param_table, &prm, err);
    if (rc != LOOM_OK)
        return rc;
    int32_t num = 1, den = 1; /* "zb-v" and "v-zb": 1/1 */
    if (strcmp(prm.variant, "v-half") == 0)
        den = 2;
    else if (strcmp(prm.variant, "v-min") == 0)
        den = 3;
    zv_self *s = host->alloc(sizeof *s);
    if (!s)
        return host->error(err, LOOM_ENOMEM, "zb-v: out of memory");
    memset(s, 0, sizeof *s);
    s->host = host;
    s->ctx = ctx;
    s->num = num;
    s->den = den;
    *self = s;
    return LOOM_OK;
}

/* Releases an instance and its scratch. */
static void zv_destroy(void *self)
{
    zv_self *s = self;
    if (!s)
        return;
    loom_ls_release(&s->ls);
    s->host->free(s->choice);
    s->host->free(s->share);
    s->host->free(s->budget);
    s->host->free(s->started);
    s->host->free(s->back_left);
    s->host->free(s->cell);
    s->host->free(s->new_ranks);
    s->host->free(s->best_order);
    s->host->free(s);
}

/* The host builds I + W stages for this interleaver. */
static int zv_wants_split(void *self)
{
    (void)self;
    return 1;
}

/* Grows the per-rank, per-microbatch and per-cell arrays. */
static int zv_reserve(zv_self *s, const loom_stage_graph *g, loom_error *err)
{
    const loom_host_api *h = s->host;
    int rc = loom_ls_reserve(&s->ls, h, g, ZV_TYPES, "zb-v", err);
    if (rc != LOOM_OK)
        return rc;
    int bad = 0;
    if (g->n_ranks > s->cap_ranks) {
        size_t n = (size_t)g->n_ranks;
        int32_t *c = h->realloc(s->choice, n * sizeof *c);
        if (c)
            s->choice = c;
        int64_t *sh = h->realloc(s->share, n * sizeof *sh);
        if (sh)
            s->share = sh;
        int64_t *b = h->realloc(s->budget, n * sizeof *b);
        if (b)
            s->budget = b;
        int32_t *nr = h->realloc(s->new_ranks, n * sizeof *nr);
        if (nr)
            s->new_ranks = nr;
        bad |= !c || !sh || !b || !nr;
        if (!bad)
            s->cap_ranks = g->n_ranks;
    }
    int64_t M = g->n_microbatches > 0 ? g->n_microbatches : 1;
    if (!bad && M > s->cap_mb) {
        uint8_t *st = h->realloc(s->started, (size_t)M);
        if (st)
            s->started = st;
        int32_t *bl = h->realloc(s->back_left, (size_t)M * sizeof *bl);
        if (bl)
            s->back_left = bl;
        bad |= !st || !bl;
        if (!bad)
            s->cap_mb = M;
    }
    if (!bad && g->n_stages > s->cap_order) {
        int32_t *o = h->realloc(s->best_order, (size_t)g->n_stages * sizeof *o);
        if (o) {
            s->best_order = o;
            s->cap_order = g->n_stages;
        }
        bad |= !o;
    }
    int64_t cells = (int64_t)g->n_ranks * M;
    if (!bad && cells > s->cap_cells) {
        int64_t *c = h->realloc(s->cell, (size_t)cells * sizeof *c);
        if (c) {
            s->cell = c;
            s->cap_cells = cells;
        }
        bad |= !c;
    }
    return bad ? h->error(err, LOOM_ENOMEM, "zb-v: out of memory") : LOOM_OK;
}

/* Fills queue types, priorities and tie keys; checks microbatch ids. */
static int zv_keys(zv_self *s, const loom_stage_graph *g,
                   const float *priorities, loom_error *err)
{
    for (int32_t v = 0; v < g->n_stages; v++) {
        int32_t grp = g->group[v], mb = g->microbatch[v];
        if (mb < 0 || mb >= g->n_microbatches)
            return s->host->error(err, LOOM_EINVAL, "zb-v: stage %d is in "
                                  "microbatch %d, expected 0..%d", v, mb,
                                  g->n_microbatches - 1);
        float p = priorities && grp >= 0 && grp < g->n_groups ? priorities[grp]
                                                              : -(float)grp;
        if (p != p)
            p = -3.0e38f; /* NaN runs last */
        uint8_t k = g->kind[v];
        int root = g->pred_off[v + 1] == g->pred_off[v]; /* starts its microbatch */
        s->ls.type[v] = k == LOOM_STAGE_F   ? (root ? ZV_NEW : ZV_F)
                        : k == LOOM_STAGE_W ? ZV_W
                        : k <= LOOM_STAGE_I ? ZV_I
                                            : 255;
        int32_t sub = g->sub[v] < 0 ? 0 : (g->sub[v] > 16383 ? 16383 : g->sub[v]);
        int32_t pos = g->position[v] < 0 ? 0
                      : (g->position[v] > 65535 ? 65535 : g->position[v]);
        s->ls.prio[v] = p;
        s->ls.tie[v] = sub * 65536 + (65535 - pos);
    }
    return LOOM_OK;
}

/* Sets every rank's share and budget; LOOM_EINFEASIBLE when the memory
 * cap leaves a rank less than one microbatch's activations. */
static int zv_budgets(zv_self *s, const loom_stage_graph *g, loom_error *err)
{
    int32_t P = g->n_ranks, M = g->n_microbatches;
    memset(s->cell, 0, (size_t)P * (size_t)M * sizeof *s->cell);
    for (int32_t v = 0; v < g->n_stages; v++)
        if (g->kind[v] == LOOM_STAGE_F && g->mem_delta_bytes[v] > 0 &&
            g->rank[v] >= 0 && g->rank[v] < P)
            s->cell[(int64_t)g->rank[v] * M + g->microbatch[v]] += g->mem_delta_bytes[v];
    for (int32_t r = 0; r < P; r++) {
        int64_t share = 0;
        for (int32_t mb = 0; mb < M; mb++)
            if (s->cell[(int64_t)r * M + mb] > share)
                share = s->cell[(int64_t)r * M + mb];
        s->share[r] = share;
        double b = ceil((double)P * (double)share * s->num / s->den);
        s->budget[r] = b > 4e18 ? (int64_t)4e18 : (int64_t)b;
        if (s->budget[r] < share) /* at least one microbatch */
            s->budget[r] = share;
        if (g->memory_cap_bytes > 0) {
            double room = g->memory_cap_bytes - (double)g->static_bytes[r];
            if (room < (double)share)
                return s->host->error(err, LOOM_EINFEASIBLE,
                                      "zb-v: rank %d: the memory cap leaves %.0f bytes for "
                                      "activations, one microbatch needs %lld there",
                                      r, room < 0 ? 0.0 : room, (long long)share);
            if (room < (double)s->budget[r])
                s->budget[r] = (int64_t)room;
        }
    }
    return LOOM_OK;
}

/* The admission level every admitted microbatch fits under on every rank. */
static int32_t zv_safe_admit(const zv_self *s, const loom_stage_graph *g)
{
    int64_t k = g->n_microbatches;
    for (int32_t r = 0; r < g->n_ranks; r++)
        if (s->share[r] > 0 && s->budget[r] / s->share[r] < k)
            k = s->budget[r] / s->share[r];
    return k < 1 ? 1 : (int32_t)k;
}

/* 1 when rank r may start forward f now. */
static int zv_forward_fits(const zv_self *s, const loom_stage_graph *g, int32_t r,
                           int32_t f)
{
    if (s->ls.mem_bytes[r] + g->mem_delta_bytes[f] > s->budget[r])
        return 0;
    return s->ls.type[f] != ZV_NEW || s->started[g->microbatch[f]] ||
           s->inflight < s->admit;
}

/* Decides what rank r would run next; returns its start or -1. */
static double zv_decide(zv_self *s, const loom_stage_graph *g, int32_t r)
{
    double t[ZV_TYPES];
    int32_t c[ZV_TYPES];
    for (int q = 0; q < ZV_TYPES; q++) {
        c[q] = loom_ls_peek(&s->ls, r, q, &t[q]);
        if (c[q] >= 0 && (q == ZV_F || q == ZV_NEW) && !zv_forward_fits(s, g, r, c[q]))
            c[q] = -1;
    }
    double best = -1;
    s->choice[r] = -1;
    for (int i = 0; i < ZV_TYPES; i++) { /* types in order of preference */
        int q = s->prefer[i];
        if (c[q] >= 0 && (best < 0 || t[q] < best)) {
            best = t[q];
            s->choice[r] = c[q];
        }
    }
    return best;
}

/* Lists the ranks that hold first-position forwards (a non-empty ZV_NEW
 * queue in the layout loom_ls_begin made): only their decisions read the
 * admission count (zv_forward_fits). */
static void zv_find_new_ranks(zv_self *s, int32_t P)
{
    const int32_t *q_off = s->ls.q_off;
    s->n_new_ranks = 0;
    for (int32_t r = 0; r < P; r++)
        if (q_off[r * ZV_TYPES + ZV_NEW + 1] > q_off[r * ZV_TYPES + ZV_NEW])
            s->new_ranks[s->n_new_ranks++] = r;
}

/* Marks the ranks with first-position forwards for a new decision (the
 * admission count changed; no other rank's choice depends on it). */
static void zv_mark_new_ranks(zv_self *s)
{
    loom_ls *ls = &s->ls;
    for (int32_t i = 0; i < s->n_new_ranks; i++) {
        int32_t r = s->new_ranks[i];
        if (!ls->is_dirty[r]) {
            ls->is_dirty[r] = 1;
            ls->dirty[ls->n_dirty++] = r;
        }
    }
}

/* One greedy pass admitting at most `admit` microbatches at once, with
 * preference order `order`. Returns the makespan, or -1 when it stalls
 * (every remaining forward blocked). */
static double zv_pass(zv_self *s, const loom_stage_graph *g, loom_schedule *out,
                      int32_t admit, int order, loom_error *err, int *rc)
{
    loom_ls *ls = &s->ls;
    *rc = loom_ls_begin(ls, g, out, "zb-v", err);
    if (*rc != LOOM_OK)
        return -1;
    zv_find_new_ranks(s, g->n_ranks);
    int32_t M = g->n_microbatches;
    s->admit = admit;
    s->prefer = zv_orders[order];
    s->inflight = 0;
    memset(s->started, 0, (size_t)M);
    memset(s->back_left, 0, (size_t)M * sizeof *s->back_left);
    for (int32_t v = 0; v < g->n_stages; v++)
        if (s->ls.type[v] == ZV_I)
            s->back_left[g->microbatch[v]]++;
    while (ls->placed < g->n_stages) {
        for (int32_t i = 0; i < ls->n_dirty; i++) {
            int32_t r = ls->dirty[i];
            ls->is_dirty[r] = 0;
            double t = zv_decide(s, g, r);
            if (t >= 0)
                loom_ls_rank_push(ls, r, t);
            else
                loom_ls_rank_drop(ls, r);
        }
        ls->n_dirty = 0;
        int32_t r = loom_ls_rank_pop(ls);
        if (r < 0)
            return -1;
        int32_t v = s->choice[r], mb = g->microbatch[v];
        int changed = 0;
        if (ls->type[v] == ZV_NEW && !s->started[mb]) {
            s->started[mb] = 1;
            s->inflight += s->back_left[mb] > 0;
            changed = 1;
        } else if (ls->type[v] == ZV_I && --s->back_left[mb] == 0 && s->started[mb]) {
            s->inflight--;
            changed = 1;
        }
        loom_ls_place(ls, g, v, out);
        if (changed)
            zv_mark_new_ranks(s);
    }
    double makespan = 0;
    for (int32_t r = 0; r < g->n_ranks; r++)
        makespan = ls->last_ms[r] > makespan ? ls->last_ms[r] : makespan;
    return makespan;
}

/* Writes the V-schedule order of every rank into `out`. */
static int zv_interleave(void *self, const loom_stage_graph *g,
                         const float *priorities, loom_schedule *out,
                         loom_error *err)
{
    zv_self *s = self;
    if (g->n_microbatches < 1 || g->n_ranks < 1)
        return s->host->error(err, LOOM_EINVAL, "zb-v: a graph of %d ranks and %d "
                              "microbatches", g->n_ranks, g->n_microbatches);
    int rc = zv_reserve(s, g, err);
    if (rc == LOOM_OK)
        rc = zv_keys(s, g, priorities, err);
    if (rc == LOOM_OK)
        rc = zv_budgets(s, g, err);
    if (rc != LOOM_OK)
        return rc;
    int32_t k0 = zv_safe_admit(s, g), best_k = -1, best_o = -1, last_k = -1, last_o = -1;
    int32_t k1 = 2 * k0 + 1 < g->n_microbatches ? 2 * k0 + 1 : g->n_microbatches;
    double best = -1;
    for (int o = 0; o < 2; o++)
        for (int32_t k = k0; k <= k1; k++) {
            double ms = zv_pass(s, g, out, k, o, err, &rc);
            if (rc != LOOM_OK)
                return rc;
            last_k = k;
            last_o = o;
            if (ms >= 0 && (best < 0 || ms < best)) {
                best = ms;
                best_k = k;
                best_o = o;
                if (k < k1 || o == 0) /* a later pass may overwrite it */
                    memcpy(s->best_order, out->order, (size_t)g->n_stages * sizeof *out->order);
            }
        }
    if (best_k < 0)
        return s->host->error(err, LOOM_EINFEASIBLE, "zb-v: no order keeps every rank "
                              "within its activation budget (%d to %d microbatches "
                              "admitted)", k0, k1);
    if (best_k == last_k && best_o == last_o)
        return loom_ls_end(&s->ls, g, out, "zb-v", err);
    /* the best pass placed every stage; every pass lays out the same
     * rank_off */
    memcpy(out->order, s->best_order, (size_t)g->n_stages * sizeof *out->order);
    out->n_stages = g->n_stages;
    return LOOM_OK;
}

static const loom_interleaver_vtable zv_vtable = {
    { sizeof(loom_interleaver_vtable), LOOM_INTERLEAVER_VERSION },
    zv_create,
    zv_destroy,
    zv_interleave,
    zv_wants_split,
};

/* Returns the interleaver vtable for role "interleaver", else NULL. */
static const loom_role_header *zv_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_INTERLEAVER) == 0)
        return &zv_vtable.header;
    return NULL;
}

static const loom_plugin_info zv_info = {
    LOOM_PLUGIN_INFO_HEADER,
    "org.loom.zb-v",
    "1.0.0",
    NULL,
    NULL,
    zv_role,
    zv_param_table,
};

LOOM_PLUGIN_DEFINE(zb_v, zv_info);
