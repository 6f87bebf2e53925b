/*
 * loom/plugin.h - what a plugin binary exports: one entry function that
 * returns a static info struct (handshake), and the macro that defines it.
 *
 * Handshake order the host checks: entry symbol present; info struct_size
 * large enough; abi_version equal; build signature equal field by field;
 * id and version equal to the manifest's; role vtables not newer than the
 * host and with every required member; init() succeeding.
 *
 * Ownership: the info struct and every vtable are static const data of the
 * plugin, never freed (the host never dlcloses). `state` from init() is
 * owned by the plugin and released in fini().
 */
#ifndef LOOM_PLUGIN_H
#define LOOM_PLUGIN_H

#include <string.h>
#include <loom/common.h>
#include <loom/host.h>
#include <loom/params.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every role vtable starts with this header. */
typedef struct loom_role_header {
    uint32_t struct_size;  /* sizeof the vtable as the plugin built it */
    uint32_t role_version; /* LOOM_<ROLE>_VERSION the plugin built with */
} loom_role_header;

/* Role names as used in manifests. */
#define LOOM_ROLE_COST_MODEL "cost_model"
#define LOOM_ROLE_PARTITIONER "partitioner"
#define LOOM_ROLE_RANKER "ranker"
#define LOOM_ROLE_INTERLEAVER "interleaver"
#define LOOM_ROLE_MEMORY_TUNER "memory_tuner"

typedef struct loom_plugin_info {
    uint32_t struct_size;          /* sizeof(loom_plugin_info) */
    uint32_t abi_version;          /* LOOM_ABI_VERSION */
    loom_build_signature build;    /* LOOM_BUILD_SIGNATURE_INIT */
    const char *id;                /* must equal the manifest's id */
    const char *version;           /* must equal the manifest's version */

    /* Called once after loading. May set *state; returns LOOM_OK or an
     * error (message in err). Optional (NULL). */
    int (*init)(const loom_host_api *host, void **state, loom_error *err);
    /* Called once at host shutdown with the state from init. Optional. */
    void (*fini)(void *state);

    /* The vtable this plugin provides for `role` (a LOOM_ROLE_* name), or
     * NULL. The returned pointer is static const data. */
    const loom_role_header *(*role)(const char *role);

    /* (appended) The plugin's param table, ended by LOOM_PARAM_END
     * (<loom/params.h>); NULL for a plugin without params. manifest.json's
     * "params" say the same. Read it only when struct_size covers it. */
    const loom_param_def *params;
} loom_plugin_info;

/* The size of the info struct before `params` was appended: the least a
 * host accepts. */
#define LOOM_PLUGIN_INFO_SIZE_V1 ((uint32_t)LOOM_STRUCT_END(loom_plugin_info, role))

typedef const loom_plugin_info *(*loom_plugin_entry_fn)(void);

#define LOOM_PLUGIN_ENTRY_SYMBOL "loom_plugin_entry"

/*
 * LOOM_PLUGIN_DEFINE(name, info) defines, for static info struct `info`:
 *   - loom_static_<name>(): the static registration function, always;
 *   - loom_plugin_entry(): the exported dynamic entry, unless the plugin is
 *     compiled with -DLOOM_PLUGIN_STATIC (several plugins linked into one
 *     binary, e.g. the test suites).
 * Both return the same struct, so a plugin runs the same code either way.
 */
#define LOOM_PLUGIN_DEFINE(name, info)                                         \
    LOOM_EXPORT const loom_plugin_info *loom_static_##name(void);              \
    LOOM_EXPORT const loom_plugin_info *loom_static_##name(void)               \
    {                                                                          \
        return &(info);                                                        \
    }                                                                          \
    LOOM_PLUGIN_DYNAMIC_ENTRY_(name)

#ifdef LOOM_PLUGIN_STATIC
#define LOOM_PLUGIN_DYNAMIC_ENTRY_(name)                                       \
    typedef int loom_static_plugin_##name##_defined_
#else
#define LOOM_PLUGIN_DYNAMIC_ENTRY_(name)                                       \
    LOOM_EXPORT const loom_plugin_info *loom_plugin_entry(void);               \
    LOOM_EXPORT const loom_plugin_info *loom_plugin_entry(void)                \
    {                                                                          \
        return loom_static_##name();                                           \
    }                                                                          \
    typedef int loom_dynamic_plugin_##name##_defined_
