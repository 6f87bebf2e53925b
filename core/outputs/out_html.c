/* out_html.c - report.html: one self-contained page (inline CSS and
 * script, no network) with the plan's summary, its timeline drawn on a
 * canvas from compact JSON embedded in the page (zoom, pan, hover, an
 * overview), and every rank's memory over time against the cap. The
 * summary tables and the legends are plain HTML; the charts need the
 * script (out_html_page.h). Numbers are printed in the "C" locale; a
 * number that is not finite is refused (LOOM_EINVAL) before anything is
 * written. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "out_style.h"
#include "out_html_page.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
#define WHAT "report.html"

static const char *const kind_label[4] = {
    "F forward", "B backward", "I input gradient", "W weight gradient"};

/* ---- checks and printing -------------------------------------------------- */

/* LOOM_EINVAL naming a number that is not finite. */
static int not_finite(loom_error *err, const char *what, int32_t index, double v)
{
    if (index >= 0)
        return loom_set_error(err, LOOM_EINVAL, WHAT ": %s %d is not a finite number (%g); "
                              "refusing to print it", what, index, v);
    return loom_set_error(err, LOOM_EINVAL, WHAT ": %s is not a finite number (%g); refusing "
                          "to print it", what, v);
}

/* Every number the page prints must be finite. */
static int check_numbers(const loom_plan *plan, double cap, loom_error *err)
{
    const loom_stage_graph *g = plan->graph;
    const loom_metrics *m = &plan->metrics;
    if (!isfinite(m->makespan_ms))
        return not_finite(err, "the makespan", -1, m->makespan_ms);
    if (!isfinite(m->bubble_ratio))
        return not_finite(err, "the bubble ratio", -1, m->bubble_ratio);
    if (!isfinite(m->mfu))
        return not_finite(err, "the MFU", -1, m->mfu);
    if (!isfinite(m->hfu))
        return not_finite(err, "the HFU", -1, m->hfu);
    if (!isfinite(plan->plan_time_ms))
        return not_finite(err, "the plan time", -1, plan->plan_time_ms);
    if (!isfinite(cap))
        return not_finite(err, "the memory cap", -1, cap);
    for (int32_t r = 0; r < g->n_ranks; r++)
        if (!isfinite(m->span_ms[r]))
            return not_finite(err, "the span of rank", r, m->span_ms[r]);
    for (int32_t s = 0; s < g->n_stages; s++) {
        if (!isfinite(m->start_ms[s]))
            return not_finite(err, "the start time of stage", s, m->start_ms[s]);
        if (!isfinite(m->end_ms[s]))
            return not_finite(err, "the end time of stage", s, m->end_ms[s]);
    }
    return LOOM_OK;
}

/* Fills busy and recompute (n_ranks each) with every rank's busy and
 * recomputation time; both are printed, so both must be finite. */
static int rank_times(const loom_plan *plan, double *busy, double *recompute, loom_error *err)
{
    const loom_stage_graph *g = plan->graph;
    for (int32_t r = 0; r < g->n_ranks; r++)
        busy[r] = 0;
    for (int32_t s = 0; s < g->n_stages; s++)
        if (!loom_out_fill_hosts(plan->schedule, s))
            busy[g->rank[s]] += plan->metrics.end_ms[s] - plan->metrics.start_ms[s];
    loom_graph_recompute_ms(g, recompute);
    for (int32_t r = 0; r < g->n_ranks; r++) {
        if (!isfinite(busy[r]))
            return not_finite(err, "the busy time of rank", r, busy[r]);
        if (!isfinite(recompute[r]))
            return not_finite(err, "the recomputation time of rank", r, recompute[r]);
    }
    return LOOM_OK;
}

/* Writes text escaped for HTML (element content and quoted attributes). */
static void html_text(FILE *out, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out); break;
        default: fputc(*s, out);
        }
    }
}

/* Writes a JSON string that is safe inside a <script> element: <, > and &
 * are escaped too, so no "</script>" can appear. */
static void json_text(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p < 0x20 || *p == '<' || *p == '>' || *p == '&')
            fprintf(out, "\\u%04x", *p);
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

