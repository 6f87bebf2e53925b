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
 *
 * It reads only its candidates' counts (LOOM_RANKER_READS_COUNTS), so with
 * several candidates the host hands it outlines and builds each graph in
 * the evaluator created on it. With `threads` above 1 it scores that many
 * candidates at once, each on its own thread and evaluator, and settles
 * them in candidate order (loom_sk_run_ordered), so the choice, progress
 * and logs are those of one thread.
 */
#include <stdatomic.h>
#include <string.h>
#include <loom/loom.h>
#include <loom/kits/search.h>

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

/* The params, declared once in ml_param_table (manifest.json says the same). */
typedef struct ml_params {
    int64_t threads;
} ml_params;

static const loom_param_def ml_param_table[] = {
    LOOM_INT_PARAM(ml_params, threads, 1, 1, LOOM_SK_MAX_THREADS,
                   "candidates scored at once, each on its own thread and evaluator; the "
                   "choice does not depend on it"),
    LOOM_PARAM_END};

/* What scoring one candidate gave (ml_job), until it is settled. */
typedef struct ml_result {
    int rc;          /* the evaluator's status; LOOM_OK: scored */
    int skipped;     /* not scored: the deadline had passed */
    loom_metrics m;
    char why[LOOM_ERROR_MSG_BYTES];
} ml_result;

/* One ranking, shared by the threads that score its candidates. */
typedef struct ml_run {
    ml_self *s;
    const loom_evaluator_service *ev_svc;
    const loom_stage_graph *const *graphs;
    const float *prio;   /* group order, `most` entries */
    ml_result *res;
    atomic_int any_ok;   /* some candidate is settled as scored */
    int best_fits;       /* 1: the chosen candidate fits the memory cap */
    int last_rc;         /* the last candidate that could not be scheduled */
    char last_why[LOOM_ERROR_MSG_BYTES];
    loom_ranking *out;
} ml_run;

/* A pool job: scores candidate `job` with the group order. LOOM_ENOMEM
 * and LOOM_EINTERRUPTED end the ranking; any other failure is the
 * candidate's. */
static int ml_job(void *user, int32_t worker, int32_t job, loom_error *err)
{
    (void)worker;
    ml_run *run = user;
    ml_result *r = &run->res[job];
    if (atomic_load(&run->any_ok) && run->s->host->expired(run->s->ctx)) {
        r->skipped = 1;
        return LOOM_OK;
    }
    loom_evaluator *ev = NULL;
    loom_metrics m = LOOM_METRICS_INIT;
    loom_error e = {0, ""};
    int rc = run->ev_svc->create(run->s->ctx, run->graphs[job], &ev, &e);
    if (rc == LOOM_OK)
        rc = run->ev_svc->run(ev, run->prio, &m, &e);
    if (ev)
        run->ev_svc->destroy(ev);
    if (rc == LOOM_ENOMEM || rc == LOOM_EINTERRUPTED) {
        *err = e;
        return rc;
    }
    r->rc = rc;
    r->m = m;
    memcpy(r->why, e.message, sizeof r->why);
    return LOOM_OK;
}

/* Settles candidate c, in candidate order, as one thread scoring them in
 * turn would: counts and logs it and keeps the fastest that fits (ties:
 * the lower index), reporting progress. */
static void ml_settle(void *user, int32_t c)
{
    ml_run *run = user;
    const loom_host_api *host = run->s->host;
    loom_ctx *ctx = run->s->ctx;
    loom_ranking *out = run->out;
    const ml_result *r = &run->res[c];
    if (r->skipped)
        return;
    out->evaluations++;
    if (r->rc != LOOM_OK) {
        run->last_rc = r->rc;
        memcpy(run->last_why, r->why, sizeof run->last_why);
        host->log(ctx, LOOM_LOG_INFO, "candidate %d: %s", c, r->why);
        return;
    }
    host->log(ctx, LOOM_LOG_DEBUG, "candidate %d: %.3f ms%s", c, r->m.makespan_ms,
              r->m.cap_violations > 0 ? " (over the memory cap)" : "");
    int fits = r->m.cap_violations == 0;
    if (out->candidate < 0 || fits > run->best_fits ||
        (fits == run->best_fits && r->m.makespan_ms < out->best_makespan_ms)) {
        run->best_fits = fits;
        out->candidate = c;
        out->best_makespan_ms = r->m.makespan_ms;
        if (LOOM_HOST_HAS(host, progress) && host->progress)
            host->progress(ctx, r->m.makespan_ms, out->evaluations);
    }
    atomic_store(&run->any_ok, 1);
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
    ml_params prm;
    int rc = loom_params_read(host, s->ctx, "min-latency", ml_param_table, &prm, err);
    if (rc != LOOM_OK)
        return rc;
    int32_t most = 1;
    for (int32_t c = 0; c < n_graphs; c++)
        most = graphs[c]->n_groups > most ? graphs[c]->n_groups : most;
    if (out->cap_priorities < most || !out->priorities)
        return host->error(err, LOOM_EINVAL,
                           "min-latency: room for %d priorities, a graph has %d "
                           "groups", out->cap_priorities, most);
    float *prio = host->alloc((size_t)most * sizeof *prio);
    ml_run run = {.s = s, .ev_svc = ev_svc, .graphs = graphs, .out = out};
    run.res = host->alloc((size_t)n_graphs * sizeof *run.res);
    if (!prio || !run.res) {
        host->free(prio);
        host->free(run.res);
        return host->error(err, LOOM_ENOMEM, "min-latency: out of memory");
    }
    memset(run.res, 0, (size_t)n_graphs * sizeof *run.res);
    atomic_init(&run.any_ok, 0);
    for (int32_t i = 0; i < most; i++)
        prio[i] = (float)(most - i);
    /* a graph of n groups is scored with the first n: the same order */
    run.prio = prio;
    out->candidate = -1;
    out->evaluations = 0;
    rc = loom_sk_ordered_batch(host, s->ctx, "min-latency", prm.threads, n_graphs, ml_job,
                               ml_settle, &run, err);
    if (rc == LOOM_OK && out->candidate >= 0) {
        int32_t n = graphs[out->candidate]->n_groups;
        memcpy(out->priorities, prio + (most - n), (size_t)n * sizeof *prio);
    }
    host->free(prio);
    host->free(run.res);
    if (rc == LOOM_OK && out->candidate < 0)
        return host->error(err, run.last_rc != LOOM_OK ? run.last_rc : LOOM_EINFEASIBLE,
                           "min-latency: none of the %d candidates could be "
                           "scheduled; the last: %.400s", n_graphs, run.last_why);
    return rc;
}

static const loom_ranker_vtable ml_vtable = {
    { sizeof(loom_ranker_vtable), LOOM_RANKER_VERSION },
    ml_create,
    ml_destroy,
    ml_rank,
    LOOM_RANKER_READS_COUNTS,
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
    ml_param_table,
};

LOOM_PLUGIN_DEFINE(min_latency, ml_info);
