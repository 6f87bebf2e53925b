/* cmd_plan.c - `loom plan`: load a planner manifest and a problem, plan
 * every iteration of the workload, print the summary (or --json), and
 * write the plan, trace, CSV and SVG with --out (into a staging folder put
 * in place as a whole at the end). With --isolate the whole run happens in
 * a forked child under a time and memory limit, so a crashing or hanging
 * plugin is reported instead of taking `loom` down. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include <loom/sys/session.h>
#include <loom/sys/isolate.h>
#include <loom/sys/output.h>
#include <loom/sys/planner.h>
#include <loom/sys/planner.h>
#include <loom/sys/problem.h>
#include "progress.h"
#include "tune.h"
#include <loom/sys/registry.h>
#include <loom/sys/session.h>

/* Prints the usage text. */
static void usage(FILE *out)
{
    fprintf(out,
            "usage: loom plan [options]\n\n"
            "Plans every iteration of a workload with a planner manifest's pipeline.\n"
            "With no options: the default manifest (megatron-1f1b), model vlm-s on h800,\n"
            "a seeded interleaved image-text workload, 4 iterations; prints a summary.\n\n"
            "  --manifest FILE       planner manifest (default examples/manifests/megatron-1f1b.json)\n"
            "  --model SPEC          model preset name or model.json (default vlm-s)\n"
            "  --cluster SPEC        cluster preset or cluster.json (default h800)\n"
            "  --parallel SPEC       e.g. tp=4,pp=4,dp=1,vpp=2,mb=16 (over the model's own),\n"
            "                        or FILE.json with per-module layouts (docs/formats.md)\n"
            "  --global-batch B      samples (sequences) per iteration: B = micro-batch-size x\n"
            "                        microbatches x dp; derives mb unless --parallel gives it\n"
            "  --micro-batch-size K  sequences per microbatch (default 1)\n"
            "  --seq-len S           tokens per generated sequence (default 8192)\n"
            "  --workload FILE       workload JSON Lines (one iteration per line)\n"
            "  --generate FAMILY     generate a seeded workload (%s)\n"
            "  --packing-window N    pack the generated workload first-fit over N samples\n"
            "                        drawn ahead, 1..4096 (default: next-fit)\n"
            "  --iterations N        iterations to plan (default 4; all of --workload)\n"
            "  --seed S              seed for generation and search (default: the manifest's)\n"
            "  --stage-times FILE    plan a stage-times problem instead of a model\n"
            "  --memory-cap SIZE     per-rank memory cap, e.g. 80GiB, 80GB or bytes (default:\n"
            "                        the GPU's HBM; replaces a stage-times file's cap)\n"
            "  --evaluations N       deterministic mode: searches stop after N evaluations\n"
            "                        (byte-identical outputs; docs/outputs.md, Determinism)\n"
            "  --use ROLE=NAME       replace the plugin of a pipeline role\n"
            "  --allow-untrusted-plugins  load plugins others could have changed (docs/security.md)\n"
            "  --param ROLE.KEY=VAL  set a plugin parameter\n"
            "  --plugin-path DIR     also search DIR for plugins (alias: --path)\n"
            "  --out DIR             write plan.json, trace.json, schedule.csv, timeline.svg,\n"
            "                        summary.txt, report.html (DIR/iter-NNN/ when planning\n"
            "                        several iterations)\n"
            "  --json                print the metrics as one JSON object\n"
            "  --progress-csv FILE   write the search's best-makespan-vs-time curve of every\n"
            "                        iteration (iteration,elapsed_ms,best_makespan_ms,evaluations)\n"
            "  --quiet               no progress or summary table\n"
            "  --isolate             plan in a forked child: a crash, a hang or exhausted memory\n"
            "                        is reported with the plugin, signal or limit and iteration\n"
            "  --timeout-ms N        with --isolate: wall-clock limit per iteration (default\n"
            "                        60000; with a search budget (budget_ms of the manifest or\n"
            "                        the ranker): budget + max(5000, budget), or N when given\n"
            "                        and smaller)\n"
            "  --memory-limit-mb N   with --isolate: address-space limit (default 8192; 0 none;\n"
            "                        not applied in AddressSanitizer builds)\n"
            "A progress display (stderr) accompanies runs of several iterations and searches\n"
            "with a budget over a second: a bar on a terminal, a line every 2 s otherwise.\n"
            "exit codes: 0 ok, 1 planning failure, 2 usage, input or output error,\n"
            "3 plugin error\n",
            "image-pairs, interleaved, video, rise-and-fall, text");
}

