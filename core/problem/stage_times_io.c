/* stage_times_io.c - reading a stage-times problem: profiled per-stage
 * F/B (or I+W) times, per-microbatch scale factors, P2P time, activation
 * sizes and a memory cap. */
#include <stdlib.h>
#include <string.h>
#include <loom/sys/json.h>
#include "problem_io_priv.h"

#define MAX_STAGE_MS 1e9     /* upper bound of any time in milliseconds */
#define MAX_BYTES 1e18       /* upper bound of any size in bytes */
#define MAX_HELD_BYTES 4e18  /* activations one rank may hold, below 2^62 */

struct loom_stage_times_data {
    loom_stage_times st;
    double *forward_ms, *backward_ms, *input_grad_ms, *weight_grad_ms;
    double *microbatch_scale, *activation_bytes, *p2p_stage_ms;
    int32_t *stage_rank;
    double *weight_grad_bytes;
};

const loom_stage_times *loom_stage_times_data_get(const loom_stage_times_data *s)
{
    return s ? &s->st : NULL;
}

void loom_stage_times_data_free(loom_stage_times_data *s)
{
    if (!s)
        return;
    free(s->forward_ms);
    free(s->backward_ms);
    free(s->input_grad_ms);
    free(s->weight_grad_ms);
    free(s->microbatch_scale);
    free(s->activation_bytes);
    free(s->p2p_stage_ms);
    free(s->stage_rank);
    free(s->weight_grad_bytes);
    free(s);
}

/* Checks one value against [min, max] (min_open: min excluded). */
static int check_value(const char *file, const char *path, const cJSON *v, double min,
                       int min_open, double max, const char *what, loom_error *err)
{
    char found[80];
    if (!cJSON_IsNumber(v) || v->valuedouble > max || v->valuedouble < min ||
        (min_open && v->valuedouble == min))
        return loom_set_error(err, LOOM_EINVAL, "%s: %s: expected %s, found %s", file, path,
                              what, loom_json_describe(v, found, sizeof found));
    return LOOM_OK;
}

/* Reads root[key] as `n` values: an array of exactly n numbers, or (when
 * `broadcast`) a single number repeated. Absent: *out stays NULL unless
 * `dflt` >= 0, which fills n copies of dflt. `what` describes one value. */
static int get_values(const char *file, const cJSON *root, const char *key, int32_t n,
                      const char *n_name, int broadcast, double min, int min_open,
                      double max, const char *what, double dflt, double **out,
                      loom_error *err)
{
    char found[80], path[64];
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, key);
    *out = NULL;
    if (!item && dflt < 0)
        return LOOM_OK;
    double *v = malloc((size_t)n * sizeof *v);
    if (!v)
        return loom_set_error(err, LOOM_ENOMEM, "%s: out of memory", file);
    int rc = LOOM_OK;
    if (!item) {
        for (int32_t i = 0; i < n; i++)
            v[i] = dflt;
    } else if (broadcast && cJSON_IsNumber(item)) {
        rc = check_value(file, key, item, min, min_open, max, what, err);
        for (int32_t i = 0; i < n; i++)
            v[i] = item->valuedouble;
    } else if (!cJSON_IsArray(item) || cJSON_GetArraySize(item) != n) {
        if (cJSON_IsArray(item))
            snprintf(found, sizeof found, "%d %s", cJSON_GetArraySize(item),
                     cJSON_GetArraySize(item) == 1 ? "entry" : "entries");
        else
            loom_json_describe(item, found, sizeof found);
        rc = loom_set_error(err, LOOM_EINVAL, "%s: %s: expected an array of %d entries (%s)%s, "
                            "found %s", file, key, (int)n, n_name,
                            broadcast ? " or a single number" : "", found);
    } else {
        int32_t i = 0;
        for (const cJSON *e = item->child; e && !rc; e = e->next, i++) {
            loom_json_path_index(path, sizeof path, key, i);
            rc = check_value(file, path, e, min, min_open, max, what, err);
            v[i] = e->valuedouble;
        }
    }
    if (rc) {
        free(v);
        return rc;
    }
    *out = v;
    return LOOM_OK;
}

/* Reads the backward times: exactly one of backward_ms or the pair
 * input_grad_ms + weight_grad_ms. */
