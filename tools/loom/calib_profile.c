/* calib_profile.c - the per-layer profile CSV of `loom calibrate`
 * (docs/calibration.md): one measured layer per line, priced through a
 * session's cost model; and the table cost file written from it. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "calib.h"
#include <loom/sys/json.h>

enum { COL_MODULE, COL_LAYER, COL_TOKENS, COL_TP, COL_FWD, COL_BWD, COL_ACT, COL_SEQ, N_COLS };
static const char *const col_names[N_COLS] = {"module", "layer", "tokens", "tp", "forward_ms",
                                              "backward_ms", "activation_bytes", "seq_len"};
static const int col_required[N_COLS] = {1, 1, 1, 1, 1, 1, 0, 0};

/* Splits one line (NUL-terminated, modified in place) into at most `cap`
 * trimmed fields, a field's surrounding double quotes removed; returns
 * the count (cap + 1 when there are more). */
static int split(char *line, char **fields, int cap)
{
    int n = 0;
    char *p = line;
    for (;;) {
        char *end = strchr(p, ',');
        if (end)
            *end = 0;
        while (isspace((unsigned char)*p))
            p++;
        size_t len = strlen(p);
        while (len && isspace((unsigned char)p[len - 1]))
            p[--len] = 0;
        if (len >= 2 && p[0] == '"' && p[len - 1] == '"') {
            p[len - 1] = 0;
            p++;
        }
        if (n == cap)
            return cap + 1;
        fields[n++] = p;
        if (!end)
            return n;
        p = end + 1;
    }
}

/* Parses a finite number >= lo (integral when `integer`). */
static int number(const char *s, double lo, int integer, double *out)
{
    if (!*s)
        return 0;
    errno = 0;
    char *end = NULL;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v) || v < lo || (integer && v != floor(v)))
        return 0;
    *out = v;
    return 1;
}

/* Maps the header's columns to col[]; file:1-style errors. */
static int read_header(const char *path, int line, char **f, int n, int *col, loom_error *err)
{
    for (int c = 0; c < N_COLS; c++)
        col[c] = -1;
    for (int i = 0; i < n; i++) {
        int c = 0;
        while (c < N_COLS && strcmp(f[i], col_names[c]))
            c++;
        if (c == N_COLS)
            return loom_set_error(err, LOOM_EINVAL,
                                  "%s:%d: header: unknown column \"%.60s\" (expected module, "
                                  "layer, tokens, tp, forward_ms, backward_ms and optionally "
                                  "activation_bytes, seq_len)",
                                  path, line, f[i]);
        if (col[c] >= 0)
            return loom_set_error(err, LOOM_EINVAL, "%s:%d: header: column %s appears twice",
                                  path, line, col_names[c]);
        col[c] = i;
    }
    for (int c = 0; c < N_COLS; c++)
        if (col_required[c] && col[c] < 0)
            return loom_set_error(err, LOOM_EINVAL, "%s:%d: header: expected a column %s, "
                                  "found none", path, line, col_names[c]);
    return LOOM_OK;
}

