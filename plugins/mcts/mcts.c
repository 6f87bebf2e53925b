/*
 * mcts.c - PipeWeaver's modality-module-level ranking with Monte-Carlo
 * tree search (PipeWeaver §6.1, Algorithm 1; parallel workers as in §7.2).
 *
 * The tree assigns the segment groups G_1..G_n, in group order, distinct
 * priority values from 1..n consistent with group precedence (mcts.h,
 * loom_mcts_tree.c). Each iteration selects a leaf by UCB, expands one new
 * child and completes it with `rollouts` random valid assignments; each is
 * scored by the evaluator (interleaver + memory tuner + simulator) as
 * makespan_ref / makespan and the best score is backpropagated as a max.
 *
 * deterministic = true: the search is a function of the evaluation count.
 * It runs in rounds of two kinds. A tree round: the calling thread selects
 * and expands up to MCTS_ROUND_LEAVES leaves in turn (virtual visits steer
 * later picks away from earlier ones) and the workers run their rollouts.
 * A polish round (a Loom addition, while polish jobs are below `polish` x
 * the evaluations so far): MCTS_POLISH_JOBS jobs that each perturb the
 * walk's current order with 1-3 precedence-preserving moves, since a deep
 * tree alone barely leaves its root within a short budget. The walk starts
 * from the best order and restarts there whenever a tree rollout finds a
 * better one; otherwise the round's best job becomes the current order
 * when it is no worse than the current order now or `late_acceptance`
 * polish rounds ago (late-acceptance hill climbing; 0: the walk always
 * stays on the best order). Jobs are
 * seeded by the run seed and their global index; results are reported in
 * job order and backpropagated per leaf (polish results only compete for
 * the best). Threads change only the speed. The search stops between
 * rounds (max_evaluations, an exhausted space, or a deadline not even one
 * more wave of jobs would meet; the last round is cut to the waves that
 * fit, as max_evaluations cuts it); only a deadline that has already passed skips
 * the rest of a round as a safety stop. A time limit that ends a run
 * before max_evaluations is logged as a warning: that result may differ
 * run to run.
 * deterministic = false: every worker loops select / roll out /
 * backpropagate on the shared tree under a mutex, stopping at the deadline.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include "mcts.h"

#define MCTS_ROUND_LEAVES 2
#define MCTS_POLISH_JOBS 8
#define MCTS_MAX_LATE 1000

typedef struct mcts_self {
    const loom_host_api *host;
    loom_ctx *ctx;
} mcts_self;

/* State of one rank() call. */
typedef struct mcts_run {
    loom_sk sk;
    loom_mcts_tree tree;
    int64_t rollouts;
    int32_t n;
    loom_mcts_fill fills[LOOM_SK_MAX_THREADS]; /* per worker */
    loom_mcts_fill main_fill;                  /* regenerating improvements */
    float *main_prio;
    uint64_t rng;                          /* expansion choices */

    /* Polish jobs: local moves on the best order so far (deterministic
     * rounds only). */
    double polish;                         /* share of evaluations, 0: none */
    int64_t polish_evals;                  /* polish jobs reported so far */
    int32_t *inc_order;                    /* the walk's current order */
    double cur_cost;                       /* its cost (1 / score), 0: unset */
    int64_t best_seen;                     /* sk.best_at the walk has seen */
    double hist[MCTS_MAX_LATE];            /* late acceptance: current costs */
    int32_t hist_len;                      /* of the last hist_len rounds */
    int64_t polish_rounds;                 /* polish rounds absorbed so far */
    int32_t *mut;                          /* (workers + 1) * 4n scratch */

    /* Deterministic round. */
    int32_t n_leaves, n_jobs;
    int64_t job_base;                      /* global index of job 0 */
    double wave_ms;                        /* a wave of the last round, 0: none yet */
    int32_t leaf_node[MCTS_ROUND_LEAVES];
    int32_t leaf_first[MCTS_ROUND_LEAVES + 1];
    int32_t *leaf_values;                  /* ROUND_LEAVES * n */
    int32_t *job_leaf;
    loom_sk_result *job_res;
    int32_t cap_jobs;

    /* Free-running workers. */
    pthread_mutex_t mu;
    int stop;
    int64_t reserved;                      /* rollouts handed out */
    int32_t *work_values;                  /* n_workers * n */
    float *work_best;                      /* n_workers * n */
    loom_sk_result *work_res;              /* n_workers * rollouts */
} mcts_run;

