/*
 * oobleck_plan.c - Oobleck's instantiation (dissertation §2.4.2): the
 * coin-change enumeration of every plan that uses all nodes with at least
 * f+1 pipelines (Eq. 2.5), batch distribution over heterogeneous
 * pipelines (Eq. 2.6) and the choice of the fastest plan.
 *
 * Uses only the C library (see oobleck.h).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <loom/algorithms/oobleck.h>

double loom_oobleck_linear_time(void *per_mb_ms, int32_t index,
                                int32_t microbatches)
{
    return ((const double *)per_mb_ms)[index] * (double)microbatches;
}

/* ---- coin change -------------------------------------------------------- */

typedef struct enum_state {
    const int32_t *sizes;
    int32_t n, f, max_plans;
    const unsigned char *reach; /* reach[p * (nodes+1) + amount] */
    int32_t stride;
    int32_t *x;                 /* current vector */
    int32_t *rows;
    int32_t count, cap;
    int truncated, oom;
} enum_state;

/* Appends x when it has at least f+1 pipelines. */
static void enum_emit(enum_state *e)
{
    int32_t pipes = 0;
    for (int32_t j = 0; j < e->n; j++)
        pipes += e->x[j];
    if (pipes < e->f + 1)
        return;
    if (e->max_plans > 0 && e->count >= e->max_plans) {
        e->truncated = 1;
        return;
    }
    if (e->count == e->cap) {
        int32_t ncap = e->cap ? e->cap * 2 : 16;
        int32_t *nr = realloc(e->rows, (size_t)ncap * (size_t)e->n * sizeof *nr);
        if (!nr) {
            e->oom = 1;
            return;
        }
        e->rows = nr;
        e->cap = ncap;
    }
    memcpy(e->rows + (size_t)e->count * (size_t)e->n, e->x,
           (size_t)e->n * sizeof *e->x);
    e->count++;
}

/* X(p, amount) of Eq. 2.5 with the current x added: X(p-1, amount) first,
 * then one more pipeline of template p-1 on X(p, amount - n_{p-1}). */
static void enum_rec(enum_state *e, int32_t p, int32_t amount)
{
    if (e->oom || e->truncated)
        return;
    if (amount == 0) {
        enum_emit(e);
        return;
    }
    if (p == 0 || amount < 0 || !e->reach[(size_t)p * e->stride + amount])
        return;
    enum_rec(e, p - 1, amount);
    int32_t size = e->sizes[p - 1];
    if (amount >= size) {
        e->x[p - 1]++;
        enum_rec(e, p, amount - size);
        e->x[p - 1]--;
    }
}

int64_t loom_oobleck_plan_count(const int32_t *sizes, int32_t n_sizes, int32_t nodes)
{
    if (!sizes || n_sizes < 1 || nodes < 0 || nodes > LOOM_OOBLECK_MAX_NODES)
        return 0;
    const int64_t cap = INT64_MAX / 4;
    int64_t *ways = calloc((size_t)nodes + 1, sizeof *ways);
    if (!ways)
        return cap;
    ways[0] = 1; /* ways[a]: combinations of the sizes so far summing to a */
    for (int32_t j = 0; j < n_sizes; j++)
        for (int32_t a = sizes[j] > 0 ? sizes[j] : nodes + 1; a <= nodes; a++) {
            ways[a] += ways[a - sizes[j]];
            if (ways[a] > cap)
                ways[a] = cap;
        }
    int64_t n = ways[nodes];
    free(ways);
    return n;
}

