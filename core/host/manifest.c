/* manifest.c - parsing and validating a plugin's manifest.json. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <limits.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <loom/sys/json.h>
#include "ctx.h"
#include "registry_priv.h"

/* strdup that reports allocation failure through err. */
static int dup_str(const char *s, char **out, loom_error *err)
{
    *out = strdup(s ? s : "");
    if (!*out)
        return loom_set_error(err, LOOM_ENOMEM, "out of memory");
    return LOOM_OK;
}

/* Sets a param default's string (owned by the spec). */
static int set_def_string(loom_param_spec *ps, const char *s, loom_error *err)
{
    char *copy = NULL;
    int rc = dup_str(s, &copy, err);
    ps->def.s = copy;
    return rc;
}

/* Role names in enum loom_role_id order. */
static const char *const role_names[] = {
    LOOM_ROLE_COST_MODEL, LOOM_ROLE_PARTITIONER, LOOM_ROLE_RANKER,
    LOOM_ROLE_INTERLEAVER, LOOM_ROLE_MEMORY_TUNER};

int loom_role_index(const char *role)
{
    for (int i = 0; role && i < 5; i++)
        if (!strcmp(role, role_names[i]))
            return i;
    return -1;
}

const char *loom_role_name(int index)
{
    return (index >= 0 && index < 5) ? role_names[index] : NULL;
}

const char *loom_param_type_name(int type)
{
    switch (type) {
    case LOOM_PARAM_INT: return "int";
    case LOOM_PARAM_DOUBLE: return "float";
    case LOOM_PARAM_BOOL: return "bool";
    case LOOM_PARAM_STRING: return "string";
    case LOOM_PARAM_ENUM: return "enum";
    default: return "?";
    }
}

int loom_version_parse(const char *version, unsigned long v[3])
{
    const char *p = version;
    for (int k = 0; k < 3; k++) {
        if (*p < '0' || *p > '9')
            return LOOM_EINVAL;
        if (*p == '0' && p[1] >= '0' && p[1] <= '9')
            return LOOM_EINVAL; /* no leading zeros */
        char *end;
        v[k] = strtoul(p, &end, 10);
        if (end - p > 9)
            return LOOM_EINVAL;
        p = end;
        if (k < 2) {
            if (*p != '.')
                return LOOM_EINVAL;
            p++;
        }
    }
    return *p ? LOOM_EINVAL : LOOM_OK;
}

int loom_version_compare(const char *a, const char *b)
{
    unsigned long va[3] = {0, 0, 0}, vb[3] = {0, 0, 0};
    loom_version_parse(a, va);
    loom_version_parse(b, vb);
    for (int k = 0; k < 3; k++)
        if (va[k] != vb[k])
            return va[k] < vb[k] ? -1 : 1;
    return 0;
}

/* 1 when every byte of s is in [A-Za-z0-9] or in `extra`, and s is non-empty. */
static int charset_ok(const char *s, const char *extra)
{
    if (!*s)
        return 0;
    for (const char *p = s; *p; p++) {
        char c = *p;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || strchr(extra, c)))
            return 0;
    }
    return 1;
}

/* 1 when s is a C identifier. */
static int is_identifier(const char *s)
{
    return charset_ok(s, "_") && !(s[0] >= '0' && s[0] <= '9');
}

/* Checks that `binary` is a plain file name inside the plugin folder. */
static int check_binary(const char *file, const char *binary, loom_error *err)
{
    const char *why = NULL;
    if (!*binary)
        why = "an empty string";
    else if (binary[0] == '/')
        why = "an absolute path";
    else if (!strcmp(binary, "..") || !strncmp(binary, "../", 3) ||
             strstr(binary, "/../") ||
             (strlen(binary) >= 3 && !strcmp(binary + strlen(binary) - 3, "/..")))
        why = "a path with a '..' component";
    else if (strchr(binary, '/'))
        why = "a path with '/'";
    else if (!strcmp(binary, "."))
        why = "\".\"";
    if (why)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: binary: expected a file name inside the plugin "
                              "folder, found %s (\"%s\")",
                              file, why, binary);
    return LOOM_OK;
}

/* Fails when the member `key` of a param spec is present but not allowed
 * for its type. */
static int forbid(const char *file, const cJSON *spec, const char *path,
                  const char *key, const char *type, loom_error *err)
{
    if (cJSON_GetObjectItemCaseSensitive(spec, key))
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s.%s: expected no \"%s\" for a param of type "
                              "%s, found one",
                              file, path, key, key, type);
    return LOOM_OK;
}