static int get_backward(const char *file, const cJSON *root, int32_t n,
                        loom_stage_times_data *d, loom_error *err)
{
    const char *what = "a number of milliseconds in [0, 1e+09]";
    const char *nn = "ranks*virtual_stages";
    int has_b = cJSON_GetObjectItemCaseSensitive(root, "backward_ms") != NULL;
    int has_i = cJSON_GetObjectItemCaseSensitive(root, "input_grad_ms") != NULL;
    int has_w = cJSON_GetObjectItemCaseSensitive(root, "weight_grad_ms") != NULL;
    if (has_b && (has_i || has_w))
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s: expected either backward_ms or input_grad_ms + "
                              "weight_grad_ms, found both", file,
                              has_i ? "input_grad_ms" : "weight_grad_ms");
    if (!has_b && !has_i && !has_w)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: backward_ms: expected backward_ms or input_grad_ms + "
                              "weight_grad_ms, found nothing (missing field)", file);
    if (!has_b && has_i != has_w)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s: expected it together with %s, found nothing (missing "
                              "field)", file, has_i ? "weight_grad_ms" : "input_grad_ms",
                              has_i ? "input_grad_ms" : "weight_grad_ms");
    if (has_b)
        return get_values(file, root, "backward_ms", n, nn, 1, 0, 0, MAX_STAGE_MS, what, -1,
                          &d->backward_ms, err);
    d->st.split_backward = 1;
    int rc = get_values(file, root, "input_grad_ms", n, nn, 1, 0, 0, MAX_STAGE_MS, what, -1,
                        &d->input_grad_ms, err);
    if (!rc)
        rc = get_values(file, root, "weight_grad_ms", n, nn, 1, 0, 0, MAX_STAGE_MS, what, -1,
                        &d->weight_grad_ms, err);
    return rc;
}

/* Reads p2p_ms: one number for every transfer (*p2p), or an array of
 * one transfer time per stage (d->p2p_stage_ms; *p2p stays 0). */
static int get_p2p(const char *file, const cJSON *root, int32_t n, loom_stage_times_data *d,
                   double *p2p, loom_error *err)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, "p2p_ms");
    *p2p = 0;
    if (!item)
        return LOOM_OK;
    if (cJSON_IsArray(item))
        return get_values(file, root, "p2p_ms", n, "ranks*virtual_stages", 1, 0, 0,
                          MAX_STAGE_MS, "a number of milliseconds in [0, 1e+09]", -1,
                          &d->p2p_stage_ms, err);
    return loom_json_get_double(file, root, "", "p2p_ms", 0, 0, MAX_STAGE_MS, p2p, err);
}

/* Reads `placement`: "loop" (default), "v", "zigzag" or an array of P*V
 * ranks in 0..P-1 giving each rank exactly V stages. Fills d->stage_rank
 * (NULL for loop). */
