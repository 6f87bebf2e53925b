/*
 * oobleck_instantiate.c - Oobleck's instantiation (dissertation §2.4.2)
 * as a ranker over the candidates of oobleck-templates: every template is
 * simulated (through the evaluator) for each microbatch share, the
 * coin-change enumeration lists every plan that uses all N nodes with at
 * least f+1 pipelines, the batch is distributed over each plan's pipelines
 * and the plan with the shortest iteration (highest throughput) wins. The
 * chosen candidate is the plan's slowest pipeline with its share, so the
 * plan's simulated makespan is the plan's iteration time. The algorithms
 * are core/oobleck_plan.c, compiled into this plugin (libc only).
 *
 * Graphs carry no node counts, so the candidate order of oobleck-templates
 * is the contract: templates by ascending node count n0..N-f*n0, each for
 * shares 1..M or only M. With p templates, n0 = (N + 1 - p) / (f + 1);
 * give both steps the same nodes, gpus_per_node and fault_tolerance.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <loom/loom.h>
#include <loom/algorithms/oobleck.h>
#include <loom/algorithms/oobleck_common.h>

/* The params, declared once in oi_param_table (manifest.json says the same). */
typedef struct oi_params {
    int64_t fault_tolerance;
    int64_t nodes;
    int64_t gpus_per_node;
    int64_t max_plans;
} oi_params;

static const loom_param_def oi_param_table[] = {
    LOOM_INT_PARAM(oi_params, fault_tolerance, 1, 0, 4096,
                   "f: plans need at least f+1 pipelines (the same value as "
                   "oobleck-templates)"),
    LOOM_INT_PARAM(oi_params, nodes, 0, 0, 4096,
                   "N nodes; 0: tp*pp*dp GPUs divided by gpus_per_node (the same as "
                   "oobleck-templates)"),
    LOOM_INT_PARAM(oi_params, gpus_per_node, 0, 0, 64,
                   "M GPUs per node; 0: the cluster's (the same as oobleck-templates)"),
    LOOM_INT_PARAM(oi_params, max_plans, 10000, 0, 100000000,
                   "cap on the enumerated plans (0: none); the list grows combinatorially "
                   "with N"),
    LOOM_PARAM_END};

typedef struct oi_self {
    const loom_host_api *host;
    loom_ctx *ctx;
    oi_params prm;
} oi_self;

/* Creates an instance holding the host table and the step context. */
static int oi_create(const loom_host_api *host, loom_ctx *ctx,
                     void *plugin_state, void **self, loom_error *err)
{
    (void)plugin_state;
    oi_self *o = host->alloc(sizeof *o);
    if (!o)
        return host->error(err, LOOM_ENOMEM, "oobleck-instantiate: out of memory");
    o->host = host;
    o->ctx = ctx;
    int prc = loom_params_read(host, ctx, "oobleck-instantiate", oi_param_table, &o->prm, err);
    if (prc != LOOM_OK) {
        host->free(o);
        return prc;
    }
    *self = o;
    return LOOM_OK;
}

/* Releases an instance from oi_create. */
static void oi_destroy(void *self)
{
    oi_self *o = self;
    if (o)
        o->host->free(o);
}

/* Evaluates graph g with first-in-first-out priorities into *ms, and
 * *over 1 when a rank's peak exceeds the memory cap. */
static int oi_eval(oi_self *o, const loom_evaluator_service *svc,
                   const loom_stage_graph *g, float *prio, double *ms, int *over,
                   loom_error *err)
{
    for (int32_t i = 0; i < g->n_groups; i++)
        prio[i] = (float)(g->n_groups - i);
    loom_evaluator *ev = NULL;
    int rc = svc->create(o->ctx, g, &ev, err);
    if (rc != LOOM_OK)
        return rc;
    loom_metrics m = LOOM_METRICS_INIT;
    rc = svc->run(ev, prio, &m, err);
    svc->destroy(ev);
    *ms = m.makespan_ms;
    *over = m.cap_violations > 0;
    return rc;
}

/* Per-template times for shares 1..mbs, simulated when the batch
 * distribution first asks for them: ms[j * mbs + s - 1], NAN until then,
 * and over[] 1 where that pipeline's peak exceeds the memory cap. With
 * fit set, a share over the cap takes infinitely long, so no plan gives
 * a pipeline a share it cannot hold. */
