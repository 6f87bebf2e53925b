/*
 * out_svg.h - the aggregated rank rows of timeline.svg, drawn instead of
 * one rectangle per stage for plans of more than LOOM_OUT_COMPACT_STAGES
 * stages (docs/outputs.md, "SVG timeline", aggregated form). Internal to
 * core/outputs.
 */
#ifndef LOOM_OUT_SVG_H
#define LOOM_OUT_SVG_H

#include "out_style.h"

/* At most this many columns over all rank rows together (ranks x
 * columns), so the picture's size does not grow with the stage count. */
#define LOOM_SVG_AGG_CELLS 1048576
/* At most this many (column, colour group x kind) busy-time cells in one
 * row's work buffer (32 MiB), which caps the columns of plans with very
 * many colour groups. */
#define LOOM_SVG_AGG_BUSY_CELLS 4194304
/* Fewest columns a row gets, however many ranks or groups there are. */
#define LOOM_SVG_AGG_MIN_COLS 16

/* Columns of one aggregated picture and the work buffers of one row. */
typedef struct loom_svg_agg {
    int32_t cols;     /* columns per rank row */
    int col_px;       /* width of one column, px */
    double col_ms;    /* time one column covers */
    int32_t n_keys;   /* colour groups x 4 kinds */
    double *busy_ms;  /* cols x n_keys: busy time per column and key */
    int32_t *cls;     /* cols: the column's class, -1 when idle */
    int32_t *runs;    /* 2 x cols: (first column, length) of each run */
    int32_t *order;   /* cols: runs sorted by class */
    int32_t *count;   /* n_keys x 4 + 1: runs per class, then offsets */
} loom_svg_agg;

/* Picks the columns for a plot of `plot_px` px over span_ms for n_ranks
 * rows and allocates the buffers (LOOM_ENOMEM; free with
 * loom_svg_agg_free, also after a failure). `*plot_px` becomes
 * cols x col_px, at most its old value. */
int loom_svg_agg_init(loom_svg_agg *a, const loom_style *st, int32_t n_ranks,
                      double *plot_px, double span_ms, loom_error *err);

void loom_svg_agg_free(loom_svg_agg *a);

/* "F forward", "B backward", "I input gradient", "W weight gradient". */
const char *loom_svg_kind_label(int kind);

/* Writes text with XML special characters escaped. */
void loom_svg_xml_text(FILE *out, const char *s);

/* Draws rank r's row at y (lane px high): per class (colour group, kind,
 * busy quarter) one <path class="busy"> of the runs of columns in that
 * class, with a tooltip, and a hatched copy for I and W. */
void loom_svg_agg_row(FILE *out, const loom_plan *plan, const loom_style *st,
                      loom_svg_agg *a, int32_t r, int y, int lane, int left_px);

#endif