/* A finite number (checked before): the shortest of %.15g and %.17g that
 * reads back exactly. */
static void num(FILE *out, double v)
{
    char buf[40];
    if (v == 0) {
        fputc('0', out);
        return;
    }
    snprintf(buf, sizeof buf, "%.15g", v);
    if (strtod(buf, NULL) != v)
        snprintf(buf, sizeof buf, "%.17g", v);
    fputs(buf, out);
}

/* The per-rank memory cap in bytes (0: none): the graph's, else the
 * problem's. */
static double memory_cap(const loom_plan *plan)
{
    double cap = plan->graph->memory_cap_bytes;
    if (!(cap > 0) && plan->problem)
        cap = plan->problem->memory_cap_bytes;
    return cap > 0 || !isfinite(cap) ? cap : 0;
}

/* The unit memory is shown in: the largest of bytes, KiB, MiB and GiB
 * that the largest peak (or the cap) reaches. */
typedef struct mem_unit {
    const char *name;
    double div;
    int decimals;
} mem_unit;

static mem_unit memory_unit(const loom_plan *plan, double cap)
{
    double top = cap;
    for (int32_t r = 0; r < plan->graph->n_ranks; r++)
        if ((double)plan->metrics.peak_bytes[r] > top)
            top = (double)plan->metrics.peak_bytes[r];
    if (top >= GIB)
        return (mem_unit){"GiB", GIB, 2};
    if (top >= 1024.0 * 1024.0)
        return (mem_unit){"MiB", 1024.0 * 1024.0, 2};
    if (top >= 1024.0)
        return (mem_unit){"KiB", 1024.0, 2};
    return (mem_unit){"bytes", 1, 0};
}

/* ---- the summary ---------------------------------------------------------- */

/* Opens one key/value pair of the headline grid (closed by kv_end). */
static void kv(FILE *out, const char *key)
{
    fprintf(out, "<span class=\"k\">%s</span><span class=\"v\">", key);
}

/* A key whose long value takes the rest of its row (and wraps inside it
 * rather than running off the card). */
static void kv_wide(FILE *out, const char *key)
{
    fprintf(out, "<span class=\"k wide\">%s</span><span class=\"v wide\">", key);
}

static void kv_end(FILE *out)
{
    fputs("</span>\n", out);
}

/* The headline grid: metrics, then the problem, layout and cap, then what
 * torchtitan and Megatron-LM need. */