/* Parses the numeric bounds and default of an int or float param. */
static int parse_numeric(const char *file, const cJSON *js, const char *path,
                         loom_param_spec *ps, loom_error *err)
{
    int rc;
    char full[256];
    if (ps->type == LOOM_PARAM_INT) {
        int64_t lo = INT64_MIN, hi = INT64_MAX;
        if ((rc = loom_json_get_int(file, js, path, "min", 0, INT64_MIN, INT64_MAX,
                                    &lo, err)))
            return rc;
        if ((rc = loom_json_get_int(file, js, path, "max", 0, INT64_MIN, INT64_MAX,
                                    &hi, err)))
            return rc;
        ps->has_min = cJSON_GetObjectItemCaseSensitive(js, "min") != NULL;
        ps->has_max = cJSON_GetObjectItemCaseSensitive(js, "max") != NULL;
        ps->min = (double)lo;
        ps->max = (double)hi;
        if (lo > hi) {
            loom_json_path_key(full, sizeof full, path, "max");
            return loom_set_error(err, LOOM_EINVAL,
                                  "%s: %s: expected an integer >= min (%lld), found %lld",
                                  file, full, (long long)lo, (long long)hi);
        }
        if ((rc = loom_json_get_int(file, js, path, "default", 1, lo, hi,
                                    &ps->def.i, err)))
            return rc;
        ps->def.d = (double)ps->def.i;
        return LOOM_OK;
    }
    double lo = -DBL_MAX, hi = DBL_MAX;
    if ((rc = loom_json_get_double(file, js, path, "min", 0, -DBL_MAX, DBL_MAX,
                                   &lo, err)))
        return rc;
    if ((rc = loom_json_get_double(file, js, path, "max", 0, -DBL_MAX, DBL_MAX,
                                   &hi, err)))
        return rc;
    ps->has_min = cJSON_GetObjectItemCaseSensitive(js, "min") != NULL;
    ps->has_max = cJSON_GetObjectItemCaseSensitive(js, "max") != NULL;
    ps->min = lo;
    ps->max = hi;
    if (lo > hi) {
        loom_json_path_key(full, sizeof full, path, "max");
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s: expected a number >= min (%.15g), found %.15g",
                              file, full, lo, hi);
    }
    return loom_json_get_double(file, js, path, "default", 1, lo, hi, &ps->def.d,
                                err);
}

/* Parses the "values" list and default of an enum param. */
static int parse_enum(const char *file, const cJSON *js, const char *path,
                      loom_param_spec *ps, loom_error *err)
{
    const cJSON *vals = NULL;
    char full[256], item_path[256];
    int rc = loom_json_get_array(file, js, path, "values", 1, &vals, err);
    if (rc)
        return rc;
    loom_json_path_key(full, sizeof full, path, "values");
    int n = cJSON_GetArraySize(vals);
    if (n == 0)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s: expected a non-empty array of strings, found "
                              "an empty array",
                              file, full);
    ps->values = calloc((size_t)n, sizeof *ps->values);
    if (!ps->values)
        return loom_set_error(err, LOOM_ENOMEM, "out of memory");
    int i = 0;
    for (const cJSON *v = vals->child; v; v = v->next, i++) {
        loom_json_path_index(item_path, sizeof item_path, full, i);
        if (!cJSON_IsString(v))
            return loom_set_error(err, LOOM_EINVAL, "%s: %s: expected a string, found %s",
                                  file, item_path, loom_json_type_name(v));
        for (int k = 0; k < i; k++)
            if (!strcmp(ps->values[k], v->valuestring))
                return loom_set_error(err, LOOM_EINVAL,
                                      "%s: %s: expected a value not listed before, "
                                      "found \"%s\" again",
                                      file, item_path, v->valuestring);
        if ((rc = dup_str(v->valuestring, &ps->values[i], err)))
            return rc;
        ps->n_values = i + 1;
    }
    const char *def = NULL;
    if ((rc = loom_json_get_string(file, js, path, "default", 1, &def, err)))
        return rc;
    for (int k = 0; k < ps->n_values; k++)
        if (!strcmp(ps->values[k], def))
            return set_def_string(ps, def, err);
    loom_json_path_key(full, sizeof full, path, "default");
    return loom_set_error(err, LOOM_EINVAL,
                          "%s: %s: expected one of the listed values, found \"%s\"",
                          file, full, def);
}

