/*
 * <loom/kits/search.h> - the search kit (CMake target loom_kit_search,
 * Loom::kit_search when installed): what search rankers share (the mcts,
 * random and exhaustive rankers use it): their params, the time /
 * evaluation budget, candidate screening, one evaluator per worker thread,
 * a batch job pool, group precedence and the best assignment found so far.
 *
 * Vocabulary. An assignment gives each of the n segment groups a distinct
 * priority value in 1..n (higher runs earlier). An order lists the groups
 * by slot: slot 0 holds the group with value n, slot k the group with
 * value n - k. group_pred[g] lists the groups that must rank above g, so a
 * valid order places every predecessor in an earlier slot.
 *
 * A session (loom_sk):
 *   1. loom_sk_open(): reads nothing itself (the plugin passes its params;
 *      threads outside 1..LOOM_SK_MAX_THREADS fail),
 *      screens the candidate graphs by evaluating each with its reference
 *      order (groups in index order, predecessors first) and keeps the
 *      best; that evaluation is makespan_ref, the first "best" and the
 *      score scale. Creates one evaluator per worker and starts threads.
 *   2. the plugin runs batches with loom_sk_run_jobs(); each job evaluates
 *      through its worker's evaluator; the plugin then reports results in
 *      job order with loom_sk_offer() (deterministic for any thread count);
 *   3. loom_sk_finish() fills the ranking; loom_sk_close() frees it all.
 *
 * Threads: loom_sk_evaluate() and loom_sk_time_left() may run on workers
 * (each worker its own evaluator); every other call belongs to the thread
 * that opened the session, or must be serialised by the caller.
 *
 * Ownership: the session owns its evaluators, threads and arrays; the
 * graphs and the ranking are borrowed from the host.
 * Units: *_ms milliseconds.
 */
#ifndef LOOM_KITS_SEARCH_H
#define LOOM_KITS_SEARCH_H

#include <loom/loom.h>

#define LOOM_SK_MAX_THREADS 64

/* Params common to the search rankers. A ranker declares them in its
 * param table (<loom/params.h>) with this struct as a member of its
 * params, e.g. LOOM_INT_PARAM_AT("threads", my_params, search.threads,
 * ...); budget_ms, max_evaluations and deterministic are the reserved
 * ranker params of <loom/ranker.h>. One that declares no seed searches
 * with the run's seed; one that declares no deterministic sets it to 1. */
typedef struct loom_sk_params {
    int64_t budget_ms;       /* own time budget (the host's may be shorter) */
    int64_t threads;         /* worker threads, 1..LOOM_SK_MAX_THREADS */
    int64_t seed;            /* 0: host->seed(ctx) */
    int64_t max_evaluations; /* 0: unlimited */
    int deterministic;       /* 1: results depend on the evaluation count only */
    double budget_iterations; /* > 0: the budget ends this many reference
                                 iterations (the screened makespan) after
                                 the start, when before budget_ms; not
                                 with max_evaluations */
} loom_sk_params;

/* Param-table entries two or more search rankers declare alike, kept in
 * the loom_sk_params member `member` of the ranker's `conf` (e.g.
 * LOOM_SK_BUDGET_MS_PARAM(my_params, search)). */
#define LOOM_SK_BUDGET_MS_PARAM(conf, member)                                  \
    LOOM_INT_PARAM_AT("budget_ms", conf, member.budget_ms, 1000, 1, 2147483647, \
                      "search time budget in milliseconds (the run's own budget may be " \
                      "shorter)")
#define LOOM_SK_BUDGET_ITERATIONS_PARAM(conf, member)                          \
    LOOM_FLOAT_PARAM_AT("budget_iterations", conf, member.budget_iterations, 0, 0, 1000, \
                        "search for at most this many of the reference plan's iterations " \
                        "(its predicted makespan; PipeWeaver section 1: the search overlaps " \
                        "one training iteration); budget_ms still caps it; ignored when " \
                        "max_evaluations is set; 0: budget_ms alone")
#define LOOM_SK_SEED_PARAM(conf, member)                                       \
    LOOM_INT_PARAM_AT("seed", conf, member.seed, 0, 0, 2147483647,             \
                      "random seed; 0 uses the run's seed")

/* What one evaluation reported. */
typedef struct loom_sk_result {
    double makespan_ms;
    int32_t violations;   /* ranks over the memory cap */
    int16_t ok;           /* 0: infeasible or not evaluated */
    int16_t skipped;      /* 1: not run, the deadline had passed */
} loom_sk_result;

