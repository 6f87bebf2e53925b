/*
 * entrain_calibrate.c - Entrain's Bernoulli-trial batch sizer (§4.4.2,
 * Algorithm 2 with the doubling after the stability test, as the digest
 * corrects it) and the proportional allocation it tests.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <loom/algorithms/entrain.h>
#include "alg_util.h"

int32_t loom_entrain_trials(double alpha, double p_error)
{
    if (!(alpha > 0 && alpha < 1) || !(p_error > 0 && p_error < 1))
        return -1;
    double k = ceil(log(alpha) / log1p(-p_error));
    if (k > LOOM_ENTRAIN_MAX_TRIALS)
        return -1;
    return k < 1 ? 1 : (int32_t)k;
}

int loom_entrain_allocate(const double *share, int32_t n, int32_t gpus,
                          int32_t unit, int32_t *out, loom_error *err)
{
    if (!share || !out || n < 1 || n > 64 || unit < 1 || gpus < 1)
        return loom_error_format(err, LOOM_EINVAL,
                              "allocate: expected 1 to 64 components, gpus "
                              ">= 1 and unit >= 1, found %d, %d and %d", n,
                              gpus, unit);
    if (gpus % unit != 0)
        return loom_error_format(err, LOOM_EINVAL,
                              "allocate: %d GPUs are not a multiple of the "
                              "allocation unit %d (TP x CP)", gpus, unit);
    int32_t units = gpus / unit;
    if (units < n)
        return loom_error_format(err, LOOM_EINVAL,
                              "allocate: %d units of %d GPUs cannot give each "
                              "of %d components one", units, unit, n);
    double total = 0;
    for (int32_t i = 0; i < n; i++) {
        if (!(share[i] >= 0) || !isfinite(share[i]))
            return loom_error_format(err, LOOM_EINVAL,
                                  "allocate: share[%d] must be a finite "
                                  "number >= 0", i);
        total += share[i];
    }
    double rem[64];
    int32_t left = units;
    for (int32_t i = 0; i < n; i++) {
        double q = total > 0 ? share[i] / total * units : (double)units / n;
        out[i] = (int32_t)floor(q);
        rem[i] = q - out[i];
        left -= out[i];
    }
    while (left > 0) {
        int32_t best = 0;
        for (int32_t i = 1; i < n; i++)
            if (rem[i] > rem[best])
                best = i;
        out[best]++;
        rem[best] = -1;
        left--;
    }
    for (int32_t i = 0; i < n; i++) {
        if (out[i] > 0)
            continue;
        int32_t big = 0;
        for (int32_t j = 1; j < n; j++)
            if (out[j] > out[big])
                big = j;
        out[big]--;
        out[i]++;
    }
    for (int32_t i = 0; i < n; i++)
        out[i] *= unit;
    return LOOM_OK;
}

int loom_entrain_share(const loom_entrain_work *pool, const int32_t *idx,
                       int32_t n, int estimator, double *enc_share,
                       loom_error *err)
{
    double enc = 0, all = 0, ratios = 0;
    int32_t counted = 0;
    for (int32_t i = 0; i < n; i++) {
        const loom_entrain_work *w = &pool[idx ? idx[i] : i];
        double t = w->enc_ms + w->llm_ms;
        enc += w->enc_ms;
        all += t;
        if (t > 0) {
            ratios += w->enc_ms / t;
            counted++;
        }
    }
    if (all <= 0 || counted == 0)
        return loom_error_format(err, LOOM_EINVAL,
                              "calibrate: a batch of %d samples has no "
                              "encoder or backbone work", n);
    *enc_share = estimator == LOOM_ENTRAIN_MEAN_OF_RATIOS ? ratios / counted
                                                          : enc / all;
    return LOOM_OK;
}

/* Draws n samples uniformly with replacement into idx. */
static void draw(int32_t *idx, int32_t n, int32_t n_pool, uint64_t *rng)
{
    for (int32_t i = 0; i < n; i++)
        idx[i] = (int32_t)(loom_alg_splitmix64(rng) % (uint64_t)n_pool);
}

/* Allocation of one fresh batch of n samples. */
static int batch_alloc(const loom_entrain_work *pool, int32_t n_pool,
                       const loom_entrain_calib_options *o, int32_t *idx,
                       int32_t n, uint64_t *rng, int32_t alloc[2],
                       double *share_out, loom_error *err)
{
    draw(idx, n, n_pool, rng);
    double s = 0;
    int rc = loom_entrain_share(pool, idx, n, o->estimator, &s, err);
    if (rc != LOOM_OK)
        return rc;
    double shares[2] = {s, 1 - s};
    if (share_out)
        *share_out = s;
    return loom_entrain_allocate(shares, 2, o->gpus, o->unit, alloc, err);
}

