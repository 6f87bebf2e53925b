/*
 * random.c - the random-exploration ranker (the "random" baseline of
 * PipeWeaver §8.3, Fig. 12): draws valid priority assignments uniformly
 * slot by slot (every group whose predecessors are placed is equally
 * likely next) until the budget ends, and keeps the best.
 *
 * Draw k uses a seed derived from the run seed and k alone, and results
 * are reported in draw order, so with max_evaluations the result is the
 * same for any thread count. Candidate graphs are screened as in mcts:
 * each is evaluated with its reference order and the best one is searched.
 */
#include <string.h>
#include <loom/kits/search.h>

#define RANDOM_BATCH 64

typedef struct random_self {
    const loom_host_api *host;
    loom_ctx *ctx;
} random_self;

/* State of one rank() call. */
typedef struct random_run {
    loom_sk sk;
    int32_t n;
    int32_t *scratch;          /* n_workers * 3n: left, avail, order */
    int64_t base;              /* index of the batch's first draw */
    loom_sk_result res[RANDOM_BATCH];
} random_run;

/* The params, declared once in random_param_table (manifest.json says the same). */
typedef struct random_params {
    loom_sk_params search; /* budget_ms, threads, seed, max_evaluations */
} random_params;

static const loom_param_def random_param_table[] = {
    LOOM_SK_BUDGET_MS_PARAM(random_params, search),
    LOOM_SK_BUDGET_ITERATIONS_PARAM(random_params, search),
    LOOM_INT_PARAM_AT("threads", random_params, search.threads, 1, 1, 64,
                   "worker threads, each with its own evaluator"),
    LOOM_SK_SEED_PARAM(random_params, search),
    LOOM_INT_PARAM_AT("max_evaluations", random_params, search.max_evaluations, 0, 0, 2147483647,
                   "stop after this many evaluator runs (0: unlimited); with it the result is "
                   "the same for any thread count"),
    LOOM_PARAM_END};

/* Creates an instance (all state lives in one rank() call). */
static int random_create(const loom_host_api *host, loom_ctx *ctx,
                         void *plugin_state, void **self, loom_error *err)
{
    (void)plugin_state;
    random_self *s = host->alloc(sizeof *s);
    if (!s)
        return host->error(err, LOOM_ENOMEM, "random: out of memory");
    s->host = host;
    s->ctx = ctx;
    *self = s;
    return LOOM_OK;
}

/* Releases an instance. */
static void random_destroy(void *self)
{
    random_self *s = self;
    if (s)
        s->host->free(s);
}

/* The priorities of draw `index`, using 3n ints of scratch. */
static void random_draw(random_run *r, int32_t *scratch, int64_t index,
                        float *prio)
{
    int32_t n = r->n;
    uint64_t rng = loom_sk_job_seed(r->sk.prm.seed, index);
    loom_sk_random_order(&r->sk.prec, &rng, scratch, scratch + n,
                         scratch + 2 * n);
    loom_sk_order_to_prio(scratch + 2 * n, n, prio);
}

/* Batch job: evaluates draw base + j on `worker`. */
static int random_job(void *user, int32_t worker, int32_t j, loom_error *err)
{
    random_run *r = user;
    memset(&r->res[j], 0, sizeof r->res[j]);
    if (!loom_sk_time_left(&r->sk)) {
        r->res[j].skipped = 1;
        return LOOM_OK;
    }
    float *prio = loom_sk_worker_prio(&r->sk, worker);
    random_draw(r, r->scratch + (size_t)worker * 3 * (size_t)r->n, r->base + j, prio);
    return loom_sk_evaluate(&r->sk, worker, prio, &r->res[j], err);
}

/* 1 when precedence leaves exactly one valid order. */
static int random_single_order(const loom_sk_prec *pc, int32_t *left)
{
    for (int32_t v = 0; v < pc->n; v++)
        left[v] = pc->pred_off[v + 1] - pc->pred_off[v];
    for (int32_t k = 0; k < pc->n; k++) {
        int32_t pick = -1, count = 0;
        for (int32_t v = 0; v < pc->n; v++)
            if (left[v] == 0) {
                pick = v;
                count++;
            }
        if (count != 1)
            return 0;
        left[pick] = -1;
        for (int32_t e = pc->succ_off[pick]; e < pc->succ_off[pick + 1]; e++)
            left[pc->succ[e]]--;
    }
    return 1;
}

