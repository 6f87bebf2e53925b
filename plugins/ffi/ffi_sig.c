/* ffi_sig.c - the whitelist of argument fields and the parser of signature
 * strings such as "double layer_fwd_ms(hidden, tokens:double, tp)". */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "ffi_model.h"

/* Field names in enum order; 1 marks a naturally double field. */
static const struct {
    const char *name;
    int is_double;
} fields[LOOM_FFI_FIELD_COUNT] = {
    {"hidden", 0},           {"ffn_hidden", 0},      {"heads", 0},
    {"kv_heads", 0},         {"gated_ffn", 0},       {"causal", 0},
    {"cross_attention", 0},  {"layer", 0},           {"n_layers", 0},
    {"module", 0},           {"module_kind", 0},     {"modality", 0},
    {"frozen", 0},           {"tokens_per_item", 0}, {"vocab", 0},
    {"tokens", 0},           {"sequences", 0},       {"batch", 0},
    {"seq_sq_sum", 1},       {"tp", 0},              {"trainable_upstream", 0},
    {"policy", 0},           {"peak_flops", 1},      {"hbm_bytes_per_s", 1},
    {"hbm_bytes", 0},        {"gpus_per_node", 0},   {"nvlink_bytes_per_s", 1},
    {"net_bytes_per_s", 1},  {"eff_gemm", 1},        {"eff_attention", 1},
    {"eff_memory", 1},       {"eff_collective", 1},  {"p2p_latency_ms", 1},
    {"pp", 0},               {"dp", 0},              {"vpp", 0},
    {"microbatches", 0},
};

const char *loom_ffi_field_name(int field)
{
    return (field >= 0 && field < LOOM_FFI_FIELD_COUNT) ? fields[field].name : "?";
}

int loom_ffi_field_is_double(int field)
{
    return field >= 0 && field < LOOM_FFI_FIELD_COUNT && fields[field].is_double;
}

int loom_ffi_field_find(const char *name, size_t len)
{
    for (int i = 0; i < LOOM_FFI_FIELD_COUNT; i++)
        if (strlen(fields[i].name) == len && !strncmp(fields[i].name, name, len))
            return i;
    return -1;
}

const char *loom_ffi_ctype_name(int type)
{
    static const char *const names[] = {"int64", "double", "int32", "float"};
    return (type >= 0 && type <= LOOM_FFI_FLOAT) ? names[type] : "?";
}

/* The C type tag spelled by [s, s+len), or -1. */
static int ctype_find(const char *s, size_t len)
{
    for (int t = 0; t <= LOOM_FFI_FLOAT; t++) {
        const char *n = loom_ffi_ctype_name(t);
        if (strlen(n) == len && !strncmp(n, s, len))
            return t;
    }
    return -1;
}

/* Skips blanks. */
static const char *skip(const char *p)
{
    while (*p && isspace((unsigned char)*p))
        p++;
    return p;
}

/* Length of the identifier at p (0 when none). */
static size_t ident(const char *p)
{
    size_t n = 0;
    if (!(isalpha((unsigned char)p[0]) || p[0] == '_'))
        return 0;
    while (isalnum((unsigned char)p[n]) || p[n] == '_')
        n++;
    return n;
}

/* Edit distance between [a, a+la) and b, capped at 9. */
static int distance(const char *a, size_t la, const char *b)
{
    size_t lb = strlen(b);
    int row[64];
    if (la > 60 || lb > 60)
        return 9;
    for (size_t j = 0; j <= lb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb] > 9 ? 9 : row[lb];
}

/* The field closest to an unknown name (within 2 edits), or -1. */
static int closest_field(const char *name, size_t len)
{
    int best = -1, best_d = 3;
    for (int i = 0; i < LOOM_FFI_FIELD_COUNT; i++) {
        int d = distance(name, len, fields[i].name);
        if (d < best_d) {
            best_d = d;
            best = i;
        }
    }
    return best;
}