/* The params, declared once in mcts_param_table (manifest.json says the same). */
typedef struct mcts_params {
    loom_sk_params search; /* budget_ms, threads, seed, max_evaluations, deterministic */
    int64_t rollouts;
    double polish;
    int64_t late_acceptance;
    double alpha;
    double beta;
    double seed_below;
} mcts_params;

static const loom_param_def mcts_param_table[] = {
    LOOM_SK_BUDGET_MS_PARAM(mcts_params, search),
    LOOM_SK_BUDGET_ITERATIONS_PARAM(mcts_params, search),
    LOOM_INT_PARAM(mcts_params, rollouts, 10, 1, 1000,
                   "random rollouts (complete assignments evaluated) per expanded node"),
    LOOM_FLOAT_PARAM(mcts_params, polish, 0.75, 0, 0.95,
                   "share of the evaluations spent in polish rounds, which evaluate the "
                   "polish walk's current order with 1-3 random precedence-preserving moves "
                   "(0: the paper's pure tree search; docs/search.md)"),
    LOOM_INT_PARAM(mcts_params, late_acceptance, 40, 0, 1000,
                   "polish walk: a round's best order replaces the current one when it is no "
                   "worse than the current one now or this many polish rounds ago "
                   "(late-acceptance hill climbing); 0 keeps the walk on the best order"),
    LOOM_FLOAT_PARAM(mcts_params, alpha, 1, 0, 100,
                   "UCB exploitation exponent: s^alpha with s the best score below a node"),
    LOOM_FLOAT_PARAM(mcts_params, beta, 0.1, 0, 100,
                   "UCB exploration weight: beta * sqrt(ln N_parent / N_child); scores are "
                   "all close to 1, so a small weight keeps the search guided (docs/search.md "
                   "compares 0.05, 0.1 and 0.5)"),
    LOOM_FLOAT_PARAM(mcts_params, seed_below, 2.0, 0, 1e9,
                   "when the time budget affords fewer evaluations than this many per "
                   "group (estimated from the screening run), first evaluate orders built "
                   "from the groups' work (Johnson's rule, heaviest first, the heaviest "
                   "microbatches first) and search from the best; 0: never (docs/search.md)"),
    LOOM_INT_PARAM_AT("threads", mcts_params, search.threads, 1, 1, 64,
                   "worker threads, each with its own evaluator"),
    LOOM_SK_SEED_PARAM(mcts_params, search),
    LOOM_BOOL_PARAM_AT("deterministic", mcts_params, search.deterministic, 1,
                   "search in fixed rounds so the result depends only on the seed and the "
                   "evaluation count, not on threads or timing (stop it with max_evaluations "
                   "to be reproducible)"),
    LOOM_INT_PARAM_AT("max_evaluations", mcts_params, search.max_evaluations, 0, 0, 2147483647,
                   "stop after this many evaluator runs (0: unlimited, only the time budget "
                   "stops the search)"),
    LOOM_PARAM_END};

/* Creates an instance (all state lives in one rank() call). */
static int mcts_create(const loom_host_api *host, loom_ctx *ctx,
                       void *plugin_state, void **self, loom_error *err)
{
    (void)plugin_state;
    mcts_self *s = host->alloc(sizeof *s);
    if (!s)
        return host->error(err, LOOM_ENOMEM, "mcts: out of memory");
    s->host = host;
    s->ctx = ctx;
    *self = s;
    return LOOM_OK;
}

/* Releases an instance. */
static void mcts_destroy(void *self)
{
    mcts_self *s = self;
    if (s)
        s->host->free(s);
}

/* The priorities of rollout `index` below the leaf whose prefix is
 * value_of: the prefix itself for a full assignment, else a random valid
 * completion seeded by the run seed and the index. */
