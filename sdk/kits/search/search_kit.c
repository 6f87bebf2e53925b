/*
 * search_kit.c - params, session, candidate screening, budget and best
 * tracking shared by the search rankers (see <loom/kits/search.h>).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <loom/kits/search.h>

uint64_t loom_sk_job_seed(uint64_t seed, int64_t index)
{
    uint64_t z = seed ^ ((uint64_t)index * 0xD1B54A32D192ED03ull);
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint32_t loom_sk_below(uint64_t *state, uint32_t n)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return n ? (uint32_t)((z >> 32) * (uint64_t)n >> 32) : 0;
}

/* Runs one evaluation on evaluator ev. */
static int sk_eval_with(loom_sk *sk, loom_evaluator *ev, const float *prio,
                        loom_sk_result *res, loom_error *err)
{
    loom_metrics m = LOOM_METRICS_INIT;
    memset(res, 0, sizeof *res);
    int rc = sk->svc->run(ev, prio, &m, err);
    if (rc == LOOM_EINFEASIBLE || rc == LOOM_EDEADLOCK)
        return LOOM_OK;
    if (rc != LOOM_OK)
        return rc;
    res->ok = 1;
    res->makespan_ms = m.makespan_ms;
    res->violations = m.cap_violations;
    return LOOM_OK;
}

int loom_sk_evaluate(loom_sk *sk, int32_t worker, const float *prio,
                     loom_sk_result *res, loom_error *err)
{
    return sk_eval_with(sk, sk->ev[worker], prio, res, err);
}

float *loom_sk_worker_prio(loom_sk *sk, int32_t worker)
{
    return sk->work_prio + (size_t)worker * (size_t)sk->n_groups;
}

/* 1 when a beats b (feasible, fewer violations, lower makespan). */
static int sk_better(const loom_sk_result *a, const loom_sk_result *b)
{
    if (a->ok != b->ok)
        return a->ok > b->ok;
    if (!a->ok)
        return 0;
    if (a->violations != b->violations)
        return a->violations < b->violations;
    return a->makespan_ms < b->makespan_ms;
}

double loom_sk_score(loom_sk *sk, const loom_sk_result *res)
{
    if (!res->ok || !(res->makespan_ms > 0))
        return 0;
    if (!(sk->ref_ms > 0))
        sk->ref_ms = res->makespan_ms;
    return sk->ref_ms / res->makespan_ms / (1.0 + res->violations);
}

int loom_sk_improves(const loom_sk *sk, const loom_sk_result *res)
{
    return sk_better(res, &sk->best);
}

int loom_sk_offer(loom_sk *sk, const float *prio, const loom_sk_result *res,
                  int64_t at_evaluation)
{
    if (!sk_better(res, &sk->best))
        return 0;
    sk->best = *res;
    sk->best_at = at_evaluation;
    if (sk->n_groups > 0)
        memcpy(sk->best_prio, prio, (size_t)sk->n_groups * sizeof *prio);
    if (LOOM_HOST_HAS(sk->host, progress) && sk->host->progress)
        sk->host->progress(sk->ctx, res->makespan_ms, at_evaluation);
    return 1;
}

int loom_sk_time_left(const loom_sk *sk)
{
    return sk->host->now_ms() < sk->deadline_ms;
}

int loom_sk_should_stop(loom_sk *sk, double next_batch_ms)
{
    if (sk->prm.max_evaluations > 0 &&
        sk->evaluations >= sk->prm.max_evaluations)
        return 1;
    if (sk->host->expired(sk->ctx) ||
        sk->host->now_ms() + next_batch_ms >= sk->deadline_ms) {
        sk->stopped_by_time = 1;
        return 1;
    }
    return 0;
}

int64_t loom_sk_evals_left(const loom_sk *sk)
{
    if (sk->prm.max_evaluations <= 0)
        return INT64_MAX;
    int64_t left = sk->prm.max_evaluations - sk->evaluations;
    return left > 0 ? left : 0;
}

int64_t loom_sk_evals_affordable(const loom_sk *sk)
{
    double left_ms = sk->deadline_ms - sk->host->now_ms();
    if (!(sk->screen_ms > 0) || !(left_ms < 1e15))
        return INT64_MAX;
    if (left_ms <= 0)
        return 0;
    double n = left_ms / sk->screen_ms * (double)(sk->n_workers > 0 ? sk->n_workers : 1);
    return n < 1e15 ? (int64_t)n : INT64_MAX;
}