/* Parses one argument "field[:type]" at *pp into a. */
static int parse_arg(const char *param, const char **pp, int index, loom_ffi_arg *a, char *msg,
                     size_t size)
{
    const char *p = skip(*pp);
    size_t n = ident(p);
    if (!n) {
        snprintf(msg, size, "params.%s: argument %d: expected a field name, found \"%.20s\"",
                 param, index + 1, p);
        return -1;
    }
    a->field = loom_ffi_field_find(p, n);
    if (a->field < 0) {
        int near = closest_field(p, n);
        char hint[64] = "";
        if (near >= 0)
            snprintf(hint, sizeof hint, "did you mean \"%s\"? ", fields[near].name);
        snprintf(msg, size,
                 "params.%s: argument %d: unknown field \"%.*s\" (%sexpected a layer, module, "
                 "shape, cluster or parallel field listed in docs/ffi.md)",
                 param, index + 1, (int)(n > 40 ? 40 : n), p, hint);
        return -1;
    }
    a->type = loom_ffi_field_is_double(a->field) ? LOOM_FFI_DOUBLE : LOOM_FFI_INT64;
    p = skip(p + n);
    if (*p == ':') {
        p = skip(p + 1);
        size_t t = ident(p);
        int type = ctype_find(p, t);
        if (type != LOOM_FFI_INT64 && type != LOOM_FFI_DOUBLE) {
            snprintf(msg, size,
                     "params.%s: argument %d (%s): unsupported type \"%.*s\" (expected int64 or "
                     "double)",
                     param, index + 1, fields[a->field].name, (int)(t ? t : strcspn(p, ",) ")),
                     p);
            return -1;
        }
        a->type = type;
        p = skip(p + t);
    }
    *pp = p;
    return 0;
}

int loom_ffi_parse(const char *param, const char *text, loom_ffi_fn *fn, char *msg,
                   size_t msg_size)
{
    memset(fn, 0, sizeof *fn);
    fn->param = param;
    const char *p = skip(text);
    size_t n = ident(p);
    int ret = n ? ctype_find(p, n) : -1;
    if (ret < 0) {
        snprintf(msg, msg_size,
                 "params.%s: expected \"<type> <symbol>(<field>, ...)\" with type double, float, "
                 "int64 or int32, found unsupported return type \"%.*s\"",
                 param, (int)(n ? (n > 30 ? 30 : n) : strcspn(p, " (")), p);
        return -1;
    }
    fn->ret = ret;
    p = skip(p + n);
    n = ident(p);
    if (!n || n >= sizeof fn->symbol) {
        snprintf(msg, msg_size, "params.%s: expected a C symbol name after \"%s\", found \"%.30s\"",
                 param, loom_ffi_ctype_name(ret), p);
        return -1;
    }
    memcpy(fn->symbol, p, n);
    fn->symbol[n] = 0;
    p = skip(p + n);
    if (*p != '(') {
        snprintf(msg, msg_size, "params.%s: expected \"(\" after %s, found \"%.20s\"", param,
                 fn->symbol, p);
        return -1;
    }
    p = skip(p + 1);
    if (*p != ')') {
        for (;;) {
            if (fn->n_args == LOOM_FFI_MAX_ARGS) {
                snprintf(msg, msg_size, "params.%s: at most %d arguments", param,
                         LOOM_FFI_MAX_ARGS);
                return -1;
            }
            loom_ffi_arg *a = &fn->args[fn->n_args];
            if (parse_arg(param, &p, fn->n_args, a, msg, msg_size))
                return -1;
            fn->uses_policy |= a->field == LOOM_FFI_POLICY;
            fn->n_args++;
            if (*p == ',') {
                p++;
                continue;
            }
            if (*p == ')')
                break;
            snprintf(msg, msg_size, "params.%s: expected \",\" or \")\" after argument %d, found "
                                    "\"%.20s\"",
                     param, fn->n_args, p);
            return -1;
        }
    }
    p = skip(p + 1);
    if (*p) {
        snprintf(msg, msg_size, "params.%s: unexpected text after \")\": \"%.20s\"", param, p);
        return -1;
    }
    return 0;
}
