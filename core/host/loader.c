/* loader.c - lazy plugin loading: dlopen, the handshake (struct size, ABI,
 * build signature, id/version), role vtable checks and init(). */
#include <dlfcn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "ctx.h"
#include <loom/sys/registry.h>

/* A required function-pointer member of a role vtable. */
typedef struct member_desc {
    const char *name;
    size_t offset;
} member_desc;

/* What the host knows about one role's vtable. */
typedef struct role_desc {
    uint32_t version;  /* LOOM_<ROLE>_VERSION of the host */
    size_t bytes;      /* host sizeof */
    size_t min_bytes;  /* end of the last required member */
    member_desc required[3];
} role_desc;

#define MEMBER_END(type, m) (offsetof(type, m) + sizeof(((type *)0)->m))
#define REQ(type, m) { #m, offsetof(type, m) }
#define ROLE(type, ver, last)                                                  \
    { ver, sizeof(type), MEMBER_END(type, last),                               \
      { REQ(type, create), REQ(type, destroy), REQ(type, last) } }

/* In enum loom_role_id order. */
static const role_desc roles[5] = {
    ROLE(loom_cost_model_vtable, LOOM_COST_MODEL_VERSION, estimate),
    ROLE(loom_partitioner_vtable, LOOM_PARTITIONER_VERSION, partition),
    ROLE(loom_ranker_vtable, LOOM_RANKER_VERSION, rank),
    ROLE(loom_interleaver_vtable, LOOM_INTERLEAVER_VERSION, interleave),
    ROLE(loom_memory_tuner_vtable, LOOM_MEMORY_TUNER_VERSION, tune),
};

/* The smallest info struct the host accepts: every v1 member. */
#define LOOM_PLUGIN_INFO_MIN_BYTES MEMBER_END(loom_plugin_info, role)

size_t loom_role_vtable_bytes(int index)
{
    return (index >= 0 && index < 5) ? roles[index].bytes : 0;
}

size_t loom_role_vtable_min_bytes(int index)
{
    return (index >= 0 && index < 5) ? roles[index].min_bytes : 0;
}

const char *loom_role_copy_vtable(int index, const loom_role_header *vt, void *dst)
{
    if (index < 0 || index >= 5)
        return "header";
    const role_desc *rd = &roles[index];
    size_t n = vt->struct_size < rd->bytes ? vt->struct_size : rd->bytes;
    memset(dst, 0, rd->bytes);
    memcpy(dst, vt, n);
    for (int k = 0; k < 3; k++) {
        void (*fn)(void) = NULL;
        memcpy(&fn, (const char *)dst + rd->required[k].offset, sizeof fn);
        if (!fn)
            return rd->required[k].name;
    }
    return NULL;
}

/* Records a load failure in the plugin and in err; returns code. */
static int fail(loom_plugin *p, loom_error *err, int code, const char *fmt, ...)
    LOOM_PRINTF(4, 5);
static int fail(loom_plugin *p, loom_error *err, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->load_error.message, sizeof p->load_error.message, fmt, ap);
    va_end(ap);
    p->load_error.code = code;
    p->state = LOOM_PLUGIN_FAILED;
    if (err)
        *err = p->load_error;
    return code;
}

/* Finds the entry function: dlopen + dlsym, or the static registration. */
static int find_entry(loom_plugin *p, const char *file, loom_plugin_entry_fn *out,
                      loom_error *err)
{
    const loom_plugin_manifest *m = &p->m;
    if (p->is_static) {
        *out = p->static_entry;
        return LOOM_OK;
    }
    dlerror();
    void *handle = dlopen(m->binary_path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *why = dlerror();
        size_t n = strlen(file);
        /* dlerror() usually repeats the file name; keep the rest. */
        if (why && !strncmp(why, file, n) && !strncmp(why + n, ": ", 2))
            why += n + 2;
        return fail(p, err, LOOM_EPLUGIN, "%s: %s: cannot load: %s", m->id, file,
                    why ? why : "unknown dlopen error");
    }
    dlerror();
    void *sym = dlsym(handle, m->entry);
    if (!sym)
        return fail(p, err, LOOM_EPLUGIN,
                    "%s: %s: entry symbol %s not found (expected a function "
                    "returning const loom_plugin_info *)",
                    m->id, file, m->entry);
    /* POSIX guarantees data and function pointers convert through dlsym. */
    memcpy(out, &sym, sizeof *out);
    return LOOM_OK;
}

/* Compares the plugin's build signature with the host's, naming every
 * differing field. */
static int check_build(loom_plugin *p, const char *file,
                       const loom_plugin_info *info, loom_error *err)
{
    static const loom_build_signature host = LOOM_BUILD_SIGNATURE_INIT;
    const loom_build_signature *b = &info->build;
    char diff[320];
    size_t n = 0;
    diff[0] = 0;
#define FIELD(f)                                                               \
    if (b->f != host.f && n < sizeof diff)                                     \
        n += (size_t)snprintf(diff + n, sizeof diff - n,                       \
                              "%s" #f " host %u, plugin %u", n ? "; " : "",   \
                              (unsigned)host.f, (unsigned)b->f);
    FIELD(pointer_bytes)
    FIELD(size_t_bytes)
    FIELD(float_type)
    FIELD(double_bytes)
#undef FIELD
    if (n)
        return fail(p, err, LOOM_EABI, "%s: %s: %s: build signature mismatch: %s",
                    p->m.id, file, p->m.entry, diff);
    return LOOM_OK;
}

