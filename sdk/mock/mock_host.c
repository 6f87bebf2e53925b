/* mock_host.c - a loom_host_api for plugin unit tests, without the core. */
#include <loom/mock_host.h>

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

/* The mock's own ctx: all it needs is the way back to its host. */
struct loom_ctx {
    loom_mock_host *host;
};

typedef struct mock_param {
    char *key;   /* owned */
    char *value; /* owned */
} mock_param;

/* A param the loaded manifest declares: its type and default. */
enum mock_param_type {
    MOCK_INT,
    MOCK_FLOAT,
    MOCK_BOOL,
    MOCK_STRING,
    MOCK_ENUM
};

typedef struct mock_spec {
    char *name;  /* owned */
    int type;    /* enum mock_param_type */
    int64_t i;   /* int and bool defaults */
    double d;    /* float default */
    char *s;     /* string and enum default, owned */
} mock_spec;

typedef struct mock_service {
    char *name;        /* owned */
    uint32_t version;
    const void *table; /* borrowed */
} mock_service;

#define MOCK_LOG_BYTES 1024

struct loom_mock_host {
    struct loom_ctx ctx;
    loom_host_api api;

    mock_param *params;
    int n_params, cap_params;
    mock_spec *specs;    /* from loom_mock_host_load_manifest */
    int n_specs;
    mock_service *services;
    int n_services, cap_services;

    uint64_t seed;
    const loom_problem *problem;
    int has_budget;
    double deadline_ms;  /* absolute mock_now_ms() deadline */
    int force_expired;

    char last_log[MOCK_LOG_BYTES];
    int last_log_level;
    int64_t log_count;
    int log_echo;

    double best_makespan_ms;
    int64_t evaluations;
    int64_t progress_calls;

    void *user_data;
    loom_mock_host *next; /* list of live hosts, newest first */
};

/* Live hosts, searched by service() (which has no ctx). */
static loom_mock_host *mock_live_hosts;

/* ---- the host API functions ------------------------------------------- */

/* host->alloc: malloc. */
static void *mock_alloc(size_t bytes)
{
    return malloc(bytes);
}

/* host->realloc: realloc. */
static void *mock_realloc(void *ptr, size_t bytes)
{
    return realloc(ptr, bytes);
}

/* host->free: free. */
static void mock_free(void *ptr)
{
    free(ptr);
}

/* host->log: keeps the formatted message, its level and a count. */
static void mock_log(loom_ctx *ctx, int level, const char *fmt, ...)
    LOOM_PRINTF(3, 4);
static void mock_log(loom_ctx *ctx, int level, const char *fmt, ...)
{
    if (!ctx || !ctx->host || !fmt)
        return;
    loom_mock_host *h = ctx->host;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->last_log, sizeof h->last_log, fmt, ap);
    va_end(ap);
    h->last_log_level = level;
    h->log_count++;
    if (h->log_echo)
        fprintf(stderr, "mock host [%d]: %s\n", level, h->last_log);
}

/* host->error: fills err and returns code. */
static int mock_error(loom_error *err, int code, const char *fmt, ...)
    LOOM_PRINTF(3, 4);
static int mock_error(loom_error *err, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    loom_error_vformat(err, code, fmt ? fmt : "", ap);
    va_end(ap);
    return code;
}

/* The text of param `key`, or NULL when it is not set. */
static const char *mock_param_text(loom_ctx *ctx, const char *key)
{
    if (!ctx || !ctx->host || !key)
        return NULL;
    loom_mock_host *h = ctx->host;
    for (int i = 0; i < h->n_params; i++)
        if (strcmp(h->params[i].key, key) == 0)
            return h->params[i].value;
    return NULL;
}

/* The manifest's declaration of `key`, or NULL. */
static const mock_spec *mock_param_spec(loom_ctx *ctx, const char *key)
{
    if (!ctx || !ctx->host || !key)
        return NULL;
    loom_mock_host *h = ctx->host;
    for (int i = 0; i < h->n_specs; i++)
        if (strcmp(h->specs[i].name, key) == 0)
            return &h->specs[i];
    return NULL;
}

/* host->param_int: the param parsed as a decimal integer, else the
 * manifest's int or bool default. */
