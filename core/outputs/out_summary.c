/* out_summary.c - the human summary of a plan (summary.txt and what
 * `loom plan` prints): headline metrics, the parallel layout and GPU count
 * of a model problem, what torchtitan and Megatron-LM need, and a per-rank
 * table of span,
 * busy time, recomputation, idle time before the first and after the last
 * stage, idle share and peak memory against the cap. */
#include <stdlib.h>
#include "output.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/* One line naming the runtime exports written beside plan.json, or none
 * (plan.json's "exports" says why each other one is not). */
static int write_runtime_exports(const loom_plan *plan, FILE *out, loom_error *err)
{
    char reason[LOOM_OUT_REASON_MAX];
    int any = 0;
    fputs("  exports      ", out);
    for (size_t i = 0; i < loom_out_n_runtime_exports; i++) {
        const loom_out_format *f = &loom_out_runtime_exports[i];
        int fits = 0;
        int rc = f->fits(plan, &fits, reason, err);
        if (rc != LOOM_OK)
            return loom_error_prefix(err, rc, "summary");
        if (fits)
            fprintf(out, " %s", f->name);
        any |= fits;
    }
    fputs(any ? " (the others: plan.json exports)\n" : " none (plan.json exports says why)\n", out);
    return LOOM_OK;
}

/* The torchtitan placement (or why schedule.csv / a style is missing) and
 * the Megatron-LM layout when the plan has one. */
static int write_exports(const loom_plan *plan, FILE *out, loom_error *err)
{
    loom_out_exports x;
    int rc = loom_out_exports_find(plan, "summary", &x, err);
    if (rc != LOOM_OK)
        return rc;
    if (!x.csv_ok)
        fputs("  schedule.csv  not written (plan.json: schedule_csv.reason)\n", out);
    char why[LOOM_OUT_REASON_MAX];
    if (plan->problem && plan->problem->model && !loom_out_one_mesh(plan, why))
        fprintf(out, "  torchtitan    none runs it: %s\n", why);
    else if (x.placement.style && plan->graph->n_ranks == 1)
        fprintf(out, "  torchtitan    no pipeline: the whole model on one rank, %d "
                     "microbatches a step\n", x.microbatches);
    else if (x.placement.style)
        fprintf(out, "  torchtitan    %s style: pipeline_parallel_schedule %s, "
                     "pipeline_parallel_schedule_csv schedule.csv, %d microbatches\n",
                x.placement.style, x.placement.schedule, x.microbatches);
    else
        fputs("  torchtitan    no placement style fits (plan.json: placement.reason)\n", out);
    if (x.megatron)
        fprintf(out, "  megatron      --pipeline-model-parallel-layout %s\n", x.megatron);
    loom_out_exports_free(&x);
    return write_runtime_exports(plan, out, err);
}

/* Writes the summary; busy_ms, recompute_ms and first_ms are scratch of
 * n_ranks entries each. */
static int write_table(const loom_plan *plan, FILE *out, double *busy_ms,
                       double *recompute_ms, double *first_ms, loom_error *err)
{
    const loom_stage_graph *g = plan->graph;
    const loom_metrics *m = &plan->metrics;
    double cap = g->memory_cap_bytes;
    if (!(cap > 0) && plan->problem)
        cap = plan->problem->memory_cap_bytes;

    for (int32_t r = 0; r < g->n_ranks; r++) {
        busy_ms[r] = 0;
        first_ms[r] = m->makespan_ms; /* a rank without stages idles throughout */
    }
    for (int32_t s = 0; s < g->n_stages; s++) {
        int32_t r = g->rank[s];
        if (!loom_out_fill_hosts(plan->schedule, s))
            busy_ms[r] += m->end_ms[s] - m->start_ms[s];
        if (m->start_ms[s] < first_ms[r])
            first_ms[r] = m->start_ms[s];
    }
    loom_graph_recompute_ms(g, recompute_ms);

    fprintf(out, "Loom plan: %s\n", plan->label[0] ? plan->label : "(unlabelled)");
    if (plan->partition && plan->partition->label[0])
        fprintf(out, "  partition     %s\n", plan->partition->label);
    if (plan->n_candidates > 1)
        fprintf(out, "  candidate     %d of %d\n", plan->candidate + 1, plan->n_candidates);
    fprintf(out, "  stages        %d on %d ranks, %d microbatches\n", g->n_stages,
            g->n_ranks, g->n_microbatches);
    const loom_problem *pb = plan->problem;
    if (pb && pb->kind == LOOM_PROBLEM_MODEL && loom_out_layout(plan, 0)) {
        loom_out_summary_layouts(plan, out); /* per-module layouts */
    } else if (pb && pb->kind == LOOM_PROBLEM_MODEL) {
        const loom_parallel *p = &pb->parallel;
        long long gpus = (long long)p->tp * p->pp * p->dp * loom_parallel_cp(p);
        int32_t vpp = 1; /* the chosen candidate's, which may differ from p->vpp */
        for (int32_t st = 0; g->chunk && st < g->n_stages; st++)
            if (g->chunk[st] + 1 > vpp)
                vpp = g->chunk[st] + 1;
        if (loom_parallel_cp(p) > 1)
            fprintf(out, "  layout        tp %d x cp %d x pp %d x dp %d = %lld GPUs (vpp %d, %d "
                    "microbatches)\n", p->tp, p->cp, p->pp, p->dp, gpus, vpp, p->microbatches);
        else
            fprintf(out, "  layout        tp %d x pp %d x dp %d = %lld GPUs (vpp %d, %d "
                    "microbatches)\n", p->tp, p->pp, p->dp, gpus, vpp, p->microbatches);
    }
    if (plan->workload)
        fprintf(out, "  workload      %s\n", plan->workload);
    if (m->cap_violations > 0)
        fprintf(out, "  makespan      INFEASIBLE (peak %.3f GiB > cap %.3f GiB); the simulated "
                "%.3f ms is not a valid result\n", (double)m->max_peak_bytes / GIB, cap / GIB,
                m->makespan_ms);
    else
        fprintf(out, "  makespan      %.3f ms\n", m->makespan_ms);
    fprintf(out, "  bubble ratio  %.2f %%\n", m->bubble_ratio * 100);
    if (m->mfu >= 0)
        fprintf(out, "  MFU           %.2f %% (model FLOPs, no recomputation)\n", m->mfu * 100);
    else
        fputs("  MFU           n/a\n", out);
    if (m->hfu >= 0)
        fprintf(out, "  HFU           %.2f %% (hardware FLOPs, with recomputation)\n",
                m->hfu * 100);
    else
        fputs("  HFU           n/a\n", out);
    fprintf(out, "  plan time     %.3f ms (%lld evaluations)\n", plan->plan_time_ms,
            (long long)plan->evaluations);
    if (cap > 0)
        fprintf(out, "  memory cap    %.3f GiB per rank\n", cap / GIB);
    else
        fputs("  memory cap    none\n", out);
    int rc = write_exports(plan, out, err);
    if (rc != LOOM_OK)
        return rc;

    fputs("\n  rank     span ms     busy ms   recomp ms     fill ms    drain ms   idle %"
          "    peak GiB\n", out);
    int over = 0;
    for (int32_t r = 0; r < g->n_ranks; r++) {
        double idle = m->makespan_ms > 0 ? 100.0 * (1.0 - busy_ms[r] / m->makespan_ms) : 0;
        double drain = m->makespan_ms - first_ms[r] - m->span_ms[r];
        fprintf(out, "  %4d  %10.3f  %10.3f  %10.3f  %10.3f  %10.3f  %7.2f  %10.3f", r,
                m->span_ms[r], busy_ms[r], recompute_ms[r], first_ms[r], drain, idle,
                (double)m->peak_bytes[r] / GIB);
        if (cap > 0 && (double)m->peak_bytes[r] > cap) {
            fputs("  OVER CAP", out);
            over++;
        }
        fputc('\n', out);
    }
    if (over)
        fprintf(out, "\n  %d rank%s over the %.3f GiB memory cap\n", over,
                over == 1 ? "" : "s", cap / GIB);
    return LOOM_OK;
}

int loom_write_summary(const loom_plan *plan, FILE *out, loom_error *err)
{
    loom_out_frame frame;
    int rc = loom_out_begin(plan, "summary", &frame, err);
    if (rc == LOOM_OK) {
        size_t n = (size_t)plan->graph->n_ranks;
        double *busy = malloc(3 * n * sizeof(double));
        if (busy)
            rc = write_table(plan, out, busy, busy + n, busy + 2 * n, err);
        else
            rc = loom_set_error(err, LOOM_ENOMEM, "summary: out of memory");
        free(busy);
    }
    return loom_out_end(&frame, out, "summary", rc, err);
}
