/* out_svg.c - a static SVG 1.1 timeline of a plan: one lane per rank, one
 * rectangle per stage (F, B, I, W in distinct hues, lighter for later
 * microbatches), a time axis in milliseconds and a legend. No scripts. */
#include <math.h>
#include "output.h"

#define SVG_WIDTH 1200
#define SVG_LEFT 80   /* lane labels */
#define SVG_RIGHT 24
#define SVG_TOP 44    /* title */
#define SVG_LANE 26   /* lane height, px */
#define SVG_GAP 6     /* between lanes, px */
#define SVG_SHADES 5  /* microbatch shades per kind */

/* Base colours of F, B, I, W. */
static const unsigned char kind_rgb[4][3] = {
    {31, 119, 180}, /* F blue */
    {214, 39, 40},  /* B red */
    {255, 127, 14}, /* I orange */
    {44, 160, 44},  /* W green */
};

static const char *const kind_label[4] = {
    "F forward", "B backward", "I input gradient", "W weight gradient"};

/* Writes text with XML special characters escaped. */
static void xml_text(FILE *out, const char *s)
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

/* Fill colour of a stage: its kind's hue mixed with white by microbatch. */
static void fill(FILE *out, int kind, int32_t microbatch)
{
    int k = kind >= 0 && kind < 4 ? kind : 0;
    int shade = (int)(microbatch % SVG_SHADES);
    if (shade < 0)
        shade += SVG_SHADES;
    fputc('#', out);
    for (int c = 0; c < 3; c++) {
        int v = kind_rgb[k][c];
        v += (255 - v) * shade * 11 / 100; /* up to 44% lighter */
        fprintf(out, "%02x", v);
    }
}

