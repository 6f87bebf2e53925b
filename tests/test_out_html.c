/* test_out_html.c - report.html (and the timeline.svg it shares its
 * colours with) on simulated plans: the page is self-contained, its
 * embedded data describe every stage in schedule order and replay to the
 * simulator's peak memory, the summary flags ranks over the cap, labels
 * cannot break out of the page, the same plan gives the same bytes in any
 * locale, a number that is not finite is refused before anything is
 * written; a real model plan names its modules and layout; the SVG grows
 * with the plan; `loom ab --html` writes its comparison page. */
#define _DEFAULT_SOURCE /* mkdtemp */
#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include <loom/sys/json.h>
#include "ab.h"
#include "testutil.h"
#include "output.h"

/* ---- a stage-times plan (1F1B, F = 1 ms, B = 2 ms) ----------------------- */

static double fwd[16], bwd[16], act[16];

typedef struct fixture {
    loom_stage_times st;
    loom_problem problem;
    loom_plan plan;
} fixture;

/* Megatron 1F1B per rank for a V = 1 stage-times graph (stage ids as in
 * sdk/kits/graph/graph_stage_times.c: per microbatch P forwards, then P
 * backwards in reverse position order). */
static loom_schedule *one_f_one_b(int P, int M)
{
    loom_schedule *sc = loom_schedule_new(P, M * 2 * P);
    int k = 0;
    for (int r = 0; r < P; r++) {
        sc->rank_off[r] = k;
        int warm = P - r - 1 < M ? P - r - 1 : M, f = 0, b = 0;
        for (; f < warm; f++)
            sc->order[k++] = f * 2 * P + r;
        while (f < M || b < M) {
            if (f < M) {
                sc->order[k++] = f * 2 * P + r;
                f++;
            }
            sc->order[k++] = b * 2 * P + P + (P - 1 - r);
            b++;
        }
    }
    sc->rank_off[P] = k;
    return sc;
}

/* P ranks, M microbatches, `stat` static bytes per rank, `bytes` of
 * activations per stage pair, simulated. */
static void make_plan(fixture *fx, int P, int M, int64_t stat, double bytes)
{
    memset(fx, 0, sizeof *fx);
    for (int i = 0; i < P; i++) {
        fwd[i] = 1;
        bwd[i] = 2;
        act[i] = bytes;
    }
    fx->st.ranks = P;
    fx->st.microbatches = M;
    fx->st.virtual_stages = 1;
    fx->st.forward_ms = fwd;
    fx->st.backward_ms = bwd;
    fx->st.activation_bytes = act;
    fx->problem.struct_size = sizeof fx->problem;
    fx->problem.kind = LOOM_PROBLEM_STAGE_TIMES;
    fx->problem.stage_times = &fx->st;
    fx->problem.parallel.pp = P;
    fx->problem.parallel.microbatches = M;
    loom_stage_graph *g = NULL;
    loom_error err = {0};
    ck_assert_int_eq(loom_graph_from_stage_times(&fx->st, 0, &g, &err), LOOM_OK);
    for (int r = 0; r < P; r++)
        g->static_bytes[r] = stat;
    loom_plan *plan = &fx->plan;
    plan->graph = g;
    plan->schedule = one_f_one_b(P, M);
    loom_metrics_init(&plan->metrics);
    plan->metrics.start_ms = calloc((size_t)g->n_stages, sizeof(double));
    plan->metrics.end_ms = calloc((size_t)g->n_stages, sizeof(double));
    plan->metrics.span_ms = calloc((size_t)g->n_ranks, sizeof(double));
    plan->metrics.peak_bytes = calloc((size_t)g->n_ranks, sizeof(int64_t));
    ck_assert_int_eq(loom_simulate(g, plan->schedule, &plan->metrics, &err), LOOM_OK);
    plan->problem = &fx->problem;
    plan->plan_time_ms = 12.5;
    plan->evaluations = 42;
    plan->n_candidates = 1;
    snprintf(plan->label, sizeof plan->label, "1f1b P=%d M=%d", P, M);
}

