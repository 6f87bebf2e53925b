/* status.c - the error helpers and splitmix64 (status names are
 * loom_status_name() in <loom/common.h>). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "base.h"

int loom_set_error(loom_error *err, int code, const char *fmt, ...)
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

void loom_error_prefix_plugin(loom_error *err, const char *plugin_id)
{
    if (!err)
        return;
    err->message[sizeof err->message - 1] = 0; /* a plugin may have filled it all */
    char tmp[LOOM_ERROR_MSG_BYTES];
    size_t n = (size_t)snprintf(tmp, sizeof tmp, "plugin %.120s: ", plugin_id);
    if (n >= sizeof tmp)
        n = sizeof tmp - 1;
    size_t rest = strlen(err->message);
    if (rest > sizeof tmp - 1 - n)
        rest = sizeof tmp - 1 - n;
    memcpy(tmp + n, err->message, rest);
    tmp[n + rest] = 0;
    memcpy(err->message, tmp, sizeof tmp);
}

uint64_t loom_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
