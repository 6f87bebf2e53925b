/* out_style.c - colours, stage compositions and axis ticks shared by the
 * SVG timeline and the HTML report (see out_style.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "out_style.h"

/* Ten well-separated hues (Tableau 10), one per module index. */
static const unsigned char palette[10][3] = {
    {78, 121, 167},  /* blue */
    {242, 142, 43},  /* orange */
    {89, 161, 79},   /* green */
    {225, 87, 89},   /* red */
    {118, 183, 178}, /* teal */
    {176, 122, 161}, /* purple */
    {237, 201, 72},  /* yellow */
    {156, 117, 95},  /* brown */
    {255, 157, 167}, /* pink */
    {186, 176, 172}, /* grey */
};

static const unsigned char other_rgb[3] = {120, 120, 120};

void loom_style_free(loom_style *st)
{
    free(st->used);
    free(st->comp_off);
    free(st->parts);
    free(st->stage_comp);
    memset(st, 0, sizeof *st);
}

/* Appends the parts of partition position p (its spans summed by module,
 * most layers first) to parts[*n]; returns how many it appended (0 when
 * the spans are out of range or name no module). */
static int32_t position_parts(const loom_partition *pt, int32_t n_modules, int32_t p,
                              loom_style_part *parts)
{
    const loom_position *pos = &pt->positions[p];
    if (pos->span_off < 0 || pos->n_spans < 0 || pos->span_off > pt->n_spans ||
        pos->n_spans > pt->n_spans - pos->span_off)
        return 0;
    int32_t n = 0;
    for (int32_t i = 0; i < pos->n_spans; i++) {
        const loom_span *sp = &pt->spans[pos->span_off + i];
        if (sp->module < 0 || sp->module >= n_modules || sp->n_layers <= 0)
            continue;
        int32_t k = 0;
        while (k < n && parts[k].group != sp->module)
            k++;
        if (k == n)
            parts[n++] = (loom_style_part){sp->module, 0};
        parts[k].layers += sp->n_layers;
    }
    /* most layers first; ties keep the order of the spans (stable) */
    for (int32_t i = 1; i < n; i++)
        for (int32_t j = i; j > 0 && parts[j].layers > parts[j - 1].layers; j--) {
            loom_style_part t = parts[j];
            parts[j] = parts[j - 1];
            parts[j - 1] = t;
        }
    return n;
}

/* The partition position a stage runs, or -1 when the partition does not
 * describe it. */
static int32_t stage_position(const loom_partition *pt, const loom_stage_graph *g, int32_t s)
{
    if (!pt || !pt->flows || !pt->positions || !pt->spans)
        return -1;
    int32_t f = g->flow[s], pos = g->position[s];
    if (f < 0 || f >= pt->n_flows || pos < 0 || pos >= pt->flows[f].n_pos)
        return -1;
    int32_t p = pt->flows[f].pos_off + pos;
    return p >= 0 && p < pt->n_positions ? p : -1;
}

