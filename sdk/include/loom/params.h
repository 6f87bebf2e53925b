/*
 * loom/params.h - a plugin's params declared once: a table of
 * { name, type, default, bounds, doc, offset into the plugin's config
 * struct } and loom_params_read(), which fills that struct from the host's
 * values, so a plugin restates no default or bound in C.
 *
 *   typedef struct my_conf { int64_t threads; double alpha; int fast;
 *                            const char *order; } my_conf;
 *   static const loom_param_def my_params[] = {
 *       LOOM_INT_PARAM(my_conf, threads, 1, 1, 64, "worker threads"),
 *       LOOM_FLOAT_PARAM(my_conf, alpha, 0.5, 0, LOOM_NO_MAX, "step size"),
 *       LOOM_BOOL_PARAM(my_conf, fast, 1, "skip the second pass"),
 *       LOOM_ENUM_PARAM(my_conf, order, "lpt", "lpt|fifo", "group order"),
 *       LOOM_PARAM_END};
 *
 * The member is named like the param. An int param fills an int32_t or an
 * int64_t member, a bool an int (0 or 1), a float a double, a string or an
 * enum a `const char *` (the host's string, which lives as long as the
 * ctx, or the table's default).
 *
 * manifest.json's "params" must say the same: the same names, types,
 * defaults, bounds, enum values and docs. The table reaches the host and
 * the tools through the plugin's info struct (loom_plugin_info.params);
 * the Loom tree's test_param_tables compares every shipped plugin's table
 * with its manifest (docs/plugin-guide.md).
 *
 * Ownership: tables are static const data of the plugin.
 */
#ifndef LOOM_PARAMS_H
#define LOOM_PARAMS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <loom/common.h>
#include <loom/host.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The manifest types of a param ("int", "float", "bool", "string",
 * "enum"). */
enum loom_param_kind {
    LOOM_PARAM_KIND_INT = 0,
    LOOM_PARAM_KIND_FLOAT = 1,
    LOOM_PARAM_KIND_BOOL = 2,
    LOOM_PARAM_KIND_STRING = 3,
    LOOM_PARAM_KIND_ENUM = 4
};

/* No lower / upper bound (an int or float param's min or max). */
#define LOOM_NO_MIN (-HUGE_VAL)
#define LOOM_NO_MAX HUGE_VAL

/* One declared param. Write entries with the LOOM_*_PARAM macros below;
 * a table ends with LOOM_PARAM_END (name NULL). */
typedef struct loom_param_def {
    const char *name;      /* the manifest's key and the member's name */
    int32_t kind;          /* enum loom_param_kind */
    uint32_t field_bytes;  /* sizeof the member (4 or 8 for an int) */
    size_t offset;         /* offsetof(conf, member) */
    double def;            /* INT, FLOAT, BOOL (0 / 1) default */
    const char *def_text;  /* STRING, ENUM default */
    double min, max;       /* inclusive bounds (INT, FLOAT); LOOM_NO_MIN/MAX */
    const char *values;    /* ENUM: the allowed values, "a|b|c" */
    const char *doc;       /* one line, as the manifest's "doc" */
} loom_param_def;

/* Bytes of an int member; any type other than int32_t / int64_t fails to
 * compile. */
#define LOOM_PARAM_INT_BYTES_(conf, field)                                     \
    _Generic(((conf *)0)->field, int32_t: 4u, int64_t: 8u)
/* sizeof a member whose type must be `type` (else a compile error). */
#define LOOM_PARAM_TYPED_BYTES_(conf, field, type)                             \
    _Generic(((conf *)0)->field, type: (uint32_t)sizeof(type))

