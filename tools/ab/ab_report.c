/* ab_report.c - the reports of `loom ab`: a Markdown table for CI job
 * summaries, a JSON document (byte-identical for the same inputs: no
 * timings unless asked) and JUnit XML. Numbers use the "C" locale. */
#define _DEFAULT_SOURCE
#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ab.h"

/* The calling thread's locale switched to "C" for numbers. */
typedef struct c_frame {
    locale_t c;
    locale_t saved;
} c_frame;

/* Switches numbers to the "C" locale. */
static int frame_begin(c_frame *f, loom_error *err)
{
    f->saved = (locale_t)0;
    f->c = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    if (!f->c)
        return loom_set_error(err, LOOM_ENOMEM, "ab report: cannot create the C locale");
    f->saved = uselocale(f->c);
    return LOOM_OK;
}

/* Restores the locale; a stream error becomes LOOM_EIO. */
static int frame_end(c_frame *f, FILE *out, const char *what, loom_error *err)
{
    uselocale(f->saved);
    freelocale(f->c);
    if (ferror(out))
        return loom_set_error(err, LOOM_EIO, "ab report: writing the %s report failed", what);
    return LOOM_OK;
}

/* ---- shared helpers ---------------------------------------------------- */

/* Description of the failure of one side, or NULL. */
static const char *failure_text(const loom_failure *f, char *buf, size_t size)
{
    if (f->kind == LOOM_FAIL_NONE)
        return NULL;
    loom_failure_describe(f, buf, size);
    return buf;
}

static const char *const phase_names[] = {"open", "iteration", "after"};

/* ---- Markdown ------------------------------------------------------------ */

/* Writes text with Markdown table metacharacters escaped. */
static void md_text(FILE *out, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '|' || *s == '`' || *s == '*' || *s == '_' || *s == '<' || *s == '\\')
            fputc('\\', out);
        fputc(*s == '\n' ? ' ' : *s, out);
    }
}

/* Writes text for a code span: backticks become quotes, no escapes. */
static void md_code(FILE *out, const char *s)
{
    for (; s && *s; s++)
        fputc(*s == '`' ? '\'' : *s == '\n' ? ' ' : *s, out);
}

/* One table row. */
static void md_row(FILE *out, const loom_ab_case_result *c)
{
    const loom_ab_stats *s = &c->stats;
    fputs("| ", out);
    md_text(out, c->name);
    fprintf(out, " | %d |", c->n_pairs);
    if (c->n_pairs > 0) {
        /* an infeasible side's simulated time is no valid makespan */
        const loom_run_output *side[2] = {&c->a, &c->b};
        const double mean[2] = {c->sum_a.mean_makespan_ms, c->sum_b.mean_makespan_ms};
        for (int k = 0; k < 2; k++)
            if (loom_ab_side_infeasible(side[k], c->n_pairs))
                fprintf(out, " INFEASIBLE (over the memory cap; simulated %.3f) |", mean[k]);
            else
                fprintf(out, " %.3f |", mean[k]);
        fprintf(out, " %.4f | %.4f | %.4f – %.4f | %d/%d/%d |", s->mean_ratio,
                s->median_ratio, s->ci_low, s->ci_high, s->wins, s->losses, s->ties);
        fprintf(out, " %.2f %% → %.2f %% | %.2f → %.2f | %.1f / %.1f |",
                100 * c->sum_a.mean_bubble_ratio, 100 * c->sum_b.mean_bubble_ratio,
                (double)c->sum_a.max_peak_bytes / 1073741824.0,
                (double)c->sum_b.max_peak_bytes / 1073741824.0, c->sum_a.mean_plan_time_ms,
                c->sum_b.mean_plan_time_ms);
    } else {
        fputs(" – | – | – | – | – | – | – | – | – |", out);
    }
    char text[256];
    loom_ab_verdict_text(c, text, sizeof text);
    const char *rest = text + strlen(loom_ab_verdict_name(s->verdict));
    fprintf(out, " **%s**", loom_ab_verdict_name(s->verdict));
    md_text(out, rest);
    fputs(" |\n", out);
}

