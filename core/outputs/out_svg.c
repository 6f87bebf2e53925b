/* out_svg.c - a static SVG 1.1 timeline of a plan: one lane per rank, one
 * rectangle per stage coloured by model module (out_style.h: F lighter, B
 * darker, I and W hatched; a strip at the bottom for the chunk), a legend,
 * a time axis in milliseconds with grid lines, and a width that grows with
 * the plan so that thousands of stages stay apart. No scripts. Plans of
 * more than LOOM_OUT_COMPACT_STAGES stages get aggregated rows instead of
 * rectangles (out_svg_agg.c) and a note saying so. */
#include <math.h>
#include <string.h>
#include "out_svg.h"

#define SVG_MIN_WIDTH 1200   /* px */
#define SVG_MAX_WIDTH 16000  /* px: the documented cap */
#define SVG_STAGE_PX 4.0     /* width of the median stage, px, between the two */
#define SVG_LEFT 80          /* lane labels */
#define SVG_RIGHT 24
#define SVG_TOP 92           /* title and legend */
#define SVG_TICK_PX 120.0    /* about one axis tick per this many px */
#define SVG_LABEL_EVERY 2000 /* px between repeated rank labels on wide timelines */
#define SVG_NOTE_PX 36       /* extra room above the lanes for the aggregation note */

/* Grey the kind legend shades. */
static const unsigned char legend_grey[3] = {120, 120, 120};

/* The colour of group g as a stage of `kind` shows it. */
static void kind_hex(const loom_style *st, int32_t g, int kind, char hex[8])
{
    unsigned char base[3], rgb[3];
    loom_style_group_rgb(st, g, base);
    loom_style_kind_rgb(base, kind, rgb);
    loom_style_hex(rgb, hex);
}

/* 1 for the dark fills (B, I) that want white text. */
static int dark_kind(int kind)
{
    return kind == LOOM_STAGE_B || kind == LOOM_STAGE_I;
}

/* Module composition of a stage for its tooltip: "vit" or "vit 3 + llm 5
 * layers". */
static void comp_text(FILE *out, const loom_plan *plan, const loom_style *st, int32_t c)
{
    char name[96];
    int32_t lo = st->comp_off[c], hi = st->comp_off[c + 1];
    for (int32_t i = lo; i < hi; i++) {
        loom_style_group_name(plan, st, st->parts[i].group, name, sizeof name);
        fputs(i > lo ? " + " : " ", out);
        loom_svg_xml_text(out, name);
        if (hi - lo > 1)
            fprintf(out, " %d", st->parts[i].layers);
    }
    if (hi - lo > 1)
        fputs(" layers", out);
}

/* The plot width in px: the median stage SVG_STAGE_PX wide, the whole
 * picture between SVG_MIN_WIDTH and SVG_MAX_WIDTH. */
static double plot_width(const loom_plan *plan, double span)
{
    double median = loom_style_median_ms(plan);
    double w = median > 0 && span > 0 ? span / median * SVG_STAGE_PX : 0;
    double lo = SVG_MIN_WIDTH - SVG_LEFT - SVG_RIGHT, hi = SVG_MAX_WIDTH - SVG_LEFT - SVG_RIGHT;
    return w < lo || !isfinite(w) ? lo : w > hi ? hi : ceil(w);
}