static int mock_param_int(loom_ctx *ctx, const char *key, int64_t *out)
{
    const char *text = mock_param_text(ctx, key);
    if (!text) {
        const mock_spec *sp = mock_param_spec(ctx, key);
        if (!sp)
            return LOOM_ENOTFOUND;
        if (sp->type != MOCK_INT && sp->type != MOCK_BOOL)
            return LOOM_EINVAL;
        if (out)
            *out = sp->i;
        return LOOM_OK;
    }
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (end == text || *end != 0 || errno == ERANGE)
        return LOOM_EINVAL;
    if (out)
        *out = (int64_t)v;
    return LOOM_OK;
}

/* host->param_double: the param parsed as a finite number, else the
 * manifest's int or float default. */
static int mock_param_double(loom_ctx *ctx, const char *key, double *out)
{
    const char *text = mock_param_text(ctx, key);
    if (!text) {
        const mock_spec *sp = mock_param_spec(ctx, key);
        if (!sp)
            return LOOM_ENOTFOUND;
        if (sp->type != MOCK_INT && sp->type != MOCK_FLOAT)
            return LOOM_EINVAL;
        if (out)
            *out = sp->type == MOCK_INT ? (double)sp->i : sp->d;
        return LOOM_OK;
    }
    char *end = NULL;
    double v = strtod(text, &end);
    if (end == text || *end != 0 || !isfinite(v))
        return LOOM_EINVAL;
    if (out)
        *out = v;
    return LOOM_OK;
}

/* host->param_bool: true/false, 1/0, yes/no, on/off (any case), else the
 * manifest's bool default. */
static int mock_param_bool(loom_ctx *ctx, const char *key, int *out)
{
    static const char *const yes[] = {"true", "1", "yes", "on"};
    static const char *const no[] = {"false", "0", "no", "off"};
    const char *text = mock_param_text(ctx, key);
    if (!text) {
        const mock_spec *sp = mock_param_spec(ctx, key);
        if (!sp)
            return LOOM_ENOTFOUND;
        if (sp->type != MOCK_BOOL)
            return LOOM_EINVAL;
        if (out)
            *out = sp->i != 0;
        return LOOM_OK;
    }
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (strcasecmp(text, yes[i]) == 0) {
            if (out)
                *out = 1;
            return LOOM_OK;
        }
        if (strcasecmp(text, no[i]) == 0) {
            if (out)
                *out = 0;
            return LOOM_OK;
        }
    }
    return LOOM_EINVAL;
}

/* host->param_string: the param's text, else the manifest's string or
 * enum default, else NULL. */
static const char *mock_param_string(loom_ctx *ctx, const char *key)
{
    const char *text = mock_param_text(ctx, key);
    if (text)
        return text;
    const mock_spec *sp = mock_param_spec(ctx, key);
    return sp && (sp->type == MOCK_STRING || sp->type == MOCK_ENUM) ? sp->s : NULL;
}

/* host->seed: the seed set on the host. */
static uint64_t mock_seed(loom_ctx *ctx)
{
    return (ctx && ctx->host) ? ctx->host->seed : 0;
}

/* host->rng_next: one splitmix64 step on a caller-owned state. */
static uint64_t mock_rng_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* The host's splitmix64 step, for tests that draw their own instances. */
uint64_t loom_mock_splitmix64(uint64_t *state)
{
    return mock_rng_next(state);
}

/* host->now_ms: the monotonic clock in milliseconds. */
static double mock_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* host->budget_left_ms: -1 without a budget, else ms left (>= 0). */
static double mock_budget_left_ms(loom_ctx *ctx)
{
    if (!ctx || !ctx->host || !ctx->host->has_budget)
        return -1.0;
    double left = ctx->host->deadline_ms - mock_now_ms();
    return left > 0 ? left : 0.0;
}

/* host->expired: 1 when forced or when the budget has run out. */
static int mock_expired(loom_ctx *ctx)
{
    if (!ctx || !ctx->host)
        return 0;
    loom_mock_host *h = ctx->host;
    if (h->force_expired)
        return 1;
    return h->has_budget && mock_now_ms() >= h->deadline_ms;
}

/* host->service: the newest matching table of any live mock host. */
static const void *mock_service_lookup(const char *name, uint32_t min_version)
{
    if (!name)
        return NULL;
    for (loom_mock_host *h = mock_live_hosts; h; h = h->next)
        for (int i = h->n_services - 1; i >= 0; i--)
            if (strcmp(h->services[i].name, name) == 0 &&
                h->services[i].version >= min_version)
                return h->services[i].table;
    return NULL;
}

