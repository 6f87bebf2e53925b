/*
 * <loom/kits/entrain.h> - the Entrain work kit (CMake target
 * loom_kit_entrain, Loom::kit_entrain when installed): per-sample
 * workloads for Entrain's data plugins (stratified, pairwise-deferral):
 * the forward + backward time of one sample through every encoder module
 * (w_enc) and every other module (w_LLM), from the pipeline's cost model
 * through the "loom.cost" service, as Entrain estimates them from
 * metadata alone (§4.4.1).
 *
 * Input gradients are charged to a layer when some earlier layer of its
 * module or an upstream module is trainable, weight gradients by the cost
 * model from the module's frozen flag.
 *
 * Ownership: the model, problem, iteration and cost service are borrowed
 * read-only; the output arrays are the caller's. Units: milliseconds.
 */
#ifndef LOOM_KITS_ENTRAIN_H
#define LOOM_KITS_ENTRAIN_H

#include <loom/loom.h>


/* The host's "loom.cost" service (version 1) when it is large enough to
 * have layer() and module_shape() and both are set; NULL otherwise. The
 * table belongs to the host. */
const loom_cost_service *loom_ew_cost_service(const loom_host_api *host, loom_ctx *ctx);

/* Work of every sample s of `it` (a model problem pb): w_enc into enc[s],
 * w_LLM into llm[s] (it->n_samples entries each), each sample costed on
 * its own as microbatch 0 with LOOM_POLICY_NONE; consecutive identical
 * layers reuse the previous layer's cost. Errors of the cost service are
 * passed on. */
int loom_ew_sample_work(const loom_host_api *host, loom_ctx *ctx,
                        const loom_cost_service *cost, const loom_problem *pb,
                        const loom_iteration *it, double *enc, double *llm,
                        loom_error *err);

#endif