static int get_placement(const char *file, const cJSON *root, int32_t P, int32_t V,
                         loom_stage_times_data *d, loom_error *err)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, "placement");
    char found[80], path[64];
    int32_t n = P * V;
    if (!item || (cJSON_IsString(item) && strcmp(item->valuestring, "loop") == 0))
        return LOOM_OK;
    int named = -1;
    if (cJSON_IsString(item) && strcmp(item->valuestring, "v") == 0)
        named = LOOM_PLACEMENT_V;
    else if (cJSON_IsString(item) && strcmp(item->valuestring, "zigzag") == 0)
        named = LOOM_PLACEMENT_ZIGZAG;
    else if (!cJSON_IsArray(item) || cJSON_GetArraySize(item) != n) {
        if (cJSON_IsArray(item))
            snprintf(found, sizeof found, "%d %s", cJSON_GetArraySize(item),
                     cJSON_GetArraySize(item) == 1 ? "entry" : "entries");
        else
            loom_json_describe(item, found, sizeof found);
        return loom_set_error(err, LOOM_EINVAL, "%s: placement: expected \"loop\", \"v\", "
                              "\"zigzag\" or an array of %d ranks (ranks*virtual_stages), "
                              "found %s", file, (int)n, found);
    }
    if (named == LOOM_PLACEMENT_V && V != 2)
        return loom_set_error(err, LOOM_EINVAL, "%s: placement: \"v\" expected "
                              "virtual_stages = 2, found %d (\"zigzag\" takes any number)",
                              file, (int)V);
    d->stage_rank = malloc((size_t)n * sizeof *d->stage_rank);
    int32_t *count = calloc((size_t)P, sizeof *count);
    if (!d->stage_rank || !count) {
        free(count);
        return loom_set_error(err, LOOM_ENOMEM, "%s: out of memory", file);
    }
    int rc = LOOM_OK;
    const cJSON *e = named < 0 ? item->child : NULL;
    for (int32_t s = 0; s < n && !rc; s++) {
        if (named >= 0) {
            d->stage_rank[s] = loom_placement_rank(named, s, P);
        } else {
            loom_json_path_index(path, sizeof path, "placement", s);
            /* the range first: casting a number outside int32 is undefined */
            if (!cJSON_IsNumber(e) || !(e->valuedouble >= 0 && e->valuedouble < P) ||
                e->valuedouble != (double)(int32_t)e->valuedouble) {
                rc = loom_set_error(err, LOOM_EINVAL, "%s: %s: expected a rank in 0..%d, "
                                    "found %s", file, path, (int)P - 1,
                                    loom_json_describe(e, found, sizeof found));
                break;
            }
            d->stage_rank[s] = (int32_t)e->valuedouble;
            e = e->next;
        }
        count[d->stage_rank[s]]++;
    }
    for (int32_t r = 0; r < P && !rc; r++)
        if (count[r] != V)
            rc = loom_set_error(err, LOOM_EINVAL, "%s: placement: expected every rank to run "
                                "virtual_stages = %d stages, found rank %d with %d", file,
                                (int)V, (int)r, (int)count[r]);
    free(count);
    return rc;
}