/* The legend rows: modules (or chunks), then kinds and the chunk strip. */
static void legend(FILE *out, const loom_plan *plan, const loom_style *st)
{
    char name[96], hex[8];
    int x = SVG_LEFT;
    fprintf(out, "<text x=\"8\" y=\"%d\" fill=\"#666666\">%s</text>\n", 52,
            st->by_module ? "modules" : "chunks");
    for (int32_t gi = 0; gi < st->n_groups; gi++) {
        if (!st->used[gi])
            continue;
        kind_hex(st, gi, LOOM_STAGE_F, hex);
        fprintf(out, "<rect class=\"module\" x=\"%d\" y=\"41\" width=\"14\" height=\"14\" "
                     "fill=\"%s\"/>\n<text x=\"%d\" y=\"52\">", x, hex, x + 20);
        loom_style_group_name(plan, st, gi, name, sizeof name);
        loom_svg_xml_text(out, name);
        fputs("</text>\n", out);
        x += 40 + 7 * (int)strlen(name);
    }
    const loom_stage_graph *g = plan->graph;
    int present[4] = {0, 0, 0, 0};
    for (int32_t s = 0; s < g->n_stages; s++)
        if (g->kind[s] < 4)
            present[g->kind[s]] = 1;
    x = SVG_LEFT;
    fprintf(out, "<text x=\"8\" y=\"76\" fill=\"#666666\">kinds</text>\n");
    for (int k = 0; k < 4; k++) {
        if (!present[k])
            continue;
        unsigned char rgb[3];
        loom_style_kind_rgb(legend_grey, k, rgb);
        loom_style_hex(rgb, hex);
        fprintf(out, "<rect class=\"legend\" x=\"%d\" y=\"65\" width=\"14\" height=\"14\" "
                     "fill=\"%s\"/>\n", x, hex);
        if (k == LOOM_STAGE_I || k == LOOM_STAGE_W)
            fprintf(out, "<rect class=\"hatch\" x=\"%d\" y=\"65\" width=\"14\" height=\"14\" "
                         "fill=\"url(#hatch-%s)\"/>\n", x, k == LOOM_STAGE_I ? "light" : "dark");
        fprintf(out, "<text x=\"%d\" y=\"76\">%s</text>\n", x + 20, loom_svg_kind_label(k));
        x += 150;
    }
    fputs("<text x=\"", out);
    fprintf(out, "%d\" y=\"76\" fill=\"#666666\">number: microbatch", x);
    if (st->max_chunk > 0)
        fputs(" (and chunk c)", out);
    if (st->by_module && st->max_chunk > 0)
        fprintf(out, "; dark strip at the bottom: chunk %s%d%s", st->max_chunk > 1 ? "1-" : "",
                st->max_chunk, st->max_chunk > 1 ? ", darker = later" : "");
    fputs("</text>\n", out);
}

/* One stage: its rectangle with tooltip, hatch, chunk strip, the bands of
 * the other modules of a mixed chunk, and its number when wide enough. */
static void stage(FILE *out, const loom_plan *plan, const loom_style *st, int32_t s,
                  double px_per_ms, int y, int lane)
{
    const loom_stage_graph *g = plan->graph;
    const double *start = plan->metrics.start_ms, *end = plan->metrics.end_ms;
    double x = SVG_LEFT + start[s] * px_per_ms;
    double w = (end[s] - start[s]) * px_per_ms;
    if (w < 0.3)
        w = 0.3;
    int kind = g->kind[s];
    int32_t c = st->stage_comp[s], lo = st->comp_off[c], hi = st->comp_off[c + 1];
    char hex[8];
    kind_hex(st, lo < hi ? st->parts[lo].group : 0, kind, hex);
    fprintf(out, "<rect class=\"stage\" x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" "
                 "fill=\"%s\"%s><title>%c mb%d", x, y, w, lane, hex,
            w >= 3 ? " stroke=\"#ffffff\" stroke-width=\"0.5\"" : "",
            loom_out_kind_char(kind), g->microbatch[s]);
    if (g->sub[s])
        fprintf(out, ".%d", g->sub[s]);
    fprintf(out, " chunk %d", g->chunk[s]);
    if (st->by_module)
        comp_text(out, plan, st, c);
    fprintf(out, " (stage %d): %.3f-%.3f ms, policy %s</title></rect>\n", s, start[s], end[s],
            loom_out_policy_name(loom_out_stage_policy(g, s)));
    /* the other modules of a mixed chunk: bands at the top by layer share */
    int32_t total = 0;
    for (int32_t i = lo; i < hi; i++)
        total += st->parts[i].layers;
    double band_y = y;
    for (int32_t i = lo + 1; i < hi && total > 0; i++) {
        double h = (double)lane * st->parts[i].layers / total;
        kind_hex(st, st->parts[i].group, kind, hex);
        fprintf(out, "<rect class=\"mix\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
                     "fill=\"%s\"/>\n", x, band_y, w, h, hex);
        band_y += h;
    }
    if (kind == LOOM_STAGE_I || kind == LOOM_STAGE_W)
        fprintf(out, "<rect class=\"hatch\" x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" "
                     "fill=\"url(#hatch-%s)\"/>\n", x, y, w, lane,
                kind == LOOM_STAGE_I ? "light" : "dark");
    if (st->by_module && st->max_chunk > 0 && g->chunk[s] > 0 && lane >= 12)
        fprintf(out, "<rect class=\"chunk\" x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"4\" "
                     "fill=\"#000000\" fill-opacity=\"%.2f\"/>\n", x, y + lane - 4, w,
                0.25 + 0.6 * g->chunk[s] / st->max_chunk);
    if (w >= 16 && lane >= 14) {
        const char *color = dark_kind(kind) ? "#ffffff" : "#222222";
        if (st->max_chunk > 0 && w >= 34)
            fprintf(out, "<text x=\"%.2f\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\" "
                         "fill=\"%s\">%d c%d</text>\n", x + w / 2, y + lane / 2 + 3, color,
                    g->microbatch[s], g->chunk[s]);
        else
            fprintf(out, "<text x=\"%.2f\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\" "
                         "fill=\"%s\">%d</text>\n", x + w / 2, y + lane / 2 + 3, color,
                    g->microbatch[s]);
    }
}

