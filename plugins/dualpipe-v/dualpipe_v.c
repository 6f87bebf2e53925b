/*
 * dualpipe_v.c - the DualPipeV interleaver: DeepSeek's DualPipe (DeepSeek-V3
 * technical report, arXiv 2412.19437, section 3.2.1) folded onto one V
 * placement, in the order of PyTorch's ScheduleDualPipeV (torch 2.13,
 * torch/distributed/pipelining/schedules.py; after deepseek-ai/DualPipe's
 * dualpipev.py).
 *
 * P ranks, 2P pipeline stages, rank r holds stages r and 2P-1-r (the V);
 * M >= 2P microbatches. Per rank, with s0 = r and s1 = 2P-1-r, the order
 * runs eight phases (counts in brackets):
 *   1. F s0                         [2(P-r-1)]
 *   2. F s0, F s1                   [r+1]
 *   3. I s1, W (oldest queued), F s1 [P-r-1]
 *   4. (F s0 + B s1), (F s1 + B s0)  [M-2P+r+1]; the last rank runs its
 *      first F s0 and B s1 apart
 *   5. B s1, (F s1 + B s0)           [P-r-1]
 *   6. B s1, B s0                   [r+1]; from iteration (r+1)/2 on
 *      (from its s1 backward on odd ranks, from its s0 backward on even
 *      ones) each backward is split: I now, W queued
 *   7. W (oldest queued), B s0      [P-r-1] (I when split)
 *   8. W (oldest queued)            [r+1], when any is left
 * (a + b) is an overlapped pair, PyTorch's OVERLAP_F_B: the forward runs as
 * a fill (loom_schedule.fill_hosts = 2) over the backward's I and W, so
 * the simulator prices the pair as the forward hidden in what of the
 * backward is exposed communication and the rest added (F + B without
 * communication; docs/cost-models.md, "Filled stages"). A full backward B
 * is its I and W run back to back, marked LOOM_FILL_FULL_BACKWARD on the
 * I (schedule.csv writes one B). Microbatches per stage and kind are
 * taken in order; priorities do not change the order.
 */
#include <string.h>
#include <loom/loom.h>

typedef struct dpv_self {
    const loom_host_api *host;
    int64_t cap_cells;
    int32_t *cell;        /* [(stage * M + mb) * 2 + (0 F, 1 I)]: stage id */
    int32_t cap_queue;
    int32_t *queue;       /* pending W stage ids, oldest first */
} dpv_self;

/* Per-rank emission state while one rank's order is written. */
typedef struct dpv_rank {
    const loom_stage_graph *g;
    dpv_self *s;
    loom_schedule *out;
    int32_t *k;           /* next slot in out->order */
    int32_t M;
    int32_t next_f[2], next_b[2]; /* next microbatch per local stage */
    int32_t stage[2];     /* s0, s1 */
    int32_t q_head, q_tail;
} dpv_rank;

/* Creates an instance. */
static int dpv_create(const loom_host_api *host, loom_ctx *ctx, void *plugin_state,
                      void **self, loom_error *err)
{
    (void)ctx;
    (void)plugin_state;
    dpv_self *s = host->alloc(sizeof *s);
    if (!s)
        return host->error(err, LOOM_ENOMEM, "dualpipe-v: out of memory");
    memset(s, 0, sizeof *s);
    s->host = host;
    *self = s;
    return LOOM_OK;
}

/* Releases an instance and its scratch. */
static void dpv_destroy(void *self)
{
    dpv_self *s = self;
    if (!s)
        return;
    s->host->free(s->cell);
    s->host->free(s->queue);
    s->host->free(s);
}

/* DualPipeV splits some backwards into I + W: the host builds them. */
static int dpv_wants_split(void *self)
{
    (void)self;
    return 1;
}

/* Grows the scratch for P ranks and M microbatches. */
static int dpv_reserve(dpv_self *s, int32_t P, int32_t M, loom_error *err)
{
    int64_t cells = (int64_t)2 * P * M * 2;
    if (cells > s->cap_cells) {
        s->host->free(s->cell);
        s->cell = s->host->alloc((size_t)cells * sizeof(int32_t));
        s->cap_cells = s->cell ? cells : 0;
    }
    if (M > s->cap_queue) {
        s->host->free(s->queue);
        s->queue = s->host->alloc((size_t)M * sizeof(int32_t));
        s->cap_queue = s->queue ? M : 0;
    }
    if (!s->cell || !s->queue)
        return s->host->error(err, LOOM_ENOMEM, "dualpipe-v: out of memory");
    return LOOM_OK;
}

/* Checks that g is one chain of 2P stages on the V placement with split
 * backward, M >= 2P microbatches and no sub-microbatches, and fills the
 * (stage, microbatch, F/I) -> stage id table. */
