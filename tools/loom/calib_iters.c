/* calib_iters.c - the measured iterations of `loom calibrate`
 * (docs/calibration.md, docs/schemas/calibration-iterations.schema.json):
 * each entry a model, parallel config and workload iteration with its
 * measured time and/or MFU, planned through its own session. */
#include <stdlib.h>
#include <string.h>
#include "calib.h"
#include <loom/sys/json.h>

/* Opens entry i's session from its JSON object at `path`. */
static int read_entry(loom_calib_set *set, const char *file, const cJSON *e, const char *path,
                      const char *cluster_spec, const char *manifest, loom_calib_iter *it,
                      loom_error *err)
{
    static const char *const keys[] = {"model", "cluster", "manifest", "parallel", "workload",
                                       "generate", "seed", "iteration", "measured_ms", "mfu",
                                       NULL};
    const char *model = NULL, *cluster = NULL, *par = NULL, *wl = NULL, *gen = NULL;
    const char *man = manifest;
    int64_t seed = -1, k = 0;
    it->measured_ms = -1;
    it->mfu = -1;
    int rc;
    if (!cJSON_IsObject(e))
        return loom_set_error(err, LOOM_EINVAL, "%s: %s: expected an object, found %s", file,
                              path, loom_json_type_name(e));
    if ((rc = loom_json_check_keys(file, e, path, keys, err)) ||
        (rc = loom_json_get_string(file, e, path, "model", 1, &model, err)) ||
        (rc = loom_json_get_string(file, e, path, "cluster", 0, &cluster, err)) ||
        (rc = loom_json_get_string(file, e, path, "manifest", 0, &man, err)) ||
        (rc = loom_json_get_string(file, e, path, "parallel", 0, &par, err)) ||
        (rc = loom_json_get_string(file, e, path, "workload", 0, &wl, err)) ||
        (rc = loom_json_get_string(file, e, path, "generate", 0, &gen, err)) ||
        (rc = loom_json_get_int(file, e, path, "seed", 0, 0, INT64_MAX, &seed, err)) ||
        (rc = loom_json_get_int(file, e, path, "iteration", 0, 0, LOOM_MAX_ITERATIONS - 1, &k,
                                err)) ||
        (rc = loom_json_get_double(file, e, path, "measured_ms", 0, 1e-9, 1e12,
                                   &it->measured_ms, err)) ||
        (rc = loom_json_get_double(file, e, path, "mfu", 0, 1e-9, 1, &it->mfu, err)))
        return rc;
    if (it->measured_ms < 0 && it->mfu < 0)
        return loom_set_error(err, LOOM_EINVAL, "%s: %s: expected measured_ms or mfu (or "
                              "both), found neither", file, path);
    if (wl && gen)
        return loom_set_error(err, LOOM_EINVAL, "%s: %s: expected workload or generate, found "
                              "both", file, path);
    if (cluster && cluster_spec && strcmp(cluster, cluster_spec))
        return loom_set_error(err, LOOM_EINVAL, "%s: %s.cluster: expected the cluster being "
                              "calibrated, \"%s\", found \"%s\"", file, path, cluster_spec,
                              cluster);
    loom_session_args a;
    loom_session_args_init(&a);
    a.manifest = man;
    a.model = model;
    a.cluster = cluster_spec ? cluster_spec : cluster;
    a.parallel = par;
    a.workload = wl;
    a.generate = gen;
    a.iterations = (int32_t)k + 1;
    if (seed >= 0) {
        a.has_seed = 1;
        a.seed = (uint64_t)seed;
    }
    loom_error why = {0, ""};
    rc = loom_session_open(&it->session, &a, &why);
    if (rc != LOOM_OK)
        return loom_set_error(err, rc, "%s: %s: %s", file, path, why.message);
    if (k >= it->session.n_iterations)
        return loom_set_error(err, LOOM_EINVAL, "%s: %s.iteration: expected an iteration of "
                              "the workload (it has %d), found %lld", file, path,
                              it->session.n_iterations, (long long)k);
    it->iteration = (int32_t)k;
    it->session.problem.cluster = set->cluster;
    return LOOM_OK;
}

int loom_calib_read_iterations(loom_calib_set *set, const char *file, const char *cluster_spec,
                               const char *manifest, loom_error *err)
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
    if (rc == LOOM_OK && n > 0 && !(set->iters = calloc((size_t)n, sizeof *set->iters)))
        rc = loom_set_error(err, LOOM_ENOMEM, "calibrate: out of memory");
    for (int i = 0; rc == LOOM_OK && i < n; i++) {
        char path[48];
        loom_json_path_index(path, sizeof path, "iterations", i);
        set->n_iters = i + 1; /* so that a half-opened session is closed */
        rc = read_entry(set, file, cJSON_GetArrayItem(list, i), path, cluster_spec, manifest,
                        &set->iters[i], err);
    }
    cJSON_Delete(root);
    return rc;
}