/* Counts of each verdict. */
static void count_verdicts(const loom_ab_report *r, int n[4])
{
    n[0] = n[1] = n[2] = n[3] = 0;
    for (int32_t i = 0; i < r->n_cases; i++) {
        int v = r->cases[i].stats.verdict;
        n[(v >= 0 && v <= 3) ? v : 3]++;
    }
}

/* Cases that fail the run as regressions: verdict worse, or a memory
 * verdict (when asked for) worse. */
static int count_regressions(const loom_ab_report *r)
{
    int k = 0;
    for (int32_t i = 0; i < r->n_cases; i++) {
        const loom_ab_stats *s = &r->cases[i].stats;
        k += s->verdict == LOOM_AB_WORSE ||
             (s->verdict != LOOM_AB_ERROR && s->memory_verdict == LOOM_AB_WORSE);
    }
    return k;
}

/* Cases whose memory verdict is worse (0 when none was asked for). */
static int count_memory_worse(const loom_ab_report *r)
{
    int k = 0;
    for (int32_t i = 0; i < r->n_cases; i++)
        k += r->cases[i].stats.verdict != LOOM_AB_ERROR &&
             r->cases[i].stats.memory_verdict == LOOM_AB_WORSE;
    return k;
}

int loom_ab_write_markdown(const loom_ab_report *r, FILE *out, loom_error *err)
{
    c_frame f;
    int rc = frame_begin(&f, err);
    if (rc != LOOM_OK)
        return rc;
    fputs("## loom ab: `", out);
    md_code(out, r->name_a && r->name_a[0] ? r->name_a : r->manifest_a);
    fputs("` (A) vs `", out);
    md_code(out, r->name_b && r->name_b[0] ? r->name_b : r->manifest_b);
    fputs("` (B)\n\n", out);
    char rule[1024];
    loom_ab_rule_text(r, rule, sizeof rule);
    fputs("B/A is the ratio of simulated iteration times (makespan) on the same iterations; "
          "below 1 B plans faster iterations. W/L/T counts iterations where B is better / worse "
          "/ within the threshold.\n\n**Rule:** ", out);
    md_text(out, rule);
    fputs("\n\n", out);
    fputs("| case | pairs | A makespan ms | B makespan ms | mean B/A | median B/A | 95 % CI "
          "| W/L/T | bubble A → B | peak GiB A → B | plan ms A / B | verdict |\n",
          out);
    fputs("|:---|---:|---:|---:|---:|---:|:---:|:---:|:---:|:---:|:---:|:---|\n", out);
    for (int32_t i = 0; i < r->n_cases; i++)
        md_row(out, &r->cases[i]);
    int failures = 0;
    char buf[1024];
    for (int32_t i = 0; i < r->n_cases; i++) {
        const loom_ab_case_result *c = &r->cases[i];
        const loom_failure *side[2] = {&c->a.failure, &c->b.failure};
        for (int k = 0; k < 2; k++) {
            if (!failure_text(side[k], buf, sizeof buf))
                continue;
            if (!failures++)
                fputs("\n### Failures\n\n", out);
            fputs("- case `", out);
            md_code(out, c->name);
            fprintf(out, "`, %s: ", k ? "B" : "A");
            md_text(out, buf);
            fputc('\n', out);
        }
    }
    int n[4];
    count_verdicts(r, n);
    int code = loom_ab_exit_code(r);
    static const char *const results[] = {"no regression", "regression", "bad input",
                                          "plugin failure"};
    fprintf(out, "\n**Result: %s** — %d better, %d same, %d worse, %d failed", results[code],
            n[LOOM_AB_BETTER], n[LOOM_AB_SAME], n[LOOM_AB_WORSE], n[LOOM_AB_ERROR]);
    if (r->memory_threshold >= 0)
        fprintf(out, "; memory worse in %d", count_memory_worse(r));
    fprintf(out, " (exit %d)\n", code);
    return frame_end(&f, out, "Markdown", err);
}