/* Group precedence in both directions, plus a topological order. */
typedef struct loom_sk_prec {
    int32_t n, n_edges;
    int32_t *pred_off, *pred;  /* copies of the graph's group_pred rows */
    int32_t *succ_off, *succ;
    int32_t *topo;             /* groups, predecessors first */
} loom_sk_prec;

struct loom_sk_pool;

typedef struct loom_sk {
    const loom_host_api *host;
    loom_ctx *ctx;
    const char *who;             /* plugin name for messages */
    loom_sk_params prm;
    const loom_evaluator_service *svc;

    const loom_stage_graph *graph; /* the chosen candidate */
    int32_t candidate, n_groups;
    loom_sk_prec prec;
    int32_t *ref_order;          /* reference order of the chosen graph */

    int32_t n_workers;
    loom_evaluator *ev[LOOM_SK_MAX_THREADS];
    float *work_prio;            /* n_workers * n_groups scratch */
    struct loom_sk_pool *pool;

    double start_ms, deadline_ms;
    int stopped_by_time;         /* a time limit ended the search */
    int exhausted;               /* the plugin covered its whole space */

    double ref_ms;               /* score scale (0 until a feasible run) */
    int64_t evaluations;         /* evaluator runs so far */
    float *best_prio;            /* n_groups */
    loom_sk_result best;
    int64_t best_at;             /* at_evaluation of the last loom_sk_offer() that won */
    char ref_error[LOOM_ERROR_MSG_BYTES]; /* why the reference failed */
    double screen_ms;            /* the chosen candidate's screening run (evaluator set-up included) */
} loom_sk;

/* A batch job: evaluates something for job index `job` on `worker`. */
typedef int (*loom_sk_job_fn)(void *user, int32_t worker, int32_t job,
                              loom_error *err);

/* ---- session ------------------------------------------------------------ */

/* The deadline a search with budget_iterations keeps: start_ms plus
 * `iterations` times the reference plan's makespan ref_ms, when that is
 * before deadline_ms (the budget_ms and host bound); deadline_ms when
 * iterations is 0 or the reference is infeasible (ref_ms 0). PipeWeaver
 * section 1: the search runs while the iteration before trains. */
double loom_sk_iteration_deadline(double start_ms, double deadline_ms,
                                  double iterations, double ref_ms);

/* Opens a session (see the file comment). On failure everything opened so
 * far is closed again. */
int loom_sk_open(loom_sk *sk, const loom_host_api *host, loom_ctx *ctx,
                 const char *who, const loom_sk_params *p,
                 const loom_stage_graph *const *graphs, int32_t n_graphs,
                 const loom_ranking *out, loom_error *err);

/* Evaluates `prio` (n_groups values) with worker's evaluator. Infeasible
 * assignments (LOOM_EINFEASIBLE, LOOM_EDEADLOCK) give res->ok = 0 and
 * LOOM_OK; other failures are returned. */
int loom_sk_evaluate(loom_sk *sk, int32_t worker, const float *prio,
                     loom_sk_result *res, loom_error *err);

/* The worker's priority scratch (n_groups floats). */
float *loom_sk_worker_prio(loom_sk *sk, int32_t worker);

/* Score of a result: makespan_ref / makespan / (1 + violations), 0 when
 * not ok. Sets makespan_ref on the first feasible result if the reference
 * failed. Caller serialises. */
double loom_sk_score(loom_sk *sk, const loom_sk_result *res);

/* 1 when res would replace the best (see loom_sk_offer). */
int loom_sk_improves(const loom_sk *sk, const loom_sk_result *res);

/* Keeps prio as the best when res beats it (feasible first, then fewer
 * cap violations, then a strictly lower makespan) and reports progress
 * with `at_evaluation`. Returns 1 on improvement. Caller serialises. */
int loom_sk_offer(loom_sk *sk, const float *prio, const loom_sk_result *res,
                  int64_t at_evaluation);

/* 1 while the deadline (own budget and host budget) has not passed.
 * Safe on worker threads. */
int loom_sk_time_left(const loom_sk *sk);

/* Main thread, between batches: 1 when the search must stop now (SIGINT or
 * host expiry, a deadline closer than `next_batch_ms`, or max_evaluations
 * reached); records whether time was the reason. */
int loom_sk_should_stop(loom_sk *sk, double next_batch_ms);

/* Evaluations still allowed (INT64_MAX when unlimited). */
int64_t loom_sk_evals_left(const loom_sk *sk);

/* How many evaluations the time left allows, estimated from the chosen
 * candidate's screening run on every worker (INT64_MAX when no deadline
 * or no timing). An upper bound: the screening run includes setting an
 * evaluator up. Main thread. */