/* Parses one data line into *L against the model. */
static int read_row(const char *path, int line, char **f, const int *col, const loom_model *model,
                    loom_calib_layer *L, loom_error *err)
{
    memset(L, 0, sizeof *L);
    L->line = line;
    L->module = -1;
    for (int32_t m = 0; m < model->n_modules; m++)
        if (!strcmp(model->modules[m].name, f[col[COL_MODULE]]))
            L->module = m;
    if (L->module < 0)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s:%d: column module: expected a module of model %s, found "
                              "\"%.60s\"", path, line, model->name, f[col[COL_MODULE]]);
    const loom_module *mod = &model->modules[L->module];
    double v = 0;
    const char *s = f[col[COL_LAYER]];
    if (!strcmp(s, "*"))
        L->layer = -1;
    else if (number(s, 0, 1, &v) && v < mod->n_layers)
        L->layer = (int32_t)v;
    else
        return loom_set_error(err, LOOM_EINVAL,
                              "%s:%d: column layer: expected * or a layer index in [0, %d) "
                              "of module %s, found \"%.60s\"", path, line, (int)mod->n_layers,
                              mod->name, s);
    struct { int c; double lo, hi; int integer; } spec[] = {
        {COL_TOKENS, 1, 4294967296.0, 1}, {COL_TP, 1, 65536, 1}, {COL_FWD, 0, 1e9, 0},
        {COL_BWD, 0, 1e9, 0}, {COL_ACT, 0, 1e18, 1}, {COL_SEQ, 1, 4294967296.0, 1}};
    double got[N_COLS] = {0};
    got[COL_ACT] = -1;
    for (size_t k = 0; k < sizeof spec / sizeof spec[0]; k++) {
        int c = spec[k].c;
        if (col[c] < 0)
            continue;
        s = f[col[c]];
        if (!number(s, spec[k].lo, spec[k].integer, &v) || v > spec[k].hi)
            return loom_set_error(err, LOOM_EINVAL,
                                  "%s:%d: column %s: expected %s in [%g, %g], found \"%.60s\"",
                                  path, line, col_names[c],
                                  spec[k].integer ? "an integer" : "a number", spec[k].lo,
                                  spec[k].hi, s);
        got[c] = v;
    }
    if (!(got[COL_FWD] > 0))
        return loom_set_error(err, LOOM_EINVAL, "%s:%d: column forward_ms: expected a time "
                              "> 0, found 0", path, line);
    L->tokens = (int64_t)got[COL_TOKENS];
    L->tp = (int32_t)got[COL_TP];
    L->forward_ms = got[COL_FWD];
    L->backward_ms = got[COL_BWD];
    L->activation_bytes = got[COL_ACT];
    L->seq_len = col[COL_SEQ] >= 0 ? (int64_t)got[COL_SEQ] : L->tokens;
    if (L->seq_len > L->tokens)
        return loom_set_error(err, LOOM_EINVAL, "%s:%d: column seq_len: expected at most the "
                              "row's %lld tokens, found %lld", path, line,
                              (long long)L->tokens, (long long)L->seq_len);
    return LOOM_OK;
}

/* Appends a layer (growing the array). */
static int push_layer(loom_calib_set *set, const loom_calib_layer *L, int *cap, loom_error *err)
{
    if (set->n_layers == *cap) {
        int nc = *cap ? *cap * 2 : 64;
        loom_calib_layer *p = realloc(set->layers, (size_t)nc * sizeof *p);
        if (!p)
            return loom_set_error(err, LOOM_ENOMEM, "calibrate: out of memory");
        set->layers = p;
        *cap = nc;
    }
    set->layers[set->n_layers++] = *L;
    return LOOM_OK;
}

/* Checks that no two rows measure the same module, layer, tokens,
 * sequence length and TP degree. */
static int check_duplicates(const loom_calib_set *set, const char *path, loom_error *err)
{
    for (int i = 0; i < set->n_layers; i++)
        for (int j = 0; j < i; j++) {
            const loom_calib_layer *a = &set->layers[j], *b = &set->layers[i];
            if (a->module == b->module && a->layer == b->layer && a->tokens == b->tokens &&
                a->tp == b->tp && a->seq_len == b->seq_len)
                return loom_set_error(err, LOOM_EINVAL,
                                      "%s:%d: the same layer, tokens, seq_len and tp as line "
                                      "%d", path, b->line, a->line);
        }
    return LOOM_OK;
}

int loom_calib_parse_profile(loom_calib_set *set, const char *path, char *text,
                             const loom_model *model, loom_error *err)
{
    if (!strncmp(text, "\xEF\xBB\xBF", 3))
        text += 3;
    int col[N_COLS], have_header = 0, line = 0, cap = 0, rc = LOOM_OK;
    char *p = text;
    while (p && *p && rc == LOOM_OK) {
        line++;
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = 0;
        size_t len = strlen(p);
        if (len && p[len - 1] == '\r')
            p[len - 1] = 0;
        char *q = p;
        p = nl ? nl + 1 : NULL;
        while (isspace((unsigned char)*q))
            q++;
        if (!*q || *q == '#')
            continue;
        char *f[N_COLS + 1];
        int n = split(q, f, N_COLS);
        if (n > N_COLS)
            return loom_set_error(err, LOOM_EINVAL, "%s:%d: expected at most %d columns, found "
                                  "more", path, line, N_COLS);
        if (!have_header) {
            rc = read_header(path, line, f, n, col, err);
            have_header = 1;
            continue;
        }
        int want = 0;
        for (int c = 0; c < N_COLS; c++)
            want += col[c] >= 0;
        if (n != want)
            return loom_set_error(err, LOOM_EINVAL, "%s:%d: expected %d columns as in the "
                                  "header, found %d", path, line, want, n);
        loom_calib_layer L;
        if ((rc = read_row(path, line, f, col, model, &L, err)) == LOOM_OK)
            rc = push_layer(set, &L, &cap, err);
    }
    if (rc == LOOM_OK && !have_header)
        return loom_set_error(err, LOOM_EINVAL, "%s: expected a header line (module,layer,"
                              "tokens,tp,forward_ms,backward_ms,...), found an empty file", path);
    if (rc == LOOM_OK && set->n_layers == 0)
        return loom_set_error(err, LOOM_EINVAL, "%s: expected at least one measured layer "
                              "after the header, found none", path);
    return rc == LOOM_OK ? check_duplicates(set, path, err) : rc;
}

