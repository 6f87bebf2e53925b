/* mock_sim.c - the planner's simulator, problems, stage graphs and plans
 * behind SDK types, for plugin tests (loom/mock_sim.h). */
#include <loom/mock_sim.h>

#include <stdlib.h>
#include <string.h>

#include <loom/sys/session.h>
#include "engine_api.h"
#include "pipeline.h"
#include "run_priv.h"

#define MOCK_MAX_OPTIONS (2 * LOOM_SESSION_MAX_OVERRIDES)

struct loom_mock_planner {
    loom_session session;
    loom_session_args args;
    char *options[MOCK_MAX_OPTIONS]; /* owned copies the args point into */
    int n_options;
    loom_plan plan;
    int has_plan;
};

/* The core simulator as a "loom.simulator" v1 table. */
static const loom_simulator_service mock_simulator = {
    sizeof(loom_simulator_service), 1, loom_sim_scratch_new, loom_sim_scratch_free,
    loom_sim_run,
};

/* The core simulator's table (see loom/mock_sim.h). */
const loom_simulator_service *loom_mock_simulator(void)
{
    return &mock_simulator;
}

/* One simulation with a fresh scratch. */
int loom_mock_simulate(const loom_stage_graph *g, const loom_schedule *s, loom_metrics *m,
                       loom_error *err)
{
    return loom_simulate(g, s, m, err);
}

/* The engine's candidate set storage. */
loom_candidates *loom_mock_candidates_new(const loom_problem *problem, const loom_iteration *it)
{
    return loom_candidates_new(problem, it);
}

/* Frees a candidate set. */
void loom_mock_candidates_free(loom_candidates *set)
{
    loom_candidates_free(set);
}

/* Copies "name=value" into the planner and sets it on its args. */
static int take_option(loom_mock_planner *pl, const char *opt, loom_error *err)
{
    if (pl->n_options >= MOCK_MAX_OPTIONS)
        return loom_set_error(err, LOOM_EINVAL, "mock planner: more than %d options",
                              MOCK_MAX_OPTIONS);
    char *copy = strdup(opt);
    if (!copy)
        return loom_set_error(err, LOOM_ENOMEM, "mock planner: out of memory");
    pl->options[pl->n_options++] = copy;
    char *eq = strchr(copy, '=');
    if (eq)
        *eq = '\0';
    return loom_session_args_set(&pl->args, copy, eq ? eq + 1 : NULL, err);
}

/* Sets every option on a session's args, then opens the session. */
int loom_mock_planner_open(const char *const *options, loom_mock_planner **out, loom_error *err)
{
    if (!out)
        return loom_set_error(err, LOOM_EINVAL, "mock planner: no place for the planner");
    *out = NULL;
    loom_mock_planner *pl = calloc(1, sizeof *pl);
    if (!pl)
        return loom_set_error(err, LOOM_ENOMEM, "mock planner: out of memory");
    loom_session_args_init(&pl->args);
    int rc = LOOM_OK;
    for (int i = 0; options && options[i] && rc == LOOM_OK; i++)
        rc = take_option(pl, options[i], err);
    if (rc == LOOM_OK)
        rc = loom_session_init(&pl->session, &pl->args, err);
    else
        memset(&pl->session, 0, sizeof pl->session);
    if (rc != LOOM_OK) {
        loom_mock_planner_close(pl);
        return rc;
    }
    *out = pl;
    return LOOM_OK;
}

/* Clears the last plan, closes the session, frees the option copies. */
void loom_mock_planner_close(loom_mock_planner *pl)
{
    if (!pl)
        return;
    if (pl->has_plan)
        loom_plan_clear(&pl->plan);
    loom_session_release(&pl->session);
    for (int i = 0; i < pl->n_options; i++)
        free(pl->options[i]);
    free(pl);
}

/* The session's problem. */
const loom_problem *loom_mock_planner_problem(const loom_mock_planner *pl)
{
    return pl ? &pl->session.problem : NULL;
}

/* Iteration k of the problem's list, or NULL. */
const loom_iteration *loom_mock_planner_iteration(const loom_mock_planner *pl, int32_t k)
{
    if (!pl || !pl->session.problem.iterations || k < 0 || k >= pl->session.n_iterations)
        return NULL;
    return &pl->session.problem.iterations[k];
}

/* The step ctx the engine prices stages with (the cost model's). */
static loom_ctx *cost_ctx(loom_mock_planner *pl, loom_error *err)
{
    loom_pipeline *p = pl ? pl->session.pl : NULL;
    if (!p || p->cost_model < 0) {
        loom_set_error(err, LOOM_EINVAL, "mock planner: the manifest has no cost model");
        return NULL;
    }
    return &p->steps[p->cost_model].ctx;
}

/* The engine's graph build with the cost model step's ctx. */
int loom_mock_planner_graph(loom_mock_planner *pl, const loom_iteration *it,
                            const loom_partition *part, loom_stage_graph **out, loom_error *err)
{
    loom_ctx *ctx = cost_ctx(pl, err);
    if (!ctx)
        return err ? err->code : LOOM_EINVAL;
    if (!it || !part || !out)
        return loom_set_error(err, LOOM_EINVAL, "mock planner: graph needs an iteration, a "
                                                "partition and a place for the graph");
    return loom_graph_build(ctx, &pl->session.problem, it, part, out, err);
}

/* The "loom.partition_eval" service, called with the pipeline's ctx. */
int loom_mock_planner_evaluate(loom_mock_planner *pl, const loom_iteration *it,
                               const loom_partition *part, loom_metrics *out, loom_error *err)
{
    loom_ctx *ctx = cost_ctx(pl, err);
    if (!ctx)
        return err ? err->code : LOOM_EINVAL;
    return loom_partition_eval_service_v1.evaluate(ctx, it, part, out, err);
}

/* Plans iteration k into the planner's plan and points *out at it. */
int loom_mock_planner_plan(loom_mock_planner *pl, int32_t k, loom_mock_plan *out,
                           loom_error *err)
{
    if (!pl || !out)
        return loom_set_error(err, LOOM_EINVAL, "mock planner: plan needs a planner and a result");
    memset(out, 0, sizeof *out);
    if (pl->has_plan)
        loom_plan_clear(&pl->plan);
    memset(&pl->plan, 0, sizeof pl->plan);
    pl->has_plan = 1;
    int rc = loom_session_plan(&pl->session, k, &pl->plan, err);
    if (rc != LOOM_OK)
        return rc;
    out->partition = pl->plan.partition;
    out->graph = pl->plan.graph;
    out->schedule = pl->plan.schedule;
    out->metrics = &pl->plan.metrics;
    out->priorities = pl->plan.priorities;
    return LOOM_OK;
}