static int mcts_make_prio(mcts_run *m, loom_mcts_fill *f, const int32_t *value_of,
                          int64_t index, float *prio)
{
    loom_mcts_fill_set(f, value_of);
    int full = 1;
    for (int32_t g = 0; g < m->n && full; g++)
        full = value_of[g] > 0;
    if (full) {
        for (int32_t g = 0; g < m->n; g++)
            prio[g] = (float)value_of[g];
        return 1;
    }
    uint64_t rng = loom_sk_job_seed(m->sk.prm.seed, index);
    return loom_mcts_fill_complete(f, &m->sk.prec, &rng, prio);
}

/* The priorities of polish job `index`: the round's incumbent order with
 * 1 to loom_sk_max_moves(n) random local moves, seeded by the run seed and
 * the index. `scratch` is 4n ints: the order, then the moves' scratch. */
static void mcts_polish_prio(mcts_run *m, int32_t *scratch, int64_t index,
                             float *prio)
{
    int32_t *order = scratch, *work = scratch + m->n;
    memcpy(order, m->inc_order, (size_t)m->n * sizeof *order);
    uint64_t rng = loom_sk_job_seed(m->sk.prm.seed ^ 0x9e3779b97f4a7c15ull, index);
    int32_t moves = 1 + (int32_t)loom_sk_below(&rng, (uint32_t)loom_sk_max_moves(m->n));
    loom_sk_mutate_order(&m->sk.prec, &rng, order, work, moves);
    loom_sk_order_to_prio(order, m->n, prio);
}

/* Round job j on `worker`: a rollout below its leaf, or a polish job
 * (job_leaf -1). */
static int mcts_round_job(void *user, int32_t worker, int32_t j, loom_error *err)
{
    mcts_run *m = user;
    float *prio = loom_sk_worker_prio(&m->sk, worker);
    memset(&m->job_res[j], 0, sizeof m->job_res[j]);
    if (!loom_sk_time_left(&m->sk)) {
        m->job_res[j].skipped = 1; /* safety stop past the deadline */
        return LOOM_OK;
    }
    if (m->job_leaf[j] < 0) {
        mcts_polish_prio(m, m->mut + (size_t)(worker + 1) * 4 * (size_t)m->n,
                         m->job_base + j, prio);
        return loom_sk_evaluate(&m->sk, worker, prio, &m->job_res[j], err);
    }
    const int32_t *values = m->leaf_values + (size_t)m->job_leaf[j] * (size_t)m->n;
    if (!mcts_make_prio(m, &m->fills[worker], values, m->job_base + j, prio))
        return LOOM_OK; /* not ok: scores 0 */
    return loom_sk_evaluate(&m->sk, worker, prio, &m->job_res[j], err);
}

/* Grows the per-job arrays of a round to n_jobs. */
static int mcts_reserve_jobs(mcts_run *m, int32_t n_jobs, loom_error *err)
{
    if (n_jobs <= m->cap_jobs)
        return LOOM_OK;
    const loom_host_api *host = m->sk.host;
    int32_t *jl = host->realloc(m->job_leaf, (size_t)n_jobs * sizeof *jl);
    if (jl)
        m->job_leaf = jl;
    loom_sk_result *jr = host->realloc(m->job_res, (size_t)n_jobs * sizeof *jr);
    if (jr)
        m->job_res = jr;
    if (!jl || !jr)
        return host->error(err, LOOM_ENOMEM, "mcts: out of memory");
    m->cap_jobs = n_jobs;
    return LOOM_OK;
}

