/*
 * ilp.c - the exact "ilp" interleaver (the problem of PipeWeaver section
 * 3.1) for small stage graphs.
 *
 * Warm start: three list schedules (longest tail first, backward first,
 * forward first) and the zero-bubble order of the list-scheduling kit
 * (the zero-bubble interleaver's algorithm) with its in-flight limit
 * derived from the cap, P and 2P microbatches; the best that fits the cap
 * is the incumbent. When it meets the lower bound it is optimal at once;
 * otherwise the branch and bound of ilp_bnb.c searches for better orders
 * and proves the optimum when it finishes: first with a tenth of
 * timeout_ms (at most a second), then (when the clock stopped it) after the microbatch
 * priority sweep of ilp_prio.c with what is left. One solve
 * per graph: the answer is cached in the plugin state, so the search's
 * evaluators and the final replay of a plan share it. Group priorities
 * are ignored: the optimum does not depend on them. Graphs with more than
 * max_stages stages are refused.
 */
#include <string.h>
#include <loom/kits/listsched.h>
#include "ilp.h"

typedef struct ilpi_self {
    const loom_host_api *host;
    loom_ctx *ctx;
    loom_ilpi_cache *cache;
    int32_t max_stages;
    double timeout_ms;
    loom_zb zb;
} ilpi_self;

/* The params, declared once in ilpi_param_table (manifest.json says the same). */
typedef struct ilpi_params {
    int64_t timeout_ms;
    int64_t max_stages;
} ilpi_params;

static const loom_param_def ilpi_param_table[] = {
    LOOM_INT_PARAM(ilpi_params, timeout_ms, 10000, 1, 86400000,
                   "wall-clock limit of the one solve per stage graph; when it runs out the "
                   "best order found is returned with a warning giving the proven lower bound "
                   "and gap"),
    LOOM_INT_PARAM(ilpi_params, max_stages, 512, 1, 2048,
                   "larger stage graphs are refused with an error (the search keeps a "
                   "dependency matrix of stages x stages)"),
    LOOM_PARAM_END};

/* Creates an instance: reads timeout_ms and max_stages. */
static int ilpi_create(const loom_host_api *host, loom_ctx *ctx,
                       void *plugin_state, void **self, loom_error *err)
{
    ilpi_params prm;
    int rc = loom_params_read(host, ctx, "ilp", ilpi_param_table, &prm, err);
    if (rc != LOOM_OK)
        return rc;
    if (prm.max_stages > LOOM_ILPI_MAX_STAGES) /* the table's bound must fit the solver */
        return host->error(err, LOOM_EINVAL, "ilp: param max_stages: expected at most %d, "
                           "found %lld", LOOM_ILPI_MAX_STAGES, (long long)prm.max_stages);
    ilpi_self *s = host->alloc(sizeof *s);
    if (!s)
        return host->error(err, LOOM_ENOMEM, "ilp: out of memory");
    memset(s, 0, sizeof *s);
    s->host = host;
    s->ctx = ctx;
    s->cache = plugin_state;
    s->max_stages = (int32_t)prm.max_stages;
    s->timeout_ms = (double)prm.timeout_ms;
    *self = s;
    return LOOM_OK;
}

/* Releases an instance from ilpi_create. */
static void ilpi_destroy(void *self)
{
    ilpi_self *s = self;
    if (!s)
        return;
    loom_zb_release(&s->zb, s->host);
    s->host->free(s);
}

/* Copies orders into the host's schedule. */
static void ilpi_copy(const loom_stage_graph *g, const int32_t *rank_off,
                      const int32_t *order, loom_schedule *out)
{
    out->n_ranks = g->n_ranks;
    out->n_stages = g->n_stages;
    memcpy(out->rank_off, rank_off, ((size_t)g->n_ranks + 1) * sizeof *rank_off);
    memcpy(out->order, order, (size_t)g->n_stages * sizeof *order);
}

/* Hands the proven lower bound to the host (when its schedule has the
 * member). */
static void ilpi_report(loom_schedule *out, double lower_bound_ms)
{
    if (LOOM_STRUCT_HAS(out, loom_schedule, lower_bound_ms))
        out->lower_bound_ms = lower_bound_ms;
}