/* Parses one entry of "params". */
static int parse_param(const char *file, const cJSON *js, const char *name,
                       loom_param_spec *ps, loom_error *err)
{
    static const char *const keys[] = {"type", "default", "min", "max",
                                       "values", "doc", NULL};
    char path[256];
    int rc;
    loom_json_path_key(path, sizeof path, "params", name);
    if (!charset_ok(name, "_-") || (name[0] >= '0' && name[0] <= '9') ||
        name[0] == '-')
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s: expected a param name of letters, digits, "
                              "'_' and '-' starting with a letter or '_', found \"%s\"",
                              file, path, name);
    if ((rc = dup_str(name, &ps->name, err)))
        return rc;
    ps->def.name = ps->name;
    if (!cJSON_IsObject(js))
        return loom_set_error(err, LOOM_EINVAL, "%s: %s: expected an object, found %s",
                              file, path, loom_json_type_name(js));
    if ((rc = loom_json_check_keys(file, js, path, keys, err)))
        return rc;
    const char *type = NULL, *doc = "";
    if ((rc = loom_json_get_string(file, js, path, "type", 1, &type, err)))
        return rc;
    char sub[256];
    loom_json_path_key(sub, sizeof sub, path, "doc");
    if ((rc = loom_json_get_string(file, js, path, "doc", 0, &doc, err)) ||
        (rc = loom_check_text(file, sub, doc, err)))
        return rc;
    if ((rc = dup_str(doc, &ps->doc, err)))
        return rc;
    static const int types[] = {LOOM_PARAM_INT, LOOM_PARAM_DOUBLE, LOOM_PARAM_BOOL,
                                LOOM_PARAM_STRING, LOOM_PARAM_ENUM};
    ps->type = -1;
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++)
        if (!strcmp(type, loom_param_type_name(types[k])))
            ps->type = types[k];
    ps->def.type = ps->type;
    if (ps->type < 0)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s.type: expected one of int, float, bool, string, "
                              "enum, found \"%s\"",
                              file, path, type);
    if (ps->type != LOOM_PARAM_ENUM &&
        (rc = forbid(file, js, path, "values", type, err)))
        return rc;
    if (ps->type != LOOM_PARAM_INT && ps->type != LOOM_PARAM_DOUBLE) {
        if ((rc = forbid(file, js, path, "min", type, err)) ||
            (rc = forbid(file, js, path, "max", type, err)))
            return rc;
    }
    switch (ps->type) {
    case LOOM_PARAM_INT:
    case LOOM_PARAM_DOUBLE:
        return parse_numeric(file, js, path, ps, err);
    case LOOM_PARAM_BOOL: {
        int b = 0;
        rc = loom_json_get_bool(file, js, path, "default", 1, &b, err);
        ps->def.i = b;
        return rc;
    }
    case LOOM_PARAM_STRING: {
        const char *s = NULL;
        loom_json_path_key(sub, sizeof sub, path, "default");
        if ((rc = loom_json_get_string(file, js, path, "default", 1, &s, err)) ||
            (rc = loom_check_text(file, sub, s, err)))
            return rc;
        return set_def_string(ps, s, err);
    }
    default:
        return parse_enum(file, js, path, ps, err);
    }
}

/* Parses the "provides" object. */
static int parse_provides(const char *file, const cJSON *root,
                          loom_plugin_manifest *m, loom_error *err)
{
    static const char *const keys[] = {"role", "role_version", "name", NULL};
    const cJSON *pv = NULL;
    const char *role = NULL, *name = NULL;
    int64_t rv = 0;
    int rc;
    if ((rc = loom_json_get_object(file, root, "", "provides", 1, &pv, err)) ||
        (rc = loom_json_check_keys(file, pv, "provides", keys, err)) ||
        (rc = loom_json_get_string(file, pv, "provides", "role", 1, &role, err)))
        return rc;
    if (loom_role_index(role) < 0)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: provides.role: expected one of cost_model, "
                              "partitioner, ranker, interleaver, memory_tuner, found \"%s\"",
                              file, role);
    if ((rc = loom_json_get_int(file, pv, "provides", "role_version", 1, 1,
                                UINT32_MAX, &rv, err)) ||
        (rc = loom_json_get_string(file, pv, "provides", "name", 1, &name, err)))
        return rc;
    if (!charset_ok(name, "._-") || strlen(name) > 100)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: provides.name: expected 1-100 characters from "
                              "[A-Za-z0-9._-], found \"%s\"",
                              file, name);
    m->role_version = (uint32_t)rv;
    if ((rc = dup_str(role, &m->role, err)))
        return rc;
    return dup_str(name, &m->name, err);
}

/* Fills dir, manifest_path and binary_path from the manifest's location. */
static int set_paths(const char *path, const char *binary,
                     loom_plugin_manifest *m, loom_error *err)
{
    char *abs = realpath(path, NULL);
    if (!abs)
        return loom_set_error(err, LOOM_EIO, "%s: cannot resolve path", path);
    char *slash = strrchr(abs, '/');
    size_t dlen = (size_t)(slash - abs);
    m->manifest_path = abs;
    m->dir = malloc(dlen + 2);
    m->binary_path = malloc(dlen + strlen(binary) + 2);
    if (!m->dir || !m->binary_path)
        return loom_set_error(err, LOOM_ENOMEM, "out of memory");
    if (dlen == 0) {
        strcpy(m->dir, "/");
    } else {
        memcpy(m->dir, abs, dlen);
        m->dir[dlen] = 0;
    }
    sprintf(m->binary_path, "%.*s/%s", (int)dlen, abs, binary);
    return LOOM_OK;
}

