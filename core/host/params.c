/* params.c - resolving a pipeline step's params against the plugin
 * manifest (types, bounds, enum values, defaults) and CLI overrides. */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <loom/sys/json.h>
#include "ctx.h"
#include "registry_priv.h"

void loom_params_free(loom_param_value *v, int n)
{
    if (!v)
        return;
    for (int i = 0; i < n; i++) {
        free((char *)v[i].name);
        free((char *)v[i].s);
    }
    free(v);
}

/* Replaces v->s with a copy of s. */
static int set_string(loom_param_value *v, const char *s, loom_error *err)
{
    char *copy = strdup(s ? s : "");
    if (!copy)
        return loom_set_error(err, LOOM_ENOMEM, "out of memory");
    free((char *)v->s);
    v->s = copy;
    return LOOM_OK;
}

/* Integer bounds of a spec (unbounded sides as INT64_MIN / INT64_MAX). */
static void int_bounds(const loom_param_spec *ps, int64_t *lo, int64_t *hi)
{
    *lo = ps->has_min ? (int64_t)ps->min : INT64_MIN;
    *hi = ps->has_max ? (int64_t)ps->max : INT64_MAX;
}

/* Number bounds of a spec (unbounded sides as -DBL_MAX / DBL_MAX). */
static void double_bounds(const loom_param_spec *ps, double *lo, double *hi)
{
    *lo = ps->has_min ? ps->min : -DBL_MAX;
    *hi = ps->has_max ? ps->max : DBL_MAX;
}

/* Writes "one of "a", "b", "c"" for an enum spec. */
static void enum_list(const loom_param_spec *ps, char *buf, size_t size)
{
    size_t n = (size_t)snprintf(buf, size, "one of");
    for (int k = 0; k < ps->n_values && n < size; k++)
        n += (size_t)snprintf(buf + n, size - n, "%s \"%s\"", k ? "," : "",
                              ps->values[k]);
}

/* 1 when s is one of the enum's values. */
static int enum_has(const loom_param_spec *ps, const char *s)
{
    for (int k = 0; k < ps->n_values; k++)
        if (!strcmp(ps->values[k], s))
            return 1;
    return 0;
}

/* Fails on a member of `params` that the manifest does not declare. */
static int check_unknown(const loom_plugin_manifest *m, const cJSON *params,
                         const char *file, const char *json_path, loom_error *err)
{
    if (!params->child)
        return LOOM_OK;
    if (m->n_params == 0)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s: unknown field \"%s\" (plugin %s declares no params)",
                              file, json_path, params->child->string, m->id);
    const char **names = calloc((size_t)m->n_params + 1, sizeof *names);
    if (!names)
        return loom_set_error(err, LOOM_ENOMEM, "out of memory");
    for (int i = 0; i < m->n_params; i++)
        names[i] = m->params[i].name;
    int rc = loom_json_check_keys(file, params, json_path, names, err);
    free(names);
    return rc;
}

/* Reads params[spec->name] (present) into v. */
static int read_value(const loom_param_spec *ps, const cJSON *params,
                      const char *file, const char *json_path,
                      loom_param_value *v, loom_error *err)
{
    int rc;
    switch (ps->type) {
    case LOOM_PARAM_INT: {
        int64_t lo, hi;
        int_bounds(ps, &lo, &hi);
        rc = loom_json_get_int(file, params, json_path, ps->name, 1, lo, hi, &v->i, err);
        v->d = (double)v->i;
        return rc;
    }
    case LOOM_PARAM_DOUBLE: {
        double lo, hi;
        double_bounds(ps, &lo, &hi);
        return loom_json_get_double(file, params, json_path, ps->name, 1, lo, hi,
                                    &v->d, err);
    }
    case LOOM_PARAM_BOOL: {
        int b = 0;
        rc = loom_json_get_bool(file, params, json_path, ps->name, 1, &b, err);
        v->i = b;
        v->d = b;
        return rc;
    }
    default: {
        const char *s = NULL;
        if ((rc = loom_json_get_string(file, params, json_path, ps->name, 1, &s, err)))
            return rc;
        if (ps->type == LOOM_PARAM_ENUM && !enum_has(ps, s)) {
            char list[320], full[256];
            enum_list(ps, list, sizeof list);
            loom_json_path_key(full, sizeof full, json_path, ps->name);
            return loom_set_error(err, LOOM_EINVAL, "%s: %s: expected %s, found \"%s\"",
                                  file, full, list, s);
        }
        return set_string(v, s, err);
    }
    }
}

int loom_params_resolve(const loom_plugin_manifest *m, const cJSON *params,
                        const char *file, const char *json_path,
                        loom_param_value **out, int *n_out, loom_error *err)
{
    *out = NULL;
    *n_out = 0;
    if (params && !cJSON_IsObject(params))
        return loom_set_error(err, LOOM_EINVAL, "%s: %s: expected an object, found %s",
                              file, json_path, loom_json_type_name(params));
    int rc = params ? check_unknown(m, params, file, json_path, err) : LOOM_OK;
    if (rc)
        return rc;
    loom_param_value *v = calloc((size_t)m->n_params + 1, sizeof *v);
    if (!v)
        return loom_set_error(err, LOOM_ENOMEM, "out of memory");
    for (int i = 0; i < m->n_params && !rc; i++) {
        const loom_param_spec *ps = &m->params[i];
        v[i] = ps->def;
        v[i].s = NULL;
        v[i].name = strdup(ps->name);
        if (!v[i].name) {
            rc = loom_set_error(err, LOOM_ENOMEM, "out of memory");
            break;
        }
        if (ps->type == LOOM_PARAM_STRING || ps->type == LOOM_PARAM_ENUM)
            rc = set_string(&v[i], ps->def.s, err);
        if (!rc && params && cJSON_GetObjectItemCaseSensitive(params, ps->name))
            rc = read_value(ps, params, file, json_path, &v[i], err);
    }
    if (rc) {
        loom_params_free(v, m->n_params);
        return rc;
    }
    *out = v;
    *n_out = m->n_params;
    return LOOM_OK;
}

