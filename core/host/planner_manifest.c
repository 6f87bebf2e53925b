/* planner_manifest.c - reading, checking and overriding planner manifests. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <loom/sys/json.h>
#include "ctx.h"
#include <loom/sys/planner.h>
#include "registry_priv.h"
#include "pipeline.h"

void loom_planner_config_free(loom_planner_config *cfg)
{
    if (!cfg)
        return;
    free(cfg->path);
    free(cfg->dir);
    free(cfg->name);
    free(cfg->description);
    for (int i = 0; i < cfg->n_plugin_dirs; i++)
        free(cfg->plugin_dirs[i]);
    free(cfg->plugin_dirs);
    for (int i = 0; i < cfg->n_steps; i++) {
        free(cfg->steps[i].role);
        free(cfg->steps[i].use);
        cJSON_Delete(cfg->steps[i].params);
        free(cfg->steps[i].use_flag);
        for (int k = 0; k < cfg->steps[i].n_param_flags; k++)
            free(cfg->steps[i].param_flags[k]);
        free(cfg->steps[i].param_flags);
    }
    free(cfg->steps);
    free(cfg);
}

/* What may come after a step of order `prev` (-1: the start). */
static const char *expected_after(int prev)
{
    switch (prev) {
    case -1: return "\"cost_model\" (a pipeline starts with exactly one cost model)";
    case 0: return "\"partitioner\"";
    case 1: return "\"partitioner\" or \"ranker\"";
    case 2: return "\"interleaver\"";
    case 3: return "\"memory_tuner\" or the end of the pipeline";
    default: return "the end of the pipeline (at most one memory_tuner, last)";
    }
}

int loom_planner_config_check(const loom_planner_config *cfg, loom_error *err)
{
    int prev = -1;
    for (int i = 0; i < cfg->n_steps; i++) {
        int r = loom_role_index(cfg->steps[i].role);
        if (r < 0)
            return loom_set_error(err, LOOM_EINVAL,
                                  "%s: %s.role: expected one of cost_model, partitioner, "
                                  "ranker, interleaver, memory_tuner, found \"%s\"",
                                  cfg->path, cfg->steps[i].path, cfg->steps[i].role);
        if (!(r == prev + 1 || (r == 1 && prev == 1)))
            return loom_set_error(err, LOOM_EINVAL, "%s: %s.role: expected %s, found \"%s\"",
                                  cfg->path, cfg->steps[i].path, expected_after(prev),
                                  cfg->steps[i].role);
        prev = r;
    }
    if (prev < 3) {
        if (cfg->n_steps == 0)
            return loom_set_error(err, LOOM_EINVAL,
                                  "%s: pipeline: expected at least 4 steps (cost_model, "
                                  "partitioner, ranker, interleaver), found none",
                                  cfg->path);
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: pipeline: expected %s after %s, found the end of the "
                              "pipeline",
                              cfg->path, expected_after(prev),
                              cfg->steps[cfg->n_steps - 1].path);
    }
    return LOOM_OK;
}

/* strdup reporting ENOMEM. */
static int dup_str(const char *s, char **out, loom_error *err)
{
    *out = strdup(s ? s : "");
    return *out ? LOOM_OK : loom_set_error(err, LOOM_ENOMEM, "out of memory");
}

/* Sets cfg->dir (absolute folder of path) and the default name. */
static int set_location(loom_planner_config *cfg, const char *path, loom_error *err)
{
    char *abs = realpath(path, NULL);
    if (!abs)
        return loom_set_error(err, LOOM_EIO, "%s: cannot resolve path", path);
    char *slash = strrchr(abs, '/');
    const char *base = slash + 1;
    size_t blen = strlen(base);
    if (blen > 5 && !strcmp(base + blen - 5, ".json"))
        blen -= 5;
    cfg->name = malloc(blen + 1);
    if (cfg->name) {
        memcpy(cfg->name, base, blen);
        cfg->name[blen] = 0;
    }
    if (slash == abs)
        slash[1] = 0;
    else
        *slash = 0;
    cfg->dir = abs;
    return cfg->name ? LOOM_OK : loom_set_error(err, LOOM_ENOMEM, "out of memory");
}

