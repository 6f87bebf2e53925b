/* ab_suite.c - the `loom ab` suite file: a list of named problems, each
 * validated field by field with JSON paths; relative paths resolve against
 * the suite file's folder. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ab.h"
#include <loom/sys/json.h>
#include <loom/sys/problem.h>
#include <loom/sys/util.h>

/* Copies a string (NULL stays NULL); sets *oom on failure. */
static char *dup_str(const char *s, int *oom)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        *oom = 1;
    return d;
}

/* Folder of `path` with a trailing slash ("" for a bare file name). */
static void folder_of(const char *path, char *buf, size_t size)
{
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path + 1) : 0;
    if (n >= size)
        n = size - 1;
    memcpy(buf, path, n);
    buf[n] = 0;
}

/* 1 when `name` is one of the NULL-terminated presets (any case). */
static int is_preset(const char *name, const char *const *presets)
{
    for (int i = 0; presets[i]; i++)
        if (loom_name_eq(name, presets[i]))
            return 1;
    return 0;
}

/* A file path resolved against the suite folder, checked for reading. */
static int resolve_file(const char *file, const char *dir, const char *path, const char *key,
                        const char *value, char **out, loom_error *err)
{
    size_t n = strlen(dir) + strlen(value) + 1;
    char *full = malloc(n);
    if (!full)
        return loom_set_error(err, LOOM_ENOMEM, "out of memory");
    if (value[0] == '/')
        snprintf(full, n, "%s", value);
    else
        snprintf(full, n, "%s%s", dir, value);
    if (access(full, R_OK) != 0) {
        int e = errno;
        loom_set_error(err, LOOM_EINVAL, "%s: %s.%s: expected a readable file, found \"%s\" (%s)",
                       file, path, key, full, strerror(e));
        free(full);
        return LOOM_EINVAL;
    }
    *out = full;
    return LOOM_OK;
}

/* Reads an optional string member that names a preset or a file. */
static int spec_member(const char *file, const char *dir, const cJSON *obj, const char *path,
                       const char *key, const char *const *presets, char **out, loom_error *err)
{
    const char *v = NULL;
    int rc = loom_json_get_string(file, obj, path, key, 0, &v, err);
    if (rc != LOOM_OK || !v)
        return rc;
    if (!v[0])
        return loom_set_error(err, LOOM_EINVAL, "%s: %s.%s: expected a %s, found an empty string",
                              file, path, key,
                              presets ? "preset name or a file path" : "file path");
    if (presets && is_preset(v, presets)) {
        *out = strdup(v);
        return *out ? LOOM_OK : loom_set_error(err, LOOM_ENOMEM, "out of memory");
    }
    return resolve_file(file, dir, path, key, v, out, err);
}

/* Reads one case object at `path`. */
static int load_case(const char *file, const char *dir, const cJSON *obj, const char *path,
                     loom_ab_case *c, loom_error *err)
{
    static const char *const keys[] = {"name",     "model",       "cluster",    "parallel",
                                       "generate", "workload",    "stage_times", "iterations",
                                       "seed",     NULL};
    int rc = loom_json_check_keys(file, obj, path, keys, err);
    const char *name = NULL, *parallel = NULL, *generate = NULL;
    if (rc == LOOM_OK)
        rc = loom_json_get_string(file, obj, path, "name", 1, &name, err);
    char where[96];
    loom_json_path_key(where, sizeof where, path, "name");
    if (rc == LOOM_OK)
        rc = loom_check_name(file, where, name, err);
    if (rc == LOOM_OK)
        rc = loom_json_get_string(file, obj, path, "parallel", 0, &parallel, err);
    if (rc == LOOM_OK)
        rc = loom_json_get_string(file, obj, path, "generate", 0, &generate, err);
    int64_t iterations = 0, seed = -1;
    if (rc == LOOM_OK)
        rc = loom_json_get_int(file, obj, path, "iterations", 0, 1, LOOM_MAX_ITERATIONS,
                               &iterations, err);
    if (rc == LOOM_OK)
        rc = loom_json_get_int(file, obj, path, "seed", 0, 0, INT64_MAX, &seed, err);
    if (rc == LOOM_OK)
        rc = spec_member(file, dir, obj, path, "model", loom_model_preset_names(), &c->model, err);
    if (rc == LOOM_OK)
        rc = spec_member(file, dir, obj, path, "cluster", loom_cluster_preset_names(), &c->cluster,
                         err);
    if (rc == LOOM_OK)
        rc = spec_member(file, dir, obj, path, "workload", NULL, &c->workload, err);
    if (rc == LOOM_OK)
        rc = spec_member(file, dir, obj, path, "stage_times", NULL, &c->stage_times, err);
    if (rc != LOOM_OK)
        return rc;
    if (generate) {
        const char *const *families = loom_workload_family_names();
        int known = 0;
        for (int i = 0; families[i]; i++)
            known |= strcmp(generate, families[i]) == 0;
        if (!known) {
            char list[256];
            loom_join_names(families, list, sizeof list);
            return loom_set_error(err, LOOM_EINVAL,
                                  "%s: %s.generate: expected a workload family (%s), found \"%s\"",
                                  file, path, list, generate);
        }
    }
    if (generate && c->workload)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s: expected \"generate\" or \"workload\", found both", file,
                              path);
    if (c->stage_times && (c->model || c->cluster || parallel || generate || c->workload))
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s: expected \"stage_times\" alone (a stage-times problem has "
                              "no model, cluster, parallel config or workload), found it with "
                              "other problem fields",
                              file, path);
    int oom = 0;
    c->name = dup_str(name, &oom);
    c->parallel = dup_str(parallel, &oom);
    c->generate = dup_str(generate, &oom);
    c->iterations = (int32_t)iterations;
    c->has_seed = seed >= 0;
    c->seed = seed >= 0 ? (uint64_t)seed : 0;
    return oom ? loom_set_error(err, LOOM_ENOMEM, "out of memory") : LOOM_OK;
}