/* Validates the top-level fields of the manifest held in root. */
static int parse_root(const char *path, const cJSON *root,
                      loom_plugin_manifest *m, loom_error *err)
{
    static const char *const keys[] = {"loom_plugin", "id", "version", "abi",
                                       "binary", "entry", "description",
                                       "thread_safe", "provides", "params", NULL};
    int rc;
    int64_t fmt = 0, abi = 0;
    const char *id = NULL, *version = NULL, *binary = NULL;
    const char *entry = LOOM_PLUGIN_ENTRY_SYMBOL, *desc = "";
    if (!cJSON_IsObject(root))
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: (document): expected an object, found %s", path,
                              loom_json_type_name(root));
    if ((rc = loom_json_check_keys(path, root, "", keys, err)) ||
        (rc = loom_json_get_int(path, root, "", "loom_plugin", 1, INT64_MIN,
                                INT64_MAX, &fmt, err)))
        return rc;
    if (fmt != 1)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: loom_plugin: expected 1 (the manifest format "
                              "version), found %lld",
                              path, (long long)fmt);
    if ((rc = loom_json_get_string(path, root, "", "id", 1, &id, err)))
        return rc;
    if (!charset_ok(id, "._-") || strlen(id) > 100)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: id: expected 1-100 characters from [A-Za-z0-9._-], "
                              "found \"%s\"",
                              path, id);
    if ((rc = loom_json_get_string(path, root, "", "version", 1, &version, err)))
        return rc;
    unsigned long v[3];
    if (loom_version_parse(version, v))
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: version: expected MAJOR.MINOR.PATCH (e.g. \"1.0.0\"), "
                              "found \"%s\"",
                              path, version);
    if ((rc = loom_json_get_int(path, root, "", "abi", 1, 1, INT_MAX, &abi, err)) ||
        (rc = loom_json_get_string(path, root, "", "binary", 1, &binary, err)) ||
        (rc = check_binary(path, binary, err)) ||
        (rc = loom_json_get_string(path, root, "", "entry", 0, &entry, err)))
        return rc;
    if (!is_identifier(entry))
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: entry: expected a C identifier, found \"%s\"", path,
                              entry);
    m->thread_safe = 0;
    if ((rc = loom_json_get_string(path, root, "", "description", 0, &desc, err)) ||
        (desc && (rc = loom_check_text(path, "description", desc, err))) ||
        (rc = loom_json_get_bool(path, root, "", "thread_safe", 0, &m->thread_safe,
                                 err)))
        return rc;
    m->abi = (int)abi;
    if ((rc = dup_str(id, &m->id, err)) || (rc = dup_str(version, &m->version, err)) ||
        (rc = dup_str(entry, &m->entry, err)) ||
        (rc = dup_str(desc, &m->description, err)))
        return rc;
    if ((rc = parse_provides(path, root, m, err)))
        return rc;
    const cJSON *params = NULL;
    if ((rc = loom_json_get_object(path, root, "", "params", 0, &params, err)))
        return rc;
    int n = params ? cJSON_GetArraySize(params) : 0;
    if (n > 0) {
        m->params = calloc((size_t)n, sizeof *m->params);
        if (!m->params)
            return loom_set_error(err, LOOM_ENOMEM, "out of memory");
        for (const cJSON *p = params->child; p; p = p->next) {
            rc = parse_param(path, p, p->string, &m->params[m->n_params], err);
            m->n_params++;
            if (rc)
                return rc;
        }
    }
    return set_paths(path, binary, m, err);
}

int loom_parse_plugin_manifest(const char *path, loom_plugin_manifest *out,
                               loom_error *err)
{
    memset(out, 0, sizeof *out);
    cJSON *root = NULL;
    int rc = loom_json_load(path, &root, err);
    if (rc)
        return rc;
    rc = parse_root(path, root, out, err);
    cJSON_Delete(root);
    return rc;
}

void loom_plugin_manifest_clear(loom_plugin_manifest *m)
{
    if (!m)
        return;
    free(m->id);
    free(m->version);
    free(m->description);
    free(m->dir);
    free(m->manifest_path);
    free(m->binary_path);
    free(m->entry);
    free(m->role);
    free(m->name);
    for (int i = 0; i < m->n_params; i++) {
        loom_param_spec *ps = &m->params[i];
        free(ps->name);
        free(ps->doc);
        free((char *)ps->def.s);
        for (int k = 0; k < ps->n_values; k++)
            free(ps->values[k]);
        free(ps->values);
    }
    free(m->params);
    memset(m, 0, sizeof *m);
}