static void summary_kv(FILE *out, const loom_plan *plan, double cap, mem_unit mu,
                       const loom_out_exports *x)
{
    const loom_stage_graph *g = plan->graph;
    const loom_metrics *m = &plan->metrics;
    const loom_problem *pb = plan->problem;
    fputs("<div class=\"kv\">\n", out);
    kv(out, "makespan");
    if (m->cap_violations > 0) /* over the cap: no valid makespan */
        fprintf(out, "INFEASIBLE (peak %.3f GiB &gt; cap %.3f GiB; simulated %.3f ms)",
                (double)m->max_peak_bytes / 1073741824.0, g->memory_cap_bytes / 1073741824.0,
                m->makespan_ms);
    else
        fprintf(out, "%.3f ms", m->makespan_ms);
    kv_end(out);
    kv(out, "bubble");
    fprintf(out, "%.2f %%", m->bubble_ratio * 100);
    kv_end(out);
    kv(out, "MFU (model FLOPs)");
    if (m->mfu >= 0)
        fprintf(out, "%.2f %%", m->mfu * 100);
    else
        fputs("n/a", out);
    kv_end(out);
    kv(out, "HFU (with recomputation)");
    if (m->hfu >= 0)
        fprintf(out, "%.2f %%", m->hfu * 100);
    else
        fputs("n/a", out);
    kv_end(out);
    kv(out, "plan time");
    fprintf(out, "%.1f ms (%lld evaluation%s", plan->plan_time_ms, (long long)plan->evaluations,
            plan->evaluations == 1 ? "" : "s");
    if (plan->n_candidates > 1)
        fprintf(out, ", candidate %d of %d", plan->candidate + 1, plan->n_candidates);
    fputc(')', out);
    kv_end(out);
    int over = 0;
    for (int32_t r = 0; r < g->n_ranks; r++)
        over += cap > 0 && (double)m->peak_bytes[r] > cap;
    kv(out, "memory cap");
    if (cap > 0)
        fprintf(out, "%.*f %s per rank, %s%d rank%s over%s", mu.decimals, cap / mu.div, mu.name,
                over ? "<span class=\"flag\">" : "", over, over == 1 ? "" : "s",
                over ? "</span>" : "");
    else
        fputs("none", out);
    kv_end(out);
    if (pb && pb->kind == LOOM_PROBLEM_MODEL) {
        const loom_parallel *pa = &pb->parallel;
        int32_t tp = pa->tp > 0 ? pa->tp : 1, pp = pa->pp > 0 ? pa->pp : g->n_ranks;
        int32_t dp = pa->dp > 0 ? pa->dp : 1;
        kv(out, "parallel layout");
        fprintf(out, "tp %d &middot; pp %d &middot; dp %d", tp, pp, dp);
        if (pa->vpp > 1)
            fprintf(out, " &middot; vpp %d", pa->vpp);
        fprintf(out, " = %lld GPUs", (long long)tp * pp * dp);
        kv_end(out);
        for (int32_t mi = 0; pb->model && mi < pb->model->n_modules; mi++) {
            const loom_module_layout *l = loom_out_layout(plan, mi);
            if (!l)
                break; /* a single-layout plan */
            kv(out, "module layout");
            html_text(out, pb->model->modules[mi].name);
            fprintf(out, ": tp %d &middot; cp %d &middot; pp %d &middot; dp %d, %s, GPUs %d&ndash;%d",
                    l->tp, l->cp, l->pp, l->dp,
                    l->placement == LOOM_LAYOUT_DISJOINT    ? "disjoint"
                    : l->placement == LOOM_LAYOUT_COLOCATED ? "colocated"
                                                               : "top-level",
                    l->first_gpu, l->first_gpu + l->gpus - 1);
            kv_end(out);
        }
        kv(out, "model");
        html_text(out, pb->model && pb->model->name ? pb->model->name : "(unnamed)");
        kv_end(out);
        kv(out, "cluster");
        html_text(out, pb->cluster && pb->cluster->name ? pb->cluster->name : "(unnamed)");
        if (pb->cluster && pb->cluster->gpus_per_node > 0)
            fprintf(out, ", %d GPUs per node", pb->cluster->gpus_per_node);
        if (pb->cluster && pb->cluster->hbm_bytes > 0)
            fprintf(out, ", %.0f GiB HBM", (double)pb->cluster->hbm_bytes / GIB);
        kv_end(out);
    } else {
        kv(out, "problem");
        fputs("stage times", out);
        kv_end(out);
    }
    kv(out, "stages");
    fprintf(out, "%d on %d ranks, %d microbatches", g->n_stages, g->n_ranks,
            g->n_microbatches);
    kv_end(out);
    if (plan->partition && plan->partition->label[0]) {
        kv(out, "partition");
        html_text(out, plan->partition->label);
        kv_end(out);
    }
    kv_wide(out, "torchtitan");
    if (!x->csv_ok)
        fputs("schedule.csv not written (plan.json: schedule_csv.reason); ", out);
    if (x->placement.style && g->n_ranks == 1)
        fprintf(out, "no pipeline: the whole model on one rank, %d microbatches a "
                     "step", x->microbatches);
    else if (x->placement.style)
        fprintf(out, "%s style &middot; pipeline_parallel_schedule %s &middot; "
                     "pipeline_parallel_schedule_csv schedule.csv &middot; %d microbatches",
                x->placement.style, x->placement.schedule, x->microbatches);
    else
        fputs("no placement style fits (plan.json: placement.reason)", out);
    kv_end(out);
    if (x->megatron) {
        kv_wide(out, "Megatron layout");
        html_text(out, x->megatron);
        kv_end(out);
    }
    fputs("</div>\n", out);
}

/* The per-rank table: span, busy, idle, recomputation, peak memory
 * against the cap; busy and recompute as rank_times computed them. */
