/* api.c - the stable embedding API (loom/api.h) over a planning session. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <loom/api.h>
#include "output.h"
#include <loom/sys/problem.h>
#include <loom/sys/session.h>
#include "problem_inputs.h"
#include "run_priv.h"

/* A planner lives until it is closed and every result it made is freed:
 * a result's plan points into the planner's problem (model, cluster). */
struct loom_planner {
    loom_session session;
    atomic_int refs;   /* 1 while open, + 1 per live result */
};

struct loom_result {
    loom_planner *owner; /* holds a reference */
    loom_plan plan;
    loom_sample *samples;
    loom_iteration iteration;
};

const char *loom_version(void)
{
    return LOOM_VERSION_STRING;
}

int loom_planner_open(const loom_planner_options *o, loom_planner **out, loom_error *err)
{
    if (!out)
        return loom_set_error(err, LOOM_EINVAL, "loom_planner_open: no place for the planner");
    *out = NULL;
    if (!o || o->struct_size < offsetof(loom_planner_options, memory_cap_bytes))
        return loom_set_error(err, LOOM_EABI, "loom_planner_open: options struct_size %u is too small",
                              o ? o->struct_size : 0);
    loom_session_args a;
    loom_session_args_init(&a);
    a.manifest = o->manifest;
    a.model = o->model;
    a.cluster = o->cluster;
    a.parallel = o->parallel;
    if (o->struct_size >= sizeof *o) {
        a.memory_cap_bytes = o->memory_cap_bytes;
        a.has_seed = o->has_seed;
        a.seed = o->seed;
    }
    a.no_workload = 1;
    loom_planner *p = calloc(1, sizeof *p);
    if (!p)
        return loom_set_error(err, LOOM_ENOMEM, "out of memory");
    atomic_init(&p->refs, 1);
    int rc = loom_session_init(&p->session, &a, err);
    if (rc != LOOM_OK) {
        loom_session_release(&p->session);
        free(p);
        return rc;
    }
    if (p->session.problem.kind != LOOM_PROBLEM_MODEL) {
        loom_session_release(&p->session);
        free(p);
        return loom_set_error(err, LOOM_EINVAL, "loom_planner_open: needs a model problem");
    }
    *out = p;
    return LOOM_OK;
}

/* Drops one reference; the last one closes the session. */
static void planner_release(loom_planner *p)
{
    if (p && atomic_fetch_sub(&p->refs, 1) == 1) {
        loom_session_release(&p->session);
        free(p);
    }
}

void loom_planner_close(loom_planner *p)
{
    planner_release(p);
}

int loom_planner_plan(loom_planner *p, const loom_sample *samples, int32_t n, loom_result **out,
                      loom_error *err)
{
    if (!out)
        return loom_set_error(err, LOOM_EINVAL, "loom_planner_plan: no place for the result");
    *out = NULL;
    if (!p)
        return loom_set_error(err, LOOM_EINVAL, "loom_planner_plan: no planner");
    /* the rules every workload sample passes (NaN or negative seconds,
     * negative tokens, ... are refused as they are in JSON Lines) */
    int rc = loom_samples_validate("loom_planner_plan", samples, n, err);
    if (rc != LOOM_OK)
        return rc;
    loom_result *r = calloc(1, sizeof *r);
    if (!r || !(r->samples = malloc((size_t)n * sizeof *samples))) {
        free(r);
        return loom_set_error(err, LOOM_ENOMEM, "out of memory");
    }
    memcpy(r->samples, samples, (size_t)n * sizeof *samples);
    r->owner = p;
    atomic_fetch_add(&p->refs, 1);
    r->iteration.n_samples = n;
    r->iteration.samples = r->samples;
    /* the session refuses a plan with a number that is not finite, so the
     * getters below never return one */
    rc = loom_session_plan_iteration(&p->session, &r->iteration, &r->plan, err);
    if (rc != LOOM_OK) {
        loom_result_free(r);
        return rc;
    }
    r->plan.iteration = &r->iteration;
    *out = r;
    return LOOM_OK;
}

int loom_planner_plan_json(loom_planner *p, const char *json, loom_result **out, loom_error *err)
{
    if (!out)
        return loom_set_error(err, LOOM_EINVAL, "loom_planner_plan_json: no place for the result");
    *out = NULL;
    if (!p)
        return loom_set_error(err, LOOM_EINVAL, "loom_planner_plan_json: no planner");
    if (!json)
        return loom_set_error(err, LOOM_EINVAL, "loom_planner_plan_json: no JSON given");
    size_t len = strlen(json);
    char *text = malloc(len + 1);
    if (!text)
        return loom_set_error(err, LOOM_ENOMEM, "out of memory");
    memcpy(text, json, len + 1);
    for (size_t i = 0; i < len; i++)
        if (text[i] == '\n' || text[i] == '\r')
            text[i] = ' ';
    loom_workload *w = NULL;
    int rc = loom_workload_parse("<iteration>", text, len, &w, err);
    free(text);
    if (rc != LOOM_OK)
        return rc;
    rc = loom_planner_plan(p, w->iterations[0].samples, w->iterations[0].n_samples, out, err);
    loom_workload_free(w);
    return rc;
}

double loom_result_makespan_ms(const loom_result *r)
{
    return r ? r->plan.metrics.makespan_ms : -1;
}

double loom_result_bubble_ratio(const loom_result *r)
{
    return r ? r->plan.metrics.bubble_ratio : -1;
}

double loom_result_mfu(const loom_result *r)
{
    return r ? r->plan.metrics.mfu : -1;
}

double loom_result_plan_time_ms(const loom_result *r)
{
    return r ? r->plan.plan_time_ms : -1;
}

int32_t loom_result_ranks(const loom_result *r)
{
    return r && r->plan.graph ? r->plan.graph->n_ranks : 0;
}

int64_t loom_result_peak_bytes(const loom_result *r, int32_t rank)
{
    if (!r || !r->plan.graph || !r->plan.metrics.peak_bytes || rank < 0 ||
        rank >= r->plan.graph->n_ranks)
        return -1;
    return r->plan.metrics.peak_bytes[rank];
}

char *loom_result_plan_json(const loom_result *r, loom_error *err)
{
    if (!r) {
        loom_set_error(err, LOOM_EINVAL, "loom_result_plan_json: no result");
        return NULL;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) {
        loom_set_error(err, LOOM_ENOMEM, "out of memory");
        return NULL;
    }
    int rc = loom_write_plan_json(&r->plan, f, err);
    fclose(f);
    if (rc != LOOM_OK) {
        free(buf);
        return NULL;
    }
    return buf;
}

int loom_result_write(const loom_result *r, const char *dir, loom_error *err)
{
    if (!r || !dir)
        return loom_set_error(err, LOOM_EINVAL, "loom_result_write: expected a result and a "
                              "folder, found %s", r ? "no folder" : "no result");
    return loom_write_outputs(&r->plan, dir, err);
}

void loom_result_free(loom_result *r)
{
    if (!r)
        return;
    loom_plan_clear(&r->plan);
    free(r->samples);
    planner_release(r->owner);
    free(r);
}

void loom_free(void *p)
{
    free(p);
}
