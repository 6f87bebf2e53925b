/*
 * mt_view.c - a stage graph view with chosen memory policies applied to
 * private copies of the durations and memory deltas (the host's graph is
 * read-only to a memory tuner), and its replay through the simulator
 * service.
 */
#include <string.h>
#include <loom/kits/memtune.h>

/* Activation bytes of entry e under policy pol. */
int64_t loom_mt_entry_bytes(const loom_stage_graph *g, int32_t e, int pol)
{
    return g->layer_options[(size_t)e * LOOM_POLICY_COUNT + (size_t)pol]
        .activation_bytes;
}

/* Forward + backward (including W) milliseconds of entry e under pol. */
double loom_mt_entry_ms(const loom_stage_graph *g, int32_t e, int pol)
{
    const loom_policy_option *o =
        &g->layer_options[(size_t)e * LOOM_POLICY_COUNT + (size_t)pol];
    return o->forward_ms + o->backward_ms;
}

/* Releases the view's own arrays. */
void loom_mt_view_free(const loom_host_api *host, loom_mt_view *v)
{
    host->free(v->duration_ms);
    host->free(v->mem_delta_bytes);
    host->free(v->peak_bytes);
    memset(v, 0, sizeof *v);
}

/* Grows the view's arrays for g. */
static int mt_view_reserve(const loom_host_api *host, loom_mt_view *v,
                           const loom_stage_graph *g)
{
    if (g->n_stages > v->cap_stages || !v->duration_ms) {
        host->free(v->duration_ms);
        host->free(v->mem_delta_bytes);
        size_t n = (size_t)g->n_stages + 1;
        v->duration_ms = host->alloc(n * sizeof *v->duration_ms);
        v->mem_delta_bytes = host->alloc(n * sizeof *v->mem_delta_bytes);
        v->cap_stages = g->n_stages;
    }
    if (g->n_ranks > v->cap_ranks || !v->peak_bytes) {
        host->free(v->peak_bytes);
        v->peak_bytes =
            host->alloc(((size_t)g->n_ranks + 1) * sizeof *v->peak_bytes);
        v->cap_ranks = g->n_ranks;
    }
    if (!v->duration_ms || !v->mem_delta_bytes || !v->peak_bytes) {
        v->cap_stages = v->cap_ranks = 0;
        return LOOM_ENOMEM;
    }
    return LOOM_OK;
}

/* Applies `policies` to the view (see header). */
int loom_mt_view_apply(const loom_host_api *host, loom_mt_view *v,
                       const loom_stage_graph *g, const uint8_t *policies,
                       loom_error *err)
{
    if (mt_view_reserve(host, v, g) != LOOM_OK)
        return host->error(err, LOOM_ENOMEM, "memory tuner: out of memory");
    v->graph = *g;
    memcpy(v->duration_ms, g->duration_ms,
           (size_t)g->n_stages * sizeof *v->duration_ms);
    memcpy(v->mem_delta_bytes, g->mem_delta_bytes,
           (size_t)g->n_stages * sizeof *v->mem_delta_bytes);
    /* the memory per phase: what I frees and W keeps (NULL: W keeps all) */
    const int64_t *weight_held =
        LOOM_STRUCT_HAS(g, loom_stage_graph, layer_weight_held_bytes)
            ? g->layer_weight_held_bytes : NULL;
    for (int32_t p = 0; p < g->n_pairs; p++) {
        loom_policy_option sum;
        memset(&sum, 0, sizeof sum);
        int64_t held = 0;
        for (int32_t e = g->pair_layer_off[p]; e < g->pair_layer_off[p + 1];
             e++) {
            size_t k = (size_t)e * LOOM_POLICY_COUNT + policies[e];
            const loom_policy_option *o = &g->layer_options[k];
            sum.forward_ms += o->forward_ms;
            sum.backward_ms += o->backward_ms;
            sum.weight_grad_ms += o->weight_grad_ms;
            sum.activation_bytes += o->activation_bytes;
            held += weight_held ? weight_held[k] : o->activation_bytes;
        }
        int32_t f = g->pair_forward[p], b = g->pair_backward[p],
                w = g->pair_weight[p];
        v->duration_ms[f] = sum.forward_ms;
        v->mem_delta_bytes[f] = sum.activation_bytes;
        if (w >= 0) {
            v->duration_ms[b] = sum.backward_ms - sum.weight_grad_ms;
            v->duration_ms[w] = sum.weight_grad_ms;
            v->mem_delta_bytes[b] = held - sum.activation_bytes;
            v->mem_delta_bytes[w] = -held;
        } else if (b >= 0) {
            v->duration_ms[b] = sum.backward_ms;
            v->mem_delta_bytes[b] = -sum.activation_bytes;
        }
    }
    v->graph.duration_ms = v->duration_ms;
    v->graph.mem_delta_bytes = v->mem_delta_bytes;
    v->graph.layer_policy = NULL; /* the view's policies live with its owner */
    return LOOM_OK;
}

/* Replays the view through the simulator service (see header). */
int loom_mt_simulate(const loom_simulator_service *sim,
                     loom_sim_scratch *scratch, loom_mt_view *v,
                     const loom_schedule *sched, loom_metrics *m,
                     loom_error *err)
{
    loom_metrics_init(m);
    m->peak_bytes = v->peak_bytes;
    return sim->simulate(scratch, &v->graph, sched, m, err);
}
