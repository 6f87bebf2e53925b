/* ab_html.c - the HTML report of `loom ab` (--html FILE): one
 * self-contained page (inline CSS, inline SVG, no script, no network) with
 * the result line, one row per case (A vs B makespan, mean B/A with its
 * 95 % interval, the per-iteration ratios as a small strip chart, bubble,
 * peak memory, MFU, plan time and the verdict), the failures, and every
 * paired iteration per case. Numbers use the "C" locale; a value that is
 * missing or not finite prints as a dash. */
#define _DEFAULT_SOURCE
#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ab.h"

#define GIB 1073741824.0
#define SPARK_W 120
#define SPARK_H 30

/* Writes text escaped for HTML. */
static void h_text(FILE *out, const char *s)
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

/* A number with `decimals` decimals, or a dash when not finite. */
static void h_num(FILE *out, double v, int decimals)
{
    if (isfinite(v))
        fprintf(out, "%.*f", decimals, v);
    else
        fputs("&ndash;", out);
}

static const char *const css =
    "*{box-sizing:border-box}\n"
    "body{font:13px/1.45 system-ui,-apple-system,\"Segoe UI\",Roboto,\"DejaVu Sans\",sans-serif;"
    "margin:0;color:#222;background:#f6f6f4}\n"
    "header{padding:14px 24px 10px;background:#fff;border-bottom:1px solid #ddd}\n"
    "h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:0 0 8px}\n"
    "code{background:#f0f0ee;padding:0 4px;border-radius:3px}\n"
    ".sub{color:#666;margin:0}\n"
    "section{background:#fff;margin:12px 16px;padding:12px 16px;border:1px solid #e2e2e2;"
    "border-radius:6px;overflow-x:auto}\n"
    "table{border-collapse:collapse;font-variant-numeric:tabular-nums}\n"
    "th,td{padding:4px 8px;text-align:right;border-bottom:1px solid #eee;white-space:nowrap;"
    "vertical-align:middle}\n"
    "thead th{background:#f3f3f1;font-weight:600}\n"
    "td.l,th.l{text-align:left}\n"
    ".result{font-weight:700;margin:8px 0 0;padding:6px 10px;border-radius:4px;display:inline-block}\n"
    ".result.pass{background:#e8f5e9;color:#1b5e20}.result.fail{background:#fdecea;color:#b71c1c}\n"
    ".v{display:inline-block;padding:1px 8px;border-radius:10px;font-weight:700;font-size:12px}\n"
    ".v.better{background:#e8f5e9;color:#1b5e20}.v.worse{background:#fdecea;color:#b71c1c}\n"
    ".v.same{background:#eceff1;color:#37474f}.v.error{background:#b71c1c;color:#fff}\n"
    ".up{color:#b71c1c}.down{color:#1b5e20}\n"
    ".flag{color:#c62828;font-weight:700}\n"
    ".note{color:#666;font-size:13px;margin:8px 0 0;white-space:normal}\n"
    "details{margin:6px 0}summary{cursor:pointer;font-weight:600}\n"
    "li{margin:4px 0}\n";

/* The class of a verdict badge. */
static const char *verdict_class(int v)
{
    return v == LOOM_AB_BETTER ? "better" : v == LOOM_AB_WORSE ? "worse"
           : v == LOOM_AB_SAME ? "same" : "error";
}

/* "x → y" with the arrow coloured by the direction of change (lower is
 * better for every figure shown this way but MFU: higher_better). */
static void change(FILE *out, double a, double b, int decimals, const char *unit,
                   int higher_better)
{
    h_num(out, a, decimals);
    fputs(" &rarr; ", out);
    int up = isfinite(a) && isfinite(b) && b > a * (1 + 1e-9);
    int down = isfinite(a) && isfinite(b) && b < a * (1 - 1e-9);
    const char *cls = up ? (higher_better ? "down" : "up") : down ? (higher_better ? "up" : "down")
                                                                  : NULL;
    if (cls)
        fprintf(out, "<span class=\"%s\">", cls);
    h_num(out, b, decimals);
    if (cls)
        fputs("</span>", out);
    fputs(unit, out);
}

