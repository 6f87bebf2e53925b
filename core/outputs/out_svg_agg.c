/* out_svg_agg.c - the aggregated rank rows of timeline.svg (out_svg.h):
 * each row is cut into columns of equal time; a column takes the colour
 * of the (colour group, kind) that keeps the rank busiest in it and an
 * opacity from the rank's busy share of it, in quarters. Runs of columns
 * of one class become one path, so the picture grows with ranks x columns,
 * not with the stage count. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "out_svg.h"

/* A column busy for less than this share of its time counts as idle
 * (rounding at column edges). */
#define AGG_IDLE_SHARE 1e-9

static const char *const kind_label[4] = {
    "F forward", "B backward", "I input gradient", "W weight gradient"};

const char *loom_svg_kind_label(int kind)
{
    return kind >= 0 && kind < 4 ? kind_label[kind] : "?";
}

void loom_svg_xml_text(FILE *out, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        default: fputc(*s, out);
        }
    }
}

void loom_svg_agg_free(loom_svg_agg *a)
{
    free(a->busy_ms);
    free(a->cls);
    free(a->runs);
    free(a->order);
    free(a->count);
    memset(a, 0, sizeof *a);
}

int loom_svg_agg_init(loom_svg_agg *a, const loom_style *st, int32_t n_ranks,
                      double *plot_px, double span_ms, loom_error *err)
{
    memset(a, 0, sizeof *a);
    double plot0 = *plot_px;
    a->n_keys = (st->n_groups > 0 ? st->n_groups : 1) * 4;
    int64_t max_cols = LOOM_SVG_AGG_CELLS / (n_ranks > 0 ? n_ranks : 1);
    if (max_cols > LOOM_SVG_AGG_BUSY_CELLS / a->n_keys)
        max_cols = LOOM_SVG_AGG_BUSY_CELLS / a->n_keys;
    if (max_cols < LOOM_SVG_AGG_MIN_COLS)
        max_cols = LOOM_SVG_AGG_MIN_COLS;
    if (max_cols > (int64_t)plot0)
        max_cols = (int64_t)plot0;
    a->col_px = (int)ceil(plot0 / (double)max_cols);
    a->cols = (int32_t)(plot0 / a->col_px);
    *plot_px = (double)a->cols * a->col_px;
    a->col_ms = span_ms > 0 ? span_ms / a->cols : 1;
    size_t cols = (size_t)a->cols, keys = (size_t)a->n_keys;
    a->busy_ms = malloc(sizeof(double) * cols * keys);
    a->cls = malloc(sizeof(int32_t) * cols);
    a->runs = malloc(sizeof(int32_t) * 2 * cols);
    a->order = malloc(sizeof(int32_t) * cols);
    a->count = malloc(sizeof(int32_t) * (keys * 4 + 1));
    if (!a->busy_ms || !a->cls || !a->runs || !a->order || !a->count) {
        loom_svg_agg_free(a);
        return loom_set_error(err, LOOM_ENOMEM, "timeline.svg: out of memory");
    }
    return LOOM_OK;
}

/* Adds stage time [t0, t1) to the columns it overlaps under key. */
static void add_busy(loom_svg_agg *a, int32_t key, double t0, double t1)
{
    if (!(t1 > t0))
        return;
    double f0 = floor(t0 / a->col_ms), f1 = floor(t1 / a->col_ms), last = a->cols - 1;
    int32_t c0 = (int32_t)(f0 < 0 ? 0 : f0 > last ? last : f0);
    int32_t c1 = (int32_t)(f1 < 0 ? 0 : f1 > last ? last : f1);
    for (int32_t c = c0; c <= c1; c++) {
        double lo = c * a->col_ms, hi = c == a->cols - 1 ? t1 : (c + 1) * a->col_ms;
        double ov = fmin(t1, hi) - fmax(t0, lo);
        if (ov > 0)
            a->busy_ms[(size_t)c * a->n_keys + key] += ov;
    }
}

/* Each column's class: 4 x its busiest key + (busy quarter - 1), or -1
 * when idle. Ties go to the lower key. */
static void classify(loom_svg_agg *a)
{
    for (int32_t c = 0; c < a->cols; c++) {
        const double *b = a->busy_ms + (size_t)c * a->n_keys;
        double busy = 0;
        int32_t best = 0;
        for (int32_t k = 0; k < a->n_keys; k++) {
            busy += b[k];
            if (b[k] > b[best])
                best = k;
        }
        if (busy <= a->col_ms * AGG_IDLE_SHARE) {
            a->cls[c] = -1;
            continue;
        }
        double q = ceil(busy / a->col_ms * 4);
        int quarter = q < 1 ? 1 : q > 4 ? 4 : (int)q;
        a->cls[c] = best * 4 + quarter - 1;
    }
}