int loom_style_build(const loom_plan *plan, loom_style *st, loom_error *err)
{
    memset(st, 0, sizeof *st);
    const loom_stage_graph *g = plan->graph;
    const loom_model *model = plan->problem ? plan->problem->model : NULL;
    for (int32_t s = 0; s < g->n_stages; s++)
        if (g->chunk[s] > st->max_chunk)
            st->max_chunk = g->chunk[s];
    st->stage_comp = malloc(((size_t)g->n_stages + 1) * sizeof *st->stage_comp);
    if (!st->stage_comp)
        goto nomem;
    if (!model || model->n_modules <= 0) {
        /* Stage-times problems: one group and one composition per chunk. */
        st->n_groups = st->n_comps = st->max_chunk + 1;
        st->used = calloc((size_t)st->n_groups, 1);
        st->comp_off = malloc(((size_t)st->n_comps + 1) * sizeof *st->comp_off);
        st->parts = malloc((size_t)st->n_comps * sizeof *st->parts);
        if (!st->used || !st->comp_off || !st->parts)
            goto nomem;
        for (int32_t c = 0; c < st->n_comps; c++) {
            st->comp_off[c] = c;
            st->parts[c] = (loom_style_part){c, 1};
        }
        st->comp_off[st->n_comps] = st->n_comps;
        for (int32_t s = 0; s < g->n_stages; s++) {
            int32_t c = g->chunk[s] > 0 ? g->chunk[s] : 0;
            st->stage_comp[s] = c;
            st->used[c] = 1;
        }
        return LOOM_OK;
    }

    /* Model problems: the partition's positions, then one composition per
     * module (stages the partition does not describe), then "other". */
    const loom_partition *pt = plan->partition;
    int32_t n_mod = model->n_modules, n_pos = pt && pt->positions ? pt->n_positions : 0;
    if (n_pos < 0)
        n_pos = 0;
    size_t n_parts = (size_t)n_mod + 1; /* a position has at most n_mod parts */
    for (int32_t p = 0; p < n_pos; p++) {
        int32_t k = pt->positions[p].n_spans;
        n_parts += (size_t)(k < 0 ? 0 : k < n_mod ? k : n_mod);
    }
    st->by_module = 1;
    st->n_groups = n_mod + 1;
    st->n_comps = n_pos + n_mod + 1;
    st->used = calloc((size_t)st->n_groups, 1);
    st->comp_off = malloc(((size_t)st->n_comps + 1) * sizeof *st->comp_off);
    st->parts = malloc(n_parts * sizeof *st->parts);
    if (!st->used || !st->comp_off || !st->parts)
        goto nomem;
    int32_t n = 0;
    for (int32_t p = 0; p < n_pos; p++) {
        st->comp_off[p] = n;
        n += position_parts(pt, n_mod, p, st->parts + n);
    }
    for (int32_t m = 0; m <= n_mod; m++) {
        st->comp_off[n_pos + m] = n;
        st->parts[n++] = (loom_style_part){m, 1};
    }
    st->comp_off[st->n_comps] = n;
    for (int32_t s = 0; s < g->n_stages; s++) {
        int32_t c = stage_position(pt, g, s);
        if (c < 0 || st->comp_off[c] == st->comp_off[c + 1])
            c = n_pos + (g->module[s] >= 0 && g->module[s] < n_mod ? g->module[s] : n_mod);
        st->stage_comp[s] = c;
        for (int32_t i = st->comp_off[c]; i < st->comp_off[c + 1]; i++)
            st->used[st->parts[i].group] = 1;
    }
    return LOOM_OK;
nomem:
    loom_style_free(st);
    return loom_set_error(err, LOOM_ENOMEM, "outputs: out of memory");
}

void loom_style_group_name(const loom_plan *plan, const loom_style *st, int32_t g,
                           char *buf, size_t size)
{
    if (!st->by_module) {
        snprintf(buf, size, "chunk %d", g);
        return;
    }
    const char *name = loom_out_module_name(plan, g);
    snprintf(buf, size, "%s", name ? name : "other");
}

void loom_style_group_rgb(const loom_style *st, int32_t g, unsigned char rgb[3])
{
    const unsigned char *c = st->by_module && g == st->n_groups - 1 ? other_rgb
                             : palette[(g < 0 ? 0 : g) % 10];
    memcpy(rgb, c, 3);
}

void loom_style_kind_rgb(const unsigned char base[3], int kind, unsigned char out[3])
{
    /* F: 25 % towards white; B: 30 % towards black; I: base; W: 60 % white */
    for (int c = 0; c < 3; c++) {
        int v = base[c];
        switch (kind) {
        case LOOM_STAGE_F: v += (255 - v) * 25 / 100; break;
        case LOOM_STAGE_B: v -= v * 30 / 100; break;
        case LOOM_STAGE_W: v += (255 - v) * 60 / 100; break;
        default: break;
        }
        out[c] = (unsigned char)v;
    }
}

void loom_style_hex(const unsigned char rgb[3], char hex[8])
{
    snprintf(hex, 8, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}

double loom_style_tick_step(double span_ms, double ticks)
{
    if (!(span_ms > 0) || !isfinite(span_ms) || !(ticks >= 1))
        return 1;
    double raw = span_ms / ticks, p = pow(10, floor(log10(raw)));
    double m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

/* qsort order of doubles. */
static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double loom_style_median_ms(const loom_plan *plan)
{
    int32_t n = plan->graph->n_stages;
    if (n <= 0)
        return 0;
    double *d = malloc((size_t)n * sizeof *d);
    if (!d)
        return 0;
    for (int32_t s = 0; s < n; s++)
        d[s] = plan->metrics.end_ms[s] - plan->metrics.start_ms[s];
    qsort(d, (size_t)n, sizeof *d, cmp_double);
    double m = d[n / 2];
    free(d);
    return isfinite(m) && m > 0 ? m : 0;
}
