/*
 * loom/mock_host.h - a complete loom_host_api that needs no core, for the
 * unit tests of plugins.
 *
 * A test creates a mock host, sets the params, seed, problem, budget and
 * services a plugin needs, and calls the plugin's role vtable with
 * loom_mock_host_api() and loom_mock_host_ctx():
 *
 *     loom_mock_host *h = loom_mock_host_new();
 *     loom_mock_host_set_param(h, "budget_ms", "50");
 *     vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h), NULL, &self, &err);
 *
 * Behaviour of the host table it provides:
 *   - alloc/realloc/free: malloc/realloc/free.
 *   - log: keeps the last formatted message and its level (and echoes to
 *     stderr when loom_mock_host_set_log_echo() turned that on).
 *   - error: formats into err (code + message) and returns code.
 *   - param_*: a param never set returns the default of the plugin's
 *     manifest once loom_mock_host_load_manifest() read it, typed as the
 *     real host types it (param_int: int and bool params; param_double: int
 *     and float; param_bool: bool; param_string: string and enum; another
 *     type returns LOOM_EINVAL, param_string NULL), exactly what the real
 *     host supplies for a param the planner manifest does not set. A param
 *     neither set nor declared returns LOOM_ENOTFOUND (param_string: NULL).
 *     A set param is typed by how the plugin reads it: param_int parses a
 *     decimal integer, param_double a finite number, param_bool one of
 *     true/false/1/0/yes/no/on/off; text that does not parse returns
 *     LOOM_EINVAL.
 *   - seed: the value from loom_mock_host_set_seed() (0 by default);
 *     rng_next: splitmix64, the same sequence the core produces.
 *   - now_ms: CLOCK_MONOTONIC in milliseconds; budget_left_ms: < 0 without
 *     a budget, else the milliseconds left (>= 0); expired: 1 once the
 *     budget ran out or after loom_mock_host_set_expired(h, 1).
 *   - service(name, v): the newest table registered under `name` with a
 *     version >= v by any live mock host; NULL otherwise. The host API's
 *     service() has no ctx, so the registry is process-wide.
 *   - problem: the pointer from loom_mock_host_set_problem() (NULL default).
 *   - progress: records the last best makespan, the evaluation count and
 *     the number of calls.
 *
 * Ownership: loom_mock_host_new() returns a host the caller frees with
 * loom_mock_host_free(). The api table and ctx belong to the host and stay
 * valid until it is freed. Param keys/values and service names are copied;
 * the problem and the service tables are borrowed and must outlive their
 * use. Strings returned by param_string() and loom_mock_host_last_log()
 * stay valid until the param is set again / the next log call.
 *
 * Threads: one mock host may be used by one thread at a time; creating or
 * freeing hosts while another thread calls service() is not supported.
 */
#ifndef LOOM_MOCK_HOST_H
#define LOOM_MOCK_HOST_H

#include <loom/loom.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct loom_mock_host loom_mock_host;

/* Creates a host with no params, seed 0, no problem and no budget.
 * Returns NULL when out of memory. */
loom_mock_host *loom_mock_host_new(void);

/* Frees the host, its copies of params and service names. NULL is a no-op. */
void loom_mock_host_free(loom_mock_host *h);

/* The host API table to pass to a plugin's init() and create(). */
const loom_host_api *loom_mock_host_api(loom_mock_host *h);

/* The ctx to pass to create(); every ctx-taking host call reads this host. */
loom_ctx *loom_mock_host_ctx(loom_mock_host *h);

/* The host a ctx from loom_mock_host_ctx() belongs to (for service tables
 * written in tests that need their own state), or NULL for NULL. */
loom_mock_host *loom_mock_host_from_ctx(loom_ctx *ctx);

/* Sets param `key` to the text `value` (both copied); a NULL value unsets
 * it. Returns LOOM_OK, LOOM_EINVAL (NULL host or key) or LOOM_ENOMEM. */
int loom_mock_host_set_param(loom_mock_host *h, const char *key,
                             const char *value);

