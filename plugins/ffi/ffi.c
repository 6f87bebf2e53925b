/* ffi.c - the `ffi` cost model plugin: any C function in any shared
 * library becomes Loom's cost model. The planner manifest declares each
 * function ("double layer_fwd_ms(hidden, tokens, tp)"); create() opens the
 * library, checks the declarations (against a header when one is named)
 * and prepares every libffi call interface once; estimate() calls them
 * and derives the rest of the layer cost from the params. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ffi_model.h"

#define FF_ID "org.loom.ffi"

/* The declared functions, in the order of their params. */
enum ff_slot { FF_FORWARD, FF_BACKWARD, FF_ACTIVATION, FF_PARAMS, FF_FLOPS, FF_SLOTS };
static const char *const slot_params[FF_SLOTS] = {"forward", "backward", "activation", "params",
                                                  "flops"};

/* One instance: the open library, the prepared functions and the ratios. */
typedef struct ff_self {
    const loom_host_api *host;
    void *lib;                 /* dlopen handle, closed by destroy() */
    loom_ffi_fn fns[FF_SLOTS];
    int has[FF_SLOTS];
    double backward_factor;
    double weight_grad_share;
    double selective_activation;
    double full_activation;
    double selective_recompute;
    double state_factor;
} ff_self;

/* The params, declared once in ff_param_table (manifest.json says the same). */
typedef struct ff_params {
    const char *library;
    const char *header;
    const char *forward;
    const char *backward;
    const char *activation;
    const char *params;
    const char *flops;
    double backward_factor;
    double weight_grad_share;
    double selective_activation_ratio;
    double full_activation_ratio;
    double selective_recompute_ratio;
    double state_factor;
} ff_params;

static const loom_param_def ff_param_table[] = {
    LOOM_STRING_PARAM(ff_params, library, "",
                   "required: the shared library (a path, relative to the working directory, "
                   "or a bare name the dynamic loader searches)"),
    LOOM_STRING_PARAM(ff_params, header, "",
                   "optional C header declaring the functions; when set, every function's "
                   "return type, arity and parameter types are checked against it at load "
                   "time"),
    LOOM_STRING_PARAM(ff_params, forward, "",
                   "required: forward time in ms, e.g. \"double layer_fwd_ms(hidden, "
                   "ffn_hidden, tokens, tp, peak_flops)\"; return type double, float, int64 "
                   "or int32; each argument a field name, optionally :int64 or :double "
                   "(docs/ffi.md lists the fields)"),
    LOOM_STRING_PARAM(ff_params, backward, "",
                   "optional: full backward time in ms (input + weight gradients); default "
                   "backward_factor x forward"),
    LOOM_STRING_PARAM(ff_params, activation, "",
                   "optional: bytes of activations stored per GPU under policy none (scaled "
                   "by the ratios below unless the function takes the policy field); default "
                   "0"),
    LOOM_STRING_PARAM(ff_params, params, "",
                   "optional: parameter bytes of the layer per GPU; default 0"),
    LOOM_STRING_PARAM(ff_params, flops, "",
                   "optional: model FLOPs of the layer, forward + backward, all TP ranks (for "
                   "MFU); default 0 (unknown)"),
    LOOM_FLOAT_PARAM(ff_params, backward_factor, 2, 0, 100,
                   "backward time as a multiple of forward when there is no backward function"),
    LOOM_FLOAT_PARAM(ff_params, weight_grad_share, 0.5, 0, 1,
                   "share of the backward time that is weight gradient (the rest is input "
                   "gradient)"),
    LOOM_FLOAT_PARAM(ff_params, selective_activation_ratio, 0.5, 0, 1,
                   "fraction of the activation bytes stored under selective recomputation"),
    LOOM_FLOAT_PARAM(ff_params, full_activation_ratio, 0.1, 0, 1,
                   "fraction of the activation bytes stored under full recomputation"),
    LOOM_FLOAT_PARAM(ff_params, selective_recompute_ratio, 0.15, 0, 1,
                   "recompute time under selective recomputation as a fraction of forward "
                   "(full recomputes all of it)"),
    LOOM_FLOAT_PARAM(ff_params, state_factor, 7, 0, 100,
                   "gradient + optimizer state bytes per parameter byte of a trainable layer "
                   "(bf16 gradients 1x + fp32 Adam 6x)"),
    LOOM_PARAM_END};

