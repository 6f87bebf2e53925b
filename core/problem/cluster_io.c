/* cluster_io.c - reading cluster.json (GPU peak, memory, bandwidths,
 * efficiency factors) and loom_cluster_load (preset name or path). */
#include <stdlib.h>
#include <string.h>
#include <loom/sys/json.h>
#include "problem_io_priv.h"

struct loom_cluster_data {
    loom_cluster cluster;
    char *name; /* cluster.name points here */
};

const loom_cluster *loom_cluster_data_cluster(const loom_cluster_data *c)
{
    return c ? &c->cluster : NULL;
}

void loom_cluster_data_free(loom_cluster_data *c)
{
    if (!c)
        return;
    free(c->name);
    free(c);
}

/* Reads efficiency.<key>, a factor in [LOOM_MIN_EFFICIENCY, 1]: a smaller
 * one (1e-320, say) divides a cost into infinity. */
static int get_factor(const char *file, const cJSON *obj, const char *key, double *out,
                      loom_error *err)
{
    double v = *out;
    int rc = loom_json_get_double(file, obj, "efficiency", key, 0, 0.0, 1.0, &v, err);
    if (rc)
        return rc;
    if (!(v > 0.0))
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: efficiency.%s: expected a number in (0, 1], found %.15g",
                              file, key, v);
    if (v < LOOM_MIN_EFFICIENCY)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: efficiency.%s: expected a number in [%g, 1], found %.15g "
                              "(a smaller factor makes costs overflow)",
                              file, key, LOOM_MIN_EFFICIENCY, v);
    *out = v;
    return LOOM_OK;
}

