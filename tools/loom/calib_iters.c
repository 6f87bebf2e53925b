/* calib_iters.c - the measured iterations of `loom calibrate`
 * (docs/calibration.md, docs/schemas/calibration-iterations.schema.json):
 * each entry a model, parallel config and workload iteration with its
 * measured time and/or MFU, planned through its own session. */
#include <stdlib.h>
#include <string.h>
#include "calib.h"
#include <loom/sys/json.h>

/* Parses entry `e` at `path` into *out: keys, types, ranges and the rules
 * between fields; strings borrowed from e. */
static int parse_entry(const char *file, const cJSON *e, const char *path,
                       const char *cluster_spec, const char *manifest, loom_calib_entry *out,
                       loom_error *err)
{
    static const char *const keys[] = {"model", "cluster", "manifest", "parallel", "workload",
                                       "generate", "seed", "iteration", "measured_ms", "mfu",
                                       NULL};
    memset(out, 0, sizeof *out);
    out->manifest = manifest;
    out->seed = -1;
    out->measured_ms = -1;
    out->mfu = -1;
    int rc;
    if (!cJSON_IsObject(e))
        return loom_set_error(err, LOOM_EINVAL, "%s: %s: expected an object, found %s", file,
                              path, loom_json_type_name(e));
    if ((rc = loom_json_check_keys(file, e, path, keys, err)) ||
        (rc = loom_json_get_string(file, e, path, "model", 1, &out->model, err)) ||
        (rc = loom_json_get_string(file, e, path, "cluster", 0, &out->cluster, err)) ||
        (rc = loom_json_get_string(file, e, path, "manifest", 0, &out->manifest, err)) ||
        (rc = loom_json_get_string(file, e, path, "parallel", 0, &out->parallel, err)) ||
        (rc = loom_json_get_string(file, e, path, "workload", 0, &out->workload, err)) ||
        (rc = loom_json_get_string(file, e, path, "generate", 0, &out->generate, err)) ||
        (rc = loom_json_get_int(file, e, path, "seed", 0, 0, INT64_MAX, &out->seed, err)) ||
        (rc = loom_json_get_int(file, e, path, "iteration", 0, 0, LOOM_MAX_ITERATIONS - 1,
                                &out->iteration, err)) ||
        (rc = loom_json_get_double(file, e, path, "measured_ms", 0, 1e-9, 1e12,
                                   &out->measured_ms, err)) ||
        (rc = loom_json_get_double(file, e, path, "mfu", 0, 1e-9, 1, &out->mfu, err)))
        return rc;
    if (out->measured_ms < 0 && out->mfu < 0)
        return loom_set_error(err, LOOM_EINVAL, "%s: %s: expected measured_ms or mfu (or "
                              "both), found neither", file, path);
    if (out->workload && out->generate)
        return loom_set_error(err, LOOM_EINVAL, "%s: %s: expected workload or generate, found "
                              "both", file, path);
    if (out->cluster && cluster_spec && strcmp(out->cluster, cluster_spec))
        return loom_set_error(err, LOOM_EINVAL, "%s: %s.cluster: expected the cluster being "
                              "calibrated, \"%s\", found \"%s\"", file, path, cluster_spec,
                              out->cluster);
    return LOOM_OK;
}

int loom_calib_parse_iterations(const char *file, const char *cluster_spec,
                                const char *manifest, loom_calib_entry_fn fn, void *user,
                                loom_error *err)
{
    cJSON *root = NULL;
    int rc = loom_json_load(file, &root, err);
    if (rc != LOOM_OK)
        return rc;
    static const char *const keys[] = {"iterations", NULL};
    const cJSON *list = NULL;
    if (!cJSON_IsObject(root))
        rc = loom_set_error(err, LOOM_EINVAL, "%s: expected an object with \"iterations\", "
                            "found %s", file, loom_json_type_name(root));
    else if ((rc = loom_json_check_keys(file, root, "", keys, err)) == LOOM_OK)
        rc = loom_json_get_array(file, root, "", "iterations", 1, &list, err);
    int n = rc == LOOM_OK ? cJSON_GetArraySize(list) : 0;
    if (rc == LOOM_OK && n < 1)
        rc = loom_set_error(err, LOOM_EINVAL, "%s: iterations: expected at least one measured "
                            "iteration, found none", file);
    for (int i = 0; rc == LOOM_OK && i < n; i++) {
        char path[48];
        loom_json_path_index(path, sizeof path, "iterations", i);
        loom_calib_entry entry;
        rc = parse_entry(file, cJSON_GetArrayItem(list, i), path, cluster_spec, manifest,
                         &entry, err);
        if (rc == LOOM_OK)
            rc = fn(user, i, n, path, &entry, err);
    }
    cJSON_Delete(root);
    return rc;
}

/* What open_entry needs besides the entry. */
typedef struct open_ctx {
    loom_calib_set *set;
    const char *file;
    const char *cluster_spec;
} open_ctx;

/* loom_calib_entry_fn: opens entry i's session into set->iters[i]. */
static int open_entry(void *user, int i, int n, const char *path, const loom_calib_entry *e,
                      loom_error *err)
{
    open_ctx *c = user;
    loom_calib_set *set = c->set;
    if (i == 0 && !(set->iters = calloc((size_t)n, sizeof *set->iters)))
        return loom_set_error(err, LOOM_ENOMEM, "calibrate: out of memory");
    set->n_iters = i + 1; /* so that a half-opened session is closed */
    loom_calib_iter *it = &set->iters[i];
    it->measured_ms = e->measured_ms;
    it->mfu = e->mfu;
    loom_session_args a;
    loom_session_args_init(&a);
    a.manifest = e->manifest;
    a.model = e->model;
    a.cluster = c->cluster_spec ? c->cluster_spec : e->cluster;
    a.parallel = e->parallel;
    a.workload = e->workload;
    a.generate = e->generate;
    a.iterations = (int32_t)e->iteration + 1;
    if (e->seed >= 0) {
        a.has_seed = 1;
        a.seed = (uint64_t)e->seed;
    }
    loom_error why = {0, ""};
    int rc = loom_session_open(&it->session, &a, &why);
    if (rc != LOOM_OK)
        return loom_set_error(err, rc, "%s: %s: %s", c->file, path, why.message);
    loom_session_info info;
    loom_session_info_get(it->session, &info);
    if (e->iteration >= info.n_iterations)
        return loom_set_error(err, LOOM_EINVAL, "%s: %s.iteration: expected an iteration of "
                              "the workload (it has %d), found %lld", c->file, path,
                              info.n_iterations, (long long)e->iteration);
    it->iteration = (int32_t)e->iteration;
    info.problem->cluster = set->cluster;
    return LOOM_OK;
}

int loom_calib_read_iterations(loom_calib_set *set, const char *file, const char *cluster_spec,
                               const char *manifest, loom_error *err)
{
    open_ctx c = {set, file, cluster_spec};
    return loom_calib_parse_iterations(file, cluster_spec, manifest, open_entry, &c, err);
}