double loom_sk_wave_ms(const loom_sk *sk, double last_ms, int64_t last_jobs)
{
    if (last_jobs <= 0 || !(last_ms > 0))
        return 0;
    int64_t w = sk->n_workers > 0 ? sk->n_workers : 1;
    return last_ms / (double)((last_jobs + w - 1) / w);
}

int64_t loom_sk_batch_room(const loom_sk *sk, double wave_ms)
{
    int64_t left = loom_sk_evals_left(sk);
    if (!(wave_ms > 0))
        return left;
    double waves = (sk->deadline_ms - sk->host->now_ms()) / wave_ms;
    int64_t w = sk->n_workers > 0 ? sk->n_workers : 1;
    int64_t fit = waves >= 1 ? (waves < 1e9 ? (int64_t)waves : 1000000000) * w : w;
    return fit < left ? fit : left;
}

/* Evaluates candidate i with its reference order; keeps its evaluator in
 * *ev_out and its result in *res. */
static int sk_screen(loom_sk *sk, const loom_stage_graph *g, float *prio,
                     int32_t *order, int32_t *left, loom_evaluator **ev_out,
                     loom_sk_result *res, loom_error *err)
{
    loom_sk_prec pc;
    memset(&pc, 0, sizeof pc);
    int rc = loom_sk_prec_build(sk->host, sk->who, g, &pc, err);
    if (rc != LOOM_OK)
        return rc;
    loom_sk_first_order(&pc, left, order);
    loom_sk_prec_free(sk->host, &pc);
    loom_sk_order_to_prio(order, g->n_groups, prio);
    rc = sk->svc->create(sk->ctx, g, ev_out, err);
    if (rc != LOOM_OK)
        return rc;
    loom_error e;
    memset(&e, 0, sizeof e);
    rc = sk_eval_with(sk, *ev_out, prio, res, &e);
    if (rc != LOOM_OK) {
        *err = e;
        return rc;
    }
    if (!res->ok)
        snprintf(sk->ref_error, sizeof sk->ref_error, "%s", e.message);
    sk->evaluations++;
    return LOOM_OK;
}

/* Screens every candidate and keeps the best (ties: the lower index). */
static int sk_choose(loom_sk *sk, const loom_stage_graph *const *graphs,
                     int32_t n_graphs, int32_t max_groups, loom_error *err)
{
    const loom_host_api *host = sk->host;
    size_t n = (size_t)(max_groups > 0 ? max_groups : 1);
    float *prio = host->alloc(n * sizeof *prio);
    int32_t *order = host->alloc(n * sizeof *order);
    int32_t *left = host->alloc(n * sizeof *left);
    int rc = LOOM_OK;
    loom_sk_result best_res;
    memset(&best_res, 0, sizeof best_res);
    if (!prio || !order || !left)
        rc = host->error(err, LOOM_ENOMEM, "%s: out of memory", sk->who);
    char best_error[LOOM_ERROR_MSG_BYTES] = "";
    for (int32_t i = 0; i < n_graphs && rc == LOOM_OK; i++) {
        loom_evaluator *ev = NULL;
        loom_sk_result res;
        sk->ref_error[0] = 0;
        double t0_ms = host->now_ms();
        rc = sk_screen(sk, graphs[i], prio, order, left, &ev, &res, err);
        double took_ms = host->now_ms() - t0_ms;
        if (rc != LOOM_OK) {
            if (ev)
                sk->svc->destroy(ev);
            break;
        }
        if (i == 0 || sk_better(&res, &best_res)) {
            if (sk->ev[0])
                sk->svc->destroy(sk->ev[0]);
            sk->ev[0] = ev;
            sk->candidate = i;
            sk->screen_ms = took_ms;
            best_res = res;
            memcpy(best_error, sk->ref_error, sizeof best_error);
        } else {
            sk->svc->destroy(ev);
        }
    }
    if (rc == LOOM_OK) {
        memcpy(sk->ref_error, best_error, sizeof best_error);
        sk->graph = graphs[sk->candidate];
        sk->n_groups = sk->graph->n_groups;
        rc = loom_sk_prec_build(host, sk->who, sk->graph, &sk->prec, err);
    }
    if (rc == LOOM_OK) {
        size_t ng = (size_t)(sk->n_groups > 0 ? sk->n_groups : 1);
        sk->ref_order = host->alloc(ng * sizeof *sk->ref_order);
        sk->best_prio = host->alloc(ng * sizeof *sk->best_prio);
        if (!sk->ref_order || !sk->best_prio)
            rc = host->error(err, LOOM_ENOMEM, "%s: out of memory", sk->who);
    }
    if (rc == LOOM_OK) {
        loom_sk_first_order(&sk->prec, left, sk->ref_order);
        loom_sk_order_to_prio(sk->ref_order, sk->n_groups, prio);
        if (best_res.ok)
            sk->ref_ms = best_res.makespan_ms;
        loom_sk_offer(sk, prio, &best_res, sk->evaluations);
        if (!best_res.ok && sk->n_groups > 0)
            memcpy(sk->best_prio, prio, (size_t)sk->n_groups * sizeof *prio);
    }
    host->free(prio);
    host->free(order);
    host->free(left);
    return rc;
}