/* Selects up to MCTS_ROUND_LEAVES leaves within the evaluations left. */
static int mcts_plan_round(mcts_run *m, loom_error *err)
{
    int64_t left = loom_sk_batch_room(&m->sk, m->wave_ms);
    m->n_leaves = 0;
    m->n_jobs = 0;
    /* a polish round while polish is below its share of the evaluations */
    int polish_round = m->polish > 0 &&
                       (double)m->polish_evals < m->polish * (double)m->sk.evaluations;
    while (!polish_round && m->n_leaves < MCTS_ROUND_LEAVES && m->n_jobs < left) {
        int32_t leaf = loom_mcts_tree_select(&m->tree, &m->rng);
        if (leaf == -2)
            return m->sk.host->error(err, LOOM_ENOMEM, "mcts: out of memory");
        if (leaf < 0)
            break;
        int64_t k = m->tree.nodes[leaf].depth == m->n ? 1 : m->rollouts;
        if (k > left - m->n_jobs)
            k = left - m->n_jobs;
        int rc = mcts_reserve_jobs(m, m->n_jobs + (int32_t)k, err);
        if (rc != LOOM_OK)
            return rc;
        int32_t i = m->n_leaves++;
        m->leaf_node[i] = leaf;
        m->leaf_first[i] = m->n_jobs;
        loom_mcts_tree_prefix(&m->tree, leaf, m->leaf_values + (size_t)i * (size_t)m->n);
        for (int64_t r = 0; r < k; r++)
            m->job_leaf[m->n_jobs++] = i;
    }
    m->leaf_first[m->n_leaves] = m->n_jobs;
    int64_t k = polish_round ? MCTS_POLISH_JOBS : 0;
    if (k > left)
        k = left;
    if (k > 0) {
        int rc = mcts_reserve_jobs(m, m->n_jobs + (int32_t)k, err);
        if (rc != LOOM_OK)
            return rc;
        if (m->cur_cost == 0 || m->sk.best_at != m->best_seen) {
            /* start, or a better best appeared elsewhere: walk from it */
            loom_sk_prio_to_order(m->sk.best_prio, m->n, m->inc_order);
            double sc = loom_sk_score(&m->sk, &m->sk.best);
            m->cur_cost = sc > 0 ? 1.0 / sc : 1e300;
            m->best_seen = m->sk.best_at;
            for (int32_t i = 0; i < m->hist_len; i++)
                if (m->hist[i] == 0)
                    m->hist[i] = m->cur_cost;
        }
        for (int64_t r = 0; r < k; r++)
            m->job_leaf[m->n_jobs++] = -1;
    }
    return LOOM_OK;
}

/* Reports a round's results in job order and backpropagates per leaf. */
static void mcts_absorb_round(mcts_run *m)
{
    loom_sk *sk = &m->sk;
    for (int32_t i = 0; i < m->n_leaves; i++) {
        double best = 0;
        for (int32_t j = m->leaf_first[i]; j < m->leaf_first[i + 1]; j++) {
            if (m->job_res[j].skipped) {
                sk->stopped_by_time = 1;
                continue;
            }
            sk->evaluations++;
            double s = loom_sk_score(sk, &m->job_res[j]);
            if (s > best)
                best = s;
            if (loom_sk_improves(sk, &m->job_res[j])) {
                const int32_t *values = m->leaf_values + (size_t)i * (size_t)m->n;
                mcts_make_prio(m, &m->main_fill, values, m->job_base + j, m->main_prio);
                loom_sk_offer(sk, m->main_prio, &m->job_res[j], sk->evaluations);
                sk->host->log(sk->ctx, LOOM_LOG_DEBUG,
                              "mcts: rollout %lld (depth %d) improves to %.3f ms",
                              (long long)(m->job_base + j), m->tree.nodes[m->leaf_node[i]].depth,
                              m->job_res[j].makespan_ms);
            }
        }
        loom_mcts_tree_backprop(&m->tree, m->leaf_node[i], best);
    }
    int32_t round_best = -1;
    double round_cost = 0;
    for (int32_t j = m->leaf_first[m->n_leaves]; j < m->n_jobs; j++) {
        if (m->job_res[j].skipped) {
            sk->stopped_by_time = 1;
            continue;
        }
        sk->evaluations++;
        m->polish_evals++;
        double sc = loom_sk_score(sk, &m->job_res[j]);
        double cost = sc > 0 ? 1.0 / sc : 1e300;
        if (round_best < 0 || cost < round_cost) {
            round_best = j;
            round_cost = cost;
        }
        if (loom_sk_improves(sk, &m->job_res[j])) {
            mcts_polish_prio(m, m->mut, m->job_base + j, m->main_prio);
            loom_sk_offer(sk, m->main_prio, &m->job_res[j], sk->evaluations);
            sk->host->log(sk->ctx, LOOM_LOG_DEBUG, "mcts: polish job %lld improves to %.3f ms",
                          (long long)(m->job_base + j), m->job_res[j].makespan_ms);
        }
    }
    /* Late acceptance: the round's best job becomes the walk's current
     * order when it is no worse than the current one or than the current
     * one of hist_len rounds ago. */
    if (round_best >= 0 && m->hist_len > 0) {
        int32_t v = (int32_t)(m->polish_rounds++ % m->hist_len);
        if (round_cost <= m->cur_cost || round_cost <= m->hist[v]) {
            /* mcts_polish_prio leaves the job's order in its scratch */
            mcts_polish_prio(m, m->mut, m->job_base + round_best, m->main_prio);
            memcpy(m->inc_order, m->mut, (size_t)m->n * sizeof *m->inc_order);
            m->cur_cost = round_cost;
        }
        if (m->cur_cost < m->hist[v])
            m->hist[v] = m->cur_cost;
        m->best_seen = sk->best_at;
    }
}