/* ---- JSON ------------------------------------------------------------------- */

void loom_ab_json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", out);
        else if (*p == '\t')
            fputs("\\t", out);
        else if (*p < 0x20)
            fprintf(out, "\\u%04x", *p);
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

void loom_ab_json_number(FILE *out, double v)
{
    if (!isfinite(v)) {
        fputs("null", out);
        return;
    }
    char buf[40];
    snprintf(buf, sizeof buf, "%.15g", v);
    if (strtod(buf, NULL) != v)
        snprintf(buf, sizeof buf, "%.17g", v);
    fputs(buf, out);
}

/* The failure object of one side, or null. */
static void js_failure(FILE *out, const loom_failure *f)
{
    if (f->kind == LOOM_FAIL_NONE) {
        fputs("null", out);
        return;
    }
    char buf[1024], sig[32];
    fputs("{\"kind\": ", out);
    loom_ab_json_string(out, loom_fail_kind_name(f->kind));
    fputs(", \"status\": ", out);
    loom_ab_json_string(out, loom_status_name(loom_failure_status(f)));
    fputs(", \"phase\": ", out);
    loom_ab_json_string(out, phase_names[f->phase >= 0 && f->phase <= 2 ? f->phase : 0]);
    fprintf(out, ", \"iteration\": %d, \"step\": %d, \"plugin\": ", f->iteration, f->step);
    if (f->plugin_id[0])
        loom_ab_json_string(out, f->plugin_id);
    else
        fputs("null", out);
    if (f->kind == LOOM_FAIL_SIGNAL) {
        fprintf(out, ", \"signal\": %d, \"signal_name\": ", f->signal);
        loom_ab_json_string(out, loom_signal_name(f->signal, sig, sizeof sig));
    }
    if (f->kind == LOOM_FAIL_TIMEOUT) {
        fputs(", \"limit_ms\": ", out);
        loom_ab_json_number(out, f->limit_ms);
    }
    if (f->kind == LOOM_FAIL_MEMORY)
        fprintf(out, ", \"limit_mb\": %lld", (long long)f->limit_mb);
    if (f->kind == LOOM_FAIL_EXIT)
        fprintf(out, ", \"exit_code\": %d", f->exit_code);
    fputs(", \"message\": ", out);
    loom_ab_json_string(out, f->message);
    fputs(", \"description\": ", out);
    loom_ab_json_string(out, failure_text(f, buf, sizeof buf));
    fputc('}', out);
}

/* The summary object of one side. */
static void js_side(FILE *out, const loom_run_output *o, const loom_ab_side_summary *s,
                    int pairs, int timings)
{
    fprintf(out, "{\"iterations_planned\": %d, \"mean_makespan_ms\": ", o->n_results);
    loom_ab_json_number(out, pairs ? s->mean_makespan_ms : NAN);
    fputs(", \"mean_bubble_ratio\": ", out);
    loom_ab_json_number(out, pairs ? s->mean_bubble_ratio : NAN);
    fprintf(out, ", \"max_peak_bytes\": %lld", (long long)s->max_peak_bytes);
    fprintf(out, ", \"feasible\": %s",
            loom_ab_side_infeasible(o, o->n_results) ? "false" : "true");
    if (timings) {
        fputs(", \"mean_plan_time_ms\": ", out);
        loom_ab_json_number(out, pairs ? s->mean_plan_time_ms : NAN);
    }
    fputs(", \"failure\": ", out);
    js_failure(out, &o->failure);
    fputc('}', out);
}