int64_t loom_sk_evals_affordable(const loom_sk *sk);

/* The time one wave of jobs (one per worker) took in the last batch: a
 * batch of last_jobs jobs that took last_ms runs in ceil(last_jobs /
 * n_workers) waves (0 before any batch). Pass it to
 * loom_sk_should_stop() so that the search goes on while one more wave
 * fits. */
double loom_sk_wave_ms(const loom_sk *sk, double last_ms, int64_t last_jobs);

/* Main thread, between batches: how many jobs the next batch may hold:
 * the evaluations left and, once a wave's time is known (wave_ms > 0),
 * only the waves that end before the deadline (at least one). A batch cut
 * short this way is the batch max_evaluations would give, so a
 * deterministic search stays a function of its evaluation count. */
int64_t loom_sk_batch_room(const loom_sk *sk, double wave_ms);

/* Runs fn for jobs 0..n_jobs-1 on all workers (the caller's thread is
 * worker 0) and waits for them. Returns the error of the lowest failing
 * job. */
int loom_sk_run_jobs(loom_sk *sk, int32_t n_jobs, loom_sk_job_fn fn,
                     void *user, loom_error *err);

/* Writes the best assignment into out and logs how the search ended (a
 * warning when a time limit stopped a run that asked for a fixed number of
 * evaluations). LOOM_EINFEASIBLE when nothing feasible was found. */
int loom_sk_finish(loom_sk *sk, loom_ranking *out, loom_error *err);

/* Stops the threads and frees everything the session owns. */
void loom_sk_close(loom_sk *sk);

/* The seed of job `index` in a stream: splitmix64 of seed and index. */
uint64_t loom_sk_job_seed(uint64_t seed, int64_t index);

/* Uniform integer in [0, n) from a splitmix64 state. */
uint32_t loom_sk_below(uint64_t *state, uint32_t n);

/* ---- thread pool (search_pool.c) ---------------------------------------- */

/* Starts n_workers - 1 threads. LOOM_ENOMEM / LOOM_EPLUGIN on failure.
 * The pool needs only host, who and n_workers of the session. */
int loom_sk_pool_start(loom_sk *sk, loom_error *err);

/* Joins the threads (no-op without a pool). */
void loom_sk_pool_stop(loom_sk *sk);

/* Called for each job that ended with LOOM_OK, in job order: job j once
 * every job before it is settled. Calls are serialised. */
typedef void (*loom_sk_settle_fn)(void *user, int32_t job);

/* loom_sk_run_jobs(), then each job settled in job order as soon as the
 * jobs before it are, so that what `settle` does (choosing, logging,
 * reporting progress) is what one thread running the jobs in turn would
 * do, on any number of workers. A failing job is not settled, nor any
 * after it; the lowest failing job's error is returned. Allocates
 * n_jobs bytes (LOOM_ENOMEM). */
int loom_sk_run_ordered(loom_sk *sk, int32_t n_jobs, loom_sk_job_fn fn,
                        loom_sk_settle_fn settle, void *user, loom_error *err);

/* loom_sk_run_ordered() on min(threads, n_jobs) workers of a pool of its
 * own, started and joined here, for a plugin that runs no search session
 * (interval-fill, min-latency). `who` names the plugin in messages. */
int loom_sk_ordered_batch(const loom_host_api *host, loom_ctx *ctx, const char *who,
                          int64_t threads, int32_t n_jobs, loom_sk_job_fn fn,
                          loom_sk_settle_fn settle, void *user, loom_error *err);

/* ---- group precedence and orders (search_order.c) ----------------------- */

/* Builds both directions of g's group precedence and a topological order.
 * LOOM_EINVAL naming the group for an id out of range or a cycle. */
int loom_sk_prec_build(const loom_host_api *host, const char *who,
                       const loom_stage_graph *g, loom_sk_prec *pc,
                       loom_error *err);
/* Releases the arrays of loom_sk_prec_build (host allocator) and zeroes
 * pc. */
void loom_sk_prec_free(const loom_host_api *host, loom_sk_prec *pc);

/* The order of an assignment: groups by priority, higher first (ties: the
 * lower group). O(n^2) worst case, meant for once per batch. */
void loom_sk_prio_to_order(const float *prio, int32_t n, int32_t *order);

/* Applies `moves` random local moves to a valid order (search_mutate.c),
 * each drawn uniformly from three kinds: an insertion of one group at a
 * slot between its predecessors and successors; an insertion anywhere that
 * drags the predecessors (moving up) or successors (moving down) it passes
 * along; and a shift of one group with its direct neighbours by the same
 * number of slots, repaired the same way. The order stays valid. scratch
 * is 3n ints. */