/* The newest table named `name` registered on ctx's host, else on any
 * live host (as service() finds it). */
static const void *mock_ctx_service(loom_ctx *ctx, const char *name)
{
    if (!ctx || !ctx->host)
        return mock_service_lookup(name, 1);
    loom_mock_host *h = ctx->host;
    for (int i = h->n_services - 1; i >= 0; i--)
        if (strcmp(h->services[i].name, name) == 0)
            return h->services[i].table;
    return mock_service_lookup(name, 1);
}

/* host->evaluator / cost / simulator: the tables registered on ctx's host
 * with loom_mock_host_add_service. */
static const loom_evaluator_service *mock_evaluator(loom_ctx *ctx)
{
    return mock_ctx_service(ctx, LOOM_SERVICE_EVALUATOR);
}

static const loom_cost_service *mock_cost(loom_ctx *ctx)
{
    return mock_ctx_service(ctx, LOOM_SERVICE_COST);
}

static const loom_simulator_service *mock_simulator(loom_ctx *ctx)
{
    return mock_ctx_service(ctx, LOOM_SERVICE_SIMULATOR);
}

/* host->problem: the problem set on the host. */
static const loom_problem *mock_problem(loom_ctx *ctx)
{
    return (ctx && ctx->host) ? ctx->host->problem : NULL;
}

/* host->progress: records the reported best makespan and evaluations. */
static void mock_progress(loom_ctx *ctx, double best_makespan_ms,
                          int64_t evaluations)
{
    if (!ctx || !ctx->host)
        return;
    ctx->host->best_makespan_ms = best_makespan_ms;
    ctx->host->evaluations = evaluations;
    ctx->host->progress_calls++;
}

/* ---- the mock's own API ------------------------------------------------ */

/* Copies a NUL-terminated string with malloc. */
static char *mock_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* Creates a host and links it into the live list. */
loom_mock_host *loom_mock_host_new(void)
{
    loom_mock_host *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->ctx.host = h;
    h->api.struct_size = (uint32_t)sizeof(loom_host_api);
    h->api.abi_version = LOOM_ABI_VERSION;
    h->api.alloc = mock_alloc;
    h->api.realloc = mock_realloc;
    h->api.free = mock_free;
    h->api.log = mock_log;
    h->api.error = mock_error;
    h->api.param_int = mock_param_int;
    h->api.param_double = mock_param_double;
    h->api.param_bool = mock_param_bool;
    h->api.param_string = mock_param_string;
    h->api.seed = mock_seed;
    h->api.rng_next = mock_rng_next;
    h->api.now_ms = mock_now_ms;
    h->api.budget_left_ms = mock_budget_left_ms;
    h->api.expired = mock_expired;
    h->api.service = mock_service_lookup;
    h->api.problem = mock_problem;
    h->api.progress = mock_progress;
    h->api.evaluator = mock_evaluator;
    h->api.cost = mock_cost;
    h->api.simulator = mock_simulator;
    h->last_log_level = -1;
    h->best_makespan_ms = -1.0;
    h->next = mock_live_hosts;
    mock_live_hosts = h;
    return h;
}

/* Frees n manifest param specs and the array. */
static void mock_free_specs(mock_spec *specs, int n)
{
    for (int i = 0; i < n; i++) {
        free(specs[i].name);
        free(specs[i].s);
    }
    free(specs);
}

/* Unlinks the host and frees it with its copies. */
void loom_mock_host_free(loom_mock_host *h)
{
    if (!h)
        return;
    for (loom_mock_host **p = &mock_live_hosts; *p; p = &(*p)->next) {
        if (*p == h) {
            *p = h->next;
            break;
        }
    }
    loom_mock_host_clear_params(h);
    free(h->params);
    mock_free_specs(h->specs, h->n_specs);
    for (int i = 0; i < h->n_services; i++)
        free(h->services[i].name);
    free(h->services);
    free(h);
}

/* The host's api table. */
const loom_host_api *loom_mock_host_api(loom_mock_host *h)
{
    return h ? &h->api : NULL;
}

/* The host's ctx. */
loom_ctx *loom_mock_host_ctx(loom_mock_host *h)
{
    return h ? &h->ctx : NULL;
}

/* The host behind a ctx. */
loom_mock_host *loom_mock_host_from_ctx(loom_ctx *ctx)
{
    return ctx ? ctx->host : NULL;
}