/* The run's output folder while it is written (for the signal handlers). */
static loom_out_dir *volatile signal_out;
static volatile sig_atomic_t sigints;

/* Removes the unfinished output folder and dies of `sig`. */
static void die_of(int sig)
{
    loom_out_dir_discard_signal_safe(signal_out);
    loom_cli_die_of(sig); /* reaps; the signal is delivered when the handler returns */
}

/* SIGTERM, SIGHUP: stop at once, leaving the previous outputs as they were
 * (with --isolate, isolation has killed the child's group first). */
static void on_term(int sig)
{
    die_of(sig);
}

/* SIGINT: the search stops and keeps its best plan; a second one stops
 * the process at once. */
static void on_sigint(int sig)
{
    if (sigints++ == 0)
        loom_interrupt();
    else
        die_of(sig); /* a second Ctrl-C stops at once */
}

/* JSON number or null. */
static void json_num(FILE *out, double v)
{
    if (v < 0)
        fputs("null", out);
    else
        fprintf(out, "%.6f", v);
}

/* One iteration's metrics as JSON members. */
static void json_metrics(FILE *out, const loom_plan *p)
{
    const loom_metrics *m = &p->metrics;
    fprintf(out, "\"makespan_ms\": %.6f, \"span_ms\": %.6f, \"bubble_ratio\": %.6f, ",
            m->makespan_ms, m->max_span_ms, m->bubble_ratio);
    fputs("\"peak_mem_bytes\": [", out);
    for (int32_t r = 0; r < p->graph->n_ranks; r++)
        fprintf(out, "%s%lld", r ? ", " : "", (long long)m->peak_bytes[r]);
    fprintf(out, "], \"plan_time_ms\": %.3f, \"mfu\": ", p->plan_time_ms);
    json_num(out, m->mfu);
    fprintf(out, ", \"feasible\": %s", m->cap_violations > 0 ? "false" : "true");
}

/* After a plan that cannot fit the memory cap (a plugin's "... memory
 * cap ..." refusal; other infeasible plans get no hint): the static memory of a
 * rank in GiB (parameters, gradients and optimizer states; activations are
 * the rest) and, for the model's own layout, the command that searches
 * the layouts. */
static void memory_hint(loom_session *s, const loom_session_args *a, int32_t k)
{
    loom_session_info info;
    loom_session_info_get(s, &info);
    const loom_problem *pb = info.problem;
    if (pb->kind != LOOM_PROBLEM_MODEL)
        return;
    const loom_parallel *p = &pb->parallel;
    loom_layout_floor f;
    loom_error err = {0};
    if (loom_session_floor(s, k, &f, &err) != LOOM_OK)
        return;
    double gib = 1073741824.0, cap = pb->memory_cap_bytes > 0 ? pb->memory_cap_bytes
                                                              : (double)pb->cluster->hbm_bytes;
    double par = f.param_bytes / p->pp / gib, st = f.state_bytes / p->pp / gib;
    fprintf(stderr, "loom plan: memory: the cap is %.2f GiB a GPU; at tp=%d cp=%d pp=%d dp=%d "
            "the static memory of a rank is %.2f GiB on average (parameters %.2f GiB, "
            "gradients + optimizer states %.2f GiB), activations fill the rest%s\n",
            cap / gib, p->tp, loom_parallel_cp(p), p->pp, p->dp, par + st, par, st,
            par + st > cap / gib ? ": the static memory alone does not fit" : "");
    if (!a->parallel)
        fprintf(stderr, "loom plan: the model's own layout does not fit; search the layouts "
                "with: loom tune --model %s --gpus %lld --global-batch %lld\n",
                a->model ? a->model : "vlm-s",
                (long long)p->tp * loom_parallel_cp(p) * p->pp * p->dp,
                (long long)info.global_batch);
    loom_layout_floor_clear(&f);
}