void loom_sk_mutate_order(const loom_sk_prec *pc, uint64_t *rng,
                          int32_t *order, int32_t *scratch, int32_t moves);

/* The most moves a polish job applies to an order of n groups: 3, and
 * n / 64 from 256 groups on, so that a job changes a similar share of a
 * long order (VLM-XL's 512 groups: up to 8). */
int32_t loom_sk_max_moves(int32_t n);

/* ---- seed orders (search_seed.c) ----------------------------------------- */

/* Per group of one graph: the work of its forward stages and of its
 * backward stages (B, I and W), summed over ranks, and the rank
 * of its microbatch by the work of all that microbatch's groups (0 the
 * heaviest; ties to the lower microbatch). */
typedef struct loom_sk_group_work {
    int32_t n;
    double *forward_ms;
    double *backward_ms;
    int32_t *unit_rank;  /* per group: its microbatch's rank by work */
    int32_t n_units;     /* microbatches that hold a group */
    void *key_scratch;   /* n sort keys */
} loom_sk_group_work;

/* Builds the per-group work of g (host allocator). A graph without
 * group_microbatch counts every group as a microbatch of its own.
 * LOOM_ENOMEM. */
int loom_sk_group_work_build(const loom_host_api *host, const char *who,
                             const loom_stage_graph *g, loom_sk_group_work *w,
                             loom_error *err);

/* Releases what loom_sk_group_work_build allocated and zeroes w. */
void loom_sk_group_work_free(const loom_host_api *host, loom_sk_group_work *w);

/* How many seed orders there are. */
#define LOOM_SK_SEED_ORDERS 6

/* The names of the seed orders, for logs. */
extern const char *const loom_sk_seed_order_names[LOOM_SK_SEED_ORDERS];

/* Seed order k (0..LOOM_SK_SEED_ORDERS-1): repeatedly, among the groups
 * whose predecessors are placed, the first by a key of their work f
 * (forward) and b (backward) or of their microbatch's, ties to the lower
 * group (the reference order's tie):
 *   0  Johnson's rule for a two-machine flow shop with the backward as the
 *      first machine (S. M. Johnson, 1954): the groups with b <= f by b
 *      ascending, then the others by f descending;
 *   1  heaviest first (f + b descending);
 *   2  heaviest microbatch first (unit_rank ascending);
 *   3  the ceil(U / 16) heaviest microbatches first, heaviest first, then
 *      the others in the reference order (U = n_units);
 *   4  the same with the ceil(U / 8) heaviest;
 *   5  the same with the ceil(U / 4) heaviest.
 * Every order keeps group precedence. scratch is 2n ints. */
void loom_sk_seed_order(const loom_sk_prec *pc, const loom_sk_group_work *w,
                        int32_t k, int32_t *scratch, int32_t *order);

/* Evaluates the seed orders of the chosen graph that differ from the
 * reference order and from each other, on the workers, then reports them
 * in order with loom_sk_offer() (each counts as an evaluation; never more
 * than the evaluations left, nor than the whole waves of the workers that
 * fit before the deadline, an evaluation timed as the screening run, as
 * loom_sk_batch_room() counts them). Main thread, before the search's own
 * batches; a deterministic session stays a function of the evaluation
 * count. LOOM_ENOMEM or an evaluator failure. */
int loom_sk_try_seed_orders(loom_sk *sk, loom_error *err);

/* The reference order: repeatedly the lowest-index group whose
 * predecessors are placed. `left` is n scratch ints. */
void loom_sk_first_order(const loom_sk_prec *pc, int32_t *left,
                         int32_t *order);

/* A uniformly drawn next group at every slot among those whose
 * predecessors are placed. `left`, `avail` are n scratch ints. */
void loom_sk_random_order(const loom_sk_prec *pc, uint64_t *rng,
                          int32_t *left, int32_t *avail, int32_t *order);

/* Writes the assignment of an order: prio[order[k]] = n - k, so slot 0
 * gets the highest priority. `order` lists n distinct groups; prio (n
 * floats) is the caller's. Inline: usable with the kit's headers alone. */
static inline void loom_sk_order_to_prio(const int32_t *order, int32_t n,
                                         float *prio)
{
    for (int32_t k = 0; k < n; k++)
        prio[order[k]] = (float)(n - k);
}

/* 1 when every group ranks strictly below its predecessors. */
int loom_sk_prio_valid(const loom_sk_prec *pc, const float *prio);

#endif
