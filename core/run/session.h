/*
 * session.h - one planning run: a planner manifest's pipeline plus a
 * problem (model + cluster + parallel config + workload, or a stage-times
 * problem). Shared by `loom plan`, `loom ab` and the C API.
 *
 * Ownership: the session owns everything it loads; loom_session_close
 * releases it. Strings in loom_session_args are borrowed.
 */
#ifndef LOOM_SESSION_H
#define LOOM_SESSION_H

#include "engine_api.h"

#define LOOM_SESSION_MAX_OVERRIDES 64

typedef struct loom_session_args {
    const char *manifest;    /* NULL: the default megatron-1f1b manifest */
    const char *model;       /* preset or file; NULL: vlm-s */
    const char *cluster;     /* preset or file; NULL: h800 */
    const char *parallel;    /* "tp=..,pp=.." over the model's own */
    const char *workload;    /* JSON Lines file */
    const char *generate;    /* generator family; NULL: the model's */
    const char *stage_times; /* stage-times problem file */
    int32_t iterations;      /* 0: default (4 generated; all of a file) */
    int has_seed;
    uint64_t seed;
    double memory_cap_bytes; /* 0: manifest's, else the GPU's HBM */
    const char *uses[LOOM_SESSION_MAX_OVERRIDES];
    int n_uses;
    const char *params[LOOM_SESSION_MAX_OVERRIDES];
    int n_params;
    const char *plugin_paths[LOOM_SESSION_MAX_OVERRIDES];
    int n_plugin_paths;
    int no_workload;         /* 1: the caller supplies iterations (C API) */
    int allow_untrusted;     /* 1: --allow-untrusted-plugins (core/trust.h) */
} loom_session_args;

struct loom_planner_config;
struct loom_registry;
struct loom_model_data;
struct loom_cluster_data;
struct loom_stage_times_data;
struct loom_workload;

typedef struct loom_session {
    struct loom_planner_config *cfg;
    struct loom_registry *reg;
    struct loom_pipeline *pl;
    struct loom_model_data *model;
    struct loom_cluster_data *cluster;
    struct loom_stage_times_data *stage_times;
    struct loom_workload *workload;
    loom_problem problem;
    int32_t n_iterations;
    const char *manifest_name;
    char manifest_path[4096];
} loom_session;

void loom_session_args_init(loom_session_args *a);

/* Consumes the problem/manifest option at argv[*i] (advancing *i past its
 * value): returns 1 when consumed, 0 when it is not a session option, -1
 * (after printing why) when its value is missing or malformed. */
int loom_session_args_take(loom_session_args *a, int argc, char **argv, int *i);

/* Loads the manifest, the plugins and the problem. On failure the session
 * is still safe to close. */
int loom_session_open(loom_session *s, const loom_session_args *a, loom_error *err);

/* Plans iteration k (0 <= k < n_iterations; ignored for stage-times). */
int loom_session_plan(loom_session *s, int32_t k, loom_plan *plan, loom_error *err);

/* Plans a caller-provided iteration (checked against the problem first). */
int loom_session_plan_iteration(loom_session *s, const loom_iteration *it, loom_plan *plan,
                                loom_error *err);

void loom_session_close(loom_session *s);

/* Path of the default planner manifest (first that exists of: the
 * working directory's examples/manifests, the installed data dir, the
 * source tree). */
const char *loom_default_manifest(char *buf, size_t size);

#endif
