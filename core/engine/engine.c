/* engine.c - runs a pipeline for one iteration: partitioners fill the
 * candidate set, the core builds a stage graph per candidate, the ranker
 * searches with the evaluator, and the chosen plan is re-simulated with
 * every per-stage and per-rank figure recorded. */
#include <stdlib.h>
#include <string.h>
#include "engine_api.h"
#include "guarded.h"
#include "pipeline.h"

void loom_plan_clear(loom_plan *plan)
{
    if (!plan)
        return;
    loom_partition_free(plan->partition);
    loom_graph_free(plan->graph);
    loom_schedule_free(plan->schedule);
    free(plan->metrics.span_ms);
    free(plan->metrics.peak_bytes);
    free(plan->metrics.start_ms);
    free(plan->metrics.end_ms);
    free(plan->metrics.compute_ms);
    free(plan->metrics.p2p_wait_ms);
    free(plan->metrics.dp_sync_ms);
    free(plan->metrics.optimizer_ms);
    free(plan->metrics.bubble_ms);
    free(plan->priorities);
    memset(plan, 0, sizeof *plan);
}

static int fail_step(loom_step *st, int rc, loom_error *err)
{
    return loom_plugin_fail(err, rc, st->ctx.plugin_id);
}

/* Re-simulates the chosen schedule with every optional output recorded.
 * The plan takes the candidate graph *base (the evaluator's, which it
 * leaves NULL) with the last run's policies written in, instead of a copy. */
static int finish_plan(loom_plan *plan, loom_evaluator *ev, loom_stage_graph **base,
                       loom_error *err)
{
    const loom_stage_graph *g = loom_evaluator_graph(ev);
    const loom_schedule *s = loom_evaluator_schedule(ev);
    loom_evaluator_write_policies(ev, *base);
    plan->graph = *base;
    *base = NULL;
    plan->schedule = loom_schedule_new(s->n_ranks, s->n_stages);
    plan->metrics.span_ms = calloc((size_t)g->n_ranks, sizeof(double));
    plan->metrics.peak_bytes = calloc((size_t)g->n_ranks, sizeof(int64_t));
    plan->metrics.start_ms = calloc((size_t)g->n_stages + 1, sizeof(double));
    plan->metrics.end_ms = calloc((size_t)g->n_stages + 1, sizeof(double));
    plan->metrics.compute_ms = calloc((size_t)g->n_ranks, sizeof(double));
    plan->metrics.p2p_wait_ms = calloc((size_t)g->n_ranks, sizeof(double));
    plan->metrics.dp_sync_ms = calloc((size_t)g->n_ranks, sizeof(double));
    plan->metrics.optimizer_ms = calloc((size_t)g->n_ranks, sizeof(double));
    plan->metrics.bubble_ms = calloc((size_t)g->n_ranks, sizeof(double));
    if (!plan->graph || !plan->schedule || !plan->metrics.span_ms || !plan->metrics.peak_bytes ||
        !plan->metrics.start_ms || !plan->metrics.end_ms || !plan->metrics.compute_ms ||
        !plan->metrics.p2p_wait_ms || !plan->metrics.dp_sync_ms ||
        !plan->metrics.optimizer_ms || !plan->metrics.bubble_ms)
        return loom_set_error(err, LOOM_ENOMEM, "plan: out of memory");
    memcpy(plan->schedule->rank_off, s->rank_off, (size_t)(s->n_ranks + 1) * sizeof(int32_t));
    memcpy(plan->schedule->order, s->order, (size_t)s->n_stages * sizeof(int32_t));
    if (loom_schedule_fills(s))
        memcpy(plan->schedule->fill_hosts, s->fill_hosts, (size_t)s->n_stages * sizeof(int32_t));
    return loom_simulate(plan->graph, plan->schedule, &plan->metrics, err);
}

/* Sets the plan's lower bounds and rejects a plan below them: a makespan
 * under the graph's bound (busiest rank's work, longest chain) or an
 * interleaver bound that is not finite, negative, or above the plan's own
 * makespan means a broken plugin, named by id. */