/* Unsets every param (the manifest's defaults stay). */
void loom_mock_host_clear_params(loom_mock_host *h);

/* Reads the "params" of a plugin manifest (names, types, defaults), so a
 * param the test does not set returns the manifest's default as the real
 * host would supply it. `path` is the manifest.json or the plugin folder
 * holding it. Replaces the params of a manifest loaded before. Returns
 * LOOM_OK, LOOM_EIO (cannot read the file), LOOM_EINVAL (not JSON, or a
 * param without a type or a default of that type; err names the file and
 * the JSON path), LOOM_ENOMEM. err may be NULL. */
int loom_mock_host_load_manifest(loom_mock_host *h, const char *path,
                                 loom_error *err);

/* loom_mock_host_load_manifest() for the plugin with id `id`, whose folder
 * is one of the folders directly under `root` (a plugin tree laid out as
 * <root>/<name>/manifest.json, like the Loom source, build and install
 * trees). LOOM_ENOTFOUND when no manifest there has that id. */
int loom_mock_host_load_manifest_of(loom_mock_host *h, const char *root,
                                    const char *id, loom_error *err);

/* loom_mock_host_new() followed by loom_mock_host_load_manifest(h, path):
 * the usual start of a plugin test. Returns NULL (the reason on stderr)
 * when out of memory or when the manifest cannot be loaded. */
loom_mock_host *loom_mock_host_new_with_manifest(const char *path);

/* The value returned by host->seed(ctx). */
void loom_mock_host_set_seed(loom_mock_host *h, uint64_t seed);

/* One step of splitmix64 on a caller-owned state (the sequence of
 * host->rng_next and of the core), for tests that draw random instances. */
uint64_t loom_mock_splitmix64(uint64_t *state);

/* The problem returned by host->problem(ctx); borrowed, may be NULL. */
void loom_mock_host_set_problem(loom_mock_host *h, const loom_problem *p);

/* Starts a time budget of `ms` milliseconds from now; ms < 0 removes it. */
void loom_mock_host_set_budget_ms(loom_mock_host *h, double ms);

/* Forces host->expired(ctx) to 1 (on != 0) or back to the budget's verdict. */
void loom_mock_host_set_expired(loom_mock_host *h, int on);

/* The last message logged through host->log ("" before any), its level
 * (enum loom_log_level, -1 before any) and the number of log calls. */
const char *loom_mock_host_last_log(loom_mock_host *h);
int loom_mock_host_last_log_level(loom_mock_host *h);
int64_t loom_mock_host_log_count(loom_mock_host *h);

/* Also print every log message to stderr (off by default). */
void loom_mock_host_set_log_echo(loom_mock_host *h, int on);

/* What host->progress last reported: best makespan (ms; < 0 before any
 * call), evaluations, and how many times it was called. */
double loom_mock_host_best_makespan_ms(loom_mock_host *h);
int64_t loom_mock_host_evaluations(loom_mock_host *h);
int64_t loom_mock_host_progress_calls(loom_mock_host *h);

/* Registers a service table returned by host->service(name, version) for
 * any requested version <= `version`. The name is copied, the table
 * borrowed. Registering a name again in the same host replaces it.
 * Returns LOOM_OK, LOOM_EINVAL (NULL argument) or LOOM_ENOMEM. */
int loom_mock_host_add_service(loom_mock_host *h, const char *name,
                               uint32_t version, const void *table);

/* An opaque pointer a test can attach to the host (borrowed). */
void loom_mock_host_set_user_data(loom_mock_host *h, void *user_data);
void *loom_mock_host_user_data(loom_mock_host *h);

/* Shrinks (or restores) the api table's struct_size, to test how a plugin
 * behaves on an older host (LOOM_HOST_HAS). Clamped to
 * [offsetof(loom_host_api, alloc), sizeof(loom_host_api)]. */
void loom_mock_host_set_api_size(loom_mock_host *h, uint32_t struct_size);

#ifdef __cplusplus
}
#endif
#endif