/* Parses text as a whole int64; 0 on failure. */
static int parse_int(const char *text, int64_t *out)
{
    char *end;
    errno = 0;
    long long x = strtoll(text, &end, 10);
    if (errno || end == text || *end)
        return 0;
    *out = (int64_t)x;
    return 1;
}

int loom_params_set_from_string(const loom_plugin_manifest *m,
                                loom_param_value *values, int n_values,
                                const char *key, const char *text,
                                loom_error *err)
{
    const loom_param_spec *ps = NULL;
    loom_param_value *v = NULL;
    for (int i = 0; i < m->n_params; i++)
        if (!strcmp(m->params[i].name, key))
            ps = &m->params[i];
    for (int i = 0; i < n_values; i++)
        if (!strcmp(values[i].name, key))
            v = &values[i];
    if (!ps || !v) {
        char list[320];
        size_t n = 0;
        list[0] = 0;
        for (int i = 0; i < m->n_params && n < sizeof list; i++)
            n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "",
                                  m->params[i].name);
        return loom_set_error(err, LOOM_ENOTFOUND,
                              "%s.%s: unknown param (plugin %s declares: %s)", m->id,
                              key, m->id, n ? list : "no params");
    }
    char want[320];
    switch (ps->type) {
    case LOOM_PARAM_INT: {
        int64_t lo, hi, x = 0;
        int_bounds(ps, &lo, &hi);
        if (parse_int(text, &x) && x >= lo && x <= hi) {
            v->i = x;
            v->d = (double)x;
            return LOOM_OK;
        }
        if (!ps->has_min && !ps->has_max)
            snprintf(want, sizeof want, "an integer");
        else if (!ps->has_max)
            snprintf(want, sizeof want, "an integer >= %lld", (long long)lo);
        else if (!ps->has_min)
            snprintf(want, sizeof want, "an integer <= %lld", (long long)hi);
        else
            snprintf(want, sizeof want, "an integer in [%lld, %lld]", (long long)lo,
                     (long long)hi);
        break;
    }
    case LOOM_PARAM_DOUBLE: {
        double lo, hi;
        double_bounds(ps, &lo, &hi);
        char *end;
        errno = 0;
        double x = strtod(text, &end);
        if (!errno && end != text && !*end && isfinite(x) && x >= lo && x <= hi) {
            v->d = x;
            return LOOM_OK;
        }
        if (!ps->has_min && !ps->has_max)
            snprintf(want, sizeof want, "a number");
        else if (!ps->has_max)
            snprintf(want, sizeof want, "a number >= %.15g", lo);
        else if (!ps->has_min)
            snprintf(want, sizeof want, "a number <= %.15g", hi);
        else
            snprintf(want, sizeof want, "a number in [%.15g, %.15g]", lo, hi);
        break;
    }
    case LOOM_PARAM_BOOL:
        if (!strcmp(text, "true") || !strcmp(text, "1")) {
            v->i = 1;
            v->d = 1;
            return LOOM_OK;
        }
        if (!strcmp(text, "false") || !strcmp(text, "0")) {
            v->i = 0;
            v->d = 0;
            return LOOM_OK;
        }
        snprintf(want, sizeof want, "true or false");
        break;
    case LOOM_PARAM_STRING:
        return set_string(v, text, err);
    default:
        if (enum_has(ps, text))
            return set_string(v, text, err);
        enum_list(ps, want, sizeof want);
        break;
    }
    return loom_set_error(err, LOOM_EINVAL, "%s.%s: expected %s, found \"%s\"", m->id,
                          key, want, text);
}

void loom_params_format(const loom_param_value *v, int n, char *buf, size_t size)
{
    size_t len = 0;
    if (!size)
        return;
    buf[0] = 0;
    for (int i = 0; i < n && len < size; i++) {
        const char *sep = i ? " " : "";
        switch (v[i].type) {
        case LOOM_PARAM_INT:
            len += (size_t)snprintf(buf + len, size - len, "%s%s=%lld", sep, v[i].name,
                                    (long long)v[i].i);
            break;
        case LOOM_PARAM_DOUBLE:
            len += (size_t)snprintf(buf + len, size - len, "%s%s=%.15g", sep,
                                    v[i].name, v[i].d);
            break;
        case LOOM_PARAM_BOOL:
            len += (size_t)snprintf(buf + len, size - len, "%s%s=%s", sep, v[i].name,
                                    v[i].i ? "true" : "false");
            break;
        case LOOM_PARAM_STRING:
            len += (size_t)snprintf(buf + len, size - len, "%s%s=\"%s\"", sep,
                                    v[i].name, v[i].s ? v[i].s : "");
            break;
        default:
            len += (size_t)snprintf(buf + len, size - len, "%s%s=%s", sep, v[i].name,
                                    v[i].s ? v[i].s : "");
            break;
        }
    }
}