/* Options of one `loom plan` call. */
typedef struct plan_cli {
    loom_session_args a;
    const char *out_dir, *progress_csv;
    int json, quiet;
    loom_isolate_opts iso;
    loom_out_dir *out; /* --out being written, or NULL */
    loom_out_target *curve; /* --progress-csv, resolved before any plugin code runs */
} plan_cli;

/* Engine callback of a search: shows its best makespan so far. */
static void on_search(void *user, double elapsed_ms, double best_makespan_ms,
                      int64_t evaluations)
{
    (void)elapsed_ms;
    loom_progress_search(user, best_makespan_ms, evaluations);
}

/* The figures of a finished plan, for the isolation records. */
static void result_of(const loom_plan *plan, int32_t k, loom_iter_result *r)
{
    memset(r, 0, sizeof *r);
    r->iteration = k;
    r->ranks = plan->graph->n_ranks;
    r->cap_violations = plan->metrics.cap_violations;
    r->makespan_ms = plan->metrics.makespan_ms;
    r->bubble_ratio = plan->metrics.bubble_ratio;
    r->mfu = plan->metrics.mfu;
    r->plan_time_ms = plan->plan_time_ms;
    r->peak_bytes = plan->metrics.max_peak_bytes;
    r->evaluations = plan->evaluations;
}

/* A resolved pipeline step: announced to the isolating parent (`user`,
 * the channel, or NULL in-process) and to the exit guard. */
static void on_step(void *user, int32_t step, const char *plugin_id)
{
    if (user)
        loom_channel_step(user, step, plugin_id);
    loom_cli_guard_step(step, plugin_id);
}

/* Copies the plan's per-module layouts (its partitioner's, else the
 * problem's) into *used (malloc'd once, one per module); a single-layout
 * plan leaves *used NULL. */
static void keep_layouts(const loom_plan *plan, loom_module_layout **used)
{
    const loom_problem *pb = plan->problem;
    const loom_partition *pt = plan->partition;
    int32_t n = pb && pb->model ? pb->model->n_modules : 0;
    int chosen = pt && LOOM_STRUCT_HAS(pt, loom_partition, layouts) && pt->layouts &&
                 pt->n_layouts == n;
    if (n == 0 || (!chosen && !loom_problem_module_layout(pb, 0)))
        return;
    if (!*used && !(*used = calloc((size_t)n, sizeof **used)))
        return;
    for (int32_t m = 0; m < n; m++) {
        const loom_module_layout *l = chosen ? &pt->layouts[m] : loom_problem_module_layout(pb, m);
        if (l)
            memcpy(&(*used)[m], l, l->struct_size < sizeof **used ? l->struct_size : sizeof **used);
    }
}

/* loom_out_writer of a text held in memory (ctx: the NUL-terminated text). */
static int put_text(void *ctx, FILE *out, loom_error *err)
{
    (void)err;
    fputs(ctx, out);
    return LOOM_OK;
}

/* What a run of `loom plan` keeps across its iterations: the sums its
 * means come from, the worst peaks, the progress bar and the texts
 * (--json's iterations, --progress-csv's curve) written at the end. */
typedef struct plan_run {
    int32_t n, done;             /* iterations to plan, planned */
    double sum_ms, sum_bubble, sum_plan, sum_mfu, sum_span;
    int mfu_known;
    int32_t ranks, infeasible;
    int64_t worst_peak;
    double cap_bytes;
    int64_t *peak;               /* per rank, over the iterations */
    loom_module_layout *used;    /* the last plan's per-module layouts */
    char *iter_json, *curve_text;
    size_t iter_len, curve_len;
    FILE *iters, *curve;         /* memory streams of the two texts, or NULL */
    int header;                  /* the table's header is still to print */
    int csv_noted;               /* the schedule.csv refusal was reported */
    loom_progress *bar;
    double limit_ms;             /* an isolated iteration's time limit */
} plan_run;