static int dpv_index(dpv_self *s, const loom_stage_graph *g, loom_error *err)
{
    int32_t P = g->n_ranks, M = g->n_microbatches, S = 2 * P;
    if (P < 1 || M < S)
        return s->host->error(err, LOOM_EINVAL, "dualpipe-v: needs at least as many "
                              "microbatches as stages (2 x %d ranks = %d), found %d",
                              P, S, M);
    int rc = dpv_reserve(s, P, M, err);
    if (rc != LOOM_OK)
        return rc;
    for (int64_t c = 0; c < (int64_t)S * M * 2; c++)
        s->cell[c] = -1;
    for (int32_t v = 0; v < g->n_stages; v++) {
        int32_t p = g->position[v], mb = g->microbatch[v], kind = g->kind[v];
        if (g->flow[v] != 0 || g->sub[v] != 0 || p < 0 || p >= S || mb < 0 || mb >= M)
            return s->host->error(err, LOOM_EINVAL, "dualpipe-v: stage %d (flow %d, "
                                  "position %d, microbatch %d, sub %d): expected one flow "
                                  "of %d positions, one unit per microbatch", v, g->flow[v],
                                  p, mb, g->sub[v], S);
        int32_t want = p < P ? p : S - 1 - p;
        if (g->rank[v] != want)
            return s->host->error(err, LOOM_EINVAL, "dualpipe-v: position %d is on rank "
                                  "%d, expected rank %d (the V placement: rank r holds "
                                  "positions r and 2P-1-r)", p, g->rank[v], want);
        if (kind == LOOM_STAGE_B)
            return s->host->error(err, LOOM_EINVAL, "dualpipe-v: stage %d is a full "
                                  "backward; expected split I + W stages", v);
        if (kind == LOOM_STAGE_W)
            continue;
        int32_t w = g->pair_weight[g->pair[v]];
        if (kind == LOOM_STAGE_I && (w < 0 || g->kind[w] != LOOM_STAGE_W))
            return s->host->error(err, LOOM_EINVAL, "dualpipe-v: I stage %d has no W "
                                  "stage", v);
        s->cell[((int64_t)p * M + mb) * 2 + (kind == LOOM_STAGE_I)] = v;
    }
    int32_t n_pos = 0;
    for (int32_t v = 0; v < g->n_stages; v++)
        n_pos = g->position[v] >= n_pos ? g->position[v] + 1 : n_pos;
    if (n_pos != S)
        return s->host->error(err, LOOM_EINVAL, "dualpipe-v: needs two positions per rank "
                              "(%d on %d ranks, the V placement), found %d (plan with vpp 2 "
                              "and placement v)", S, P, n_pos);
    for (int64_t c = 0; c < (int64_t)S * M * 2; c++)
        if (s->cell[c] < 0)
            return s->host->error(err, LOOM_EINVAL, "dualpipe-v: position %d, microbatch "
                                  "%d has no %s stage", (int)(c / 2 / M), (int)(c / 2 % M),
                                  c % 2 ? "backward" : "forward");
    return LOOM_OK;
}

/* Appends stage v to the rank's order with fill mark `fill`. */
static void dpv_put(dpv_rank *rk, int32_t v, int32_t fill)
{
    rk->out->order[(*rk->k)++] = v;
    if (LOOM_STRUCT_HAS(rk->out, loom_schedule, fill_hosts) && rk->out->fill_hosts)
        rk->out->fill_hosts[v] = fill;
}

/* The next forward of local stage c (0: s0, 1: s1). */
static int32_t dpv_next_f(dpv_rank *rk, int c)
{
    int32_t p = rk->stage[c], mb = rk->next_f[c]++;
    return rk->s->cell[((int64_t)p * rk->M + mb) * 2];
}

/* The next I stage of local stage c. */
static int32_t dpv_next_i(dpv_rank *rk, int c)
{
    int32_t p = rk->stage[c], mb = rk->next_b[c]++;
    return rk->s->cell[((int64_t)p * rk->M + mb) * 2 + 1];
}

/* F of local stage c. */
static void dpv_f(dpv_rank *rk, int c)
{
    dpv_put(rk, dpv_next_f(rk, c), 0);
}

/* Full backward B of local stage c: I and W back to back. */
static void dpv_b(dpv_rank *rk, int c)
{
    int32_t i = dpv_next_i(rk, c);
    dpv_put(rk, i, LOOM_FILL_FULL_BACKWARD);
    dpv_put(rk, rk->g->pair_weight[rk->g->pair[i]], 0);
}