typedef struct oi_times {
    oi_self *o;
    const loom_evaluator_service *svc;
    const loom_stage_graph *const *graphs;
    const int32_t *first; /* each template's first candidate */
    float *prio;          /* scratch priorities */
    double *ms;
    uint8_t *over;
    int fit;
    int64_t over_cap;     /* simulated shares over the cap */
    int32_t mbs;
    int all;              /* every share emitted (oobleck_shares_per_template) */
    int64_t evaluations;
    int rc;               /* the first evaluation error, and err its text */
    loom_error *err;
} oi_times;

/* Simulates template j's candidate k into its time, and *over. */
static double oi_sim(oi_times *t, int32_t j, int32_t k, uint8_t *over)
{
    double ms = INFINITY;
    int o = 0;
    if (t->rc != LOOM_OK)
        return INFINITY;
    t->rc = oi_eval(t->o, t->svc, t->graphs[t->first[j] + k], t->prio, &ms, &o, t->err);
    t->evaluations++;
    *over = (uint8_t)o;
    t->over_cap += o;
    return t->rc == LOOM_OK ? ms : INFINITY;
}

static double oi_share_ms(oi_times *t, int32_t j, int32_t s);

/* loom_oobleck_time_fn: template j's iteration with s microbatches. With
 * every share emitted, shares up to OOBLECK_MAX_SHARES and the whole
 * batch are simulated and the shares between them interpolated (1F1B
 * adds one steady-state period per microbatch); with the whole batch
 * only, the paper's linear N_b * T_j. */
static double oi_time(void *user, int32_t j, int32_t s)
{
    oi_times *t = user;
    if (s <= 0)
        return 0;
    if (s > t->mbs)
        return INFINITY;
    double ms = oi_share_ms(t, j, s);
    return t->fit && t->over[(size_t)j * (size_t)t->mbs + (size_t)(s - 1)] ? INFINITY : ms;
}

/* Template j's simulated (or interpolated) time for share s, 1..mbs,
 * filling its cell of ms[] and over[] once. */
static double oi_share_ms(oi_times *t, int32_t j, int32_t s)
{
    size_t at = (size_t)j * (size_t)t->mbs + (size_t)(s - 1);
    double *cell = &t->ms[at];
    if (!isnan(*cell))
        return *cell;
    int32_t sim = t->mbs < OOBLECK_MAX_SHARES ? t->mbs : OOBLECK_MAX_SHARES;
    size_t last = (size_t)j * (size_t)t->mbs + (size_t)(t->mbs - 1);
    if (!t->all && s == t->mbs) {
        *cell = oi_sim(t, j, 0, &t->over[at]);
    } else if (!t->all) {
        *cell = oi_share_ms(t, j, t->mbs) * s / t->mbs;
        t->over[at] = t->over[last];
    } else if (s <= sim) {
        *cell = oi_sim(t, j, s - 1, &t->over[at]);
    } else if (s == t->mbs) {
        *cell = oi_sim(t, j, oobleck_shares_per_template(t->mbs) - 1, &t->over[at]);
    } else {
        double lo = oi_share_ms(t, j, sim), hi = oi_share_ms(t, j, t->mbs);
        *cell = lo + (hi - lo) * (s - sim) / (t->mbs - sim);
        t->over[at] = t->over[(size_t)j * (size_t)t->mbs + (size_t)(sim - 1)] | t->over[last];
    }
    return *cell;
}

/* Splits the graphs into template groups; *first[j] is group j's first
 * graph, *all 1 when every share is emitted (oobleck_shares_per_template), else one
 * candidate (the full batch) per template. */
static int oi_groups(const loom_host_api *host,
                     const loom_stage_graph *const *g, int32_t n,
                     int32_t *first, int32_t *p, int32_t *mbs, int *all,
                     loom_error *err)
{
    *mbs = g[0]->n_microbatches;
    *all = g[0]->n_microbatches == 1 && n > 1 && g[1]->n_microbatches == 2;
    for (int32_t i = 0; i < n; i++)
        if (g[i]->n_microbatches > *mbs)
            *mbs = g[i]->n_microbatches;
    int32_t per = *all ? oobleck_shares_per_template(*mbs) : 1;
    if (n % per != 0)
        return host->error(err, LOOM_EINVAL,
                           "oobleck-instantiate: %d candidates do not form "
                           "templates of %d shares each (is oobleck-templates "
                           "the partitioner?)", n, per);
    *p = n / per;
    for (int32_t j = 0; j < *p; j++) {
        first[j] = j * per;
        for (int32_t s = 0; s < per; s++)
            if (g[j * per + s]->n_microbatches != (*all ? oobleck_share_of(s, *mbs) : *mbs))
                return host->error(err, LOOM_EINVAL,
                                   "oobleck-instantiate: candidate %d holds %d "
                                   "microbatches, expected %d (is "
                                   "oobleck-templates the partitioner?)",
                                   j * per + s, g[j * per + s]->n_microbatches,
                                   *all ? oobleck_share_of(s, *mbs) : *mbs);
    }
    return LOOM_OK;
}