/* Mean MFU over the first n results (NAN when unknown). */
static double mean_mfu(const loom_run_output *o, int32_t n)
{
    double sum = 0;
    int32_t k = 0;
    for (int32_t i = 0; i < n && i < o->n_results; i++)
        if (o->results[i].mfu >= 0 && isfinite(o->results[i].mfu)) {
            sum += o->results[i].mfu;
            k++;
        }
    return k ? sum / k : NAN;
}

/* Iterations of the first n results with a rank over the memory cap. */
static int32_t over_cap(const loom_run_output *o, int32_t n)
{
    int32_t k = 0;
    for (int32_t i = 0; i < n && i < o->n_results; i++)
        k += o->results[i].cap_violations > 0;
    return k;
}

/* The per-iteration B/A ratios of a case as a small SVG strip chart: the
 * threshold band around 1, the 95 % interval, one dot per iteration. */
static void spark(FILE *out, const loom_ab_report *r, const loom_ab_case_result *c)
{
    if (c->n_pairs < 1)
        return;
    double lo = 1 - r->threshold, hi = 1 + r->threshold;
    for (int32_t i = 0; i < c->n_pairs; i++) {
        double x = c->b.results[i].makespan_ms / c->a.results[i].makespan_ms;
        if (isfinite(x)) {
            lo = x < lo ? x : lo;
            hi = x > hi ? x : hi;
        }
    }
    double pad = (hi - lo) * 0.15 + 1e-6;
    lo -= pad;
    hi += pad;
#define SY(v) (SPARK_H - 2 - ((v) - lo) / (hi - lo) * (SPARK_H - 4))
    fprintf(out, "<svg width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">"
                 "<title>B/A per iteration: band = 1 &#177; threshold, line = 95 %% interval"
                 "</title>", SPARK_W, SPARK_H, SPARK_W, SPARK_H);
    fprintf(out, "<rect x=\"0\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" fill=\"#eceff1\"/>",
            SY(1 + r->threshold), SPARK_W, SY(1 - r->threshold) - SY(1 + r->threshold));
    fprintf(out, "<line x1=\"0\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#90a4ae\" "
                 "stroke-dasharray=\"3 2\"/>", SPARK_W, SY(1.0), SY(1.0));
    if (isfinite(c->stats.ci_low) && isfinite(c->stats.ci_high))
        fprintf(out, "<rect x=\"0\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" fill=\"#4e79a7\" "
                     "fill-opacity=\"0.25\"/>", SY(c->stats.ci_high), SPARK_W,
                SY(c->stats.ci_low) - SY(c->stats.ci_high) + 1);
    for (int32_t i = 0; i < c->n_pairs; i++) {
        double x = c->b.results[i].makespan_ms / c->a.results[i].makespan_ms;
        if (!isfinite(x))
            continue;
        const char *fill = x < 1 - r->threshold ? "#2e7d32" : x > 1 + r->threshold ? "#c62828"
                                                                                   : "#546e7a";
        fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>",
                4 + (SPARK_W - 8) * (c->n_pairs > 1 ? (double)i / (c->n_pairs - 1) : 0.5),
                SY(x), fill);
    }
#undef SY
    fputs("</svg>", out);
}