/* The deterministic search: rounds until a stop condition. */
static int mcts_rounds(mcts_run *m, loom_error *err)
{
    loom_sk *sk = &m->sk;
    while (!loom_mcts_tree_exhausted(&m->tree) && !loom_sk_should_stop(sk, m->wave_ms)) {
        double t0 = sk->host->now_ms();
        int rc = mcts_plan_round(m, err);
        if (rc != LOOM_OK)
            return rc;
        if (m->n_jobs == 0)
            break;
        m->job_base = sk->evaluations;
        rc = loom_sk_run_jobs(sk, m->n_jobs, mcts_round_job, m, err);
        if (rc != LOOM_OK)
            return rc;
        mcts_absorb_round(m);
        if (sk->stopped_by_time)
            break;
        m->wave_ms = loom_sk_wave_ms(sk, sk->host->now_ms() - t0, m->n_jobs);
    }
    return LOOM_OK;
}

/* Free-running worker: select, roll out, backpropagate until stopped. */
static int mcts_free_job(void *user, int32_t worker, int32_t job, loom_error *err)
{
    (void)job;
    mcts_run *m = user;
    loom_sk *sk = &m->sk;
    int32_t *values = m->work_values + (size_t)worker * (size_t)m->n;
    float *best_prio = m->work_best + (size_t)worker * (size_t)m->n;
    float *prio = loom_sk_worker_prio(sk, worker);
    loom_sk_result *res = m->work_res + (size_t)worker * (size_t)m->rollouts;
    uint64_t rng = loom_sk_job_seed(sk->prm.seed ^ 0x5bd1e995u, -1 - (int64_t)worker);
    for (;;) {
        pthread_mutex_lock(&m->mu);
        int64_t left = sk->prm.max_evaluations > 0
                           ? sk->prm.max_evaluations - sk->evaluations - m->reserved
                           : INT64_MAX;
        if (!m->stop && (!loom_sk_time_left(sk) || (worker == 0 && sk->host->expired(sk->ctx)))) {
            m->stop = 1;
            sk->stopped_by_time = 1;
        }
        if (m->stop || left <= 0 || loom_mcts_tree_exhausted(&m->tree)) {
            pthread_mutex_unlock(&m->mu);
            return LOOM_OK;
        }
        int32_t leaf = loom_mcts_tree_select(&m->tree, &rng);
        if (leaf >= 0)
            loom_mcts_tree_prefix(&m->tree, leaf, values);
        int64_t k = leaf >= 0 && m->tree.nodes[leaf].depth < m->n ? m->rollouts : 1;
        if (k > left)
            k = left;
        int64_t first = sk->evaluations + m->reserved;
        m->reserved += leaf >= 0 ? k : 0;
        pthread_mutex_unlock(&m->mu);
        if (leaf == -2)
            return sk->host->error(err, LOOM_ENOMEM, "mcts: out of memory");
        if (leaf < 0)
            continue; /* exhausted: the next check returns */

        /* Roll out; keep the leaf's best assignment for the report. */
        int32_t best = -1;
        int rc = LOOM_OK;
        for (int64_t r = 0; r < k && rc == LOOM_OK; r++) {
            memset(&res[r], 0, sizeof res[r]);
            if (mcts_make_prio(m, &m->fills[worker], values, first + r, prio))
                rc = loom_sk_evaluate(sk, worker, prio, &res[r], err);
            if (rc == LOOM_OK && res[r].ok &&
                (best < 0 || res[r].violations < res[best].violations ||
                 (res[r].violations == res[best].violations &&
                  res[r].makespan_ms < res[best].makespan_ms))) {
                best = (int32_t)r;
                memcpy(best_prio, prio, (size_t)m->n * sizeof *prio);
            }
        }
        pthread_mutex_lock(&m->mu);
        m->reserved -= k;
        sk->evaluations += k;
        double top = 0;
        for (int64_t r = 0; r < k; r++) {
            double sc = loom_sk_score(sk, &res[r]);
            if (sc > top)
                top = sc;
        }
        if (best >= 0)
            loom_sk_offer(sk, best_prio, &res[best], sk->evaluations);
        loom_mcts_tree_backprop(&m->tree, leaf, top);
        if (rc != LOOM_OK)
            m->stop = 1;
        pthread_mutex_unlock(&m->mu);
        if (rc != LOOM_OK)
            return rc;
    }
}