/* Remembers a distinct allocation seen in a round. */
static void note(loom_entrain_round *r, const int32_t a[2])
{
    for (int32_t i = 0; i < r->n_seen; i++)
        if (r->seen[i][0] == a[0] && r->seen[i][1] == a[1])
            return;
    if (r->n_seen < LOOM_ENTRAIN_MAX_SEEN) {
        r->seen[r->n_seen][0] = a[0];
        r->seen[r->n_seen][1] = a[1];
        r->n_seen++;
    }
}

int loom_entrain_calibrate(const loom_entrain_work *pool, int32_t n_pool,
                           const loom_entrain_calib_options *opt,
                           loom_entrain_calib_result *out, loom_error *err)
{
    memset(out, 0, sizeof *out);
    if (!pool || n_pool < 1 || !opt)
        return loom_error_format(err, LOOM_EINVAL,
                              "calibrate: expected a pool of >= 1 sample, "
                              "found %d", n_pool);
    int32_t k = loom_entrain_trials(opt->alpha, opt->p_error);
    if (k < 0)
        return loom_error_format(err, LOOM_EINVAL,
                              "calibrate: alpha and p_error must lie in "
                              "(0, 1) and need at most %d trials, found %g "
                              "and %g", LOOM_ENTRAIN_MAX_TRIALS, opt->alpha,
                              opt->p_error);
    if (opt->n0 < 1 || opt->cap < opt->n0 || opt->cap > LOOM_ENTRAIN_MAX_BATCH)
        return loom_error_format(err, LOOM_EINVAL,
                              "calibrate: expected 1 <= n0 <= cap <= %d, "
                              "found n0 %d and cap %d", LOOM_ENTRAIN_MAX_BATCH,
                              opt->n0, opt->cap);
    int32_t probe[2];
    double one = 1;
    int rc = loom_entrain_allocate(&one, 1, opt->gpus, opt->unit, probe, err);
    if (rc == LOOM_OK && opt->gpus / opt->unit < 2)
        rc = loom_error_format(err, LOOM_EINVAL,
                            "calibrate: %d GPUs in units of %d cannot be "
                            "split between the encoder and the backbone",
                            opt->gpus, opt->unit);
    if (rc != LOOM_OK)
        return rc;
    out->trials = k;
    int32_t *idx = malloc((size_t)opt->cap * sizeof *idx);
    if (!idx)
        return loom_error_format(err, LOOM_ENOMEM, "calibrate: out of memory");
    uint64_t rng = opt->seed;
    for (int64_t n = opt->n0; n <= opt->cap && out->n_rounds < LOOM_ENTRAIN_MAX_ROUNDS;
         n *= 2) {
        loom_entrain_round *r = &out->rounds[out->n_rounds++];
        r->batch = (int32_t)n;
        int32_t ref[2], test[2];
        double share = 0;
        rc = batch_alloc(pool, n_pool, opt, idx, (int32_t)n, &rng, ref, &share,
                         err);
        if (rc != LOOM_OK)
            break;
        note(r, ref);
        r->stable = 1;
        for (int32_t t = 0; t < k; t++) {
            rc = batch_alloc(pool, n_pool, opt, idx, (int32_t)n, &rng, test,
                             NULL, err);
            if (rc != LOOM_OK)
                break;
            r->trials_run++;
            note(r, test);
            /* a Bernoulli failure; the remaining trials still run so the
             * round reports every split it saw */
            if (test[0] != ref[0])
                r->stable = 0;
        }
        if (rc != LOOM_OK)
            break;
        if (r->stable) {
            out->b_min = (int32_t)n;
            out->alloc[0] = ref[0];
            out->alloc[1] = ref[1];
            out->enc_share = share;
            break;
        }
    }
    free(idx);
    if (rc != LOOM_OK)
        return rc;
    if (!out->b_min) {
        const loom_entrain_round *last = &out->rounds[out->n_rounds - 1];
        return loom_error_format(err, LOOM_EINFEASIBLE,
                              "calibrate: no profiling batch up to %d samples "
                              "gives a stable GPU split (at %d samples the "
                              "trials still saw %d different splits): the "
                              "global batch must grow, or the workload mean "
                              "sits on an allocation breakpoint",
                              opt->cap, last->batch, last->n_seen);
    }
    return LOOM_OK;
}