/* Keeps (rank_off, order) in out when its makespan beats *best. */
static void ilpi_keep(loom_ilpi_problem *pb, double span, const int32_t *rank_off,
                      const int32_t *order, loom_schedule *out, double *best)
{
    if (span >= 0.0 && (*best < 0.0 || span < *best)) {
        *best = span;
        ilpi_copy(pb->g, rank_off, order, out);
    }
}

/* The best warm start into out; returns its makespan (< 0: none fits). */
static int ilpi_incumbent(ilpi_self *s, loom_ilpi_problem *pb, int32_t *rank_off,
                          int32_t *order, loom_schedule *out, double *best,
                          loom_error *err)
{
    const loom_stage_graph *g = pb->g;
    *best = -1.0;
    for (int rule = 0; rule < LOOM_ILPI_RULES; rule++)
        ilpi_keep(pb, loom_ilpi_list(pb, rule, rank_off, order), rank_off, order, out,
                  best);
    int64_t limits[3] = {0, g->n_ranks, 2 * (int64_t)g->n_ranks};
    loom_schedule tmp = LOOM_SCHEDULE_INIT;
    tmp.rank_off = rank_off;
    tmp.order = order;
    for (int i = 0; i < 3; i++) {
        int rc = loom_zb_order(&s->zb, s->host, g, NULL, limits[i], &tmp, "ilp", err);
        if (rc == LOOM_ENOMEM)
            return rc;
        if (rc == LOOM_OK) /* a replay < 0 (over the cap) is skipped */
            ilpi_keep(pb, loom_ilpi_replay(pb, rank_off, order, NULL), rank_off, order,
                      out, best);
    }
    return LOOM_OK;
}

/* Merges a search's result: its orders (in rank_off / order) into out
 * when they beat *best. */
static void ilpi_merge(const loom_stage_graph *g, const loom_ilpi_result *r,
                       const int32_t *rank_off, const int32_t *order, loom_schedule *out,
                       double *best)
{
    if (r->makespan_ms >= 0.0 && (*best < 0.0 || r->makespan_ms < *best)) {
        ilpi_copy(g, rank_off, order, out);
        *best = r->makespan_ms;
    }
}

/* Solves in two rounds: a search with a tenth of the time limit, at most
 * a second (most problems finish there, and a longer limit does not delay
 * the sweep's incumbent); when the clock stopped it, the priority sweep
 * of ilp_prio.c (at most a quarter of the limit) and a second search
 * with what is left, from the better incumbent. */
static int ilpi_solve(ilpi_self *s, loom_ilpi_problem *pb, int32_t *rank_off, int32_t *order,
                      loom_schedule *out, double *best, loom_ilpi_result *res, loom_error *err)
{
    const loom_host_api *host = s->host;
    double t0 = host->now_ms();
    double first_ms = 0.1 * s->timeout_ms < 1000.0 ? 0.1 * s->timeout_ms : 1000.0;
    int rc = loom_ilpi_search(host, pb, *best, first_ms, rank_off, order, res, err);
    if (rc != LOOM_OK)
        return rc;
    ilpi_merge(pb->g, res, rank_off, order, out, best);
    if (res->proven || !res->timed_out)
        return LOOM_OK;
    if (res->lower_bound_ms > pb->lower_bound_ms)
        pb->lower_bound_ms = res->lower_bound_ms; /* the sweep stops on meeting it */
    rc = loom_ilpi_warm_prio(host, pb, host->now_ms() + 0.25 * s->timeout_ms, rank_off, order,
                             out->rank_off, out->order, best, err);
    if (rc != LOOM_OK)
        return rc;
    out->n_ranks = pb->g->n_ranks;
    out->n_stages = pb->g->n_stages;
    double left = t0 + s->timeout_ms - host->now_ms();
    if (left < 1.0)
        left = 1.0;
    loom_ilpi_result again;
    rc = loom_ilpi_search(host, pb, *best, left, rank_off, order, &again, err);
    if (rc != LOOM_OK)
        return rc;
    ilpi_merge(pb->g, &again, rank_off, order, out, best);
    res->proven = again.proven;
    res->timed_out = again.timed_out;
    res->nodes += again.nodes;
    if (again.lower_bound_ms > res->lower_bound_ms || again.proven)
        res->lower_bound_ms = again.lower_bound_ms;
    return LOOM_OK;
}

