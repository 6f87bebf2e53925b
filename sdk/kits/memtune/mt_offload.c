/*
 * mt_offload.c - what the memory tuners that may offload share: the
 * `offload` param with its check of the cluster's host bandwidth, and the
 * choice between a recomputation-only answer and one that may offload.
 */
#include <string.h>
#include <loom/kits/memtune.h>

/* Checks the cluster when `offload` is on (see header). */
int loom_mt_offload_ready(const loom_host_api *host, loom_ctx *ctx, const char *who, int on,
                          loom_error *err)
{
    if (!on)
        return LOOM_OK;
    const loom_problem *pb = host->problem ? host->problem(ctx) : NULL;
    if (!pb)
        return LOOM_OK; /* no problem yet: loom_mt_offload_check at tune */
    return loom_mt_offload_check(host, pb, who, err);
}

/* Fails when the problem's cluster has no host bandwidth (see header). */
int loom_mt_offload_check(const loom_host_api *host, const loom_problem *pb,
                          const char *who, loom_error *err)
{
    const loom_cluster *c = pb ? pb->cluster : NULL;
    if (loom_cluster_host_bytes_per_s(c) > 0)
        return LOOM_OK;
    if (!c)
        return host->error(err, LOOM_EINVAL,
                           "%s: params.offload is true, but the problem has no cluster, so "
                           "no host_bytes_per_s (device-to-host copy bandwidth per GPU) to "
                           "offload at; give a cluster file with host_bytes_per_s or set "
                           "offload to false", who);
    return host->error(err, LOOM_EINVAL,
                       "%s: params.offload is true, but cluster \"%s\" has no host_bytes_per_s "
                       "(device-to-host copy bandwidth per GPU, bytes/s); add it to the "
                       "cluster file or set offload to false",
                       who, c->name ? c->name : "?");
}

/* Makespan of `policies` in simulation, or their total latency without
 * the simulator service. */
static int mt_offload_score(const loom_host_api *host, loom_mt_driver *d,
                            const loom_stage_graph *g, const loom_schedule *sched,
                            const uint8_t *policies, const char *who, double *score,
                            loom_error *err)
{
    if (!d->sim) {
        double ms = 0;
        for (int32_t e = 0; e < g->n_layer_entries; e++)
            ms += loom_mt_entry_ms(g, e, policies[e]);
        *score = ms;
        return LOOM_OK;
    }
    if (!d->scratch && !(d->scratch = d->sim->scratch_new()))
        return host->error(err, LOOM_ENOMEM, "%s: out of memory", who);
    int rc = loom_mt_view_apply(host, &d->view, g, policies, err);
    if (rc != LOOM_OK)
        return rc;
    loom_metrics m = LOOM_METRICS_INIT;
    rc = loom_mt_simulate(d->sim, d->scratch, &d->view, sched, &m, err);
    *score = m.makespan_ms;
    return rc;
}

/* Keeps the faster of two answers (see header). */
int loom_mt_offload_pick(const loom_host_api *host, loom_mt_driver *d,
                         const loom_stage_graph *g, const loom_schedule *sched,
                         int rc_recompute, const uint8_t *recompute, int rc_offload,
                         uint8_t *policies, const char *who, loom_error *err)
{
    size_t n = (size_t)g->n_layer_entries;
    if (rc_offload != LOOM_OK) {
        if (rc_recompute != LOOM_OK)
            return rc_offload;
        memcpy(policies, recompute, n);
        return LOOM_OK;
    }
    if (rc_recompute != LOOM_OK)
        return LOOM_OK;
    double with = 0, without = 0;
    int rc = mt_offload_score(host, d, g, sched, policies, who, &with, err);
    if (rc == LOOM_OK)
        rc = mt_offload_score(host, d, g, sched, recompute, who, &without, err);
    if (rc != LOOM_OK)
        return rc;
    if (!(with < without))
        memcpy(policies, recompute, n);
    return LOOM_OK;
}
