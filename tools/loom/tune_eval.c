/* tune_eval.c - one configuration of `loom tune`: its closed-form bounds
 * (compute over the ranks, the pipeline's fill, the longest chain, the
 * static-memory floor) and its simulation with its manifest, exactly as
 * `loom plan --parallel ... --global-batch ...` plans it. */
#define _GNU_SOURCE
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <loom/sys/json.h>
#include <loom/sys/output.h>
#include <loom/sys/planner.h>
#include <loom/sys/session.h>
#include "tune.h"

#define GIB 1073741824.0

static const char *innermost(const char *message);

/* A printf'd string in malloc'd storage (NULL when out of memory). */
static char *format(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    return s;
}

int loom_tune_args(const loom_tune_search *t, const loom_tune_config *c, loom_session_args *a,
                   char *buf, size_t size, loom_error *err)
{
    const loom_parallel *p = &c->par;
    *a = t->base;
    a->manifest = t->manifests[c->manifest];
    a->model = t->model;
    a->cluster = t->cluster;
    a->global_batch = t->global_batch;
    a->micro_batch_size = c->micro_batch_size;
    a->seq_len = t->seq_len;
    (void)p;
    if (loom_tune_parallel_text(t, c, buf, size) != 0)
        return loom_set_error(err, LOOM_EINVAL, "layout text too long");
    a->parallel = buf;
    for (int k = 0; k < t->n_pins[c->manifest]; k++) {
        if (a->n_params >= LOOM_SESSION_MAX_OVERRIDES)
            return loom_set_error(err, LOOM_EINVAL, "too many --param options");
        a->params[a->n_params++] = t->pins[c->manifest][k];
    }
    return LOOM_OK;
}

/* 1 when every partitioner of the session is Megatron-LM's (one mixed
 * flow, position s on rank s): the fill bound holds for its plans. */
static int megatron_partitions(loom_session *s)
{
    loom_session_info info;
    loom_session_info_get(s, &info);
    int any = 0;
    for (int i = 0; i < info.config->n_steps; i++) {
        if (strcmp(info.config->steps[i].role, "partitioner") != 0)
            continue;
        const char *id = loom_pipeline_step_plugin_id(info.pipeline, i);
        if (!id || (strcmp(id, "org.loom.uniform") && strcmp(id, "org.loom.balanced-dp")))
            return 0;
        any = 1;
    }
    return any;
}

/* 1 when the layers split into P contiguous ranks can all finish by T:
 * rank r starts no earlier than the forward of the layers before it
 * (head) and then runs its own work. Greedy is exact here because taking
 * one more layer on a rank never tightens the next rank's budget (a
 * layer's head never exceeds its work). */
static int fill_fits(const loom_layout_floor *f, int32_t P, double T)
{
    int32_t l = 0;
    double head = 0;
    for (int32_t r = 0; r < P && l < f->n_layers; r++) {
        double used = head;
        if (used > T)
            return 0;
        while (l < f->n_layers && used + f->layer_work_ms[l] <= T) {
            used += f->layer_work_ms[l];
            head += fmin(f->layer_head_ms[l], f->layer_work_ms[l]);
            l++;
        }
    }
    return l == f->n_layers;
}

/* The least makespan any contiguous split of the layers over P ranks can
 * reach when each rank waits for the forward of the layers before it. */
static double fill_bound(const loom_layout_floor *f, int32_t P, double lo)
{
    double hi = lo;
    for (int32_t l = 0; l < f->n_layers; l++)
        hi += f->layer_work_ms[l] + f->layer_head_ms[l];
    if (fill_fits(f, P, lo))
        return lo;
    for (int i = 0; i < 60 && hi - lo > 1e-9 * hi; i++) {
        double mid = 0.5 * (lo + hi);
        if (fill_fits(f, P, mid))
            hi = mid;
        else
            lo = mid;
    }
    return lo; /* the largest value known not to fit: still a bound */
}

/* The memory cap of the session's problem. */
static double cap_of(loom_session *s)
{
    const loom_problem *pb = loom_session_problem(s);
    return pb->memory_cap_bytes > 0 ? pb->memory_cap_bytes : (double)pb->cluster->hbm_bytes;
}

/* Fills c's bound and static floor from a priced session. With a module
 * laid out on its own (listed), each GPU set bounds its own ranks: the
 * busiest set's work per rank, and the static memory per rank of the set
 * with the most. The chain and fill bounds of Megatron-LM's partitions
 * hold while every module runs on the top-level GPUs (a colocated module's
 * layers priced at their own TP and copies); a disjoint module's set runs
 * beside the pipeline, so they are left out there. A manifest whose partitioner chooses its own layouts gets no
 * bound: its plan may price modules at layouts other than c's. */
