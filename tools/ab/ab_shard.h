/*
 * ab_shard.h - sharded `loom ab` runs (internal, not installed): which
 * cases shard K of N runs, the shard report (the JSON report of the
 * shard's cases plus what a merge needs) and the merge of shard reports
 * back into the report of the whole suite (ab_shard.c). `loom ab --shard`
 * (tools/loom/cmd_ab.c) writes shard reports, `loom ab merge`
 * (tools/loom/cmd_ab_merge.c) reads them; docs/ab-testing.md ("Sharding")
 * describes both for users.
 *
 * A shard report is a `loom ab` JSON report (the same members, written by
 * loom_ab_write_json over the shard's cases) with two more members at the
 * end: "shard" (K, N, the suite's case count, the memory threshold, the
 * timings flag, the planning options and FNV-1a digests of the manifests
 * and the suite file) and "runs" (per case its index in the suite and, per
 * side, every planned iteration with every figure, plan times included,
 * and the failure with every field). From those the merge rebuilds each
 * loom_ab_case_result exactly, so the reports it writes with the writers
 * of ab_report.c are the bytes `loom ab` writes over the whole suite.
 */
#ifndef LOOM_AB_SHARD_H
#define LOOM_AB_SHARD_H

#include <stdio.h>
#include "ab.h"

/* Longest planning-options string (loom_ab_shard.options). */
#define LOOM_AB_SHARD_OPTIONS_BYTES 4096

/* Shard k of n of a suite, and what must agree between the shards. */
typedef struct loom_ab_shard {
    int32_t k, n;             /* 1 <= k <= n; n == 0: not sharded */
    int32_t suite_cases;      /* cases in the whole suite */
    char options[LOOM_AB_SHARD_OPTIONS_BYTES]; /* planning options */
    char digest_a[24], digest_b[24], digest_suite[24]; /* "fnv1a:<16 hex>"
                                                        * ("" no suite) */
} loom_ab_shard;

/* Parses "K/N" (decimal, 1 <= K <= N <= LOOM_AB_MAX_CASES). On failure
 * returns LOOM_EINVAL with "--shard: expected K/N with 1 <= K <= N ...,
 * found '...'" in err. */
int loom_ab_shard_parse(const char *text, int32_t *k, int32_t *n, loom_error *err);

/* 1 when shard k of n runs the case at 0-based suite index i:
 * i % n == k - 1. */
int loom_ab_shard_selects(int32_t k, int32_t n, int32_t index);

/* The suite index of the j-th case shard k of n runs: k - 1 + j * n. */
int32_t loom_ab_shard_index(int32_t k, int32_t n, int32_t j);

/* Fills s->options (the options that change what is planned: problem
 * options, --use, --param, --plugin-path, --memory-cap, --iterations,
 * --seed, the evaluation budget, --timeout-ms and --memory-limit-mb, in a
 * fixed order) and the digests of the two manifests and the suite file
 * (NULL: none). LOOM_EIO when a file cannot be read. */
int loom_ab_shard_describe(loom_ab_shard *s, const loom_session_args *base,
                           const loom_isolate_opts *iso, const char *manifest_a,
                           const char *manifest_b, const char *suite, loom_error *err);

/* Writes the shard report of r (whose cases are shard s's, in suite
 * order): loom_ab_write_json's report plus "shard" and "runs". */
int loom_ab_write_shard_json(const loom_ab_report *r, const loom_ab_shard *s, FILE *out,
                             loom_error *err);

/* loom_ab_write_shard_json into `path` through loom_write_atomic. */
int loom_ab_write_shard_file(const char *path, const loom_ab_report *r, const loom_ab_shard *s,
                             loom_error *err);

/* ---- merge ---------------------------------------------------------------- */

/* The report of a whole suite rebuilt from its shard reports: `report`
 * borrows its strings from the parsed files, which live as long as the
 * merge. Free with loom_ab_merge_free. */
typedef struct loom_ab_merge loom_ab_merge;

/* Reads the shard reports `paths`, checks them and rebuilds the cases in
 * suite order, evaluated as `loom ab` evaluates them (loom_ab_evaluate
 * with the report's threshold and resamples, then loom_ab_judge_memory
 * with its memory threshold). Checks: every file is a shard report; the
 * manifests (paths, names, digests), suite (path, digest, case count),
 * threshold, memory threshold, resamples, timings flag, options and N
 * agree with the first file; each shard 1..N appears exactly once and
 * holds exactly its cases (index % N == K - 1), with names unique over
 * the suite. Errors (LOOM_EINVAL, LOOM_EIO for unreadable files) name the
 * file and the JSON path. */
int loom_ab_merge_load(const char *const *paths, int n_paths, loom_ab_merge **out,
                       loom_error *err);

/* The merged report (valid until loom_ab_merge_free). */
const loom_ab_report *loom_ab_merge_report(const loom_ab_merge *m);

/* Frees the merge and everything it owns (NULL allowed). */
void loom_ab_merge_free(loom_ab_merge *m);

#endif