/* The free-running search on every worker. */
static int mcts_free(mcts_run *m, loom_error *err)
{
    size_t k = (size_t)m->sk.n_workers * (size_t)m->n;
    m->work_values = m->sk.host->alloc(k * sizeof *m->work_values);
    m->work_best = m->sk.host->alloc(k * sizeof *m->work_best);
    m->work_res = m->sk.host->alloc((size_t)m->sk.n_workers * (size_t)m->rollouts *
                                    sizeof *m->work_res);
    if (!m->work_values || !m->work_best || !m->work_res)
        return m->sk.host->error(err, LOOM_ENOMEM, "mcts: out of memory");
    if (pthread_mutex_init(&m->mu, NULL) != 0)
        return m->sk.host->error(err, LOOM_EPLUGIN, "mcts: cannot create a mutex");
    int rc = loom_sk_run_jobs(&m->sk, m->sk.n_workers, mcts_free_job, m, err);
    pthread_mutex_destroy(&m->mu);
    return rc;
}

/* Allocates the per-run scratch once the session knows n and workers. */
static int mcts_prepare(mcts_run *m, double alpha, double beta, loom_error *err)
{
    const loom_host_api *host = m->sk.host;
    m->n = m->sk.n_groups;
    size_t n = (size_t)(m->n > 0 ? m->n : 1);
    int rc = loom_mcts_tree_init(&m->tree, host, &m->sk.prec, alpha, beta, err);
    if (rc != LOOM_OK)
        return rc;
    int bad = loom_mcts_fill_init(&m->main_fill, host, m->n) != LOOM_OK;
    for (int32_t w = 0; w < m->sk.n_workers && !bad; w++)
        bad = loom_mcts_fill_init(&m->fills[w], host, m->n) != LOOM_OK;
    m->main_prio = host->alloc(n * sizeof *m->main_prio);
    m->leaf_values = host->alloc(MCTS_ROUND_LEAVES * n * sizeof *m->leaf_values);
    m->inc_order = host->alloc(n * sizeof *m->inc_order);
    m->mut = host->alloc(((size_t)m->sk.n_workers + 1) * 4 * n * sizeof *m->mut);
    if (bad || !m->main_prio || !m->leaf_values || !m->inc_order || !m->mut)
        return host->error(err, LOOM_ENOMEM, "mcts: out of memory");
    m->rng = loom_sk_job_seed(m->sk.prm.seed ^ 0x2545F4914F6CDD1Dull, -1);
    return LOOM_OK;
}