/* Removes params[i], keeping the order of the others. */
static void mock_remove_param(loom_mock_host *h, int i)
{
    free(h->params[i].key);
    free(h->params[i].value);
    memmove(&h->params[i], &h->params[i + 1],
            (size_t)(h->n_params - i - 1) * sizeof h->params[0]);
    h->n_params--;
}

/* Sets, replaces or (NULL value) unsets a param. */
int loom_mock_host_set_param(loom_mock_host *h, const char *key,
                             const char *value)
{
    if (!h || !key)
        return LOOM_EINVAL;
    int found = -1;
    for (int i = 0; i < h->n_params; i++)
        if (strcmp(h->params[i].key, key) == 0)
            found = i;
    if (!value) {
        if (found >= 0)
            mock_remove_param(h, found);
        return LOOM_OK;
    }
    char *copy = mock_strdup(value);
    if (!copy)
        return LOOM_ENOMEM;
    if (found >= 0) {
        free(h->params[found].value);
        h->params[found].value = copy;
        return LOOM_OK;
    }
    if (h->n_params == h->cap_params) {
        int cap = h->cap_params ? 2 * h->cap_params : 8;
        mock_param *grown = realloc(h->params, (size_t)cap * sizeof *grown);
        if (!grown) {
            free(copy);
            return LOOM_ENOMEM;
        }
        h->params = grown;
        h->cap_params = cap;
    }
    char *key_copy = mock_strdup(key);
    if (!key_copy) {
        free(copy);
        return LOOM_ENOMEM;
    }
    h->params[h->n_params].key = key_copy;
    h->params[h->n_params].value = copy;
    h->n_params++;
    return LOOM_OK;
}

/* Unsets every param. */
void loom_mock_host_clear_params(loom_mock_host *h)
{
    if (!h)
        return;
    while (h->n_params > 0)
        mock_remove_param(h, h->n_params - 1);
}

/* Sets the seed host->seed() returns. */
void loom_mock_host_set_seed(loom_mock_host *h, uint64_t seed)
{
    if (h)
        h->seed = seed;
}

/* Sets the problem host->problem() returns. */
void loom_mock_host_set_problem(loom_mock_host *h, const loom_problem *p)
{
    if (h)
        h->problem = p;
}

/* Starts (ms >= 0) or removes (ms < 0) a time budget. */
void loom_mock_host_set_budget_ms(loom_mock_host *h, double ms)
{
    if (!h)
        return;
    h->has_budget = ms >= 0;
    h->deadline_ms = ms >= 0 ? mock_now_ms() + ms : 0.0;
}

/* Forces expired() on, or back to the budget. */
void loom_mock_host_set_expired(loom_mock_host *h, int on)
{
    if (h)
        h->force_expired = on != 0;
}

/* The last logged message. */
const char *loom_mock_host_last_log(loom_mock_host *h)
{
    return h ? h->last_log : "";
}

/* The level of the last logged message. */
int loom_mock_host_last_log_level(loom_mock_host *h)
{
    return h ? h->last_log_level : -1;
}

/* How many messages were logged. */
int64_t loom_mock_host_log_count(loom_mock_host *h)
{
    return h ? h->log_count : 0;
}

/* Turns echoing logs to stderr on or off. */
void loom_mock_host_set_log_echo(loom_mock_host *h, int on)
{
    if (h)
        h->log_echo = on != 0;
}

/* The last best makespan reported through progress(). */
double loom_mock_host_best_makespan_ms(loom_mock_host *h)
{
    return h ? h->best_makespan_ms : -1.0;
}

/* The last evaluation count reported through progress(). */
int64_t loom_mock_host_evaluations(loom_mock_host *h)
{
    return h ? h->evaluations : 0;
}

/* How many times progress() was called. */
int64_t loom_mock_host_progress_calls(loom_mock_host *h)
{
    return h ? h->progress_calls : 0;
}

