/*
 * reverse.c - an example ranker plugin: candidate 0, segment groups in
 * reverse index order (the last microbatch runs first), optionally scored
 * once with the host's "loom.evaluator" service.
 *
 * Everything a plugin needs comes from <loom/loom.h> and the host table it
 * receives; it never links libloom. Shared helpers come from the SDK's
 * kits: here the search kit (<loom/kits/search.h>, CMake target
 * Loom::kit_search) turns an order of groups into priorities.
 */
#include <string.h>
#include <loom/loom.h>
#include <loom/kits/search.h>

typedef struct reverse_self {
    const loom_host_api *host;
    loom_ctx *ctx;
    int evaluate; /* param "evaluate" */
} reverse_self;

/* Creates one instance per pipeline step and reads the params. */
static int reverse_create(const loom_host_api *host, loom_ctx *ctx,
                          void *plugin_state, void **self, loom_error *err)
{
    (void)plugin_state;
    reverse_self *r = host->alloc(sizeof *r);
    if (!r)
        return host->error(err, LOOM_ENOMEM, "reverse: out of memory");
    r->host = host;
    r->ctx = ctx;
    /* the host supplies every declared param (manifest.json has the default) */
    int rc = loom_read_param_bool(host, ctx, "reverse", "evaluate", &r->evaluate, err);
    if (rc != LOOM_OK) {
        host->free(r);
        return rc;
    }
    *self = r;
    return LOOM_OK;
}

/* Releases an instance from reverse_create. */
static void reverse_destroy(void *self)
{
    reverse_self *r = self;
    if (r)
        r->host->free(r);
}

/* Scores the chosen priorities once with the evaluator service. */
static int reverse_score(reverse_self *r, const loom_stage_graph *g,
                         loom_ranking *out, loom_error *err)
{
    const loom_host_api *host = r->host;
    const loom_evaluator_service *ev = loom_host_evaluator(host, r->ctx);
    if (!ev)
        return host->error(err, LOOM_ENOTFOUND, "reverse: service \"%s\" not available",
                           LOOM_SERVICE_EVALUATOR);
    loom_evaluator *e = NULL;
    int rc = ev->create(r->ctx, g, &e, err);
    if (rc != LOOM_OK)
        return rc;
    loom_metrics m = LOOM_METRICS_INIT;
    rc = ev->run(e, out->priorities, &m, err);
    ev->destroy(e);
    if (rc != LOOM_OK)
        return rc;
    out->best_makespan_ms = m.makespan_ms;
    out->evaluations = 1;
    if (LOOM_HOST_HAS(host, progress) && host->progress)
        host->progress(r->ctx, m.makespan_ms, 1);
    return LOOM_OK;
}

/* Candidate 0; the groups ordered from the last to the first, so group g
 * gets priority g + 1 and higher groups run first. */
static int reverse_rank(void *self, const loom_stage_graph *const *graphs,
                        int32_t n_graphs, loom_ranking *out, loom_error *err)
{
    reverse_self *r = self;
    if (n_graphs < 1 || !graphs[0])
        return r->host->error(err, LOOM_EINVAL, "reverse: no candidate graph");
    const loom_stage_graph *g = graphs[0];
    if (out->cap_priorities < g->n_groups)
        return r->host->error(err, LOOM_EINVAL,
                              "reverse: room for %d priorities, graph has %d groups",
                              out->cap_priorities, g->n_groups);
    int32_t n = g->n_groups;
    int32_t *order = r->host->alloc((size_t)(n > 0 ? n : 1) * sizeof *order);
    if (!order)
        return r->host->error(err, LOOM_ENOMEM, "reverse: out of memory");
    for (int32_t k = 0; k < n; k++)
        order[k] = n - 1 - k;
    /* the search kit: the group in slot k of an order gets priority n - k */
    loom_sk_order_to_prio(order, n, out->priorities);
    r->host->free(order);
    out->candidate = 0;
    out->evaluations = 0;
    out->best_makespan_ms = -1;
    return r->evaluate ? reverse_score(r, g, out, err) : LOOM_OK;
}

static const loom_ranker_vtable reverse_vtable = {
    {sizeof(loom_ranker_vtable), LOOM_RANKER_VERSION},
    reverse_create, reverse_destroy, reverse_rank};

/* The vtable for the "ranker" role; NULL for any other role. */
static const loom_role_header *reverse_role(const char *role)
{
    return strcmp(role, LOOM_ROLE_RANKER) ? NULL : &reverse_vtable.header;
}

/* id and version must equal manifest.json's. */
static const loom_plugin_info reverse_info = {
    LOOM_PLUGIN_INFO_HEADER, "org.example.reverse", "1.0.0",
    NULL, NULL, reverse_role};

LOOM_PLUGIN_DEFINE(reverse, reverse_info);
