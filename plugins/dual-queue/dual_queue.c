/*
 * dual_queue.c - PipeWeaver's dual-queue interleaver (PipeWeaver §6.2).
 *
 * A list scheduler that builds the timeline while it orders. Every rank
 * keeps t_last (the end of its last placed stage), a forward queue and a
 * backward queue (B, I and W stages); a stage enters its queue once all its
 * predecessors are placed, with its earliest start t_start known.
 *
 * Each step takes the rank that can start something earliest (its t_min,
 * ties: lower rank) and places one stage there:
 *   - each queue's candidate: among its stages that can start earliest on
 *     the rank (start = max(t_last, t_start)), the highest priority; equal
 *     priorities: lower sub-microbatch, then for forwards the lower
 *     position and for backwards B/I before W and the higher position, then
 *     the lower stage id;
 *   - when both candidates could start by t_last, alternate with the type
 *     of the rank's last stage (a forward after a backward and vice versa,
 *     a forward first), as Megatron's 1F1B does;
 *   - otherwise the candidate that starts earlier; when both start at the
 *     same later time, the forward (it feeds the next ranks);
 *   - the forward queue is disabled while adding the forward candidate's
 *     activation would exceed memory_cap_bytes - static_bytes[rank] (cap
 *     > 0). When every rank that still has work is blocked that way, the
 *     blocked forward adding the fewest bytes runs anyway (the simulator
 *     then reports the cap violation) instead of deadlocking.
 */
#include <string.h>
#include <loom/kits/listsched.h>

#define DQ_FWD 0
#define DQ_BWD 1

typedef struct dq_self {
    const loom_host_api *host;
    loom_ctx *ctx;
    loom_ls ls;
    int32_t *choice;     /* per rank: stage decided at its last update */
    int32_t *blocked_f;  /* per rank: memory-blocked forward, or -1 */
    int32_t cap_ranks;
    /* The graph columns the per-stage keys were last filled from. */
    uint8_t *kind_seen;
    int32_t *sub_seen, *pos_seen, *group_seen;
    int32_t seen_n;      /* their stage count, -1 none */
    int32_t cap_seen;
    int groups_ok;       /* every stage's group is within the graph's */
} dq_self;

/* Creates an instance with empty scratch. */
static int dq_create(const loom_host_api *host, loom_ctx *ctx,
                     void *plugin_state, void **self, loom_error *err)
{
    (void)plugin_state;
    dq_self *s = host->alloc(sizeof *s);
    if (!s)
        return host->error(err, LOOM_ENOMEM, "dual-queue: out of memory");
    memset(s, 0, sizeof *s);
    s->seen_n = -1;
    s->host = host;
    s->ctx = ctx;
    *self = s;
    return LOOM_OK;
}

/* Releases an instance and its scratch. */
static void dq_destroy(void *self)
{
    dq_self *s = self;
    if (!s)
        return;
    loom_ls_release(&s->ls);
    s->host->free(s->choice);
    s->host->free(s->blocked_f);
    s->host->free(s->kind_seen);
    s->host->free(s->sub_seen);
    s->host->free(s->pos_seen);
    s->host->free(s->group_seen);
    s->host->free(s);
}

/* Secondary order within one priority (see the file comment). */
static int32_t dq_tie(const loom_stage_graph *g, int32_t v)
{
    int32_t sub = g->sub[v] < 0 ? 0 : (g->sub[v] > 16383 ? 16383 : g->sub[v]);
    int32_t pos = g->position[v] < 0 ? 0
                  : (g->position[v] > 65535 ? 65535 : g->position[v]);
    if (g->kind[v] == LOOM_STAGE_F)
        return sub * 131072 + pos;
    int32_t late = g->kind[v] == LOOM_STAGE_W ? 65536 : 0;
    return sub * 131072 + late + (65535 - pos);
}

/* The priority of group grp (see dq_keys). */
static float dq_prio(const loom_stage_graph *g, const float *priorities, int32_t grp)
{
    float p = priorities && grp >= 0 && grp < g->n_groups ? priorities[grp]
                                                          : -(float)grp;
    return p != p ? -3.0e38f : p; /* NaN runs last */
}