/* Registers (or replaces) a named service table. */
int loom_mock_host_add_service(loom_mock_host *h, const char *name,
                               uint32_t version, const void *table)
{
    if (!h || !name || !table)
        return LOOM_EINVAL;
    for (int i = 0; i < h->n_services; i++) {
        if (strcmp(h->services[i].name, name) == 0) {
            h->services[i].version = version;
            h->services[i].table = table;
            return LOOM_OK;
        }
    }
    if (h->n_services == h->cap_services) {
        int cap = h->cap_services ? 2 * h->cap_services : 4;
        mock_service *grown = realloc(h->services, (size_t)cap * sizeof *grown);
        if (!grown)
            return LOOM_ENOMEM;
        h->services = grown;
        h->cap_services = cap;
    }
    char *copy = mock_strdup(name);
    if (!copy)
        return LOOM_ENOMEM;
    h->services[h->n_services].name = copy;
    h->services[h->n_services].version = version;
    h->services[h->n_services].table = table;
    h->n_services++;
    return LOOM_OK;
}

/* Attaches a test's pointer to the host. */
void loom_mock_host_set_user_data(loom_mock_host *h, void *user_data)
{
    if (h)
        h->user_data = user_data;
}

/* The pointer attached with set_user_data. */
void *loom_mock_host_user_data(loom_mock_host *h)
{
    return h ? h->user_data : NULL;
}

/* Sets the api table's struct_size, clamped. */
void loom_mock_host_set_api_size(loom_mock_host *h, uint32_t struct_size)
{
    if (!h)
        return;
    uint32_t lo = (uint32_t)offsetof(loom_host_api, alloc);
    uint32_t hi = (uint32_t)sizeof(loom_host_api);
    h->api.struct_size = struct_size < lo ? lo : struct_size > hi ? hi
                                                                  : struct_size;
}

/* ---- manifests ---------------------------------------------------------- */

/* `path`, or `path`/manifest.json when path is a folder (malloc'd). */
static char *mock_manifest_path(const char *path)
{
    struct stat st;
    int dir = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
    size_t n = strlen(path) + sizeof "/manifest.json";
    char *full = malloc(n);
    if (full)
        snprintf(full, n, dir ? "%s/manifest.json" : "%s", path);
    return full;
}

/* Reads a whole file (malloc'd, NUL-terminated), or NULL. */
static char *mock_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = cap ? 2 * cap : 8192;
            char *grown = realloc(buf, cap);
            if (!grown) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = grown;
        }
        size_t got = fread(buf + len, 1, 4096, f);
        len += got;
        if (got < 4096)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return NULL;
    }
    buf[len] = 0;
    return buf;
}

/* Fills spec from the manifest entry params.<js->string>. */
static int mock_parse_spec(const char *file, const cJSON *js, mock_spec *sp,
                           loom_error *err)
{
    static const char *const names[] = {"int", "float", "bool", "string", "enum"};
    const char *name = js->string;
    if (!cJSON_IsObject(js))
        return loom_error_format(err, LOOM_EINVAL, "%s: params.%s: expected an object", file, name);
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(js, "type");
    const cJSON *def = cJSON_GetObjectItemCaseSensitive(js, "default");
    sp->type = -1;
    for (int k = 0; cJSON_IsString(type) && k < 5; k++)
        if (strcmp(type->valuestring, names[k]) == 0)
            sp->type = k;
    if (sp->type < 0)
        return loom_error_format(err, LOOM_EINVAL,
                         "%s: params.%s.type: expected one of int, float, bool, string, enum",
                         file, name);
    int ok = 0;
    switch (sp->type) {
    case MOCK_INT:
        /* the range first: casting a number outside int64 is undefined */
        ok = cJSON_IsNumber(def) && def->valuedouble >= -9007199254740992.0 &&
             def->valuedouble <= 9007199254740992.0 &&
             def->valuedouble == (double)(int64_t)def->valuedouble;
        if (ok)
            sp->i = (int64_t)def->valuedouble;
        break;
    case MOCK_FLOAT:
        ok = cJSON_IsNumber(def);
        if (ok)
            sp->d = def->valuedouble;
        break;
    case MOCK_BOOL:
        ok = cJSON_IsBool(def);
        if (ok)
            sp->i = cJSON_IsTrue(def) ? 1 : 0;
        break;
    default:
        ok = cJSON_IsString(def);
        if (ok && !(sp->s = mock_strdup(def->valuestring)))
            return loom_error_format(err, LOOM_ENOMEM, "out of memory");
        break;
    }
    if (!ok)
        return loom_error_format(err, LOOM_EINVAL, "%s: params.%s.default: expected a%s %s default",
                         file, name, sp->type == MOCK_INT ? "n" : "", names[sp->type]);
    return LOOM_OK;
}

