/*
 * search_seed.c - constructive seed orders: groups ranked by their work,
 * evaluated before a local search so that it starts from the best of
 * them instead of the reference order (see <loom/kits/search.h>).
 */
#include <string.h>
#include <loom/kits/search.h>

/* Sort key of one group in one seed order: class first, then value, then
 * the lower group (all ascending). */
typedef struct sk_key {
    int32_t cls;
    double value;
} sk_key;

/* 1 when group a ranks before group b. */
static int sk_key_before(const sk_key *key, int32_t a, int32_t b)
{
    if (key[a].cls != key[b].cls)
        return key[a].cls < key[b].cls;
    if (key[a].value != key[b].value)
        return key[a].value < key[b].value;
    return a < b;
}

/* Pushes group g onto the min-heap h of n entries. */
static void sk_heap_push(const sk_key *key, int32_t *h, int32_t *n, int32_t g)
{
    int32_t i = (*n)++;
    while (i > 0 && sk_key_before(key, g, h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = g;
}

/* Pops the top of the non-empty min-heap h of n entries. */
static int32_t sk_heap_pop(const sk_key *key, int32_t *h, int32_t *n)
{
    int32_t top = h[0], x = h[--*n], i = 0;
    for (;;) {
        int32_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && sk_key_before(key, h[c + 1], h[c]))
            c++;
        if (!sk_key_before(key, h[c], x))
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n > 0)
        h[i] = x;
    return top;
}

/* The key of group g in seed order k (file comment of the header). */
static sk_key sk_seed_key(const loom_sk_group_work *w, int32_t g, int32_t k)
{
    double f = w->forward_ms[g], b = w->backward_ms[g];
    sk_key key = {0, 0};
    switch (k) {
    case 0: key.value = f + b; break;                  /* lightest first */
    case 1: key.value = -(f + b); break;               /* heaviest first */
    case 2: key.value = f; break;                      /* least forward first */
    case 3:                                            /* Johnson (F, B) */
        key.cls = f < b ? 0 : 1;
        key.value = f < b ? f : -b;
        break;
    case 4:                                            /* Johnson (B, F) */
        key.cls = b <= f ? 0 : 1;
        key.value = b <= f ? b : -f;
        break;
    default:                                           /* flow, then lightest */
        key.cls = w->flow[g];
        key.value = f + b;
        break;
    }
    return key;
}

void loom_sk_seed_order(const loom_sk_prec *pc, const loom_sk_group_work *w,
                        int32_t k, int32_t *scratch, int32_t *order)
{
    int32_t n = pc->n, *left = scratch, *heap = scratch + n, n_heap = 0;
    sk_key *key = w->key_scratch;
    for (int32_t g = 0; g < n; g++) {
        key[g] = sk_seed_key(w, g, k);
        left[g] = pc->pred_off[g + 1] - pc->pred_off[g];
    }
    for (int32_t g = 0; g < n; g++)
        if (left[g] == 0)
            sk_heap_push(key, heap, &n_heap, g);
    for (int32_t slot = 0; slot < n; slot++) {
        int32_t g = sk_heap_pop(key, heap, &n_heap);
        order[slot] = g;
        for (int32_t e = pc->succ_off[g]; e < pc->succ_off[g + 1]; e++)
            if (--left[pc->succ[e]] == 0)
                sk_heap_push(key, heap, &n_heap, pc->succ[e]);
    }
}

int loom_sk_group_work_build(const loom_host_api *host, const char *who,
                             const loom_stage_graph *g, loom_sk_group_work *w,
                             loom_error *err)
{
    memset(w, 0, sizeof *w);
    size_t n = (size_t)(g->n_groups > 0 ? g->n_groups : 1);
    w->forward_ms = host->alloc(n * sizeof *w->forward_ms);
    w->backward_ms = host->alloc(n * sizeof *w->backward_ms);
    w->flow = host->alloc(n * sizeof *w->flow);
    w->key_scratch = host->alloc(n * sizeof(sk_key));
    if (!w->forward_ms || !w->backward_ms || !w->flow || !w->key_scratch) {
        loom_sk_group_work_free(host, w);
        return host->error(err, LOOM_ENOMEM, "%s: out of memory", who);
    }
    for (int32_t i = 0; i < g->n_groups; i++) {
        w->forward_ms[i] = 0;
        w->backward_ms[i] = 0;
        w->flow[i] = g->group_flow ? g->group_flow[i] : 0;
    }
    for (int32_t v = 0; v < g->n_stages; v++) {
        int32_t grp = g->group[v];
        double d = g->duration_ms[v];
        if (grp < 0 || grp >= g->n_groups || !(d > 0))
            continue;
        if (g->kind[v] == LOOM_STAGE_F)
            w->forward_ms[grp] += d;
        else if (g->kind[v] <= LOOM_STAGE_W)
            w->backward_ms[grp] += d;
    }
    w->n = g->n_groups;
    return LOOM_OK;
}

void loom_sk_group_work_free(const loom_host_api *host, loom_sk_group_work *w)
{
    host->free(w->forward_ms);
    host->free(w->backward_ms);
    host->free(w->flow);
    host->free(w->key_scratch);
    memset(w, 0, sizeof *w);
}

/* State of one loom_sk_try_seed_orders() call. */
typedef struct sk_seed_run {
    loom_sk *sk;
    const float *prio;      /* n_orders * n_groups */
    loom_sk_result *res;    /* n_orders */
} sk_seed_run;

/* Job j: evaluates seed order j on `worker`. */
static int sk_seed_job(void *user, int32_t worker, int32_t j, loom_error *err)
{
    sk_seed_run *r = user;
    loom_sk *sk = r->sk;
    size_t n = (size_t)sk->n_groups;
    memset(&r->res[j], 0, sizeof r->res[j]);
    if (!loom_sk_time_left(sk)) {
        r->res[j].skipped = 1;
        return LOOM_OK;
    }
    float *prio = loom_sk_worker_prio(sk, worker);
    memcpy(prio, r->prio + (size_t)j * n, n * sizeof *prio);
    return loom_sk_evaluate(sk, worker, prio, &r->res[j], err);
}

int loom_sk_try_seed_orders(loom_sk *sk, loom_error *err)
{
    const loom_host_api *host = sk->host;
    int32_t n = sk->n_groups;
    if (n < 2 || loom_sk_should_stop(sk, 0))
        return LOOM_OK;
    loom_sk_group_work w;
    int rc = loom_sk_group_work_build(host, sk->who, sk->graph, &w, err);
    if (rc != LOOM_OK)
        return rc;
    size_t ns = (size_t)n;
    float *prio = host->alloc(LOOM_SK_SEED_ORDERS * ns * sizeof *prio);
    int32_t *order = host->alloc(ns * sizeof *order);
    int32_t *scratch = host->alloc(2 * ns * sizeof *scratch);
    loom_sk_result *res = host->alloc(LOOM_SK_SEED_ORDERS * sizeof *res);
    if (!prio || !order || !scratch || !res) {
        rc = host->error(err, LOOM_ENOMEM, "%s: out of memory", sk->who);
        goto done;
    }
    /* Distinct orders only, none equal to the reference. */
    static const char *const names[LOOM_SK_SEED_ORDERS] = {
        "lightest first", "heaviest first", "least forward work first",
        "Johnson (forward, backward)", "Johnson (backward, forward)",
        "flow by flow, lightest first"};
    int32_t kind[LOOM_SK_SEED_ORDERS];
    int32_t n_orders = 0;
    int64_t left = loom_sk_evals_left(sk);
    for (int32_t k = 0; k < LOOM_SK_SEED_ORDERS && n_orders < left; k++) {
        loom_sk_seed_order(&sk->prec, &w, k, scratch, order);
        if (!memcmp(order, sk->ref_order, ns * sizeof *order))
            continue;
        float *p = prio + (size_t)n_orders * ns;
        loom_sk_order_to_prio(order, n, p);
        int dup = 0;
        for (int32_t i = 0; i < n_orders && !dup; i++)
            dup = !memcmp(prio + (size_t)i * ns, p, ns * sizeof *p);
        if (!dup)
            kind[n_orders++] = k;
    }
    sk_seed_run run = {sk, prio, res};
    rc = n_orders > 0 ? loom_sk_run_jobs(sk, n_orders, sk_seed_job, &run, err) : LOOM_OK;
    for (int32_t j = 0; j < n_orders && rc == LOOM_OK; j++) {
        if (res[j].skipped) {
            sk->stopped_by_time = 1;
            continue;
        }
        sk->evaluations++;
        loom_sk_score(sk, &res[j]);
        if (loom_sk_offer(sk, prio + (size_t)j * ns, &res[j], sk->evaluations))
            host->log(sk->ctx, LOOM_LOG_DEBUG, "%s: seed order '%s' improves to %.3f ms",
                      sk->who, names[kind[j]], res[j].makespan_ms);
    }
done:
    host->free(prio);
    host->free(order);
    host->free(scratch);
    host->free(res);
    loom_sk_group_work_free(host, &w);
    return rc;
}
