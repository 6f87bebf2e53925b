/*
 * loom/sys/planner.h - the planner manifest (which plugins run in which
 * pipeline order with which params, plus seed, time budget and memory
 * cap; format: docs/manifest.md), checking its pipeline, the progress a
 * search reports, and interrupting searches.
 *
 * Ownership: a loom_planner_config owns every string, array and cJSON
 * params copy in it; free it with loom_planner_config_free.
 *
 * Layer: host (core/host).
 */
#ifndef LOOM_SYS_PLANNER_H
#define LOOM_SYS_PLANNER_H

#include <cjson/cJSON.h>
#include <stdio.h>
#include <loom/sys/registry.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One pipeline step as written in the manifest. */
typedef struct loom_step_config {
    char *role;     /* a LOOM_ROLE_* name */
    char *use;      /* plugin id or provides.name */
    cJSON *params;  /* owned copy or NULL */
    char path[48];  /* "pipeline[i]" */
    char *use_flag; /* owned "--use ROLE=NAME" when the command line chose
                     * the plugin (errors name it), else NULL */
    char **param_flags; /* owned "--param ROLE.KEY=VALUE" texts that set
                         * params of this step (errors name them) */
    int n_param_flags;
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
    int64_t max_evaluations; /* > 0: deterministic mode (see docs/search.md):
                              * the ranker stops after this many evaluations,
                              * not at a wall-clock budget */
    double memory_cap_bytes; /* per rank; 0 = the cluster's GPU memory */
    loom_step_config *steps;
    int n_steps;
    int choose_run;          /* "choose": "run": one candidate for every
                              * iteration (the session picks it); 0: the
                              * ranker chooses per iteration */
} loom_planner_config;

/* Reads and validates a planner manifest (fields, types, pipeline order).
 * A bare name ("pipeweaver": no '/', no ".json", no such file) is a
 * shipped manifest, examples/manifests/NAME.json (then the installed
 * share/loom/manifests/, then the source tree's); cfg->path is the file
 * read. LOOM_EIO / LOOM_EINVAL with file and JSON path
 * (`pipeline[2].role`), LOOM_ENOTFOUND for an unknown name. */
LOOM_EXPORT int loom_planner_config_load(const char *path, loom_planner_config **out,
                             loom_error *err);

/* Resolves a bare manifest name ("pipeweaver": no '/', no ".json", no
 * such file) to the first shipped NAME.json into buf, as presets are
 * resolved; anything else is a path, copied as given. LOOM_ENOTFOUND for a
 * name that names no shipped manifest, with the closest one. */
LOOM_EXPORT int loom_planner_manifest_resolve(const char *spec, char *buf, size_t size,
                                              loom_error *err);

/* Frees cfg (NULL allowed). */
LOOM_EXPORT void loom_planner_config_free(loom_planner_config *cfg);

/* Applies command-line overrides to cfg, every "--use ROLE=NAME" of
 * uses[0..n_uses) first, then every "--param ROLE.KEY=VALUE" of
 * params[0..n_params). --use replaces the use of the first step with that
 * role (dropping its params, which belonged to the previous plugin) or
 * inserts a new step in its legal position; --param sets a param of the
 * first step with that role, VALUE parsed as JSON when it parses, else
 * taken as a string (checked against the plugin's manifest when the
 * pipeline opens). LOOM_EINVAL naming the flag; stops at the first. */
LOOM_EXPORT int loom_planner_config_apply(loom_planner_config *cfg, const char *const *uses,
                                          int n_uses, const char *const *params, int n_params,
                                          loom_error *err);


/* ---- progress and interrupts ------------------------------------------ */

/* One point of a search's best-makespan-against-time curve. */
typedef struct loom_progress_point {
    double elapsed_ms;
    double best_makespan_ms;
    int64_t evaluations;
} loom_progress_point;

/* Optional live progress callback (CLI progress display). */
typedef void (*loom_progress_fn)(void *user, double elapsed_ms,
                                 double best_makespan_ms, int64_t evaluations);

/* Asks every running search to stop at its next check (async-signal-safe:
 * call it from a SIGINT handler). */
LOOM_EXPORT void loom_interrupt(void);

/* 1 once loom_interrupt() was called. */
LOOM_EXPORT int loom_interrupt_requested(void);

/* ---- pipelines ------------------------------------------------------- */

/* An opened planning pipeline: the manifest's steps with their plugins
 * loaded and instantiated (opaque; core/host/pipeline.h). */
typedef struct loom_pipeline loom_pipeline;


/* Optional hooks of opening a pipeline (loom_pipeline_check, a session);
 * any member may be 0. */
typedef struct loom_pipeline_hooks {
    /* While the plugin of step i runs its code during open (constructors,
     * init, create) and close (destroy), *step_marker is i, else -1; the
     * pipeline keeps it for planning too (see loom_session_args), so an
     * exit, a crash or a hang in any plugin code can be blamed on it. */
    volatile int32_t *step_marker;
    /* Called for every step with its plugin id once the steps are resolved,
     * before any plugin code runs (an isolated run announces them here). */
    void (*on_step)(void *user, int32_t step, const char *plugin_id);
    void *user;
    /* The last i that *step_marker was set to (it stays when the plugin
     * returns), so a crash in core code after a plugin ran can name that
     * plugin as the likely cause; NULL: not kept. */
    volatile int32_t *last_step_marker;
} loom_pipeline_hooks;

/* Opens cfg's pipeline on reg as planning does (cfg->plugin_dirs added
 * to reg, every step resolved, its role and params checked, the plugins
 * loaded and create() called once per step), writes the resolved pipeline
 * to `out` (when not NULL): a header line with seed, budget or evaluations
 * and memory cap, then one line per step with index, role, id, version,
 * binary path and params; sets *n_steps (when not NULL), and closes it
 * again (destroy() of every instance, last step first). A step that names
 * no plugin is LOOM_ENOTFOUND naming pipeline[i].use and listing the
 * plugins of that role; a failed create() keeps LOOM_EINVAL / ENOTFOUND /
 * EIO / ENOMEM and becomes LOOM_EPLUGIN otherwise, its message prefixed
 * "plugin <id>: ". `hooks` may be NULL. */
LOOM_EXPORT int loom_pipeline_check(loom_registry *reg, const loom_planner_config *cfg,
                                    const loom_pipeline_hooks *hooks, FILE *out,
                                    int *n_steps, loom_error *err);

/* Plugin id of step `i` of an opened pipeline (a session's), borrowed
 * from the pipeline; NULL when i is out of range. */
LOOM_EXPORT const char *loom_pipeline_step_plugin_id(const loom_pipeline *p, int i);

#ifdef __cplusplus
}
#endif

#endif
