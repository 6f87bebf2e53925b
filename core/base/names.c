/* names.c - case-insensitive names, name lists, message prefixes,
 * escaping and user-given names: helpers every input loader shares. */
#include <stdio.h>
#include <string.h>
#include "base.h"

int loom_name_eq(const char *a, const char *b)
{
    for (;; a++, b++) {
        char x = *a, y = *b;
        if (x >= 'A' && x <= 'Z')
            x = (char)(x - 'A' + 'a');
        if (y >= 'A' && y <= 'Z')
            y = (char)(y - 'A' + 'a');
        if (x != y)
            return 0;
        if (!x)
            return 1;
    }
}

void loom_join_names(const char *const *names, char *buf, size_t size)
{
    size_t n = 0;
    if (!size)
        return;
    buf[0] = 0;
    for (int i = 0; names[i] && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "%s%s", i ? ", " : "", names[i]);
}

int loom_error_prefix(loom_error *err, int code, const char *prefix)
{
    char msg[LOOM_ERROR_MSG_BYTES];
    snprintf(msg, sizeof msg, "%s", err ? err->message : "");
    return loom_set_error(err, code, "%.200s: %s", prefix, msg);
}


/* The escaped form of byte c into e (at most 4 bytes); returns its length. */
static size_t escape_byte(unsigned char c, char *e)
{
    static const char hex[] = "0123456789abcdef";
    if (c == '"' || c == '\\') {
        e[0] = '\\';
        e[1] = (char)c;
        return 2;
    }
    if (c >= 0x20 && c < 0x7f) {
        e[0] = (char)c;
        return 1;
    }
    e[0] = '\\';
    if (c == '\n' || c == '\r' || c == '\t') {
        e[1] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
        return 2;
    }
    e[1] = 'x';
    e[2] = hex[c >> 4];
    e[3] = hex[c & 15];
    return 4;
}

const char *loom_escape(const char *s, char *buf, size_t size)
{
    if (!size)
        return buf;
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    char e[4];
    size_t full = 0;
    for (const unsigned char *q = p; *q; q++)
        full += escape_byte(*q, e);
    /* room for the text, or for as much as fits before "..." */
    size_t room = full < size ? full : (size >= 4 ? size - 4 : 0);
    size_t n = 0;
    for (; *p; p++) {
        size_t k = escape_byte(*p, e);
        if (n + k > room)
            break;
        memcpy(buf + n, e, k);
        n += k;
    }
    if (full >= size && size >= 4) {
        memcpy(buf + n, "...", 3);
        n += 3;
    }
    buf[n] = 0;
    return buf;
}


int loom_check_text(const char *file, const char *path, const char *text, loom_error *err)
{
    for (const unsigned char *p = (const unsigned char *)(text ? text : ""); *p; p++)
        if (*p < 0x20 || *p == 0x7f) {
            char shown[80];
            return loom_set_error(err, LOOM_EINVAL,
                                  "%s: %s: expected text without control characters "
                                  "(newlines, tabs, escape sequences), found \"%s\"", file,
                                  path, loom_escape(text, shown, sizeof shown));
        }
    return LOOM_OK;
}

int loom_check_name(const char *file, const char *path, const char *name,
                    loom_error *err)
{
    size_t n = strlen(name);
    int ok = n >= 1 && n <= 63;
    for (size_t i = 0; ok && i < n; i++) {
        char c = name[i];
        ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
             (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
    }
    if (ok)
        return LOOM_OK;
    char shown[80];
    return loom_set_error(err, LOOM_EINVAL,
                          "%s: %s: expected a name of 1 to 63 letters, digits, '_', '-' "
                          "or '.', found \"%s\"", file, path,
                          loom_escape(name, shown, sizeof shown));
}
