/*
 * zero_bubble.c - a zero-bubble interleaver (ZB-H1 / ZB-H2 behaviour of Qi
 * et al., "Zero Bubble Pipeline Parallelism", ICLR 2024) for graphs whose
 * backward is split into I (input gradient) and W (weight gradient).
 *
 * A greedy list scheduler over the shared list-scheduling core (the
 * algorithm lives in the kit as loom_zb_order, so the exact interleaver
 * can start from it): every rank
 * keeps three queues (F; I or unsplit B; W) and the rank that can start
 * something earliest places one stage:
 *   - I is on the critical path: the backward chain waits for it, so it
 *     runs as soon as it is ready, alternating with F 1F1B-style when both
 *     are ready (after an F the I goes first, after an I or W the F);
 *   - F only while the rank's in-flight microbatches (F started, W not yet
 *     ended) stay under `max_inflight` and, when cap > 0, what the rank
 *     holds plus the room it keeps for the remaining forwards of its
 *     microbatches in flight stays under memory_cap_bytes (a banker's
 *     reservation, so a V or interleaved placement cannot fill a rank
 *     with new microbatches that its later chunks then have no room for);
 *   - W only when neither an I nor an allowed F can start at that moment,
 *     i.e. it fills otherwise-idle time, and always when the in-flight
 *     limit blocks the forwards (a W frees its microbatch's activation).
 * max_inflight: 0 derives the limit from the memory cap (bytes only), or
 * P microbatches when the graph has no cap; P is ZB-H1's memory, 2P
 * ZB-H2's. Ties inside a queue: higher priority, lower sub-microbatch,
 * position order (forwards ascending, backwards descending), stage id.
 * When every rank with work is blocked by the limit or the cap, the
 * blocked forward leaving its rank with the least memory runs anyway if
 * it fits the cap; otherwise the call fails with LOOM_EINFEASIBLE and the
 * reason (before ordering when no order can fit a rank), never with an
 * order over the cap.
 */
#include <string.h>
#include <loom/kits/listsched.h>

typedef struct zb_self {
    const loom_host_api *host;
    loom_ctx *ctx;
    int64_t max_inflight;  /* param; 0 = derive */
    loom_zb zb;
} zb_self;

/* The params, declared once in zb_param_table (manifest.json says the same). */
typedef struct zb_params {
    int64_t max_inflight;
} zb_params;

static const loom_param_def zb_param_table[] = {
    LOOM_INT_PARAM(zb_params, max_inflight, 0, 0, 1000000,
                   "microbatches a rank may hold in flight (F started, W not ended): P gives "
                   "ZB-H1, 2P ZB-H2; 0 derives the limit from the graph's memory cap in "
                   "bytes, or uses P when the graph has no cap"),
    LOOM_PARAM_END};

/* Creates an instance; reads max_inflight. */
static int zb_create(const loom_host_api *host, loom_ctx *ctx,
                     void *plugin_state, void **self, loom_error *err)
{
    (void)plugin_state;
    zb_params prm;
    int rc = loom_params_read(host, ctx, "zero-bubble", zb_param_table, &prm, err);
    if (rc != LOOM_OK)
        return rc;
    int64_t limit = prm.max_inflight;
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
    loom_zb_release(&s->zb, s->host);
    s->host->free(s);
}

/* The host builds I + W stages for this interleaver. */
static int zb_wants_split(void *self)
{
    (void)self;
    return 1;
}

/* Writes the zero-bubble order of every rank into `out`. */
static int zb_interleave(void *self, const loom_stage_graph *g,
                         const float *priorities, loom_schedule *out,
                         loom_error *err)
{
    zb_self *s = self;
    return loom_zb_order(&s->zb, s->host, g, priorities, s->max_inflight, out,
                         "zero-bubble", err);
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
    zb_param_table,
};

LOOM_PLUGIN_DEFINE(zero_bubble, zb_info);