static void fixture_free(fixture *fx)
{
    free(fx->plan.metrics.start_ms);
    free(fx->plan.metrics.end_ms);
    free(fx->plan.metrics.span_ms);
    free(fx->plan.metrics.peak_bytes);
    loom_graph_free(fx->plan.graph);
    loom_schedule_free(fx->plan.schedule);
}

/* ---- helpers ---------------------------------------------------------------- */

typedef int (*writer_fn)(const loom_plan *, FILE *, loom_error *);

/* Runs a writer into a malloc'd string; asserts it succeeds. */
static char *render(writer_fn fn, const loom_plan *plan)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    loom_error err = {0};
    int rc = fn(plan, f, &err);
    fclose(f);
    ck_assert_msg(rc == LOOM_OK, "%s", err.message);
    return buf;
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static void has(const char *hay, const char *needle)
{
    ck_assert_msg(strstr(hay, needle) != NULL, "missing \"%s\"", needle);
}

/* The JSON the page embeds, parsed. */
static cJSON *page_data(const char *html)
{
    static const char open[] = "<script type=\"application/json\" id=\"loom-data\">";
    const char *p = strstr(html, open);
    ck_assert_ptr_nonnull(p);
    p += sizeof open - 1;
    const char *q = strstr(p, "</script>");
    ck_assert_ptr_nonnull(q);
    char *text = strndup(p, (size_t)(q - p));
    cJSON *doc = cJSON_Parse(text);
    ck_assert_msg(doc != NULL, "the embedded data is not JSON: %.200s", text);
    free(text);
    return doc;
}

static const cJSON *get(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    ck_assert_msg(v != NULL, "no \"%s\"", key);
    return v;
}

/* ---- report.html -------------------------------------------------------------- */

START_TEST(page_is_self_contained)
{
    fixture fx;
    make_plan(&fx, 4, 8, 1000, 10);
    char *html = render(loom_write_html_report, &fx.plan);
    static const char head[] = "<!DOCTYPE html>\n<html lang=\"en\" data-loom-report=\"loading\">";
    ck_assert(strncmp(html, head, sizeof head - 1) == 0);
    ck_assert_str_eq(html + strlen(html) - 8, "</html>\n");
    /* nothing is fetched: no URLs, no src or href attributes, no imports */
    ck_assert_ptr_null(strstr(html, "http:"));
    ck_assert_ptr_null(strstr(html, "https:"));
    ck_assert_ptr_null(strstr(html, " src="));
    ck_assert_ptr_null(strstr(html, " href="));
    ck_assert_ptr_null(strstr(html, "@import"));
    /* the error hook, the data and the script */
    ck_assert_int_eq(count(html, "<script"), 3);
    ck_assert_int_eq(count(html, "</script>"), 3);
    has(html, "window.onerror");
    has(html, "<canvas id=\"tl\"");
    has(html, "<canvas id=\"mem\"");
    /* the summary: metrics and one row per rank, no cap */
    has(html, "Loom plan: 1f1b P=4 M=8");
    has(html, "<span class=\"k\">makespan</span><span class=\"v\">33.000 ms</span>");
    has(html, "<span class=\"v\">27.27 %</span>");
    has(html, "<span class=\"k\">MFU (model FLOPs)</span><span class=\"v\">n/a</span>");
    has(html, "<span class=\"k\">HFU (with recomputation)</span><span class=\"v\">n/a</span>");
    has(html, "12.5 ms (42 evaluations)");
    has(html, "<span class=\"k\">memory cap</span><span class=\"v\">none</span>");
    has(html, "<span class=\"k\">problem</span><span class=\"v\">stage times</span>");
    has(html, "<span class=\"k wide\">torchtitan</span><span class=\"v wide\">loop style &middot; "
              "pipeline_parallel_schedule 1F1B &middot; pipeline_parallel_schedule_csv "
              "schedule.csv &middot; 8 microbatches</span>");
    /* the long value takes the rest of its row and wraps inside the card */
    has(html, ".kv .v.wide{grid-column:2/-1;min-width:0;overflow-wrap:anywhere;margin-right:0}");
    ck_assert_ptr_null(strstr(html, "Megatron layout"));
    ck_assert_int_eq(count(html, "<tr><td>"), 4);
    ck_assert_ptr_null(strstr(html, "OVER CAP"));
    /* legends: one chunk, the kinds present */
    has(html, "<b>chunks</b><span><span class=\"sw\" style=\"background-color:");
    has(html, "F forward");
    has(html, "B backward");
    ck_assert_ptr_null(strstr(html, "W weight gradient"));
    free(html);
    fixture_free(&fx);
}
END_TEST