/* Frees the per-run scratch. */
static void mcts_cleanup(mcts_run *m)
{
    const loom_host_api *host = m->sk.host;
    if (!host)
        return;
    loom_mcts_tree_free(&m->tree);
    loom_mcts_fill_free(&m->main_fill);
    for (int32_t w = 0; w < LOOM_SK_MAX_THREADS; w++)
        loom_mcts_fill_free(&m->fills[w]);
    host->free(m->main_prio);
    host->free(m->leaf_values);
    host->free(m->inc_order);
    host->free(m->mut);
    host->free(m->job_leaf);
    host->free(m->job_res);
    host->free(m->work_values);
    host->free(m->work_best);
    host->free(m->work_res);
    loom_sk_close(&m->sk);
}

/* Searches priorities of the best candidate graph (see the file comment). */
static int mcts_rank(void *self, const loom_stage_graph *const *graphs,
                     int32_t n_graphs, loom_ranking *out, loom_error *err)
{
    mcts_self *s = self;
    const loom_host_api *host = s->host;
    mcts_params prm;
    int rc = loom_params_read(host, s->ctx, "mcts", mcts_param_table, &prm, err);
    if (rc != LOOM_OK)
        return rc;
    if (prm.late_acceptance > MCTS_MAX_LATE) /* the table's bound must fit hist[] */
        return host->error(err, LOOM_EINVAL, "mcts: param late_acceptance: expected at most %d "
                           "(the history's size), found %lld", MCTS_MAX_LATE,
                           (long long)prm.late_acceptance);

    mcts_run *m = host->alloc(sizeof *m);
    if (!m)
        return host->error(err, LOOM_ENOMEM, "mcts: out of memory");
    memset(m, 0, sizeof *m);
    m->rollouts = prm.rollouts;
    m->polish = prm.polish;
    m->hist_len = (int32_t)prm.late_acceptance;
    rc = loom_sk_open(&m->sk, host, s->ctx, "mcts", &prm.search, graphs, n_graphs,
                      out, err);
    if (rc != LOOM_OK) {
        host->free(m);
        return rc;
    }
    rc = mcts_prepare(m, prm.alpha, prm.beta, err);
    /* Too few evaluations to move most groups even once: start from the
     * best constructive order instead (docs/search.md, "Seed orders"). */
    int64_t affordable = loom_sk_evals_affordable(&m->sk);
    if (rc == LOOM_OK && m->n > 1 && (double)affordable < prm.seed_below * (double)m->n) {
        m->sk.host->log(m->sk.ctx, LOOM_LOG_INFO, "mcts: the budget affords about %lld "
                        "evaluations for %d groups (screening run %.1f ms): starting from "
                        "the best seed order", (long long)affordable, m->n, m->sk.screen_ms);
        double t0 = m->sk.host->now_ms();
        int64_t before = m->sk.evaluations;
        rc = loom_sk_try_seed_orders(&m->sk, err);
        /* the first round is cut to the waves that fit, as later ones are */
        m->wave_ms = loom_sk_wave_ms(&m->sk, m->sk.host->now_ms() - t0,
                                     m->sk.evaluations - before);
    }
    /* One group or none: the reference is the only assignment. */
    if (rc == LOOM_OK && m->n > 1)
        rc = prm.search.deterministic ? mcts_rounds(m, err) : mcts_free(m, err);
    if (rc == LOOM_OK) {
        m->sk.exhausted = m->n <= 1 || loom_mcts_tree_exhausted(&m->tree);
        rc = loom_sk_finish(&m->sk, out, err);
    }
    mcts_cleanup(m);
    host->free(m);
    return rc;
}

static const loom_ranker_vtable mcts_vtable = {
    { sizeof(loom_ranker_vtable), LOOM_RANKER_VERSION },
    mcts_create,
    mcts_destroy,
    mcts_rank,
    LOOM_RANKER_READS_ALL,
};

/* Returns the ranker vtable for role "ranker", else NULL. */
static const loom_role_header *mcts_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_RANKER) == 0)
        return &mcts_vtable.header;
    return NULL;
}

static const loom_plugin_info mcts_info = {
    LOOM_PLUGIN_INFO_HEADER,
    "org.loom.mcts",
    "1.0.0",
    NULL,
    NULL,
    mcts_role,
    mcts_param_table,
};

LOOM_PLUGIN_DEFINE(mcts, mcts_info);