static int check_bound(loom_plan *plan, double inter_bound, const char *inter_id,
                       loom_error *err)
{
    double lb = loom_graph_lower_bound_ms(plan->graph, plan->schedule);
    if (lb < 0)
        return loom_set_error(err, LOOM_ENOMEM, "plan: out of memory");
    double span = plan->metrics.makespan_ms;
    double eps = 1e-9 * (lb > 1 ? lb : 1);
    if (span < lb - eps)
        return loom_set_error(err, LOOM_EPLUGIN,
                              "plugin %s: its order's makespan %.9g ms is below the problem's "
                              "lower bound %.9g ms (busiest rank's work or longest dependency "
                              "chain); the plan is rejected", inter_id, span, lb);
    if (!(inter_bound >= 0 && inter_bound <= span + 1e-9 * (span > 1 ? span : 1)))
        return loom_set_error(err, LOOM_EPLUGIN,
                              "plugin %s: claimed a makespan lower bound of %.9g ms, expected "
                              "a number in [0, %.9g] (its own order's makespan)", inter_id,
                              inter_bound, span);
    plan->interleaver_bound_ms = inter_bound;
    plan->lower_bound_ms = inter_bound > lb ? (inter_bound < span ? inter_bound : span) : lb;
    return LOOM_OK;
}

/* Candidate c's stage graph, built afresh (stage-times: the one graph). */
static int build_graph(loom_pipeline *pl, const loom_problem *problem, const loom_iteration *it,
                       const loom_candidates *set, int32_t c, int split, loom_stage_graph **out,
                       loom_error *err)
{
    int rc;
    if (!set) { /* the problem's cap: the command line's over the file's (open_problem) */
        rc = loom_graph_from_stage_times(problem->stage_times, split, out, err);
        if (rc == LOOM_OK)
            (*out)->memory_cap_bytes = problem->memory_cap_bytes;
    } else {
        if (split)
            set->items[c]->split_backward = 1;
        rc = loom_graph_build(&pl->steps[pl->cost_model].ctx, problem, it, set->items[c], out,
                              err);
    }
    if (rc == LOOM_OK)
        loom_graph_stamp(*out);
    return rc;
}

/* A plugin wrote into candidate c's graph during the search: finds which,
 * replaying the chosen priorities on a fresh copy with write checks (the
 * interleaver or memory tuner when the replay catches it, else the
 * ranker), and returns LOOM_EPLUGIN naming it. */
static int blame_writer(loom_pipeline *pl, const loom_problem *problem, const loom_iteration *it,
                        const loom_candidates *set, int32_t c, int split, const float *prio,
                        loom_error *err)
{
    loom_stage_graph *fresh = NULL;
    loom_evaluator *ev = NULL;
    loom_metrics m = LOOM_METRICS_INIT;
    loom_error why = {0, ""};
    loom_step *rk = &pl->steps[pl->ranker];
    int rc = build_graph(pl, problem, it, set, c, split, &fresh, &why);
    if (rc == LOOM_OK)
        rc = loom_evaluator_create(&rk->ctx, fresh, &ev, &why);
    if (rc == LOOM_OK) {
        loom_evaluator_check_writes(ev, 1);
        rc = loom_evaluator_run(ev, prio, &m, &why);
    }
    loom_mark_step(pl, -1);
    loom_evaluator_destroy(ev);
    loom_graph_free(fresh);
    if (rc == LOOM_EPLUGIN && strstr(why.message, "read-only")) {
        *err = why;
        return LOOM_EPLUGIN;
    }
    return loom_set_error(err, LOOM_EPLUGIN,
                          "plugin %s: candidate %d's stage graph changed during the search; "
                          "the graphs a ranker, interleaver or memory tuner is given are "
                          "read-only",
                          rk->ctx.plugin_id, c);
}

/* What one planning run holds between its steps: the candidates, their
 * graphs and digests, and the priorities buffer the ranker writes. */
typedef struct engine_run {
    loom_pipeline *pl;
    const loom_problem *problem;
    const loom_iteration *it;
    int split;                 /* the interleaver wants I and W stages */
    loom_candidates *set;      /* NULL for a stage-times problem */
    loom_stage_graph **graphs; /* n of them (into outlines when it has them) */
    uint64_t *digest;          /* per graph, before the search */
    loom_stage_graph *outlines; /* n outlines for a counts-only ranker, or NULL */
    loom_stage_graph *outlines_given; /* their copy, to check the ranker left them */
    loom_guarded prio;         /* the priorities buffer the ranker writes */
    int32_t n, offered, max_groups;
} engine_run;

/* Runs the partitioners in order over a fresh candidate set (a declining
 * one is skipped) and keeps the run's fixed candidate alone when it has
 * one; run->offered: how many candidates they offered. */