static void summary_ranks(FILE *out, const loom_plan *plan, double cap, mem_unit mu,
                          const double *busy, const double *recompute)
{
    const loom_stage_graph *g = plan->graph;
    const loom_metrics *m = &plan->metrics;
    fprintf(out, "<table class=\"ranks\">\n<thead><tr><th>rank</th><th>span ms</th>"
                 "<th>busy ms</th><th>idle %%</th><th>recompute ms</th><th>static %s</th>"
                 "<th>peak %s</th>", mu.name, mu.name);
    if (cap > 0)
        fputs("<th class=\"l\">peak of cap</th>", out);
    fputs("</tr></thead>\n<tbody>\n", out);
    for (int32_t r = 0; r < g->n_ranks; r++) {
        double peak = (double)m->peak_bytes[r];
        int over = cap > 0 && peak > cap;
        double idle = m->makespan_ms > 0 ? 100.0 * (1.0 - busy[r] / m->makespan_ms) : 0;
        double stat = g->static_bytes ? (double)g->static_bytes[r] : 0;
        fprintf(out, "<tr%s><td>%d</td><td>%.3f</td><td>%.3f</td><td>%.2f</td><td>%.3f</td>"
                     "<td>%.*f</td><td>%.*f</td>", over ? " class=\"over\"" : "", r,
                m->span_ms[r], busy[r], idle, recompute[r], mu.decimals, stat / mu.div,
                mu.decimals, peak / mu.div);
        if (cap > 0) {
            double share = peak / cap * 100;
            fprintf(out, "<td class=\"l\"><span class=\"meter%s\"><i style=\"width:%.1f%%\">"
                         "</i></span>%.1f %%%s</td>", over ? " over" : "",
                    share > 100 ? 100.0 : share, share,
                    over ? " <span class=\"flag\">OVER CAP</span>" : "");
        }
        fputs("</tr>\n", out);
    }
    fputs("</tbody>\n</table>\n", out);
}

/* ---- legends and the embedded data ----------------------------------------- */

/* The module (or chunk) and kind legends, as HTML. */
static void legends(FILE *out, const loom_plan *plan, const loom_style *st)
{
    char name[96], hex[8];
    unsigned char base[3], rgb[3];
    fprintf(out, "<div class=\"legend\" id=\"legend-groups\"><b>%s</b>",
            st->by_module ? "modules" : "chunks");
    for (int32_t gi = 0; gi < st->n_groups; gi++) {
        if (!st->used[gi])
            continue;
        loom_style_group_rgb(st, gi, base);
        loom_style_kind_rgb(base, LOOM_STAGE_F, rgb);
        loom_style_hex(rgb, hex);
        loom_style_group_name(plan, st, gi, name, sizeof name);
        fprintf(out, "<span><span class=\"sw\" style=\"background-color:%s\"></span>", hex);
        html_text(out, name);
        fputs("</span>", out);
    }
    fputs("</div>\n<div class=\"legend\" id=\"legend-kinds\"><b>kinds</b>", out);
    const loom_stage_graph *g = plan->graph;
    int present[4] = {0, 0, 0, 0};
    for (int32_t s = 0; s < g->n_stages; s++)
        if (g->kind[s] < 4)
            present[g->kind[s]] = 1;
    static const unsigned char grey[3] = {120, 120, 120};
    for (int k = 0; k < 4; k++) {
        if (!present[k])
            continue;
        loom_style_kind_rgb(grey, k, rgb);
        loom_style_hex(rgb, hex);
        fprintf(out, "<span><span class=\"sw%s\" style=\"background-color:%s\"></span>%s</span>",
                k == LOOM_STAGE_I ? " hl" : k == LOOM_STAGE_W ? " hd" : "", hex, kind_label[k]);
    }
    fputs("<span>number: microbatch", out);
    if (st->max_chunk > 0)
        fputs(" and chunk (c1)", out);
    if (st->by_module && st->max_chunk > 0)
        fprintf(out, "; dark strip at the bottom: chunk %s%d%s", st->max_chunk > 1 ? "1&ndash;" : "",
                st->max_chunk, st->max_chunk > 1 ? ", darker = later" : "");
    fputs("</span></div>\n", out);
}