/* Draws batches until a stop condition; reports in draw order. */
static int random_search(random_run *r, loom_error *err)
{
    loom_sk *sk = &r->sk;
    float *prio = loom_sk_worker_prio(sk, 0);
    double wave_ms = 0;
    while (!loom_sk_should_stop(sk, wave_ms)) {
        double t0 = sk->host->now_ms();
        int64_t left = loom_sk_batch_room(sk, wave_ms);
        int32_t n_jobs = left < RANDOM_BATCH ? (int32_t)left : RANDOM_BATCH;
        int rc = loom_sk_run_jobs(sk, n_jobs, random_job, r, err);
        if (rc != LOOM_OK)
            return rc;
        for (int32_t j = 0; j < n_jobs; j++) {
            if (r->res[j].skipped) {
                sk->stopped_by_time = 1;
                continue;
            }
            sk->evaluations++;
            if (loom_sk_improves(sk, &r->res[j])) {
                random_draw(r, r->scratch, r->base + j, prio);
                loom_sk_offer(sk, prio, &r->res[j], sk->evaluations);
            }
        }
        r->base += n_jobs;
        if (sk->stopped_by_time)
            break;
        wave_ms = loom_sk_wave_ms(sk, sk->host->now_ms() - t0, n_jobs);
    }
    return LOOM_OK;
}

/* Random search over the best candidate's priorities. */
static int random_rank(void *self, const loom_stage_graph *const *graphs,
                       int32_t n_graphs, loom_ranking *out, loom_error *err)
{
    random_self *s = self;
    const loom_host_api *host = s->host;
    random_params prm;
    memset(&prm, 0, sizeof prm);
    prm.search.deterministic = 1; /* a param random does not declare */
    int rc = loom_params_read(host, s->ctx, "random", random_param_table, &prm, err);
    if (rc != LOOM_OK)
        return rc;
    random_run *r = host->alloc(sizeof *r);
    if (!r)
        return host->error(err, LOOM_ENOMEM, "random: out of memory");
    memset(r, 0, sizeof *r);
    rc = loom_sk_open(&r->sk, host, s->ctx, "random", &prm.search, graphs, n_graphs,
                      out, err);
    if (rc != LOOM_OK) {
        host->free(r);
        return rc;
    }
    r->n = r->sk.n_groups;
    size_t k = (size_t)r->sk.n_workers * 3 * (size_t)(r->n > 0 ? r->n : 1);
    r->scratch = host->alloc(k * sizeof *r->scratch);
    if (!r->scratch)
        rc = host->error(err, LOOM_ENOMEM, "random: out of memory");
    if (rc == LOOM_OK) {
        r->sk.exhausted = random_single_order(&r->sk.prec, r->scratch);
        if (!r->sk.exhausted)
            rc = random_search(r, err);
    }
    if (rc == LOOM_OK)
        rc = loom_sk_finish(&r->sk, out, err);
    host->free(r->scratch);
    loom_sk_close(&r->sk);
    host->free(r);
    return rc;
}

static const loom_ranker_vtable random_vtable = {
    { sizeof(loom_ranker_vtable), LOOM_RANKER_VERSION },
    random_create,
    random_destroy,
    random_rank,
    LOOM_RANKER_READS_ALL,
};

/* Returns the ranker vtable for role "ranker", else NULL. */
static const loom_role_header *random_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_RANKER) == 0)
        return &random_vtable.header;
    return NULL;
}

static const loom_plugin_info random_info = {
    LOOM_PLUGIN_INFO_HEADER,
    "org.loom.random",
    "1.0.0",
    NULL,
    NULL,
    random_role,
    random_param_table,
};

LOOM_PLUGIN_DEFINE(random, random_info);
