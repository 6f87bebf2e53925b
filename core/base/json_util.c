/* json_util.c - reading JSON files with precise errors (file, JSON path,
 * line/column, expected vs found), spec files (a preset name or a path)
 * and descriptions of JSON values for messages. */
#include <loom/sys/json.h>
#include <loom/sys/util.h>
#include "base.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

/* Name used for the input in messages when the caller gives none. */
static const char *file_name(const char *file)
{
    return (file && *file) ? file : "<input>";
}

/* What a file that is not a regular file is, for messages. */
static const char *file_kind(mode_t mode)
{
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISFIFO(mode))
        return "a FIFO (named pipe)";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISSOCK(mode))
        return "a socket";
    return "a special file";
}

int loom_open_input(const char *path, int *fd_out, loom_error *err)
{
    *fd_out = -1;
    if (!path || !*path)
        return loom_set_error(err, LOOM_EIO, "%s: cannot open: no file name given",
                              file_name(path));
    /* O_NONBLOCK: opening a FIFO must not wait for a writer */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        char near[4200];
        if (e == ENOENT && loom_closest_file(path, near, sizeof near))
            return loom_set_error(err, LOOM_EIO, "%s: cannot open: %s; did you mean %.300s?",
                                  file_name(path), strerror(e), near);
        return loom_set_error(err, LOOM_EIO, "%s: cannot open: %s", file_name(path),
                              strerror(e));
    }
    struct stat st;
    int rc = LOOM_OK;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        rc = loom_set_error(err, LOOM_EIO, "%s: cannot read: %s", file_name(path),
                            strerror(e));
    } else if (!S_ISREG(st.st_mode)) {
        rc = loom_set_error(err, LOOM_EIO, "%s: cannot read: expected a regular file, found %s",
                            file_name(path), file_kind(st.st_mode));
    } else {
        int flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
            int e = errno;
            rc = loom_set_error(err, LOOM_EIO, "%s: cannot read: %s", file_name(path),
                                strerror(e));
        }
    }
    if (rc != LOOM_OK) {
        close(fd);
        return rc;
    }
    *fd_out = fd;
    return LOOM_OK;
}