int loom_oobleck_enumerate(const int32_t *sizes, int32_t n_sizes,
                           int32_t nodes, int32_t f, int32_t max_plans,
                           int32_t **plans_out, int32_t *n_out,
                           int *truncated, loom_error *err)
{
    *plans_out = NULL;
    *n_out = 0;
    if (truncated)
        *truncated = 0;
    if (n_sizes < 1 || !sizes || nodes < 0 || nodes > LOOM_OOBLECK_MAX_NODES ||
        f < 0)
        return loom_error_format(err, LOOM_EINVAL,
                         "oobleck: enumerate needs >= 1 template size, nodes "
                         "in [0, %d] and f >= 0, found %d sizes, %d nodes, "
                         "f %d", LOOM_OOBLECK_MAX_NODES, n_sizes, nodes, f);
    for (int32_t j = 0; j < n_sizes; j++)
        if (sizes[j] < 1)
            return loom_error_format(err, LOOM_EINVAL,
                             "oobleck: template %d has %d nodes, expected >= 1",
                             j, sizes[j]);
    if (max_plans <= 0) { /* the whole list is kept: bound it first */
        int64_t count = loom_oobleck_plan_count(sizes, n_sizes, nodes);
        if (count > LOOM_OOBLECK_MAX_PLANS)
            return loom_error_format(err, LOOM_EINVAL,
                             "oobleck: %d nodes split into templates of %d..%d nodes "
                             "in up to %lld ways, at most %d instantiation plans; "
                             "raise min_nodes or lower the node count", nodes, sizes[0],
                             sizes[n_sizes - 1], (long long)count, LOOM_OOBLECK_MAX_PLANS);
    }
    /* reach[p][a]: amount a is a combination of the first p sizes */
    int32_t stride = nodes + 1;
    unsigned char *reach = calloc((size_t)(n_sizes + 1) * (size_t)stride, 1);
    int32_t *x = calloc((size_t)n_sizes, sizeof *x);
    if (!reach || !x) {
        free(reach);
        free(x);
        return loom_error_format(err, LOOM_ENOMEM, "oobleck: out of memory");
    }
    reach[0] = 1;
    for (int32_t p = 1; p <= n_sizes; p++) {
        unsigned char *row = reach + (size_t)p * stride;
        const unsigned char *prev = row - stride;
        for (int32_t a = 0; a <= nodes; a++)
            row[a] = prev[a] || (a >= sizes[p - 1] && row[a - sizes[p - 1]]);
    }
    enum_state e = {sizes, n_sizes, f, max_plans, reach, stride, x, NULL,
                    0, 0, 0, 0};
    enum_rec(&e, n_sizes, nodes);
    free(reach);
    free(x);
    if (e.oom) {
        free(e.rows);
        return loom_error_format(err, LOOM_ENOMEM, "oobleck: out of memory");
    }
    *plans_out = e.rows;
    *n_out = e.count;
    if (truncated)
        *truncated = e.truncated;
    return LOOM_OK;
}

/* ---- batch distribution ------------------------------------------------- */

int32_t loom_oobleck_share(int32_t total, int32_t x, int32_t k)
{
    if (x <= 0)
        return 0;
    return total / x + (k < total % x);
}

/* Slowest pipeline of a template whose x pipelines share `total`. */
static double dist_max(loom_oobleck_time_fn fn, void *user, int32_t j,
                       int32_t x, int32_t total)
{
    return fn(user, j, total / x + (total % x != 0));
}

/* Sum of squared pipeline times of a template's x pipelines. */
static double dist_sq(loom_oobleck_time_fn fn, void *user, int32_t j,
                      int32_t x, int32_t total)
{
    int32_t q = total / x, r = total % x;
    double lo = fn(user, j, q), hi = fn(user, j, q + 1);
    return (double)(x - r) * lo * lo + (double)r * hi * hi;
}

