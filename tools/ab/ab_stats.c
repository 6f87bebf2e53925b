/* ab_stats.c - paired statistics of an A/B comparison: ratios, paired
 * bootstrap confidence interval, wins/losses/ties, verdicts, exit code. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ab.h"

/* qsort order of doubles. */
static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

double loom_ab_quantile(const double *sorted, int32_t n, double p)
{
    if (n < 1)
        return NAN;
    if (p <= 0)
        return sorted[0];
    if (p >= 1)
        return sorted[n - 1];
    double h = (double)(n - 1) * p;
    int32_t lo = (int32_t)floor(h);
    if (lo >= n - 1)
        return sorted[n - 1];
    return sorted[lo] + (h - (double)lo) * (sorted[lo + 1] - sorted[lo]);
}

uint64_t loom_ab_case_seed(const char *case_name)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)(case_name ? case_name : ""); *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ull;
    }
    return h ^ LOOM_AB_SEED;
}

const char *loom_ab_verdict_name(int verdict)
{
    switch (verdict) {
    case LOOM_AB_SAME: return "same";
    case LOOM_AB_BETTER: return "better";
    case LOOM_AB_WORSE: return "worse";
    default: return "error";
    }
}

/* Uniform index in [0, n) from a 64-bit random value. */
static int32_t pick(uint64_t x, int32_t n)
{
    return (int32_t)(((x >> 32) * (uint64_t)n) >> 32);
}

int loom_ab_compare(const double *a_ms, const double *b_ms, int32_t n, double threshold,
                    uint64_t seed, int32_t resamples, loom_ab_stats *out, loom_error *err)
{
    memset(out, 0, sizeof *out);
    out->verdict = LOOM_AB_ERROR;
    out->memory_verdict = -1;
    if (n < 1)
        return loom_set_error(err, LOOM_EINVAL, "ab: expected at least one paired iteration, found 0");
    if (!(threshold >= 0 && threshold < 1))
        return loom_set_error(err, LOOM_EINVAL, "ab: threshold: expected a number in [0, 1), found %g",
                              threshold);
    if (resamples < 1)
        return loom_set_error(err, LOOM_EINVAL, "ab: expected at least one resample, found %d",
                              resamples);
    double *r = malloc((size_t)n * sizeof *r);
    double *sorted = malloc((size_t)n * sizeof *sorted);
    double *means = malloc((size_t)resamples * sizeof *means);
    if (!r || !sorted || !means) {
        free(r);
        free(sorted);
        free(means);
        return loom_set_error(err, LOOM_ENOMEM, "ab: out of memory");
    }
    double sum = 0;
    for (int32_t i = 0; i < n; i++) {
        if (!(a_ms[i] > 0 && isfinite(a_ms[i]) && b_ms[i] > 0 && isfinite(b_ms[i]))) {
            free(r);
            free(sorted);
            free(means);
            return loom_set_error(err, LOOM_EINVAL,
                                  "ab: pair %d: expected positive finite makespans, found A %g ms, "
                                  "B %g ms",
                                  i, a_ms[i], b_ms[i]);
        }
        r[i] = b_ms[i] / a_ms[i];
        sum += r[i];
        if (r[i] < 1 - threshold)
            out->wins++;
        else if (r[i] > 1 + threshold)
            out->losses++;
        else
            out->ties++;
    }
    out->n_pairs = n;
    out->mean_ratio = sum / n;
    memcpy(sorted, r, (size_t)n * sizeof *r);
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_double);
    out->median_ratio = loom_ab_quantile(sorted, n, 0.5);

    uint64_t state = seed;
    for (int32_t k = 0; k < resamples; k++) {
        double s = 0;
        for (int32_t i = 0; i < n; i++)
            s += r[pick(loom_splitmix64(&state), n)];
        means[k] = s / n;
    }
    qsort(means, (size_t)resamples, sizeof *means, cmp_double);
    out->ci_low = loom_ab_quantile(means, resamples, 0.025);
    out->ci_high = loom_ab_quantile(means, resamples, 0.975);
    if (out->mean_ratio > 1 + threshold && out->ci_low > 1)
        out->verdict = LOOM_AB_WORSE;
    else if (out->mean_ratio < 1 - threshold && out->ci_high < 1)
        out->verdict = LOOM_AB_BETTER;
    else
        out->verdict = LOOM_AB_SAME;
    free(r);
    free(sorted);
    free(means);
    return LOOM_OK;
}

