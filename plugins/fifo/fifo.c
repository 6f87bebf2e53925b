/*
 * fifo.c - the first-in-first-out ranker: the first candidate, groups in
 * index order (group g = microbatch * n_flows + flow, so the first
 * microbatch runs first and, within a microbatch, lower flows first), and
 * a single evaluator run to report the makespan of that plan.
 */
#include <string.h>
#include <loom/loom.h>

typedef struct fifo_self {
    const loom_host_api *host;
    loom_ctx *ctx;
} fifo_self;

/* Creates an instance holding the host table and the step context. */
static int fifo_create(const loom_host_api *host, loom_ctx *ctx,
                       void *plugin_state, void **self, loom_error *err)
{
    (void)plugin_state;
    fifo_self *f = host->alloc(sizeof *f);
    if (!f)
        return host->error(err, LOOM_ENOMEM, "fifo: out of memory");
    f->host = host;
    f->ctx = ctx;
    *self = f;
    return LOOM_OK;
}

/* Releases an instance from fifo_create. */
static void fifo_destroy(void *self)
{
    fifo_self *f = self;
    if (f)
        f->host->free(f);
}

/* Chooses candidate 0 with priorities n_groups - g and evaluates it once. */
static int fifo_rank(void *self, const loom_stage_graph *const *graphs,
                     int32_t n_graphs, loom_ranking *out, loom_error *err)
{
    fifo_self *f = self;
    const loom_host_api *host = f->host;
    if (n_graphs < 1 || !graphs || !graphs[0])
        return host->error(err, LOOM_EINVAL,
                           "fifo: expected at least one candidate graph, "
                           "found %d", n_graphs);
    const loom_stage_graph *g = graphs[0];
    if (out->cap_priorities < g->n_groups || (g->n_groups > 0 && !out->priorities))
        return host->error(err, LOOM_EINVAL,
                           "fifo: room for %d priorities, graph has %d groups",
                           out->cap_priorities, g->n_groups);
    for (int32_t i = 0; i < g->n_groups; i++)
        out->priorities[i] = (float)(g->n_groups - i);
    out->candidate = 0;

    const loom_evaluator_service *ev_svc =
        loom_host_evaluator(host, f->ctx);
    if (!ev_svc)
        return host->error(err, LOOM_ENOTFOUND,
                           "fifo: the \"%s\" service is not available",
                           LOOM_SERVICE_EVALUATOR);
    loom_evaluator *ev = NULL;
    int rc = ev_svc->create(f->ctx, g, &ev, err);
    if (rc != LOOM_OK)
        return rc;
    loom_metrics m = LOOM_METRICS_INIT;
    rc = ev_svc->run(ev, out->priorities, &m, err);
    ev_svc->destroy(ev);
    if (rc != LOOM_OK)
        return rc;
    out->best_makespan_ms = m.makespan_ms;
    out->evaluations = 1;
    if (LOOM_HOST_HAS(host, progress) && host->progress)
        host->progress(f->ctx, m.makespan_ms, 1);
    return LOOM_OK;
}

static const loom_ranker_vtable fifo_vtable = {
    { sizeof(loom_ranker_vtable), LOOM_RANKER_VERSION },
    fifo_create,
    fifo_destroy,
    fifo_rank,
    LOOM_RANKER_READS_ALL,
};

/* Returns the ranker vtable for role "ranker", else NULL. */
static const loom_role_header *fifo_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_RANKER) == 0)
        return &fifo_vtable.header;
    return NULL;
}

static const loom_plugin_info fifo_info = {
    LOOM_PLUGIN_INFO_HEADER,
    "org.loom.fifo",
    "1.0.0",
    NULL,
    NULL,
    fifo_role,
    NULL, /* no params */
};

LOOM_PLUGIN_DEFINE(fifo, fifo_info);