/* 1 when g's kinds, sub-microbatches, positions and groups are the ones
 * the per-stage keys were last filled from. */
static int dq_same_columns(const dq_self *s, const loom_stage_graph *g)
{
    size_t n = (size_t)g->n_stages;
    return s->seen_n == g->n_stages && !memcmp(s->kind_seen, g->kind, n) &&
           !memcmp(s->sub_seen, g->sub, n * sizeof *g->sub) &&
           !memcmp(s->pos_seen, g->position, n * sizeof *g->position) &&
           !memcmp(s->group_seen, g->group, n * sizeof *g->group);
}

/* Fills the per-stage queue type, tie key and group (kept while the
 * graph's columns they come from stay the same), then the priorities: per
 * group, or per stage when a stage's group is outside the graph's. */
static void dq_keys(dq_self *s, const loom_stage_graph *g,
                    const float *priorities)
{
    loom_ls *ls = &s->ls;
    if (!dq_same_columns(s, g)) {
        s->groups_ok = 1;
        for (int32_t v = 0; v < g->n_stages; v++) {
            int32_t grp = g->group[v];
            ls->type[v] = g->kind[v] == LOOM_STAGE_F ? DQ_FWD
                          : g->kind[v] <= LOOM_STAGE_W ? DQ_BWD : 255;
            ls->tie[v] = dq_tie(g, v);
            ls->group[v] = grp;
            s->groups_ok &= grp >= 0 && grp < g->n_groups;
        }
        size_t n = (size_t)g->n_stages;
        memcpy(s->kind_seen, g->kind, n);
        memcpy(s->sub_seen, g->sub, n * sizeof *g->sub);
        memcpy(s->pos_seen, g->position, n * sizeof *g->position);
        memcpy(s->group_seen, g->group, n * sizeof *g->group);
        s->seen_n = g->n_stages;
    }
    if (s->groups_ok) {
        ls->n_groups = g->n_groups;
        for (int32_t k = 0; k < g->n_groups; k++)
            ls->group_prio[k] = dq_prio(g, priorities, k);
        return;
    }
    ls->n_groups = 0;
    for (int32_t v = 0; v < g->n_stages; v++)
        ls->prio[v] = dq_prio(g, priorities, g->group[v]);
}

/* Decides what rank r would run next; returns its start or -1 when it can
 * run nothing now (possibly only a memory-blocked forward). */
static double dq_decide(dq_self *s, const loom_stage_graph *g, int32_t r)
{
    loom_ls *ls = &s->ls;
    double tf, tb; /* INFINITY for an empty queue */
    int32_t f = loom_ls_peek(ls, r, DQ_FWD, &tf);
    int32_t b = loom_ls_peek(ls, r, DQ_BWD, &tb);
    /* The rules below, written as selections rather than branches: which
     * queue wins is data the branch predictor cannot learn. A forward
     * that would exceed the cap is blocked (kept aside when the backward
     * queue is empty). */
    int over = 0;
    if (g->memory_cap_bytes > 0) { /* the same way every call of a plan */
        int32_t fi = f < 0 ? 0 : f;
        over = (f >= 0) & ((double)(g->static_bytes[r] + ls->mem_bytes[r] +
                                    g->mem_delta_bytes[fi]) > g->memory_cap_bytes);
    }
    s->blocked_f[r] = (over & (b < 0)) ? f : -1;
    f = over ? -1 : f;
    tf = over ? INFINITY : tf;
    /* The earlier start; on a tie of starts by t_last, the other kind than
     * the rank's last stage; else the forward. An empty or blocked queue
     * starts at INFINITY, so the other one wins, and with both empty the
     * pick is f, -1. */
    int take_b = (tb < tf) |
                 ((tb == tf) & (tf <= ls->last_ms[r]) & (ls->last_type[r] == DQ_FWD));
    int32_t pick = take_b ? b : f;
    s->choice[r] = pick;
    if (pick < 0)
        return -1;
    /* Placing the pick reads its own and its successors' per-stage
     * entries, spread over arrays that outgrow the caches on large graphs;
     * fetch them now, while other ranks decide and place (no effect on
     * the order). */
    __builtin_prefetch(&ls->ready_ms[pick]);
    __builtin_prefetch(&g->duration_ms[pick]);
    __builtin_prefetch(&ls->slot[pick]);
    __builtin_prefetch(&g->rank[pick]);
    for (int32_t i = ls->succ_off[pick], e = ls->succ_off[pick + 1]; i < e; i++) {
        __builtin_prefetch(&ls->ready_ms[ls->succ[i]]);
        __builtin_prefetch(&ls->left[ls->succ[i]]);
    }
    return take_b ? tb : tf;
}