START_TEST(data_describes_every_stage)
{
    fixture fx;
    make_plan(&fx, 4, 8, 1000, 10);
    const loom_stage_graph *g = fx.plan.graph;
    const loom_schedule *sc = fx.plan.schedule;
    char *html = render(loom_write_html_report, &fx.plan);
    cJSON *d = page_data(html);
    ck_assert_int_eq(get(d, "loom_report")->valueint, 1);
    ck_assert_int_eq(get(d, "ranks")->valueint, 4);
    ck_assert_double_eq(get(d, "makespan")->valuedouble, 33);
    ck_assert(cJSON_IsNull(get(d, "cap")));
    const cJSON *off = get(d, "off"), *id = get(d, "id"), *t0 = get(d, "t0"), *t1 = get(d, "t1");
    const cJSON *dl = get(d, "d"), *mb = get(d, "mb"), *c = get(d, "c");
    const char *k = get(d, "k")->valuestring;
    ck_assert_int_eq(cJSON_GetArraySize(off), 5);
    ck_assert_int_eq((int)strlen(k), g->n_stages);
    ck_assert_int_eq((int)strlen(get(d, "p")->valuestring), g->n_stages);
    ck_assert_int_eq(cJSON_GetArraySize(id), g->n_stages);
    ck_assert_int_eq(cJSON_GetArraySize(t0), g->n_stages);
    ck_assert_int_eq(cJSON_GetArraySize(t1), g->n_stages);
    ck_assert_int_eq(cJSON_GetArraySize(dl), g->n_stages);
    ck_assert_int_eq(cJSON_GetArraySize(mb), g->n_stages);
    ck_assert_int_eq(cJSON_GetArraySize(c), g->n_stages);
    ck_assert_int_eq(cJSON_GetArraySize(get(d, "comps")), 1);
    /* schedule order, with each stage's times, kind and microbatch */
    for (int32_t i = 0; i < g->n_stages; i++) {
        int32_t s = sc->order[i];
        ck_assert_int_eq(cJSON_GetArrayItem(id, i)->valueint, s);
        ck_assert_double_eq(cJSON_GetArrayItem(t0, i)->valuedouble, fx.plan.metrics.start_ms[s]);
        ck_assert_double_eq(cJSON_GetArrayItem(t1, i)->valuedouble, fx.plan.metrics.end_ms[s]);
        ck_assert_int_eq(k[i], loom_out_kind_char(g->kind[s]));
        ck_assert_int_eq(cJSON_GetArrayItem(mb, i)->valueint, g->microbatch[s]);
    }
    /* the page's memory replay (static + allocations at F start, releases
     * at B end, rank by rank in schedule order) reaches the simulator's peak */
    for (int r = 0; r < 4; r++) {
        ck_assert_int_eq(cJSON_GetArrayItem(off, r)->valueint, sc->rank_off[r]);
        double bytes = cJSON_GetArrayItem(get(d, "stat"), r)->valuedouble, peak = bytes;
        for (int32_t i = sc->rank_off[r]; i < sc->rank_off[r + 1]; i++) {
            bytes += cJSON_GetArrayItem(dl, i)->valuedouble;
            peak = bytes > peak ? bytes : peak;
        }
        ck_assert_double_eq(peak, (double)fx.plan.metrics.peak_bytes[r]);
        ck_assert_double_eq(cJSON_GetArrayItem(get(d, "peak"), r)->valuedouble, peak);
        ck_assert_double_eq(bytes, 1000); /* everything released */
    }
    cJSON_Delete(d);
    free(html);
    fixture_free(&fx);
}
END_TEST