int loom_read_file(const char *path, char **text_out, size_t *len_out,
                   loom_error *err)
{
    *text_out = NULL;
    if (len_out)
        *len_out = 0;
    int fd = -1;
    int rc = loom_open_input(path, &fd, err);
    if (rc != LOOM_OK)
        return rc;
    struct stat st;
    size_t cap = 4096, len = 0;
    /* Regular files: room for the contents, an EOF probe and the NUL. */
    if (fstat(fd, &st) == 0 && st.st_size > 0) {
        if ((uint64_t)st.st_size > LOOM_MAX_INPUT_BYTES) {
            close(fd);
            return loom_set_error(err, LOOM_EINVAL,
                                  "%s: expected at most %u bytes, found %llu bytes",
                                  file_name(path), LOOM_MAX_INPUT_BYTES,
                                  (unsigned long long)st.st_size);
        }
        cap = (size_t)st.st_size + 2;
    }
    char *buf = malloc(cap);
    if (!buf) {
        close(fd);
        return loom_set_error(err, LOOM_ENOMEM, "%s: out of memory reading file",
                              file_name(path));
    }
    for (;;) {
        if (cap - len < 2) {
            size_t ncap = cap * 2;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                close(fd);
                return loom_set_error(err, LOOM_ENOMEM,
                                      "%s: out of memory reading file",
                                      file_name(path));
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t n = read(fd, buf + len, cap - len - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            free(buf);
            close(fd);
            return loom_set_error(err, LOOM_EIO, "%s: read error: %s",
                                  file_name(path), strerror(e));
        }
        len += (size_t)n;
        if (len > LOOM_MAX_INPUT_BYTES) {
            free(buf);
            close(fd);
            return loom_set_error(err, LOOM_EINVAL,
                                  "%s: expected at most %u bytes, found more",
                                  file_name(path), LOOM_MAX_INPUT_BYTES);
        }
        if (n == 0)
            break;
    }
    close(fd);
    buf[len] = 0;
    *text_out = buf;
    if (len_out)
        *len_out = len;
    return LOOM_OK;
}

/* Converts a byte offset in text into a 1-based line and column. */
static void line_col(const char *text, size_t pos, int *line, int *col)
{
    int l = 1, c = 1;
    for (size_t i = 0; i < pos; i++) {
        if (text[i] == '\n') {
            l++;
            c = 1;
        } else {
            c++;
        }
    }
    *line = l;
    *col = c;
}

/* Describes the byte at `pos` for a syntax error message. */
static void describe_byte(const char *text, size_t len, size_t pos, char *buf,
                          size_t size)
{
    if (pos >= len) {
        snprintf(buf, size, "unexpected end of input");
        return;
    }
    unsigned char ch = (unsigned char)text[pos];
    if (ch >= 0x20 && ch < 0x7f)
        snprintf(buf, size, "unexpected '%c'", ch);
    else
        snprintf(buf, size, "unexpected byte 0x%02x", ch);
}

/* Writes a short literal description of a value ("1.5", "\"abc\"", "an
 * object") for "found ..." messages. */
static const char *describe_value(const cJSON *item, char *buf, size_t size)
{
    if (!item) {
        snprintf(buf, size, "nothing");
    } else if (cJSON_IsNumber(item)) {
        snprintf(buf, size, "%.15g", item->valuedouble);
    } else if (cJSON_IsString(item) && item->valuestring) {
        char text[64];
        snprintf(buf, size, "\"%s\"", loom_escape(item->valuestring, text, sizeof text));
    } else {
        snprintf(buf, size, "%s", loom_json_type_name(item));
    }
    return buf;
}

/* Rejects non-finite and subnormal numbers and duplicate object keys
 * anywhere in the tree. */
static int check_tree(const char *file, const cJSON *item, const char *path,
                      int depth, loom_error *err)
{
    char sub[256];
    if (cJSON_IsNumber(item) && !isfinite(item->valuedouble))
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s: expected a finite number, found a number "
                              "out of range",
                              file_name(file), *path ? path : "(document)");
    /* a subnormal number is finite, but dividing by it is not */
    if (cJSON_IsNumber(item) && item->valuedouble != 0 && fabs(item->valuedouble) < DBL_MIN)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s: expected 0 or a number of magnitude at least %.6g, "
                              "found %.6g (a subnormal number, too small to compute with)",
                              file_name(file), *path ? path : "(document)", DBL_MIN,
                              item->valuedouble);
    if (depth > 200)
        return LOOM_OK; /* cJSON's own nesting limit bounds this anyway */
    if (cJSON_IsObject(item)) {
        for (const cJSON *a = item->child; a; a = a->next) {
            for (const cJSON *b = item->child; b != a; b = b->next) {
                if (a->string && b->string && strcmp(a->string, b->string) == 0) {
                    char key[64];
                    return loom_set_error(err, LOOM_EINVAL,
                                          "%s: %s: expected unique field names, "
                                          "found \"%s\" twice",
                                          file_name(file),
                                          *path ? path : "(document)",
                                          loom_escape(a->string, key, sizeof key));
                }
            }
            loom_json_path_key(sub, sizeof sub, path, a->string ? a->string : "");
            int rc = check_tree(file, a, sub, depth + 1, err);
            if (rc)
                return rc;
        }
    } else if (cJSON_IsArray(item)) {
        int i = 0;
        for (const cJSON *a = item->child; a; a = a->next, i++) {
            loom_json_path_index(sub, sizeof sub, path, i);
            int rc = check_tree(file, a, sub, depth + 1, err);
            if (rc)
                return rc;
        }
    }
    return LOOM_OK;
}