/* One side of one paired iteration. */
static void js_iter(FILE *out, const loom_iter_result *x, int timings)
{
    fputs("{\"makespan_ms\": ", out);
    loom_ab_json_number(out, x->makespan_ms);
    fputs(", \"bubble_ratio\": ", out);
    loom_ab_json_number(out, x->bubble_ratio);
    fprintf(out, ", \"peak_bytes\": %lld, \"evaluations\": %lld, \"feasible\": %s",
            (long long)x->peak_bytes, (long long)x->evaluations,
            x->cap_violations > 0 ? "false" : "true");
    if (timings) {
        fputs(", \"plan_time_ms\": ", out);
        loom_ab_json_number(out, x->plan_time_ms);
    }
    fputc('}', out);
}

/* One case object. */
static void js_case(FILE *out, const loom_ab_case_result *c, int timings)
{
    const loom_ab_stats *s = &c->stats;
    int paired = c->n_pairs > 0;
    fputs("    {\"name\": ", out);
    loom_ab_json_string(out, c->name);
    fputs(", \"problem\": ", out);
    loom_ab_json_string(out, c->problem);
    fputs(", \"verdict\": ", out);
    loom_ab_json_string(out, loom_ab_verdict_name(s->verdict));
    if (s->reason) {
        fputs(", \"reason\": ", out);
        loom_ab_json_string(out, s->reason);
    }
    if (s->memory_verdict >= 0 && s->verdict != LOOM_AB_ERROR) {
        fputs(", \"memory_verdict\": ", out);
        loom_ab_json_string(out, loom_ab_verdict_name(s->memory_verdict));
    }
    fprintf(out, ", \"pairs\": %d,\n     \"makespan_ratio\": {\"mean\": ", c->n_pairs);
    loom_ab_json_number(out, paired ? s->mean_ratio : NAN);
    fputs(", \"median\": ", out);
    loom_ab_json_number(out, paired ? s->median_ratio : NAN);
    fputs(", \"ci95\": [", out);
    loom_ab_json_number(out, paired ? s->ci_low : NAN);
    fputs(", ", out);
    loom_ab_json_number(out, paired ? s->ci_high : NAN);
    fprintf(out, "]}, \"wins\": %d, \"losses\": %d, \"ties\": %d,\n     \"a\": ", s->wins,
            s->losses, s->ties);
    js_side(out, &c->a, &c->sum_a, paired, timings);
    fputs(",\n     \"b\": ", out);
    js_side(out, &c->b, &c->sum_b, paired, timings);
    fputs(",\n     \"iterations\": [", out);
    for (int32_t i = 0; i < c->n_pairs; i++) {
        const loom_iter_result *a = &c->a.results[i], *b = &c->b.results[i];
        fprintf(out, "%s\n       {\"iteration\": %d, \"ratio\": ", i ? "," : "", a->iteration);
        loom_ab_json_number(out, b->makespan_ms / a->makespan_ms);
        fputs(", \"a\": ", out);
        js_iter(out, a, timings);
        fputs(", \"b\": ", out);
        js_iter(out, b, timings);
        fputc('}', out);
    }
    fputs(c->n_pairs ? "\n     ]}" : "]}", out);
}

