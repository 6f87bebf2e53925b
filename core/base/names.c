/* names.c - case-insensitive names, name lists, message prefixes, spec
 * files and user-given names: helpers every input loader shares. */
#include <stdio.h>
#include <string.h>
#include "base.h"
#include <loom/sys/json.h>

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

int loom_load_spec_json(const char *what, const char *spec, const char *const *presets,
                        cJSON **root, loom_error *err)
{
    char list[512];
    size_t n = strlen(spec);
    *root = NULL;
    loom_join_names(presets, list, sizeof list);
    if (!strchr(spec, '/') && !(n > 5 && strcmp(spec + n - 5, ".json") == 0)) {
        FILE *f = fopen(spec, "rb");
        if (!f)
            return loom_set_error(err, LOOM_ENOTFOUND,
                                  "%s \"%.200s\": expected a %s preset (%s) or a path to a "
                                  "%s.json, found neither", what, spec, what, list, what);
        fclose(f);
    }
    int rc = loom_json_load(spec, root, err);
    if (rc == LOOM_EIO && err) {
        char msg[LOOM_ERROR_MSG_BYTES];
        snprintf(msg, sizeof msg, "%s", err->message);
        return loom_set_error(err, rc, "%.250s (%s presets: %s)", msg, what, list);
    }
    return rc;
}

const char *loom_json_describe(const cJSON *item, char *buf, size_t size)
{
    if (item && cJSON_IsNumber(item))
        snprintf(buf, size, "%.15g", item->valuedouble);
    else if (item && cJSON_IsString(item) && item->valuestring)
        snprintf(buf, size, "\"%.60s%s\"", item->valuestring,
                 strlen(item->valuestring) > 60 ? "..." : "");
    else
        snprintf(buf, size, "%s", loom_json_type_name(item));
    return buf;
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
    return loom_set_error(err, LOOM_EINVAL,
                          "%s: %s: expected a name of 1 to 63 letters, digits, '_', '-' "
                          "or '.', found \"%.64s%s\"", file, path, name, n > 64 ? "..." : "");
}