/* Parses the whole tree into d. */
static int parse_stage_times(const char *file, const cJSON *root, loom_stage_times_data *d,
                             loom_error *err)
{
    static const char *const keys[] = {"kind", "ranks", "microbatches", "virtual_stages",
                                       "forward_ms", "backward_ms", "input_grad_ms",
                                       "weight_grad_ms", "microbatch_scale", "p2p_ms",
                                       "activation_bytes", "memory_cap_bytes", "placement",
                                       "weight_grad_bytes", NULL};
    const char *kind = NULL;
    int64_t p = 0, m = 0, v = 1;
    double p2p = 0, cap = 0;
    int rc = loom_json_check_keys(file, root, "", keys, err);
    if (!rc)
        rc = loom_json_get_string(file, root, "", "kind", 1, &kind, err);
    char shown[64];
    if (!rc && strcmp(kind, "stage-times") != 0)
        rc = loom_set_error(err, LOOM_EINVAL, "%s: kind: expected \"stage-times\", found "
                            "\"%s\"", file, loom_escape(kind, shown, sizeof shown));
    if (!rc)
        rc = loom_json_get_int(file, root, "", "ranks", 1, 1, LOOM_MAX_STAGE_POSITIONS, &p, err);
    if (!rc)
        rc = loom_json_get_int(file, root, "", "microbatches", 1, 1, LOOM_MAX_PARALLEL_DEGREE,
                               &m, err);
    if (!rc)
        rc = loom_json_get_int(file, root, "", "virtual_stages", 0, 1, LOOM_MAX_STAGE_POSITIONS,
                               &v, err);
    if (!rc && p * v > LOOM_MAX_STAGE_POSITIONS)
        rc = loom_set_error(err, LOOM_EINVAL, "%s: virtual_stages: expected ranks*virtual_stages "
                            "<= %d, found %lld*%lld = %lld", file, LOOM_MAX_STAGE_POSITIONS,
                            (long long)p, (long long)v, (long long)(p * v));
    if (!rc && p * v * m > LOOM_MAX_FORWARD_STAGES)
        rc = loom_set_error(err, LOOM_EINVAL, "%s: microbatches: expected "
                            "ranks*virtual_stages*microbatches <= %d forward stages, found "
                            "%lld*%lld*%lld = %lld", file, LOOM_MAX_FORWARD_STAGES,
                            (long long)p, (long long)v, (long long)m, (long long)(p * v * m));
    if (!rc)
        rc = loom_json_get_double(file, root, "", "memory_cap_bytes", 0, 0, MAX_BYTES, &cap, err);
    if (rc)
        return rc;
    int32_t n = (int32_t)(p * v);
    const char *nn = "ranks*virtual_stages";
    const char *ms = "a number of milliseconds in [0, 1e+09]";
    if (!cJSON_GetObjectItemCaseSensitive(root, "forward_ms"))
        return loom_set_error(err, LOOM_EINVAL, "%s: forward_ms: expected an array of %d "
                              "entries (%s) or a single number, found nothing (missing field)",
                              file, (int)n, nn);
    rc = get_values(file, root, "forward_ms", n, nn, 1, 0, 0, MAX_STAGE_MS, ms, -1,
                    &d->forward_ms, err);
    if (!rc)
        rc = get_backward(file, root, n, d, err);
    if (!rc)
        rc = get_values(file, root, "microbatch_scale", (int32_t)m, "microbatches", 0, 0, 1,
                        1e6, "a scale factor in (0, 1e+06]", 1.0, &d->microbatch_scale, err);
    if (!rc)
        rc = get_p2p(file, root, n, d, &p2p, err);
    if (!rc)
        rc = get_values(file, root, "activation_bytes", n, nn, 1, 0, 0, MAX_BYTES,
                        "a number of bytes in [0, 1e+18]", 1.0, &d->activation_bytes, err);
    if (!rc)
        rc = get_values(file, root, "weight_grad_bytes", n, nn, 1, 0, 0, MAX_BYTES,
                        "a number of bytes in [0, 1e+18]", -1, &d->weight_grad_bytes, err);
    for (int32_t s = 0; !rc && d->weight_grad_bytes && s < n; s++)
        if (d->weight_grad_bytes[s] > d->activation_bytes[s])
            rc = loom_set_error(err, LOOM_EINVAL, "%s: weight_grad_bytes[%d]: expected at most "
                                "activation_bytes[%d] = %g, found %g", file, (int)s, (int)s,
                                d->activation_bytes[s], d->weight_grad_bytes[s]);
    if (!rc)
        rc = get_placement(file, root, (int32_t)p, (int32_t)v, d, err);
    if (rc)
        return rc;
    /* what one rank can hold at once must fit the simulator's 64-bit byte
     * counts: every microbatch in flight on each of its virtual stages */
    double act = 0, scale = 0;
    for (int32_t s = 0; s < n; s++)
        act = d->activation_bytes[s] > act ? d->activation_bytes[s] : act;
    for (int32_t k = 0; k < (int32_t)m; k++)
        scale = d->microbatch_scale[k] > scale ? d->microbatch_scale[k] : scale;
    double held = act * scale * (double)m * (double)v;
    if (held > MAX_HELD_BYTES)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: activation_bytes: expected at most %g bytes held on a rank "
                              "at once (largest activation_bytes %g * largest microbatch_scale "
                              "%g * microbatches %lld * virtual_stages %lld), found %g",
                              file, MAX_HELD_BYTES, act, scale, (long long)m, (long long)v,
                              held);
    d->st.ranks = (int32_t)p;
    d->st.microbatches = (int32_t)m;
    d->st.virtual_stages = (int32_t)v;
    d->st.forward_ms = d->forward_ms;
    d->st.backward_ms = d->backward_ms;
    d->st.input_grad_ms = d->input_grad_ms;
    d->st.weight_grad_ms = d->weight_grad_ms;
    d->st.microbatch_scale = d->microbatch_scale;
    d->st.activation_bytes = d->activation_bytes;
    d->st.p2p_ms = p2p;
    d->st.p2p_stage_ms = d->p2p_stage_ms;
    d->st.memory_cap_bytes = cap;
    d->st.stage_rank = d->stage_rank;
    d->st.weight_grad_bytes = d->weight_grad_bytes;
    return LOOM_OK;
}

int loom_stage_times_load(const char *path, loom_stage_times_data **out, loom_error *err)
{
    cJSON *root = NULL;
    *out = NULL;
    int rc = loom_json_load(path, &root, err);
    if (rc)
        return rc;
    loom_stage_times_data *d = calloc(1, sizeof *d);
    if (!d) {
        cJSON_Delete(root);
        return loom_set_error(err, LOOM_ENOMEM, "%s: out of memory", path);
    }
    rc = parse_stage_times(path, root, d, err);
    cJSON_Delete(root);
    if (rc) {
        loom_stage_times_data_free(d);
        return rc;
    }
    *out = d;
    return LOOM_OK;
}
