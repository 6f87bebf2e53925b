/*
 * optimus_bubble.c - the optimus-bubble interleaver: Optimus's bubble
 * scheduler (Optimus §4.2-4.3, Algorithm 2). It builds the coarse
 * encoder-first order (<loom/kits/colocated.h>), then runs OptimizeSchedule
 * forward and backward (bubble_fill.c), simulating candidate orders
 * through the "loom.simulator" service. Each call logs the makespans and
 * the scheduling efficiency of the coarse and the fine order (Optimus
 * Table 7). Params: warmup, passes (see manifest.json).
 */
#include <string.h>
#include <loom/loom.h>
#include "bubble_fill.h"

typedef struct ob_self {
    const loom_host_api *host;
    loom_ctx *ctx;
    loom_co co;
    loom_bf bf;
    const loom_simulator_service *sim;
    loom_sim_scratch *scratch;
    int warmup, passes, report;
} ob_self;

/* The params, declared once in ob_param_table (manifest.json says the same). */
typedef struct ob_params {
    const char *warmup;
    const char *passes;
    int report;
} ob_params;

static const loom_param_def ob_param_table[] = {
    LOOM_ENUM_PARAM(ob_params, warmup, "deferred", "deferred|megatron",
                   "backbone warm-up with V > 1: the deferred rule of Optimus section 4.3 "
                   "(later forwards start later, same makespan) or Megatron's"),
    LOOM_ENUM_PARAM(ob_params, passes, "both", "both|forward|backward|none",
                   "OptimizeSchedule passes to run after the coarse order (none = "
                   "encoder-first)"),
    LOOM_BOOL_PARAM(ob_params, report, 1,
                   "log the coarse and fine makespans and scheduling efficiency of every call"),
    LOOM_PARAM_END};

/* Creates an instance with empty scratch and its params. */
static int ob_create(const loom_host_api *host, loom_ctx *ctx,
                     void *plugin_state, void **self, loom_error *err)
{
    (void)plugin_state;
    ob_params prm;
    int rc = loom_params_read(host, ctx, "optimus-bubble", ob_param_table, &prm, err);
    if (rc != LOOM_OK)
        return rc;
    const char *w = prm.warmup, *p = prm.passes;
    int report = prm.report;
    ob_self *s = host->alloc(sizeof *s);
    if (!s)
        return host->error(err, LOOM_ENOMEM, "optimus-bubble: out of memory");
    memset(s, 0, sizeof *s);
    s->host = host;
    s->ctx = ctx;
    s->co.host = host;
    s->bf.host = host;
    s->warmup = strcmp(w, "megatron") == 0 ? LOOM_CO_WARMUP_MEGATRON
                                           : LOOM_CO_WARMUP_DEFERRED;
    s->passes = strcmp(p, "both") == 0       ? LOOM_BF_FORWARD | LOOM_BF_BACKWARD
                : strcmp(p, "forward") == 0  ? LOOM_BF_FORWARD
                : strcmp(p, "backward") == 0 ? LOOM_BF_BACKWARD
                                             : 0;
    s->report = report;
    *self = s;
    return LOOM_OK;
}

/* Releases an instance, its scratch and its simulator scratch. */
static void ob_destroy(void *self)
{
    ob_self *s = self;
    if (!s)
        return;
    loom_co_free(&s->co);
    loom_bf_free(&s->bf);
    if (s->sim && s->scratch)
        s->sim->scratch_free(s->scratch);
    s->host->free(s);
}

/* The bubble filler's simulator: the host's, with this instance's scratch. */
static int ob_sim(void *user, const loom_stage_graph *g, const loom_schedule *s,
                  loom_metrics *m, loom_error *err)
{
    ob_self *o = user;
    return o->sim->simulate(o->scratch, g, s, m, err);
}

/* Prefixes err's message with the plugin name. */
static int ob_fail(ob_self *s, int rc, loom_error *err)
{
    char why[LOOM_ERROR_MSG_BYTES];
    memcpy(why, err->message, sizeof why);
    return s->host->error(err, rc, "optimus-bubble: %.480s", why);
}

/* Coarse order, then the forward and backward greedy passes. */
static int ob_interleave(void *self, const loom_stage_graph *g,
                         const float *priorities, loom_schedule *out,
                         loom_error *err)
{
    ob_self *s = self;
    const loom_host_api *host = s->host;
    if (!s->sim) {
        s->sim = loom_host_simulator(host, s->ctx);
        if (!s->sim)
            return host->error(err, LOOM_ENOTFOUND,
                               "optimus-bubble: the \"%s\" service is not "
                               "available", LOOM_SERVICE_SIMULATOR);
        s->scratch = s->sim->scratch_new();
        if (!s->scratch)
            return host->error(err, LOOM_ENOMEM, "optimus-bubble: out of memory");
    }
    double t0 = host->now_ms();
    int rc = loom_co_prepare(&s->co, g, host->problem(s->ctx), priorities, err);
    if (rc == LOOM_OK)
        rc = loom_co_coarse(&s->co, g, s->warmup, out, err);
    if (rc == LOOM_OK)
        rc = loom_bf_refine(&s->bf, &s->co, g, s->passes, out, ob_sim, s, err);
    if (rc != LOOM_OK)
        return ob_fail(s, rc, err);
    if (s->report) {
        const loom_bf *b = &s->bf;
        host->log(s->ctx, LOOM_LOG_INFO,
                  "coarse %.3f ms, fine %.3f ms, backbone alone %.3f ms; "
                  "efficiency coarse %.1f%% fine %.1f%%; %d forward + %d "
                  "backward moves in %.1f ms",
                  b->coarse_ms, b->fine_ms, b->backbone_ms,
                  100 * loom_co_efficiency(b->encoder_ms, b->backbone_ms, b->coarse_ms),
                  100 * loom_co_efficiency(b->encoder_ms, b->backbone_ms, b->fine_ms),
                  b->fwd_moves, b->bwd_moves, host->now_ms() - t0);
    }
    return LOOM_OK;
}

static const loom_interleaver_vtable ob_vtable = {
    { sizeof(loom_interleaver_vtable), LOOM_INTERLEAVER_VERSION },
    ob_create,
    ob_destroy,
    ob_interleave,
    NULL,
};

/* Returns the interleaver vtable for role "interleaver", else NULL. */
static const loom_role_header *ob_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_INTERLEAVER) == 0)
        return &ob_vtable.header;
    return NULL;
}

static const loom_plugin_info ob_info = {
    LOOM_PLUGIN_INFO_HEADER,
    "org.loom.optimus-bubble",
    "1.0.0",
    NULL,
    NULL,
    ob_role,
    ob_param_table,
};

LOOM_PLUGIN_DEFINE(optimus_bubble, ob_info);
