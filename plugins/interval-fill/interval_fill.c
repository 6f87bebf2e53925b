/*
 * interval_fill.c - the interval-fill ranker: DistTrain's inter-microbatch
 * reordering (DistTrain §6.2) as the order in which microbatches enter
 * the pipeline, and the choice among candidates.
 *
 * It reads only its candidates' counts (LOOM_RANKER_READS_COUNTS): each
 * candidate's graph is built by the evaluator created on it and read
 * from there (loom.evaluator's graph()), one candidate at a time.
 * For every candidate graph it reads each microbatch's forward and
 * backward time on every rank (rank r standing for pipeline stage r, as
 * disttrain-alloc numbers them along the encoder -> backbone -> generator
 * chain), orders the microbatches with loom_ifill_order, turns the order
 * into group priorities (earlier microbatch, higher priority; within a
 * microbatch lower flows first) and scores them through "loom.evaluator".
 * With keep_better it also scores the workload order and keeps the faster
 * of the two. The candidate with the lowest makespan wins (ties: lowest
 * index); candidates that cannot be scheduled (e.g. over the memory cap)
 * are skipped, and it fails only when none can.
 *
 * With `threads` above 1 it scores that many candidates at once, each on
 * its own thread and evaluator (the search kit's loom_sk_ordered_batch),
 * and settles them in candidate order as they finish, so the choice, the progress
 * reports and the logs are those of one thread.
 */
#include <stdatomic.h>
#include <string.h>
#include <loom/loom.h>
#include <loom/kits/search.h>
#include "ifill.h"

typedef struct ifr_self {
    const loom_host_api *host;
    loom_ctx *ctx;
} ifr_self;

/* Creates an instance holding the host table and the step context. */
static int ifr_create(const loom_host_api *host, loom_ctx *ctx,
                      void *plugin_state, void **self, loom_error *err)
{
    (void)plugin_state;
    ifr_self *s = host->alloc(sizeof *s);
    if (!s)
        return host->error(err, LOOM_ENOMEM, "interval-fill: out of memory");
    s->host = host;
    s->ctx = ctx;
    *self = s;
    return LOOM_OK;
}

/* Releases an instance from ifr_create. */
static void ifr_destroy(void *self)
{
    ifr_self *s = self;
    if (s)
        s->host->free(s);
}

/* Working memory for one graph. */
typedef struct ifr_work {
    double *fwd, *bwd, *sim, *key_size, *key_fwd0;
    int32_t *order, *pos, *iscratch;
} ifr_work;

/* Frees the arrays of w. */
static void ifr_free(const loom_host_api *host, ifr_work *w)
{
    host->free(w->fwd);
    host->free(w->bwd);
    host->free(w->sim);
    host->free(w->key_size);
    host->free(w->key_fwd0);
    host->free(w->order);
    host->free(w->pos);
    host->free(w->iscratch);
    memset(w, 0, sizeof *w);
}