int loom_json_parse(const char *file, const char *text, size_t len,
                    cJSON **out, loom_error *err)
{
    *out = NULL;
    int line, col;
    if (len > LOOM_MAX_INPUT_BYTES)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: expected at most %u bytes, found %zu bytes",
                              file_name(file), LOOM_MAX_INPUT_BYTES, len);
    const char *nul = memchr(text, 0, len);
    if (nul) {
        line_col(text, (size_t)(nul - text), &line, &col);
        return loom_set_error(err, LOOM_EINVAL,
                              "%s:%d:%d: malformed JSON: unexpected NUL byte",
                              file_name(file), line, col);
    }
    size_t i = 0;
    while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' ||
                       text[i] == '\r'))
        i++;
    if (i == len) {
        line_col(text, len, &line, &col);
        return loom_set_error(err, LOOM_EINVAL,
                              "%s:%d:%d: malformed JSON: empty document",
                              file_name(file), line, col);
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    size_t pos = len;
    if (!root) {
        /* cJSON clamps the error offset to the last byte; parse a
         * NUL-terminated copy so running out of input reports the end. */
        char *copy = malloc(len + 1);
        if (!copy)
            return loom_set_error(err, LOOM_ENOMEM, "%s: out of memory", file_name(file));
        memcpy(copy, text, len);
        copy[len] = 0;
        const char *cend = NULL;
        cJSON *again = cJSON_ParseWithLengthOpts(copy, len + 1, &cend, 1);
        cJSON_Delete(again);
        if (cend && cend >= copy && cend <= copy + len)
            pos = (size_t)(cend - copy);
        free(copy);
    } else {
        pos = end ? (size_t)(end - text) : len;
        while (pos < len && (text[pos] == ' ' || text[pos] == '\t' ||
                             text[pos] == '\n' || text[pos] == '\r'))
            pos++;
        if (pos < len) { /* trailing content after the document */
            cJSON_Delete(root);
            root = NULL;
        }
    }
    if (!root) {
        char what[64];
        describe_byte(text, len, pos, what, sizeof what);
        line_col(text, pos, &line, &col);
        return loom_set_error(err, LOOM_EINVAL, "%s:%d:%d: malformed JSON: %s",
                              file_name(file), line, col, what);
    }
    int rc = check_tree(file, root, "", 0, err);
    if (rc) {
        cJSON_Delete(root);
        return rc;
    }
    *out = root;
    return LOOM_OK;
}

int loom_json_load(const char *path, cJSON **out, loom_error *err)
{
    char *text = NULL;
    size_t len = 0;
    *out = NULL;
    int rc = loom_read_file(path, &text, &len, err);
    if (rc)
        return rc;
    rc = loom_json_parse(path, text, len, out, err);
    free(text);
    return rc;
}

const char *loom_json_type_name(const cJSON *item)
{
    if (!item)
        return "nothing";
    if (cJSON_IsFalse(item))
        return "false";
    if (cJSON_IsTrue(item))
        return "true";
    if (cJSON_IsNull(item))
        return "null";
    if (cJSON_IsNumber(item))
        return "a number";
    if (cJSON_IsString(item))
        return "a string";
    if (cJSON_IsArray(item))
        return "an array";
    if (cJSON_IsObject(item))
        return "an object";
    return "an invalid value";
}

void loom_json_path_key(char *buf, size_t size, const char *path,
                        const char *key)
{
    if (!size)
        return;
    if (path && *path)
        snprintf(buf, size, "%s.%s", path, key ? key : "");
    else
        snprintf(buf, size, "%s", key ? key : "");
}

void loom_json_path_index(char *buf, size_t size, const char *path, int index)
{
    if (!size)
        return;
    snprintf(buf, size, "%s[%d]", path ? path : "", index);
}

/* Looks up obj[key] and reports a missing required member. Returns LOOM_OK
 * with *item NULL when absent and optional. */
static int lookup(const char *file, const cJSON *obj, const char *path,
                  const char *key, int required, const char *expected,
                  const cJSON **item, loom_error *err)
{
    char full[256];
    *item = NULL;
    loom_json_path_key(full, sizeof full, path, key);
    if (!cJSON_IsObject(obj))
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s: expected an object, found %s",
                              file_name(file), (path && *path) ? path : "(document)",
                              loom_json_type_name(obj));
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!it) {
        if (required)
            return loom_set_error(err, LOOM_EINVAL,
                                  "%s: %s: expected %s, found nothing (missing field)",
                                  file_name(file), full, expected);
        return LOOM_OK;
    }
    *item = it;
    return LOOM_OK;
}