int loom_ab_write_json(const loom_ab_report *r, FILE *out, loom_error *err)
{
    c_frame f;
    int rc = frame_begin(&f, err);
    if (rc != LOOM_OK)
        return rc;
    fputs("{\n  \"loom_ab\": 1,\n  \"a\": {\"manifest\": ", out);
    loom_ab_json_string(out, r->manifest_a);
    fputs(", \"name\": ", out);
    loom_ab_json_string(out, r->name_a);
    fputs("},\n  \"b\": {\"manifest\": ", out);
    loom_ab_json_string(out, r->manifest_b);
    fputs(", \"name\": ", out);
    loom_ab_json_string(out, r->name_b);
    fputs("},\n  \"suite\": ", out);
    if (r->suite)
        loom_ab_json_string(out, r->suite);
    else
        fputs("null", out);
    fputs(",\n  \"threshold\": ", out);
    loom_ab_json_number(out, r->threshold);
    fputs(",\n  \"memory_threshold\": ", out);
    if (r->memory_threshold >= 0)
        loom_ab_json_number(out, r->memory_threshold);
    else
        fputs("null", out);
    fprintf(out, ",\n  \"confidence\": 0.95,\n  \"resamples\": %d,\n  \"rule\": ", r->resamples);
    char rule[1024];
    loom_ab_rule_text(r, rule, sizeof rule);
    loom_ab_json_string(out, rule);
    fputs(",\n  \"cases\": [\n", out);
    for (int32_t i = 0; i < r->n_cases; i++) {
        js_case(out, &r->cases[i], r->timings);
        fputs(i + 1 < r->n_cases ? ",\n" : "\n", out);
    }
    int n[4];
    count_verdicts(r, n);
    fprintf(out,
            "  ],\n  \"summary\": {\"cases\": %d, \"better\": %d, \"same\": %d, \"worse\": %d, "
            "\"error\": %d, \"exit_code\": %d}\n}\n",
            r->n_cases, n[LOOM_AB_BETTER], n[LOOM_AB_SAME], n[LOOM_AB_WORSE], n[LOOM_AB_ERROR],
            loom_ab_exit_code(r));
    return frame_end(&f, out, "JSON", err);
}

/* ---- JUnit XML ------------------------------------------------------------------ */

/* Writes text escaped for an XML attribute or element. */
static void xml_text(FILE *out, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&apos;", out); break;
        case '\n': fputs("&#10;", out); break;
        default:
            if (*p >= 0x20 || *p == '\t')
                fputc(*p, out);
            break;
        }
    }
}

/* The numbers behind a verdict, for failure messages. */
static void verdict_numbers(const loom_ab_report *r, const loom_ab_case_result *c, char *buf,
                            size_t size)
{
    const loom_ab_stats *s = &c->stats;
    if (s->reason && !strcmp(s->reason, "infeasible")) {
        snprintf(buf, size, "B's plan exceeds the memory cap (an infeasible plan always loses); "
                 "peak A %.2f GiB, B %.2f GiB", (double)c->sum_a.max_peak_bytes / 1073741824.0,
                 (double)c->sum_b.max_peak_bytes / 1073741824.0);
        return;
    }
    if (s->verdict != LOOM_AB_WORSE && s->memory_verdict == LOOM_AB_WORSE) {
        snprintf(buf, size, "memory verdict worse: B's peak memory %.2f GiB is more than %.1f %% "
                 "above A's %.2f GiB (--memory-threshold); time verdict %s (B/A makespan mean "
                 "%.4f)", (double)c->sum_b.max_peak_bytes / 1073741824.0,
                 100 * r->memory_threshold, (double)c->sum_a.max_peak_bytes / 1073741824.0,
                 loom_ab_verdict_name(s->verdict), s->mean_ratio);
        return;
    }
    snprintf(buf, size,
             "B/A makespan mean %.4f (median %.4f, 95%% CI %.4f-%.4f) is above 1 + threshold "
             "%.4f; A %.3f ms, B %.3f ms mean over %d iterations; wins/losses/ties %d/%d/%d",
             s->mean_ratio, s->median_ratio, s->ci_low, s->ci_high, 1 + r->threshold,
             c->sum_a.mean_makespan_ms, c->sum_b.mean_makespan_ms, c->n_pairs, s->wins, s->losses,
             s->ties);
}