static int partition(engine_run *run, loom_error *err)
{
    loom_pipeline *pl = run->pl;
    loom_candidates *set = run->set = loom_candidates_new(run->problem, run->it);
    if (!set)
        return loom_set_error(err, LOOM_ENOMEM, "plan: out of memory");
    for (int i = 0; i < pl->n_partitioners; i++) {
        loom_step *st = &pl->steps[pl->first_partitioner + i];
        loom_mark_step(pl, pl->first_partitioner + i);
        int rc = st->vt.partitioner.partition(st->instance, run->problem, run->it, set, err);
        loom_mark_step(pl, -1);
        if (rc == LOOM_DECLINED)
            continue;
        if (rc != LOOM_OK)
            return fail_step(st, rc, err);
    }
    if (set->n == 0)
        return loom_set_error(err, LOOM_EINVAL, "plan: no partitioner produced a candidate");
    run->offered = set->n;
    pl->offered = run->offered;
    if (pl->fixed_candidate >= 0) { /* the run's choice: that candidate alone */
        if (pl->fixed_candidate >= set->n)
            return loom_set_error(err, LOOM_EINVAL,
                                  "plan: the run's candidate %d is not offered in iteration "
                                  "%d (its partitioners offer %d)",
                                  pl->fixed_candidate, run->it ? run->it->index : 0, set->n);
        for (int32_t c = set->n - 1; c >= 0; c--)
            if (c != pl->fixed_candidate)
                set->remove(set, c);
    }
    return LOOM_OK;
}

/* loom_pipeline.outline_build: candidate c's full graph. */
static int build_outlined(void *user, int32_t c, loom_stage_graph **out, loom_error *err)
{
    engine_run *run = user;
    return build_graph(run->pl, run->problem, run->it, run->set, c, run->split, out, err);
}

/* The ranker reads only the graphs' counts and the set has several
 * candidates: gives it outlines (loom_graph_outline), one full graph built
 * per evaluator it creates. */
static int ranks_outlines(const engine_run *run)
{
    const loom_step *rk = &run->pl->steps[run->pl->ranker];
    return run->set && run->set->n > 1 && rk->vt.ranker.reads == LOOM_RANKER_READS_COUNTS;
}

/* Fills run->outlines, one per candidate, and points run->graphs at them. */
static int build_outlines(engine_run *run, loom_error *err)
{
    int32_t count = run->set->n;
    run->graphs = calloc((size_t)count, sizeof *run->graphs);
    run->outlines = calloc((size_t)count, sizeof *run->outlines);
    run->outlines_given = malloc((size_t)count * sizeof *run->outlines_given);
    if (!run->graphs || !run->outlines || !run->outlines_given)
        return loom_set_error(err, LOOM_ENOMEM, "plan: out of memory");
    for (int32_t c = 0; c < count; c++) {
        if (run->split)
            run->set->items[c]->split_backward = 1;
        int rc = loom_graph_outline(run->problem, run->it, run->set->items[c], &run->outlines[c],
                                    err);
        if (rc != LOOM_OK)
            return rc;
        run->graphs[c] = &run->outlines[c];
    }
    memcpy(run->outlines_given, run->outlines, (size_t)count * sizeof *run->outlines);
    run->n = count;
    loom_pipeline *pl = run->pl;
    pl->outlines = run->outlines;
    pl->n_outlines = count;
    pl->outline_build = build_outlined;
    pl->outline_user = run;
    return LOOM_OK;
}

/* Builds the stage graph of every candidate (run->n of them), or the one
 * graph of a stage-times problem, and records each graph's digest; a
 * counts-only ranker's run gets outlines instead. */
static int build_graphs(engine_run *run, loom_error *err)
{
    if (ranks_outlines(run))
        return build_outlines(run, err);
    int32_t count = run->set ? run->set->n : 1;
    run->graphs = calloc((size_t)count, sizeof *run->graphs);
    if (!run->graphs)
        return loom_set_error(err, LOOM_ENOMEM, "plan: out of memory");
    for (int32_t c = 0; c < count; c++) {
        int rc = build_graph(run->pl, run->problem, run->it, run->set, c, run->split,
                             &run->graphs[c], err);
        if (rc != LOOM_OK)
            return rc;
        run->n++;
    }
    run->digest = malloc((size_t)run->n * sizeof *run->digest);
    if (!run->digest)
        return loom_set_error(err, LOOM_ENOMEM, "plan: out of memory");
    for (int32_t c = 0; c < run->n; c++)
        run->digest[c] = loom_graph_digest(run->graphs[c]);
    return LOOM_OK;
}

