/*
 * search_pool.c - the worker threads of a search session: n_workers - 1
 * pthreads that sleep between batches; a batch hands out job indices from
 * a shared counter, and the caller's thread works as worker 0.
 */
#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <loom/kits/search.h>

typedef struct loom_sk_pool loom_sk_pool;

/* Arguments of one pool thread. */
typedef struct sk_thread {
    loom_sk_pool *pool;
    int32_t worker;
    pthread_t tid;
} sk_thread;

struct loom_sk_pool {
    loom_sk *sk;
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    uint64_t generation;   /* bumped per batch */
    int quit;
    int32_t n_threads;     /* started threads (workers 1..n) */
    sk_thread threads[LOOM_SK_MAX_THREADS];

    loom_sk_job_fn fn;     /* current batch */
    void *user;
    int32_t n_jobs, next;
    int32_t busy;          /* workers still in the batch */
    int32_t err_job;       /* lowest failing job, INT32_MAX none */
    int err_rc;
    loom_error err;
};

/* Works through the current batch's jobs as `worker`. */
static void pool_work(loom_sk_pool *p, int32_t worker)
{
    for (;;) {
        pthread_mutex_lock(&p->mu);
        int32_t j = p->next < p->n_jobs ? p->next++ : -1;
        int skip = j > p->err_job;
        pthread_mutex_unlock(&p->mu);
        if (j < 0)
            break;
        if (skip)
            continue;
        loom_error e;
        memset(&e, 0, sizeof e);
        int rc = p->fn(p->user, worker, j, &e);
        if (rc != LOOM_OK) {
            pthread_mutex_lock(&p->mu);
            if (j < p->err_job) {
                p->err_job = j;
                p->err_rc = rc;
                p->err = e;
            }
            pthread_mutex_unlock(&p->mu);
        }
    }
    pthread_mutex_lock(&p->mu);
    if (--p->busy == 0)
        pthread_cond_broadcast(&p->done);
    pthread_mutex_unlock(&p->mu);
}

/* Thread body: waits for a batch, works it, repeats until quit. */
static void *pool_main(void *arg)
{
    sk_thread *t = arg;
    loom_sk_pool *p = t->pool;
    uint64_t seen = 0;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (!p->quit && p->generation == seen)
            pthread_cond_wait(&p->go, &p->mu);
        if (p->quit) {
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        seen = p->generation;
        pthread_mutex_unlock(&p->mu);
        pool_work(p, t->worker);
    }
}

int loom_sk_pool_start(loom_sk *sk, loom_error *err)
{
    if (sk->n_workers <= 1)
        return LOOM_OK;
    loom_sk_pool *p = sk->host->alloc(sizeof *p);
    if (!p)
        return sk->host->error(err, LOOM_ENOMEM, "%s: out of memory", sk->who);
    memset(p, 0, sizeof *p);
    p->sk = sk;
    p->err_job = INT32_MAX;
    if (pthread_mutex_init(&p->mu, NULL) != 0) {
        sk->host->free(p);
        return sk->host->error(err, LOOM_EPLUGIN, "%s: cannot create a mutex",
                               sk->who);
    }
    pthread_cond_init(&p->go, NULL);
    pthread_cond_init(&p->done, NULL);
    sk->pool = p;
    for (int32_t w = 1; w < sk->n_workers; w++) {
        sk_thread *t = &p->threads[w - 1];
        t->pool = p;
        t->worker = w;
        if (pthread_create(&t->tid, NULL, pool_main, t) != 0)
            return sk->host->error(err, LOOM_EPLUGIN, "%s: cannot start worker "
                                   "thread %d of %d", sk->who, w,
                                   sk->n_workers - 1);
        p->n_threads = w;
    }
    return LOOM_OK;
}

void loom_sk_pool_stop(loom_sk *sk)
{
    loom_sk_pool *p = sk->pool;
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    for (int32_t i = 0; i < p->n_threads; i++)
        pthread_join(p->threads[i].tid, NULL);
    pthread_cond_destroy(&p->go);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->mu);
    sk->host->free(p);
    sk->pool = NULL;
}

int loom_sk_run_jobs(loom_sk *sk, int32_t n_jobs, loom_sk_job_fn fn,
                     void *user, loom_error *err)
{
    loom_sk_pool *p = sk->pool;
    if (!p) {
        for (int32_t j = 0; j < n_jobs; j++) {
            int rc = fn(user, 0, j, err);
            if (rc != LOOM_OK)
                return rc;
        }
        return LOOM_OK;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->user = user;
    p->n_jobs = n_jobs;
    p->next = 0;
    p->busy = p->n_threads + 1;
    p->err_job = INT32_MAX;
    p->err_rc = LOOM_OK;
    p->generation++;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);

    pool_work(p, 0);

    pthread_mutex_lock(&p->mu);
    while (p->busy > 0)
        pthread_cond_wait(&p->done, &p->mu);
    int rc = p->err_rc;
    if (rc != LOOM_OK)
        *err = p->err;
    pthread_mutex_unlock(&p->mu);
    return rc;
}

/* One loom_sk_run_ordered batch: the caller's job and settle callbacks,
 * which jobs finished, and the first job not settled yet. */
typedef struct sk_ordered {
    loom_sk_job_fn fn;
    loom_sk_settle_fn settle;
    void *user;
    uint8_t *done;
    int32_t n_jobs, next;
    pthread_mutex_t mu;
} sk_ordered;

/* Runs one job, then settles every finished job from the first unsettled. */
static int sk_ordered_job(void *user, int32_t worker, int32_t job, loom_error *err)
{
    sk_ordered *o = user;
    int rc = o->fn(o->user, worker, job, err);
    if (rc != LOOM_OK)
        return rc;
    pthread_mutex_lock(&o->mu);
    o->done[job] = 1;
    for (; o->next < o->n_jobs && o->done[o->next]; o->next++)
        o->settle(o->user, o->next);
    pthread_mutex_unlock(&o->mu);
    return LOOM_OK;
}

int loom_sk_run_ordered(loom_sk *sk, int32_t n_jobs, loom_sk_job_fn fn,
                        loom_sk_settle_fn settle, void *user, loom_error *err)
{
    sk_ordered o = {fn, settle, user, NULL, n_jobs, 0, PTHREAD_MUTEX_INITIALIZER};
    o.done = sk->host->alloc(n_jobs > 0 ? (size_t)n_jobs : 1);
    if (!o.done)
        return sk->host->error(err, LOOM_ENOMEM, "%s: out of memory", sk->who);
    memset(o.done, 0, n_jobs > 0 ? (size_t)n_jobs : 1);
    int rc = loom_sk_run_jobs(sk, n_jobs, sk_ordered_job, &o, err);
    sk->host->free(o.done);
    pthread_mutex_destroy(&o.mu);
    return rc;
}

int loom_sk_ordered_batch(const loom_host_api *host, loom_ctx *ctx, const char *who,
                          int64_t threads, int32_t n_jobs, loom_sk_job_fn fn,
                          loom_sk_settle_fn settle, void *user, loom_error *err)
{
    loom_sk pool;
    memset(&pool, 0, sizeof pool);
    pool.host = host;
    pool.ctx = ctx;
    pool.who = who;
    pool.n_workers = threads < n_jobs ? (int32_t)threads : n_jobs;
    if (pool.n_workers < 1)
        pool.n_workers = 1;
    int rc = loom_sk_pool_start(&pool, err);
    if (rc == LOOM_OK)
        rc = loom_sk_run_ordered(&pool, n_jobs, fn, settle, user, err);
    loom_sk_pool_stop(&pool);
    return rc;
}
