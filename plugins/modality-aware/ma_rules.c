/*
 * ma_rules.c - the arithmetic of modality-aware partitioning (PipeWeaver
 * section 5): K_i = floor(T_i / T_1) segments per module, even layer runs,
 * the smallest sub-microbatch size within a threshold of the best
 * efficiency, and the items each module sees in a sample.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "modality_aware.h"

/* Computes K_i per module (see header). */
int loom_ma_segments(const double *t_ms, const int32_t *layers, int32_t n,
                     int32_t pp, int32_t max_segments, int32_t *k_out,
                     int32_t *bad)
{
    double t_min = 0.0;
    for (int32_t i = 0; i < n; i++)
        if (t_ms[i] > 0.0 && (t_min <= 0.0 || t_ms[i] < t_min))
            t_min = t_ms[i];
    if (max_segments < 1)
        max_segments = 1;
    for (int32_t i = 0; i < n; i++) {
        if (pp < 1 || layers[i] < pp) {
            if (bad)
                *bad = i;
            return LOOM_EINVAL;
        }
        int64_t k = 1;
        if (t_min > 0.0 && t_ms[i] > 0.0) {
            /* the tiny slack keeps an exact multiple from rounding down */
            double ratio = floor(t_ms[i] / t_min * (1.0 + 1e-12));
            k = ratio > 1e9 ? 1000000000 : (int64_t)ratio;
        }
        if (k < 1)
            k = 1;
        if (k > max_segments)
            k = max_segments;
        if (k > layers[i] / pp)
            k = layers[i] / pp;
        k_out[i] = (int32_t)k;
    }
    return LOOM_OK;
}

/* Even contiguous runs, remainder to the first runs. */
void loom_ma_layer_runs(int32_t n_layers, int32_t n_pos, int32_t *sizes)
{
    for (int32_t s = 0; s < n_pos; s++)
        sizes[s] = n_layers / n_pos + (s < n_layers % n_pos);
}

/* Smallest size within `threshold` of the best efficiency. */
int64_t loom_ma_pick_size(const int64_t *sizes, const double *eff, int32_t n,
                          double threshold)
{
    if (n < 1)
        return 1;
    double best = 0.0;
    for (int32_t k = 0; k < n; k++)
        if (eff[k] > best)
            best = eff[k];
    if (!(best > 0.0))
        return sizes[0];
    for (int32_t k = 0; k < n; k++)
        if (eff[k] >= threshold * best)
            return sizes[k];
    return sizes[n - 1];
}

/* Items of one sample for a module (see header). */
double loom_ma_sample_items(const loom_model *model, int32_t module,
                            const loom_sample *s)
{
    const loom_module *mod = &model->modules[module];
    switch (mod->modality) {
    case LOOM_MODALITY_IMAGE:
        return s->images > 0 ? (double)s->images : 0.0;
    case LOOM_MODALITY_VIDEO:
        return s->video_seconds > 0 ? s->video_seconds : 0.0;
    case LOOM_MODALITY_AUDIO:
        return s->audio_seconds > 0 ? s->audio_seconds : 0.0;
    default:
        return loom_sample_tokens(model, module, s) > 0 ? 1.0 : 0.0;
    }
}

/* Rounds summed items up (tolerating floating noise just above an
 * integer). */
int64_t loom_ma_whole_items(double items)
{
    if (!(items > 0.0))
        return 0;
    double r = floor(items);
    if (items - r > 1e-9)
        r += 1.0;
    return r > 4e18 ? (int64_t)4e18 : (int64_t)r;
}

/* Parses "auto" or "a,b,c" (see header); sorts and drops duplicates. */
int32_t loom_ma_parse_sizes(const char *text, int64_t *sizes, int32_t cap,
                            int *is_auto)
{
    *is_auto = 0;
    if (!text || !strcmp(text, "auto")) {
        *is_auto = 1;
        return 0;
    }
    const char *bad = NULL;
    size_t bad_len = 0;
    int64_t count = loom_param_int_list(text, 1, 1000000000, sizes, cap, &bad, &bad_len);
    if (count < 0 || count > cap)
        return -1;
    int32_t n = (int32_t)count;
    for (int32_t i = 1; i < n; i++) { /* insertion sort, n is small */
        int64_t v = sizes[i];
        int32_t j = i - 1;
        while (j >= 0 && sizes[j] > v) {
            sizes[j + 1] = sizes[j];
            j--;
        }
        sizes[j + 1] = v;
    }
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++)
        if (m == 0 || sizes[m - 1] != sizes[i])
            sizes[m++] = sizes[i];
    return m;
}
