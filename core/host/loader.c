/* loader.c - lazy plugin loading: the binary's ELF structure, dlopen, the
 * entry symbol (a function of the plugin's own object), the handshake
 * (struct size, ABI, build signature, id/version), role vtable checks and
 * init(). */
#define _GNU_SOURCE /* dladdr1, dlinfo */
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ctx.h"
#include "registry_priv.h"

/* A required function-pointer member of a role vtable. */
typedef struct member_desc {
    const char *name;
    size_t offset;
} member_desc;

/* What the host knows about one role's vtable. */
typedef struct role_desc {
    uint32_t version;  /* LOOM_<ROLE>_VERSION of the host */
    uint32_t min_version; /* the oldest version whose data layout it reads */
    size_t bytes;      /* host sizeof */
    size_t min_bytes;  /* end of the last required member */
    member_desc required[3];
} role_desc;

#define MEMBER_END(type, m) (offsetof(type, m) + sizeof(((type *)0)->m))
#define REQ(type, m) { #m, offsetof(type, m) }
#define ROLE(type, ver, min, last)                                             \
    { ver, min, sizeof(type), MEMBER_END(type, last),                          \
      { REQ(type, create), REQ(type, destroy), REQ(type, last) } }

/* In enum loom_role_id order. */
static const role_desc roles[5] = {
    ROLE(loom_cost_model_vtable, LOOM_COST_MODEL_VERSION, 1, estimate),
    ROLE(loom_partitioner_vtable, LOOM_PARTITIONER_VERSION, 1, partition),
    ROLE(loom_ranker_vtable, LOOM_RANKER_VERSION, 1, rank),
    ROLE(loom_interleaver_vtable, LOOM_INTERLEAVER_VERSION, 1, interleave),
    /* 2: four memory policies per layer entry (offload, Loom 0.4) */
    ROLE(loom_memory_tuner_vtable, LOOM_MEMORY_TUNER_VERSION, 2, tune),
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

/* Checks that `path` is a whole ELF shared object for this machine before
 * dlopen maps it: a truncated file would be mapped past its end and the
 * first touch of a missing page would kill the process (SIGBUS). Fills
 * why (a phrase) and returns -1 when it is not; a file that cannot be
 * opened is left to dlopen's own message. */
static int elf_check(const char *path, char *why, size_t size)
{
    /* O_NONBLOCK: a FIFO in the binary's place must not block the open */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return 0; /* missing or unreadable: dlopen says which */
    }
    struct stat st;
    ElfW(Ehdr) eh;
    int rc = -1;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(why, size, "not a regular file");
    } else if (fread(&eh, 1, sizeof eh, f) != sizeof eh ||
               memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
        snprintf(why, size, "not an ELF file (%lld bytes)", (long long)st.st_size);
    } else if (eh.e_ident[EI_CLASS] != (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) ||
               eh.e_type != ET_DYN || eh.e_phentsize != sizeof(ElfW(Phdr))) {
        snprintf(why, size, "not a shared object of this machine's class (ELF class %u, "
                 "type %u)", (unsigned)eh.e_ident[EI_CLASS], (unsigned)eh.e_type);
    } else if (eh.e_phnum == 0 ||
               (unsigned long long)eh.e_phoff + (unsigned long long)eh.e_phnum * sizeof(ElfW(Phdr)) >
                   (unsigned long long)st.st_size) {
        snprintf(why, size, "truncated: its program headers end past the file's %lld bytes",
                 (long long)st.st_size);
    } else if (fseek(f, (long)eh.e_phoff, SEEK_SET) != 0) {
        snprintf(why, size, "cannot read its program headers");
    } else {
        rc = 0;
        for (unsigned i = 0; i < eh.e_phnum && rc == 0; i++) {
            ElfW(Phdr) ph;
            if (fread(&ph, 1, sizeof ph, f) != sizeof ph) {
                snprintf(why, size, "cannot read its program headers");
                rc = -1;
            } else if (ph.p_type == PT_LOAD &&
                       (unsigned long long)ph.p_offset + ph.p_filesz >
                           (unsigned long long)st.st_size) {
                snprintf(why, size, "truncated: segment %u needs bytes up to %llu, the file has "
                         "%lld", i, (unsigned long long)ph.p_offset + ph.p_filesz,
                         (long long)st.st_size);
                rc = -1;
            }
        }
    }
    fclose(f);
    return rc;
}

/* Checks that the entry symbol `sym` is a function defined in the plugin's
 * own object (dlsym also searches the libraries the plugin depends on, so
 * "abort" would resolve in libc). Fills why and returns -1 when not. */
static int entry_check(void *handle, void *sym, char *why, size_t size)
{
    struct link_map *lm = NULL;
    Dl_info di;
    const ElfW(Sym) *es = NULL;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || !lm) {
        snprintf(why, size, "cannot inspect the loaded object");
        return -1;
    }
    if (!dladdr1(sym, &di, (void **)&es, RTLD_DL_SYMENT) || !di.dli_fname) {
        snprintf(why, size, "it is not in any loaded object");
        return -1;
    }
    if (strcmp(di.dli_fname, lm->l_name) != 0) {
        snprintf(why, size, "it is defined in %.200s, not in the plugin", di.dli_fname);
        return -1;
    }
    if (es && ELF64_ST_TYPE(es->st_info) != STT_FUNC) {
        snprintf(why, size, "it is not a function (ELF symbol type %u)",
                 (unsigned)ELF64_ST_TYPE(es->st_info));
        return -1;
    }
    return 0;
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
    char why_not[320];
    if (elf_check(m->binary_path, why_not, sizeof why_not) != 0)
        return fail(p, err, LOOM_EPLUGIN, "%s: %s: cannot load: %s", m->id, file, why_not);
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
    if (entry_check(handle, sym, why_not, sizeof why_not) != 0)
        return fail(p, err, LOOM_EPLUGIN, "%s: %s: entry symbol %s: %s", m->id, file, m->entry,
                    why_not);
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
    if (vt->role_version < rd->min_version)
        return fail(p, err, LOOM_EABI,
                    "%s: %s: %s vtable has role_version %u, host needs at least %u "
                    "(built for an older SDK whose layer options it would misread; rebuild it)",
                    m->id, file, m->role, (unsigned)vt->role_version,
                    (unsigned)rd->min_version);
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
