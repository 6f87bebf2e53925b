/* status.c - the error helpers and splitmix64 (status names are
 * loom_status_name() in <loom/common.h>). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "base.h"

/* Length of the well-formed UTF-8 sequence at p that is not a C1 control
 * (U+0080..U+009F), or 0. */
static size_t utf8_len(const unsigned char *p)
{
    size_t n = p[0] >= 0xf5 ? 0 : p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 ? 2 : 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    if (n == 2 && p[0] == 0xc2 && p[1] < 0xa0)
        return 0; /* C1 control */
    if (n == 3 && ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0)))
        return 0; /* overlong or surrogate */
    if (n == 4 && ((p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] >= 0x90)))
        return 0; /* overlong or past U+10FFFF */
    return n;
}

void loom_error_sanitize(loom_error *err)
{
    if (!err)
        return;
    const unsigned char *m = (const unsigned char *)err->message;
    size_t i = 0;
    while (m[i] && m[i] >= 0x20 && m[i] < 0x7f)
        i++;
    if (!m[i])
        return; /* the common case: plain ASCII */
    char out[LOOM_ERROR_MSG_BYTES];
    size_t n = 0;
    memcpy(out, m, i);
    n = i;
    while (m[i] && n + 5 < sizeof out) {
        unsigned char c = m[i];
        size_t u = c >= 0x80 ? utf8_len(m + i) : 0;
        if (c >= 0x20 && c < 0x7f) {
            out[n++] = (char)c;
            i++;
        } else if (u) {
            memcpy(out + n, m + i, u);
            n += u;
            i += u;
        } else {
            const char *e = c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : NULL;
            if (e)
                memcpy(out + n, e, 2);
            else
                snprintf(out + n, 5, "\\x%02x", c);
            n += e ? 2 : 4;
            i++;
        }
    }
    out[n] = 0;
    memcpy(err->message, out, n + 1);
}

int loom_set_error(loom_error *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        err->code = code;
        loom_error_sanitize(err);
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
    loom_error_sanitize(err); /* a plugin may have filled it directly */
}

uint64_t loom_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
