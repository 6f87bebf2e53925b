/* host_api.c - the host API table every plugin receives: memory, logging,
 * errors, typed parameters, the seeded RNG, the clock and time budget,
 * services and search progress. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "internal.h"

volatile int loom_interrupted;

double loom_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void *host_alloc(size_t bytes)
{
    return malloc(bytes ? bytes : 1);
}

static void *host_realloc(void *ptr, size_t bytes)
{
    return realloc(ptr, bytes ? bytes : 1);
}

static void host_free(void *ptr)
{
    free(ptr);
}

/* Log threshold from LOOM_LOG (error, warn, info, debug); default warn. */
static int log_threshold(void)
{
    static int level = -1;
    if (level < 0) {
        const char *v = getenv("LOOM_LOG");
        level = LOOM_LOG_WARN;
        if (v && !strcmp(v, "info"))
            level = LOOM_LOG_INFO;
        else if (v && !strcmp(v, "debug"))
            level = LOOM_LOG_DEBUG;
        else if (v && !strcmp(v, "error"))
            level = LOOM_LOG_ERROR;
    }
    return level;
}

static void host_log(loom_ctx *ctx, int level, const char *fmt, ...)
{
    if (level > log_threshold() || (ctx && ctx->quiet && level > LOOM_LOG_WARN))
        return;
    static const char *const names[] = {"error", "warning", "info", "debug"};
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "loom: %s: %s: %s\n", ctx ? ctx->plugin_id : "host",
            names[level < 0 ? 0 : level > 3 ? 3 : level], msg);
}

static int host_error(loom_error *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

static const loom_param_value *find_param(loom_ctx *ctx, const char *key)
{
    for (int i = 0; ctx && i < ctx->n_params; i++)
        if (!strcmp(ctx->params[i].name, key))
            return &ctx->params[i];
    return NULL;
}

static int param_int(loom_ctx *ctx, const char *key, int64_t *out)
{
    const loom_param_value *v = find_param(ctx, key);
    if (!v)
        return LOOM_ENOTFOUND;
    if (v->type != LOOM_PARAM_INT && v->type != LOOM_PARAM_BOOL)
        return LOOM_EINVAL;
    *out = v->i;
    return LOOM_OK;
}

static int param_double(loom_ctx *ctx, const char *key, double *out)
{
    const loom_param_value *v = find_param(ctx, key);
    if (!v)
        return LOOM_ENOTFOUND;
    if (v->type == LOOM_PARAM_DOUBLE)
        *out = v->d;
    else if (v->type == LOOM_PARAM_INT)
        *out = (double)v->i;
    else
        return LOOM_EINVAL;
    return LOOM_OK;
}

static int param_bool(loom_ctx *ctx, const char *key, int *out)
{
    const loom_param_value *v = find_param(ctx, key);
    if (!v)
        return LOOM_ENOTFOUND;
    if (v->type != LOOM_PARAM_BOOL)
        return LOOM_EINVAL;
    *out = v->i != 0;
    return LOOM_OK;
}

static const char *param_string(loom_ctx *ctx, const char *key)
{
    const loom_param_value *v = find_param(ctx, key);
    if (!v || (v->type != LOOM_PARAM_STRING && v->type != LOOM_PARAM_ENUM))
        return NULL;
    return v->s;
}

static uint64_t host_seed(loom_ctx *ctx)
{
    return ctx ? ctx->seed : 0;
}

static double budget_left_ms(loom_ctx *ctx)
{
    if (!ctx || ctx->deadline_ms < 0)
        return -1;
    double left = ctx->deadline_ms - loom_now_ms();
    return left > 0 ? left : 0;
}

static int host_expired(loom_ctx *ctx)
{
    if (loom_interrupted)
        return 1;
    return ctx && ctx->deadline_ms >= 0 && loom_now_ms() >= ctx->deadline_ms;
}

static const loom_problem *host_problem(loom_ctx *ctx)
{
    return ctx ? ctx->problem : NULL;
}

static const loom_host_api host_table = {
    sizeof(loom_host_api),
    LOOM_ABI_VERSION,
    host_alloc,
    host_realloc,
    host_free,
    host_log,
    host_error,
    param_int,
    param_double,
    param_bool,
    param_string,
    host_seed,
    loom_splitmix64,
    loom_now_ms,
    budget_left_ms,
    host_expired,
    loom_service_lookup,
    host_problem,
    loom_engine_progress,
};

const loom_host_api *loom_host_table(void)
{
    return &host_table;
}