/* Runs the ranker over the graphs with the time budget; checks that it
 * kept to its buffer, chose a candidate offered and left every graph as
 * it was; the plan gets a copy of its priorities (ranking->priorities then
 * points there). */
static int rank(engine_run *run, loom_ranking *ranking, loom_plan *plan, loom_error *err)
{
    loom_pipeline *pl = run->pl;
    int32_t max_groups = 1, n = run->n;
    for (int32_t c = 0; c < n; c++)
        if (run->graphs[c]->n_groups > max_groups)
            max_groups = run->graphs[c]->n_groups;
    ranking->cap_priorities = max_groups;
    if (loom_guarded_alloc(&run->prio, (size_t)max_groups * sizeof(float)) != 0)
        return loom_set_error(err, LOOM_ENOMEM, "plan: out of memory");
    ranking->priorities = run->prio.data;
    loom_step *rk = &pl->steps[pl->ranker];
    rk->ctx.deadline_ms = pl->budget_ms > 0 ? loom_now_ms() + pl->budget_ms : -1;
    loom_mark_step(pl, pl->ranker);
    int rc = rk->vt.ranker.rank(rk->instance, (const loom_stage_graph *const *)run->graphs, n,
                                ranking, err);
    loom_mark_step(pl, -1);
    rk->ctx.deadline_ms = -1;
    if (pl->memory_tuner >= 0) /* a ranker may have set one (set_deadline) */
        pl->steps[pl->memory_tuner].ctx.deadline_ms = -1;
    if (!loom_guarded_intact(&run->prio) || ranking->priorities != run->prio.data ||
        ranking->cap_priorities != max_groups)
        return loom_set_error(err, LOOM_EPLUGIN, "plugin %s: wrote outside the priorities "
                              "buffer the host handed it (%d floats), or replaced the buffer "
                              "or its size", rk->ctx.plugin_id, max_groups);
    if (rc != LOOM_OK)
        return fail_step(rk, rc, err);
    plan->priorities = malloc((size_t)max_groups * sizeof(float));
    if (!plan->priorities)
        return loom_set_error(err, LOOM_ENOMEM, "plan: out of memory");
    memcpy(plan->priorities, run->prio.data, (size_t)max_groups * sizeof(float));
    ranking->priorities = plan->priorities; /* the host's copy from here on */
    if (ranking->candidate < 0 || ranking->candidate >= n)
        return loom_set_error(err, LOOM_EPLUGIN, "plugin %s: chose candidate %d of %d",
                              rk->ctx.plugin_id, ranking->candidate, n);
    if (run->outlines) {
        if (memcmp(run->outlines, run->outlines_given, (size_t)n * sizeof *run->outlines))
            return loom_set_error(err, LOOM_EPLUGIN,
                                  "plugin %s: wrote into the graph outlines it was given "
                                  "read-only", rk->ctx.plugin_id);
        return LOOM_OK;
    }
    for (int32_t c = 0; c < n; c++)
        if (loom_graph_digest(run->graphs[c]) != run->digest[c])
            return blame_writer(pl, run->problem, run->it, run->set, c, run->split,
                                ranking->priorities, err);
    return LOOM_OK;
}

/* Evaluates the chosen candidate once more, recording every figure, checks
 * the lower bounds and fills the plan's candidate, partition and label. */