/* Checks the vtable the plugin provides for its manifest role. */
static int check_vtable(loom_plugin *p, const char *file,
                        const loom_plugin_info *info, loom_error *err)
{
    const loom_plugin_manifest *m = &p->m;
    int ri = loom_role_index(m->role);
    if (ri < 0)
        return fail(p, err, LOOM_EPLUGIN, "%s: unknown role \"%s\"", m->id, m->role);
    const role_desc *rd = &roles[ri];
    const loom_role_header *vt = info->role ? info->role(m->role) : NULL;
    if (!vt)
        return fail(p, err, LOOM_EPLUGIN,
                    "%s: %s: %s: role(\"%s\") returned no vtable, but the manifest "
                    "declares role %s",
                    m->id, file, m->entry, m->role, m->role);
    if (vt->role_version > rd->version)
        return fail(p, err, LOOM_EABI,
                    "%s: %s: %s vtable has role_version %u, host supports up to %u "
                    "(plugin newer than host)",
                    m->id, file, m->role, (unsigned)vt->role_version,
                    (unsigned)rd->version);
    if (vt->role_version != m->role_version)
        return fail(p, err, LOOM_EPLUGIN,
                    "%s: %s: %s vtable has role_version %u, manifest declares %u",
                    m->id, file, m->role, (unsigned)vt->role_version,
                    (unsigned)m->role_version);
    if (vt->struct_size < rd->min_bytes)
        return fail(p, err, LOOM_EABI,
                    "%s: %s: %s vtable struct_size is %u bytes, host needs at "
                    "least %zu",
                    m->id, file, m->role, (unsigned)vt->struct_size, rd->min_bytes);
    for (int k = 0; k < 3; k++) {
        void (*fn)(void) = NULL;
        memcpy(&fn, (const char *)vt + rd->required[k].offset, sizeof fn);
        if (!fn)
            return fail(p, err, LOOM_EPLUGIN,
                        "%s: %s: %s vtable member %s is NULL (required)", m->id,
                        file, m->role, rd->required[k].name);
    }
    p->vtable = vt;
    return LOOM_OK;
}

/* Runs every handshake check on info, in the documented order. */
static int handshake(loom_plugin *p, const char *file, const loom_plugin_info *info,
                     loom_error *err)
{
    const loom_plugin_manifest *m = &p->m;
    if (!info)
        return fail(p, err, LOOM_EPLUGIN, "%s: %s: %s returned NULL", m->id, file,
                    m->entry);
    if (info->struct_size < LOOM_PLUGIN_INFO_MIN_BYTES)
        return fail(p, err, LOOM_EABI,
                    "%s: %s: %s: info struct_size is %u bytes, host needs at least %zu",
                    m->id, file, m->entry, (unsigned)info->struct_size,
                    (size_t)LOOM_PLUGIN_INFO_MIN_BYTES);
    if (info->abi_version != LOOM_ABI_VERSION)
        return fail(p, err, LOOM_EABI, "%s: %s: %s: ABI mismatch: host ABI %u, plugin ABI %u",
                    m->id, file, m->entry, LOOM_ABI_VERSION,
                    (unsigned)info->abi_version);
    int rc = check_build(p, file, info, err);
    if (rc)
        return rc;
    if (!info->id || strcmp(info->id, m->id))
        return fail(p, err, LOOM_EPLUGIN,
                    "%s: %s: %s: binary reports id \"%s\", manifest %s declares \"%s\"",
                    m->id, file, m->entry, info->id ? info->id : "(null)",
                    m->manifest_path, m->id);
    if (!info->version || strcmp(info->version, m->version))
        return fail(p, err, LOOM_EPLUGIN,
                    "%s: %s: %s: binary reports version \"%s\", manifest %s declares \"%s\"",
                    m->id, file, m->entry, info->version ? info->version : "(null)",
                    m->manifest_path, m->version);
    return check_vtable(p, file, info, err);
}

int loom_plugin_load(loom_registry *reg, loom_plugin *p, loom_error *err)
{
    (void)reg;
    if (p->state == LOOM_PLUGIN_LOADED)
        return LOOM_OK;
    if (p->state == LOOM_PLUGIN_FAILED) {
        if (err)
            *err = p->load_error;
        return p->load_error.code;
    }
    const loom_plugin_manifest *m = &p->m;
    const char *file = p->is_static ? "(static)" : m->binary_path;
    if (m->abi != (int)LOOM_ABI_VERSION)
        return fail(p, err, LOOM_EABI,
                    "%s: %s: abi: host ABI %u, plugin ABI %d (declared in the manifest)",
                    m->id, m->manifest_path, LOOM_ABI_VERSION, m->abi);
    loom_plugin_entry_fn entry = NULL;
    int rc = find_entry(p, file, &entry, err);
    if (rc)
        return rc;
    const loom_plugin_info *info = entry();
    if ((rc = handshake(p, file, info, err)))
        return rc;
    void *state = NULL;
    if (info->init) {
        loom_error ierr = {0};
        rc = info->init(loom_host_table(), &state, &ierr);
        if (rc != LOOM_OK) {
            if (!ierr.message[0])
                snprintf(ierr.message, sizeof ierr.message, "init failed with %s",
                         loom_status_name(rc));
            loom_error_prefix_plugin(&ierr, m->id);
            return fail(p, err, LOOM_EPLUGIN, "%s", ierr.message);
        }
    }
    p->info = info;
    p->plugin_state = state;
    p->state = LOOM_PLUGIN_LOADED;
    memset(&p->load_error, 0, sizeof p->load_error);
    return LOOM_OK;
}