/* Passes the search's deadline to the evaluators' memory tuner, when the
 * host's evaluator service can take one (deadline_ms < 0 removes it). */
static void sk_tuner_deadline(loom_sk *sk, double deadline_ms)
{
    const loom_evaluator_service *v = sk->svc;
    if (v && sk->ev[0] &&
        v->struct_size >= offsetof(loom_evaluator_service, set_deadline) +
                              sizeof v->set_deadline &&
        v->set_deadline)
        v->set_deadline(sk->ev[0], deadline_ms);
}

double loom_sk_iteration_deadline(double start_ms, double deadline_ms,
                                  double iterations, double ref_ms)
{
    if (!(iterations > 0) || !(ref_ms > 0))
        return deadline_ms;
    double d = start_ms + iterations * ref_ms;
    return d < deadline_ms ? d : deadline_ms;
}

int loom_sk_open(loom_sk *sk, const loom_host_api *host, loom_ctx *ctx,
                 const char *who, const loom_sk_params *p,
                 const loom_stage_graph *const *graphs, int32_t n_graphs,
                 const loom_ranking *out, loom_error *err)
{
    memset(sk, 0, sizeof *sk);
    sk->host = host;
    sk->ctx = ctx;
    sk->who = who;
    sk->prm = *p;
    sk->start_ms = host->now_ms();
    sk->deadline_ms = sk->start_ms + (double)p->budget_ms;
    double host_left = host->budget_left_ms(ctx);
    if (host_left >= 0 && sk->start_ms + host_left < sk->deadline_ms)
        sk->deadline_ms = sk->start_ms + host_left;
    if (sk->prm.seed == 0)
        sk->prm.seed = (int64_t)host->seed(ctx);
    if (p->threads < 1 || p->threads > LOOM_SK_MAX_THREADS)
        return host->error(err, LOOM_EINVAL, "%s: params.threads: expected an integer in "
                           "[1, %d], found %lld", who, LOOM_SK_MAX_THREADS,
                           (long long)p->threads);

    if (n_graphs < 1 || !graphs)
        return host->error(err, LOOM_EINVAL, "%s: expected at least one "
                           "candidate graph, found %d", who, n_graphs);
    int32_t max_groups = 0;
    for (int32_t i = 0; i < n_graphs; i++) {
        if (!graphs[i])
            return host->error(err, LOOM_EINVAL, "%s: candidate %d is NULL",
                               who, i);
        if (graphs[i]->n_groups > max_groups)
            max_groups = graphs[i]->n_groups;
    }
    if (out->cap_priorities < max_groups || (max_groups > 0 && !out->priorities))
        return host->error(err, LOOM_EINVAL, "%s: room for %d priorities, a "
                           "candidate has %d groups", who, out->cap_priorities,
                           max_groups);
    sk->svc = loom_host_evaluator(host, ctx);
    if (!sk->svc)
        return host->error(err, LOOM_ENOTFOUND, "%s: the \"%s\" service is "
                           "not available", who, LOOM_SERVICE_EVALUATOR);

    int rc = sk_choose(sk, graphs, n_graphs, max_groups, err);
    /* a count of evaluations decides in deterministic mode, not a clock */
    if (rc == LOOM_OK && p->budget_iterations > 0 && p->max_evaluations > 0)
        host->log(ctx, LOOM_LOG_INFO, "%s: budget_iterations ignored: max_evaluations (%lld) "
                  "decides", who, (long long)p->max_evaluations);
    else if (rc == LOOM_OK && p->budget_iterations > 0) {
        double was_ms = sk->deadline_ms;
        sk->deadline_ms = loom_sk_iteration_deadline(sk->start_ms, was_ms,
                                                     p->budget_iterations, sk->ref_ms);
        if (sk->ref_ms > 0)
            host->log(ctx, LOOM_LOG_INFO, "%s: budget %.0f ms: %g of the reference's %.1f ms "
                      "iteration%s", who, sk->deadline_ms - sk->start_ms, p->budget_iterations,
                      sk->ref_ms, sk->deadline_ms < was_ms ? "" : ", capped by budget_ms");
        else
            host->log(ctx, LOOM_LOG_INFO, "%s: budget_iterations: the reference is infeasible, "
                      "so budget_ms alone bounds the search", who);
    }
    sk->n_workers = 1;
    for (int32_t w = 1; w < (int32_t)p->threads && rc == LOOM_OK; w++) {
        rc = sk->svc->create(ctx, sk->graph, &sk->ev[w], err);
        if (rc == LOOM_OK)
            sk->n_workers = w + 1;
    }
    if (rc == LOOM_OK) {
        size_t n = (size_t)sk->n_workers * (size_t)(sk->n_groups > 0 ? sk->n_groups : 1);
        sk->work_prio = host->alloc(n * sizeof *sk->work_prio);
        if (!sk->work_prio)
            rc = host->error(err, LOOM_ENOMEM, "%s: out of memory", who);
    }
    if (rc == LOOM_OK) {
        sk_tuner_deadline(sk, sk->deadline_ms);
        rc = loom_sk_pool_start(sk, err);
    }
    if (rc != LOOM_OK)
        loom_sk_close(sk);
    return rc;
}