/* Opens the session with the CLI's step hooks (announced on the channel
 * `ch` when isolated); prints why on failure. */
static int open_session(const plan_cli *o, loom_channel *ch, loom_session **out,
                        loom_error *err)
{
    loom_session_args args = o->a;
    static volatile int32_t step_now = -1; /* the running step in-process */
    args.step_marker = ch ? loom_channel_step_marker(ch) : &step_now;
    args.last_step_marker = loom_channel_last_step_marker(ch);
    args.on_step = on_step;
    args.on_step_user = ch;
    loom_cli_guard_marker(args.step_marker);
    int rc = loom_session_open(out, &args, err);
    if (rc != LOOM_OK) {
        fprintf(stderr, "loom plan: %s\n", err->message);
        return rc;
    }
    loom_session *s = *out;
    char tp_why[400];
    if (loom_session_tp_warning(s, tp_why, sizeof tp_why))
        fprintf(stderr, "loom plan: warning: %s\n", tp_why);
    loom_cli_catch(SIGINT, on_sigint, NULL);
    if (ch) {
        loom_session_info info;
        loom_session_info_get(s, &info);
        loom_channel_info(ch, info.n_iterations, info.manifest_name);
    }
    return LOOM_OK;
}

/* Starts the run: its memory streams and, for several iterations or a
 * search over a second, the progress display. */
static void run_start(plan_run *run, const plan_cli *o, loom_session *s)
{
    loom_session_info info;
    loom_session_info_get(s, &info);
    memset(run, 0, sizeof *run);
    run->n = info.n_iterations;
    run->mfu_known = 1;
    run->curve = o->progress_csv ? open_memstream(&run->curve_text, &run->curve_len) : NULL;
    if (run->curve)
        fprintf(run->curve, "iteration,elapsed_ms,best_makespan_ms,evaluations\n");
    run->iters = o->json ? open_memstream(&run->iter_json, &run->iter_len) : NULL;
    run->header = !o->quiet && !o->json; /* printed before the first row, not before an error */
    double budget_ms = loom_isolate_search_budget_ms(info.pipeline);
    if (!o->quiet && (run->n > 1 || budget_ms > 1000)) {
        run->bar = loom_progress_new(stderr, 0);
        loom_progress_set_total(run->bar, run->n);
        loom_session_set_progress(s, on_search, run->bar);
        loom_progress_start_ticker(run->bar);
    }
    run->limit_ms = loom_isolate_iteration_limit(&o->iso, budget_ms);
}

/* Adds iteration k's plan to the run's sums, peaks and curve; warns when
 * it is infeasible. */
static void tally(plan_run *run, const plan_cli *o, loom_session *s, const loom_plan *plan,
                  int32_t k)
{
    const loom_metrics *m = &plan->metrics;
    if (run->curve) {
        const loom_progress_point *pts = NULL;
        int32_t np = loom_session_progress_curve(s, &pts);
        for (int32_t j = 0; j < np; j++)
            fprintf(run->curve, "%d,%.3f,%.6f,%lld\n", k, pts[j].elapsed_ms,
                    pts[j].best_makespan_ms, (long long)pts[j].evaluations);
    }
    if (!run->peak) {
        run->ranks = plan->graph->n_ranks;
        run->peak = calloc((size_t)run->ranks, sizeof *run->peak);
    }
    if (o->json)
        keep_layouts(plan, &run->used);
    for (int32_t r = 0; r < run->ranks && r < plan->graph->n_ranks; r++)
        if (m->peak_bytes[r] > run->peak[r])
            run->peak[r] = m->peak_bytes[r];
    run->sum_ms += m->makespan_ms;
    run->sum_span += m->max_span_ms;
    run->sum_bubble += m->bubble_ratio;
    run->sum_plan += plan->plan_time_ms;
    if (m->mfu < 0)
        run->mfu_known = 0;
    else
        run->sum_mfu += m->mfu;
    if (m->cap_violations > 0) {
        run->infeasible++;
        run->cap_bytes = plan->graph->memory_cap_bytes;
        if (m->max_peak_bytes > run->worst_peak)
            run->worst_peak = m->max_peak_bytes;
        if (!o->quiet)
            fprintf(stderr, "loom plan: warning: iteration %d is INFEASIBLE: it exceeds the "
                    "memory cap on %d rank(s)\n", k, m->cap_violations);
    }
}

