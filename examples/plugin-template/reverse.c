/*
 * reverse.c - an example ranker plugin: candidate 0, segment groups in
 * reverse index order (the last microbatch runs first), optionally scored
 * once with the run's evaluator (loom_host_evaluator).
 *
 * Everything a plugin needs comes from <loom/loom.h> and the host table it
 * receives; it never links libloom. Its params are declared once, in a
 * table (<loom/params.h>), and read into the instance when it is created.
 * Errors are reported with host->error (or, without a host table at hand,
 * loom_error_format from <loom/common.h>). Shared helpers come from the SDK's
 * kits: here the search kit (<loom/kits/search.h>, CMake target
 * Loom::kit_search) turns an order of groups into priorities.
 */
#include <loom/loom.h>
#include <loom/kits/search.h>

typedef struct reverse_self {
    loom_instance base; /* host and ctx: loom_instance_new fills them */
    int evaluate;       /* param "evaluate" */
} reverse_self;

/* The params, declared once: name (the member's), default, doc; ints and
 * floats add min and max. manifest.json's "params" say the same. */
static const loom_param_def reverse_params[] = {
    LOOM_BOOL_PARAM(reverse_self, evaluate, 1,
                    "score the order once with the host's evaluator (reports its makespan)"),
    LOOM_PARAM_END};

/* create(): one instance per pipeline step, its params read from the host
 * (checked against the table above; its defaults where the host has none). */
LOOM_INSTANCE_CREATE(reverse_create, reverse_self, "reverse", reverse_params);

/* Scores the chosen priorities once with the evaluator service. */
static int reverse_score(reverse_self *r, const loom_stage_graph *g,
                         loom_ranking *out, loom_error *err)
{
    const loom_host_api *host = r->base.host;
    loom_ctx *ctx = r->base.ctx;
    const loom_evaluator_service *ev = loom_host_evaluator(host, ctx);
    if (!ev)
        return host->error(err, LOOM_ENOTFOUND, "reverse: service \"%s\" not available",
                           LOOM_SERVICE_EVALUATOR);
    loom_evaluator *e = NULL;
    int rc = ev->create(ctx, g, &e, err);
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
        host->progress(ctx, m.makespan_ms, 1);
    return LOOM_OK;
}

/* Candidate 0; the groups ordered from the last to the first, so group g
 * gets priority g + 1 and higher groups run first. */
static int reverse_rank(void *self, const loom_stage_graph *const *graphs,
                        int32_t n_graphs, loom_ranking *out, loom_error *err)
{
    reverse_self *r = self;
    const loom_host_api *host = r->base.host;
    if (n_graphs < 1 || !graphs[0])
        return host->error(err, LOOM_EINVAL, "reverse: no candidate graph");
    const loom_stage_graph *g = graphs[0];
    if (out->cap_priorities < g->n_groups)
        return host->error(err, LOOM_EINVAL,
                           "reverse: room for %d priorities, graph has %d groups",
                           out->cap_priorities, g->n_groups);
    int32_t n = g->n_groups;
    int32_t *order = host->alloc((size_t)(n > 0 ? n : 1) * sizeof *order);
    if (!order)
        return host->error(err, LOOM_ENOMEM, "reverse: out of memory");
    for (int32_t k = 0; k < n; k++)
        order[k] = n - 1 - k;
    /* the search kit: the group in slot k of an order gets priority n - k */
    loom_sk_order_to_prio(order, n, out->priorities);
    host->free(order);
    out->candidate = 0;
    out->evaluations = 0;
    out->best_makespan_ms = -1;
    return r->evaluate ? reverse_score(r, g, out, err) : LOOM_OK;
}

static const loom_ranker_vtable reverse_vtable = {
    {sizeof(loom_ranker_vtable), LOOM_RANKER_VERSION},
    reverse_create, loom_instance_free, reverse_rank, LOOM_RANKER_READS_ALL};

/* role(), the info struct (id and version equal manifest.json's, and the
 * param table) and the entry point, for a plugin with one role. */
LOOM_PLUGIN_ONE_ROLE(reverse, "org.example.reverse", "1.0.0", LOOM_ROLE_RANKER, reverse_vtable,
                     reverse_params);
