/* ffi_call.c - resolves a declared function with dlsym, prepares its
 * libffi call interface once, and calls it with the whitelisted fields of
 * a layer, a shape, the cluster and the parallel config. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ffi_model.h"

/* libffi's type for a C type tag. */
static ffi_type *type_of(int ctype)
{
    switch (ctype) {
    case LOOM_FFI_INT64: return &ffi_type_sint64;
    case LOOM_FFI_INT32: return &ffi_type_sint32;
    case LOOM_FFI_FLOAT: return &ffi_type_float;
    default: return &ffi_type_double;
    }
}

int loom_ffi_prepare(loom_ffi_fn *fn, void *lib, const char *lib_name, char *msg,
                     size_t msg_size)
{
    dlerror();
    void *sym = dlsym(lib, fn->symbol);
    const char *why = dlerror();
    if (!sym || why) {
        snprintf(msg, msg_size, "params.%s: symbol %s not found in %s%s%s", fn->param,
                 fn->symbol, lib_name, why ? ": " : "", why ? why : "");
        return -1;
    }
    /* POSIX guarantees data and function pointers convert through dlsym */
    memcpy(&fn->fn, &sym, sizeof fn->fn);
    for (int i = 0; i < fn->n_args; i++)
        fn->arg_types[i] = type_of(fn->args[i].type);
    ffi_status st = ffi_prep_cif(&fn->cif, FFI_DEFAULT_ABI, (unsigned)fn->n_args,
                                 type_of(fn->ret), fn->n_args ? fn->arg_types : NULL);
    if (st != FFI_OK) {
        snprintf(msg, msg_size, "params.%s: libffi cannot prepare a call to %s (ffi_prep_cif "
                                "status %d)",
                 fn->param, fn->symbol, (int)st);
        return -1;
    }
    return 0;
}

/* Value of one field for this call, as a double (integers are exact up to
 * 2^53, far beyond any layer or cluster figure). */
static double field_value(int field, const loom_problem *p, int32_t module, int32_t layer,
                          const loom_shape *sh, int32_t policy)
{
    const loom_module *m = (p->model && module >= 0 && module < p->model->n_modules)
                               ? &p->model->modules[module]
                               : NULL;
    const loom_layer *l = (m && layer >= 0 && layer < m->n_layers) ? &m->layers[layer] : NULL;
    const loom_cluster *c = p->cluster;
    switch (field) {
    case LOOM_FFI_HIDDEN: return l ? (double)l->hidden : 0;
    case LOOM_FFI_FFN_HIDDEN: return l ? (double)l->ffn_hidden : 0;
    case LOOM_FFI_HEADS: return l ? l->heads : 0;
    case LOOM_FFI_KV_HEADS: return l ? l->kv_heads : 0;
    case LOOM_FFI_GATED_FFN: return l ? l->gated_ffn : 0;
    case LOOM_FFI_CAUSAL: return l ? l->causal : 0;
    case LOOM_FFI_CROSS_ATTENTION: return l ? l->cross_attention : 0;
    case LOOM_FFI_LAYER: return layer;
    case LOOM_FFI_N_LAYERS: return m ? m->n_layers : 0;
    case LOOM_FFI_MODULE: return module;
    case LOOM_FFI_MODULE_KIND: return m ? m->kind : 0;
    case LOOM_FFI_MODALITY: return m ? m->modality : 0;
    case LOOM_FFI_FROZEN: return m ? m->frozen : 0;
    case LOOM_FFI_TOKENS_PER_ITEM: return m ? (double)m->tokens_per_item : 0;
    case LOOM_FFI_VOCAB: return m ? (double)m->vocab : 0;
    case LOOM_FFI_TOKENS: return (double)sh->tokens;
    case LOOM_FFI_SEQUENCES:
    case LOOM_FFI_BATCH: return (double)sh->sequences;
    case LOOM_FFI_SEQ_SQ_SUM: return sh->seq_sq_sum;
    case LOOM_FFI_TP: return sh->tp;
    case LOOM_FFI_TRAINABLE_UPSTREAM: return sh->trainable_upstream;
    case LOOM_FFI_POLICY: return policy;
    case LOOM_FFI_PEAK_FLOPS: return c ? c->peak_flops : 0;
    case LOOM_FFI_HBM_BYTES_PER_S: return c ? c->hbm_bytes_per_s : 0;
    case LOOM_FFI_HBM_BYTES: return c ? (double)c->hbm_bytes : 0;
    case LOOM_FFI_GPUS_PER_NODE: return c ? c->gpus_per_node : 0;
    case LOOM_FFI_NVLINK_BYTES_PER_S: return c ? c->nvlink_bytes_per_s : 0;
    case LOOM_FFI_NET_BYTES_PER_S: return c ? c->net_bytes_per_s : 0;
    case LOOM_FFI_EFF_GEMM: return c ? c->eff_gemm : 0;
    case LOOM_FFI_EFF_ATTENTION: return c ? c->eff_attention : 0;
    case LOOM_FFI_EFF_MEMORY: return c ? c->eff_memory : 0;
    case LOOM_FFI_EFF_COLLECTIVE: return c ? c->eff_collective : 0;
    case LOOM_FFI_P2P_LATENCY_MS: return c ? c->p2p_latency_ms : 0;
    case LOOM_FFI_PP: return p->parallel.pp;
    case LOOM_FFI_DP: return p->parallel.dp;
    case LOOM_FFI_VPP: return p->parallel.vpp;
    case LOOM_FFI_MICROBATCHES: return p->parallel.microbatches;
    default: return 0;
    }
}

/* An int64 field keeps its exact integer value; a double field converted
 * to int64 is rounded to the nearest integer. */
static int64_t as_int64(int field, const loom_problem *p, int32_t module, int32_t layer,
                        const loom_shape *sh, int32_t policy)
{
    if (field == LOOM_FFI_TOKENS)
        return sh->tokens;
    if (field == LOOM_FFI_SEQUENCES || field == LOOM_FFI_BATCH)
        return sh->sequences;
    double v = field_value(field, p, module, layer, sh, policy);
    return isfinite(v) ? (int64_t)llround(v) : 0;
}

void loom_ffi_call(const loom_ffi_fn *fn, const loom_problem *problem, int32_t module,
                   int32_t layer, const loom_shape *shape, int32_t policy, double *out)
{
    union {
        int64_t i;
        double d;
    } values[LOOM_FFI_MAX_ARGS];
    void *ptrs[LOOM_FFI_MAX_ARGS];
    for (int k = 0; k < fn->n_args; k++) {
        const loom_ffi_arg *a = &fn->args[k];
        if (a->type == LOOM_FFI_INT64)
            values[k].i = as_int64(a->field, problem, module, layer, shape, policy);
        else
            values[k].d = field_value(a->field, problem, module, layer, shape, policy);
        ptrs[k] = &values[k];
    }
    /* integer results narrower than a register come back widened */
    union {
        ffi_arg small;
        int64_t i;
        double d;
        float f;
    } r;
    memset(&r, 0, sizeof r);
    ffi_call((ffi_cif *)&fn->cif, fn->fn, &r, fn->n_args ? ptrs : NULL);
    switch (fn->ret) {
    case LOOM_FFI_INT64: *out = (double)r.i; break;
    case LOOM_FFI_INT32: *out = (double)(int32_t)r.small; break;
    case LOOM_FFI_FLOAT: *out = (double)r.f; break;
    default: *out = r.d; break;
    }
}
