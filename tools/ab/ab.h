/*
 * ab.h - A/B comparison of two planner manifests over the same problems
 * (internal, not installed): the suite file (ab_suite.c), paired
 * statistics and verdicts (ab_stats.c) and the Markdown, JSON and JUnit
 * reports (ab_report.c) and the HTML report (ab_html.c). `loom ab` (tools/loom/cmd_ab.c) drives them;
 * docs/ab-testing.md describes the rules for users.
 *
 * Ownership: loom_ab_suite_load returns a suite freed with
 * loom_ab_suite_free (it owns every string). A loom_ab_report borrows its
 * strings; each loom_ab_case_result owns its two run outputs (release with
 * loom_ab_case_result_clear). Writers never close the stream.
 * Units: milliseconds, bytes; ratios are B / A of makespan.
 */
#ifndef LOOM_AB_H
#define LOOM_AB_H

#include <stdio.h>
#include <loom/sys/isolate.h>
#include <loom/sys/util.h>

#define LOOM_AB_DEFAULT_THRESHOLD 0.01
/* Searching rankers stop after this many evaluations in `loom ab` unless
 * --evaluations, --wall-clock or the manifest says otherwise. */
#define LOOM_AB_DEFAULT_EVALUATIONS 500
#define LOOM_AB_RESAMPLES 2000
/* Base of every case's bootstrap seed (mixed with the case name). */
#define LOOM_AB_SEED 0x5EED0AB5ull
#define LOOM_AB_MAX_CASES 1000

/* ---- suite file (ab_suite.c) ---------------------------------------------- */

/* One case: a problem as `loom plan` takes it. Strings are preset names or
 * paths already resolved against the suite file's folder; NULL: absent. */
typedef struct loom_ab_case {
    char *name;        /* unique, [A-Za-z0-9._-], at most 63 characters */
    char *model;
    char *cluster;
    char *parallel;
    char *generate;    /* workload family */
    char *workload;    /* JSON Lines file */
    char *stage_times; /* stage-times problem file */
    int32_t iterations; /* 0: the default of `loom plan` */
    int has_seed;
    uint64_t seed;
} loom_ab_case;

typedef struct loom_ab_suite {
    char *path;
    char *description;  /* "" when absent */
    loom_ab_case *cases;
    int32_t n_cases;
} loom_ab_suite;

/* Reads and validates a suite file: {"description": "...", "cases": [{
 * "name", "model", "cluster", "parallel", "generate" | "workload" |
 * "stage_times", "iterations", "seed"}]}. Errors name the file and the
 * JSON path (`cases[1].workload`), what was expected and what was found;
 * files a case names must be readable. *out is owned by the caller. */
int loom_ab_suite_load(const char *path, loom_ab_suite **out, loom_error *err);
void loom_ab_suite_free(loom_ab_suite *suite);

/* Session arguments for one case: the case's problem over `base` (which
 * carries --use, --param, --plugin-path, --memory-cap and defaults for
 * iterations and seed); strings borrowed from both. */
void loom_ab_case_args(const loom_ab_case *c, const loom_session_args *base,
                       const char *manifest, loom_session_args *out);

/* ---- statistics (ab_stats.c) ---------------------------------------------- */

enum loom_ab_verdict {
    LOOM_AB_SAME = 0,   /* no significant difference */
    LOOM_AB_BETTER = 1, /* B is faster beyond the threshold */
    LOOM_AB_WORSE = 2,  /* B is slower beyond the threshold: a regression */
    LOOM_AB_ERROR = 3   /* a side failed or nothing could be paired */
};

/* Paired comparison of makespans. With r_i = b_i / a_i over n pairs:
 * mean and median of r; a 95 % confidence interval of the mean by paired
 * bootstrap (`resamples` resamples of n pairs drawn with replacement by
 * splitmix64 from `seed`; the 2.5 % and 97.5 % quantiles of the resample
 * means, linearly interpolated between order statistics); wins (r_i <
 * 1 - t), losses (r_i > 1 + t), ties (the rest); and the verdict:
 *   worse  when mean > 1 + t and ci_low > 1,
 *   better when mean < 1 - t and ci_high < 1,
 *   same   otherwise. */
typedef struct loom_ab_stats {
    int32_t n_pairs;
    double mean_ratio, median_ratio;
    double ci_low, ci_high;
    int32_t wins, losses, ties;
    int verdict;             /* enum loom_ab_verdict */
    const char *reason;      /* what decided a better/worse verdict: "time"
                              * or "infeasible" (static; NULL else) */
    int memory_verdict;      /* peak memory B vs A (loom_ab_judge_memory):
                              * SAME, BETTER or WORSE; -1 when not asked */
} loom_ab_stats;

/* Computes the statistics above. LOOM_EINVAL for n < 1, a threshold
 * outside [0, 1), resamples < 1 or a makespan that is not positive and
 * finite; LOOM_ENOMEM. */
int loom_ab_compare(const double *a_ms, const double *b_ms, int32_t n,
                    double threshold, uint64_t seed, int32_t resamples,
                    loom_ab_stats *out, loom_error *err);

/* Quantile p in [0, 1] of n >= 1 sorted values: linear interpolation at
 * position (n - 1) * p. */
double loom_ab_quantile(const double *sorted, int32_t n, double p);

/* The bootstrap seed of a case: LOOM_AB_SEED mixed with FNV-1a of its
 * name, so a case's interval does not depend on the other cases. */