/* Reads "plugin_dirs": relative entries resolve against the manifest dir. */
static int parse_plugin_dirs(loom_planner_config *cfg, const cJSON *root,
                             loom_error *err)
{
    const cJSON *arr = NULL;
    int rc = loom_json_get_array(cfg->path, root, "", "plugin_dirs", 0, &arr, err);
    if (rc || !arr)
        return rc;
    int n = cJSON_GetArraySize(arr);
    cfg->plugin_dirs = calloc((size_t)n + 1, sizeof *cfg->plugin_dirs);
    if (!cfg->plugin_dirs)
        return loom_set_error(err, LOOM_ENOMEM, "out of memory");
    int i = 0;
    for (const cJSON *it = arr->child; it; it = it->next, i++) {
        char ipath[64];
        loom_json_path_index(ipath, sizeof ipath, "plugin_dirs", i);
        if (!cJSON_IsString(it) || !it->valuestring[0])
            return loom_set_error(err, LOOM_EINVAL,
                                  "%s: %s: expected a non-empty directory path, found %s",
                                  cfg->path, ipath, loom_json_type_name(it));
        const char *s = it->valuestring;
        size_t len = strlen(cfg->dir) + strlen(s) + 2;
        char *full = malloc(len);
        if (!full)
            return loom_set_error(err, LOOM_ENOMEM, "out of memory");
        if (s[0] == '/')
            snprintf(full, len, "%s", s);
        else
            snprintf(full, len, "%s/%s", cfg->dir, s);
        cfg->plugin_dirs[cfg->n_plugin_dirs++] = full;
        struct stat st;
        if (stat(full, &st) != 0 || !S_ISDIR(st.st_mode))
            return loom_set_error(err, LOOM_ENOTFOUND,
                                  "%s: %s: expected an existing directory, found \"%s\" "
                                  "(%s)",
                                  cfg->path, ipath, s, full);
    }
    return LOOM_OK;
}

/* Reads one "pipeline" entry into step. */
static int parse_step(loom_planner_config *cfg, const cJSON *js, int i,
                      loom_step_config *step, loom_error *err)
{
    static const char *const keys[] = {"role", "use", "params", NULL};
    const char *role = NULL, *use = NULL;
    const cJSON *params = NULL;
    int rc;
    loom_json_path_index(step->path, sizeof step->path, "pipeline", i);
    if (!cJSON_IsObject(js))
        return loom_set_error(err, LOOM_EINVAL, "%s: %s: expected an object, found %s",
                              cfg->path, step->path, loom_json_type_name(js));
    if ((rc = loom_json_check_keys(cfg->path, js, step->path, keys, err)) ||
        (rc = loom_json_get_string(cfg->path, js, step->path, "role", 1, &role, err)) ||
        (rc = loom_json_get_string(cfg->path, js, step->path, "use", 1, &use, err)) ||
        (rc = loom_json_get_object(cfg->path, js, step->path, "params", 0, &params,
                                   err)))
        return rc;
    if (!use[0])
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s.use: expected a plugin id or name, found \"\"",
                              cfg->path, step->path);
    if ((rc = dup_str(role, &step->role, err)) || (rc = dup_str(use, &step->use, err)))
        return rc;
    if (params && !(step->params = cJSON_Duplicate(params, 1)))
        return loom_set_error(err, LOOM_ENOMEM, "out of memory");
    return LOOM_OK;
}