/* Writes an optimal per-rank order (see the file comment). */
static int ilpi_interleave(void *self, const loom_stage_graph *g,
                           const float *priorities, loom_schedule *out,
                           loom_error *err)
{
    ilpi_self *s = self;
    const loom_host_api *host = s->host;
    (void)priorities;
    if (g->n_stages > s->max_stages)
        return host->error(err, LOOM_EINVAL,
                           "ilp: the stage graph has %d stages, more than "
                           "max_stages = %d; the exact interleaver is meant "
                           "for small instances (raise max_stages, at most "
                           "%d, or use a heuristic interleaver)",
                           g->n_stages, s->max_stages, LOOM_ILPI_MAX_STAGES);
    uint64_t digest = loom_ilpi_digest(g, s->timeout_ms);
    loom_ilpi_result res;
    if (loom_ilpi_cache_get(s->cache, digest, g, out->rank_off, out->order, &res)) {
        out->n_ranks = g->n_ranks;
        out->n_stages = g->n_stages;
        ilpi_report(out, res.lower_bound_ms);
        return LOOM_OK;
    }
    loom_ilpi_problem pb;
    int rc = loom_ilpi_analyse(host, &pb, g, err);
    if (rc != LOOM_OK)
        return rc;
    int32_t *rank_off = host->alloc(((size_t)g->n_ranks + 1) * sizeof *rank_off);
    int32_t *order = host->alloc(((size_t)g->n_stages + 1) * sizeof *order);
    double best = -1.0;
    if (!rank_off || !order) {
        rc = host->error(err, LOOM_ENOMEM, "ilp: out of memory");
        goto done;
    }
    rc = ilpi_incumbent(s, &pb, rank_off, order, out, &best, err);
    if (rc != LOOM_OK)
        goto done;
    rc = ilpi_solve(s, &pb, rank_off, order, out, &best, &res, err);
    if (rc != LOOM_OK)
        goto done;
    if (best < 0.0) {
        rc = res.proven
                 ? host->error(err, LOOM_EINFEASIBLE,
                               "ilp: no order of the %d stages keeps every rank "
                               "under the memory cap of %.0f bytes",
                               g->n_stages, g->memory_cap_bytes)
                 : host->error(err, LOOM_ETIMEOUT,
                               "ilp: no order within the memory cap found within "
                               "timeout_ms = %.0f ms",
                               s->timeout_ms);
        goto done;
    }
    ilpi_report(out, res.lower_bound_ms);
    if (!res.proven && res.timed_out)
        host->log(s->ctx, LOOM_LOG_WARN,
                  "ilp: timeout_ms = %.0f ms ran out; the order (makespan "
                  "%.6g ms) is the best found, not proven optimal: lower "
                  "bound %.6g ms, gap %.3g%%",
                  s->timeout_ms, best, res.lower_bound_ms,
                  100.0 * (best - res.lower_bound_ms) / best);
    else if (!res.proven)
        host->log(s->ctx, LOOM_LOG_WARN,
                  "ilp: the search skipped branches it cannot settle (a "
                  "stage of 0 ms, or deeper than its limit); the order "
                  "(makespan %.6g ms) is the best found, not proven "
                  "optimal: lower bound %.6g ms, gap %.3g%%",
                  best, res.lower_bound_ms, 100.0 * (best - res.lower_bound_ms) / best);
    memcpy(rank_off, out->rank_off, ((size_t)g->n_ranks + 1) * sizeof *rank_off);
    memcpy(order, out->order, (size_t)g->n_stages * sizeof *order);
    res.makespan_ms = best;
    loom_ilpi_cache_put(s->cache, digest, g, rank_off, order, &res);
done:
    host->free(rank_off);
    host->free(order);
    loom_ilpi_free(host, &pb);
    return rc;
}

static const loom_interleaver_vtable ilpi_vtable = {
    { sizeof(loom_interleaver_vtable), LOOM_INTERLEAVER_VERSION },
    ilpi_create,
    ilpi_destroy,
    ilpi_interleave,
    NULL,
};

/* Returns the interleaver vtable for role "interleaver", else NULL. */
static const loom_role_header *ilpi_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_INTERLEAVER) == 0)
        return &ilpi_vtable.header;
    return NULL;
}

static const loom_plugin_info ilpi_info = {
    LOOM_PLUGIN_INFO_HEADER,
    "org.loom.ilp",
    "1.0.0",
    loom_ilpi_cache_init,
    loom_ilpi_cache_fini,
    ilpi_role,
    ilpi_param_table,
};

LOOM_PLUGIN_DEFINE(ilp, ilpi_info);