uint64_t loom_ab_case_seed(const char *case_name);

/* "same", "better", "worse", "error". */
const char *loom_ab_verdict_name(int verdict);

/* ---- one comparison ----------------------------------------------------------- */

/* Means over the paired iterations of one side. */
typedef struct loom_ab_side_summary {
    double mean_makespan_ms;
    double mean_bubble_ratio;
    double mean_plan_time_ms;
    int64_t max_peak_bytes;
} loom_ab_side_summary;

typedef struct loom_ab_case_result {
    const char *name;        /* borrowed */
    const char *problem;     /* borrowed one-line description */
    loom_run_output a, b;    /* owned */
    int32_t n_pairs;         /* iterations both sides planned */
    loom_ab_side_summary sum_a, sum_b;
    loom_ab_stats stats;     /* verdict ERROR when a side failed */
} loom_ab_case_result;

typedef struct loom_ab_report {
    const char *manifest_a, *manifest_b; /* paths as given */
    const char *name_a, *name_b;         /* manifest names ("" unknown) */
    const char *suite;                   /* suite path or NULL */
    double threshold;
    double memory_threshold; /* see loom_ab_judge_memory; < 0: no memory
                              * verdict */
    int32_t resamples;
    int timings;      /* 1: the JSON report carries plan times too */
    loom_ab_case_result *cases;
    int32_t n_cases;
} loom_ab_report;

/* Memory in the verdicts of an evaluated case (after loom_ab_evaluate).
 * Time decides the verdict; memory counts only against the cap: a side is
 * infeasible when one of its paired iterations exceeds the memory cap on
 * some rank. An infeasible B is worse whatever its time; an infeasible A
 * loses to a feasible B. A plan that fits is never worse for using more
 * memory. With memory_threshold m >= 0 the case also gets a separate
 * memory verdict on the peaks (max over ranks and paired iterations):
 * worse when B's exceeds A's by more than the fraction m, better when it
 * is below A's by more than m, same otherwise (memory_verdict -1 when
 * m < 0). Sets stats.reason. Cases with verdict ERROR are left alone. */
void loom_ab_judge_memory(loom_ab_case_result *c, double memory_threshold);

/* The rule a report applied, in one sentence per part: the time rule with
 * threshold and resamples, the memory cap, and the memory verdict when
 * r->memory_threshold >= 0. Every report states it. */
void loom_ab_rule_text(const loom_ab_report *r, char *buf, size_t size);

/* The verdicts of a case as a reader sees them: "better", "worse
 * (infeasible: B over the memory cap)", "better; memory worse (+25.3 %)". */
void loom_ab_verdict_text(const loom_ab_case_result *c, char *buf, size_t size);

/* 1 when one of the first n results of o exceeds the memory cap on some
 * rank (the side is infeasible: its makespan is no valid result). */
int loom_ab_side_infeasible(const loom_run_output *o, int32_t n);

/* Pairs the iterations both sides planned and fills n_pairs, the side
 * summaries and the statistics (verdict ERROR when a side failed or
 * nothing was paired). */
int loom_ab_evaluate(loom_ab_case_result *c, double threshold,
                     int32_t resamples, loom_error *err);

void loom_ab_case_result_clear(loom_ab_case_result *c);

/* Exit code of `loom ab`: 2 when a case failed on bad input (LOOM_EINVAL,
 * ENOTFOUND, EIO), else 3 when a plugin failed (a crash, timeout, memory
 * limit, garbage, early exit, LOOM_EPLUGIN or EABI), else 1 when a case
 * is worse, its memory verdict (when asked for) is worse, or it could not
 * be planned, else 0. */
int loom_ab_exit_code(const loom_ab_report *r);

/* The status of the failure of side a or b of a case (LOOM_OK none). */
int loom_ab_case_status(const loom_ab_case_result *c);

/* ---- reports (ab_report.c) -------------------------------------------------- */

/* Markdown for a CI job summary: a heading, the rule, one table row per
 * case (iterations, mean makespan A and B, mean and median B/A, 95 % CI,
 * wins/losses/ties, bubble, peak memory, plan time, verdict), the
 * failures and a one-line result. */
int loom_ab_write_markdown(const loom_ab_report *r, FILE *out, loom_error *err);

/* Writes `s` as a JSON string literal (escapes ", \, control bytes). */
void loom_ab_json_string(FILE *out, const char *s);

/* Writes the shortest of %.15g / %.17g that reads back exactly as v;
 * null when v is not finite. */
void loom_ab_json_number(FILE *out, double v);

/* JSON: inputs, rule, per case statistics, per-side summaries, every
 * paired iteration and the failure; no timings unless r->timings, so the
 * same inputs give the same bytes. */
int loom_ab_write_json(const loom_ab_report *r, FILE *out, loom_error *err);

/* JUnit XML: one testcase per case; a regression is a <failure> whose
 * message carries the numbers, a failed run an <error>. */
int loom_ab_write_junit(const loom_ab_report *r, FILE *out, loom_error *err);

/* HTML (ab_html.c): one self-contained page with the result, one row per
 * case (A vs B makespan, mean B/A and its interval, the per-iteration
 * ratios as a strip chart, bubble, peak memory, MFU, plan time, verdict),
 * the failures and every paired iteration. */
int loom_ab_write_html(const loom_ab_report *r, FILE *out, loom_error *err);

#endif