/* Grows the per-rank arrays. */
static int dq_reserve(dq_self *s, const loom_stage_graph *g, loom_error *err)
{
    int rc = loom_ls_reserve(&s->ls, s->host, g, 2, "dual-queue", err);
    if (rc != LOOM_OK)
        return rc;
    if (g->n_stages > s->cap_seen) {
        size_t n = (size_t)g->n_stages;
        void *p[4] = {s->host->realloc(s->kind_seen, n),
                      s->host->realloc(s->sub_seen, n * sizeof *s->sub_seen),
                      s->host->realloc(s->pos_seen, n * sizeof *s->pos_seen),
                      s->host->realloc(s->group_seen, n * sizeof *s->group_seen)};
        s->kind_seen = p[0] ? p[0] : s->kind_seen;
        s->sub_seen = p[1] ? p[1] : s->sub_seen;
        s->pos_seen = p[2] ? p[2] : s->pos_seen;
        s->group_seen = p[3] ? p[3] : s->group_seen;
        s->seen_n = -1;
        if (!p[0] || !p[1] || !p[2] || !p[3])
            return s->host->error(err, LOOM_ENOMEM, "dual-queue: out of memory");
        s->cap_seen = g->n_stages;
    }
    if (g->n_ranks <= s->cap_ranks)
        return LOOM_OK;
    size_t n = (size_t)g->n_ranks;
    int32_t *c = s->host->realloc(s->choice, n * sizeof *c);
    if (c)
        s->choice = c;
    int32_t *b = s->host->realloc(s->blocked_f, n * sizeof *b);
    if (b)
        s->blocked_f = b;
    if (!c || !b)
        return s->host->error(err, LOOM_ENOMEM, "dual-queue: out of memory");
    s->cap_ranks = g->n_ranks;
    return LOOM_OK;
}

/* Writes the dual-queue order of every rank into `out`. */
static int dq_interleave(void *self, const loom_stage_graph *g,
                         const float *priorities, loom_schedule *out,
                         loom_error *err)
{
    dq_self *s = self;
    loom_ls *ls = &s->ls;
    int rc = dq_reserve(s, g, err);
    if (rc != LOOM_OK)
        return rc;
    dq_keys(s, g, priorities);
    rc = loom_ls_begin(ls, g, out, "dual-queue", err);
    if (rc != LOOM_OK)
        return rc;
    while (ls->placed < g->n_stages) {
        for (int32_t i = 0; i < ls->n_dirty; i++) {
            int32_t r = ls->dirty[i];
            ls->is_dirty[r] = 0;
            double t = dq_decide(s, g, r);
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
        loom_ls_place(ls, g, v, out);
    }
    return loom_ls_end(ls, g, out, "dual-queue", err);
}

static const loom_interleaver_vtable dq_vtable = {
    { sizeof(loom_interleaver_vtable), LOOM_INTERLEAVER_VERSION },
    dq_create,
    dq_destroy,
    dq_interleave,
    NULL,
};

/* Returns the interleaver vtable for role "interleaver", else NULL. */
static const loom_role_header *dq_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_INTERLEAVER) == 0)
        return &dq_vtable.header;
    return NULL;
}

static const loom_plugin_info dq_info = {
    LOOM_PLUGIN_INFO_HEADER,
    "org.loom.dual-queue",
    "1.0.0",
    NULL,
    NULL,
    dq_role,
    NULL, /* no params */
};

LOOM_PLUGIN_DEFINE(dual_queue, dq_info);