/* Iteration k's line: a member of --json's "iterations", else a row of
 * the table (with its header first). */
static void print_row(plan_run *run, const plan_cli *o, FILE *out, const loom_plan *plan,
                      int32_t k)
{
    const loom_metrics *m = &plan->metrics;
    if (run->iters) {
        fputs(k ? ",\n    {" : "\n    {", run->iters);
        fprintf(run->iters, "\"iteration\": %d, ", plan->iteration ? plan->iteration->index : k);
        json_metrics(run->iters, plan);
        fputc('}', run->iters);
        return;
    }
    if (o->quiet)
        return;
    if (run->header)
        fprintf(out, "%-5s %12s %8s %8s %10s  %s\n", "iter", "makespan_ms", "bubble", "mfu",
                "plan_ms", "candidate");
    run->header = 0;
    char mfu[16];
    if (m->mfu < 0)
        snprintf(mfu, sizeof mfu, "n/a");
    else
        snprintf(mfu, sizeof mfu, "%.3f", m->mfu);
    if (m->cap_violations > 0)
        fprintf(out, "%-5d %12s %7.2f%% %8s %10.1f  %s (peak %.3f GiB > cap %.3f GiB)\n", k,
                "INFEASIBLE", 100 * m->bubble_ratio, mfu, plan->plan_time_ms, plan->label,
                (double)m->max_peak_bytes / 1073741824.0,
                plan->graph->memory_cap_bytes / 1073741824.0);
    else
        fprintf(out, "%-5d %12.3f %7.2f%% %8s %10.1f  %s\n", k, m->makespan_ms,
                100 * m->bubble_ratio, mfu, plan->plan_time_ms, plan->label);
}

/* Writes iteration k's files into the --out folder being staged (its own
 * iter-NNN/ when the run has several) and notes once why schedule.csv
 * was not written. */
static int write_iteration(plan_run *run, const plan_cli *o, const loom_plan *plan, int32_t k,
                           loom_error *err)
{
    char sub[32];
    snprintf(sub, sizeof sub, "iter-%03d", k);
    int rc = loom_out_dir_write(o->out, plan, run->n > 1 ? sub : NULL, err);
    if (rc != LOOM_OK) {
        fprintf(stderr, "loom plan: %s\n", err->message);
        return rc;
    }
    loom_error why;
    if (!o->quiet && !run->csv_noted && loom_schedule_csv_check(plan, &why) != LOOM_OK) {
        fprintf(stderr, "loom plan: note: %s (plan.json: \"schedule_csv\")\n", why.message);
        run->csv_noted = 1;
    }
    return LOOM_OK;
}

/* Plans iteration k: reports a failure (on the channel too), else tallies,
 * prints and writes the plan. */
static int plan_iteration(plan_run *run, const plan_cli *o, loom_channel *ch, loom_session *s,
                          int32_t k, loom_error *err)
{
    FILE *out = loom_cli_out();
    loom_plan plan;
    loom_progress_update(run->bar, "", k, run->n, run->done);
    if (ch)
        loom_channel_begin(ch, k, run->limit_ms);
    int rc = loom_session_plan(s, k, &plan, err);
    loom_progress_clear(run->bar);
    if (rc != LOOM_OK) {
        fprintf(stderr, "loom plan: iteration %d: %s\n", k, err->message);
        if (ch) /* the iteration ends here: the parent expects no result */
            loom_channel_fail(ch, k, rc, err->message);
        if (rc == LOOM_EINFEASIBLE && strstr(err->message, "memory cap"))
            memory_hint(s, &o->a, k);
        return rc;
    }
    if (ch) {
        loom_iter_result r;
        result_of(&plan, k, &r);
        loom_channel_result(ch, &r);
    }
    tally(run, o, s, &plan, k);
    print_row(run, o, out, &plan, k);
    if (o->out && (rc = write_iteration(run, o, &plan, k, err)) != LOOM_OK) {
        loom_plan_clear(&plan);
        return rc;
    }
    if (!o->quiet && !o->json && run->n == 1)
        loom_write_summary(&plan, out, err);
    if (ch)
        fflush(out); /* keep the rows printed so far if a plugin crashes later */
    loom_plan_clear(&plan);
    run->done++;
    return LOOM_OK;
}

