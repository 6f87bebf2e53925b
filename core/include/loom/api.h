/*
 * loom/api.h - the stable C API of libloom for embedding Loom in a
 * training loop (C, or Python through ctypes): open a planner once, plan
 * each upcoming iteration from its sample metadata, read the result.
 *
 * Ownership: loom_planner_open returns a planner the caller closes with
 * loom_planner_close (a result keeps what it needs of its planner alive,
 * so results may outlive it); every loom_result from loom_planner_plan* is freed
 * with loom_result_free; strings returned as `char *` are freed with
 * loom_free. Borrowed `const char *` results live as long as their owner.
 * A planner is not thread-safe: use one per thread.
 *
 * Layer: run (core/run).
 */
#ifndef LOOM_API_H
#define LOOM_API_H

#include <loom/common.h>
#include <loom/problem.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct loom_planner loom_planner;
typedef struct loom_result loom_result;

/* What to plan for. NULL strings take the defaults of `loom plan`. */
typedef struct loom_planner_options {
    uint32_t struct_size;     /* sizeof(loom_planner_options) */
    const char *manifest;     /* planner manifest path (NULL: megatron-1f1b) */
    const char *model;        /* preset name or model.json (NULL: vlm-s) */
    const char *cluster;      /* preset name or cluster.json (NULL: h800) */
    const char *parallel;     /* e.g. "tp=4,pp=4,mb=16" (NULL: the model's) */
    double memory_cap_bytes;  /* 0: the manifest's, else the GPU's HBM */
    uint64_t seed;            /* used when has_seed */
    int32_t has_seed;
    int32_t reserved;
} loom_planner_options;

/* Library version string, e.g. "0.4.0". */
LOOM_EXPORT const char *loom_version(void);

/* Opens a planner: loads the manifest's plugins and the problem. */
LOOM_EXPORT int loom_planner_open(const loom_planner_options *options,
                                  loom_planner **out, loom_error *err);
LOOM_EXPORT void loom_planner_close(loom_planner *planner);

/* Plans one iteration from `n` samples (sample.microbatch -1 lets the
 * planner split them evenly into the configured microbatches). The samples
 * pass the same checks as a workload file's (docs/formats.md): 1 to 10^6
 * samples; text tokens in [0, 2^32], images in [0, 2^20], video and audio
 * seconds in [0, 1e6] (not NaN), microbatch -1 or below the configured
 * count, every sample non-empty, and either all samples name their
 * microbatch or none does; otherwise LOOM_EINVAL naming samples[i] and the
 * field. A plan whose numbers are not all finite is LOOM_EINVAL too, so a
 * result's numbers are always finite. NULL planner or `out`: LOOM_EINVAL. */
LOOM_EXPORT int loom_planner_plan(loom_planner *planner,
                                  const loom_sample *samples, int32_t n,
                                  loom_result **out, loom_error *err);

/* The same from one workload JSON Lines record:
 * {"samples": [{"text_tokens": 812, "images": 3}, ...]}. */
LOOM_EXPORT int loom_planner_plan_json(loom_planner *planner,
                                       const char *iteration_json,
                                       loom_result **out, loom_error *err);

/* Result getters. Every number is finite. A NULL result gives -1 from the
 * double getters and loom_result_peak_bytes, 0 from loom_result_ranks. */
LOOM_EXPORT double loom_result_makespan_ms(const loom_result *r);
LOOM_EXPORT double loom_result_bubble_ratio(const loom_result *r);
LOOM_EXPORT double loom_result_mfu(const loom_result *r); /* < 0: unknown */
LOOM_EXPORT double loom_result_plan_time_ms(const loom_result *r);
LOOM_EXPORT int32_t loom_result_ranks(const loom_result *r);
/* Peak bytes of `rank`; -1 for a rank out of range or a NULL result. */
LOOM_EXPORT int64_t loom_result_peak_bytes(const loom_result *r, int32_t rank);
/* The plan as plan.json text (caller frees with loom_free); NULL with err
 * set on failure or for a NULL result. */
LOOM_EXPORT char *loom_result_plan_json(const loom_result *r, loom_error *err);
/* Writes plan.json, trace.json, schedule.csv, timeline.svg, summary.txt,
 * report.html (schedule.csv only when PyTorch's schedule rules can express
 * the plan; plan.json's "schedule_csv" says why not). NULL result or
 * folder: LOOM_EINVAL. */
LOOM_EXPORT int loom_result_write(const loom_result *r, const char *dir,
                                  loom_error *err);
/* NULL is accepted (as for loom_planner_close and loom_free). */
LOOM_EXPORT void loom_result_free(loom_result *r);
LOOM_EXPORT void loom_free(void *p);

/* Oobleck reconfiguration after node failures (what `loom replan` does):
 * `job_json` describes the job (see docs/algorithms-dissertation.md),
 * `failed` lists the failed node ids, full = 1 re-instantiates from
 * scratch. *result_json (free with loom_free) is the report: the new
 * pipelines and the layers to copy from which surviving replica. */
LOOM_EXPORT int loom_replan_json(const char *job_json, const int32_t *failed,
                                 int32_t n_failed, int full, char **result_json,
                                 loom_error *err);

#ifdef __cplusplus
}
#endif
#endif
