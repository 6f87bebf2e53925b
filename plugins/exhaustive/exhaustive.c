/*
 * exhaustive.c - the exhaustive ranker (the depth-first baseline of
 * PipeWeaver §8.3, Fig. 12): enumerates every valid priority assignment
 * depth first, slot by slot (which group runs first, second, ...), trying
 * groups in index order at each slot among those whose predecessors are
 * placed, and evaluates each. When the space is exhausted within the
 * budget the result is the exact optimum over priorities for the chosen
 * candidate graph.
 *
 * The first assignment enumerated is the reference order, already
 * evaluated while screening the candidates, so it is not evaluated again.
 * Enumeration is sequential; batches of assignments are evaluated by the
 * workers and reported in enumeration order, so the result does not depend
 * on the thread count.
 */
#include <string.h>
#include <loom/kits/search.h>

#define EXH_BATCH 64

typedef struct exh_self {
    const loom_host_api *host;
    loom_ctx *ctx;
} exh_self;

/* Depth-first enumeration state and one batch of assignments. */
typedef struct exh_run {
    loom_sk sk;
    int32_t n;
    int32_t depth;       /* groups placed on the current path */
    int32_t *order;      /* the path: group per slot */
    int32_t *cursor;     /* per depth: next group index to try */
    int32_t *left;       /* per group: predecessors not on the path; -1 placed */
    int started, done;
    int64_t produced;    /* assignments enumerated */
    int32_t *batch;      /* EXH_BATCH * n orders */
    loom_sk_result res[EXH_BATCH];
} exh_run;

/* The params, declared once in exhaustive_param_table (manifest.json says the same). */
typedef struct exhaustive_params {
    loom_sk_params search; /* budget_ms, threads, max_evaluations */
} exhaustive_params;

static const loom_param_def exhaustive_param_table[] = {
    LOOM_SK_BUDGET_MS_PARAM(exhaustive_params, search),
    LOOM_SK_BUDGET_ITERATIONS_PARAM(exhaustive_params, search),
    LOOM_INT_PARAM_AT("threads", exhaustive_params, search.threads, 1, 1, 64,
                   "worker threads evaluating batches of enumerated assignments, each with "
                   "its own evaluator"),
    LOOM_INT_PARAM_AT("max_evaluations", exhaustive_params, search.max_evaluations, 0, 0, 2147483647,
                   "stop after this many evaluator runs (0: unlimited)"),
    LOOM_PARAM_END};

/* Creates an instance (all state lives in one rank() call). */
static int exh_create(const loom_host_api *host, loom_ctx *ctx,
                      void *plugin_state, void **self, loom_error *err)
{
    (void)plugin_state;
    exh_self *s = host->alloc(sizeof *s);
    if (!s)
        return host->error(err, LOOM_ENOMEM, "exhaustive: out of memory");
    s->host = host;
    s->ctx = ctx;
    *self = s;
    return LOOM_OK;
}

/* Releases an instance. */
static void exh_destroy(void *self)
{
    exh_self *s = self;
    if (s)
        s->host->free(s);
}

/* Places group g at the current depth. */
static void exh_push(exh_run *x, int32_t g)
{
    const loom_sk_prec *pc = &x->sk.prec;
    x->order[x->depth++] = g;
    x->left[g] = -1;
    for (int32_t e = pc->succ_off[g]; e < pc->succ_off[g + 1]; e++)
        x->left[pc->succ[e]]--;
    x->cursor[x->depth] = 0;
}

/* Removes the last placed group; the next try at that depth follows it. */
static void exh_pop(exh_run *x)
{
    const loom_sk_prec *pc = &x->sk.prec;
    int32_t g = x->order[--x->depth];
    for (int32_t e = pc->succ_off[g]; e < pc->succ_off[g + 1]; e++)
        x->left[pc->succ[e]]++;
    x->left[g] = 0;
    x->cursor[x->depth] = g + 1;
}

/* Advances to the next complete order; 0 when the space is exhausted. */
static int exh_next(exh_run *x)
{
    int32_t n = x->n;
    if (x->done)
        return 0;
    if (!x->started) {
        const loom_sk_prec *pc = &x->sk.prec;
        for (int32_t g = 0; g < n; g++)
            x->left[g] = pc->pred_off[g + 1] - pc->pred_off[g];
        x->depth = 0;
        x->cursor[0] = 0;
        x->started = 1;
    } else if (n == 0) {
        x->done = 1;
        return 0;
    } else {
        exh_pop(x);
    }
    for (;;) {
        if (x->depth == n)
            return 1;
        int32_t g = x->cursor[x->depth];
        while (g < n && x->left[g] != 0)
            g++;
        if (g < n) {
            exh_push(x, g);
            continue;
        }
        if (x->depth == 0) {
            x->done = 1;
            return 0;
        }
        exh_pop(x);
    }
}