/* Ends the progress display and the memory streams, and writes the
 * --progress-csv curve of a run that planned something. */
static int run_end(plan_run *run, const plan_cli *o, loom_session *s, int rc, loom_error *err)
{
    if (run->bar) {
        loom_session_set_progress(s, NULL, NULL);
        loom_progress_finish(run->bar);
        loom_progress_free(run->bar);
    }
    if (run->iters)
        fclose(run->iters);
    if (run->curve)
        fclose(run->curve);
    if (o->progress_csv && run->done > 0 && (rc == LOOM_OK || rc == LOOM_EINTERRUPTED)) {
        int crc = run->curve_text
                      ? loom_out_target_write(o->curve, put_text, run->curve_text, err)
                      : loom_set_error(err, LOOM_ENOMEM, "--progress-csv: out of memory");
        if (crc != LOOM_OK) {
            fprintf(stderr, "loom plan: --progress-csv: %s\n", err->message);
            rc = crc;
        }
    }
    return rc;
}

/* The run's means: --json's object, or after several iterations the mean
 * line (or the infeasible one). */
static void print_totals(const plan_run *run, const plan_cli *o, loom_session *s, FILE *out)
{
    int32_t done = run->done;
    loom_session_info info;
    loom_session_info_get(s, &info);
    if (o->json) {
        fprintf(out, "{\"makespan_ms\": %.6f, \"span_ms\": %.6f, \"bubble_ratio\": %.6f, "
                "\"peak_mem_bytes\": [",
                run->sum_ms / done, run->sum_span / done, run->sum_bubble / done);
        for (int32_t r = 0; r < run->ranks; r++)
            fprintf(out, "%s%lld", r ? ", " : "", (long long)run->peak[r]);
        fprintf(out, "], \"plan_time_ms\": %.3f, \"mfu\": ", run->sum_plan / done);
        json_num(out, run->mfu_known ? run->sum_mfu / done : -1);
        fprintf(out, ", \"feasible\": %s", run->infeasible ? "false" : "true");
        fprintf(out, ", \"mean_iteration_ms\": %.6f, ", run->sum_ms / done);
        if (info.problem->kind == LOOM_PROBLEM_MODEL) {
            fputs("\"layout\": ", out);
            loom_tune_plan_layout_json(out, info.problem, run->used, info.micro_batch_size,
                                       info.global_batch);
            fputs(", ", out);
        }
        fprintf(out, "\"iterations\": [%s\n  ]}\n", run->iter_json ? run->iter_json : "");
    } else if (!o->quiet && run->n > 1 && run->infeasible) {
        fprintf(out, "INFEASIBLE (peak %.3f GiB > cap %.3f GiB) in %d of %d iterations: "
                "the simulated mean iteration %.3f ms is not a valid result (%s)\n",
                (double)run->worst_peak / 1073741824.0, run->cap_bytes / 1073741824.0,
                run->infeasible, done, run->sum_ms / done, info.manifest_name);
    } else if (!o->quiet && run->n > 1) {
        fprintf(out, "mean iteration %.3f ms, mean bubble %.2f%%, mean plan time %.1f ms over "
                "%d iterations (%s)\n",
                run->sum_ms / done, 100 * run->sum_bubble / done, run->sum_plan / done, done,
                info.manifest_name);
    }
}