/* Reads every case and checks that names are unique. */
static int load_cases(const char *file, const char *dir, const cJSON *cases, loom_ab_suite *s,
                      loom_error *err)
{
    int n = cJSON_GetArraySize(cases);
    if (n < 1 || n > LOOM_AB_MAX_CASES)
        return loom_set_error(err, LOOM_EINVAL, "%s: cases: expected 1 to %d cases, found %d",
                              file, LOOM_AB_MAX_CASES, n);
    s->cases = calloc((size_t)n, sizeof *s->cases);
    if (!s->cases)
        return loom_set_error(err, LOOM_ENOMEM, "out of memory");
    int i = 0;
    for (const cJSON *it = cases->child; it; it = it->next, i++) {
        char path[32];
        loom_json_path_index(path, sizeof path, "cases", i);
        s->n_cases = i + 1;
        int rc = load_case(file, dir, it, path, &s->cases[i], err);
        if (rc != LOOM_OK)
            return rc;
        for (int k = 0; k < i; k++)
            if (!strcmp(s->cases[k].name, s->cases[i].name))
                return loom_set_error(err, LOOM_EINVAL,
                                      "%s: %s.name: expected a name not used before, found \"%s\" "
                                      "(also cases[%d].name)",
                                      file, path, s->cases[i].name, k);
    }
    return LOOM_OK;
}

int loom_ab_suite_load(const char *path, loom_ab_suite **out, loom_error *err)
{
    *out = NULL;
    cJSON *root = NULL;
    int rc = loom_json_load(path, &root, err);
    if (rc != LOOM_OK)
        return rc;
    loom_ab_suite *s = calloc(1, sizeof *s);
    if (!s) {
        cJSON_Delete(root);
        return loom_set_error(err, LOOM_ENOMEM, "out of memory");
    }
    static const char *const keys[] = {"description", "cases", NULL};
    const char *description = "";
    const cJSON *cases = NULL;
    rc = loom_json_check_keys(path, root, "", keys, err);
    if (rc == LOOM_OK)
        rc = loom_json_get_string(path, root, "", "description", 0, &description, err);
    if (rc == LOOM_OK)
        rc = loom_json_get_array(path, root, "", "cases", 1, &cases, err);
    char dir[4096];
    folder_of(path, dir, sizeof dir);
    if (rc == LOOM_OK)
        rc = load_cases(path, dir, cases, s, err);
    if (rc == LOOM_OK) {
        s->path = strdup(path);
        s->description = strdup(description);
        if (!s->path || !s->description)
            rc = loom_set_error(err, LOOM_ENOMEM, "out of memory");
    }
    cJSON_Delete(root);
    if (rc != LOOM_OK) {
        loom_ab_suite_free(s);
        return rc;
    }
    *out = s;
    return LOOM_OK;
}

void loom_ab_suite_free(loom_ab_suite *s)
{
    if (!s)
        return;
    for (int32_t i = 0; i < s->n_cases; i++) {
        loom_ab_case *c = &s->cases[i];
        free(c->name);
        free(c->model);
        free(c->cluster);
        free(c->parallel);
        free(c->generate);
        free(c->workload);
        free(c->stage_times);
    }
    free(s->cases);
    free(s->path);
    free(s->description);
    free(s);
}

void loom_ab_case_args(const loom_ab_case *c, const loom_session_args *base, const char *manifest,
                       loom_session_args *out)
{
    *out = *base;
    out->manifest = manifest;
    out->model = c->model;
    out->cluster = c->cluster;
    out->parallel = c->parallel;
    out->generate = c->generate;
    out->workload = c->workload;
    out->stage_times = c->stage_times;
    if (c->iterations > 0)
        out->iterations = c->iterations;
    if (c->has_seed) {
        out->has_seed = 1;
        out->seed = c->seed;
    }
}