/* Fills `buf` with "an integer in [a, b]" / ">= a" / "<= b" / plain. */
static void int_expectation(char *buf, size_t size, int64_t min, int64_t max)
{
    if (min == INT64_MIN && max == INT64_MAX)
        snprintf(buf, size, "an integer");
    else if (max == INT64_MAX)
        snprintf(buf, size, "an integer >= %lld", (long long)min);
    else if (min == INT64_MIN)
        snprintf(buf, size, "an integer <= %lld", (long long)max);
    else
        snprintf(buf, size, "an integer in [%lld, %lld]", (long long)min,
                 (long long)max);
}

/* Fills `buf` with "a number in [a, b]" / ">= a" / "<= b" / plain. */
static void double_expectation(char *buf, size_t size, double min, double max)
{
    int lo = !(min <= -DBL_MAX), hi = !(max >= DBL_MAX);
    if (!lo && !hi)
        snprintf(buf, size, "a number");
    else if (!hi)
        snprintf(buf, size, "a number >= %.15g", min);
    else if (!lo)
        snprintf(buf, size, "a number <= %.15g", max);
    else
        snprintf(buf, size, "a number in [%.15g, %.15g]", min, max);
}

int loom_json_get_int(const char *file, const cJSON *obj, const char *path,
                      const char *key, int required, int64_t min, int64_t max,
                      int64_t *out, loom_error *err)
{
    char want[96], found[80], full[256];
    const cJSON *it;
    int_expectation(want, sizeof want, min, max);
    int rc = lookup(file, obj, path, key, required, want, &it, err);
    if (rc || !it)
        return rc;
    loom_json_path_key(full, sizeof full, path, key);
    double v = it->valuedouble;
    /* 9223372036854775807 rounds to 2^63 as a double, so compare with < 2^63. */
    if (!cJSON_IsNumber(it) || v != floor(v) || v < -9223372036854775808.0 ||
        v >= 9223372036854775808.0 || (int64_t)v < min || (int64_t)v > max)
        return loom_set_error(err, LOOM_EINVAL, "%s: %s: expected %s, found %s",
                              file_name(file), full, want,
                              describe_value(it, found, sizeof found));
    *out = (int64_t)v;
    return LOOM_OK;
}

int loom_json_get_double(const char *file, const cJSON *obj, const char *path,
                         const char *key, int required, double min, double max,
                         double *out, loom_error *err)
{
    char want[96], found[80], full[256];
    const cJSON *it;
    double_expectation(want, sizeof want, min, max);
    int rc = lookup(file, obj, path, key, required, want, &it, err);
    if (rc || !it)
        return rc;
    loom_json_path_key(full, sizeof full, path, key);
    if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble) ||
        it->valuedouble < min || it->valuedouble > max)
        return loom_set_error(err, LOOM_EINVAL, "%s: %s: expected %s, found %s",
                              file_name(file), full, want,
                              describe_value(it, found, sizeof found));
    *out = it->valuedouble;
    return LOOM_OK;
}

int loom_json_get_bool(const char *file, const cJSON *obj, const char *path,
                       const char *key, int required, int *out,
                       loom_error *err)
{
    char found[80], full[256];
    const cJSON *it;
    int rc = lookup(file, obj, path, key, required, "true or false", &it, err);
    if (rc || !it)
        return rc;
    loom_json_path_key(full, sizeof full, path, key);
    if (!cJSON_IsBool(it))
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s: expected true or false, found %s",
                              file_name(file), full,
                              describe_value(it, found, sizeof found));
    *out = cJSON_IsTrue(it) ? 1 : 0;
    return LOOM_OK;
}

int loom_json_get_string(const char *file, const cJSON *obj, const char *path,
                         const char *key, int required, const char **out,
                         loom_error *err)
{
    char found[80], full[256];
    const cJSON *it;
    int rc = lookup(file, obj, path, key, required, "a string", &it, err);
    if (rc || !it)
        return rc;
    loom_json_path_key(full, sizeof full, path, key);
    if (!cJSON_IsString(it) || !it->valuestring)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s: expected a string, found %s",
                              file_name(file), full,
                              describe_value(it, found, sizeof found));
    *out = it->valuestring;
    return LOOM_OK;
}