START_TEST(ranks_over_the_cap_are_flagged)
{
    fixture fx;
    make_plan(&fx, 4, 8, 1000, 10); /* peaks 1040, 1030, 1020, 1010 bytes */
    fx.plan.graph->memory_cap_bytes = 1025;
    fx.plan.metrics.mfu = 0.4123;
    char *html = render(loom_write_html_report, &fx.plan);
    ck_assert_int_eq(count(html, "OVER CAP"), 2);
    ck_assert_int_eq(count(html, "<tr class=\"over\">"), 2);
    has(html, "<span class=\"flag\">2 ranks over</span>");
    has(html, "<span class=\"v\">41.23 %</span>");
    has(html, "<th class=\"l\">peak of cap</th>");
    cJSON *d = page_data(html);
    ck_assert_double_eq(get(d, "cap")->valuedouble, 1025);
    cJSON_Delete(d);
    free(html);
    fixture_free(&fx);
}
END_TEST

START_TEST(labels_cannot_break_out)
{
    fixture fx;
    make_plan(&fx, 2, 2, 0, 1);
    snprintf(fx.plan.label, sizeof fx.plan.label, "a</script><b>&'\"");
    char *html = render(loom_write_html_report, &fx.plan);
    ck_assert_ptr_null(strstr(html, "a</script>"));
    ck_assert_ptr_null(strstr(html, "<b>&"));
    has(html, "<title>Loom plan: a&lt;/script&gt;&lt;b&gt;&amp;&#39;&quot;</title>");
    has(html, "\"label\":\"a\\u003c/script\\u003e\\u003cb\\u003e\\u0026'\\\"\"");
    cJSON *d = page_data(html);
    ck_assert_str_eq(get(d, "label")->valuestring, "a</script><b>&'\"");
    cJSON_Delete(d);
    free(html);
    fixture_free(&fx);
}
END_TEST

START_TEST(same_plan_same_bytes_in_any_locale)
{
    fixture fx;
    make_plan(&fx, 4, 8, 1000, 10);
    fx.plan.metrics.mfu = 0.123456789;
    char *a = render(loom_write_html_report, &fx.plan);
    char *b = render(loom_write_html_report, &fx.plan);
    ck_assert_str_eq(a, b);
    /* a locale with a decimal comma (when the system has one) */
    static const char *const names[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "C.UTF-8"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (setlocale(LC_ALL, names[i]))
            break;
    char *c = render(loom_write_html_report, &fx.plan);
    setlocale(LC_ALL, "C");
    ck_assert_str_eq(a, c);
    has(a, "<span class=\"v\">12.35 %</span>");
    free(a);
    free(b);
    free(c);
    fixture_free(&fx);
}
END_TEST

/* Asserts the report refuses the plan with LOOM_EINVAL naming `what` and
 * writes nothing. */
static void refused(const loom_plan *plan, const char *what)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    loom_error err = {0};
    int rc = loom_write_html_report(plan, f, &err);
    fclose(f);
    ck_assert_int_eq(rc, LOOM_EINVAL);
    ck_assert_msg(strstr(err.message, what) != NULL, "'%s' does not name %s", err.message, what);
    ck_assert_ptr_nonnull(strstr(err.message, "finite number"));
    ck_assert_int_eq((int)len, 0);
    free(buf);
}

START_TEST(non_finite_numbers_are_refused)
{
    fixture fx;
    make_plan(&fx, 4, 8, 0, 1);
    loom_metrics *m = &fx.plan.metrics;
    double keep = m->end_ms[5];
    m->end_ms[5] = INFINITY;
    refused(&fx.plan, "end_ms of stage 5");
    m->end_ms[5] = keep;
    keep = m->start_ms[7];
    m->start_ms[7] = NAN;
    refused(&fx.plan, "start_ms of stage 7");
    m->start_ms[7] = keep;
    m->mfu = NAN;
    refused(&fx.plan, "mfu");
    m->mfu = -1;
    fx.plan.plan_time_ms = INFINITY;
    refused(&fx.plan, "plan_time_ms");
    fx.plan.plan_time_ms = 1;
    m->span_ms[2] = -INFINITY;
    refused(&fx.plan, "span_ms of rank 2");
    m->span_ms[2] = 1;
    m->bubble_ratio = NAN;
    refused(&fx.plan, "bubble_ratio");
    m->bubble_ratio = 0.5;
    fx.plan.graph->memory_cap_bytes = INFINITY;
    refused(&fx.plan, "memory_cap_bytes");
    fx.plan.graph->memory_cap_bytes = 0;
    /* finite times whose difference is not: the busy time overflows */
    double s0 = m->start_ms[0], e0 = m->end_ms[0];
    m->start_ms[0] = -1.7e308;
    m->end_ms[0] = 1.7e308;
    refused(&fx.plan, "busy time of rank 0");
    m->start_ms[0] = s0;
    m->end_ms[0] = e0;
    char *html = render(loom_write_html_report, &fx.plan);
    free(html);
    fixture_free(&fx);
}
END_TEST