/* Opens the session, plans every iteration, prints and writes; returns
 * the exit code. `ch` is the isolation channel, or NULL in-process. */
static int run_plan(const plan_cli *o, loom_channel *ch)
{
    loom_session *s = NULL;
    loom_error err = {0};
    int rc = open_session(o, ch, &s, &err);
    if (rc != LOOM_OK)
        return loom_cli_exit_for_status(rc);
    plan_run run;
    run_start(&run, o, s);
    for (int32_t k = 0; k < run.n; k++) {
        rc = plan_iteration(&run, o, ch, s, k, &err);
        if (rc != LOOM_OK)
            break;
        if (loom_interrupt_requested()) {
            fprintf(stderr, "loom plan: interrupted: kept the best plan found so far; %d "
                    "iteration(s) planned%s%s\n", run.done, o->out_dir ? ", written to " : "",
                    o->out_dir ? o->out_dir : "");
            rc = LOOM_EINTERRUPTED;
            break;
        }
    }
    rc = run_end(&run, o, s, rc, &err);
    free(run.curve_text);
    if (rc == LOOM_OK && run.done > 0)
        print_totals(&run, o, s, loom_cli_out());
    free(run.iter_json);
    free(run.peak);
    free(run.used);
    loom_session_close(s);
    /* The outputs appear as a whole: a finished run's, or what an
     * interrupted one kept; after a failure the previous set stays. */
    if (o->out && run.done > 0 && (rc == LOOM_OK || rc == LOOM_EINTERRUPTED)) {
        int crc = loom_out_dir_commit(o->out, &err);
        if (crc != LOOM_OK) {
            fprintf(stderr, "loom plan: %s\n", err.message);
            rc = crc;
        }
    }
    return loom_cli_io_check(loom_cli_exit_for_status(rc));
}

/* run_plan as an isolation body. */
static int plan_body(void *user, loom_channel *ch)
{
    return run_plan(user, ch);
}

static volatile sig_atomic_t parent_interrupted;

/* SIGINT in the parent of an isolated run: isolation passes the first one
 * on to the child (its own process group), which keeps its best plan and
 * stops; the parent waits for it. A second Ctrl-C stops both at once:
 * isolation kills the child's group, then this removes the unfinished
 * output folder and ends the parent. */
static void on_parent_sigint(int sig)
{
    if (sigints++ == 0)
        parent_interrupted = 1;
    else
        die_of(sig);
}

/* Runs the planning body under isolation and reports what the isolation
 * caught; returns the exit code. */
static int run_isolated(plan_cli *o)
{
    loom_run_output out;
    loom_error err = {0};
    struct sigaction old;
    loom_cli_catch(SIGINT, on_parent_sigint, &old);
    int rc = loom_isolate_call(&o->iso, plan_body, o, NULL, NULL, &out, &err);
    sigaction(SIGINT, &old, NULL);
    int code;
    if (rc != LOOM_OK) {
        fprintf(stderr, "loom plan: %s\n", err.message);
        code = loom_cli_exit_for_status(rc);
    } else if (out.failure.kind == LOOM_FAIL_SIGNAL && out.failure.signal == SIGINT &&
               parent_interrupted) {
        fprintf(stderr, "loom plan: interrupted\n");
        code = loom_cli_exit_for_status(LOOM_EINTERRUPTED);
    } else if (out.failure.kind != LOOM_FAIL_NONE && out.failure.kind != LOOM_FAIL_STATUS) {
        char buf[1024];
        loom_failure_describe(&out.failure, buf, sizeof buf);
        fprintf(stderr, "loom plan: %s\n", buf);
        code = loom_cli_exit_for_status(loom_failure_status(&out.failure));
    } else {
        code = out.body_status;
    }
    loom_run_output_clear(&out);
    return code;
}

enum { OPT_OUT = 0x100, OPT_PROGRESS_CSV, OPT_JSON, OPT_QUIET, OPT_ISOLATE, OPT_NO_ISOLATE,
       OPT_TIMEOUT_MS, OPT_MEMORY_LIMIT_MB };

