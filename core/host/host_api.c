/* host_api.c - the host API table handed to every plugin: memory, logging,
 * errors, typed params, seeded RNG, clock and budget, the run's services. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ctx.h"
#include "pipeline.h"
#include "services.h"
#include <loom/sys/planner.h>

volatile int loom_interrupted;
void loom_interrupt(void)
{
    loom_interrupted = 1;
}

int loom_interrupt_requested(void)
{
    return loom_interrupted != 0;
}


/* host->alloc: malloc that returns a block even for 0 bytes. */
static void *host_alloc(size_t bytes)
{
    return malloc(bytes ? bytes : 1);
}

/* host->realloc: realloc that keeps a block even for 0 bytes. */
static void *host_realloc(void *ptr, size_t bytes)
{
    return realloc(ptr, bytes ? bytes : 1);
}

/* Highest log level printed: LOOM_LOG=error, warn (default), info or debug;
 * any other value warns once on stderr and keeps the default (ctx.h). */
int loom_log_level(void)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    static int warned; /* racy at worst: a second identical line */
    const char *v = getenv("LOOM_LOG");
    if (!v || !*v)
        return LOOM_LOG_WARN;
    for (int k = 0; k < 4; k++)
        if (!strcmp(v, names[k]))
            return k; /* LOOM_LOG_ERROR .. LOOM_LOG_DEBUG */
    if (!warned) {
        warned = 1;
        char shown[64];
        const char *near = loom_closest_name(v, names, 4);
        fprintf(stderr, "loom: warning: LOOM_LOG=%s: expected error, warn, info or debug%s%s%s; "
                        "using warn\n", loom_escape(v, shown, sizeof shown),
                near ? " (did you mean " : "", near ? near : "", near ? "?)" : "");
    }
    return LOOM_LOG_WARN;
}

/* host->log: stderr, "loom: <plugin id>: " prefix, one line per call. */
static void host_log(loom_ctx *ctx, int level, const char *fmt, ...)
{
    if (level > loom_log_level() || (level >= LOOM_LOG_INFO && ctx && ctx->quiet))
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    size_t n = strlen(msg);
    while (n && msg[n - 1] == '\n')
        msg[--n] = 0;
    const char *tag = level == LOOM_LOG_ERROR ? "error: "
                      : level == LOOM_LOG_WARN ? "warning: "
                                               : "";
    fprintf(stderr, "loom: %s: %s%s\n", ctx ? ctx->plugin_id : "?", tag, msg);
}

/* The ctx's resolved value for key, or NULL. */
static const loom_param_value *find_param(const loom_ctx *ctx, const char *key)
{
    if (!ctx || !key)
        return NULL;
    for (int i = 0; i < ctx->n_params; i++)
        if (ctx->params[i].name && !strcmp(ctx->params[i].name, key))
            return &ctx->params[i];
    return NULL;
}

/* host->param_int: INT and BOOL params. */
static int host_param_int(loom_ctx *ctx, const char *key, int64_t *out)
{
    const loom_param_value *v = find_param(ctx, key);
    if (!v)
        return LOOM_ENOTFOUND;
    if (v->type != LOOM_PARAM_INT && v->type != LOOM_PARAM_BOOL)
        return LOOM_EINVAL;
    *out = v->i;
    return LOOM_OK;
}

/* host->param_double: INT and float params. */
static int host_param_double(loom_ctx *ctx, const char *key, double *out)
{
    const loom_param_value *v = find_param(ctx, key);
    if (!v)
        return LOOM_ENOTFOUND;
    if (v->type == LOOM_PARAM_INT)
        *out = (double)v->i;
    else if (v->type == LOOM_PARAM_DOUBLE)
        *out = v->d;
    else
        return LOOM_EINVAL;
    return LOOM_OK;
}

/* host->param_bool: bool params. */
static int host_param_bool(loom_ctx *ctx, const char *key, int *out)
{
    const loom_param_value *v = find_param(ctx, key);
    if (!v)
        return LOOM_ENOTFOUND;
    if (v->type != LOOM_PARAM_BOOL)
        return LOOM_EINVAL;
    *out = v->i ? 1 : 0;
    return LOOM_OK;
}

/* host->param_string: string and enum params; NULL otherwise. */
static const char *host_param_string(loom_ctx *ctx, const char *key)
{
    const loom_param_value *v = find_param(ctx, key);
    if (!v || (v->type != LOOM_PARAM_STRING && v->type != LOOM_PARAM_ENUM))
        return NULL;
    return v->s;
}

/* host->seed: the run seed mixed with the step index. */
static uint64_t host_seed(loom_ctx *ctx)
{
    return ctx ? ctx->seed : 0;
}

/* host->budget_left_ms: -1 without a deadline, else >= 0. */
static double host_budget_left_ms(loom_ctx *ctx)
{
    if (!ctx || ctx->deadline_ms < 0)
        return -1;
    double left = ctx->deadline_ms - loom_now_ms();
    return left > 0 ? left : 0;
}

/* host->expired: deadline passed or interrupted. */
static int host_expired(loom_ctx *ctx)
{
    if (loom_interrupted)
        return 1;
    return ctx && ctx->deadline_ms >= 0 && loom_now_ms() >= ctx->deadline_ms;
}

/* host->problem: the problem being planned (NULL outside planning). */
static const loom_problem *host_problem(loom_ctx *ctx)
{
    return ctx && ctx->pipeline ? ctx->pipeline->problem : NULL;
}

/* host->progress: appends to the pipeline's progress log. */
static void host_progress(loom_ctx *ctx, double best_makespan_ms, int64_t evaluations)
{
    if (ctx && ctx->pipeline)
        loom_progress_log_add(&ctx->pipeline->progress, best_makespan_ms, evaluations);
}

/* host->evaluator: the evaluator of ctx's pipeline (NULL outside planning). */
static const loom_evaluator_service *host_evaluator(loom_ctx *ctx)
{
    return ctx && ctx->pipeline ? ctx->pipeline->evaluator : NULL;
}

/* host->cost: the cost model of ctx's pipeline (NULL without one). */
static const loom_cost_service *host_cost(loom_ctx *ctx)
{
    return ctx && ctx->pipeline && ctx->pipeline->cost_model >= 0 ? &loom_cost_service_v1 : NULL;
}

/* host->simulator: the core simulator. */
static const loom_simulator_service *host_simulator(loom_ctx *ctx)
{
    (void)ctx;
    return &loom_simulator_service_v1;
}

static const loom_host_api host_table = {
    .struct_size = sizeof(loom_host_api),
    .abi_version = LOOM_ABI_VERSION,
    .alloc = host_alloc,
    .realloc = host_realloc,
    .free = free,
    .log = host_log,
    .error = loom_set_error,
    .param_int = host_param_int,
    .param_double = host_param_double,
    .param_bool = host_param_bool,
    .param_string = host_param_string,
    .seed = host_seed,
    .rng_next = loom_splitmix64,
    .now_ms = loom_now_ms,
    .budget_left_ms = host_budget_left_ms,
    .expired = host_expired,
    .service = loom_service_lookup,
    .problem = host_problem,
    .progress = host_progress,
    .evaluator = host_evaluator,
    .cost = host_cost,
    .simulator = host_simulator,
};

const loom_host_api *loom_host_table(void)
{
    return &host_table;
}