/* A tick step of 1, 2 or 5 times a power of ten giving ~10 ticks. */
static double tick_step(double span_ms)
{
    if (!(span_ms > 0))
        return 1;
    double raw = span_ms / 10, p = pow(10, floor(log10(raw)));
    double m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

/* Writes the whole SVG document. */
static int write_svg(const loom_plan *plan, FILE *out)
{
    const loom_stage_graph *g = plan->graph;
    const loom_schedule *sc = plan->schedule;
    const double *start = plan->metrics.start_ms, *end = plan->metrics.end_ms;
    double span = plan->metrics.makespan_ms;
    for (int32_t s = 0; s < g->n_stages; s++)
        if (end[s] > span)
            span = end[s];
    double plot = SVG_WIDTH - SVG_LEFT - SVG_RIGHT;
    double px_per_ms = span > 0 ? plot / span : 0;
    int axis_y = SVG_TOP + g->n_ranks * (SVG_LANE + SVG_GAP);
    int legend_y = axis_y + 44;
    int height = legend_y + 30;

    fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
                 "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n",
            SVG_WIDTH, height, SVG_WIDTH, height);
    fputs("<title>Loom plan ", out);
    xml_text(out, plan->label);
    fputs("</title>\n", out);
    fprintf(out, "<rect class=\"background\" x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" "
                 "fill=\"#ffffff\"/>\n", SVG_WIDTH, height);
    fputs("<g font-family=\"sans-serif\" font-size=\"12\" fill=\"#222222\">\n", out);
    fprintf(out, "<text x=\"%d\" y=\"24\" font-size=\"15\">", SVG_LEFT);
    xml_text(out, plan->label[0] ? plan->label : "Loom plan");
    fprintf(out, " - makespan %.3f ms, bubbles %.1f%%</text>\n",
            plan->metrics.makespan_ms, plan->metrics.bubble_ratio * 100);

    /* Lanes and stages. */
    for (int32_t r = 0; r < g->n_ranks; r++) {
        int y = SVG_TOP + r * (SVG_LANE + SVG_GAP);
        fprintf(out, "<text x=\"8\" y=\"%d\">rank %d</text>\n", y + SVG_LANE / 2 + 4, r);
        fprintf(out, "<rect class=\"lane\" x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%d\" "
                     "fill=\"#f2f2f2\"/>\n", SVG_LEFT, y, plot, SVG_LANE);
        for (int32_t i = sc->rank_off[r]; i < sc->rank_off[r + 1]; i++) {
            int32_t s = sc->order[i];
            double x = SVG_LEFT + start[s] * px_per_ms;
            double w = (end[s] - start[s]) * px_per_ms;
            fprintf(out, "<rect class=\"stage\" x=\"%.2f\" y=\"%d\" width=\"%.2f\" "
                         "height=\"%d\" fill=\"", x, y, w > 0.2 ? w : 0.2, SVG_LANE);
            fill(out, g->kind[s], g->microbatch[s]);
            fprintf(out, "\" stroke=\"#ffffff\" stroke-width=\"0.5\"><title>%c mb%d",
                    loom_out_kind_char(g->kind[s]), g->microbatch[s]);
            if (g->sub[s])
                fprintf(out, ".%d", g->sub[s]);
            fprintf(out, " chunk %d", g->chunk[s]);
            const char *module = loom_out_module_name(plan, g->module[s]);
            if (module) {
                fputc(' ', out);
                xml_text(out, module);
            }
            fprintf(out, " (stage %d): %.3f-%.3f ms, policy %s</title></rect>\n", s,
                    start[s], end[s], loom_out_policy_name(loom_out_stage_policy(g, s)));
            if (w >= 16)
                fprintf(out, "<text x=\"%.2f\" y=\"%d\" font-size=\"10\" "
                             "text-anchor=\"middle\">%d</text>\n",
                        x + w / 2, y + SVG_LANE / 2 + 4, g->microbatch[s]);
        }
    }

    /* Time axis. */
    fprintf(out, "<line x1=\"%d\" y1=\"%d\" x2=\"%.0f\" y2=\"%d\" stroke=\"#222222\"/>\n",
            SVG_LEFT, axis_y, SVG_LEFT + plot, axis_y);
    double step = tick_step(span);
    for (int i = 0; span > 0 && i * step <= span * (1 + 1e-9); i++) {
        double x = SVG_LEFT + i * step * px_per_ms;
        fprintf(out, "<line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" "
                     "stroke=\"#222222\"/>\n", x, axis_y, x, axis_y + 5);
        fprintf(out, "<text x=\"%.2f\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">"
                     "%g</text>\n", x, axis_y + 17, i * step);
    }
    fprintf(out, "<text x=\"%.0f\" y=\"%d\" font-size=\"10\" text-anchor=\"end\">time (ms)"
                 "</text>\n", SVG_LEFT + plot, axis_y + 30);

    /* Legend: the kinds present, then the shading rule. */
    int present[4] = {0, 0, 0, 0};
    for (int32_t s = 0; s < g->n_stages; s++)
        if (g->kind[s] < 4)
            present[g->kind[s]] = 1;
    int x = SVG_LEFT;
    for (int k = 0; k < 4; k++) {
        if (!present[k])
            continue;
        fprintf(out, "<rect class=\"legend\" x=\"%d\" y=\"%d\" width=\"14\" height=\"14\" "
                     "fill=\"", x, legend_y - 11);
        fill(out, k, 0);
        fprintf(out, "\"/>\n<text x=\"%d\" y=\"%d\">%s</text>\n", x + 20, legend_y,
                kind_label[k]);
        x += 150;
    }
    fprintf(out, "<text x=\"%d\" y=\"%d\" fill=\"#666666\">shade: microbatch mod %d "
                 "(lighter = higher); number: microbatch</text>\n", x, legend_y, SVG_SHADES);
    fputs("</g>\n</svg>\n", out);
    return LOOM_OK;
}

int loom_write_svg(const loom_plan *plan, FILE *out, loom_error *err)
{
    loom_out_frame frame;
    int rc = loom_out_begin(plan, "timeline.svg", &frame, err);
    if (rc == LOOM_OK)
        rc = write_svg(plan, out);
    return loom_out_end(&frame, out, "timeline.svg", rc, err);
}
