/*
 * encoder_first.c - the encoder-first interleaver: Optimus's
 * coarse-grained bubble exploitation (Optimus §4.2, InitSchedule). Every
 * encoder forward runs before the backbone starts on its rank (the DP
 * all-gather + PP warm-up bubble), every encoder backward after the
 * backbone ends (the PP cool-down + DP reduce-scatter bubble); the
 * backbone keeps its Megatron (interleaved) 1F1B order. See
 * <loom/kits/colocated.h>. Params: warmup (megatron | deferred).
 */
#include <string.h>
#include <loom/loom.h>
#include <loom/kits/colocated.h>

typedef struct ef_self {
    const loom_host_api *host;
    loom_ctx *ctx;
    loom_co co;
    int warmup;
} ef_self;

/* The params, declared once in ef_param_table (manifest.json says the same). */
typedef struct ef_params {
    const char *warmup;
} ef_params;

static const loom_param_def ef_param_table[] = {
    LOOM_ENUM_PARAM(ef_params, warmup, "megatron", "megatron|deferred",
                   "backbone warm-up forwards with V > 1: Megatron's 2(P-i-1)+(V-1)P, or the "
                   "deferred (P-i-1)+(V-1)P that keeps the makespan and starts later "
                   "microbatches later"),
    LOOM_PARAM_END};

/* Creates an instance with empty scratch and the warm-up rule param. */
static int ef_create(const loom_host_api *host, loom_ctx *ctx,
                     void *plugin_state, void **self, loom_error *err)
{
    (void)plugin_state;
    ef_params prm;
    int rc = loom_params_read(host, ctx, "encoder-first", ef_param_table, &prm, err);
    if (rc != LOOM_OK)
        return rc;
    ef_self *s = host->alloc(sizeof *s);
    if (!s)
        return host->error(err, LOOM_ENOMEM, "encoder-first: out of memory");
    memset(s, 0, sizeof *s);
    s->host = host;
    s->ctx = ctx;
    s->co.host = host;
    s->warmup = strcmp(prm.warmup, "deferred") == 0 ? LOOM_CO_WARMUP_DEFERRED
                                           : LOOM_CO_WARMUP_MEGATRON;
    *self = s;
    return LOOM_OK;
}

/* Releases an instance and its scratch. */
static void ef_destroy(void *self)
{
    ef_self *s = self;
    if (!s)
        return;
    loom_co_free(&s->co);
    s->host->free(s);
}

/* Writes the coarse order: encoder forwards, backbone 1F1B, encoder
 * backwards on every rank. */
static int ef_interleave(void *self, const loom_stage_graph *g,
                         const float *priorities, loom_schedule *out,
                         loom_error *err)
{
    ef_self *s = self;
    s->co.host = s->host;
    int rc = loom_co_prepare(&s->co, g, s->host->problem(s->ctx), priorities, err);
    if (rc == LOOM_OK)
        rc = loom_co_coarse(&s->co, g, s->warmup, out, err);
    if (rc != LOOM_OK && !strstr(err->message, "encoder-first")) {
        char why[LOOM_ERROR_MSG_BYTES];
        memcpy(why, err->message, sizeof why);
        s->host->error(err, rc, "encoder-first: %.480s", why);
    }
    return rc;
}

static const loom_interleaver_vtable ef_vtable = {
    { sizeof(loom_interleaver_vtable), LOOM_INTERLEAVER_VERSION },
    ef_create,
    ef_destroy,
    ef_interleave,
    NULL,
};

/* Returns the interleaver vtable for role "interleaver", else NULL. */
static const loom_role_header *ef_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_INTERLEAVER) == 0)
        return &ef_vtable.header;
    return NULL;
}

static const loom_plugin_info ef_info = {
    LOOM_PLUGIN_INFO_HEADER,
    "org.loom.encoder-first",
    "1.0.0",
    NULL,
    NULL,
    ef_role,
    ef_param_table,
};

LOOM_PLUGIN_DEFINE(encoder_first, ef_info);