/* An array of one int32 field of the stages in schedule order: map[s]
 * with a map, else v[s], else the stage id s itself. */
static void stage_ints(FILE *out, const loom_plan *plan, const char *key, const int32_t *v,
                       const int32_t *map)
{
    const loom_schedule *sc = plan->schedule;
    fprintf(out, ",\n\"%s\":[", key);
    for (int32_t i = 0; i < sc->rank_off[sc->n_ranks]; i++) {
        int32_t s = sc->order[i];
        fprintf(out, "%s%s%d", i ? "," : "", i && i % 32 == 0 ? "\n" : "",
                map ? map[s] : v ? v[s] : s);
    }
    fputc(']', out);
}

/* An array of stage times in schedule order. */
static void stage_times(FILE *out, const loom_plan *plan, const char *key, const double *v)
{
    const loom_schedule *sc = plan->schedule;
    fprintf(out, ",\n\"%s\":[", key);
    for (int32_t i = 0; i < sc->rank_off[sc->n_ranks]; i++) {
        fputs(i ? (i % 16 == 0 ? ",\n" : ",") : "", out);
        num(out, v[sc->order[i]]);
    }
    fputc(']', out);
}

/* The plan as the page's script reads it (docs/outputs.md, report.html). */
static void data_json(FILE *out, const loom_plan *plan, const loom_style *st, double cap,
                      mem_unit mu)
{
    const loom_stage_graph *g = plan->graph;
    const loom_schedule *sc = plan->schedule;
    const loom_metrics *m = &plan->metrics;
    int32_t n = sc->rank_off[sc->n_ranks];
    fputs("{\"loom_report\":1,\"label\":", out);
    json_text(out, plan->label);
    fputs(",\"makespan\":", out);
    num(out, m->makespan_ms);
    fprintf(out, ",\"ranks\":%d,\"cap\":", g->n_ranks);
    if (cap > 0)
        num(out, cap);
    else
        fputs("null", out);
    fprintf(out, ",\"maxChunk\":%d,\"byModule\":%s,\"memUnit\":\"%s\",\"memDiv\":%.0f,"
                 "\n\"stat\":[", st->max_chunk, st->by_module ? "true" : "false", mu.name, mu.div);
    for (int32_t r = 0; r < g->n_ranks; r++)
        fprintf(out, "%s%lld", r ? "," : "", g->static_bytes ? (long long)g->static_bytes[r] : 0);
    fputs("],\n\"peak\":[", out);
    for (int32_t r = 0; r < g->n_ranks; r++)
        fprintf(out, "%s%lld", r ? "," : "", (long long)m->peak_bytes[r]);
    fputs("],\n\"groups\":[", out);
    char name[96], hex[8];
    for (int32_t gi = 0; gi < st->n_groups; gi++) {
        unsigned char base[3], rgb[3];
        loom_style_group_rgb(st, gi, base);
        loom_style_group_name(plan, st, gi, name, sizeof name);
        fputs(gi ? ",\n{\"name\":" : "\n{\"name\":", out);
        json_text(out, name);
        fputs(",\"k\":[", out);
        for (int k = 0; k < 4; k++) {
            loom_style_kind_rgb(base, k, rgb);
            loom_style_hex(rgb, hex);
            fprintf(out, "%s\"%s\"", k ? "," : "", hex);
        }
        fputs("]}", out);
    }
    fputs("],\n\"comps\":[", out);
    for (int32_t c = 0; c < st->n_comps; c++) {
        fputs(c ? (c % 16 == 0 ? ",\n[" : ",[") : "[", out);
        for (int32_t i = st->comp_off[c]; i < st->comp_off[c + 1]; i++)
            fprintf(out, "%s%d,%d", i > st->comp_off[c] ? "," : "", st->parts[i].group,
                    st->parts[i].layers);
        fputc(']', out);
    }
    fputs("],\n\"off\":[", out);
    for (int32_t r = 0; r <= sc->n_ranks; r++)
        fprintf(out, "%s%d", r ? "," : "", sc->rank_off[r]);
    fputc(']', out);
    stage_ints(out, plan, "id", NULL, NULL);
    fputs(",\n\"k\":\"", out);
    for (int32_t i = 0; i < n; i++)
        fputc(loom_out_kind_char(g->kind[sc->order[i]]), out);
    fputs("\",\n\"p\":\"", out);
    for (int32_t i = 0; i < n; i++) {
        int p = loom_out_stage_policy(g, sc->order[i]);
        fputc(p == LOOM_POLICY_NONE ? 'n' : p == LOOM_POLICY_SELECTIVE ? 's'
              : p == LOOM_POLICY_FULL ? 'f' : p == LOOM_POLICY_OFFLOAD ? 'o'
              : p == LOOM_OUT_POLICY_MIXED ? 'm' : '?', out);
    }
    fputc('"', out);
    stage_ints(out, plan, "c", NULL, st->stage_comp);
    stage_ints(out, plan, "ch", g->chunk, NULL);
    stage_ints(out, plan, "mb", g->microbatch, NULL);
    int subs = 0;
    for (int32_t s = 0; s < g->n_stages && !subs; s++)
        subs = g->sub[s] != 0;
    if (subs)
        stage_ints(out, plan, "sub", g->sub, NULL);
    stage_times(out, plan, "t0", m->start_ms);
    stage_times(out, plan, "t1", m->end_ms);
    int fills = 0;
    for (int32_t i = 0; i < n && !fills; i++)
        fills = loom_out_fill_hosts(sc, sc->order[i]) > 0;
    if (fills) { /* stages run inside the next fl[i] ones (docs/outputs.md) */
        fputs(",\n\"fl\":[", out);
        for (int32_t i = 0; i < n; i++)
            fprintf(out, "%s%d", i ? (i % 32 == 0 ? ",\n" : ",") : "",
                    loom_out_fill_hosts(sc, sc->order[i]));
        fputc(']', out);
    }
    fputs(",\n\"d\":[", out);
    for (int32_t i = 0; i < n; i++)
        fprintf(out, "%s%lld", i ? (i % 16 == 0 ? ",\n" : ",") : "",
                (long long)g->mem_delta_bytes[sc->order[i]]);
    fputs("]}", out);
}