/* Validates the document and fills cfg. */
static int parse_config(loom_planner_config *cfg, const cJSON *root, loom_error *err)
{
    static const char *const keys[] = {"loom_planner", "name", "description",
                                       "plugin_dirs", "seed", "budget_ms",
                                       "max_evaluations", "memory_cap_bytes", "choose",
                                       "pipeline", NULL};
    const char *file = cfg->path;
    int64_t fmt = 0, seed = 1;
    const char *name = NULL, *desc = "", *choose = "iteration";
    const cJSON *pipe = NULL;
    int rc;
    if (!cJSON_IsObject(root))
        return loom_set_error(err, LOOM_EINVAL, "%s: (document): expected an object, found %s",
                              file, loom_json_type_name(root));
    if ((rc = loom_json_check_keys(file, root, "", keys, err)) ||
        (rc = loom_json_get_int(file, root, "", "loom_planner", 1, INT64_MIN, INT64_MAX,
                                &fmt, err)))
        return rc;
    if (fmt != 1)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: loom_planner: expected 1 (the manifest format "
                              "version), found %lld",
                              file, (long long)fmt);
    if ((rc = loom_json_get_string(file, root, "", "name", 0, &name, err)) ||
        (rc = loom_json_get_string(file, root, "", "description", 0, &desc, err)) ||
        (rc = loom_json_get_int(file, root, "", "seed", 0, 0, INT64_MAX, &seed, err)) ||
        (rc = loom_json_get_double(file, root, "", "budget_ms", 0, 0, 1e12,
                                   &cfg->budget_ms, err)) ||
        (rc = loom_json_get_int(file, root, "", "max_evaluations", 0, 0, (int64_t)1 << 40,
                                &cfg->max_evaluations, err)) ||
        (rc = loom_json_get_double(file, root, "", "memory_cap_bytes", 0, 0, 1e18,
                                   &cfg->memory_cap_bytes, err)) ||
        (rc = loom_json_get_string(file, root, "", "choose", 0, &choose, err)) ||
        (name && (rc = loom_check_name(file, "name", name, err))) ||
        (desc && (rc = loom_check_text(file, "description", desc, err))) ||
        (rc = dup_str(desc, &cfg->description, err)))
        return rc;
    if (strcmp(choose, "iteration") && strcmp(choose, "run"))
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: choose: expected \"iteration\" or \"run\", found \"%.100s\"",
                              file, choose);
    cfg->choose_run = !strcmp(choose, "run");
    cfg->seed = (uint64_t)seed;
    if (name) {
        free(cfg->name);
        if ((rc = dup_str(name, &cfg->name, err)))
            return rc;
    }
    if ((rc = parse_plugin_dirs(cfg, root, err)) ||
        (rc = loom_json_get_array(file, root, "", "pipeline", 1, &pipe, err)))
        return rc;
    int n = cJSON_GetArraySize(pipe);
    cfg->steps = calloc((size_t)n + 1, sizeof *cfg->steps);
    if (!cfg->steps)
        return loom_set_error(err, LOOM_ENOMEM, "out of memory");
    int i = 0;
    for (const cJSON *it = pipe->child; it; it = it->next, i++) {
        cfg->n_steps = i + 1;
        if ((rc = parse_step(cfg, it, i, &cfg->steps[i], err)))
            return rc;
    }
    return loom_planner_config_check(cfg, err);
}

#ifndef LOOM_INSTALL_DATA_DIR
#define LOOM_INSTALL_DATA_DIR "/usr/local/share/loom"
#endif
#ifndef LOOM_SOURCE_DIR
#define LOOM_SOURCE_DIR "."
#endif

/* Folders of the shipped planner manifests, searched in this order. */
static const char *const manifest_dirs[] = {"examples/manifests", LOOM_INSTALL_DATA_DIR "/manifests",
                                            LOOM_SOURCE_DIR "/examples/manifests"};

/* See planner.h. */
int loom_planner_manifest_resolve(const char *spec, char *buf, size_t size, loom_error *err)
{
    size_t n = strlen(spec);
    struct stat st;
    snprintf(buf, size, "%s", spec);
    if (!n || strchr(spec, '/') || (n > 5 && !strcmp(spec + n - 5, ".json")) ||
        stat(spec, &st) == 0)
        return LOOM_OK;
    size_t n_dirs = sizeof manifest_dirs / sizeof manifest_dirs[0];
    for (size_t k = 0; k < n_dirs; k++) {
        snprintf(buf, size, "%s/%s.json", manifest_dirs[k], spec);
        if (stat(buf, &st) == 0 && S_ISREG(st.st_mode))
            return LOOM_OK;
    }
    char near[4200] = "";
    for (size_t k = 0; k < n_dirs && !near[0]; k++) {
        snprintf(buf, size, "%s/%s.json", manifest_dirs[k], spec);
        if (!loom_closest_file(buf, near, sizeof near))
            near[0] = 0;
    }
    if (near[0]) {
        const char *slash = strrchr(near, '/');
        size_t len = strlen(slash ? slash + 1 : near);
        return loom_set_error(err, LOOM_ENOTFOUND,
                              "manifest \"%.100s\": expected a shipped manifest name "
                              "(examples/manifests/NAME.json) or a path to a planner manifest, "
                              "found neither; did you mean %.*s?", spec,
                              (int)(len > 5 ? len - 5 : len), slash ? slash + 1 : near);
    }
    return loom_set_error(err, LOOM_ENOTFOUND,
                          "manifest \"%.100s\": expected a shipped manifest name "
                          "(examples/manifests/NAME.json) or a path to a planner manifest, "
                          "found neither", spec);
}