/* Number of leading iterations both sides planned (results are in
 * iteration order from 0). */
static int32_t count_pairs(const loom_run_output *a, const loom_run_output *b)
{
    int32_t n = a->n_results < b->n_results ? a->n_results : b->n_results;
    for (int32_t i = 0; i < n; i++)
        if (a->results[i].iteration != b->results[i].iteration)
            return i;
    return n;
}

/* Means over the first n results of one side. */
static void summarize(const loom_run_output *o, int32_t n, loom_ab_side_summary *s)
{
    memset(s, 0, sizeof *s);
    for (int32_t i = 0; i < n; i++) {
        const loom_iter_result *x = &o->results[i];
        s->mean_makespan_ms += x->makespan_ms;
        s->mean_bubble_ratio += x->bubble_ratio;
        s->mean_plan_time_ms += x->plan_time_ms;
        if (x->peak_bytes > s->max_peak_bytes)
            s->max_peak_bytes = x->peak_bytes;
    }
    if (n > 0) {
        s->mean_makespan_ms /= n;
        s->mean_bubble_ratio /= n;
        s->mean_plan_time_ms /= n;
    }
}

int loom_ab_evaluate(loom_ab_case_result *c, double threshold, int32_t resamples, loom_error *err)
{
    memset(&c->stats, 0, sizeof c->stats);
    c->stats.verdict = LOOM_AB_ERROR;
    c->stats.memory_verdict = -1;
    c->n_pairs = count_pairs(&c->a, &c->b);
    summarize(&c->a, c->n_pairs, &c->sum_a);
    summarize(&c->b, c->n_pairs, &c->sum_b);
    if (c->n_pairs < 1)
        return LOOM_OK;
    double *a = malloc((size_t)c->n_pairs * sizeof *a);
    double *b = malloc((size_t)c->n_pairs * sizeof *b);
    if (!a || !b) {
        free(a);
        free(b);
        return loom_set_error(err, LOOM_ENOMEM, "ab: out of memory");
    }
    for (int32_t i = 0; i < c->n_pairs; i++) {
        a[i] = c->a.results[i].makespan_ms;
        b[i] = c->b.results[i].makespan_ms;
    }
    int rc = loom_ab_compare(a, b, c->n_pairs, threshold, loom_ab_case_seed(c->name), resamples,
                             &c->stats, err);
    free(a);
    free(b);
    if (rc == LOOM_OK && (c->a.failure.kind != LOOM_FAIL_NONE ||
                          c->b.failure.kind != LOOM_FAIL_NONE))
        c->stats.verdict = LOOM_AB_ERROR;
    return rc;
}

int loom_ab_side_infeasible(const loom_run_output *o, int32_t n)
{
    for (int32_t i = 0; i < n; i++)
        if (o->results[i].cap_violations > 0)
            return 1;
    return 0;
}

void loom_ab_judge_memory(loom_ab_case_result *c, double memory_threshold)
{
    loom_ab_stats *s = &c->stats;
    s->memory_verdict = -1;
    if (s->verdict == LOOM_AB_ERROR)
        return;
    if (s->verdict != LOOM_AB_SAME)
        s->reason = "time";
    int ia = loom_ab_side_infeasible(&c->a, c->n_pairs);
    int ib = loom_ab_side_infeasible(&c->b, c->n_pairs);
    if (ib) {
        s->verdict = LOOM_AB_WORSE;
        s->reason = "infeasible";
    } else if (ia) {
        s->verdict = LOOM_AB_BETTER;
        s->reason = "infeasible";
    }
    if (memory_threshold < 0)
        return;
    double pa = (double)c->sum_a.max_peak_bytes, pb = (double)c->sum_b.max_peak_bytes;
    s->memory_verdict = pb > pa * (1 + memory_threshold)   ? LOOM_AB_WORSE
                        : pb < pa * (1 - memory_threshold) ? LOOM_AB_BETTER
                                                           : LOOM_AB_SAME;
}