/* ---- the page ------------------------------------------------------------------ */

static void write_page(const loom_plan *plan, const loom_style *st, double cap, FILE *out,
                       double *scratch, const loom_out_exports *x)
{
    const loom_stage_graph *g = plan->graph;
    const char *label = plan->label[0] ? plan->label : "(unlabelled)";
    fputs("<!DOCTYPE html>\n<html lang=\"en\" data-loom-report=\"loading\">\n<head>\n"
          "<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
          "<meta name=\"generator\" content=\"Loom\">\n<title>Loom plan: ", out);
    html_text(out, label);
    fputs("</title>\n<script>\nwindow.onerror = function (msg, src, line) {\n"
          "  document.documentElement.setAttribute('data-loom-report', 'error');\n"
          "  document.title = 'LOOM REPORT ERROR: ' + msg + ' (line ' + line + ')';\n"
          "  var e = document.getElementById('loom-error');\n"
          "  if (e) { e.textContent = 'The report script failed: ' + msg + ' (line ' + line + ')';"
          " e.hidden = false; }\n};\n</script>\n<style>\n", out);
    for (size_t i = 0; i < sizeof loom_html_css / sizeof loom_html_css[0]; i++)
        fputs(loom_html_css[i], out);
    fputs("</style>\n</head>\n<body>\n<p id=\"loom-error\" class=\"error\" hidden></p>\n"
          "<header><h1>Loom plan: ", out);
    html_text(out, label);
    if (plan->metrics.cap_violations > 0)
        fprintf(out, "</h1>\n<p class=\"sub\">INFEASIBLE: over the memory cap on %d rank%s "
                     "&middot; bubble %.2f %% &middot; %d stages on %d ranks</p></header>\n",
                plan->metrics.cap_violations, plan->metrics.cap_violations == 1 ? "" : "s",
                plan->metrics.bubble_ratio * 100, g->n_stages, g->n_ranks);
    else
        fprintf(out, "</h1>\n<p class=\"sub\">makespan %.3f ms &middot; bubble %.2f %% "
                     "&middot; %d stages on %d ranks</p></header>\n",
                plan->metrics.makespan_ms, plan->metrics.bubble_ratio * 100, g->n_stages,
                g->n_ranks);
    fputs("<noscript><p class=\"error\">The timeline and the memory chart are drawn by the "
          "page's script; timeline.svg beside this file shows the timeline without it."
          "</p></noscript>\n", out);

    fputs("<section id=\"summary\">\n<h2>Summary</h2>\n", out);
    mem_unit mu = memory_unit(plan, cap);
    summary_kv(out, plan, cap, mu, x);
    fputs("<h3>Per rank</h3>\n", out);
    summary_ranks(out, plan, cap, mu, scratch, scratch + g->n_ranks);
    fputs("</section>\n", out);

    fputs("<section id=\"timeline\">\n<h2>Timeline</h2>\n", out);
    legends(out, plan, st);
    fputs("<div class=\"controls\"><button id=\"zfit\" type=\"button\">fit</button>"
          "<button id=\"zout\" type=\"button\">&minus;</button>"
          "<button id=\"zin\" type=\"button\">+</button>"
          "<button id=\"zread\" type=\"button\">readable</button>"
          "<span id=\"zoom\"></span><span>&middot; drag or scroll sideways to pan, "
          "Ctrl+wheel to zoom, click the overview to jump, hover a stage for details</span>"
          "</div>\n<canvas id=\"ov\" height=\"40\"></canvas>\n"
          "<canvas id=\"tl\" height=\"200\"></canvas>\n"
          "<div id=\"tl-bar\"><div id=\"tl-spacer\"></div></div>\n</section>\n", out);

    fputs("<section id=\"memory\">\n<h2>Memory per rank</h2>\n<p class=\"note\">Static "
          "memory (parameters, gradients, optimizer state) plus the activations each rank "
          "holds: allocated when a forward stage starts, released when its backward ends. "
          "Hover for values; click to show that moment in the timeline.</p>\n"
          "<canvas id=\"mem\" height=\"260\"></canvas>\n"
          "<div class=\"legend\" id=\"mem-legend\"></div>\n</section>\n", out);
    fputs("<footer>Written by Loom. Times in ms; memory in binary units (1 KiB = 1024 bytes, "
          "1 GiB = 2<sup>30</sup> bytes). "
          "plan.json beside this file has every number of this page.</footer>\n"
          "<div id=\"tip\"></div>\n<script type=\"application/json\" id=\"loom-data\">\n", out);
    data_json(out, plan, st, cap, mu);
    fputs("\n</script>\n<script>\n", out);
    for (size_t i = 0; i < sizeof loom_html_js / sizeof loom_html_js[0]; i++)
        fputs(loom_html_js[i], out);
    fputs("</script>\n</body>\n</html>\n", out);
}