int loom_json_get_object(const char *file, const cJSON *obj, const char *path,
                         const char *key, int required, const cJSON **out,
                         loom_error *err)
{
    char found[80], full[256];
    const cJSON *it;
    int rc = lookup(file, obj, path, key, required, "an object", &it, err);
    if (rc)
        return rc;
    if (!it) {
        *out = NULL;
        return LOOM_OK;
    }
    loom_json_path_key(full, sizeof full, path, key);
    if (!cJSON_IsObject(it))
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s: expected an object, found %s",
                              file_name(file), full,
                              describe_value(it, found, sizeof found));
    *out = it;
    return LOOM_OK;
}

int loom_json_get_array(const char *file, const cJSON *obj, const char *path,
                        const char *key, int required, const cJSON **out,
                        loom_error *err)
{
    char found[80], full[256];
    const cJSON *it;
    int rc = lookup(file, obj, path, key, required, "an array", &it, err);
    if (rc)
        return rc;
    if (!it) {
        *out = NULL;
        return LOOM_OK;
    }
    loom_json_path_key(full, sizeof full, path, key);
    if (!cJSON_IsArray(it))
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s: expected an array, found %s",
                              file_name(file), full,
                              describe_value(it, found, sizeof found));
    *out = it;
    return LOOM_OK;
}

int loom_json_check_keys(const char *file, const cJSON *obj, const char *path,
                         const char *const *allowed, loom_error *err)
{
    if (!cJSON_IsObject(obj))
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s: expected an object, found %s",
                              file_name(file), (path && *path) ? path : "(document)",
                              loom_json_type_name(obj));
    for (const cJSON *it = obj->child; it; it = it->next) {
        int ok = 0;
        for (int i = 0; allowed[i]; i++) {
            if (it->string && strcmp(it->string, allowed[i]) == 0) {
                ok = 1;
                break;
            }
        }
        if (ok)
            continue;
        char list[320], key[64];
        size_t n = 0;
        list[0] = 0;
        loom_escape(it->string ? it->string : "", key, sizeof key);
        for (int i = 0; allowed[i] && n < sizeof list; i++)
            n += (size_t)snprintf(list + n, sizeof list - n, "%s%s",
                                  i ? ", " : "", allowed[i]);
        if (path && *path)
            return loom_set_error(err, LOOM_EINVAL,
                                  "%s: %s: unknown field \"%s\" (expected one of: %s)",
                                  file_name(file), path, key, list);
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: unknown field \"%s\" (expected one of: %s)",
                              file_name(file), key, list);
    }
    return LOOM_OK;
}

int loom_load_spec_json(const char *what, const char *spec, const char *const *presets,
                        cJSON **root, loom_error *err)
{
    char list[512];
    size_t n = strlen(spec);
    *root = NULL;
    loom_join_names(presets, list, sizeof list);
    if (!strchr(spec, '/') && !(n > 5 && strcmp(spec + n - 5, ".json") == 0)) {
        struct stat st; /* stat, not open: a FIFO must not block here */
        char shown[208];
        int np = 0;
        while (presets[np])
            np++;
        const char *near = loom_closest_name(spec, presets, np);
        if (stat(spec, &st) != 0 && near)
            return loom_set_error(err, LOOM_ENOTFOUND,
                                  "%s \"%s\": expected a %s preset (%s) or a path to a "
                                  "%s.json, found neither; did you mean %s?", what,
                                  loom_escape(spec, shown, sizeof shown), what, list, what, near);
        if (stat(spec, &st) != 0)
            return loom_set_error(err, LOOM_ENOTFOUND,
                                  "%s \"%s\": expected a %s preset (%s) or a path to a "
                                  "%s.json, found neither", what,
                                  loom_escape(spec, shown, sizeof shown), what, list, what);
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
    if (item && cJSON_IsNumber(item)) {
        snprintf(buf, size, "%.15g", item->valuedouble);
    } else if (item && cJSON_IsString(item) && item->valuestring) {
        char text[64];
        snprintf(buf, size, "\"%s\"", loom_escape(item->valuestring, text, sizeof text));
    } else {
        snprintf(buf, size, "%s", loom_json_type_name(item));
    }
    return buf;
}
