/*
 * services.h - the services a plugin reaches through the host table: the
 * simulator (graph layer), the pipeline's cost model, and the evaluator
 * the engine installs in each pipeline (not installed).
 */
#ifndef LOOM_SERVICES_H
#define LOOM_SERVICES_H

#include "ctx.h"

/* The service tables (static). */
extern const loom_simulator_service loom_simulator_service_v1;
extern const loom_cost_service loom_cost_service_v1;

/* What the host accepts from a cost model: times in 0..LOOM_MAX_PLUGIN_MS
 * (finite), byte counts in 0..LOOM_MAX_PLUGIN_BYTES per layer and GPU. With
 * these bounds every sum the core forms over a stage graph fits int64. */
#define LOOM_MAX_PLUGIN_MS 1e12
#define LOOM_MAX_PLUGIN_BYTES ((int64_t)1 << 40)

/* LOOM_OK when every member of a cost model's answer is in bounds, else
 * LOOM_EPLUGIN naming the plugin, the layer, the member, its value and
 * the bounds. */
int loom_check_layer_cost(const loom_layer_cost *c, const char *plugin_id, int32_t module,
                          int32_t layer, loom_error *err);

/* Every engine evaluator starts with this header, so the host can forward
 * a call on one without knowing the engine (loom_host_api.service). */
typedef struct loom_evaluator_head {
    const loom_evaluator_service *service;
} loom_evaluator_head;

/* host->service: look-up by name, kept for plugins built before the
 * evaluator/cost/simulator members; the evaluator it returns forwards to
 * the pipeline's own. */
const void *loom_service_lookup(const char *name, uint32_t min_version);

/* The pipeline's cost model, called through the cost step's ctx (or any
 * ctx of the same pipeline). */
int loom_cost_estimate(loom_ctx *ctx, int32_t module, int32_t layer,
                       const loom_shape *shape, int32_t policy,
                       loom_layer_cost *out, loom_error *err);
/* 1 when the pipeline's cost model declares LOOM_COST_READS_LAYER_FIELDS
 * (<loom/cost_model.h>), else 0. */
int loom_cost_reads_layer_fields(loom_ctx *ctx);
int loom_cost_module_extra(loom_ctx *ctx, int32_t module, int32_t tp,
                           int64_t *param_bytes, int64_t *state_bytes,
                           loom_error *err);

/* Transfer time of `bytes` over `link`: the cost model's p2p_ms when it
 * has one (an error names the plugin; a negative or non-finite time is
 * LOOM_EPLUGIN), else loom_p2p_link_ms() on the problem's cluster. */
int loom_cost_p2p_ms(loom_ctx *ctx, const loom_p2p_link *link, double bytes, double *ms,
                     loom_error *err);

/* The tail of one rank's iteration: the cost model's rank_tail_ms when it
 * has one (an error names the plugin; a negative or non-finite time is
 * LOOM_EPLUGIN), else loom_rank_tail_compute() with Megatron-LM's
 * defaults on the problem's cluster. */
int loom_cost_rank_tail(loom_ctx *ctx, const loom_rank_state *state, loom_rank_tail *out,
                        loom_error *err);

#endif