/* Logs the chosen plan. */
static void oi_log(oi_self *o, const loom_oobleck_choice *ch, const int32_t *sizes,
                   int32_t mbs, int32_t nodes, int32_t f)
{
    char line[384];
    int at = snprintf(line, sizeof line, "plan %d of %d for %d node(s), f = %d:",
                      ch->plan_index + 1, ch->plans, nodes, f);
    for (int32_t j = 0; j < ch->n_sizes && at > 0 && (size_t)at < sizeof line; j++)
        if (ch->x[j] > 0)
            at += snprintf(line + at, sizeof line - (size_t)at,
                           " %d x %d-node (%d microbatches)", ch->x[j], sizes[j],
                           ch->mb[j]);
    o->host->log(o->ctx, LOOM_LOG_INFO, "%s; iteration %.3f ms for %d microbatches",
                 line, ch->iteration_ms, mbs);
}

/* Instantiates the best plan and picks its slowest pipeline's graph. */
static int oi_rank(void *self, const loom_stage_graph *const *graphs,
                   int32_t n, loom_ranking *out, loom_error *err)
{
    oi_self *o = self;
    const loom_host_api *host = o->host;
    const loom_problem *pb = host->problem(o->ctx);
    if (n < 1 || !graphs || !pb)
        return host->error(err, LOOM_EINVAL,
                           "oobleck-instantiate: expected template candidates "
                           "and a problem, found %d candidates", n);
    const loom_evaluator_service *svc = loom_host_evaluator(host, o->ctx);
    if (!svc)
        return host->error(err, LOOM_ENOTFOUND,
                           "oobleck-instantiate: the \"%s\" service is not "
                           "available", LOOM_SERVICE_EVALUATOR);
    int32_t nodes = 0, gpus = 0, p = 0, mbs = 0;
    int all = 0;
    int rc = oobleck_nodes(host, pb, o->prm.nodes, o->prm.gpus_per_node, &nodes, &gpus, err);
    if (rc != LOOM_OK)
        return rc;
    int64_t f = o->prm.fault_tolerance, max_plans = o->prm.max_plans;
    int32_t *first = host->alloc((size_t)n * sizeof *first);
    int32_t *sizes = host->alloc((size_t)n * sizeof *sizes);
    double *ms = NULL;
    uint8_t *over = NULL;
    int32_t max_groups = 1;
    for (int32_t i = 0; i < n; i++)
        max_groups = graphs[i]->n_groups > max_groups ? graphs[i]->n_groups : max_groups;
    float *prio = host->alloc((size_t)max_groups * sizeof *prio);
    loom_oobleck_choice ch;
    memset(&ch, 0, sizeof ch);
    if (!first || !sizes || !prio) {
        rc = host->error(err, LOOM_ENOMEM, "oobleck-instantiate: out of memory");
        goto done;
    }
    rc = oi_groups(host, graphs, n, first, &p, &mbs, &all, err);
    if (rc != LOOM_OK)
        goto done;
    int32_t n0 = (int32_t)((nodes + 1 - p) / (f + 1));
    if (n0 < 1 || (nodes + 1 - p) % (f + 1) != 0) {
        rc = host->error(err, LOOM_EINVAL,
                         "oobleck-instantiate: %d templates do not fit %d "
                         "nodes with fault_tolerance %lld (N - (f+1) n0 + 1 "
                         "templates expected); give oobleck-templates the same "
                         "nodes and fault_tolerance", p, nodes, (long long)f);
        goto done;
    }
    ms = host->alloc((size_t)p * (size_t)mbs * sizeof *ms);
    over = host->alloc((size_t)p * (size_t)mbs);
    if (!ms || !over) {
        rc = host->error(err, LOOM_ENOMEM, "oobleck-instantiate: out of memory");
        goto done;
    }
    for (int32_t j = 0; j < p && rc == LOOM_OK; j++) {
        sizes[j] = n0 + j;
        const loom_stage_graph *g0 = graphs[first[j]];
        if (g0->n_ranks < sizes[j] || g0->n_ranks > sizes[j] * gpus) {
            rc = host->error(err, LOOM_EINVAL,
                             "oobleck-instantiate: candidate %d has %d stages, "
                             "not a template of %d node(s) of %d GPUs (give "
                             "both Oobleck steps the same nodes and "
                             "fault_tolerance)", first[j], g0->n_ranks, sizes[j],
                             gpus);
            break;
        }
    }
    if (rc != LOOM_OK)
        goto done;
    for (size_t i = 0; i < (size_t)p * (size_t)mbs; i++) {
        ms[i] = NAN;
        over[i] = 0;
    }
    loom_error eval_err = {0, ""};
    oi_times times = {o, svc, graphs, first, prio, ms, over, 1, 0, mbs, all, 0, LOOM_OK,
                      &eval_err};
    rc = loom_oobleck_choose(sizes, p, oi_time, &times, nodes, (int32_t)f, mbs,
                             (int32_t)max_plans, &ch, err);
    if (rc == LOOM_EINFEASIBLE && times.rc == LOOM_OK && times.over_cap > 0) {
        /* no plan fits: the fastest one regardless, reported over the cap */
        times.fit = 0;
        loom_oobleck_choice_clear(&ch);
        rc = loom_oobleck_choose(sizes, p, oi_time, &times, nodes, (int32_t)f, mbs,
                                 (int32_t)max_plans, &ch, err);
        if (rc == LOOM_OK)
            host->log(o->ctx, LOOM_LOG_WARN,
                      "oobleck-instantiate: every plan for %d node(s) gives a pipeline a share "
                      "its GPUs cannot hold within the memory cap; the plan below exceeds it",
                      nodes);
    }
    if (times.rc != LOOM_OK) { /* the evaluation's failure, not its effect on the split */
        rc = times.rc;
        if (err)
            *err = eval_err;
    }
    if (rc != LOOM_OK)
        goto done;
    /* the slowest pipeline of the plan: its template with its share */
    int32_t pick = -1, pick_s = 0;
    double pick_t = -1;
    for (int32_t j = 0; j < p; j++) {
        if (ch.x[j] == 0)
            continue;
        int32_t s = loom_oobleck_share(ch.mb[j], ch.x[j], 0);
        double t = oi_time(&times, j, s);
        if (t > pick_t) {
            pick_t = t;
            pick = j;
            pick_s = s;
        }
    }
    if (all && pick_s > OOBLECK_MAX_SHARES && pick_s < mbs)
        host->log(o->ctx, LOOM_LOG_WARN,
                  "oobleck-instantiate: the slowest pipeline's share, %d microbatches, lies "
                  "between the %d simulated shares and the whole batch (%d); the plan shows "
                  "the whole batch on that pipeline, so its makespan is an upper bound",
                  pick_s, OOBLECK_MAX_SHARES, mbs);
    out->candidate = first[pick];
    if (all)
        out->candidate += pick_s <= OOBLECK_MAX_SHARES ? pick_s - 1 : oobleck_shares_per_template(mbs) - 1;
    const loom_stage_graph *g = graphs[out->candidate];
    if (out->cap_priorities < g->n_groups) {
        rc = host->error(err, LOOM_EINVAL,
                         "oobleck-instantiate: room for %d priorities, graph "
                         "has %d groups", out->cap_priorities, g->n_groups);
        goto done;
    }
    for (int32_t i = 0; i < g->n_groups; i++)
        out->priorities[i] = (float)(g->n_groups - i);
    out->best_makespan_ms = ch.iteration_ms;
    out->evaluations = times.evaluations;
    oi_log(o, &ch, sizes, mbs, nodes, (int32_t)f);
    if (LOOM_HOST_HAS(host, progress) && host->progress)
        host->progress(o->ctx, ch.iteration_ms, out->evaluations);
done:
    loom_oobleck_choice_clear(&ch);
    host->free(first);
    host->free(sizes);
    host->free(prio);
    host->free(ms);
    host->free(over);
    return rc;
}

static const loom_ranker_vtable oi_vtable = {
    { sizeof(loom_ranker_vtable), LOOM_RANKER_VERSION },
    oi_create,
    oi_destroy,
    oi_rank,
    LOOM_RANKER_READS_COUNTS,
};

/* Returns the ranker vtable for role "ranker", else NULL. */
static const loom_role_header *oi_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_RANKER) == 0)
        return &oi_vtable.header;
    return NULL;
}

static const loom_plugin_info oi_info = {
    LOOM_PLUGIN_INFO_HEADER,
    "org.loom.oobleck-instantiate",
    "1.0.0",
    NULL,
    NULL,
    oi_role,
    oi_param_table,
};

LOOM_PLUGIN_DEFINE(oobleck_instantiate, oi_info);