static const loom_cli_option plan_options[] = {
    {"out", 1, OPT_OUT},           {"progress-csv", 1, OPT_PROGRESS_CSV},
    {"json", 0, OPT_JSON},         {"quiet", 0, OPT_QUIET},
    {"isolate", 0, OPT_ISOLATE},   {"no-isolate", 0, OPT_NO_ISOLATE},
    {"timeout-ms", 1, OPT_TIMEOUT_MS}, {"memory-limit-mb", 1, OPT_MEMORY_LIMIT_MB},
    {NULL, 0, 0}};

/* One option of `loom plan` (loom_cli_spec.handle). */
static int plan_option(void *ctx, int key, const char *name, const char *v)
{
    plan_cli *o = ctx;
    double d;
    switch (key) {
    case OPT_OUT: o->out_dir = v; return 0;
    case OPT_PROGRESS_CSV: o->progress_csv = v; return 0;
    case OPT_JSON: o->json = 1; return 0;
    case OPT_QUIET: o->quiet = 1; return 0;
    case OPT_ISOLATE: o->iso.isolate = 1; return 0;
    case OPT_NO_ISOLATE: o->iso.isolate = 0; return 0;
    case OPT_TIMEOUT_MS:
        if (loom_cli_number("plan", name, v, 0, 1e9, &d))
            return -1;
        o->iso.timeout_ms = d;
        o->iso.timeout_given = 1;
        return 0;
    case OPT_MEMORY_LIMIT_MB:
        if (loom_cli_number("plan", name, v, 0, (double)(1 << 30), &d))
            return -1;
        o->iso.memory_limit_mb = (int64_t)d;
        return 0;
    default:
        loom_cli_error("plan", "unexpected argument '%s'", v);
        return -1;
    }
}

int loom_cmd_plan(int argc, char **argv)
{
    plan_cli o;
    memset(&o, 0, sizeof o);
    loom_session_args_init(&o.a);
    o.iso.timeout_ms = LOOM_ISOLATE_DEFAULT_TIMEOUT_MS;
    o.iso.memory_limit_mb = LOOM_ISOLATE_DEFAULT_MEMORY_MB;
    o.iso.keep_stdout = 1;
    static const char *const conflicts[][2] = {{"isolate", "no-isolate"}, {NULL, NULL}};
    loom_cli_spec spec = {"plan", plan_options, &o.a, conflicts, plan_option, &o};
    int parsed = loom_cli_parse(&spec, argc, argv);
    if (parsed == 1) {
        usage(loom_cli_out());
        return LOOM_EXIT_OK;
    }
    if (parsed < 0) {
        fprintf(stderr, "`loom plan --help` lists the options.\n");
        return LOOM_EXIT_USAGE;
    }
    if (o.out_dir) {
        loom_error err = {0};
        if (loom_out_dir_begin(o.out_dir, &o.out, &err) != LOOM_OK) {
            fprintf(stderr, "loom plan: %s\n", err.message);
            return LOOM_EXIT_USAGE;
        }
        signal_out = o.out;
    }
    if (o.progress_csv) {
        loom_error err = {0};
        if (loom_out_target_open(o.progress_csv, &o.curve, &err) != LOOM_OK) {
            fprintf(stderr, "loom plan: --progress-csv: %s\n", err.message);
            signal_out = NULL;
            loom_out_dir_close(o.out);
            return LOOM_EXIT_USAGE;
        }
    }
    static const int term[] = {SIGTERM, SIGHUP};
    for (int k = 0; k < 2; k++) {
        struct sigaction sa;
        if (sigaction(term[k], NULL, &sa) == 0 && sa.sa_handler != SIG_IGN)
            loom_cli_catch(term[k], on_term, NULL); /* not when ignored (nohup) */
    }
    int code = o.iso.isolate ? run_isolated(&o) : run_plan(&o, NULL);
    signal_out = NULL;
    loom_out_dir_close(o.out); /* the staging folder, unless it is in place */
    loom_out_target_close(o.curve);
    return code;
}

