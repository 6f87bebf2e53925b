/*
 * frozen_dp.c - the frozen-aware input-gradient rule (Eq. 3.3 across the
 * module DAG) and the min-max contiguous partition (Eq. 3.5).
 */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include "frozen_aware.h"

int loom_frozen_upstream(const loom_model *model, int32_t module)
{
    const loom_module *mod = &model->modules[module];
    for (int32_t k = 0; k < mod->n_inputs; k++) {
        int32_t j = mod->inputs[k];
        if ((!model->modules[j].frozen && model->modules[j].n_layers > 0) ||
            loom_frozen_upstream(model, j))
            return 1;
    }
    return 0;
}

int loom_frozen_pays_input(const loom_model *model, int32_t module,
                           int32_t layer, int rule)
{
    const loom_module *mod = &model->modules[module];
    if (loom_frozen_upstream(model, module))
        return 1;
    if (mod->frozen)
        return 0;
    return rule == LOOM_FROZEN_EQ33 || layer > 0;
}

int loom_frozen_minmax(const double *t, int32_t n, int32_t s, int32_t *sizes,
                       double *bottleneck, loom_error *err)
{
    if (s < 1 || n < s || !t || !sizes) {
        if (err) {
            err->code = LOOM_EINVAL;
            snprintf(err->message, sizeof err->message,
                     "frozen-aware: cannot split %d layers into %d stages "
                     "(every stage needs a layer)", n, s);
        }
        return LOOM_EINVAL;
    }
    size_t row = (size_t)n + 1;
    double *pre = malloc(row * sizeof *pre);
    double *d = malloc(row * (size_t)s * sizeof *d);
    int32_t *arg = malloc(row * (size_t)s * sizeof *arg);
    if (!pre || !d || !arg) {
        free(pre);
        free(d);
        free(arg);
        if (err) {
            err->code = LOOM_ENOMEM;
            snprintf(err->message, sizeof err->message,
                     "frozen-aware: out of memory");
        }
        return LOOM_ENOMEM;
    }
    pre[0] = 0;
    for (int32_t i = 0; i < n; i++)
        pre[i + 1] = pre[i] + t[i];
    /* D(i, 1) = P_i; D(i, k) = min_{k-1 <= j < i} max(D(j, k-1), P_i - P_j) */
    for (int32_t i = 0; i <= n; i++) {
        d[i] = pre[i];
        arg[i] = 0;
    }
    for (int32_t k = 2; k <= s; k++) {
        const double *prev = d + (size_t)(k - 2) * row;
        double *cur = d + (size_t)(k - 1) * row;
        int32_t *carg = arg + (size_t)(k - 1) * row;
        for (int32_t i = 0; i <= n; i++) {
            cur[i] = DBL_MAX;
            carg[i] = k - 1;
            for (int32_t j = k - 1; j < i; j++) {
                double v = prev[j] > pre[i] - pre[j] ? prev[j] : pre[i] - pre[j];
                if (v < cur[i]) {
                    cur[i] = v;
                    carg[i] = j;
                }
            }
        }
    }
    int32_t i = n;
    for (int32_t k = s; k >= 2; k--) {
        int32_t j = arg[(size_t)(k - 1) * row + (size_t)i];
        sizes[k - 1] = i - j;
        i = j;
    }
    sizes[0] = i;
    if (bottleneck)
        *bottleneck = d[(size_t)(s - 1) * row + (size_t)n];
    free(pre);
    free(d);
    free(arg);
    return LOOM_OK;
}