/* Cuts the row into runs of equal class and sorts them by class
 * (counting sort: count[k]..count[k+1] index order[] for class k).
 * Returns the run count. */
static int32_t sort_runs(loom_svg_agg *a)
{
    int32_t n = 0, n_cls = a->n_keys * 4;
    for (int32_t c = 0; c < a->cols;) {
        int32_t e = c + 1;
        while (e < a->cols && a->cls[e] == a->cls[c])
            e++;
        if (a->cls[c] >= 0) {
            a->runs[2 * n] = c;
            a->runs[2 * n + 1] = e - c;
            n++;
        }
        c = e;
    }
    memset(a->count, 0, sizeof(int32_t) * ((size_t)n_cls + 1));
    for (int32_t i = 0; i < n; i++)
        a->count[a->cls[a->runs[2 * i]] + 1]++;
    for (int32_t k = 0; k < n_cls; k++)
        a->count[k + 1] += a->count[k];
    /* place, then shift the offsets back by one class */
    for (int32_t i = 0; i < n; i++)
        a->order[a->count[a->cls[a->runs[2 * i]]]++] = i;
    for (int32_t k = n_cls; k > 0; k--)
        a->count[k] = a->count[k - 1];
    a->count[0] = 0;
    return n;
}

/* The path data of class k's runs: one rectangle per run. */
static void run_data(FILE *out, const loom_svg_agg *a, int32_t k, int y, int lane, int left_px)
{
    for (int32_t i = a->count[k]; i < a->count[k + 1]; i++) {
        const int32_t *run = a->runs + 2 * a->order[i];
        int w = run[1] * a->col_px;
        fprintf(out, "M%d %dh%dv%dh-%dz", left_px + run[0] * a->col_px, y, w, lane, w);
    }
}

/* One class's path (and hatched copy for I and W) with its tooltip. */
static void class_path(FILE *out, const loom_plan *plan, const loom_style *st,
                       const loom_svg_agg *a, int32_t k, int32_t r, int y, int lane,
                       int left_px)
{
    static const char *const opacity[4] = {" fill-opacity=\"0.25\"", " fill-opacity=\"0.5\"",
                                           " fill-opacity=\"0.75\"", ""};
    int32_t group = k / 16;
    int kind = k / 4 % 4, quarter = k % 4 + 1;
    unsigned char base[3], rgb[3];
    char hex[8], name[96];
    loom_style_group_rgb(st, group, base);
    loom_style_kind_rgb(base, kind, rgb);
    loom_style_hex(rgb, hex);
    fprintf(out, "<path class=\"busy\" fill=\"%s\"%s d=\"", hex, opacity[quarter - 1]);
    run_data(out, a, k, y, lane, left_px);
    loom_style_group_name(plan, st, group, name, sizeof name);
    fprintf(out, "\"><title>rank %d: mostly %s, ", r, loom_svg_kind_label(kind));
    loom_svg_xml_text(out, name);
    fprintf(out, "; busy %d-%d %% of each column</title></path>\n", 25 * (quarter - 1),
            25 * quarter);
    if (kind == LOOM_STAGE_I || kind == LOOM_STAGE_W) {
        fprintf(out, "<path class=\"hatch\" fill=\"url(#hatch-%s)\" d=\"",
                kind == LOOM_STAGE_I ? "light" : "dark");
        run_data(out, a, k, y, lane, left_px);
        fputs("\"/>\n", out);
    }
}

void loom_svg_agg_row(FILE *out, const loom_plan *plan, const loom_style *st,
                      loom_svg_agg *a, int32_t r, int y, int lane, int left_px)
{
    const loom_stage_graph *g = plan->graph;
    const loom_schedule *sc = plan->schedule;
    memset(a->busy_ms, 0, sizeof(double) * (size_t)a->cols * (size_t)a->n_keys);
    for (int32_t i = sc->rank_off[r]; i < sc->rank_off[r + 1]; i++) {
        int32_t s = sc->order[i];
        if (loom_out_fill_hosts(sc, s) || g->kind[s] >= 4)
            continue;
        int32_t c = st->stage_comp[s], lo = st->comp_off[c];
        int32_t group = lo < st->comp_off[c + 1] ? st->parts[lo].group : 0;
        add_busy(a, group * 4 + g->kind[s], plan->metrics.start_ms[s], plan->metrics.end_ms[s]);
    }
    classify(a);
    sort_runs(a);
    for (int32_t k = 0; k < a->n_keys * 4; k++)
        if (a->count[k + 1] > a->count[k])
            class_path(out, plan, st, a, k, r, y, lane, left_px);
}