int loom_write_html_report(const loom_plan *plan, FILE *out, loom_error *err)
{
    loom_out_frame frame;
    int rc = loom_out_begin(plan, WHAT, &frame, err);
    double cap = 0;
    if (rc == LOOM_OK) {
        cap = memory_cap(plan);
        rc = check_numbers(plan, cap, err);
    }
    loom_style st;
    int styled = 0;
    if (rc == LOOM_OK) {
        rc = loom_style_build(plan, &st, err);
        styled = rc == LOOM_OK;
    }
    double *scratch = NULL;
    if (rc == LOOM_OK) {
        scratch = malloc(2 * ((size_t)plan->graph->n_ranks + 1) * sizeof *scratch);
        if (!scratch)
            rc = loom_set_error(err, LOOM_ENOMEM, WHAT ": out of memory");
        else
            rc = rank_times(plan, scratch, scratch + plan->graph->n_ranks, err);
    }
    loom_out_exports x = {0};
    if (rc == LOOM_OK)
        rc = loom_out_exports_find(plan, WHAT, &x, err);
    if (rc == LOOM_OK)
        write_page(plan, &st, cap, out, scratch, &x);
    loom_out_exports_free(&x);
    free(scratch);
    if (styled)
        loom_style_free(&st);
    return loom_out_end(&frame, out, WHAT, rc, err);
}