/* Frees an instance (safe on a partly built one). */
static void ff_destroy(void *self)
{
    ff_self *s = self;
    if (!s)
        return;
    if (s->lib)
        dlclose(s->lib);
    s->host->free(s);
}

/* Parses, checks and prepares the function of one slot. */
static int ff_setup_slot(ff_self *s, const char *text, int slot, const char *lib_name,
                         const char *header, loom_error *err)
{
    const loom_host_api *h = s->host;
    if (!text[0]) { /* the table's default: no function */
        if (slot == FF_FORWARD)
            return h->error(err, LOOM_EINVAL,
                            "ffi: params.forward: expected a signature such as \"double "
                            "layer_fwd_ms(hidden, tokens, tp)\", found an empty string");
        return LOOM_OK;
    }
    char msg[LOOM_FFI_MSG];
    loom_ffi_fn *fn = &s->fns[slot];
    if (loom_ffi_parse(slot_params[slot], text, fn, msg, sizeof msg) ||
        (header && header[0] && loom_ffi_check_header(header, fn, msg, sizeof msg)) ||
        loom_ffi_prepare(fn, s->lib, lib_name, msg, sizeof msg))
        return h->error(err, LOOM_EINVAL, "ffi: %s", msg);
    s->has[slot] = 1;
    return LOOM_OK;
}

/* create(): opens the library and prepares every declared function. */
static int ff_create(const loom_host_api *host, loom_ctx *ctx, void *plugin_state, void **self,
                     loom_error *err)
{
    (void)plugin_state;
    ff_params prm;
    int prc = loom_params_read(host, ctx, "ffi", ff_param_table, &prm, err);
    if (prc != LOOM_OK)
        return prc;
    const char *lib = prm.library, *header = prm.header;
    const char *texts[FF_SLOTS] = {prm.forward, prm.backward, prm.activation, prm.params,
                                   prm.flops};
    if (!lib[0])
        return host->error(err, LOOM_EINVAL,
                           "ffi: params.library: expected the path of a shared library, found an "
                           "empty string");
    ff_self *s = host->alloc(sizeof *s);
    if (!s)
        return host->error(err, LOOM_ENOMEM, "ffi: out of memory");
    memset(s, 0, sizeof *s);
    s->host = host;
    s->backward_factor = prm.backward_factor;
    s->weight_grad_share = prm.weight_grad_share;
    s->selective_activation = prm.selective_activation_ratio;
    s->full_activation = prm.full_activation_ratio;
    s->selective_recompute = prm.selective_recompute_ratio;
    s->state_factor = prm.state_factor;
    s->lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!s->lib) {
        const char *why = dlerror();
        int rc = host->error(err, LOOM_EINVAL, "ffi: params.library: cannot open \"%s\": %s", lib,
                             why ? why : "unknown error");
        ff_destroy(s);
        return rc;
    }
    for (int slot = 0; slot < FF_SLOTS; slot++) {
        int rc = ff_setup_slot(s, texts[slot], slot, lib, header, err);
        if (rc != LOOM_OK) {
            ff_destroy(s);
            return rc;
        }
    }
    *self = s;
    return LOOM_OK;
}

/* Calls one slot and checks the result is finite and >= 0. */
static int ff_value(const ff_self *s, int slot, const loom_problem *p, int32_t module,
                    int32_t layer, const loom_shape *shape, int32_t policy, double *out,
                    loom_error *err)
{
    const loom_ffi_fn *fn = &s->fns[slot];
    loom_ffi_call(fn, p, module, layer, shape, policy, out);
    if (!(*out >= 0) || !isfinite(*out))
        return s->host->error(err, LOOM_EPLUGIN,
                              "ffi: %s() (params.%s) returned %g for module %d layer %d with %lld "
                              "tokens: expected a finite number >= 0",
                              fn->symbol, fn->param, *out, (int)module, (int)layer,
                              (long long)shape->tokens);
    return LOOM_OK;
}

