/* loader.c - loads a plugin lazily (dlopen, or its static entry) and runs
 * the handshake in a fixed order, each failure with its own message naming
 * the plugin id, the file, the symbol, and the expected and actual values. */
#include <dlfcn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "pipeline.h"
#include "registry.h"

/* Smallest info struct the host reads: up to and including role(). */
#define LOOM_INFO_MIN_BYTES (offsetof(loom_plugin_info, role) + sizeof(void *))

static const uint32_t host_role_version[LOOM_ROLE_ID_COUNT] = {
    LOOM_COST_MODEL_VERSION, LOOM_PARTITIONER_VERSION, LOOM_RANKER_VERSION,
    LOOM_INTERLEAVER_VERSION, LOOM_MEMORY_TUNER_VERSION,
};

static const size_t host_vtable_bytes[LOOM_ROLE_ID_COUNT] = {
    sizeof(loom_cost_model_vtable), sizeof(loom_partitioner_vtable), sizeof(loom_ranker_vtable),
    sizeof(loom_interleaver_vtable), sizeof(loom_memory_tuner_vtable),
};

static const size_t min_vtable_bytes[LOOM_ROLE_ID_COUNT] = {
    offsetof(loom_cost_model_vtable, estimate) + sizeof(void *),
    offsetof(loom_partitioner_vtable, partition) + sizeof(void *),
    offsetof(loom_ranker_vtable, rank) + sizeof(void *),
    offsetof(loom_interleaver_vtable, interleave) + sizeof(void *),
    offsetof(loom_memory_tuner_vtable, tune) + sizeof(void *),
};

size_t loom_role_vtable_bytes(int index)
{
    return index >= 0 && index < LOOM_ROLE_ID_COUNT ? host_vtable_bytes[index] : 0;
}

size_t loom_role_vtable_min_bytes(int index)
{
    return index >= 0 && index < LOOM_ROLE_ID_COUNT ? min_vtable_bytes[index] : 0;
}

const char *loom_role_copy_vtable(int index, const loom_role_header *vt, void *dst)
{
    memset(dst, 0, host_vtable_bytes[index]);
    size_t n = vt->struct_size < host_vtable_bytes[index] ? vt->struct_size
                                                          : host_vtable_bytes[index];
    memcpy(dst, vt, n);
    switch (index) {
    case LOOM_ROLE_ID_COST_MODEL: {
        const loom_cost_model_vtable *v = dst;
        return !v->create ? "create" : !v->destroy ? "destroy" : !v->estimate ? "estimate" : NULL;
    }
    case LOOM_ROLE_ID_PARTITIONER: {
        const loom_partitioner_vtable *v = dst;
        return !v->create ? "create" : !v->destroy ? "destroy" : !v->partition ? "partition" : NULL;
    }
    case LOOM_ROLE_ID_RANKER: {
        const loom_ranker_vtable *v = dst;
        return !v->create ? "create" : !v->destroy ? "destroy" : !v->rank ? "rank" : NULL;
    }
    case LOOM_ROLE_ID_INTERLEAVER: {
        const loom_interleaver_vtable *v = dst;
        return !v->create ? "create" : !v->destroy ? "destroy" : !v->interleave ? "interleave" : NULL;
    }
    default: {
        const loom_memory_tuner_vtable *v = dst;
        return !v->create ? "create" : !v->destroy ? "destroy" : !v->tune ? "tune" : NULL;
    }
    }
}

/* Records a load failure on the plugin and in err. */
static int fail(loom_plugin *p, loom_error *err, int code, const char *fmt, ...) LOOM_PRINTF(4, 5);
static int fail(loom_plugin *p, loom_error *err, int code, const char *fmt, ...)
{
    char msg[LOOM_ERROR_MSG_BYTES];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    loom_set_error(&p->load_error, code, "plugin %s: %s", p->m.id, msg);
    p->state = LOOM_PLUGIN_FAILED;
    if (err)
        *err = p->load_error;
    return code;
}

