/*
 * modality_aware.h - the pure pieces of PipeWeaver's modality-aware
 * partitioner (PipeWeaver section 5), exposed so they can be tested on
 * their own: segment counts per module, layer runs per position, the
 * sub-microbatch size rule and the items a module sees per sample.
 *
 * Ownership: every pointer is caller-provided; nothing here allocates.
 * Units: times in milliseconds, sizes in the module's items (images,
 * video/audio seconds, text sequences).
 */
#ifndef LOOM_MODALITY_AWARE_H
#define LOOM_MODALITY_AWARE_H

#include <loom/loom.h>

/* Segment counts K_i for n modules with estimated times t_ms[i] (forward +
 * backward of the mean microbatch) and layer counts layers[i] on pp ranks:
 * K_i = max(1, floor(t_i / t_min)) where t_min is the smallest positive
 * time, capped by max_segments and by floor(layers[i] / pp) so every
 * position keeps at least one layer. A module with no positive time gets
 * K = 1. Returns LOOM_OK, or LOOM_EINVAL (with the index of the first
 * module whose layers[i] < pp in *bad) when a module cannot give each rank
 * a layer. */
int loom_ma_segments(const double *t_ms, const int32_t *layers, int32_t n,
                     int32_t pp, int32_t max_segments, int32_t *k_out,
                     int32_t *bad);

/* Splits n_layers into n_pos contiguous runs: n_layers / n_pos each, the
 * first n_layers % n_pos runs one more. sizes has n_pos entries. */
void loom_ma_layer_runs(int32_t n_layers, int32_t n_pos, int32_t *sizes);

/* The sub-microbatch size rule: among n tested sizes (ascending) with
 * efficiencies eff[k] (items per ms), the smallest size whose efficiency
 * is >= threshold x the best one. Returns sizes[0] when no efficiency is
 * positive, and 1 when n < 1. */
int64_t loom_ma_pick_size(const int64_t *sizes, const double *eff, int32_t n,
                          double threshold);

/* Items of module `module` in one sample: images for image modules, video
 * or audio seconds, and for text modules 1 when the sample's sequence
 * (its text tokens plus the tokens of the module's inputs) is non-empty. */
double loom_ma_sample_items(const loom_model *model, int32_t module,
                            const loom_sample *s);

/* Rounds a microbatch's summed items up to a whole count (seconds of video
 * or audio are rounded up; images and sequences are already whole). */
int64_t loom_ma_whole_items(double items);

/* Parses the sub_sizes param: "auto" (returns 0 sizes, *is_auto = 1) or a
 * comma-separated list of positive integers in ascending order of at most
 * `cap` entries. Returns the count, or -1 when the text does not parse. */
int32_t loom_ma_parse_sizes(const char *text, int64_t *sizes, int32_t cap,
                            int *is_auto);

/* The partitioner's params once read and checked. */
#define LOOM_MA_MAX_SIZES 32
typedef struct loom_ma_config {
    double efficiency_threshold; /* in (0, 1] */
    int32_t max_segments;        /* >= 1 */
    int32_t min_sub_items;       /* >= 1: smaller sizes are not tested */
    int32_t n_sizes;             /* 0: "auto" */
    int64_t sizes[LOOM_MA_MAX_SIZES]; /* explicit sizes, ascending */
} loom_ma_config;

/* The sizes to test for a module whose largest microbatch holds n_max
 * items: the explicit list, or ("auto") the powers of two below n_max and
 * n_max itself; sizes below min_sub_items are dropped. Writes at most
 * LOOM_MA_MAX_SIZES entries to out and returns the count (0 when nothing
 * is left to test). */
int32_t loom_ma_test_sizes(const loom_ma_config *cfg, int64_t n_max,
                           int64_t *out);

/* B_i of one module: builds, from the cost service's mean-microbatch shape
 * (mean_items items), a shape of b items for every tested size b, costs
 * the module's layers (forward + backward, policy NONE) and applies
 * loom_ma_pick_size to items per ms. n_max is the largest microbatch's item
 * count; a module with no items gets 1. Writes B to *b_out. */
int loom_ma_sub_size(const loom_host_api *host, loom_ctx *ctx,
                     const loom_cost_service *cost, const loom_problem *problem,
                     const loom_iteration *it, int32_t microbatches,
                     int32_t module, const loom_ma_config *cfg, int64_t n_max,
                     double mean_items, int64_t *b_out, loom_error *err);

#endif
