/*
 * planner_manifest.h - the planner manifest: which plugins run in which
 * pipeline order with which params, plus seed, time budget and memory cap
 * (internal, not installed). Format: docs/manifest.md.
 *
 * Ownership: a loom_planner_config owns every string, array and cJSON
 * params copy in it; free it with loom_planner_config_free.
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

/* Checks the step order: exactly one cost_model first, one or more
 * partitioners, exactly one ranker, exactly one interleaver, at most one
 * memory_tuner. LOOM_EINVAL naming `pipeline[i].role` and what was expected
 * there. */
LOOM_EXPORT int loom_planner_config_check(const loom_planner_config *cfg, loom_error *err);

/* "--use ROLE=NAME": replaces the use of the first step with that role
 * (dropping its params, which belonged to the previous plugin) or inserts a
 * new step in its legal position. Apply --use before --param. */
LOOM_EXPORT int loom_planner_config_use(loom_planner_config *cfg, const char *role_eq_name,
                            loom_error *err);

/* "--param ROLE.KEY=VALUE": sets a param of the first step with that role;
 * VALUE is parsed as JSON when it parses, else taken as a string. The value
 * is validated later against the plugin manifest (loom_pipeline_open). */
LOOM_EXPORT int loom_planner_config_param(loom_planner_config *cfg,
                              const char *role_key_eq_value, loom_error *err);

/* ---- pipelines ------------------------------------------------------- */

/* An opened planning pipeline: the manifest's steps with their plugins
 * loaded and instantiated (opaque; core/host/pipeline.h). */
typedef struct loom_pipeline loom_pipeline;


/* Adds cfg->plugin_dirs to reg, resolves every step (not found ->
 * LOOM_ENOTFOUND naming pipeline[i].use and listing the plugins of that
 * role), checks the plugin's role, validates params (before init), loads
 * the plugins, copies vtables and calls create() once per step. A failed
 * create() keeps LOOM_EINVAL / ENOTFOUND / EIO / ENOMEM (input-shaped) and
 * becomes LOOM_EPLUGIN otherwise; its message is prefixed "plugin <id>: ".
 * *out is owned by the caller (loom_pipeline_close). */
LOOM_EXPORT int loom_pipeline_open(loom_registry *reg, const loom_planner_config *cfg,
                       loom_pipeline **out, loom_error *err);

/* Optional hooks of loom_pipeline_open_ex (any member may be 0). */
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

/* loom_pipeline_open with hooks (NULL: none). */
LOOM_EXPORT int loom_pipeline_open_ex(loom_registry *reg, const loom_planner_config *cfg,
                                      const loom_pipeline_hooks *hooks, loom_pipeline **out,
                                      loom_error *err);

/* Destroys every instance (last step first) and frees p (NULL allowed). */
LOOM_EXPORT void loom_pipeline_close(loom_pipeline *p);

/* Writes the resolved pipeline, one line per step: index, role, id,
 * version, binary path, params=values. */
LOOM_EXPORT void loom_pipeline_describe(const loom_pipeline *p, FILE *out);


/* Number of steps of an opened pipeline. */
LOOM_EXPORT int loom_pipeline_step_count(const loom_pipeline *p);

/* Plugin id of step `i` (0 <= i < loom_pipeline_step_count), borrowed
 * from the pipeline; NULL when i is out of range. */
LOOM_EXPORT const char *loom_pipeline_step_plugin_id(const loom_pipeline *p, int i);

#ifdef __cplusplus
}
#endif

#endif