static int bound_from_floor(const loom_tune_search *t, loom_session *s,
                            loom_tune_config *c, const loom_layout_floor *f)
{
    int32_t P = c->par.pp;
    int listed = loom_session_problem(s)->module_layouts != NULL;
    double lb = listed ? f->set_work_ms : f->work_ms / P;
    int one_set = !listed || c->module_placement != LOOM_LAYOUT_DISJOINT;
    if (one_set && megatron_partitions(s)) { /* whole microbatches along one chain */
        lb = fmax(lb, f->chain_ms);
        if (c->par.vpp == 1 && P > 1)
            lb = fmax(lb, fill_bound(f, P, lb));
    }
    if (t->layouts[c->manifest] == 2)
        lb = 0;
    c->lower_bound_ms = lb;
    c->cap_bytes = cap_of(s);
    c->param_rank_bytes = listed ? f->set_param_bytes : f->param_bytes / P;
    c->state_rank_bytes = listed ? f->set_state_bytes : f->state_bytes / P;
    double cap = cap_of(s), need = c->param_rank_bytes + c->state_rank_bytes;
    if (need > cap) {
        c->static_reason =
            listed ? format("static memory: every split over the GPU sets leaves some rank with "
                            "at least %.2f GiB of parameters (%.2f GiB) and gradients + "
                            "optimizer states (%.2f GiB), over the cap of %.2f GiB",
                            need / GIB, c->param_rank_bytes / GIB, c->state_rank_bytes / GIB,
                            cap / GIB)
                   : format("static memory: every split over pp=%d leaves some rank with at "
                            "least %.2f GiB of parameters (%.2f GiB) and gradients + optimizer "
                            "states (%.2f GiB), over the cap of %.2f GiB", P, need / GIB,
                            c->param_rank_bytes / GIB, c->state_rank_bytes / GIB, cap / GIB);
        if (!c->static_reason)
            return LOOM_ENOMEM;
    }
    return LOOM_OK;
}

int loom_tune_bound(const loom_tune_search *t, loom_tune_config *c, loom_error *err)
{
    loom_session_args a;
    char buf[512];
    int rc = loom_tune_args(t, c, &a, buf, sizeof buf, err);
    if (rc != LOOM_OK)
        return rc;
    a.iterations = 1;
    loom_session *s = NULL;
    rc = loom_session_open(&s, &a, err);
    if (rc == LOOM_OK) {
        loom_layout_floor f;
        rc = loom_session_floor(s, 0, &f, err);
        if (rc == LOOM_OK && bound_from_floor(t, s, c, &f) != LOOM_OK)
            rc = loom_set_error(err, LOOM_ENOMEM, "out of memory");
        loom_layout_floor_clear(&f);
    }
    loom_session_close(s);
    if (rc != LOOM_OK && rc != LOOM_ENOMEM && rc != LOOM_EINTERRUPTED) {
        /* the layout cannot be priced: infeasible, with the reason */
        c->static_reason = format("cannot be priced: %s", innermost(err->message));
        return c->static_reason ? LOOM_OK : loom_set_error(err, LOOM_ENOMEM, "out of memory");
    }
    return rc;
}

void loom_tune_result_clear(loom_tune_result *r)
{
    free(r->peak_mem_bytes);
    free(r->reason);
    memset(r, 0, sizeof *r);
}

/* What fills a rank that went over the cap, for people. */
static char *over_cap_reason(const loom_tune_config *c, const loom_tune_result *r)
{
    int32_t worst = 0;
    for (int32_t k = 1; k < r->n_ranks; k++)
        if (r->peak_mem_bytes[k] > r->peak_mem_bytes[worst])
            worst = k;
    double peak = (double)r->peak_mem_bytes[worst];
    double stat = c->param_rank_bytes + c->state_rank_bytes;
    return format("memory: rank %d peaks at %.2f GiB over the cap of %.2f GiB; static memory "
                  "is %.2f GiB a rank on average (parameters %.2f, gradients + optimizer "
                  "states %.2f), activations fill the rest", worst, peak / GIB,
                  r->memory_cap_bytes / GIB, stat / GIB, c->param_rank_bytes / GIB,
                  c->state_rank_bytes / GIB);
}

/* The innermost cause of a planning error: past the last "the last: "
 * of a candidate chain and the "plugin <id>: " prefixes. */
static const char *innermost(const char *message)
{
    const char *p = message, *q;
    while ((q = strstr(p, "the last: ")) != NULL)
        p = q + strlen("the last: ");
    while (!strncmp(p, "plugin ", 7) && (q = strstr(p, ": ")) != NULL)
        p = q + 2;
    return p;
}

/* A planning failure as the reason of an infeasible result. */
static char *failure_reason(const loom_tune_config *c, int rc, const char *message)
{
    message = innermost(message);
    double stat = c->param_rank_bytes + c->state_rank_bytes;
    if (rc == LOOM_EINFEASIBLE)
        return format("memory: %s (the cap is %.2f GiB; static memory %.2f GiB a rank on "
                      "average: parameters %.2f GiB, gradients + optimizer states %.2f GiB; "
                      "activations the rest)", message, c->cap_bytes / GIB, stat / GIB,
                      c->param_rank_bytes / GIB, c->state_rank_bytes / GIB);
    return format("%s", message);
}

