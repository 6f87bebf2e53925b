/* table_csv.c - the CSV form of a cost table:
 *   module,layer,tokens,forward_ms,input_grad_ms,weight_grad_ms,activation_bytes,param_bytes
 * one row per line; blank lines and lines starting with '#' are skipped;
 * a field may be wrapped in double quotes (no commas inside). */
#include "table_data.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TB_COLUMNS 8
#define TB_FIELD_BYTES 256

static const char *const tb_columns[TB_COLUMNS] = {
    "module",        "layer",          "tokens",           "forward_ms",
    "input_grad_ms", "weight_grad_ms", "activation_bytes", "param_bytes"};

/* One line split into trimmed, unquoted fields. */
typedef struct tb_fields {
    int n;                                  /* fields found (may exceed 8) */
    char text[TB_COLUMNS][TB_FIELD_BYTES];  /* the first 8 */
    int too_long;                           /* index of an overlong field + 1 */
} tb_fields;

/* 1 for the blanks trimmed around fields. */
static int tb_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

/* Splits [s, e) at commas into f, trimming blanks and quotes. */
static void tb_split(const char *s, const char *e, tb_fields *f)
{
    memset(f, 0, sizeof *f);
    for (;;) {
        const char *c = s;
        while (c < e && *c != ',')
            c++;
        const char *a = s, *b = c;
        while (a < b && tb_blank(*a))
            a++;
        while (b > a && tb_blank(b[-1]))
            b--;
        if (b - a >= 2 && *a == '"' && b[-1] == '"')
            a++, b--;
        if (f->n < TB_COLUMNS) {
            size_t len = (size_t)(b - a);
            if (len >= TB_FIELD_BYTES) {
                len = TB_FIELD_BYTES - 1;
                if (!f->too_long)
                    f->too_long = f->n + 1;
            }
            memcpy(f->text[f->n], a, len);
            f->text[f->n][len] = 0;
        }
        f->n++;
        if (c >= e)
            break;
        s = c + 1;
    }
}

/* Parses a whole field as a finite number >= 0. */
static int tb_number(const char *s, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno == ERANGE || !isfinite(v) || v < 0)
        return 0;
    *out = v;
    return 1;
}

/* Parses a whole field as a decimal integer in [lo, hi]. */
static int tb_integer(const char *s, long long lo, long long hi,
                      long long *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || errno == ERANGE || v < lo || v > hi)
        return 0;
    *out = v;
    return 1;
}

/* Reports a bad field of row `line`. */
static int tb_bad_field(const loom_table *t, int line, int col,
                        const char *expected, const char *found,
                        loom_error *err)
{
    return loom_error_format(err, LOOM_EINVAL,
                            "table: %s:%d: column %s: expected %s, found "
                            "\"%s\"",
                            t->file, line, tb_columns[col], expected, found);
}

/* Checks the header line's fields against the column names. */
static int tb_check_header(const loom_table *t, int line, const tb_fields *f,
                           const char *s, const char *e, loom_error *err)
{
    int ok = f->n == TB_COLUMNS && !f->too_long;
    for (int i = 0; ok && i < TB_COLUMNS; i++)
        ok = strcmp(f->text[i], tb_columns[i]) == 0;
    if (ok)
        return LOOM_OK;
    int shown = (int)(e - s) > 120 ? 120 : (int)(e - s);
    return loom_error_format(err, LOOM_EINVAL,
                            "table: %s:%d: expected the header \"%s\", "
                            "found \"%.*s\"",
                            t->file, line, LOOM_TABLE_HEADER, shown, s);
}

/* Turns one data line's fields into a row. */
static int tb_row(loom_table *t, int line, const tb_fields *f,
                  loom_error *err)
{
    if (f->n != TB_COLUMNS)
        return loom_error_format(err, LOOM_EINVAL,
                                "table: %s:%d: expected %d comma-separated "
                                "fields (%s), found %d",
                                t->file, line, TB_COLUMNS, LOOM_TABLE_HEADER,
                                f->n);
    if (f->too_long)
        return tb_bad_field(t, line, f->too_long - 1,
                            "at most 255 characters", "a longer field", err);
    loom_table_row r;
    memset(&r, 0, sizeof r);
    r.source = line;
    if (!f->text[0][0])
        return tb_bad_field(t, line, 0, "a module name", "", err);
    r.module = (char *)f->text[0];
    long long v;
    if (strcmp(f->text[1], "*") == 0)
        r.layer = LOOM_TABLE_ANY_LAYER;
    else if (tb_integer(f->text[1], 0, INT32_MAX, &v))
        r.layer = (int32_t)v;
    else
        return tb_bad_field(t, line, 1, "a layer index >= 0 or \"*\"",
                            f->text[1], err);
    if (!tb_integer(f->text[2], 1, INT64_MAX, &v))
        return tb_bad_field(t, line, 2, "an integer >= 1", f->text[2], err);
    r.tokens = (int64_t)v;
    double *dst[] = {&r.forward_ms, &r.input_grad_ms, &r.weight_grad_ms,
                     &r.activation_bytes, &r.param_bytes};
    for (int c = 3; c < TB_COLUMNS; c++)
        if (!tb_number(f->text[c], dst[c - 3]))
            return tb_bad_field(t, line, c, "a number >= 0", f->text[c], err);
    return loom_table_add_row(t, &r, err);
}

/* Parses the CSV text into rows of t (see table_data.h). */
int loom_table_parse_csv(loom_table *t, const char *text, loom_error *err)
{
    tb_fields f;
    const char *s = text;
    if ((unsigned char)s[0] == 0xEF && (unsigned char)s[1] == 0xBB &&
        (unsigned char)s[2] == 0xBF)
        s += 3; /* UTF-8 byte order mark */
    int line = 0, have_header = 0;
    while (*s) {
        line++;
        const char *e = strchr(s, '\n');
        if (!e)
            e = s + strlen(s);
        const char *a = s, *b = e;
        while (a < b && (tb_blank(*a) || *a == '\n'))
            a++;
        while (b > a && tb_blank(b[-1]))
            b--;
        if (a < b && *a != '#') {
            tb_split(a, b, &f);
            int rc = have_header ? tb_row(t, line, &f, err)
                                 : tb_check_header(t, line, &f, a, b, err);
            if (rc != LOOM_OK)
                return rc;
            have_header = 1;
        }
        s = *e ? e + 1 : e;
    }
    if (!have_header)
        return loom_error_format(err, LOOM_EINVAL,
                                "table: %s: expected the header \"%s\", found "
                                "an empty file",
                                t->file, LOOM_TABLE_HEADER);
    return LOOM_OK;
}
