/* table_interp.c - finding a layer's rows and interpolating them in
 * tokens. */
#include "table_data.h"

#include <string.h>

/* Compares a row's (module, layer) with a key. */
static int tb_key_cmp(const loom_table_row *r, const char *module,
                      int32_t layer)
{
    int c = strcmp(r->module, module);
    if (c)
        return c;
    return r->layer < layer ? -1 : r->layer > layer;
}

/* The run of rows with exactly (module, layer), by binary search. */
static void tb_range(const loom_table *t, const char *module, int32_t layer,
                     int32_t *begin, int32_t *end)
{
    int32_t lo = 0, hi = t->n_rows;
    while (lo < hi) { /* first row >= key */
        int32_t mid = lo + (hi - lo) / 2;
        if (tb_key_cmp(&t->rows[mid], module, layer) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *begin = lo;
    hi = t->n_rows;
    while (lo < hi) { /* first row > key */
        int32_t mid = lo + (hi - lo) / 2;
        if (tb_key_cmp(&t->rows[mid], module, layer) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *end = lo;
}

/* The rows for (module, layer), else the module's "*" rows. */
void loom_table_lookup(const loom_table *t, const char *module, int32_t layer,
                       const loom_table_row **first, int32_t *count)
{
    int32_t b, e;
    tb_range(t, module, layer, &b, &e);
    if (b == e && layer != LOOM_TABLE_ANY_LAYER)
        tb_range(t, module, LOOM_TABLE_ANY_LAYER, &b, &e);
    *first = b < e ? &t->rows[b] : NULL;
    *count = e - b;
}

/* Line through (x0, y0) and (x1, y1) evaluated at x, clamped at 0. */
static double tb_line(double x0, double y0, double x1, double y1, double x)
{
    double y = y0 + (y1 - y0) * (x - x0) / (x1 - x0);
    return y > 0 ? y : 0.0;
}

/* Interpolates the rows at `tokens` (see header). */
void loom_table_interpolate(const loom_table_row *rows, int32_t n,
                            double tokens, loom_table_point *out)
{
    memset(out, 0, sizeof *out);
    if (n < 1)
        return;
    if (n == 1) {
        double s = tokens / (double)rows[0].tokens;
        out->forward_ms = rows[0].forward_ms * s;
        out->input_grad_ms = rows[0].input_grad_ms * s;
        out->weight_grad_ms = rows[0].weight_grad_ms * s;
        out->activation_bytes = rows[0].activation_bytes * s;
        out->param_bytes = rows[0].param_bytes;
        return;
    }
    /* the segment [i, i+1] containing tokens, or the nearest end one */
    int32_t i = 0;
    while (i < n - 2 && tokens > (double)rows[i + 1].tokens)
        i++;
    const loom_table_row *a = &rows[i], *b = &rows[i + 1];
    double x0 = (double)a->tokens, x1 = (double)b->tokens;
    out->forward_ms = tb_line(x0, a->forward_ms, x1, b->forward_ms, tokens);
    out->input_grad_ms =
        tb_line(x0, a->input_grad_ms, x1, b->input_grad_ms, tokens);
    out->weight_grad_ms =
        tb_line(x0, a->weight_grad_ms, x1, b->weight_grad_ms, tokens);
    out->activation_bytes =
        tb_line(x0, a->activation_bytes, x1, b->activation_bytes, tokens);

    /* param_bytes: from the row nearest in tokens (the lower on a tie) */
    int32_t best = 0;
    double best_d = -1;
    for (int32_t k = 0; k < n; k++) {
        double d = tokens - (double)rows[k].tokens;
        if (d < 0)
            d = -d;
        if (best_d < 0 || d < best_d) {
            best = k;
            best_d = d;
        }
    }
    out->param_bytes = rows[best].param_bytes;
}