/* The reason t's runtime export refuses the plan (malloc'd), or NULL when
 * it states it or the search names no runtime; *rc a failure of the check. */
static char *runtime_refusal(const loom_tune_search *t, const loom_plan *plan, int *rc,
                             loom_error *err)
{
    char why[512];
    int fits = 1;
    *rc = t->runtime ? loom_export_fits(plan, t->runtime, &fits, why, sizeof why, err)
                     : LOOM_OK;
    return *rc == LOOM_OK && !fits ? format("%s: %s", t->runtime, why) : NULL;
}

/* Plans every iteration of an open session into r (a refusal of t's
 * runtime export in r->reason). */
static int plan_all(const loom_tune_search *t, loom_session *s, loom_tune_result *r,
                    int *failed, loom_error *err)
{
    loom_session_info info;
    loom_session_info_get(s, &info);
    int32_t n = info.n_iterations, bad = 0;
    for (int32_t k = 0; k < n; k++) {
        loom_plan plan;
        int rc = loom_session_plan(s, k, &plan, err);
        if (rc != LOOM_OK) {
            *failed = rc;
            return LOOM_OK;
        }
        const loom_metrics *m = &plan.metrics;
        if (!r->peak_mem_bytes) {
            r->n_ranks = plan.graph->n_ranks;
            r->peak_mem_bytes = calloc((size_t)r->n_ranks, sizeof *r->peak_mem_bytes);
            r->memory_cap_bytes = plan.graph->memory_cap_bytes;
            if (!r->peak_mem_bytes) {
                loom_plan_clear(&plan);
                return loom_set_error(err, LOOM_ENOMEM, "out of memory");
            }
        }
        for (int32_t q = 0; q < r->n_ranks && q < plan.graph->n_ranks; q++)
            if (m->peak_bytes[q] > r->peak_mem_bytes[q])
                r->peak_mem_bytes[q] = m->peak_bytes[q];
        r->makespan_ms += m->makespan_ms / n;
        r->bubble_ratio += m->bubble_ratio / n;
        if (m->mfu < 0 || r->mfu < 0)
            r->mfu = -1;
        else
            r->mfu += m->mfu / n;
        bad += m->cap_violations > 0;
        if (!r->reason)
            r->reason = runtime_refusal(t, &plan, &rc, err);
        loom_plan_clear(&plan);
        if (rc != LOOM_OK)
            return rc;
    }
    if (bad > 0) { /* over the cap: that reason comes first */
        free(r->reason);
        r->reason = NULL;
    }
    r->feasible = bad == 0 && !r->reason;
    return LOOM_OK;
}

int loom_tune_simulate(const loom_tune_search *t, loom_tune_config *c, loom_error *err)
{
    loom_session_args a;
    char buf[512];
    loom_tune_result *r = &c->result;
    loom_tune_result_clear(r);
    c->simulated = 1;
    int rc = loom_tune_args(t, c, &a, buf, sizeof buf, err);
    if (rc != LOOM_OK)
        return rc;
    loom_session *s = NULL;
    int failed = LOOM_OK;
    rc = loom_session_open(&s, &a, err);
    if (rc != LOOM_OK) { /* the layout itself is refused: a reason, not an error */
        failed = rc;
        rc = rc == LOOM_ENOMEM || rc == LOOM_EINTERRUPTED ? rc : LOOM_OK;
    } else {
        rc = plan_all(t, s, r, &failed, err);
    }
    loom_session_close(s);
    if (rc != LOOM_OK)
        return rc;
    if (failed == LOOM_ENOMEM || failed == LOOM_EINTERRUPTED)
        return failed;
    if (failed != LOOM_OK) {
        loom_tune_result_clear(r);
        r->reason = failure_reason(c, failed, err->message);
    } else if (!r->feasible && !r->reason) {
        r->reason = over_cap_reason(c, r);
    }
    if (!r->feasible && !r->reason)
        return loom_set_error(err, LOOM_ENOMEM, "out of memory");
    return LOOM_OK;
}

void loom_tune_search_clear(loom_tune_search *t)
{
    for (int32_t i = 0; i < t->n_configs; i++) {
        free(t->configs[i].static_reason);
        loom_tune_result_clear(&t->configs[i].result);
    }
    free(t->configs);
    t->configs = NULL;
    t->n_configs = 0;
    for (int32_t m = 0; m < t->n_manifests; m++) {
        free(t->manifest_names[m]);
        t->manifest_names[m] = NULL;
    }
    for (int32_t m = 0; m < t->n_module_names; m++) {
        free(t->module_names[m]);
        t->module_names[m] = NULL;
    }
    t->n_module_names = 0;
}