/* Names every differing build-signature field into buf. */
static int signature_diff(const loom_build_signature *a, const loom_build_signature *b, char *buf,
                          size_t size)
{
    static const char *const names[] = {"pointer_bytes", "size_t_bytes", "float_type",
                                        "double_bytes"};
    const uint32_t av[] = {a->pointer_bytes, a->size_t_bytes, a->float_type, a->double_bytes};
    const uint32_t bv[] = {b->pointer_bytes, b->size_t_bytes, b->float_type, b->double_bytes};
    size_t len = 0;
    int n = 0;
    buf[0] = 0;
    for (int i = 0; i < 4; i++)
        if (av[i] != bv[i] && len < size) {
            len += (size_t)snprintf(buf + len, size - len, "%s%s host %u, plugin %u",
                                    n++ ? "; " : "", names[i], av[i], bv[i]);
        }
    return n;
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
    const char *file = p->m.binary_path;
    loom_plugin_entry_fn entry = NULL;
    if (p->is_static) {
        entry = p->static_entry;
        file = "(linked in)";
    } else {
        void *handle = dlopen(file, RTLD_NOW | RTLD_LOCAL);
        if (!handle) {
            const char *why = dlerror();
            return fail(p, err, LOOM_EPLUGIN, "cannot load %s: %s", file, why ? why : "unknown error");
        }
        dlerror();
        void *sym = dlsym(handle, p->m.entry);
        if (!sym)
            return fail(p, err, LOOM_EPLUGIN, "%s: entry symbol '%s' not found (manifest %s)", file,
                        p->m.entry, p->m.manifest_path);
        memcpy(&entry, &sym, sizeof entry);
    }
    const loom_plugin_info *info = entry ? entry() : NULL;
    if (!info)
        return fail(p, err, LOOM_EPLUGIN, "%s: %s() returned no plugin info", file, p->m.entry);
    if (info->struct_size < LOOM_INFO_MIN_BYTES)
        return fail(p, err, LOOM_EABI,
                    "%s: %s(): info struct is %u bytes, expected at least %zu (struct_size)", file,
                    p->m.entry, info->struct_size, (size_t)LOOM_INFO_MIN_BYTES);
    if (info->abi_version != LOOM_ABI_VERSION)
        return fail(p, err, LOOM_EABI, "%s: %s(): ABI version differs: host ABI %u, plugin ABI %u",
                    file, p->m.entry, LOOM_ABI_VERSION, info->abi_version);
    const loom_build_signature host_sig = LOOM_BUILD_SIGNATURE_INIT;
    char diff[256];
    if (signature_diff(&host_sig, &info->build, diff, sizeof diff))
        return fail(p, err, LOOM_EABI, "%s: %s(): build signature differs: %s", file, p->m.entry,
                    diff);
    if (!info->id || strcmp(info->id, p->m.id))
        return fail(p, err, LOOM_EPLUGIN, "%s: the binary's id is '%s', the manifest %s says '%s'",
                    file, info->id ? info->id : "(null)", p->m.manifest_path, p->m.id);
    if (!info->version || strcmp(info->version, p->m.version))
        return fail(p, err, LOOM_EPLUGIN,
                    "%s: the binary's version is '%s', the manifest %s says '%s'", file,
                    info->version ? info->version : "(null)", p->m.manifest_path, p->m.version);
    int idx = loom_role_index(p->m.role);
    const loom_role_header *vt = info->role ? info->role(p->m.role) : NULL;
    if (idx < 0 || !vt)
        return fail(p, err, LOOM_EPLUGIN, "%s: provides no vtable for role %s (manifest %s)", file,
                    p->m.role, p->m.manifest_path);
    if (vt->role_version > host_role_version[idx])
        return fail(p, err, LOOM_EABI,
                    "%s: %s vtable version %u is newer than the host's %u (upgrade Loom)", file,
                    p->m.role, vt->role_version, host_role_version[idx]);
    if (vt->struct_size < min_vtable_bytes[idx])
        return fail(p, err, LOOM_EABI, "%s: %s vtable is %u bytes, expected at least %zu", file,
                    p->m.role, vt->struct_size, min_vtable_bytes[idx]);
    union {
        loom_cost_model_vtable a;
        loom_partitioner_vtable b;
        loom_ranker_vtable c;
        loom_interleaver_vtable d;
        loom_memory_tuner_vtable e;
    } copy;
    const char *missing = loom_role_copy_vtable(idx, vt, &copy);
    if (missing)
        return fail(p, err, LOOM_EPLUGIN, "%s: %s vtable has no '%s' (a required member)", file,
                    p->m.role, missing);
    p->info = info;
    p->vtable = vt;
    if (info->init) {
        loom_error ie = {0};
        void *state = NULL;
        int rc = info->init(loom_host_table(), &state, &ie);
        if (rc != LOOM_OK)
            return fail(p, err, LOOM_EPLUGIN, "init failed (%s): %s", loom_status_name(rc),
                        ie.message[0] ? ie.message : "no message");
        p->plugin_state = state;
    }
    p->state = LOOM_PLUGIN_LOADED;
    return LOOM_OK;
}