/* Fills prio (one per group) with the interval-fill order of graph g. */
static int ifr_priorities(ifr_self *s, const loom_stage_graph *g, float *prio,
                          loom_error *err)
{
    const loom_host_api *host = s->host;
    int32_t p = g->n_ranks, l = g->n_microbatches;
    if (p < 1 || l < 1)
        return host->error(err, LOOM_EINVAL,
                           "interval-fill: graph with %d ranks and %d "
                           "microbatches", p, l);
    size_t lp = (size_t)l * (size_t)p;
    ifr_work w;
    w.fwd = host->alloc(lp * sizeof(double));
    w.bwd = host->alloc(lp * sizeof(double));
    w.sim = host->alloc(LOOM_IFILL_SIM_DOUBLES(l, p) * sizeof(double));
    w.key_size = host->alloc((size_t)l * sizeof(double));
    w.key_fwd0 = host->alloc((size_t)l * sizeof(double));
    w.order = host->alloc((size_t)l * sizeof(int32_t));
    w.pos = host->alloc((size_t)l * sizeof(int32_t));
    w.iscratch = host->alloc(LOOM_IFILL_ORDER_INTS(l, p) * sizeof(int32_t));
    if (!w.fwd || !w.bwd || !w.sim || !w.key_size || !w.key_fwd0 || !w.order || !w.pos ||
        !w.iscratch) {
        ifr_free(host, &w);
        return host->error(err, LOOM_ENOMEM, "interval-fill: out of memory");
    }
    memset(w.fwd, 0, lp * sizeof(double));
    memset(w.bwd, 0, lp * sizeof(double));
    for (int32_t v = 0; v < g->n_stages; v++) {
        size_t at = (size_t)g->microbatch[v] * (size_t)p + (size_t)g->rank[v];
        if (g->kind[v] == LOOM_STAGE_F)
            w.fwd[at] += g->duration_ms[v];
        else
            w.bwd[at] += g->duration_ms[v];
    }
    loom_ifill_order(p, l, w.fwd, w.bwd, w.order, w.sim, w.iscratch, w.key_size, w.key_fwd0);
    for (int32_t k = 0; k < l; k++)
        w.pos[w.order[k]] = k;
    int32_t flows = g->n_groups / l > 0 ? g->n_groups / l : 1;
    for (int32_t grp = 0; grp < g->n_groups; grp++) {
        int32_t mb = g->group_microbatch[grp];
        prio[grp] = (float)((int64_t)(l - w.pos[mb]) * flows +
                            (flows - 1 - g->group_flow[grp] % flows));
    }
    ifr_free(host, &w);
    return LOOM_OK;
}

/* Scores priorities `prio` with evaluator ev. */
static int ifr_score(const loom_evaluator_service *ev_svc, loom_evaluator *ev, const float *prio,
                     double *makespan_ms, loom_error *err)
{
    loom_metrics m = LOOM_METRICS_INIT;
    int rc = ev_svc->run(ev, prio, &m, err);
    *makespan_ms = m.makespan_ms;
    return rc;
}

/* The params, declared once in ifill_param_table (manifest.json says the same). */
typedef struct ifill_params {
    int keep_better;
    int64_t threads;
} ifill_params;

static const loom_param_def ifill_param_table[] = {
    LOOM_BOOL_PARAM(ifill_params, keep_better, 1,
                   "also evaluate the workload order and keep it when it is faster than the "
                   "interval-fill order"),
    LOOM_INT_PARAM(ifill_params, threads, 1, 1, LOOM_SK_MAX_THREADS,
                   "candidates scored at once, each on its own thread and evaluator; the "
                   "choice does not depend on it"),
    LOOM_PARAM_END};

/* What scoring one candidate gave (ifr_candidate), kept until every
 * candidate before it is settled (ifr_settle). */
typedef struct ifr_result {
    int rc;          /* LOOM_OK, or why the candidate cannot be scheduled */
    int skipped;     /* not scored: the deadline had passed */
    int fifo_won;    /* the workload order was faster */
    int64_t evals;
    double t_fill, t_fifo;
    float *prio;     /* the faster order's priorities, n_groups; host memory */
    int32_t n_groups;
    char why[LOOM_ERROR_MSG_BYTES];
} ifr_result;

/* One ranking over the candidates, shared by the threads that score them. */
typedef struct ifr_run {
    ifr_self *s;
    const loom_evaluator_service *ev_svc;
    const loom_stage_graph *const *graphs;
    int keep;
    ifr_result *res;
    atomic_int any_ok; /* some candidate is settled as scored */
    int64_t evals;
    int last_rc;       /* the last candidate that could not be scheduled */
    char last_why[LOOM_ERROR_MSG_BYTES];
    loom_ranking *out;
} ifr_run;

/* Scores candidate c into run->res[c]: the interval-fill order and, with
 * keep_better, the workload order. A candidate that cannot be scheduled
 * is recorded (rc, why), not an error; LOOM_ENOMEM, LOOM_EINTERRUPTED and
 * interval-fill's own errors are. */