/* Batch job: evaluates order j of the batch on `worker`. */
static int exh_job(void *user, int32_t worker, int32_t j, loom_error *err)
{
    exh_run *x = user;
    memset(&x->res[j], 0, sizeof x->res[j]);
    if (!loom_sk_time_left(&x->sk)) {
        x->res[j].skipped = 1;
        return LOOM_OK;
    }
    float *prio = loom_sk_worker_prio(&x->sk, worker);
    loom_sk_order_to_prio(x->batch + (size_t)j * (size_t)x->n, x->n, prio);
    return loom_sk_evaluate(&x->sk, worker, prio, &x->res[j], err);
}

/* Enumerates and evaluates batches until exhausted or stopped. */
static int exh_search(exh_run *x, loom_error *err)
{
    loom_sk *sk = &x->sk;
    size_t row = (size_t)x->n * sizeof *x->batch;
    float *prio = loom_sk_worker_prio(sk, 0);
    double wave_ms = 0;
    while (!x->done && !loom_sk_should_stop(sk, wave_ms)) {
        double t0 = sk->host->now_ms();
        int64_t left = loom_sk_batch_room(sk, wave_ms);
        int32_t n_jobs = 0;
        while (n_jobs < EXH_BATCH && n_jobs < left && exh_next(x)) {
            if (x->produced++ == 0 && x->n > 0 &&
                memcmp(x->order, sk->ref_order, row) == 0)
                continue; /* the reference order: already evaluated */
            memcpy(x->batch + (size_t)n_jobs * (size_t)x->n, x->order, row);
            n_jobs++;
        }
        int rc = loom_sk_run_jobs(sk, n_jobs, exh_job, x, err);
        if (rc != LOOM_OK)
            return rc;
        for (int32_t j = 0; j < n_jobs; j++) {
            if (x->res[j].skipped) {
                sk->stopped_by_time = 1;
                continue;
            }
            sk->evaluations++;
            if (loom_sk_improves(sk, &x->res[j])) {
                loom_sk_order_to_prio(x->batch + (size_t)j * (size_t)x->n, x->n, prio);
                loom_sk_offer(sk, prio, &x->res[j], sk->evaluations);
            }
        }
        if (sk->stopped_by_time)
            return LOOM_OK;
        wave_ms = loom_sk_wave_ms(sk, sk->host->now_ms() - t0, n_jobs);
    }
    /* Done only if nothing was left out: every enumerated order ran. */
    if (x->done)
        sk->exhausted = 1;
    return LOOM_OK;
}

/* Exhaustive search over the best candidate's priorities. */
static int exh_rank(void *self, const loom_stage_graph *const *graphs,
                    int32_t n_graphs, loom_ranking *out, loom_error *err)
{
    exh_self *s = self;
    const loom_host_api *host = s->host;
    exhaustive_params prm;
    memset(&prm, 0, sizeof prm);
    prm.search.deterministic = 1; /* a param exhaustive does not declare */
    int rc = loom_params_read(host, s->ctx, "exhaustive", exhaustive_param_table, &prm, err);
    if (rc != LOOM_OK)
        return rc;
    exh_run *x = host->alloc(sizeof *x);
    if (!x)
        return host->error(err, LOOM_ENOMEM, "exhaustive: out of memory");
    memset(x, 0, sizeof *x);
    rc = loom_sk_open(&x->sk, host, s->ctx, "exhaustive", &prm.search, graphs,
                      n_graphs, out, err);
    if (rc != LOOM_OK) {
        host->free(x);
        return rc;
    }
    x->n = x->sk.n_groups;
    size_t k = (size_t)(x->n > 0 ? x->n : 1);
    x->order = host->alloc(k * sizeof *x->order);
    x->cursor = host->alloc((k + 1) * sizeof *x->cursor);
    x->left = host->alloc(k * sizeof *x->left);
    x->batch = host->alloc(EXH_BATCH * k * sizeof *x->batch);
    if (!x->order || !x->cursor || !x->left || !x->batch)
        rc = host->error(err, LOOM_ENOMEM, "exhaustive: out of memory");
    if (rc == LOOM_OK)
        rc = exh_search(x, err);
    if (rc == LOOM_OK)
        rc = loom_sk_finish(&x->sk, out, err);
    host->free(x->order);
    host->free(x->cursor);
    host->free(x->left);
    host->free(x->batch);
    loom_sk_close(&x->sk);
    host->free(x);
    return rc;
}

static const loom_ranker_vtable exh_vtable = {
    { sizeof(loom_ranker_vtable), LOOM_RANKER_VERSION },
    exh_create,
    exh_destroy,
    exh_rank,
    LOOM_RANKER_READS_ALL,
};

/* Returns the ranker vtable for role "ranker", else NULL. */
static const loom_role_header *exh_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_RANKER) == 0)
        return &exh_vtable.header;
    return NULL;
}

static const loom_plugin_info exh_info = {
    LOOM_PLUGIN_INFO_HEADER,
    "org.loom.exhaustive",
    "1.0.0",
    NULL,
    NULL,
    exh_role,
    exhaustive_param_table,
};

LOOM_PLUGIN_DEFINE(exhaustive, exh_info);