#endif

/* Fill an info struct's constant header. */
#define LOOM_PLUGIN_INFO_HEADER                                                \
    sizeof(loom_plugin_info), LOOM_ABI_VERSION, LOOM_BUILD_SIGNATURE_INIT

/* The whole handshake of a plugin with one role and no init/fini: a role()
 * function returning `vtable` for `role_name` (a LOOM_ROLE_* string) and
 * NULL for any other, the info struct with `id` and `version` (equal to
 * manifest.json's) and the param table `params` (NULL when none), and
 * LOOM_PLUGIN_DEFINE(name, ...). `vtable` is a role vtable object whose
 * first member is its loom_role_header. */
#define LOOM_PLUGIN_ONE_ROLE(name, id, version, role_name, vtable, params)     \
    static const loom_role_header *loom_role_of_##name##_(const char *role)  \
    {                                                                          \
        return strcmp(role, role_name) ? NULL : &(vtable).header;              \
    }                                                                          \
    static const loom_plugin_info loom_info_of_##name##_ = {                 \
        LOOM_PLUGIN_INFO_HEADER, id, version, NULL, NULL,                      \
        loom_role_of_##name##_, params};                                       \
    LOOM_PLUGIN_DEFINE(name, loom_info_of_##name##_)

/* The usual start of an instance: the host table and the step's ctx. A
 * plugin's instance struct begins with one (first member), so that
 * loom_instance_new and loom_instance_free serve as its create/destroy
 * plumbing. */
typedef struct loom_instance {
    const loom_host_api *host;
    loom_ctx *ctx;
} loom_instance;

/* A zeroed instance of `bytes` (>= sizeof(loom_instance)) from host->alloc,
 * its loom_instance header filled; NULL with LOOM_ENOMEM in err when out
 * of memory. The caller owns it until loom_instance_free. */
static inline void *loom_instance_new(const loom_host_api *host, loom_ctx *ctx, size_t bytes,
                                      loom_error *err)
{
    loom_instance *in = (loom_instance *)host->alloc(bytes);
    if (!in) {
        host->error(err, LOOM_ENOMEM, "out of memory (%zu bytes)", bytes);
        return NULL;
    }
    memset(in, 0, bytes);
    in->host = host;
    in->ctx = ctx;
    return in;
}

/* Frees an instance from loom_instance_new (NULL allowed); fits a role
 * vtable's destroy member. */
static inline void loom_instance_free(void *self)
{
    loom_instance *in = (loom_instance *)self;
    if (in)
        in->host->free(in);
}

/* An instance as loom_instance_new makes it, with the params of `table`
 * read into it by loom_params_read (the table's offsets are into the
 * instance struct); on failure it is freed again and *self is untouched. */
static inline int loom_instance_create(const loom_host_api *host, loom_ctx *ctx, size_t bytes,
                                       const char *who, const loom_param_def *table,
                                       void **self, loom_error *err)
{
    void *in = loom_instance_new(host, ctx, bytes, err);
    if (!in)
        return LOOM_ENOMEM;
    int rc = loom_params_read(host, ctx, who, table, in, err);
    if (rc != LOOM_OK)
        loom_instance_free(in);
    else
        *self = in;
    return rc;
}

/* Defines `static int fn(host, ctx, plugin_state, self, err)`, a role's
 * create member that makes a `type` instance (its first member a
 * loom_instance) with loom_instance_create and the param table `table`;
 * `who` names the plugin in messages. */
#define LOOM_INSTANCE_CREATE(fn, type, who, table)                             \
    static int fn(const loom_host_api *host, loom_ctx *ctx, void *plugin_state, \
                  void **self, loom_error *err)                                \
    {                                                                          \
        (void)plugin_state;                                                    \
        return loom_instance_create(host, ctx, sizeof(type), who, table, self, \
                                    err);                                      \
    }                                                                          \
    typedef int loom_instance_create_##fn##_defined_

#ifdef __cplusplus
}
#endif
#endif