int loom_planner_config_load(const char *spec, loom_planner_config **out,
                             loom_error *err)
{
    *out = NULL;
    cJSON *root = NULL;
    char path[4096];
    int rc = loom_planner_manifest_resolve(spec, path, sizeof path, err);
    if (rc)
        return rc;
    rc = loom_json_load(path, &root, err);
    if (rc)
        return rc;
    loom_planner_config *cfg = calloc(1, sizeof *cfg);
    if (!cfg) {
        cJSON_Delete(root);
        return loom_set_error(err, LOOM_ENOMEM, "out of memory");
    }
    cfg->seed = 1;
    rc = dup_str(path, &cfg->path, err);
    if (!rc)
        rc = set_location(cfg, path, err);
    if (!rc)
        rc = parse_config(cfg, root, err);
    cJSON_Delete(root);
    if (rc) {
        loom_planner_config_free(cfg);
        return rc;
    }
    *out = cfg;
    return LOOM_OK;
}

/* Splits "LEFT<sep>RIGHT" at the first sep into two malloc'd strings. */
static int split(const char *s, char sep, char **left, char **right)
{
    const char *p = strchr(s, sep);
    *left = *right = NULL;
    if (!p)
        return 0;
    *left = malloc((size_t)(p - s) + 1);
    *right = strdup(p + 1);
    if (!*left || !*right) {
        free(*left);
        free(*right);
        *left = *right = NULL;
        return -1;
    }
    memcpy(*left, s, (size_t)(p - s));
    (*left)[p - s] = 0;
    return 1;
}

/* Index of the first step with role, or -1. */
static int find_role(const loom_planner_config *cfg, const char *role)
{
    for (int i = 0; i < cfg->n_steps; i++)
        if (!strcmp(cfg->steps[i].role, role))
            return i;
    return -1;
}

/* Splits "ROLE[i]" in place into ROLE and i (0-based among the steps of
 * that role); a plain ROLE is index 0. -1 when the index is malformed. */
static int role_index_suffix(char *role)
{
    char *open = strchr(role, '[');
    if (!open)
        return 0;
    char *end = NULL;
    long i = strtol(open + 1, &end, 10);
    if (end == open + 1 || !end || strcmp(end, "]") != 0 || i < 0 || i > 1000)
        return -1;
    *open = '\0';
    return (int)i;
}

/* Step index of the n-th (0-based) step with `role`, or -1. */
static int find_role_nth(const loom_planner_config *cfg, const char *role, int n)
{
    for (int i = 0; i < cfg->n_steps; i++)
        if (!strcmp(cfg->steps[i].role, role) && n-- == 0)
            return i;
    return -1;
}

int loom_planner_config_use(loom_planner_config *cfg, const char *role_eq_name,
                            loom_error *err)
{
    char *role = NULL, *name = NULL;
    int s = split(role_eq_name, '=', &role, &name);
    if (s < 0)
        return loom_set_error(err, LOOM_ENOMEM, "out of memory");
    int r = s ? loom_role_index(role) : -1;
    int rc = LOOM_OK;
    if (!s || !name[0])
        rc = loom_set_error(err, LOOM_EINVAL, "--use %s: expected ROLE=NAME",
                            role_eq_name);
    else if (r < 0)
        rc = loom_set_error(err, LOOM_EINVAL,
                            "--use %s: expected a role of cost_model, partitioner, "
                            "ranker, interleaver, memory_tuner, found \"%s\"",
                            role_eq_name, role);
    if (rc) {
        free(role);
        free(name);
        return rc;
    }
    size_t flen = strlen(role_eq_name) + 7;
    char *flag = malloc(flen);
    if (!flag) {
        free(role);
        free(name);
        return loom_set_error(err, LOOM_ENOMEM, "out of memory");
    }
    snprintf(flag, flen, "--use %s", role_eq_name);
    int at = find_role(cfg, role);
    if (at >= 0) {
        free(cfg->steps[at].use);
        cJSON_Delete(cfg->steps[at].params);
        cfg->steps[at].params = NULL;
        cfg->steps[at].use = name;
        free(cfg->steps[at].use_flag);
        cfg->steps[at].use_flag = flag;
        free(role);
        return LOOM_OK;
    }
    loom_step_config *ns = realloc(cfg->steps, (size_t)(cfg->n_steps + 1) * sizeof *ns);
    if (!ns) {
        free(role);
        free(name);
        free(flag);
        return loom_set_error(err, LOOM_ENOMEM, "out of memory");
    }
    cfg->steps = ns;
    /* After the last step whose role comes no later than this one. */
    int pos = 0;
    for (int i = 0; i < cfg->n_steps; i++)
        if (loom_role_index(cfg->steps[i].role) <= r)
            pos = i + 1;
    memmove(&ns[pos + 1], &ns[pos], (size_t)(cfg->n_steps - pos) * sizeof *ns);
    memset(&ns[pos], 0, sizeof *ns);
    ns[pos].role = role;
    ns[pos].use = name;
    ns[pos].use_flag = flag;
    cfg->n_steps++;
    for (int i = 0; i < cfg->n_steps; i++)
        loom_json_path_index(ns[i].path, sizeof ns[i].path, "pipeline", i);
    return LOOM_OK;
}