int loom_sk_finish(loom_sk *sk, loom_ranking *out, loom_error *err)
{
    const loom_host_api *host = sk->host;
    double spent = host->now_ms() - sk->start_ms;
    host->log(sk->ctx, LOOM_LOG_INFO,
              "%s: candidate %d, %d groups, %lld evaluations in %.0f ms, "
              "best makespan %.3f ms%s", sk->who, sk->candidate, sk->n_groups,
              (long long)sk->evaluations, spent, sk->best.makespan_ms,
              sk->exhausted ? " (search space exhausted)" : "");
    if (sk->stopped_by_time && !sk->exhausted && sk->prm.deterministic) {
        if (sk->prm.max_evaluations > 0)
            host->log(sk->ctx, LOOM_LOG_WARN,
                      "%s: the time budget stopped the search after %lld of "
                      "max_evaluations=%lld evaluations; the result may "
                      "differ run to run", sk->who,
                      (long long)sk->evaluations,
                      (long long)sk->prm.max_evaluations);
        else
            host->log(sk->ctx, LOOM_LOG_INFO,
                      "%s: stopped by the time budget after %lld evaluations; "
                      "set max_evaluations for results that do not depend "
                      "on machine speed", sk->who, (long long)sk->evaluations);
    }
    out->candidate = sk->candidate;
    out->evaluations = sk->evaluations;
    if (sk->n_groups > 0)
        memcpy(out->priorities, sk->best_prio,
               (size_t)sk->n_groups * sizeof *out->priorities);
    if (!sk->best.ok) {
        out->best_makespan_ms = 0;
        return host->error(err, LOOM_EINFEASIBLE, "%s: none of %lld evaluated "
                           "assignments was feasible (reference order: %s)",
                           sk->who, (long long)sk->evaluations,
                           sk->ref_error[0] ? sk->ref_error : "infeasible");
    }
    out->best_makespan_ms = sk->best.makespan_ms;
    return LOOM_OK;
}

void loom_sk_close(loom_sk *sk)
{
    const loom_host_api *host = sk->host;
    if (!host)
        return;
    loom_sk_pool_stop(sk);
    sk_tuner_deadline(sk, -1);
    for (int32_t w = 0; w < LOOM_SK_MAX_THREADS; w++)
        if (sk->ev[w]) {
            sk->svc->destroy(sk->ev[w]);
            sk->ev[w] = NULL;
        }
    loom_sk_prec_free(host, &sk->prec);
    host->free(sk->ref_order);
    host->free(sk->best_prio);
    host->free(sk->work_prio);
    sk->ref_order = NULL;
    sk->best_prio = NULL;
    sk->work_prio = NULL;
    sk->host = NULL;
}
