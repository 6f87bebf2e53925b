/*
 * ctx.h - the host layer's shared types: resolved params, the per-step
 * context handed to plugins, the host table (not installed).
 *
 * A plugin reaches the run it belongs to only through its ctx: ctx->pipeline
 * holds the problem, the engine's services, the step marker for isolation
 * and the search-progress log, so nothing here is process-global except
 * the SIGINT flag.
 */
#ifndef LOOM_CTX_H
#define LOOM_CTX_H

#include <loom/loom.h>
#include "base.h"
#include "registry_priv.h"

/* ---- the per-step context handed to plugins --------------------------- */

struct loom_pipeline;

struct loom_ctx {
    char plugin_id[128];
    char label[64];                 /* "pipeline[2]" */
    const loom_param_value *params; /* n_params */
    int n_params;
    uint64_t seed;                  /* run seed mixed with the step index */
    double deadline_ms;             /* absolute loom_now_ms() deadline; < 0 none */
    struct loom_pipeline *pipeline; /* the pipeline this step belongs to */
    int quiet;                      /* suppress info logs */
};

/* ---- host API and services -------------------------------------------- */

/* The log level LOOM_LOG asks for (LOOM_LOG_ERROR .. LOOM_LOG_DEBUG;
 * warn when unset); an unknown value warns once on stderr. Opening a
 * pipeline calls it, so a mistyped LOOM_LOG is reported at once. */
int loom_log_level(void);

/* The host API table (static, one per process). */
const loom_host_api *loom_host_table(void);

/* Set by loom_interrupt() (a SIGINT handler); makes every ctx's
 * expired() true. */
extern volatile int loom_interrupted;

/* Status a failed plugin call maps to, the one rule for every role and
 * entry point: input-shaped failures (a bad value, a missing or unreadable
 * file, no memory, an infeasible problem, a deadlocked order, a timeout or
 * an interrupt) keep the plugin's code; anything else is LOOM_EPLUGIN. */
int loom_plugin_status(int rc);

/* Names plugin `plugin_id` in err ("plugin <id>: ...", unless the message
 * already names it or another plugin: the innermost failing plugin is the
 * one to blame) and sets its code to loom_plugin_status(rc); returns that
 * code. */
int loom_plugin_fail(loom_error *err, int rc, const char *plugin_id);

#endif
