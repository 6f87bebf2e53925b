/*
 * loom/common.h - status codes, the error object, ABI version and build
 * signature shared by the core and every plugin.
 *
 * Ownership: loom_error is always caller-provided storage. Nothing in this
 * header allocates.
 */
#ifndef LOOM_COMMON_H
#define LOOM_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ABI version of the plugin interface. Bumped only on incompatible changes;
 * appending members to size-prefixed structs does not bump it. */
#define LOOM_ABI_VERSION 1u

/* Project version (the core library and the CLI). */
#define LOOM_VERSION_MAJOR 0
#define LOOM_VERSION_MINOR 4
#define LOOM_VERSION_PATCH 0
#define LOOM_VERSION_STRING "0.4.0"

#if defined(__GNUC__) || defined(__clang__)
#define LOOM_EXPORT __attribute__((visibility("default")))
#define LOOM_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define LOOM_EXPORT
#define LOOM_PRINTF(fmt, args)
#endif

/* Status codes returned by every fallible function in the SDK and core. */
enum loom_status {
    LOOM_OK = 0,
    LOOM_EINVAL = -1,      /* bad argument or bad input file */
    LOOM_ENOMEM = -2,      /* allocation failed */
    LOOM_EABI = -3,        /* ABI / build signature / struct size mismatch */
    LOOM_ENOTFOUND = -4,   /* plugin, symbol, file or service not found */
    LOOM_EINFEASIBLE = -5, /* no plan satisfies the constraints (memory cap) */
    LOOM_DECLINED = -6,    /* a plugin declines this input; the host moves on */
    LOOM_EPLUGIN = -7,     /* a plugin failed; the message names its id */
    LOOM_EDEADLOCK = -8,   /* a schedule cannot run: blocked stages named */
    LOOM_EIO = -9,         /* reading or writing a file failed */
    LOOM_ETIMEOUT = -10,   /* a time budget ran out before any result */
    LOOM_EINTERRUPTED = -11 /* stopped by a signal */
};

/* Name of a status code, e.g. "LOOM_EABI"; "LOOM_E?" for an unknown code.
 * Never NULL. Header-only, so plugins (linked without the core) and the
 * core use the same function. */
static inline const char *loom_status_name(int status)
{
    switch (status) {
    case LOOM_OK: return "LOOM_OK";
    case LOOM_EINVAL: return "LOOM_EINVAL";
    case LOOM_ENOMEM: return "LOOM_ENOMEM";
    case LOOM_EABI: return "LOOM_EABI";
    case LOOM_ENOTFOUND: return "LOOM_ENOTFOUND";
    case LOOM_EINFEASIBLE: return "LOOM_EINFEASIBLE";
    case LOOM_DECLINED: return "LOOM_DECLINED";
    case LOOM_EPLUGIN: return "LOOM_EPLUGIN";
    case LOOM_EDEADLOCK: return "LOOM_EDEADLOCK";
    case LOOM_EIO: return "LOOM_EIO";
    case LOOM_ETIMEOUT: return "LOOM_ETIMEOUT";
    case LOOM_EINTERRUPTED: return "LOOM_EINTERRUPTED";
    default: return "LOOM_E?";
    }
}

#define LOOM_ERROR_MSG_BYTES 512

/* Caller-provided error object. A failing call stores its status in `code`
 * and a human-readable message (file, JSON path, expected vs found, or the
 * plugin id) in `message`. Callers zero it before use; callees overwrite. */
typedef struct loom_error {
    int code;
    char message[LOOM_ERROR_MSG_BYTES];
} loom_error;

/* Fills `err` (NULL allowed: nothing is written) with `code` and the
 * message `fmt` formats from `ap`, truncated to LOOM_ERROR_MSG_BYTES - 1
 * bytes; returns `code`. Header-only: the one error formatter of plugins,
 * kits and algorithms that have no host table at hand (with one, call
 * host->error). */
static inline int loom_error_vformat(loom_error *err, int code, const char *fmt, va_list ap)
{
    if (err) {
        err->code = code;
        vsnprintf(err->message, sizeof err->message, fmt, ap);
    }
    return code;
}

/* loom_error_vformat with the arguments inline, so that
 * `return loom_error_format(err, LOOM_EINVAL, "...", ...)` works. */
static inline LOOM_PRINTF(3, 4) int loom_error_format(loom_error *err, int code,
                                                      const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    loom_error_vformat(err, code, fmt, ap);
    va_end(ap);
    return code;
}

/* Size-prefixed structs. Every struct that crosses the plugin boundary and
 * may grow starts with `uint32_t struct_size`: sizeof the struct as the side
 * that allocated it was built (set it with the struct's LOOM_*_INIT macro or
 * loom_*_init() function). Members are only ever appended; a reader or
 * writer touches a member only when struct_size covers it. */
#define LOOM_STRUCT_END(type, member)                                          \
    (offsetof(type, member) + sizeof(((type *)0)->member))
#define LOOM_STRUCT_HAS(ptr, type, member)                                     \
    ((size_t)(ptr)->struct_size >= LOOM_STRUCT_END(type, member))

/* Floating point type tag in the build signature. */
#define LOOM_FLOAT_IEEE754_DOUBLE 1u

/* Build signature: the facts a plugin and the host must agree on. */
typedef struct loom_build_signature {
    uint32_t pointer_bytes; /* sizeof(void *) */
    uint32_t size_t_bytes;  /* sizeof(size_t) */
    uint32_t float_type;    /* LOOM_FLOAT_IEEE754_DOUBLE */
    uint32_t double_bytes;  /* sizeof(double) */
} loom_build_signature;

#define LOOM_BUILD_SIGNATURE_INIT                                              \
    { (uint32_t)sizeof(void *), (uint32_t)sizeof(size_t),                      \
      LOOM_FLOAT_IEEE754_DOUBLE, (uint32_t)sizeof(double) }

#ifdef __cplusplus
}
#endif
#endif