/* One row of the cases table. */
static void case_row(FILE *out, const loom_ab_report *r, const loom_ab_case_result *c)
{
    const loom_ab_stats *s = &c->stats;
    int p = c->n_pairs > 0;
    fputs("<tr><td class=\"l\"><b>", out);
    h_text(out, c->name);
    char text[256];
    loom_ab_verdict_text(c, text, sizeof text);
    fprintf(out, "</b></td><td class=\"l\"><span class=\"v %s\">%s</span>",
            verdict_class(s->verdict), loom_ab_verdict_name(s->verdict));
    const char *rest = text + strlen(loom_ab_verdict_name(s->verdict));
    if (*rest) {
        fputs("<br><span class=\"note\">", out);
        h_text(out, rest[0] == ';' ? rest + 2 : rest[0] == ' ' ? rest + 1 : rest);
        fputs("</span>", out);
    }
    fprintf(out, "</td><td>%d</td><td>", c->n_pairs);
    /* an infeasible side's simulated time is no valid makespan */
    if (p && loom_ab_side_infeasible(&c->a, c->n_pairs))
        fputs("INFEASIBLE", out);
    else
        h_num(out, p ? c->sum_a.mean_makespan_ms : NAN, 3);
    fputs("</td><td>", out);
    if (p && loom_ab_side_infeasible(&c->b, c->n_pairs))
        fputs("INFEASIBLE", out);
    else
        h_num(out, p ? c->sum_b.mean_makespan_ms : NAN, 3);
    fputs("</td><td><b>", out);
    h_num(out, p ? s->mean_ratio : NAN, 4);
    fputs("</b></td><td>", out);
    if (p) {
        h_num(out, s->ci_low, 4);
        fputs(" &ndash; ", out);
        h_num(out, s->ci_high, 4);
    } else {
        fputs("&ndash;", out);
    }
    fputs("</td><td>", out);
    spark(out, r, c);
    if (p)
        fprintf(out, "</td><td>%d/%d/%d</td><td>", s->wins, s->losses, s->ties);
    else
        fputs("</td><td>&ndash;</td><td>", out);
    change(out, p ? 100 * c->sum_a.mean_bubble_ratio : NAN,
           p ? 100 * c->sum_b.mean_bubble_ratio : NAN, 2, " %", 0);
    fputs("</td><td>", out);
    change(out, p ? (double)c->sum_a.max_peak_bytes / GIB : NAN,
           p ? (double)c->sum_b.max_peak_bytes / GIB : NAN, 2, "", 0);
    int32_t oa = over_cap(&c->a, c->n_pairs), ob = over_cap(&c->b, c->n_pairs);
    if (oa || ob)
        fprintf(out, " <span class=\"flag\" title=\"iterations with a rank over the memory "
                     "cap, A / B\">over cap %d / %d</span>", oa, ob);
    fputs("</td><td>", out);
    double mfu_a = p ? 100 * mean_mfu(&c->a, c->n_pairs) : NAN;
    double mfu_b = p ? 100 * mean_mfu(&c->b, c->n_pairs) : NAN;
    change(out, mfu_a, mfu_b, 2, isfinite(mfu_a) || isfinite(mfu_b) ? " %" : "", 1);
    fputs("</td><td>", out);
    h_num(out, p ? c->sum_a.mean_plan_time_ms : NAN, 1);
    fputs(" / ", out);
    h_num(out, p ? c->sum_b.mean_plan_time_ms : NAN, 1);
    fputs("</td></tr>\n", out);
}

/* Every paired iteration of one case. */
static void case_details(FILE *out, const loom_ab_case_result *c)
{
    fputs("<details><summary>", out);
    h_text(out, c->name);
    fputs("</summary><p class=\"note\">", out);
    h_text(out, c->problem);
    fputs("</p>\n<table><thead><tr><th>iteration</th><th>A ms</th><th>B ms</th><th>B/A</th>"
          "<th>bubble % A &rarr; B</th><th>peak GiB A &rarr; B</th><th>evaluations A / B</th>"
          "</tr></thead><tbody>\n", out);
    for (int32_t i = 0; i < c->n_pairs; i++) {
        const loom_iter_result *a = &c->a.results[i], *b = &c->b.results[i];
        fprintf(out, "<tr><td>%d</td><td>", a->iteration);
        h_num(out, a->makespan_ms, 3);
        fputs("</td><td>", out);
        h_num(out, b->makespan_ms, 3);
        fputs("</td><td>", out);
        h_num(out, b->makespan_ms / a->makespan_ms, 4);
        fputs("</td><td>", out);
        change(out, 100 * a->bubble_ratio, 100 * b->bubble_ratio, 2, "", 0);
        fputs("</td><td>", out);
        change(out, (double)a->peak_bytes / GIB, (double)b->peak_bytes / GIB, 2, "", 0);
        fprintf(out, "</td><td>%lld / %lld</td></tr>\n", (long long)a->evaluations,
                (long long)b->evaluations);
    }
    fputs("</tbody></table></details>\n", out);
}