START_TEST(incomplete_plans_are_refused)
{
    fixture fx;
    make_plan(&fx, 2, 2, 0, 1);
    double *start = fx.plan.metrics.start_ms;
    fx.plan.metrics.start_ms = NULL;
    loom_error err = {0};
    FILE *f = fopen("/dev/null", "w");
    ck_assert_int_eq(loom_write_html_report(&fx.plan, f, &err), LOOM_EINVAL);
    fclose(f);
    has(err.message, "start_ms");
    fx.plan.metrics.start_ms = start;
    fixture_free(&fx);
}
END_TEST

START_TEST(outputs_include_the_report)
{
    fixture fx;
    make_plan(&fx, 4, 8, 0, 1);
    char dir[64], path[128];
    snprintf(dir, sizeof dir, "/tmp/loom-html-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    loom_error err = {0};
    ck_assert_int_eq(loom_write_outputs(&fx.plan, dir, &err), LOOM_OK);
    snprintf(path, sizeof path, "%s/report.html", dir);
    char *text = NULL;
    size_t len = 0;
    ck_assert_int_eq(loom_read_file(path, &text, &len, &err), LOOM_OK);
    char *want = render(loom_write_html_report, &fx.plan);
    ck_assert_str_eq(text, want);
    free(text);
    free(want);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    fixture_free(&fx);
}
END_TEST

/* ---- timeline.svg ----------------------------------------------------------------- */

START_TEST(svg_small_plan_is_the_minimum_width)
{
    fixture fx;
    make_plan(&fx, 4, 8, 0, 1);
    char *svg = render(loom_write_svg, &fx.plan);
    has(svg, "width=\"1200\" height=");
    has(svg, "<text x=\"8\" y=\"52\" fill=\"#666666\">chunks</text>");
    ck_assert_int_eq(count(svg, "<rect class=\"module\""), 1);
    ck_assert_int_eq(count(svg, "<rect class=\"legend\""), 2);
    ck_assert_int_eq(count(svg, "<line class=\"grid\""), 6); /* 5 10 ... 30 ms */
    free(svg);
    fixture_free(&fx);
}
END_TEST

/* ---- real plans through the CLI ----------------------------------------------------- */

/* Plans with `loom plan <args> --out DIR --quiet`; returns DIR (static). */
static const char *plan_cli(const char *args)
{
    static char dir[64];
    snprintf(dir, sizeof dir, "/tmp/loom-html-cli-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char cmd[2048], *out = NULL;
    snprintf(cmd, sizeof cmd, "cd '%s' && LOOM_PLUGIN_PATH= '%s' plan --quiet --iterations 1 %s "
             "--out '%s'", LOOM_TEST_SOURCE_DIR, loom_test_bin("bin/loom"), args, dir);
    int rc = loom_test_run(cmd, &out);
    ck_assert_msg(rc == 0, "exit %d\n$ %s\n%s", rc, cmd, out);
    free(out);
    return dir;
}

static char *slurp_in(const char *dir, const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *text = NULL;
    size_t len = 0;
    loom_error err = {0};
    ck_assert_msg(loom_read_file(path, &text, &len, &err) == LOOM_OK, "%s", err.message);
    return text;
}

static void remove_dir(const char *dir)
{
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

START_TEST(model_plan_names_modules_and_layout)
{
    const char *dir = plan_cli("--manifest examples/manifests/megatron-balanced.json "
                               "--model vlm-s");
    char *html = slurp_in(dir, "report.html");
    has(html, "tp 4 &middot; pp 4 &middot; dp 1 = 16 GPUs");
    has(html, "<span class=\"k\">model</span><span class=\"v\">vlm-s</span>");
    has(html, "<span class=\"k\">cluster</span><span class=\"v\">h800");
    has(html, "<b>modules</b>");
    has(html, "</span>vit</span>");
    has(html, "</span>llm</span>");
    has(html, "<span class=\"k\">memory cap</span><span class=\"v\">80.00 GiB per rank");
    ck_assert_ptr_null(strstr(html, "Megatron layout")); /* vit + llm: no layout */
    cJSON *d = page_data(html);
    ck_assert(cJSON_IsTrue(get(d, "byModule")));
    /* Megatron's one mixed flow: a chunk holding the end of the ViT and
     * the start of the LLM is a two-module composition */
    int mixed = 0;
    const cJSON *comp;
    cJSON_ArrayForEach(comp, get(d, "comps"))
        mixed += cJSON_GetArraySize(comp) > 2;
    ck_assert_int_ge(mixed, 1);
    cJSON_Delete(d);
    free(html);
    char *svg = slurp_in(dir, "timeline.svg");
    ck_assert_int_eq(count(svg, "<rect class=\"module\""), 2);
    ck_assert_int_ge(count(svg, "<rect class=\"mix\""), 1);
    has(svg, ">vit</text>");
    free(svg);
    remove_dir(dir);
}
END_TEST

START_TEST(svg_grows_with_the_plan)
{
    const char *dir = plan_cli("--manifest examples/manifests/pipeweaver.json --model vlm-l "
                               "--param ranker.budget_ms=100");
    char *svg = slurp_in(dir, "timeline.svg");
    int width = 0;
    ck_assert_int_eq(sscanf(strstr(svg, "width=\""), "width=\"%d\"", &width), 1);
    ck_assert_int_gt(width, 4000);
    ck_assert_int_le(width, 16000);
    has(svg, "<text x=\"2086\""); /* rank labels repeated every 2000 px */
    free(svg);
    remove_dir(dir);
}
END_TEST

/* ---- loom ab --html ----------------------------------------------------------------- */

/* A run with n results of makespan base * (1 + step * k). */
static void fake_run(loom_run_output *o, int n, double base, double step, int over)
{
    memset(o, 0, sizeof *o);
    o->results = calloc((size_t)n, sizeof *o->results);
    o->n_results = o->n_iterations = n;
    for (int k = 0; k < n; k++) {
        o->results[k].iteration = k;
        o->results[k].makespan_ms = base * (1 + step * k);
        o->results[k].bubble_ratio = 0.25;
        o->results[k].peak_bytes = (int64_t)1 << 30;
        o->results[k].plan_time_ms = 2;
        o->results[k].mfu = 0.3;
        o->results[k].cap_violations = over;
    }
    o->failure.iteration = -1;
    o->failure.step = -1;
}

START_TEST(ab_html_report)
{
    loom_ab_case_result res[3];
    memset(res, 0, sizeof res);
    static const char *const names[] = {"same-case", "slow-case", "crash-case"};
    for (int i = 0; i < 3; i++) {
        res[i].name = names[i];
        res[i].problem = "model vlm-s, cluster h800";
    }
    fake_run(&res[0].a, 3, 100, 0.1, 0);
    fake_run(&res[0].b, 3, 100, 0.1, 0);
    fake_run(&res[1].a, 3, 100, 0.1, 0);
    fake_run(&res[1].b, 3, 105, 0.1, 1);
    fake_run(&res[2].a, 3, 100, 0, 0);
    fake_run(&res[2].b, 1, 100, 0, 0);
    loom_failure *f = &res[2].b.failure;
    f->kind = LOOM_FAIL_SIGNAL;
    f->status = LOOM_EPLUGIN;
    f->signal = 11;
    f->phase = LOOM_PHASE_ITERATION;
    f->iteration = 1;
    f->step = 2;
    snprintf(f->plugin_id, sizeof f->plugin_id, "fixture.crash-rank");
    loom_error err = {0};
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(loom_ab_evaluate(&res[i], 0.01, 2000, &err), LOOM_OK);
    loom_ab_report r = {"a.json", "b&c.json", "base", "new <b>", NULL, 0.01, 0.10, 2000, 0, res, 3};
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    ck_assert_int_eq(loom_ab_write_html(&r, out, &err), LOOM_OK);
    fclose(out);
    ck_assert(strncmp(buf, "<!DOCTYPE html>", 15) == 0);
    has(buf, "<title>loom ab: base vs new &lt;b&gt;</title>");
    has(buf, "B: b&amp;c.json");
    has(buf, "Result: plugin failure &mdash; 0 better, 1 same, 1 worse, 1 failed (exit 3)");
    has(buf, "<b>same-case</b></td><td class=\"l\"><span class=\"v same\">same</span></td>"
             "<td>3</td><td>110.000</td><td>110.000</td><td><b>1.0000</b></td>"
             "<td>1.0000 &ndash; 1.0000</td>");
    /* B is over the memory cap: its simulated time is no makespan */
    has(buf, "<b>slow-case</b></td><td class=\"l\"><span class=\"v worse\">worse</span></td>"
             "<td>3</td><td>110.000</td><td>INFEASIBLE</td><td><b>1.0500</b></td>");
    has(buf, "<span class=\"v error\">error</span>");
    has(buf, "over cap 0 / 3");
    has(buf, "30.00 &rarr; 30.00 %");
    has(buf, "<h2>Failures</h2>");
    has(buf, "case <b>crash-case</b>, B: plugin fixture.crash-rank (pipeline[2]) was killed by "
             "signal 11 (SIGSEGV) at iteration 1");
    ck_assert_int_eq(count(buf, "<details>"), 3);
    ck_assert_int_eq(count(buf, "<circle "), 3 + 3 + 1);
    ck_assert_ptr_null(strstr(buf, "<script"));
    ck_assert_ptr_null(strstr(buf, "http:"));
    free(buf);
    for (int i = 0; i < 3; i++)
        loom_ab_case_result_clear(&res[i]);
}
END_TEST

START_TEST(ab_cli_writes_html)
{
    const char *html = loom_test_tmpfile(".html", "");
    char cmd[2048], *out = NULL;
    snprintf(cmd, sizeof cmd, "cd '%s' && LOOM_PLUGIN_PATH= '%s' ab "
             "examples/manifests/megatron-1f1b.json examples/manifests/megatron-balanced.json "
             "--model vlm-s --iterations 1 --quiet --memory-threshold -1 --html '%s'",
             LOOM_TEST_SOURCE_DIR,
             loom_test_bin("bin/loom"), html);
    int rc = loom_test_run(cmd, &out);
    ck_assert_msg(rc == 0, "exit %d\n$ %s\n%s", rc, cmd, out);
    free(out);
    char *text = NULL;
    size_t len = 0;
    loom_error err = {0};
    ck_assert_int_eq(loom_read_file(html, &text, &len, &err), LOOM_OK);
    has(text, "loom ab: <code>megatron-1f1b</code> (A) vs <code>megatron-balanced</code> (B)");
    has(text, "<b>default</b>");
    has(text, "</html>\n");
    free(text);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("out_html");
    TCase *tc = tcase_create("report");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, page_is_self_contained);
    tcase_add_test(tc, data_describes_every_stage);
    tcase_add_test(tc, ranks_over_the_cap_are_flagged);
    tcase_add_test(tc, labels_cannot_break_out);
    tcase_add_test(tc, same_plan_same_bytes_in_any_locale);
    tcase_add_test(tc, non_finite_numbers_are_refused);
    tcase_add_test(tc, incomplete_plans_are_refused);
    tcase_add_test(tc, outputs_include_the_report);
    tcase_add_test(tc, svg_small_plan_is_the_minimum_width);
    tcase_add_test(tc, model_plan_names_modules_and_layout);
    tcase_add_test(tc, svg_grows_with_the_plan);
    tcase_add_test(tc, ab_html_report);
    tcase_add_test(tc, ab_cli_writes_html);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(suite());
}