int loom_oobleck_distribute(const int32_t *x, int32_t n,
                            loom_oobleck_time_fn time_fn, void *user,
                            int32_t microbatches, int32_t *mb,
                            double *iteration_ms, int32_t *recommended,
                            loom_error *err)
{
    if (recommended)
        *recommended = 0;
    if (!x || n < 1 || !time_fn || !mb || microbatches < 1 ||
        microbatches > LOOM_OOBLECK_MAX_MICROBATCHES)
        return loom_error_format(err, LOOM_EINVAL,
                         "oobleck: batch distribution needs templates, a time "
                         "function and 1 to %d microbatches, found %d",
                         LOOM_OOBLECK_MAX_MICROBATCHES, microbatches);
    int32_t pipes = 0;
    for (int32_t j = 0; j < n; j++) {
        if (x[j] < 0)
            return loom_error_format(err, LOOM_EINVAL,
                             "oobleck: template %d has %d pipelines", j, x[j]);
        pipes += x[j];
        mb[j] = x[j]; /* one microbatch per pipeline to start */
    }
    if (pipes == 0)
        return loom_error_format(err, LOOM_EINVAL, "oobleck: the plan has no pipeline");
    if (microbatches < pipes) {
        if (recommended)
            *recommended = pipes;
        return loom_error_format(err, LOOM_EINFEASIBLE,
                         "oobleck: %d microbatches cannot give each of the %d "
                         "pipelines one; nearest total that splits: %d",
                         microbatches, pipes, pipes);
    }
    /* Pass 1 (water filling): each next microbatch goes where the slowest
     * resulting pipeline of that template is fastest; optimal for the
     * bottleneck with non-decreasing times. */
    double tau = 0;
    for (int32_t j = 0; j < n; j++)
        if (x[j] > 0) {
            double t = dist_max(time_fn, user, j, x[j], mb[j]);
            if (t > tau)
                tau = t;
        }
    for (int32_t left = microbatches - pipes; left > 0; left--) {
        int32_t pick = -1;
        double pick_t = INFINITY;
        for (int32_t j = 0; j < n; j++) {
            if (x[j] == 0)
                continue;
            double t = dist_max(time_fn, user, j, x[j], mb[j] + 1);
            if (t < pick_t) {
                pick_t = t;
                pick = j;
            }
        }
        if (pick < 0) /* every template's time is infinite (or NaN) */
            return loom_error_format(err, LOOM_EINFEASIBLE,
                             "oobleck: no pipeline of the plan can take microbatch %d "
                             "of %d: every template's time for one more is infinite",
                             microbatches - left + 1, microbatches);
        mb[pick]++;
        if (pick_t > tau)
            tau = pick_t;
    }
    /* Pass 2: restart and add microbatches by the smallest growth of the
     * sum of squares, never exceeding tau (convex: greedy is exact). */
    int32_t *first = malloc((size_t)n * sizeof *first);
    if (!first)
        return loom_error_format(err, LOOM_ENOMEM, "oobleck: out of memory");
    memcpy(first, mb, (size_t)n * sizeof *mb);
    for (int32_t j = 0; j < n; j++)
        mb[j] = x[j];
    for (int32_t left = microbatches - pipes; left > 0; left--) {
        int32_t pick = -1;
        double pick_d = INFINITY;
        for (int32_t j = 0; j < n; j++) {
            if (x[j] == 0 ||
                dist_max(time_fn, user, j, x[j], mb[j] + 1) > tau)
                continue;
            double d = dist_sq(time_fn, user, j, x[j], mb[j] + 1) -
                       dist_sq(time_fn, user, j, x[j], mb[j]);
            if (d < pick_d) {
                pick_d = d;
                pick = j;
            }
        }
        if (pick < 0) { /* non-convex times: keep the pass 1 split */
            memcpy(mb, first, (size_t)n * sizeof *mb);
            break;
        }
        mb[pick]++;
    }
    free(first);
    double worst = 0;
    for (int32_t j = 0; j < n; j++)
        if (x[j] > 0) {
            double t = dist_max(time_fn, user, j, x[j], mb[j]);
            if (t > worst)
                worst = t;
        } else {
            mb[j] = 0;
        }
    if (iteration_ms)
        *iteration_ms = worst;
    return LOOM_OK;
}

/* ---- plan choice -------------------------------------------------------- */

void loom_oobleck_choice_clear(loom_oobleck_choice *c)
{
    if (!c)
        return;
    free(c->x);
    free(c->mb);
    memset(c, 0, sizeof *c);
}

