/*
 * planner_manifest.h - the planner manifest: which plugins run in which
 * pipeline order with which params, plus seed, time budget and memory cap
 * (internal, not installed). Format: docs/manifest.md.
 *
 * Ownership: a loom_planner_config owns every string, array and cJSON
 * params copy in it; free it with loom_planner_config_free.
 */
#ifndef LOOM_PLANNER_MANIFEST_H
#define LOOM_PLANNER_MANIFEST_H

#include <cjson/cJSON.h>
#include "ctx.h"

/* One pipeline step as written in the manifest. */
typedef struct loom_step_config {
    char *role;     /* a LOOM_ROLE_* name */
    char *use;      /* plugin id or provides.name */
    cJSON *params;  /* owned copy or NULL */
    char path[48];  /* "pipeline[i]" */
} loom_step_config;

typedef struct loom_planner_config {
    char *path;              /* manifest file as given (for messages) */
    char *dir;               /* absolute folder of the manifest */
    char *name;              /* "name", or the file name without .json */
    char *description;       /* "" when absent */
    char **plugin_dirs;      /* absolute (relative ones resolved against dir) */
    int n_plugin_dirs;
    uint64_t seed;           /* default 1 */
    double budget_ms;        /* search budget per iteration; 0 = none */
    double memory_cap_bytes; /* per rank; 0 = the cluster's GPU memory */
    loom_step_config *steps;
    int n_steps;
} loom_planner_config;

/* Reads and validates a planner manifest (fields, types, pipeline order).
 * LOOM_EIO / LOOM_EINVAL with file and JSON path (`pipeline[2].role`). */
int loom_planner_config_load(const char *path, loom_planner_config **out,
                             loom_error *err);

/* Frees cfg (NULL allowed). */
void loom_planner_config_free(loom_planner_config *cfg);

/* Checks the step order: exactly one cost_model first, one or more
 * partitioners, exactly one ranker, exactly one interleaver, at most one
 * memory_tuner. LOOM_EINVAL naming `pipeline[i].role` and what was expected
 * there. */
int loom_planner_config_check(const loom_planner_config *cfg, loom_error *err);

/* "--use ROLE=NAME": replaces the use of the first step with that role
 * (dropping its params, which belonged to the previous plugin) or inserts a
 * new step in its legal position. Apply --use before --param. */
int loom_planner_config_use(loom_planner_config *cfg, const char *role_eq_name,
                            loom_error *err);

/* "--param ROLE.KEY=VALUE": sets a param of the first step with that role;
 * VALUE is parsed as JSON when it parses, else taken as a string. The value
 * is validated later against the plugin manifest (loom_pipeline_open). */
int loom_planner_config_param(loom_planner_config *cfg,
                              const char *role_key_eq_value, loom_error *err);

#endif