int loom_ab_write_html(const loom_ab_report *r, FILE *out, loom_error *err)
{
    locale_t c_loc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    if (!c_loc)
        return loom_set_error(err, LOOM_ENOMEM, "ab report: cannot create the C locale");
    locale_t saved = uselocale(c_loc);
    const char *a = r->name_a && r->name_a[0] ? r->name_a : r->manifest_a;
    const char *b = r->name_b && r->name_b[0] ? r->name_b : r->manifest_b;
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
          "<title>loom ab: ", out);
    h_text(out, a);
    fputs(" vs ", out);
    h_text(out, b);
    fprintf(out, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<header><h1>loom ab: <code>",
            css);
    h_text(out, a);
    fputs("</code> (A) vs <code>", out);
    h_text(out, b);
    fputs("</code> (B)</h1>\n<p class=\"sub\">A: ", out);
    h_text(out, r->manifest_a);
    fputs(" &middot; B: ", out);
    h_text(out, r->manifest_b);
    if (r->suite) {
        fputs(" &middot; suite ", out);
        h_text(out, r->suite);
    }
    fprintf(out, " &middot; threshold %.2f %% &middot; %d bootstrap resamples</p>\n",
            100 * r->threshold, r->resamples);
    int n[4] = {0, 0, 0, 0};
    for (int32_t i = 0; i < r->n_cases; i++) {
        int v = r->cases[i].stats.verdict;
        n[(v >= 0 && v <= 3) ? v : 3]++;
    }
    int code = loom_ab_exit_code(r);
    static const char *const results[] = {"no regression", "regression", "bad input",
                                          "plugin failure"};
    fprintf(out, "<p class=\"result %s\">Result: %s &mdash; %d better, %d same, %d worse, "
                 "%d failed (exit %d)</p>\n</header>\n", code ? "fail" : "pass",
            results[code >= 0 && code <= 3 ? code : 3], n[LOOM_AB_BETTER], n[LOOM_AB_SAME],
            n[LOOM_AB_WORSE], n[LOOM_AB_ERROR], code);

    fputs("<section>\n<h2>Cases</h2>\n<table>\n<thead><tr><th class=\"l\">case</th>"
          "<th class=\"l\">verdict</th><th>pairs</th><th>A makespan ms</th><th>B makespan ms</th><th>mean B/A</th>"
          "<th>95 % CI</th><th>B/A per iteration</th><th>W/L/T</th><th>bubble A &rarr; B</th>"
          "<th>peak GiB A &rarr; B</th><th>MFU A &rarr; B</th><th>plan ms A / B</th>"
          "</tr></thead>\n<tbody>\n", out);
    for (int32_t i = 0; i < r->n_cases; i++)
        case_row(out, r, &r->cases[i]);
    char rule[1024];
    loom_ab_rule_text(r, rule, sizeof rule);
    fputs("</tbody>\n</table>\n<p class=\"note\">B/A is the ratio of simulated iteration times "
          "(makespan) on the same iterations; below 1 B plans faster iterations. <b>Rule:</b> ",
          out);
    h_text(out, rule);
    fputs(" In the strip chart the grey band is 1 &#177; threshold, the blue band the interval, "
          "each dot one iteration. Makespans, bubble, MFU and plan time are means over the "
          "pairs; peak memory is the maximum over ranks and pairs. Arrows: green better, red "
          "worse.</p>\n</section>\n", out);

    int failures = 0;
    char buf[1024];
    for (int32_t i = 0; i < r->n_cases; i++) {
        const loom_ab_case_result *c = &r->cases[i];
        const loom_failure *side[2] = {&c->a.failure, &c->b.failure};
        for (int k = 0; k < 2; k++) {
            if (side[k]->kind == LOOM_FAIL_NONE)
                continue;
            if (!failures++)
                fputs("<section>\n<h2>Failures</h2>\n<ul>\n", out);
            loom_failure_describe(side[k], buf, sizeof buf);
            fputs("<li>case <b>", out);
            h_text(out, c->name);
            fprintf(out, "</b>, %s: ", k ? "B" : "A");
            h_text(out, buf);
            fputs("</li>\n", out);
        }
    }
    if (failures)
        fputs("</ul>\n</section>\n", out);

    fputs("<section>\n<h2>Iterations</h2>\n", out);
    for (int32_t i = 0; i < r->n_cases; i++)
        case_details(out, &r->cases[i]);
    fputs("</section>\n</body>\n</html>\n", out);
    uselocale(saved);
    freelocale(c_loc);
    if (ferror(out))
        return loom_set_error(err, LOOM_EIO, "ab report: writing the HTML report failed");
    return LOOM_OK;
}
