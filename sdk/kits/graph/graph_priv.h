/* graph_priv.h - what the graph kit's sources share (not installed). */
#ifndef LOOM_KITS_GRAPH_PRIV_H
#define LOOM_KITS_GRAPH_PRIV_H

#include <stdarg.h>
#include <stdio.h>
#include <loom/common.h>

/* Stores code and the formatted message in err (when non-NULL); returns
 * code. */
static inline int gkit_set_error(loom_error *err, int code, const char *fmt, ...)
    LOOM_PRINTF(3, 4);
static inline int gkit_set_error(loom_error *err, int code, const char *fmt, ...)
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

#endif