/* One <testcase>. */
static void junit_case(FILE *out, const loom_ab_report *r, const loom_ab_case_result *c)
{
    double secs = 0;
    for (int32_t i = 0; i < c->a.n_results; i++)
        secs += c->a.results[i].plan_time_ms / 1000.0;
    for (int32_t i = 0; i < c->b.n_results; i++)
        secs += c->b.results[i].plan_time_ms / 1000.0;
    fputs("    <testcase classname=\"loom.ab\" name=\"", out);
    xml_text(out, c->name);
    fprintf(out, "\" time=\"%.3f\"", secs);
    char buf[1024], msg[1200];
    if (c->stats.verdict == LOOM_AB_WORSE ||
        (c->stats.verdict != LOOM_AB_ERROR && c->stats.memory_verdict == LOOM_AB_WORSE)) {
        verdict_numbers(r, c, msg, sizeof msg);
        fputs(">\n      <failure type=\"regression\" message=\"", out);
        xml_text(out, msg);
        fputs("\">", out);
        xml_text(out, c->problem);
        fputs("</failure>\n    </testcase>\n", out);
    } else if (c->stats.verdict == LOOM_AB_ERROR) {
        const loom_failure *f = c->a.failure.kind != LOOM_FAIL_NONE ? &c->a.failure : &c->b.failure;
        const char *side = c->a.failure.kind != LOOM_FAIL_NONE ? "A" : "B";
        if (f->kind != LOOM_FAIL_NONE)
            snprintf(msg, sizeof msg, "%s: %s", side, failure_text(f, buf, sizeof buf));
        else
            snprintf(msg, sizeof msg, "no iteration could be paired");
        fputs(">\n      <error type=\"", out);
        xml_text(out, loom_fail_kind_name(f->kind));
        fputs("\" message=\"", out);
        xml_text(out, msg);
        fputs("\">", out);
        xml_text(out, c->problem);
        fputs("</error>\n    </testcase>\n", out);
    } else {
        loom_ab_verdict_text(c, buf, sizeof buf);
        fprintf(out, "><system-out>B/A makespan mean %.4f, 95%% CI %.4f-%.4f: ",
                c->stats.mean_ratio, c->stats.ci_low, c->stats.ci_high);
        xml_text(out, buf);
        fputs("</system-out></testcase>\n", out);
    }
}

int loom_ab_write_junit(const loom_ab_report *r, FILE *out, loom_error *err)
{
    c_frame f;
    int rc = frame_begin(&f, err);
    if (rc != LOOM_OK)
        return rc;
    int n[4];
    count_verdicts(r, n);
    fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                 "<testsuites name=\"loom ab\" tests=\"%d\" failures=\"%d\" errors=\"%d\">\n",
            r->n_cases, count_regressions(r), n[LOOM_AB_ERROR]);
    fputs("  <testsuite name=\"", out);
    xml_text(out, r->name_a && r->name_a[0] ? r->name_a : r->manifest_a);
    fputs(" vs ", out);
    xml_text(out, r->name_b && r->name_b[0] ? r->name_b : r->manifest_b);
    fprintf(out, "\" tests=\"%d\" failures=\"%d\" errors=\"%d\" skipped=\"0\">\n", r->n_cases,
            count_regressions(r), n[LOOM_AB_ERROR]);
    fputs("    <properties>\n      <property name=\"manifest_a\" value=\"", out);
    xml_text(out, r->manifest_a);
    fputs("\"/>\n      <property name=\"manifest_b\" value=\"", out);
    xml_text(out, r->manifest_b);
    fprintf(out, "\"/>\n      <property name=\"threshold\" value=\"%.6g\"/>\n", r->threshold);
    fprintf(out, "      <property name=\"resamples\" value=\"%d\"/>\n", r->resamples);
    char rule[1024];
    loom_ab_rule_text(r, rule, sizeof rule);
    fputs("      <property name=\"rule\" value=\"", out);
    xml_text(out, rule);
    fputs("\"/>\n    </properties>\n", out);
    for (int32_t i = 0; i < r->n_cases; i++)
        junit_case(out, r, &r->cases[i]);
    fputs("  </testsuite>\n</testsuites>\n", out);
    return frame_end(&f, out, "JUnit", err);
}
