/*
 * mt_driver.c - the tuning loop of the memory tuners: the exact memory
 * timeline of the order, a greedy descent on every rank over the cap,
 * and a confirming simulation for choices made some other way (the ILP).
 */
#include <string.h>
#include <loom/kits/memtune.h>

/* Looks up the simulator (see header); its scratch is made on first use. */
void loom_mt_driver_init(const loom_host_api *host, loom_ctx *ctx, loom_mt_driver *d)
{
    memset(d, 0, sizeof *d);
    d->sim = loom_host_simulator(host, ctx);
    if (d->sim && (d->sim->struct_size < sizeof(loom_simulator_service) ||
                   !d->sim->scratch_new || !d->sim->scratch_free ||
                   !d->sim->simulate))
        d->sim = NULL;
}

/* Releases everything the driver holds. */
void loom_mt_driver_free(const loom_host_api *host, loom_mt_driver *d)
{
    loom_mt_timeline_free(host, &d->tl);
    loom_mt_descent_free(host, &d->desc);
    loom_mt_view_free(host, &d->view);
    if (d->scratch)
        d->sim->scratch_free(d->scratch);
    memset(d, 0, sizeof *d);
}

/* Checks the inputs of a tune call (see header). */
int loom_mt_check_inputs(const loom_host_api *host, const loom_stage_graph *g,
                         const loom_schedule *sched, const uint8_t *policies,
                         const char *who, loom_error *err)
{
    if (!g || !policies || !sched || !g->pair_layer_off || !g->layer_options ||
        g->n_layer_entries < 0 || g->n_pairs < 0 ||
        g->pair_layer_off[g->n_pairs] != g->n_layer_entries)
        return host->error(err, LOOM_EINVAL,
                           "%s: the stage graph has no per-layer memory "
                           "options, or the schedule or policy array is "
                           "missing", who);
    for (int32_t p = 0; p < g->n_pairs; p++)
        if (g->pair_layer_off[p] > g->pair_layer_off[p + 1])
            return host->error(err, LOOM_EINVAL,
                               "%s: pair %d has layer entries %d..%d", who, p,
                               g->pair_layer_off[p], g->pair_layer_off[p + 1]);
    return LOOM_OK;
}

/* Simulates `policies`; *over gets the ranks over the cap (per-rank peaks
 * with static bytes in d->view.peak_bytes). */
static int mt_confirm(const loom_host_api *host, loom_mt_driver *d,
                      const loom_stage_graph *g, const loom_schedule *sched,
                      const uint8_t *policies, int32_t *over, loom_error *err)
{
    int rc = loom_mt_view_apply(host, &d->view, g, policies, err);
    if (rc != LOOM_OK)
        return rc;
    loom_metrics m = LOOM_METRICS_INIT;
    rc = loom_mt_simulate(d->sim, d->scratch, &d->view, sched, &m, err);
    *over = m.cap_violations;
    return rc;
}

/* The tuning loop (see header). */
int loom_mt_driver_run(const loom_host_api *host, loom_mt_driver *d,
                       const loom_stage_graph *g, const loom_schedule *sched,
                       loom_mt_units *u, int64_t *pair_bytes,
                       loom_mt_materialise_fn materialise, void *user,
                       uint8_t *policies, const char *who, loom_error *err)
{
    d->descended = 0;
    d->moves = 0;
    materialise(user, g, u, policies);
    if (!(g->memory_cap_bytes > 0.0))
        return LOOM_OK;
    int rc = loom_mt_timeline_build(host, &d->tl, g, sched, err);
    if (rc != LOOM_OK)
        return rc;
    for (int32_t r = 0; r < g->n_ranks; r++) {
        int64_t stat = g->static_bytes ? g->static_bytes[r] : 0;
        int64_t peak = loom_mt_rank_peak(&d->tl, r, pair_bytes);
        if ((double)stat + (double)peak <= g->memory_cap_bytes)
            continue;
        d->descended = 1;
        rc = loom_mt_descend(host, &d->desc, &d->tl, g, u, pair_bytes, r, who,
                             &d->moves, err);
        if (rc != LOOM_OK)
            return rc;
    }
    if (d->descended)
        materialise(user, g, u, policies);
    return LOOM_OK;
}

/* Confirms a choice in simulation (see header). */
int loom_mt_driver_confirm(const loom_host_api *host, loom_mt_driver *d,
                           const loom_stage_graph *g,
                           const loom_schedule *sched,
                           const uint8_t *policies, const char *who,
                           loom_error *err)
{
    int32_t over = 0;
    int rc;
    if (!d->sim || !(g->memory_cap_bytes > 0.0))
        return LOOM_OK;
    if (!d->scratch && !(d->scratch = d->sim->scratch_new()))
        return host->error(err, LOOM_ENOMEM, "%s: out of memory", who);
    if ((rc = mt_confirm(host, d, g, sched, policies, &over, err)))
        return rc;
    if (over > 0)
        return host->error(err, LOOM_EPLUGIN,
                           "%s: %d ranks still exceed the memory cap in "
                           "simulation after tuning", who, over);
    return LOOM_OK;
}