/* Checks that the query names a layer of a model problem. */
static int ff_check(const ff_self *s, const loom_problem *p, int32_t module, int32_t layer,
                    const loom_shape *shape, int32_t policy, loom_error *err)
{
    if (!p || p->kind != LOOM_PROBLEM_MODEL || !p->model)
        return s->host->error(err, LOOM_EINVAL, "ffi: expected a model problem, found %s",
                              p ? "a stage-times problem" : "none");
    if (module < 0 || module >= p->model->n_modules ||
        layer < 0 || layer >= p->model->modules[module].n_layers)
        return s->host->error(err, LOOM_EINVAL, "ffi: module %d layer %d is not in the model",
                              (int)module, (int)layer);
    if (!shape || shape->tokens < 0 || policy < 0 || policy >= LOOM_POLICY_OFFLOAD)
        return s->host->error(err, LOOM_EINVAL,
                              "ffi: expected a shape with tokens >= 0 and a policy in [0, %d)",
                              (int)LOOM_POLICY_OFFLOAD);
    return LOOM_OK;
}

/* Rounds a non-negative byte count. */
static int64_t ff_bytes(double x)
{
    return x > 0 ? (int64_t)llround(x) : 0;
}

/* estimate(): calls the declared functions for one layer and shape. */
static int ff_estimate(void *self, const loom_problem *problem, int32_t module, int32_t layer,
                       const loom_shape *shape, int32_t policy, loom_layer_cost *out,
                       loom_error *err)
{
    const ff_self *s = self;
    int rc = ff_check(s, problem, module, layer, shape, policy, err);
    if (rc != LOOM_OK)
        return rc;
    loom_layer_cost_clear(out);
    const loom_module *m = &problem->model->modules[module];
    double v = 0;
    if (s->has[FF_PARAMS]) {
        if ((rc = ff_value(s, FF_PARAMS, problem, module, layer, shape, policy, &v, err)))
            return rc;
        out->param_bytes = ff_bytes(v);
        if (!m->frozen)
            out->state_bytes = ff_bytes(s->state_factor * v);
    }
    if (shape->tokens == 0)
        return LOOM_OK; /* no stage runs for an empty shape */
    double fwd = 0, bwd = 0, act = 0;
    if ((rc = ff_value(s, FF_FORWARD, problem, module, layer, shape, policy, &fwd, err)))
        return rc;
    if (s->has[FF_BACKWARD]) {
        if ((rc = ff_value(s, FF_BACKWARD, problem, module, layer, shape, policy, &bwd, err)))
            return rc;
    } else {
        bwd = s->backward_factor * fwd;
    }
    if (s->has[FF_FLOPS]) {
        if ((rc = ff_value(s, FF_FLOPS, problem, module, layer, shape, policy, &out->flops, err)))
            return rc;
    }
    int pays_input = shape->trainable_upstream != 0;
    int pays_weight = !m->frozen;
    out->forward_ms = fwd;
    out->input_grad_ms = pays_input ? (1 - s->weight_grad_share) * bwd : 0;
    out->weight_grad_ms = pays_weight ? s->weight_grad_share * bwd : 0;
    if (!pays_input && !pays_weight)
        return LOOM_OK; /* no backward: nothing stored or recomputed */
    if (s->has[FF_ACTIVATION] &&
        (rc = ff_value(s, FF_ACTIVATION, problem, module, layer, shape, policy, &act, err)))
        return rc;
    double stored = act;
    if (policy == LOOM_POLICY_SELECTIVE) {
        out->recompute_ms = s->selective_recompute * fwd;
        if (!s->fns[FF_ACTIVATION].uses_policy)
            stored = act * s->selective_activation;
    } else if (policy == LOOM_POLICY_FULL) {
        out->recompute_ms = fwd;
        if (!s->fns[FF_ACTIVATION].uses_policy)
            stored = act * s->full_activation;
    }
    out->activation_bytes = ff_bytes(stored);
    out->transient_bytes = ff_bytes(act - stored);
    return LOOM_OK;
}

static const loom_cost_model_vtable ff_vtable = {
    {sizeof(loom_cost_model_vtable), LOOM_COST_MODEL_VERSION},
    ff_create,
    ff_destroy,
    ff_estimate,
    NULL,
    NULL,
    NULL,
    LOOM_COST_READS_LAYER_INDEX, /* a foreign function may take the layer index */
};

/* The vtable for the cost_model role, NULL for any other. */
static const loom_role_header *ff_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_COST_MODEL) == 0)
        return &ff_vtable.header;
    return NULL;
}

static const loom_plugin_info ff_info = {
    LOOM_PLUGIN_INFO_HEADER, FF_ID, "1.0.0", NULL, NULL, ff_role, ff_param_table
};

LOOM_PLUGIN_DEFINE(ffi, ff_info);