/* I of local stage c, its W queued. */
static void dpv_i(dpv_rank *rk, int c)
{
    int32_t i = dpv_next_i(rk, c);
    dpv_put(rk, i, 0);
    rk->s->queue[rk->q_tail++] = rk->g->pair_weight[rk->g->pair[i]];
}

/* The oldest queued W, if any. */
static void dpv_w(dpv_rank *rk)
{
    if (rk->q_head < rk->q_tail)
        dpv_put(rk, rk->s->queue[rk->q_head++], 0);
}

/* A backward of local stage c: I with its W queued once split, else B. */
static void dpv_back(dpv_rank *rk, int c, int split)
{
    if (split)
        dpv_i(rk, c);
    else
        dpv_b(rk, c);
}

/* Overlapped pair: F of local stage cf as a fill over B of stage cb. */
static void dpv_fb(dpv_rank *rk, int cf, int cb)
{
    int32_t f = dpv_next_f(rk, cf), i = dpv_next_i(rk, cb);
    dpv_put(rk, f, 2);
    dpv_put(rk, i, 0);
    dpv_put(rk, rk->g->pair_weight[rk->g->pair[i]], 0);
}

/* Writes rank r's eight phases (file comment). */
static void dpv_rank_order(dpv_rank *rk, int32_t r, int32_t P)
{
    int32_t M = rk->M;
    for (int32_t j = 0; j < 2 * (P - r - 1); j++)
        dpv_f(rk, 0);
    for (int32_t j = 0; j < r + 1; j++) {
        dpv_f(rk, 0);
        dpv_f(rk, 1);
    }
    for (int32_t j = 0; j < P - r - 1; j++) {
        dpv_i(rk, 1);
        dpv_w(rk);
        dpv_f(rk, 1);
    }
    for (int32_t j = 0; j < M - 2 * P + r + 1; j++) {
        if (j == 0 && r == P - 1) {
            dpv_f(rk, 0);
            dpv_b(rk, 1);
        } else {
            dpv_fb(rk, 0, 1);
        }
        dpv_fb(rk, 1, 0);
    }
    for (int32_t j = 0; j < P - r - 1; j++) {
        dpv_b(rk, 1);
        dpv_fb(rk, 1, 0);
    }
    int split = 0, mid = (r + 1) / 2;
    for (int32_t j = 0; j < r + 1; j++) {
        if (j == mid && r % 2 == 1)
            split = 1;
        dpv_back(rk, 1, split);
        if (j == mid && r % 2 == 0)
            split = 1;
        dpv_back(rk, 0, split);
    }
    for (int32_t j = 0; j < P - r - 1; j++) {
        dpv_w(rk);
        dpv_back(rk, 0, split);
    }
    for (int32_t j = 0; j < r + 1; j++)
        dpv_w(rk);
}

/* Writes the DualPipeV order of every rank into `out`. */
static int dpv_interleave(void *self, const loom_stage_graph *g, const float *priorities,
                          loom_schedule *out, loom_error *err)
{
    (void)priorities;
    dpv_self *s = self;
    int rc = dpv_index(s, g, err);
    if (rc != LOOM_OK)
        return rc;
    int32_t P = g->n_ranks, k = 0;
    out->n_ranks = P;
    for (int32_t r = 0; r < P; r++) {
        out->rank_off[r] = k;
        dpv_rank rk = {g, s, out, &k, g->n_microbatches, {0, 0}, {0, 0},
                       {r, 2 * P - 1 - r}, 0, 0};
        dpv_rank_order(&rk, r, P);
        if (rk.q_head != rk.q_tail)
            return s->host->error(err, LOOM_EPLUGIN, "dualpipe-v: rank %d left %d W "
                                  "stages unplaced", r, rk.q_tail - rk.q_head);
    }
    out->rank_off[P] = k;
    out->n_stages = k;
    if (k != g->n_stages)
        return s->host->error(err, LOOM_EPLUGIN, "dualpipe-v: placed %d of %d stages",
                              k, g->n_stages);
    return LOOM_OK;
}

static const loom_interleaver_vtable dpv_vtable = {
    { sizeof(loom_interleaver_vtable), LOOM_INTERLEAVER_VERSION },
    dpv_create,
    dpv_destroy,
    dpv_interleave,
    dpv_wants_split,
};

/* Returns the interleaver vtable for role "interleaver", else NULL. */
static const loom_role_header *dpv_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_INTERLEAVER) == 0)
        return &dpv_vtable.header;
    return NULL;
}

static const loom_plugin_info dpv_info = {
    LOOM_PLUGIN_INFO_HEADER,
    "org.loom.dualpipe-v",
    "1.0.0",
    NULL,
    NULL,
    dpv_role,
    NULL, /* no params */
};

LOOM_PLUGIN_DEFINE(dualpipe_v, dpv_info);