int loom_planner_config_param(loom_planner_config *cfg,
                              const char *role_key_eq_value, loom_error *err)
{
    char *lhs = NULL, *value = NULL, *role = NULL, *key = NULL;
    int rc = LOOM_OK, nth = 0;
    int s = split(role_key_eq_value, '=', &lhs, &value);
    if (s > 0)
        s = split(lhs, '.', &role, &key);
    if (s < 0) {
        rc = loom_set_error(err, LOOM_ENOMEM, "out of memory");
    } else if (!s || !key[0] || !role[0]) {
        rc = loom_set_error(err, LOOM_EINVAL, "--param %s: expected ROLE.KEY=VALUE",
                            role_key_eq_value);
    } else if ((nth = role_index_suffix(role)) < 0) {
        rc = loom_set_error(err, LOOM_EINVAL,
                            "--param %s: expected ROLE[i].KEY=VALUE with i the step's index "
                            "among the steps of that role (from 0), found \"%s\"",
                            role_key_eq_value, role);
    } else if (loom_role_index(role) < 0) {
        rc = loom_set_error(err, LOOM_EINVAL,
                            "--param %s: expected a role of cost_model, partitioner, "
                            "ranker, interleaver, memory_tuner, found \"%s\"",
                            role_key_eq_value, role);
    } else {
        int at = find_role_nth(cfg, role, nth);
        cJSON *v = NULL;
        if (at < 0) {
            rc = loom_set_error(err, LOOM_ENOTFOUND,
                                "--param %s: the pipeline has no %s step%s",
                                role_key_eq_value, role, nth ? " of that index" : "");
        } else {
            v = cJSON_ParseWithOpts(value, NULL, 1);
            if (v && cJSON_IsNumber(v) && !isfinite(v->valuedouble)) {
                cJSON_Delete(v);
                v = NULL;
            }
            if (!v)
                v = cJSON_CreateString(value);
            loom_step_config *st = &cfg->steps[at];
            if (v && !st->params)
                st->params = cJSON_CreateObject();
            size_t flen = strlen(role_key_eq_value) + 9;
            char *flag = malloc(flen);
            char **flags = realloc(st->param_flags,
                                   (size_t)(st->n_param_flags + 1) * sizeof *flags);
            if (flags)
                st->param_flags = flags;
            if (!v || !st->params || !flag || !flags) {
                cJSON_Delete(v);
                free(flag);
                rc = loom_set_error(err, LOOM_ENOMEM, "out of memory");
            } else {
                cJSON_DeleteItemFromObjectCaseSensitive(st->params, key);
                cJSON_AddItemToObject(st->params, key, v);
                snprintf(flag, flen, "--param %s", role_key_eq_value);
                st->param_flags[st->n_param_flags++] = flag;
            }
        }
    }
    free(lhs);
    free(value);
    free(role);
    free(key);
    return rc;
}

/* See loom/sys/planner.h: every --use, then every --param. */
int loom_planner_config_apply(loom_planner_config *cfg, const char *const *uses, int n_uses,
                              const char *const *params, int n_params, loom_error *err)
{
    int rc = LOOM_OK;
    for (int k = 0; rc == LOOM_OK && k < n_uses; k++)
        rc = loom_planner_config_use(cfg, uses[k], err);
    for (int k = 0; rc == LOOM_OK && k < n_params; k++)
        rc = loom_planner_config_param(cfg, params[k], err);
    return rc;
}
