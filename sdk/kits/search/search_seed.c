/*
 * search_seed.c - constructive seed orders: groups ranked by their work,
 * evaluated before a local search so that it starts from the best of
 * them instead of the reference order (see <loom/kits/search.h>).
 */
#include <stdlib.h>
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

const char *const loom_sk_seed_order_names[LOOM_SK_SEED_ORDERS] = {
    "Johnson (backward, forward)", "heaviest first", "heaviest microbatch first",
    "heaviest sixteenth of the microbatches first", "heaviest eighth of the microbatches first",
    "heaviest quarter of the microbatches first"};

/* The key of group g in seed order k (file comment of the header). */
static sk_key sk_seed_key(const loom_sk_group_work *w, int32_t g, int32_t k)
{
    double f = w->forward_ms[g], b = w->backward_ms[g];
    int32_t u = w->unit_rank[g];
    sk_key key = {0, 0};
    switch (k) {
    case 0:                                            /* Johnson (B, F) */
        key.cls = b <= f ? 0 : 1;
        key.value = b <= f ? b : -f;
        break;
    case 1: key.value = -(f + b); break;               /* heaviest first */
    case 2: key.value = u; break;                      /* heaviest microbatch */
    default: {                                         /* the heaviest share */
        int32_t share = k == 3 ? 16 : k == 4 ? 8 : 4;
        int32_t top = (w->n_units + share - 1) / share;
        key.cls = u < top ? 0 : 1;
        key.value = u < top ? u : 0;
        break;
    }
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

/* One microbatch's work, for ranking. */
typedef struct sk_unit {
    double work_ms;
    int32_t id;
} sk_unit;

/* qsort order: heavier first, ties to the lower id. */
static int sk_unit_cmp(const void *pa, const void *pb)
{
    const sk_unit *a = pa, *b = pb;
    if (a->work_ms != b->work_ms)
        return a->work_ms > b->work_ms ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

/* 1 when every group names a microbatch in 0..n_microbatches-1. */
static int sk_has_units(const loom_stage_graph *g)
{
    if (!g->group_microbatch || g->n_microbatches <= 0)
        return 0;
    for (int32_t i = 0; i < g->n_groups; i++)
        if (g->group_microbatch[i] < 0 || g->group_microbatch[i] >= g->n_microbatches)
            return 0;
    return 1;
}

/* Sums the work of every microbatch (every group when the graph names
 * none) and ranks them into w->unit_rank; LOOM_ENOMEM. */
static int sk_rank_units(const loom_host_api *host, const loom_stage_graph *g,
                         loom_sk_group_work *w)
{
    int32_t G = w->n, by_mb = sk_has_units(g);
    int32_t U = by_mb ? g->n_microbatches : G;
    sk_unit *unit = host->alloc((size_t)(U > 0 ? U : 1) * sizeof *unit);
    int32_t *rank = host->alloc((size_t)(U > 0 ? U : 1) * sizeof *rank);
    if (!unit || !rank) {
        host->free(unit);
        host->free(rank);
        return LOOM_ENOMEM;
    }
    for (int32_t u = 0; u < U; u++)
        unit[u] = (sk_unit){-1, u}; /* -1: no group, ranked last */
    for (int32_t i = 0; i < G; i++) {
        sk_unit *x = &unit[by_mb ? g->group_microbatch[i] : i];
        x->work_ms = (x->work_ms < 0 ? 0 : x->work_ms) + w->forward_ms[i] + w->backward_ms[i];
    }
    qsort(unit, (size_t)U, sizeof *unit, sk_unit_cmp);
    w->n_units = 0;
    for (int32_t r = 0; r < U; r++) {
        rank[unit[r].id] = r;
        w->n_units += unit[r].work_ms >= 0;
    }
    for (int32_t i = 0; i < G; i++)
        w->unit_rank[i] = rank[by_mb ? g->group_microbatch[i] : i];
    host->free(unit);
    host->free(rank);
    return LOOM_OK;
}

int loom_sk_group_work_build(const loom_host_api *host, const char *who,
                             const loom_stage_graph *g, loom_sk_group_work *w,
                             loom_error *err)
{
    memset(w, 0, sizeof *w);
    int32_t G = g->n_groups > 0 ? g->n_groups : 0;
    size_t n = (size_t)(G > 0 ? G : 1);
    w->forward_ms = host->alloc(n * sizeof *w->forward_ms);
    w->backward_ms = host->alloc(n * sizeof *w->backward_ms);
    w->unit_rank = host->alloc(n * sizeof *w->unit_rank);
    w->key_scratch = host->alloc(n * sizeof(sk_key));
    if (!w->forward_ms || !w->backward_ms || !w->unit_rank || !w->key_scratch)
        goto oom;
    for (int32_t i = 0; i < G; i++) {
        w->forward_ms[i] = 0;
        w->backward_ms[i] = 0;
    }
    for (int32_t v = 0; v < g->n_stages; v++) {
        int32_t grp = g->group[v];
        double d = g->duration_ms[v];
        if (grp < 0 || grp >= G || !(d > 0))
            continue;
        if (g->kind[v] == LOOM_STAGE_F)
            w->forward_ms[grp] += d;
        else if (g->kind[v] <= LOOM_STAGE_W)
            w->backward_ms[grp] += d;
    }
    w->n = G;
    if (sk_rank_units(host, g, w) != LOOM_OK)
        goto oom;
    return LOOM_OK;
oom:
    loom_sk_group_work_free(host, w);
    return host->error(err, LOOM_ENOMEM, "%s: out of memory", who);
}

void loom_sk_group_work_free(const loom_host_api *host, loom_sk_group_work *w)
{
    host->free(w->forward_ms);
    host->free(w->backward_ms);
    host->free(w->unit_rank);
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
    int32_t kind[LOOM_SK_SEED_ORDERS];
    int32_t n_orders = 0;
    /* as many as whole waves fit, an evaluation timed as the screening run */
    int64_t left = loom_sk_batch_room(sk, sk->screen_ms);
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
        int better = loom_sk_offer(sk, prio + (size_t)j * ns, &res[j], sk->evaluations);
        if (res[j].ok)
            host->log(sk->ctx, LOOM_LOG_DEBUG, "%s: seed order '%s': %.3f ms%s", sk->who,
                      loom_sk_seed_order_names[kind[j]], res[j].makespan_ms,
                      better ? ", the best so far" : "");
        else
            host->log(sk->ctx, LOOM_LOG_DEBUG, "%s: seed order '%s': infeasible", sk->who,
                      loom_sk_seed_order_names[kind[j]]);
    }
done:
    host->free(prio);
    host->free(order);
    host->free(scratch);
    host->free(res);
    loom_sk_group_work_free(host, &w);
    return rc;
}