static int finish(engine_run *run, const loom_ranking *ranking, loom_plan *plan,
                  loom_error *err)
{
    loom_pipeline *pl = run->pl;
    loom_step *rk = &pl->steps[pl->ranker];
    loom_step *inter = &pl->steps[pl->interleaver];
    plan->candidate =
        run->set && pl->fixed_candidate >= 0 ? pl->fixed_candidate : ranking->candidate;
    plan->n_candidates = run->offered;
    plan->evaluations = ranking->evaluations;

    /* the ranker's last evaluation, when it was of these priorities, is
     * the plan's (fifo's one run); else one more, with write checks, as
     * always behind a counts-only ranker */
    const loom_stage_graph *g = run->graphs[ranking->candidate];
    loom_stage_graph **base = &run->graphs[ranking->candidate];
    loom_stage_graph *built = NULL; /* the chosen outline's graph, built again */
    /* (no kept evaluator is bound to an outline: its graph is the one it built) */
    loom_evaluator *ev = loom_evaluator_take_kept(pl, g, ranking->priorities);
    int rc = LOOM_OK;
    if (run->outlines) {
        rc = build_graph(pl, run->problem, run->it, run->set, ranking->candidate, run->split,
                         &built, err);
        g = built;
        base = &built;
    }
    if (!ev && rc == LOOM_OK) {
        rc = loom_evaluator_create(&rk->ctx, g, &ev, err);
        if (rc == LOOM_OK) {
            loom_evaluator_check_writes(ev, 1);
            rc = loom_evaluator_run(ev, ranking->priorities, &plan->metrics, err);
        }
    }
    loom_mark_step(pl, -1);
    if (rc == LOOM_OK)
        rc = finish_plan(plan, ev, base, err);
    if (rc == LOOM_OK)
        rc = check_bound(plan, loom_evaluator_schedule(ev)->lower_bound_ms, inter->ctx.plugin_id,
                         err);
    loom_evaluator_destroy(ev);
    loom_graph_free(built);
    if (rc != LOOM_OK)
        return rc;
    if (run->set) {
        plan->partition = loom_partition_clone(run->set->items[ranking->candidate]);
        memcpy(plan->label, run->set->items[ranking->candidate]->label, sizeof plan->label);
    }
    return LOOM_OK;
}

/* Releases what a run holds. */
static void run_free(engine_run *run)
{
    loom_guarded_free(&run->prio);
    for (int32_t c = 0; c < run->n && !run->outlines; c++)
        loom_graph_free(run->graphs[c]);
    free(run->graphs);
    free(run->outlines);
    free(run->outlines_given);
    run->pl->outlines = NULL;
    run->pl->n_outlines = 0;
    run->pl->outline_build = NULL;
    run->pl->outline_user = NULL;
    free(run->digest);
    loom_candidates_free(run->set);
}

int loom_engine_plan(loom_pipeline *pl, const loom_problem *problem, const loom_iteration *it,
                     loom_plan *plan, loom_error *err)
{
    memset(plan, 0, sizeof *plan);
    loom_metrics_init(&plan->metrics);
    plan->problem = problem;
    plan->iteration = it;
    double t0 = loom_now_ms();
    loom_progress_log_reset(&pl->progress);
    pl->problem = problem;
    pl->evaluator = &loom_evaluator_service_v1;
    pl->partition_eval = &loom_partition_eval_service_v1;

    loom_step *inter = &pl->steps[pl->interleaver];
    engine_run run = {.pl = pl, .problem = problem, .it = it, .offered = 1};
    run.split = inter->vt.interleaver.wants_split_backward &&
                inter->vt.interleaver.wants_split_backward(inter->instance);
    pl->offered = 0;
    int stage_times = problem->kind == LOOM_PROBLEM_STAGE_TIMES;
    if (stage_times && run.split && !problem->stage_times->split_backward)
        return loom_set_error(err, LOOM_EINVAL,
                              "plugin %s: needs split backward stages (I and W), but the "
                              "stage-times problem gives backward_ms only; give "
                              "input_grad_ms and weight_grad_ms instead of backward_ms "
                              "(docs/formats.md), or use an interleaver that runs whole "
                              "backward stages", inter->ctx.plugin_id);
    if (stage_times)
        snprintf(plan->label, sizeof plan->label, "stage-times P=%d V=%d M=%d",
                 problem->stage_times->ranks, problem->stage_times->virtual_stages,
                 problem->stage_times->microbatches);
    int rc = stage_times ? LOOM_OK : partition(&run, err);
    if (rc == LOOM_OK)
        rc = build_graphs(&run, err);
    loom_ranking ranking = LOOM_RANKING_INIT;
    pl->keep_released = 1; /* the ranker's evaluators only */
    if (rc == LOOM_OK)
        rc = rank(&run, &ranking, plan, err);
    pl->keep_released = 0;
    if (rc == LOOM_OK)
        rc = finish(&run, &ranking, plan, err);
    (void)loom_evaluator_take_kept(pl, NULL, NULL); /* destroys what is left */
    if (rc == LOOM_OK)
        plan->plan_time_ms = loom_now_ms() - t0;
    run_free(&run);
    if (rc != LOOM_OK) {
        float *keep = plan->priorities;
        plan->priorities = NULL;
        free(keep);
        loom_plan_clear(plan);
    }
    return rc;
}