static int ifr_candidate(ifr_run *run, int32_t c, loom_error *err)
{
    ifr_self *s = run->s;
    const loom_host_api *host = s->host;
    const loom_evaluator_service *ev_svc = run->ev_svc;
    ifr_result *r = &run->res[c];
    if (atomic_load(&run->any_ok) && host->expired(s->ctx)) {
        r->skipped = 1;
        return LOOM_OK;
    }
    /* an outline's graph is built by its evaluator and read from it */
    loom_evaluator *ev = NULL;
    const loom_stage_graph *g = run->graphs[c];
    float *fill = NULL, *fifo = NULL;
    int ours = 0; /* rc is interval-fill's own error, not the evaluator's */
    int rc = ev_svc->create(s->ctx, run->graphs[c], &ev, err);
    if (rc == LOOM_OK) {
        if (LOOM_EVALUATOR_HAS(ev_svc, graph))
            g = ev_svc->graph(ev);
        ours = 1;
        if (!g || (g->n_stages > 0 && !g->kind)) {
            rc = host->error(err, LOOM_EINVAL, "interval-fill: candidate %d: the "
                             "evaluator gives no graph to read", c);
        } else {
            size_t n = (size_t)(g->n_groups > 0 ? g->n_groups : 1);
            fill = host->alloc(n * sizeof *fill);
            fifo = host->alloc(n * sizeof *fifo);
            if (!fill || !fifo)
                rc = host->error(err, LOOM_ENOMEM, "interval-fill: out of memory");
            else if ((rc = ifr_priorities(s, g, fill, err)) == LOOM_OK) {
                ours = 0;
                rc = ifr_score(ev_svc, ev, fill, &r->t_fill, err);
                r->evals++;
            }
        }
    }
    if (!ours && rc != LOOM_OK && rc != LOOM_ENOMEM && rc != LOOM_EINTERRUPTED) {
        r->rc = rc; /* this candidate cannot be scheduled: the next may */
        memcpy(r->why, err->message, sizeof r->why);
        rc = LOOM_OK;
    } else if (rc == LOOM_OK && run->keep) {
        for (int32_t i = 0; i < g->n_groups; i++)
            fifo[i] = (float)(g->n_groups - i);
        rc = ifr_score(ev_svc, ev, fifo, &r->t_fifo, err);
        r->evals += rc == LOOM_OK;
        r->fifo_won = rc == LOOM_OK && r->t_fifo < r->t_fill;
    }
    if (rc == LOOM_OK && r->rc == LOOM_OK) {
        r->n_groups = g->n_groups;
        r->prio = r->fifo_won ? fifo : fill;
        if (r->fifo_won)
            fifo = NULL;
        else
            fill = NULL;
    }
    host->free(fill);
    host->free(fifo);
    if (ev)
        ev_svc->destroy(ev);
    return rc;
}

/* Settles candidate c, in candidate order, as one thread scoring them in
 * turn would: logs it, keeps the fastest (ties: the lower index) and
 * reports progress. */
static void ifr_settle(void *user, int32_t c)
{
    ifr_run *run = user;
    ifr_self *s = run->s;
    const loom_host_api *host = s->host;
    loom_ranking *out = run->out;
    ifr_result *r = &run->res[c];
    run->evals += r->evals;
    if (r->rc != LOOM_OK) {
        run->last_rc = r->rc;
        memcpy(run->last_why, r->why, sizeof run->last_why);
        host->log(s->ctx, LOOM_LOG_INFO, "candidate %d: %s", c, r->why);
        return;
    }
    if (r->skipped || !r->prio)
        return;
    double t = r->fifo_won ? r->t_fifo : r->t_fill;
    if (run->keep)
        host->log(s->ctx, LOOM_LOG_INFO,
                  "candidate %d: interval fill %.3f ms, workload order "
                  "%.3f ms", c, r->t_fill, r->t_fifo);
    if (out->candidate < 0 || t < out->best_makespan_ms) {
        out->candidate = c;
        out->best_makespan_ms = t;
        memcpy(out->priorities, r->prio, (size_t)r->n_groups * sizeof *r->prio);
        if (LOOM_HOST_HAS(host, progress) && host->progress)
            host->progress(s->ctx, t, run->evals);
    }
    atomic_store(&run->any_ok, 1);
    host->free(r->prio);
    r->prio = NULL;
}