/* Parses the cluster.json tree into c (name borrowed from the tree). */
static int parse_cluster(const char *file, const cJSON *root, loom_cluster *c,
                         loom_error *err)
{
    static const char *const keys[] = {"name", "peak_flops", "hbm_bytes_per_s", "hbm_bytes",
                                       "gpus_per_node", "nvlink_bytes_per_s",
                                       "net_bytes_per_s", "efficiency", "p2p_latency_ms",
                                       "host_bytes_per_s", "peak_flops_tf32", "peak_flops_fp32",
                                       "peak_flops_fp8", NULL};
    static const char *const eff_keys[] = {"gemm", "attention", "memory", "collective",
                                           "gemm_half_flops", "attention_half_flops",
                                           "kernel_launch_us", "attention_backward", "optimizer",
                                           "attention_flash2", NULL};
    const cJSON *eff = NULL;
    int64_t hbm = 0, gpn = LOOM_DEFAULT_GPUS_PER_NODE;
    memset(c, 0, sizeof *c);
    c->eff_gemm = LOOM_DEFAULT_EFF_GEMM;
    c->eff_attention = LOOM_DEFAULT_EFF_ATTENTION;
    c->eff_memory = LOOM_DEFAULT_EFF_MEMORY;
    c->eff_collective = LOOM_DEFAULT_EFF_COLLECTIVE;
    c->p2p_latency_ms = LOOM_DEFAULT_P2P_LATENCY_MS;
    int rc = loom_json_check_keys(file, root, "", keys, err);
    if (!rc)
        rc = loom_json_get_string(file, root, "", "name", 1, &c->name, err);
    if (!rc)
        rc = loom_check_name(file, "name", c->name, err);
    if (!rc)
        rc = loom_json_get_double(file, root, "", "peak_flops", 1, 1.0, 1e18, &c->peak_flops,
                                  err);
    if (!rc)
        rc = loom_json_get_double(file, root, "", "hbm_bytes_per_s", 1, 1.0, 1e15,
                                  &c->hbm_bytes_per_s, err);
    if (!rc)
        rc = loom_json_get_int(file, root, "", "hbm_bytes", 1, 1, (int64_t)1 << 50, &hbm, err);
    if (!rc)
        rc = loom_json_get_int(file, root, "", "gpus_per_node", 0, 1, 1024, &gpn, err);
    if (!rc)
        rc = loom_json_get_double(file, root, "", "nvlink_bytes_per_s", 1, 1.0, 1e15,
                                  &c->nvlink_bytes_per_s, err);
    if (!rc)
        rc = loom_json_get_double(file, root, "", "net_bytes_per_s", 1, 1.0, 1e15,
                                  &c->net_bytes_per_s, err);
    if (!rc)
        rc = loom_json_get_double(file, root, "", "p2p_latency_ms", 0, 0.0, 1e6,
                                  &c->p2p_latency_ms, err);
    if (!rc)
        rc = loom_json_get_double(file, root, "", "host_bytes_per_s", 0, 1.0, 1e15,
                                  &c->host_bytes_per_s, err);
    if (!rc)
        rc = loom_json_get_double(file, root, "", "peak_flops_tf32", 0, 1.0, 1e18,
                                  &c->peak_flops_tf32, err);
    if (!rc)
        rc = loom_json_get_double(file, root, "", "peak_flops_fp32", 0, 1.0, 1e18,
                                  &c->peak_flops_fp32, err);
    if (!rc)
        rc = loom_json_get_double(file, root, "", "peak_flops_fp8", 0, 1.0, 1e18,
                                  &c->peak_flops_fp8, err);
    if (!rc)
        rc = loom_json_get_object(file, root, "", "efficiency", 0, &eff, err);
    if (rc)
        return rc;
    if (eff) {
        rc = loom_json_check_keys(file, eff, "efficiency", eff_keys, err);
        if (!rc)
            rc = get_factor(file, eff, "gemm", &c->eff_gemm, err);
        if (!rc)
            rc = get_factor(file, eff, "attention", &c->eff_attention, err);
        if (!rc)
            rc = get_factor(file, eff, "memory", &c->eff_memory, err);
        if (!rc)
            rc = get_factor(file, eff, "collective", &c->eff_collective, err);
        if (!rc)
            rc = loom_json_get_double(file, eff, "efficiency", "gemm_half_flops", 0, 0.0, 1e18,
                                      &c->gemm_half_flops, err);
        if (!rc)
            rc = loom_json_get_double(file, eff, "efficiency", "attention_half_flops", 0, 0.0,
                                      1e18, &c->attention_half_flops, err);
        if (!rc)
            rc = loom_json_get_double(file, eff, "efficiency", "kernel_launch_us", 0, 0.0,
                                      1000.0, &c->kernel_launch_us, err);
        if (!rc)
            rc = loom_json_get_double(file, eff, "efficiency", "attention_backward", 0, 1.0,
                                      10.0, &c->attention_backward, err);
        if (!rc && cJSON_GetObjectItemCaseSensitive(eff, "optimizer"))
            rc = get_factor(file, eff, "optimizer", &c->eff_optimizer, err);
        if (!rc && cJSON_GetObjectItemCaseSensitive(eff, "attention_flash2"))
            rc = get_factor(file, eff, "attention_flash2", &c->eff_attention_flash2, err);
        if (rc)
            return rc;
    }
    c->hbm_bytes = hbm;
    c->gpus_per_node = (int32_t)gpn;
    return LOOM_OK;
}

/* Wraps a parsed or preset cluster in an owned object (copies the name). */
static int make_data(const loom_cluster *c, loom_cluster_data **out, loom_error *err)
{
    loom_cluster_data *d = calloc(1, sizeof *d);
    size_t n = strlen(c->name) + 1;
    char *name = malloc(n);
    if (!d || !name) {
        free(d);
        free(name);
        return loom_set_error(err, LOOM_ENOMEM, "cluster: out of memory");
    }
    memcpy(name, c->name, n);
    d->cluster = *c;
    d->cluster.name = name;
    d->name = name;
    *out = d;
    return LOOM_OK;
}

int loom_cluster_load(const char *spec, loom_cluster_data **out, loom_error *err)
{
    loom_cluster c;
    *out = NULL;
    if (!spec || !*spec)
        return loom_set_error(err, LOOM_EINVAL,
                              "cluster: expected a preset name or a path to a cluster.json, "
                              "found an empty string");
    if (loom_cluster_preset(spec, &c))
        return make_data(&c, out, err);
    cJSON *root = NULL;
    int rc = loom_load_spec_json("cluster", spec, loom_cluster_preset_names(), &root, err);
    if (rc)
        return rc;
    rc = parse_cluster(spec, root, &c, err);
    if (!rc)
        rc = make_data(&c, out, err);
    cJSON_Delete(root);
    return rc;
}