/* The note of an aggregated picture: what a column is and shows. */
static void agg_note(FILE *out, const loom_plan *plan, const loom_style *st,
                     const loom_svg_agg *a)
{
    fprintf(out, "<text class=\"note\" x=\"%d\" y=\"%d\" fill=\"#a03000\">Aggregated "
                 "view: the plan has %d stages, more than %d, so each rank row is drawn as "
                 "%d columns of %d px, %g ms each.</text>\n", SVG_LEFT, SVG_TOP + 6,
            plan->graph->n_stages, LOOM_OUT_COMPACT_STAGES, a->cols, a->col_px, a->col_ms);
    fprintf(out, "<text class=\"note\" x=\"%d\" y=\"%d\" fill=\"#a03000\">A column has the "
                 "colour of the %s and kind that keep the rank busiest in it, and the rank's "
                 "busy share of it as opacity, in quarters; fills, stage numbers and stage "
                 "tooltips are left out.</text>\n", SVG_LEFT, SVG_TOP + 22,
            st->by_module ? "module" : "chunk");
}

/* Writes the whole SVG document; `agg` is NULL for one rectangle per
 * stage. */
static int write_svg(const loom_plan *plan, const loom_style *st, loom_svg_agg *agg,
                     FILE *out, loom_error *err)
{
    const loom_stage_graph *g = plan->graph;
    const loom_schedule *sc = plan->schedule;
    const double *end = plan->metrics.end_ms;
    double span = plan->metrics.makespan_ms;
    for (int32_t s = 0; s < g->n_stages; s++)
        if (end[s] > span)
            span = end[s];
    double plot = plot_width(plan, span);
    if (agg) {
        int rc = loom_svg_agg_init(agg, st, g->n_ranks, &plot, span, err);
        if (rc != LOOM_OK)
            return rc;
    }
    int top = SVG_TOP + (agg ? SVG_NOTE_PX : 0);
    int width = SVG_LEFT + (int)plot + SVG_RIGHT;
    double px_per_ms = span > 0 ? plot / span : 0;
    int lane = g->n_ranks <= 16 ? 26 : g->n_ranks <= 64 ? 416 / g->n_ranks + 2 : 8;
    int gap = lane >= 20 ? 6 : 3;
    int axis_y = top + g->n_ranks * (lane + gap);
    int height = axis_y + 40;

    fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
                 "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n",
            width, height, width, height);
    fputs("<title>Loom plan ", out);
    loom_svg_xml_text(out, plan->label);
    fputs("</title>\n", out);
    fputs("<defs>\n"
          "<pattern id=\"hatch-light\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
          "patternTransform=\"rotate(45)\"><rect x=\"0\" y=\"0\" width=\"2\" height=\"6\" "
          "fill=\"#ffffff\" fill-opacity=\"0.55\"/></pattern>\n"
          "<pattern id=\"hatch-dark\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
          "patternTransform=\"rotate(45)\"><rect x=\"0\" y=\"0\" width=\"2\" height=\"6\" "
          "fill=\"#000000\" fill-opacity=\"0.35\"/></pattern>\n"
          "</defs>\n", out);
    fprintf(out, "<rect class=\"background\" x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" "
                 "fill=\"#ffffff\"/>\n", width, height);
    fputs("<g font-family=\"sans-serif\" font-size=\"12\" fill=\"#222222\">\n", out);
    fprintf(out, "<text x=\"%d\" y=\"24\" font-size=\"15\">", SVG_LEFT);
    loom_svg_xml_text(out, plan->label[0] ? plan->label : "Loom plan");
    fprintf(out, " - makespan %.3f ms, bubbles %.1f%%, %d stages on %d ranks</text>\n",
            plan->metrics.makespan_ms, plan->metrics.bubble_ratio * 100, g->n_stages,
            g->n_ranks);
    legend(out, plan, st);
    if (agg)
        agg_note(out, plan, st, agg);

    /* Lanes, grid lines, then the stages over them. */
    for (int32_t r = 0; r < g->n_ranks; r++) {
        int y = top + r * (lane + gap);
        fprintf(out, "<text x=\"8\" y=\"%d\">rank %d</text>\n", y + lane / 2 + 4, r);
        fprintf(out, "<rect class=\"lane\" x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%d\" "
                     "fill=\"#f2f2f2\"/>\n", SVG_LEFT, y, plot, lane);
    }
    double step = loom_style_tick_step(span, plot / SVG_TICK_PX);
    for (int i = 1; span > 0 && i * step <= span * (1 + 1e-9); i++) {
        double x = SVG_LEFT + i * step * px_per_ms;
        fprintf(out, "<line class=\"grid\" x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" "
                     "stroke=\"#d8d8d8\"/>\n", x, top - 2, x, axis_y);
    }
    for (int32_t r = 0; r < g->n_ranks; r++) {
        int y = top + r * (lane + gap);
        if (agg) {
            loom_svg_agg_row(out, plan, st, agg, r, y, lane, SVG_LEFT);
            continue;
        }
        for (int32_t i = sc->rank_off[r]; i < sc->rank_off[r + 1]; i++)
            if (!loom_out_fill_hosts(sc, sc->order[i]))
                stage(out, plan, st, sc->order[i], px_per_ms, y, lane);
        /* fills over their hosts: a strip along the lane's bottom third */
        for (int32_t i = sc->rank_off[r]; i < sc->rank_off[r + 1]; i++)
            if (loom_out_fill_hosts(sc, sc->order[i]))
                stage(out, plan, st, sc->order[i], px_per_ms, y + lane - lane / 3, lane / 3);
    }
    /* Rank labels again every SVG_LABEL_EVERY px on wide timelines. */
    for (int x = SVG_LEFT + SVG_LABEL_EVERY; x < SVG_LEFT + plot - 100; x += SVG_LABEL_EVERY)
        for (int32_t r = 0; r < g->n_ranks; r++) {
            int y = top + r * (lane + gap);
            fprintf(out, "<rect class=\"tag\" x=\"%d\" y=\"%d\" width=\"46\" height=\"14\" "
                         "rx=\"3\" fill=\"#ffffff\" fill-opacity=\"0.85\"/>\n"
                         "<text x=\"%d\" y=\"%d\" font-size=\"10\">rank %d</text>\n",
                    x + 2, y + lane / 2 - 7, x + 6, y + lane / 2 + 4, r);
        }

    /* Time axis. */
    fprintf(out, "<line x1=\"%d\" y1=\"%d\" x2=\"%.0f\" y2=\"%d\" stroke=\"#222222\"/>\n",
            SVG_LEFT, axis_y, SVG_LEFT + plot, axis_y);
    for (int i = 0; span > 0 && i * step <= span * (1 + 1e-9); i++) {
        double x = SVG_LEFT + i * step * px_per_ms;
        fprintf(out, "<line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" "
                     "stroke=\"#222222\"/>\n", x, axis_y, x, axis_y + 5);
        fprintf(out, "<text x=\"%.2f\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">"
                     "%g</text>\n", x, axis_y + 17, i * step);
    }
    for (int x = SVG_LEFT; x < SVG_LEFT + plot - 60; x += SVG_LABEL_EVERY)
        fprintf(out, "<text x=\"%d\" y=\"%d\" font-size=\"10\" fill=\"#666666\">time (ms)"
                     "</text>\n", x + (x == SVG_LEFT ? 0 : 8), axis_y + 32);
    fputs("</g>\n</svg>\n", out);
    return LOOM_OK;
}

int loom_write_svg(const loom_plan *plan, FILE *out, loom_error *err)
{
    loom_out_frame frame;
    int rc = loom_out_begin(plan, "timeline.svg", &frame, err);
    loom_style st;
    if (rc == LOOM_OK)
        rc = loom_style_build(plan, &st, err);
    if (rc == LOOM_OK) {
        loom_svg_agg agg;
        int aggregate = plan->graph->n_stages > LOOM_OUT_COMPACT_STAGES;
        rc = write_svg(plan, &st, aggregate ? &agg : NULL, out, err);
        if (aggregate)
            loom_svg_agg_free(&agg);
        loom_style_free(&st);
    }
    return loom_out_end(&frame, out, "timeline.svg", rc, err);
}
