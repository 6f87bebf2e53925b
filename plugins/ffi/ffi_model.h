/*
 * ffi_model.h - internals of the `ffi` cost model: declared C functions
 * (signature strings from the planner manifest), their check against an
 * optional C header, and their calls through libffi.
 *
 *   ffi_sig.c     loom_ffi_parse: "double sym(hidden, tokens:double)"
 *   ffi_header.c  loom_ffi_check_header: the prototype in a .h agrees
 *   ffi_call.c    loom_ffi_prepare (dlsym + ffi_prep_cif), loom_ffi_call
 *
 * Errors are written into a caller-provided message buffer (the plugin
 * turns them into loom_error with host->error). Nothing here allocates
 * except loom_ffi_check_header's temporary file buffer.
 */
#ifndef LOOM_FFI_MODEL_H
#define LOOM_FFI_MODEL_H

#include <ffi.h>
#include <loom/loom.h>

#define LOOM_FFI_MAX_ARGS 16
#define LOOM_FFI_MSG 400

/* The C types an argument or a return value may have. Arguments are
 * int64 or double only. */
enum loom_ffi_ctype {
    LOOM_FFI_INT64 = 0,
    LOOM_FFI_DOUBLE = 1,
    LOOM_FFI_INT32 = 2, /* return values only */
    LOOM_FFI_FLOAT = 3  /* return values only */
};

/* Whitelisted argument fields (docs/ffi.md). */
enum loom_ffi_field {
    /* layer */
    LOOM_FFI_HIDDEN, LOOM_FFI_FFN_HIDDEN, LOOM_FFI_HEADS, LOOM_FFI_KV_HEADS,
    LOOM_FFI_GATED_FFN, LOOM_FFI_CAUSAL, LOOM_FFI_CROSS_ATTENTION,
    LOOM_FFI_LAYER, LOOM_FFI_N_LAYERS,
    /* module */
    LOOM_FFI_MODULE, LOOM_FFI_MODULE_KIND, LOOM_FFI_MODALITY, LOOM_FFI_FROZEN,
    LOOM_FFI_TOKENS_PER_ITEM, LOOM_FFI_VOCAB,
    /* shape and policy */
    LOOM_FFI_TOKENS, LOOM_FFI_SEQUENCES, LOOM_FFI_BATCH, LOOM_FFI_SEQ_SQ_SUM,
    LOOM_FFI_TP, LOOM_FFI_TRAINABLE_UPSTREAM, LOOM_FFI_POLICY,
    /* cluster */
    LOOM_FFI_PEAK_FLOPS, LOOM_FFI_HBM_BYTES_PER_S, LOOM_FFI_HBM_BYTES,
    LOOM_FFI_GPUS_PER_NODE, LOOM_FFI_NVLINK_BYTES_PER_S, LOOM_FFI_NET_BYTES_PER_S,
    LOOM_FFI_EFF_GEMM, LOOM_FFI_EFF_ATTENTION, LOOM_FFI_EFF_MEMORY,
    LOOM_FFI_EFF_COLLECTIVE, LOOM_FFI_P2P_LATENCY_MS,
    /* parallel config */
    LOOM_FFI_PP, LOOM_FFI_DP, LOOM_FFI_VPP, LOOM_FFI_MICROBATCHES,
    LOOM_FFI_FIELD_COUNT
};

/* One argument: which field, converted to which C type. */
typedef struct loom_ffi_arg {
    int field; /* enum loom_ffi_field */
    int type;  /* LOOM_FFI_INT64 or LOOM_FFI_DOUBLE */
} loom_ffi_arg;

/* One declared function, prepared for calls. */
typedef struct loom_ffi_fn {
    const char *param;          /* the manifest param it came from */
    char symbol[128];
    int ret;                    /* enum loom_ffi_ctype */
    int n_args;
    loom_ffi_arg args[LOOM_FFI_MAX_ARGS];
    int uses_policy;            /* the policy field is an argument */
    void (*fn)(void);           /* from dlsym */
    ffi_cif cif;                /* prepared once */
    ffi_type *arg_types[LOOM_FFI_MAX_ARGS];
} loom_ffi_fn;

/* Name of a field, and the field of a name (-1 unknown). */
const char *loom_ffi_field_name(int field);
int loom_ffi_field_find(const char *name, size_t len);
/* 1 when a field is naturally a double (else an integer). */
int loom_ffi_field_is_double(int field);
/* Name of a C type tag: "int64", "double", "int32", "float". */
const char *loom_ffi_ctype_name(int type);

/* Parses `text` ("double sym(a, b:double)") of manifest param `param`
 * into *fn. Returns 0, or -1 with the reason in msg. */
int loom_ffi_parse(const char *param, const char *text, loom_ffi_fn *fn,
                   char *msg, size_t msg_size);

/* Finds fn->symbol's prototype in the C header at `path` and checks its
 * return type, arity and parameter types against the declaration.
 * Returns 0, or -1 with the reason in msg. */
int loom_ffi_check_header(const char *path, const loom_ffi_fn *fn,
                          char *msg, size_t msg_size);

/* Looks fn->symbol up in `lib` (a dlopen handle) and prepares its call
 * interface. Returns 0, or -1 with the reason in msg. */
int loom_ffi_prepare(loom_ffi_fn *fn, void *lib, const char *lib_name,
                     char *msg, size_t msg_size);

/* Calls fn with the fields of (problem, module, layer, shape, policy) and
 * stores the result as a double in *out. */
void loom_ffi_call(const loom_ffi_fn *fn, const loom_problem *problem,
                   int32_t module, int32_t layer, const loom_shape *shape,
                   int32_t policy, double *out);

#endif