/* Loads the params of the manifest at `file` into h. */
static int mock_load_file(loom_mock_host *h, const char *file, loom_error *err)
{
    char *text = mock_read_file(file);
    if (!text)
        return loom_error_format(err, LOOM_EIO, "%s: cannot read the manifest: %s", file,
                         strerror(errno));
    cJSON *root = cJSON_Parse(text);
    free(text);
    if (!root)
        return loom_error_format(err, LOOM_EINVAL, "%s: expected a JSON manifest", file);
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(root, "params");
    int n = cJSON_IsObject(params) ? cJSON_GetArraySize(params) : 0;
    int rc = LOOM_OK;
    if (params && !cJSON_IsObject(params))
        rc = loom_error_format(err, LOOM_EINVAL, "%s: params: expected an object", file);
    mock_spec *specs = calloc((size_t)n + 1, sizeof *specs);
    if (!specs && rc == LOOM_OK)
        rc = loom_error_format(err, LOOM_ENOMEM, "out of memory");
    int k = 0;
    for (const cJSON *js = params ? params->child : NULL; js && rc == LOOM_OK && k < n;
         js = js->next, k++) {
        specs[k].name = mock_strdup(js->string);
        rc = specs[k].name ? mock_parse_spec(file, js, &specs[k], err)
                           : loom_error_format(err, LOOM_ENOMEM, "out of memory");
    }
    cJSON_Delete(root);
    if (rc != LOOM_OK) {
        mock_free_specs(specs, k);
        return rc;
    }
    mock_free_specs(h->specs, h->n_specs);
    h->specs = specs;
    h->n_specs = k;
    return LOOM_OK;
}

/* Loads a manifest's params (see header). */
int loom_mock_host_load_manifest(loom_mock_host *h, const char *path, loom_error *err)
{
    if (!h || !path)
        return loom_error_format(err, LOOM_EINVAL, "load_manifest: NULL host or path");
    char *file = mock_manifest_path(path);
    if (!file)
        return loom_error_format(err, LOOM_ENOMEM, "out of memory");
    int rc = mock_load_file(h, file, err);
    free(file);
    return rc;
}

/* 1 when the manifest at `file` has "id": id. */
static int mock_manifest_has_id(const char *file, const char *id)
{
    char *text = mock_read_file(file);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    free(text);
    const cJSON *js = cJSON_GetObjectItemCaseSensitive(root, "id");
    int same = cJSON_IsString(js) && strcmp(js->valuestring, id) == 0;
    cJSON_Delete(root);
    return same;
}

/* Finds <root>/<name>/manifest.json with that id and loads it. */
int loom_mock_host_load_manifest_of(loom_mock_host *h, const char *root, const char *id,
                                    loom_error *err)
{
    if (!h || !root || !id)
        return loom_error_format(err, LOOM_EINVAL, "load_manifest_of: NULL argument");
    DIR *dir = opendir(root);
    if (!dir)
        return loom_error_format(err, LOOM_EIO, "%s: cannot list the plugin folders: %s", root,
                         strerror(errno));
    int rc = LOOM_ENOTFOUND;
    for (struct dirent *e; rc == LOOM_ENOTFOUND && (e = readdir(dir));) {
        if (e->d_name[0] == '.')
            continue;
        size_t n = strlen(root) + strlen(e->d_name) + sizeof "//manifest.json";
        char *file = malloc(n);
        if (!file) {
            rc = loom_error_format(err, LOOM_ENOMEM, "out of memory");
            break;
        }
        snprintf(file, n, "%s/%s/manifest.json", root, e->d_name);
        if (mock_manifest_has_id(file, id))
            rc = mock_load_file(h, file, err);
        free(file);
    }
    closedir(dir);
    if (rc == LOOM_ENOTFOUND)
        loom_error_format(err, rc, "%s: no <folder>/manifest.json with id \"%s\"", root, id);
    return rc;
}

/* A new host with a manifest's params (see header). */
loom_mock_host *loom_mock_host_new_with_manifest(const char *path)
{
    loom_mock_host *h = loom_mock_host_new();
    if (!h) {
        fprintf(stderr, "mock host: out of memory\n");
        return NULL;
    }
    loom_error err;
    memset(&err, 0, sizeof err);
    if (loom_mock_host_load_manifest(h, path, &err) != LOOM_OK) {
        fprintf(stderr, "mock host: %s\n", err.message);
        loom_mock_host_free(h);
        return NULL;
    }
    return h;
}
