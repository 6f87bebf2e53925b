/* isolate_plan.c - the planning body that isolation runs: opens the
 * session, plans every iteration and sends each result over the channel;
 * and the time limits an isolated iteration gets. */
#include <stdio.h>
#include <string.h>
#include "run_priv.h"
#include "engine_api.h"
#include "pipeline.h"

typedef struct plan_job {
    const loom_session_args *args;
    const loom_isolate_opts *opts;
    loom_channel *ch;
} plan_job;

double loom_isolate_search_budget_ms(const loom_pipeline *pl)
{
    if (pl->budget_ms > 0)
        return pl->budget_ms;
    if (pl->ranker < 0)
        return 0;
    const loom_step *st = &pl->steps[pl->ranker];
    for (int i = 0; i < st->n_params; i++) {
        const loom_param_value *v = &st->params[i];
        if (v->name && !strcmp(v->name, "budget_ms") &&
            (v->type == LOOM_PARAM_INT || v->type == LOOM_PARAM_DOUBLE))
            return v->d > 0 ? v->d : 0;
    }
    return 0;
}

double loom_isolate_iteration_limit(const loom_isolate_opts *opts, double budget_ms)
{
    if (!(budget_ms > 0))
        return opts->timeout_ms;
    double grace = budget_ms > LOOM_ISOLATE_GRACE_MS ? budget_ms : LOOM_ISOLATE_GRACE_MS;
    double limit = budget_ms + grace;
    if (opts->timeout_given && opts->timeout_ms > 0 && opts->timeout_ms < limit)
        return opts->timeout_ms;
    return limit;
}

/* Copies the figures of a finished plan into a result record. */
static void fill_result(const loom_plan *plan, int32_t k, loom_iter_result *r)
{
    memset(r, 0, sizeof *r);
    const loom_metrics *m = &plan->metrics;
    r->iteration = k;
    r->ranks = plan->graph ? plan->graph->n_ranks : 0;
    r->cap_violations = m->cap_violations;
    r->makespan_ms = m->makespan_ms;
    r->bubble_ratio = m->bubble_ratio;
    r->mfu = m->mfu;
    r->plan_time_ms = plan->plan_time_ms;
    r->peak_bytes = m->max_peak_bytes;
    r->evaluations = plan->evaluations;
}

/* Announces a resolved pipeline step on the job's channel, and to the
 * caller's on_step. */
static void announce_step(void *user, int32_t step, const char *plugin_id)
{
    plan_job *job = user;
    loom_channel_step(job->ch, step, plugin_id);
    if (job->args->on_step)
        job->args->on_step(job->args->on_step_user, step, plugin_id);
}

/* Opens the session, plans every iteration, closes it. */
static int plan_body(void *user, loom_channel *ch)
{
    plan_job *job = user;
    loom_session s;
    loom_error err = {0};
    loom_session_args args = *job->args;
    job->ch = ch;
    args.step_marker = loom_channel_step_marker(ch); /* the parent reads it */
    args.last_step_marker = loom_channel_last_step_marker(ch);
    if (loom_channel_fd(ch) < 0 && job->args->step_marker)
        args.step_marker = job->args->step_marker; /* in-process: the caller's */
    args.on_step = announce_step; /* before any plugin code runs */
    args.on_step_user = job;
    int rc = loom_session_init(&s, &args, &err);
    if (rc != LOOM_OK) {
        loom_channel_fail(ch, -1, rc, err.message);
        loom_session_release(&s);
        return rc;
    }
    loom_channel_info(ch, s.n_iterations, s.manifest_name);
    double limit = loom_isolate_iteration_limit(job->opts, loom_isolate_search_budget_ms(s.pl));
    for (int32_t k = 0; k < s.n_iterations; k++) {
        loom_plan plan;
        loom_channel_begin(ch, k, limit);
        rc = loom_session_plan(&s, k, &plan, &err);
        if (rc != LOOM_OK) {
            loom_channel_fail(ch, k, rc, err.message);
            break;
        }
        loom_iter_result r;
        fill_result(&plan, k, &r);
        loom_plan_clear(&plan);
        loom_channel_result(ch, &r);
        if (loom_interrupted && loom_channel_fd(ch) < 0) {
            loom_channel_fail(ch, k, LOOM_EINTERRUPTED, "interrupted");
            break;
        }
    }
    loom_session_release(&s);
    return rc;
}

int loom_isolate_plan(const loom_session_args *args, const loom_isolate_opts *opts,
                      loom_iter_fn on_iter, void *iter_user, loom_run_output *out,
                      loom_error *err)
{
    plan_job job = {args, opts, NULL};
    return loom_isolate_call(opts, plan_body, &job, on_iter, iter_user, out, err);
}