void loom_ab_rule_text(const loom_ab_report *r, char *buf, size_t size)
{
    int n = snprintf(buf, size,
                     "Time decides: ratio = B/A makespan per paired iteration; worse when the "
                     "mean ratio > %.4f (1 + threshold) and the 95 %% CI of the mean (paired "
                     "bootstrap, %d resamples) lies above 1; better when the mean < %.4f and the "
                     "CI lies below 1; same otherwise; error when a side failed. Memory counts "
                     "against the cap only: a plan over the memory cap on some rank loses (B "
                     "worse, or A loses to a fitting B: reason infeasible); a plan that fits is "
                     "never worse for using more memory.",
                     1 + r->threshold, r->resamples, 1 - r->threshold);
    if (n < 0 || (size_t)n >= size)
        return;
    if (r->memory_threshold >= 0)
        snprintf(buf + n, size - (size_t)n,
                 " Separate memory verdict (--memory-threshold %.4g): worse when B's peak "
                 "memory exceeds A's by more than %.1f %%, better when it is more than %.1f %% "
                 "below, same otherwise; a worse memory verdict also fails the run (exit 1).",
                 r->memory_threshold, 100 * r->memory_threshold, 100 * r->memory_threshold);
    else
        snprintf(buf + n, size - (size_t)n,
                 " No memory verdict (--memory-threshold not given): peaks are reported only.");
}

void loom_ab_verdict_text(const loom_ab_case_result *c, char *buf, size_t size)
{
    const loom_ab_stats *s = &c->stats;
    const char *why = "";
    if (s->reason && !strcmp(s->reason, "infeasible"))
        why = s->verdict == LOOM_AB_WORSE ? " (infeasible: B over the memory cap)"
                                          : " (infeasible: A over the memory cap)";
    int n = snprintf(buf, size, "%s%s", loom_ab_verdict_name(s->verdict), why);
    if (n < 0 || (size_t)n >= size || s->memory_verdict < 0 || s->verdict == LOOM_AB_ERROR)
        return;
    double pa = (double)c->sum_a.max_peak_bytes, pb = (double)c->sum_b.max_peak_bytes;
    if (pa > 0)
        snprintf(buf + n, size - (size_t)n, "; memory %s (%+.1f %%)",
                 loom_ab_verdict_name(s->memory_verdict), 100 * (pb / pa - 1));
    else
        snprintf(buf + n, size - (size_t)n, "; memory %s",
                 loom_ab_verdict_name(s->memory_verdict));
}

void loom_ab_case_result_clear(loom_ab_case_result *c)
{
    if (!c)
        return;
    loom_run_output_clear(&c->a);
    loom_run_output_clear(&c->b);
}

int loom_ab_case_status(const loom_ab_case_result *c)
{
    int rc = loom_failure_status(&c->a.failure);
    return rc != LOOM_OK ? rc : loom_failure_status(&c->b.failure);
}

/* 2 input, 3 plugin, 1 planning failure for one failed side (0 none). */
static int failure_exit(const loom_failure *f)
{
    switch (loom_failure_status(f)) {
    case LOOM_OK: return 0;
    case LOOM_EINVAL:
    case LOOM_ENOTFOUND:
    case LOOM_EIO: return 2;
    case LOOM_EPLUGIN:
    case LOOM_EABI: return 3;
    default: return 1;
    }
}

int loom_ab_exit_code(const loom_ab_report *r)
{
    int input = 0, plugin = 0, worse = 0;
    for (int32_t i = 0; i < r->n_cases; i++) {
        const loom_ab_case_result *c = &r->cases[i];
        int e[2] = {failure_exit(&c->a.failure), failure_exit(&c->b.failure)};
        for (int k = 0; k < 2; k++) {
            input |= e[k] == 2;
            plugin |= e[k] == 3;
            worse |= e[k] == 1;
        }
        worse |= c->stats.verdict == LOOM_AB_WORSE;
        worse |= c->stats.verdict != LOOM_AB_ERROR && c->stats.memory_verdict == LOOM_AB_WORSE;
        if (c->stats.verdict == LOOM_AB_ERROR && !e[0] && !e[1])
            worse = 1; /* nothing paired although both sides ran */
    }
    return input ? 2 : plugin ? 3 : worse ? 1 : 0;
}