int loom_calib_read_profile(loom_calib_set *set, const char *path, const char *model_spec,
                            const char *cluster_spec, const char *manifest, loom_error *err)
{
    loom_session_args a;
    loom_session_args_init(&a);
    a.manifest = manifest;
    a.model = model_spec;
    a.cluster = cluster_spec;
    a.no_workload = 1;
    int rc = loom_session_open(&set->profile, &a, err);
    if (rc != LOOM_OK)
        return rc;
    loom_session_problem(set->profile)->cluster = set->cluster;
    set->profile_path = path;
    char *text = NULL;
    if ((rc = loom_read_file(path, &text, NULL, err)) != LOOM_OK)
        return rc;
    rc = loom_calib_parse_profile(set, path, text, loom_session_problem(set->profile)->model, err);
    free(text);
    return rc;
}

/* Prices one profile layer at the current factors: forward and backward
 * (no recomputation), the backward's split and the sizes. */
int loom_calib_price_layer(loom_calib_set *set, loom_calib_layer *L, double *fwd, double *bwd,
                           loom_error *err)
{
    loom_shape shape = LOOM_SHAPE_INIT;
    shape.tokens = L->tokens;
    shape.sequences = (L->tokens + L->seq_len - 1) / L->seq_len;
    shape.seq_sq_sum = (double)L->tokens * (double)L->seq_len;
    shape.tp = L->tp;
    shape.trainable_upstream = L->backward_ms > 0;
    loom_layer_cost c;
    int rc = loom_session_layer_cost(set->profile, L->module, L->layer < 0 ? 0 : L->layer,
                                     &shape, LOOM_POLICY_NONE, &c, err);
    if (rc != LOOM_OK)
        return rc;
    L->input_grad_ms = c.input_grad_ms;
    L->weight_grad_ms = c.weight_grad_ms;
    L->param_bytes = (double)c.param_bytes;
    L->predicted_activation_bytes = (double)c.activation_bytes;
    *fwd = c.forward_ms;
    *bwd = c.input_grad_ms + c.weight_grad_ms;
    return LOOM_OK;
}

int loom_calib_write_table(void *user, FILE *out, loom_error *err)
{
    loom_calib_set *set = user;
    const loom_model *model = loom_session_problem(set->profile)->model;
    fputs("module,layer,tokens,forward_ms,input_grad_ms,weight_grad_ms,activation_bytes,"
          "param_bytes\n", out);
    for (int i = 0; i < set->n_layers; i++) {
        const loom_calib_layer *L = &set->layers[i];
        double split = L->input_grad_ms + L->weight_grad_ms;
        double ig = split > 0 ? L->backward_ms * L->input_grad_ms / split : 0;
        double wg = split > 0 ? L->backward_ms - ig : 0;
        double act = L->activation_bytes >= 0 ? L->activation_bytes
                                              : L->predicted_activation_bytes;
        char layer[24];
        if (L->layer < 0)
            snprintf(layer, sizeof layer, "*");
        else
            snprintf(layer, sizeof layer, "%d", L->layer);
        fprintf(out, "%s,%s,%lld,%.9g,%.9g,%.9g,%.0f,%.0f\n", model->modules[L->module].name,
                layer, (long long)L->tokens, L->forward_ms, ig, wg, act, L->param_bytes);
    }
    if (ferror(out))
        return loom_set_error(err, LOOM_EIO, "cannot write the table");
    return LOOM_OK;
}
