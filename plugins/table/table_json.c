/* table_json.c - the JSON form of a cost table:
 *   {"rows": [{"module": "vit", "layer": "*", "tokens": 1024,
 *              "forward_ms": 1.2, ..., "param_bytes": 1.2e8}, ...]}
 * with the same fields as the CSV columns; unknown fields are errors. */
#include "table_data.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

static const char *const tb_fields_json[] = {
    "module",        "layer",          "tokens",           "forward_ms",
    "input_grad_ms", "weight_grad_ms", "activation_bytes", "param_bytes"};
#define TB_N_FIELDS 8

/* A short description of a JSON value for "found ..." messages. */
static const char *tb_found(const cJSON *v, char *buf, size_t size)
{
    if (!v)
        return "nothing";
    if (cJSON_IsNumber(v))
        snprintf(buf, size, "%.17g", v->valuedouble);
    else if (cJSON_IsString(v))
        snprintf(buf, size, "\"%.60s\"", v->valuestring);
    else if (cJSON_IsBool(v))
        snprintf(buf, size, "%s", cJSON_IsTrue(v) ? "true" : "false");
    else if (cJSON_IsNull(v))
        snprintf(buf, size, "null");
    else if (cJSON_IsArray(v))
        snprintf(buf, size, "an array");
    else
        snprintf(buf, size, "an object");
    return buf;
}

/* Reports rows[i].field: expected ..., found <value>. */
static int tb_bad(const loom_table *t, int i, const char *field,
                  const char *expected, const cJSON *v, loom_error *err)
{
    char found[96];
    return loom_error_format(err, LOOM_EINVAL,
                            "table: %s: rows[%d].%s: expected %s, found %s",
                            t->file, i, field, expected,
                            tb_found(v, found, sizeof found));
}

/* 1 when v is a whole number in [lo, hi]. */
static int tb_whole(const cJSON *v, double lo, double hi)
{
    if (!cJSON_IsNumber(v))
        return 0;
    double d = v->valuedouble;
    return d >= lo && d <= hi && (double)(long long)d == d;
}

/* Reports the line and column of a syntax error at `at`. */
static int tb_syntax(const loom_table *t, const char *text, size_t len,
                     const char *at, loom_error *err)
{
    if (!at || at < text || at > text + len)
        at = text + len;
    int line = 1, col = 1;
    for (const char *p = text; p < at; p++) {
        if (*p == '\n')
            line++, col = 1;
        else
            col++;
    }
    if (at >= text + len)
        return loom_error_format(err, LOOM_EINVAL,
                                "table: %s:%d:%d: malformed JSON: expected "
                                "more input, found the end of the file",
                                t->file, line, col);
    return loom_error_format(err, LOOM_EINVAL,
                            "table: %s:%d:%d: malformed JSON near "
                            "\"%.16s\"",
                            t->file, line, col, at);
}

/* Converts rows[i] into a row of t. */
static int tb_json_row(loom_table *t, int i, const cJSON *o, loom_error *err)
{
    if (!cJSON_IsObject(o)) {
        char found[96];
        return loom_error_format(err, LOOM_EINVAL,
                                "table: %s: rows[%d]: expected an object, "
                                "found %s",
                                t->file, i, tb_found(o, found, sizeof found));
    }
    for (const cJSON *m = o->child; m; m = m->next) {
        int known = 0;
        for (int k = 0; k < TB_N_FIELDS && !known; k++)
            known = strcmp(m->string, tb_fields_json[k]) == 0;
        if (!known)
            return loom_error_format(err, LOOM_EINVAL,
                                    "table: %s: rows[%d]: unknown field "
                                    "\"%s\" (expected one of: %s)",
                                    t->file, i, m->string,
                                    LOOM_TABLE_HEADER);
    }
    loom_table_row r;
    memset(&r, 0, sizeof r);
    r.source = i;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "module");
    if (!cJSON_IsString(v) || !v->valuestring[0])
        return tb_bad(t, i, "module", "a module name", v, err);
    r.module = v->valuestring;
    v = cJSON_GetObjectItemCaseSensitive(o, "layer");
    if (cJSON_IsString(v) && strcmp(v->valuestring, "*") == 0)
        r.layer = LOOM_TABLE_ANY_LAYER;
    else if (tb_whole(v, 0, (double)INT32_MAX))
        r.layer = (int32_t)v->valuedouble;
    else
        return tb_bad(t, i, "layer", "a layer index >= 0 or \"*\"", v, err);
    v = cJSON_GetObjectItemCaseSensitive(o, "tokens");
    if (!tb_whole(v, 1, 9007199254740992.0))
        return tb_bad(t, i, "tokens", "an integer >= 1", v, err);
    r.tokens = (int64_t)v->valuedouble;
    double *dst[] = {&r.forward_ms, &r.input_grad_ms, &r.weight_grad_ms,
                     &r.activation_bytes, &r.param_bytes};
    for (int k = 3; k < TB_N_FIELDS; k++) {
        v = cJSON_GetObjectItemCaseSensitive(o, tb_fields_json[k]);
        if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) ||
            v->valuedouble > 1e300)
            return tb_bad(t, i, tb_fields_json[k], "a number >= 0", v, err);
        *dst[k - 3] = v->valuedouble;
    }
    return loom_table_add_row(t, &r, err);
}

/* Parses the JSON text into rows of t (see table_data.h). */
int loom_table_parse_json(loom_table *t, const char *text, size_t len,
                          loom_error *err)
{
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root)
        return tb_syntax(t, text, len, end, err);
    int rc = LOOM_OK;
    char found[96];
    const cJSON *rows = cJSON_IsObject(root)
                            ? cJSON_GetObjectItemCaseSensitive(root, "rows")
                            : NULL;
    if (!cJSON_IsObject(root)) {
        rc = loom_error_format(err, LOOM_EINVAL,
                              "table: %s: expected an object with \"rows\", "
                              "found %s",
                              t->file, tb_found(root, found, sizeof found));
    } else if (!cJSON_IsArray(rows)) {
        rc = loom_error_format(err, LOOM_EINVAL,
                              "table: %s: rows: expected an array, found %s",
                              t->file, tb_found(rows, found, sizeof found));
    } else {
        for (const cJSON *m = root->child; m && rc == LOOM_OK; m = m->next)
            if (strcmp(m->string, "rows") != 0)
                rc = loom_error_format(err, LOOM_EINVAL,
                                      "table: %s: unknown field \"%s\" "
                                      "(expected one of: rows)",
                                      t->file, m->string);
        int i = 0;
        for (const cJSON *o = rows->child; o && rc == LOOM_OK; o = o->next)
            rc = tb_json_row(t, i++, o, err);
    }
    cJSON_Delete(root);
    return rc;
}
