/*
 * ilp.c - the exact "ilp" interleaver (PipeWeaver section 3.1) for small
 * stage graphs.
 *
 * Three list schedules (longest tail first, backward first, forward
 * first) give an incumbent; when it meets the makespan lower bound it is
 * optimal and returned at once. Otherwise the mixed-integer programme of
 * ilp_model.c is solved with lp_solve, looking only for orders better
 * than the incumbent, within timeout_ms. The per-rank order is the stages
 * sorted by their optimal start times. Group priorities are ignored: the
 * optimum does not depend on them. Graphs with more than max_stages
 * stages are refused.
 */
#include <string.h>
#include "ilp.h"

typedef struct ilpi_self {
    const loom_host_api *host;
    loom_ctx *ctx;
    int32_t max_stages;
    double timeout_ms;
} ilpi_self;

/* Reads a declared int param (the host supplies the manifest's default)
 * within bounds. */
static int ilpi_param(const loom_host_api *host, loom_ctx *ctx,
                      const char *key, int64_t lo, int64_t hi,
                      int64_t *out, loom_error *err)
{
    int64_t v = 0;
    int rc = host->param_int(ctx, key, &v);
    if (rc == LOOM_ENOTFOUND)
        return loom_param_error(host, err, "ilp", key, "int", rc);
    else if (rc != LOOM_OK)
        return host->error(err, LOOM_EINVAL,
                           "ilp: params.%s: expected an integer", key);
    if (v < lo || v > hi)
        return host->error(err, LOOM_EINVAL,
                           "ilp: params.%s: expected %lld..%lld, found %lld",
                           key, (long long)lo, (long long)hi, (long long)v);
    *out = v;
    return LOOM_OK;
}

/* Creates an instance: reads timeout_ms and max_stages. */
static int ilpi_create(const loom_host_api *host, loom_ctx *ctx,
                       void *plugin_state, void **self, loom_error *err)
{
    (void)plugin_state;
    int64_t timeout = 0, max_stages = 0;
    int rc = ilpi_param(host, ctx, "timeout_ms", 1, 86400000, &timeout,
                        err);
    if (rc == LOOM_OK)
        rc = ilpi_param(host, ctx, "max_stages", 1, 1024, &max_stages,
                        err);
    if (rc != LOOM_OK)
        return rc;
    ilpi_self *s = host->alloc(sizeof *s);
    if (!s)
        return host->error(err, LOOM_ENOMEM, "ilp: out of memory");
    s->host = host;
    s->ctx = ctx;
    s->max_stages = (int32_t)max_stages;
    s->timeout_ms = (double)timeout;
    *self = s;
    return LOOM_OK;
}

/* Releases an instance from ilpi_create. */
static void ilpi_destroy(void *self)
{
    ilpi_self *s = self;
    if (s)
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

/* The best list schedule into out; returns its makespan (< 0: none). */
static double ilpi_incumbent(loom_ilpi_problem *pb, int32_t *rank_off,
                             int32_t *order, loom_schedule *out)
{
    double best = -1.0;
    for (int rule = 0; rule < LOOM_ILPI_RULES; rule++) {
        double span = loom_ilpi_list(pb, rule, rank_off, order);
        if (span >= 0.0 && (best < 0.0 || span < best)) {
            best = span;
            ilpi_copy(pb->g, rank_off, order, out);
        }
    }
    return best;
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
                           "1024, or use a heuristic interleaver)",
                           g->n_stages, s->max_stages);
    loom_ilpi_problem pb;
    int rc = loom_ilpi_analyse(host, &pb, g, err);
    if (rc != LOOM_OK)
        return rc;
    int32_t *rank_off = host->alloc(((size_t)g->n_ranks + 1) * sizeof *rank_off);
    int32_t *order = host->alloc(((size_t)g->n_stages + 1) * sizeof *order);
    if (!rank_off || !order) {
        rc = host->error(err, LOOM_ENOMEM, "ilp: out of memory");
        goto done;
    }
    double best = ilpi_incumbent(&pb, rank_off, order, out);
    double tol = 1e-9 * (pb.lower_bound_ms > 1.0 ? pb.lower_bound_ms : 1.0);
    if (best >= 0.0 && best <= pb.lower_bound_ms + tol)
        goto done; /* a list schedule meets the lower bound: optimal */
    double span = best;
    int proven = 0;
    rc = loom_ilpi_solve(host, &pb, best, s->timeout_ms, rank_off, order,
                         &span, &proven, err);
    if (rc != LOOM_OK)
        goto done;
    if (span >= 0.0 && (best < 0.0 || span < best)) {
        ilpi_copy(g, rank_off, order, out);
        best = span;
    }
    if (best < 0.0) {
        rc = host->error(err, LOOM_ETIMEOUT,
                         "ilp: no order found within timeout_ms = %.0f ms",
                         s->timeout_ms);
        goto done;
    }
    if (!proven)
        host->log(s->ctx, LOOM_LOG_WARN,
                  "ilp: timeout_ms = %.0f ms ran out; the order (makespan "
                  "%.6g ms, lower bound %.6g ms) is the best found, not "
                  "proven optimal",
                  s->timeout_ms, best, pb.lower_bound_ms);
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
    NULL,
    NULL,
    ilpi_role,
};

LOOM_PLUGIN_DEFINE(ilp, ilpi_info);
