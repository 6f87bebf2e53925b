/*
 * min_latency.c - the min-latency ranker: Optimus's plan choice (Optimus
 * Algorithm 1: keep the plan with the lowest predicted iteration time).
 * Every candidate graph is scored once through "loom.evaluator" with
 * priorities in group order (first microbatch first); the lowest makespan
 * wins, ties to the lowest index. A candidate whose plan fits the memory
 * cap (cap_violations == 0) always beats one that does not; an infeasible
 * candidate is chosen only when none fits (and is then reported as such).
 * Stops early when the time budget runs out (after the first candidate);
 * fails when no candidate can be scheduled, naming the last error.
 */
#include <string.h>
#include <loom/loom.h>

typedef struct ml_self {
    const loom_host_api *host;
    loom_ctx *ctx;
} ml_self;

/* Creates an instance holding the host table and the step context. */
static int ml_create(const loom_host_api *host, loom_ctx *ctx,
                     void *plugin_state, void **self, loom_error *err)
{
    (void)plugin_state;
    ml_self *s = host->alloc(sizeof *s);
    if (!s)
        return host->error(err, LOOM_ENOMEM, "min-latency: out of memory");
    s->host = host;
    s->ctx = ctx;
    *self = s;
    return LOOM_OK;
}

/* Releases an instance from ml_create. */
static void ml_destroy(void *self)
{
    ml_self *s = self;
    if (s)
        s->host->free(s);
}

/* Scores every candidate and keeps the fastest. */
static int ml_rank(void *self, const loom_stage_graph *const *graphs,
                   int32_t n_graphs, loom_ranking *out, loom_error *err)
{
    ml_self *s = self;
    const loom_host_api *host = s->host;
    if (n_graphs < 1 || !graphs)
        return host->error(err, LOOM_EINVAL,
                           "min-latency: expected at least one candidate graph, "
                           "found %d", n_graphs);
    const loom_evaluator_service *ev_svc = loom_host_evaluator(host, s->ctx);
    if (!ev_svc)
        return host->error(err, LOOM_ENOTFOUND,
                           "min-latency: the \"%s\" service is not available",
                           LOOM_SERVICE_EVALUATOR);
    int32_t most = 1;
    for (int32_t c = 0; c < n_graphs; c++)
        most = graphs[c]->n_groups > most ? graphs[c]->n_groups : most;
    if (out->cap_priorities < most || !out->priorities)
        return host->error(err, LOOM_EINVAL,
                           "min-latency: room for %d priorities, a graph has %d "
                           "groups", out->cap_priorities, most);
    float *prio = host->alloc((size_t)most * sizeof *prio);
    if (!prio)
        return host->error(err, LOOM_ENOMEM, "min-latency: out of memory");
    for (int32_t i = 0; i < most; i++)
        prio[i] = (float)(most - i);
    out->candidate = -1;
    out->evaluations = 0;
    loom_error last = {0, ""};
    int last_rc = LOOM_OK;
    int best_fits = 0; /* 1: the chosen candidate fits the memory cap */
    for (int32_t c = 0; c < n_graphs; c++) {
        if (out->candidate >= 0 && host->expired(s->ctx))
            break;
        loom_evaluator *ev = NULL;
        loom_metrics m = LOOM_METRICS_INIT;
        int rc = ev_svc->create(s->ctx, graphs[c], &ev, &last);
        if (rc == LOOM_OK)
            rc = ev_svc->run(ev, prio, &m, &last);
        if (ev)
            ev_svc->destroy(ev);
        if (rc == LOOM_ENOMEM || rc == LOOM_EINTERRUPTED) {
            host->free(prio);
            *err = last;
            return rc;
        }
        out->evaluations++;
        if (rc != LOOM_OK) {
            last_rc = rc;
            host->log(s->ctx, LOOM_LOG_INFO, "candidate %d: %s", c, last.message);
            continue;
        }
        host->log(s->ctx, LOOM_LOG_DEBUG, "candidate %d: %.3f ms%s", c, m.makespan_ms,
                  m.cap_violations > 0 ? " (over the memory cap)" : "");
        int fits = m.cap_violations == 0;
        if (out->candidate < 0 || fits > best_fits ||
            (fits == best_fits && m.makespan_ms < out->best_makespan_ms)) {
            best_fits = fits;
            out->candidate = c;
            out->best_makespan_ms = m.makespan_ms;
            if (LOOM_HOST_HAS(host, progress) && host->progress)
                host->progress(s->ctx, m.makespan_ms, out->evaluations);
        }
    }
    if (out->candidate >= 0) {
        int32_t n = graphs[out->candidate]->n_groups;
        memcpy(out->priorities, prio + (most - n), (size_t)n * sizeof *prio);
    }
    host->free(prio);
    if (out->candidate < 0)
        return host->error(err, last_rc != LOOM_OK ? last_rc : LOOM_EINFEASIBLE,
                           "min-latency: none of the %d candidates could be "
                           "scheduled; the last: %.400s", n_graphs, last.message);
    return LOOM_OK;
}

static const loom_ranker_vtable ml_vtable = {
    { sizeof(loom_ranker_vtable), LOOM_RANKER_VERSION },
    ml_create,
    ml_destroy,
    ml_rank,
    LOOM_RANKER_READS_ALL,
};

/* Returns the ranker vtable for role "ranker", else NULL. */
static const loom_role_header *ml_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_RANKER) == 0)
        return &ml_vtable.header;
    return NULL;
}

static const loom_plugin_info ml_info = {
    LOOM_PLUGIN_INFO_HEADER,
    "org.loom.min-latency",
    "1.0.0",
    NULL,
    NULL,
    ml_role,
    NULL, /* no params */
};

LOOM_PLUGIN_DEFINE(min_latency, ml_info);