/* A pool job: scores candidate `job`. */
static int ifr_job(void *user, int32_t worker, int32_t job, loom_error *err)
{
    (void)worker;
    return ifr_candidate(user, job, err);
}

/* Orders every candidate's microbatches and keeps the fastest. */
static int ifr_rank(void *self, const loom_stage_graph *const *graphs,
                    int32_t n_graphs, loom_ranking *out, loom_error *err)
{
    ifr_self *s = self;
    const loom_host_api *host = s->host;
    if (n_graphs < 1 || !graphs)
        return host->error(err, LOOM_EINVAL,
                           "interval-fill: expected at least one candidate "
                           "graph, found %d", n_graphs);
    const loom_evaluator_service *ev_svc = loom_host_evaluator(host, s->ctx);
    if (!ev_svc)
        return host->error(err, LOOM_ENOTFOUND,
                           "interval-fill: the \"%s\" service is not available",
                           LOOM_SERVICE_EVALUATOR);
    ifill_params prm;
    int rc = loom_params_read(host, s->ctx, "interval-fill", ifill_param_table, &prm, err);
    if (rc != LOOM_OK)
        return rc;
    int32_t most = 1;
    for (int32_t c = 0; c < n_graphs; c++)
        most = graphs[c]->n_groups > most ? graphs[c]->n_groups : most;
    if (out->cap_priorities < most || !out->priorities)
        return host->error(err, LOOM_EINVAL,
                           "interval-fill: room for %d priorities, a graph "
                           "has %d groups", out->cap_priorities, most);
    ifr_run run = {.s = s, .ev_svc = ev_svc, .graphs = graphs, .keep = prm.keep_better,
                   .out = out};
    run.res = host->alloc((size_t)n_graphs * sizeof *run.res);
    if (!run.res)
        return host->error(err, LOOM_ENOMEM, "interval-fill: out of memory");
    memset(run.res, 0, (size_t)n_graphs * sizeof *run.res);
    atomic_init(&run.any_ok, 0);
    out->candidate = -1;
    rc = loom_sk_ordered_batch(host, s->ctx, "interval-fill", prm.threads, n_graphs, ifr_job,
                               ifr_settle, &run, err);
    for (int32_t c = 0; c < n_graphs; c++)
        host->free(run.res[c].prio);
    host->free(run.res);
    out->evaluations = run.evals;
    if (rc == LOOM_OK && out->candidate < 0)
        return host->error(err, run.last_rc != LOOM_OK ? run.last_rc : LOOM_EINFEASIBLE,
                           "interval-fill: none of the %d candidates could be "
                           "scheduled; the last: %.400s", n_graphs, run.last_why);
    return rc;
}

static const loom_ranker_vtable ifr_vtable = {
    { sizeof(loom_ranker_vtable), LOOM_RANKER_VERSION },
    ifr_create,
    ifr_destroy,
    ifr_rank,
    LOOM_RANKER_READS_COUNTS,
};

/* Returns the ranker vtable for role "ranker", else NULL. */
static const loom_role_header *ifr_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_RANKER) == 0)
        return &ifr_vtable.header;
    return NULL;
}

static const loom_plugin_info ifr_info = {
    LOOM_PLUGIN_INFO_HEADER,
    "org.loom.interval-fill",
    "1.0.0",
    NULL,
    NULL,
    ifr_role,
    ifill_param_table,
};

LOOM_PLUGIN_DEFINE(interval_fill, ifr_info);