int loom_oobleck_choose(const int32_t *sizes, int32_t n_sizes,
                        loom_oobleck_time_fn time_fn, void *user,
                        int32_t nodes, int32_t f, int32_t microbatches,
                        int32_t max_plans, loom_oobleck_choice *out,
                        loom_error *err)
{
    memset(out, 0, sizeof *out);
    /* every plan distributes the batch in O(microbatches * templates) */
    int64_t count = loom_oobleck_plan_count(sizes, n_sizes, nodes);
    if (max_plans > 0 && count > max_plans)
        count = max_plans;
    double work = (double)count * (n_sizes > 0 ? n_sizes : 1) *
                  (microbatches > 1 ? microbatches : 1);
    if (work > (double)LOOM_OOBLECK_MAX_PLAN_WORK)
        return loom_error_format(err, LOOM_EINVAL,
                         "oobleck: up to %lld instantiation plans of %d nodes, each "
                         "distributing %d microbatches over %d templates, need %.3g "
                         "steps, at most %lld; raise min_nodes or lower the node count "
                         "or the microbatches", (long long)count, nodes, microbatches,
                         n_sizes, work, (long long)LOOM_OOBLECK_MAX_PLAN_WORK);
    int32_t *plans = NULL, n_plans = 0;
    int rc = loom_oobleck_enumerate(sizes, n_sizes, nodes, f, max_plans,
                                    &plans, &n_plans, NULL, err);
    if (rc != LOOM_OK)
        return rc;
    if (n_plans == 0) {
        free(plans);
        return loom_error_format(err, LOOM_EINFEASIBLE,
                         "oobleck: no plan uses all %d nodes with at least "
                         "f+1 = %d pipelines from templates of %d..%d nodes",
                         nodes, f + 1, sizes[0], sizes[n_sizes - 1]);
    }
    out->n_sizes = n_sizes;
    out->x = calloc((size_t)n_sizes, sizeof *out->x);
    out->mb = calloc((size_t)n_sizes, sizeof *out->mb);
    int32_t *nb = calloc((size_t)n_sizes, sizeof *nb);
    if (!out->x || !out->mb || !nb) {
        free(plans);
        free(nb);
        loom_oobleck_choice_clear(out);
        return loom_error_format(err, LOOM_ENOMEM, "oobleck: out of memory");
    }
    double best = INFINITY;
    int32_t best_rec = 0;
    out->plan_index = -1;
    for (int32_t i = 0; i < n_plans; i++) {
        const int32_t *x = plans + (size_t)i * (size_t)n_sizes;
        double ms = 0;
        int32_t rec = 0;
        loom_error e = {0, ""};
        int r = loom_oobleck_distribute(x, n_sizes, time_fn, user, microbatches,
                                        nb, &ms, &rec, &e);
        if (r == LOOM_EINFEASIBLE) {
            if (rec && (!best_rec || abs(rec - microbatches) <
                                         abs(best_rec - microbatches)))
                best_rec = rec;
            continue;
        }
        if (r != LOOM_OK) {
            free(plans);
            free(nb);
            loom_oobleck_choice_clear(out);
            if (err)
                *err = e;
            return r;
        }
        out->plans++;
        if (ms < best) {
            best = ms;
            out->plan_index = i;
            memcpy(out->x, x, (size_t)n_sizes * sizeof *x);
            memcpy(out->mb, nb, (size_t)n_sizes * sizeof *nb);
        }
    }
    free(plans);
    free(nb);
    if (out->plan_index < 0) {
        int32_t rec = best_rec;
        loom_oobleck_choice_clear(out);
        out->recommended = rec;
        return loom_error_format(err, LOOM_EINFEASIBLE,
                         "oobleck: none of the %d plans for %d nodes can split "
                         "%d microbatches; nearest total that splits: %d",
                         n_plans, nodes, microbatches, rec);
    }
    out->iteration_ms = best;
    return LOOM_OK;
}