/* Entries whose member is named like the param. */
#define LOOM_INT_PARAM(conf, field, def, lo, hi, doc)                          \
    LOOM_INT_PARAM_AT(#field, conf, field, def, lo, hi, doc)
#define LOOM_FLOAT_PARAM(conf, field, def, lo, hi, doc)                        \
    LOOM_FLOAT_PARAM_AT(#field, conf, field, def, lo, hi, doc)
#define LOOM_BOOL_PARAM(conf, field, def, doc)                                 \
    LOOM_BOOL_PARAM_AT(#field, conf, field, def, doc)
#define LOOM_STRING_PARAM(conf, field, def, doc)                               \
    LOOM_STRING_PARAM_AT(#field, conf, field, def, doc)
#define LOOM_ENUM_PARAM(conf, field, def, values, doc)                         \
    LOOM_ENUM_PARAM_AT(#field, conf, field, def, values, doc)

/* Entries for param `name` kept in `member` (a member designator such as
 * search.budget_ms). */
#define LOOM_INT_PARAM_AT(name, conf, member, def, lo, hi, doc)                \
    {name, LOOM_PARAM_KIND_INT, LOOM_PARAM_INT_BYTES_(conf, member),          \
     offsetof(conf, member), (double)(def), NULL, (lo), (hi), NULL, doc}
#define LOOM_FLOAT_PARAM_AT(name, conf, member, def, lo, hi, doc)              \
    {name, LOOM_PARAM_KIND_FLOAT, LOOM_PARAM_TYPED_BYTES_(conf, member, double), \
     offsetof(conf, member), (double)(def), NULL, (lo), (hi), NULL, doc}
#define LOOM_BOOL_PARAM_AT(name, conf, member, def, doc)                       \
    {name, LOOM_PARAM_KIND_BOOL, LOOM_PARAM_TYPED_BYTES_(conf, member, int),   \
     offsetof(conf, member), (double)(def), NULL, LOOM_NO_MIN, LOOM_NO_MAX,   \
     NULL, doc}
#define LOOM_STRING_PARAM_AT(name, conf, member, def, doc)                     \
    {name, LOOM_PARAM_KIND_STRING,                                             \
     LOOM_PARAM_TYPED_BYTES_(conf, member, const char *), offsetof(conf, member), \
     0, def, LOOM_NO_MIN, LOOM_NO_MAX, NULL, doc}
#define LOOM_ENUM_PARAM_AT(name, conf, member, def, values, doc)               \
    {name, LOOM_PARAM_KIND_ENUM,                                               \
     LOOM_PARAM_TYPED_BYTES_(conf, member, const char *), offsetof(conf, member), \
     0, def, LOOM_NO_MIN, LOOM_NO_MAX, values, doc}
#define LOOM_PARAM_END {NULL, 0, 0, 0, 0, NULL, 0, 0, NULL, NULL}

/* Name of a param kind as the manifest writes it ("int", ...). */
static inline const char *loom_param_kind_name(int kind)
{
    static const char *const names[] = {"int", "float", "bool", "string", "enum"};
    return kind >= 0 && kind <= LOOM_PARAM_KIND_ENUM ? names[kind] : "?";
}

/* Whether `s` is one of the "|"-separated `values`. */
static inline int loom_param_enum_has(const char *values, const char *s)
{
    size_t n = strlen(s);
    for (const char *v = values; v && *v;) {
        const char *bar = strchr(v, '|');
        size_t len = bar ? (size_t)(bar - v) : strlen(v);
        if (len == n && !strncmp(v, s, n))
            return 1;
        v = bar ? bar + 1 : v + len;
    }
    return 0;
}

/* Writes "an integer in [1, 64]", "a number >= 0" and the like. */
static inline void loom_param_expected(const loom_param_def *d, char *buf, size_t size)
{
    const char *what = d->kind == LOOM_PARAM_KIND_INT ? "an integer" : "a number";
    if (d->min == LOOM_NO_MIN && d->max == LOOM_NO_MAX)
        snprintf(buf, size, "%s", what);
    else if (d->max == LOOM_NO_MAX)
        snprintf(buf, size, "%s >= %.15g", what, d->min);
    else if (d->min == LOOM_NO_MIN)
        snprintf(buf, size, "%s <= %.15g", what, d->max);
    else
        snprintf(buf, size, "%s in [%.15g, %.15g]", what, d->min, d->max);
}

/* Reads one int or float param (the host's value, else the default) and
 * checks it against the bounds. */
static inline int loom_param_read_number(const loom_host_api *host, loom_ctx *ctx,
                                         const char *who, const loom_param_def *d,
                                         double *out, int64_t *iout, loom_error *err)
{
    char want[96], found[48];
    int rc = d->kind == LOOM_PARAM_KIND_INT ? host->param_int(ctx, d->name, iout)
                                            : host->param_double(ctx, d->name, out);
    if (rc == LOOM_ENOTFOUND) {
        *out = d->def;
        *iout = d->kind == LOOM_PARAM_KIND_INT ? (int64_t)d->def : 0;
    } else if (rc != LOOM_OK) {
        loom_param_expected(d, want, sizeof want);
        return host->error(err, LOOM_EINVAL, "%s: params.%s: expected %s, found a value of "
                           "another type (%s)", who, d->name, want, loom_status_name(rc));
    } else if (d->kind == LOOM_PARAM_KIND_INT) {
        *out = (double)*iout;
    }
    int bad = !(*out >= d->min && *out <= d->max);
    if (d->kind == LOOM_PARAM_KIND_INT && d->field_bytes == 4)
        bad |= *iout < INT32_MIN || *iout > INT32_MAX;
    if (!bad)
        return LOOM_OK;
    loom_param_expected(d, want, sizeof want);
    if (d->kind == LOOM_PARAM_KIND_INT)
        snprintf(found, sizeof found, "%lld", (long long)*iout);
    else
        snprintf(found, sizeof found, "%.15g", *out);
    return host->error(err, LOOM_EINVAL, "%s: params.%s: expected %s, found %s", who, d->name,
                       want, found);
}

/* Reads one bool, string or enum param (the host's value, else the
 * default); an enum value must be one of the table's. */
static inline int loom_param_read_text(const loom_host_api *host, loom_ctx *ctx,
                                       const char *who, const loom_param_def *d,
                                       int *flag, const char **text, loom_error *err)
{
    if (d->kind == LOOM_PARAM_KIND_BOOL) {
        int rc = host->param_bool(ctx, d->name, flag);
        if (rc == LOOM_ENOTFOUND)
            *flag = d->def != 0;
        else if (rc != LOOM_OK)
            return host->error(err, LOOM_EINVAL, "%s: params.%s: expected true or false, "
                               "found a value of another type (%s)", who, d->name,
                               loom_status_name(rc));
        *flag = *flag != 0;
        return LOOM_OK;
    }
    const char *s = host->param_string(ctx, d->name);
    *text = s ? s : d->def_text;
    if (d->kind != LOOM_PARAM_KIND_ENUM || loom_param_enum_has(d->values, *text))
        return LOOM_OK;
    char list[LOOM_ERROR_MSG_BYTES / 2]; /* "a", "b", "c" */
    size_t n = 0;
    list[n++] = '"';
    for (const char *v = d->values; *v && n + 6 < sizeof list; v++) {
        if (*v == '|') {
            memcpy(list + n, "\", \"", 4);
            n += 4;
        } else {
            list[n++] = *v;
        }
    }
    list[n++] = '"';
    list[n] = 0;
    return host->error(err, LOOM_EINVAL, "%s: params.%s: expected one of %s, found \"%s\"", who,
                       d->name, list, *text);
}

/* Parses a string param holding a comma-separated list of integers in
 * [lo, hi] ("12, 4,8": spaces around an entry allowed, no sign but a
 * leading '-') into out[0 .. cap-1]. Returns the number of entries, which
 * may exceed cap (only the first cap are written), or -k when entry k
 * (from 1) is not such an integer; then *bad and *bad_len hold that
 * entry's text, spaces trimmed. lo > INT64_MIN. Plugins call it on the
 * text loom_params_read() gave them and word the error themselves. */
static inline int64_t loom_param_int_list(const char *text, int64_t lo, int64_t hi,
                                          int64_t *out, int64_t cap, const char **bad,
                                          size_t *bad_len)
{
    int64_t n = 0;
    const char *p = text ? text : "";
    for (;;) {
        while (*p == ' ')
            p++;
        const char *start = p;
        int neg = *p == '-';
        p += neg;
        const char *digits = p;
        int64_t v = 0, limit = neg ? -lo : hi;
        int over = 0;
        for (; *p >= '0' && *p <= '9'; p++) {
            over |= v > (limit - (*p - '0')) / 10;
            if (!over)
                v = v * 10 + (*p - '0');
        }
        const char *stop = p;
        while (*p == ' ')
            p++;
        v = neg ? -v : v;
        if (p == digits || stop == digits || over || v < lo || v > hi ||
            (*p != ',' && *p != '\0')) {
            const char *end = start;
            while (*end && *end != ',')
                end++;
            while (end > start && end[-1] == ' ')
                end--;
            *bad = start;
            *bad_len = (size_t)(end - start);
            return -(n + 1);
        }
        if (n < cap)
            out[n] = v;
        n++;
        if (*p == '\0')
            return n;
        p++;
    }
}

/* Fills the members of `conf` that `table` (ended by LOOM_PARAM_END)
 * declares: each param's value from the host (which validated it against
 * manifest.json), or the table's default where the host has none (a
 * manifest that does not declare it, a mock host without a manifest).
 * Every value is checked against the table: an int or float outside its
 * bounds, an enum value not listed, or a value of another type fails with
 * LOOM_EINVAL "<who>: params.<name>: expected <what>, found <value>" (`who`
 * names the plugin; the host adds "plugin <id>: " in front). */
#if defined(__GNUC__) || defined(__clang__)
/* One out-of-line copy per plugin: the loop reads the table as data. */
#define LOOM_PARAMS_READ_FN_ static __attribute__((unused, noinline))
#else
#define LOOM_PARAMS_READ_FN_ static inline
#endif
LOOM_PARAMS_READ_FN_ int loom_params_read(const loom_host_api *host, loom_ctx *ctx, const char *who,
                                   const loom_param_def *table, void *conf, loom_error *err)
{
    for (const loom_param_def *d = table; d && d->name; d++) {
        char *at = (char *)conf + d->offset;
        double x = 0;
        int64_t i = 0;
        int flag = 0, rc;
        const char *s = NULL;
        if (d->kind == LOOM_PARAM_KIND_INT || d->kind == LOOM_PARAM_KIND_FLOAT)
            rc = loom_param_read_number(host, ctx, who, d, &x, &i, err);
        else
            rc = loom_param_read_text(host, ctx, who, d, &flag, &s, err);
        if (rc != LOOM_OK)
            return rc;
        if (d->kind == LOOM_PARAM_KIND_INT && d->field_bytes == 4) {
            int32_t v = (int32_t)i;
            memcpy(at, &v, sizeof v);
        } else if (d->kind == LOOM_PARAM_KIND_INT) {
            memcpy(at, &i, sizeof i);
        } else if (d->kind == LOOM_PARAM_KIND_FLOAT) {
            memcpy(at, &x, sizeof x);
        } else if (d->kind == LOOM_PARAM_KIND_BOOL) {
            memcpy(at, &flag, sizeof flag);
        } else {
            memcpy(at, &s, sizeof s);
        }
    }
    return LOOM_OK;
}

#ifdef __cplusplus
}
#endif
#endif
