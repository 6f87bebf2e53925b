/* tune_shard.c - shard files of `loom tune --shard K/N --json F`: the
 * search's identity, the slice's configurations with their bounds and
 * every simulation the shard ran (doubles to 17 significant digits, so
 * they read back exactly), and reading shards back into one search. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <loom/sys/json.h>
#include "tune.h"

/* Adds a string list member to obj (NULL entries skipped). */
static void add_strings(cJSON *obj, const char *name, const char *const *v, int n)
{
    cJSON *a = cJSON_AddArrayToObject(obj, name);
    for (int i = 0; a && i < n; i++)
        if (v[i])
            cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
}

char *loom_tune_identity(const loom_tune_search *t)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    const loom_session_args *b = &t->base;
    cJSON_AddStringToObject(o, "model", t->model);
    cJSON_AddStringToObject(o, "cluster", t->cluster);
    cJSON_AddNumberToObject(o, "gpus", (double)t->gpus);
    cJSON_AddNumberToObject(o, "global_batch", (double)t->global_batch);
    cJSON_AddNumberToObject(o, "micro_batch_size", t->micro_batch_size);
    cJSON_AddNumberToObject(o, "seq_len", t->seq_len);
    cJSON_AddNumberToObject(o, "top", t->top);
    cJSON_AddBoolToObject(o, "no_prune", t->no_prune);
    cJSON_AddBoolToObject(o, "tp_across_nodes", t->tp_across_nodes);
    cJSON_AddBoolToObject(o, "single_layouts", t->single_layouts);
    cJSON_AddStringToObject(o, "runtime", t->runtime ? t->runtime : "");
    add_strings(o, "modules", (const char *const *)t->module_names, t->n_module_names);
    add_strings(o, "manifests", t->manifests, t->n_manifests);
    add_strings(o, "manifest_names", (const char *const *)t->manifest_names, t->n_manifests);
    cJSON_AddNumberToObject(o, "considered", t->n_space);
    cJSON_AddNumberToObject(o, "iterations", b->iterations);
    cJSON_AddNumberToObject(o, "evaluations", (double)b->max_evaluations);
    cJSON_AddNumberToObject(o, "seed", b->has_seed ? (double)b->seed : -1);
    cJSON_AddNumberToObject(o, "memory_cap_bytes", b->memory_cap_bytes);
    cJSON_AddNumberToObject(o, "packing_window", b->packing_window);
    cJSON_AddStringToObject(o, "generate", b->generate ? b->generate : "");
    cJSON_AddBoolToObject(o, "allow_untrusted", b->allow_untrusted);
    add_strings(o, "use", b->uses, b->n_uses);
    add_strings(o, "param", b->params, b->n_params);
    add_strings(o, "plugin_path", b->plugin_paths, b->n_plugin_paths);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

/* A double that reads back to the same bits. */
static void exact(FILE *out, const char *name, double v)
{
    fprintf(out, ", \"%s\": %.17g", name, v);
}

/* A string or null, escaped. */
static void str_or_null(FILE *out, const char *s)
{
    if (!s) {
        fputs("null", out);
        return;
    }
    cJSON *j = cJSON_CreateString(s);
    char *p = j ? cJSON_PrintUnformatted(j) : NULL;
    fputs(p ? p : "null", out);
    free(p);
    cJSON_Delete(j);
}

void loom_tune_write_config(const loom_tune_config *c, FILE *out)
{
    const loom_parallel *p = &c->par;
    fprintf(out, "{\"index\": %d, \"manifest\": %d, \"layout\": [%d, %d, %d, %d, %d, %d, %d]",
            c->index, c->manifest, p->tp, loom_parallel_cp(p), p->pp, p->dp, p->vpp,
            p->microbatches, c->micro_batch_size);
    if (c->module >= 0)
        fprintf(out, ", \"module\": [%d, %d, %d, %d, %d]", c->module, c->module_tp,
                c->module_pp, c->module_dp, c->module_placement);
    exact(out, "lower_bound_ms", c->lower_bound_ms);
    exact(out, "param_rank_bytes", c->param_rank_bytes);
    exact(out, "state_rank_bytes", c->state_rank_bytes);
    exact(out, "cap_bytes", c->cap_bytes);
    fputs(", \"static_reason\": ", out);
    str_or_null(out, c->static_reason);
    fputs(", \"result\": ", out);
    if (!c->simulated) {
        fputs("null}", out);
        return;
    }
    const loom_tune_result *r = &c->result;
    fprintf(out, "{\"feasible\": %s", r->feasible ? "true" : "false");
    exact(out, "makespan_ms", r->makespan_ms);
    exact(out, "mfu", r->mfu);
    exact(out, "bubble_ratio", r->bubble_ratio);
    exact(out, "memory_cap_bytes", r->memory_cap_bytes);
    fputs(", \"peak_mem_bytes\": [", out);
    for (int32_t q = 0; q < r->n_ranks; q++)
        fprintf(out, "%s%lld", q ? ", " : "", (long long)r->peak_mem_bytes[q]);
    fputs("], \"reason\": ", out);
    str_or_null(out, r->reason);
    fputs("}}", out);
}

int loom_tune_write_shard(const loom_tune_search *t, int32_t k, int32_t n, FILE *out)
{
    char *id = loom_tune_identity(t);
    if (!id)
        return LOOM_ENOMEM;
    fprintf(out, "{\"loom_tune_shard\": 1, \"shard\": [%d, %d],\n \"search\": %s,\n \"configs\": [",
            k, n, id);
    free(id);
    for (int32_t i = 0; i < t->n_configs; i++) {
        fputs(i ? ",\n  " : "\n  ", out);
        loom_tune_write_config(&t->configs[i], out);
    }
    fputs("]}\n", out);
    return ferror(out) ? LOOM_EIO : LOOM_OK;
}

/* A number member of obj, or `dflt` when absent. */
static double num(const cJSON *obj, const char *name, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

/* x as an int32_t, or INT32_MIN when it is out of range or NaN (a cast
 * would be undefined): every reader below rejects INT32_MIN. */
static int32_t to_i32(double x)
{
    return x >= -2147483647.0 && x <= 2147483647.0 ? (int32_t)x : INT32_MIN;
}

/* The integer member `name` of obj as an int32_t, `dflt` when absent,
 * INT32_MIN when out of range. */
static int32_t num_i32(const cJSON *obj, const char *name, int32_t dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsNumber(v) ? to_i32(v->valuedouble) : dflt;
}

/* x as an int64_t count in [0, 2^62], or -1 when negative, out of range
 * or NaN (a cast would be undefined). */
static int64_t to_count(double x)
{
    return x >= 0 && x <= 4611686018427387904.0 ? (int64_t)x : -1;
}

/* The number member `name` of obj as to_count() reads it, `dflt` when
 * absent. */
static int64_t num_count(const cJSON *obj, const char *name, int64_t dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsNumber(v) ? to_count(v->valuedouble) : dflt;
}

/* A malloc'd copy of a string member, or NULL. */
static char *str_dup(const cJSON *obj, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsString(v) ? strdup(v->valuestring) : NULL;
}

/* Reads one simulation result. */
static int read_result(const cJSON *j, loom_tune_config *c)
{
    loom_tune_result *r = &c->result;
    c->simulated = 1;
    r->feasible = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "feasible"));
    r->makespan_ms = num(j, "makespan_ms", 0);
    r->mfu = num(j, "mfu", -1);
    r->bubble_ratio = num(j, "bubble_ratio", 0);
    r->memory_cap_bytes = num(j, "memory_cap_bytes", 0);
    r->reason = str_dup(j, "reason");
    const cJSON *pk = cJSON_GetObjectItemCaseSensitive(j, "peak_mem_bytes");
    r->n_ranks = cJSON_GetArraySize(pk);
    r->peak_mem_bytes = calloc((size_t)r->n_ranks + 1, sizeof *r->peak_mem_bytes);
    if (!r->peak_mem_bytes)
        return -1;
    int32_t q = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, pk)
    {
        if (!cJSON_IsNumber(e) || (r->peak_mem_bytes[q++] = to_count(e->valuedouble)) < 0)
            return -1; /* not a byte count */
    }
    return 0;
}

/* Reads one configuration; -1 when it is malformed. */
static int read_config(const cJSON *j, loom_tune_config *c, int32_t n_manifests)
{
    memset(c, 0, sizeof *c);
    const cJSON *lay = cJSON_GetObjectItemCaseSensitive(j, "layout");
    if (cJSON_GetArraySize(lay) != 7)
        return -1;
    int32_t v[7];
    for (int i = 0; i < 7; i++)
        if ((v[i] = to_i32(cJSON_GetArrayItem(lay, i)->valuedouble)) < 0)
            return -1;
    c->par = (loom_parallel){v[0], v[2], v[3], v[4], v[5], v[1]};
    c->micro_batch_size = v[6];
    c->module = -1;
    const cJSON *mod = cJSON_GetObjectItemCaseSensitive(j, "module");
    if (mod) {
        if (cJSON_GetArraySize(mod) != 5)
            return -1;
        int32_t u[5];
        for (int i = 0; i < 5; i++)
            u[i] = to_i32(cJSON_GetArrayItem(mod, i)->valuedouble);
        if (u[0] < 0 || u[0] >= 64 || u[1] < 1 || u[2] < 1 || u[3] < 1 ||
            (u[4] != LOOM_LAYOUT_COLOCATED && u[4] != LOOM_LAYOUT_DISJOINT))
            return -1;
        c->module = u[0];
        c->module_tp = u[1];
        c->module_pp = u[2];
        c->module_dp = u[3];
        c->module_placement = u[4];
    }
    c->index = num_i32(j, "index", -1);
    c->manifest = num_i32(j, "manifest", -1);
    c->lower_bound_ms = num(j, "lower_bound_ms", 0);
    c->param_rank_bytes = num(j, "param_rank_bytes", 0);
    c->state_rank_bytes = num(j, "state_rank_bytes", 0);
    c->cap_bytes = num(j, "cap_bytes", 0);
    c->static_reason = str_dup(j, "static_reason");
    if (c->manifest < 0 || c->manifest >= n_manifests)
        return -1;
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "result");
    return cJSON_IsObject(r) ? read_result(r, c) : 0;
}

/* Takes the search's own fields from the identity of the first shard. */
static int adopt_identity(const cJSON *id, loom_tune_search *t)
{
    t->model = str_dup(id, "model");
    t->cluster = str_dup(id, "cluster");
    t->gpus = num_count(id, "gpus", 0);
    t->global_batch = num_count(id, "global_batch", 0);
    t->seq_len = num_i32(id, "seq_len", 0);
    t->top = num_i32(id, "top", LOOM_TUNE_DEFAULT_TOP);
    if (t->gpus < 0 || t->global_batch < 0 || t->seq_len < 0 || t->top < 0)
        return -1;
    t->no_prune = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(id, "no_prune"));
    char *runtime = str_dup(id, "runtime");
    if (runtime && !runtime[0]) {
        free(runtime);
        runtime = NULL;
    }
    t->runtime = runtime;
    const cJSON *names = cJSON_GetObjectItemCaseSensitive(id, "manifest_names"), *e;
    cJSON_ArrayForEach(e, names)
    {
        if (t->n_manifests >= LOOM_TUNE_MAX_MANIFESTS || !cJSON_IsString(e))
            return -1;
        t->manifest_names[t->n_manifests++] = strdup(e->valuestring);
    }
    const cJSON *mods = cJSON_GetObjectItemCaseSensitive(id, "modules");
    cJSON_ArrayForEach(e, mods)
    {
        if (t->n_module_names >= 64 || !cJSON_IsString(e))
            return -1;
        if (!(t->module_names[t->n_module_names++] = strdup(e->valuestring)))
            return -1;
    }
    return t->model && t->cluster && t->n_manifests > 0 ? 0 : -1;
}

/* Appends the configurations of one shard file to t. */
static int read_configs(const char *file, const cJSON *arr, loom_tune_search *t, int32_t total,
                        loom_error *err)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, arr)
    {
        if (t->n_configs >= total)
            return loom_set_error(err, LOOM_EINVAL, "%s: more configurations than the search "
                                  "considered (%d)", file, total);
        loom_tune_config *c = &t->configs[t->n_configs++];
        if (read_config(e, c, t->n_manifests) != 0 || c->index < 0 || c->index >= total ||
            c->module >= t->n_module_names)
            return loom_set_error(err, LOOM_EINVAL, "%s: configs[%d]: malformed", file,
                                  t->n_configs - 1);
    }
    return LOOM_OK;
}

/* Checks one shard file against the first one's identity and shard count,
 * marking shard k as seen. */
static int check_shard(const char *file, const cJSON *doc, const char *id0, int32_t *n,
                       char *seen, loom_error *err)
{
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(doc, "shard");
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(doc, "search");
    if (num(doc, "loom_tune_shard", 0) != 1 || cJSON_GetArraySize(sh) != 2 || !cJSON_IsObject(id))
        return loom_set_error(err, LOOM_EINVAL, "%s: not a `loom tune --shard` file", file);
    int32_t k = to_i32(cJSON_GetArrayItem(sh, 0)->valuedouble);
    int32_t nn = to_i32(cJSON_GetArrayItem(sh, 1)->valuedouble);
    char *mine = cJSON_PrintUnformatted(id);
    int same = mine && (!id0 || !strcmp(mine, id0));
    free(mine);
    if (!same)
        return loom_set_error(err, LOOM_EINVAL, "%s: from a different search (model, cluster, "
                              "GPUs, batch, manifests or planning options differ from the "
                              "first shard's)", file);
    if (*n && nn != *n)
        return loom_set_error(err, LOOM_EINVAL, "%s: shard %d/%d, expected shards of %d",
                              file, k, nn, *n);
    if (nn < 1 || k < 1 || k > nn || nn > 100000)
        return loom_set_error(err, LOOM_EINVAL, "%s: shard %d/%d out of range", file, k, nn);
    *n = nn;
    if (seen[k - 1])
        return loom_set_error(err, LOOM_EINVAL, "%s: shard %d/%d given twice", file, k, nn);
    seen[k - 1] = 1;
    return LOOM_OK;
}

/* Orders configurations by enumeration index. */
static int config_order(const void *pa, const void *pb)
{
    const loom_tune_config *a = pa, *b = pb;
    return (a->index > b->index) - (a->index < b->index);
}

/* Reads one shard file into t (the first one sets the identity). */
static int read_one(const char *file, loom_tune_search *t, char **id0, int32_t *n, char *seen,
                    loom_error *err)
{
    cJSON *doc = NULL;
    int rc = loom_json_load(file, &doc, err);
    if (rc != LOOM_OK)
        return LOOM_EINVAL;
    rc = check_shard(file, doc, *id0, n, seen, err);
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(doc, "search");
    if (rc == LOOM_OK && !*id0) {
        *id0 = cJSON_PrintUnformatted(id);
        int32_t total = num_i32(id, "considered", 0);
        if (adopt_identity(id, t) != 0 || total < 1 || total > LOOM_TUNE_MAX_CONFIGS)
            rc = loom_set_error(err, LOOM_EINVAL, "%s: search: malformed", file);
        else if (!(t->configs = calloc((size_t)total, sizeof *t->configs)))
            rc = loom_set_error(err, LOOM_ENOMEM, "out of memory");
    }
    if (rc == LOOM_OK)
        rc = read_configs(file, cJSON_GetObjectItemCaseSensitive(doc, "configs"), t,
                          num_i32(id, "considered", 0), err);
    cJSON_Delete(doc);
    return rc;
}

int loom_tune_read_shards(const char **files, int n_files, loom_tune_search *t, loom_error *err)
{
    char *id0 = NULL, *seen = calloc(100001, 1);
    int32_t n = 0;
    int rc = seen ? LOOM_OK : loom_set_error(err, LOOM_ENOMEM, "out of memory");
    for (int f = 0; rc == LOOM_OK && f < n_files; f++)
        rc = read_one(files[f], t, &id0, &n, seen, err);
    for (int32_t k = 0; rc == LOOM_OK && k < n; k++)
        if (!seen[k])
            rc = loom_set_error(err, LOOM_EINVAL, "shard %d/%d is missing", k + 1, n);
    cJSON *id = id0 ? cJSON_Parse(id0) : NULL;
    int32_t total = id ? num_i32(id, "considered", 0) : 0;
    cJSON_Delete(id);
    if (rc == LOOM_OK && t->n_configs != total)
        rc = loom_set_error(err, LOOM_EINVAL, "the shards hold %d of the search's %d "
                            "configurations", t->n_configs, total);
    if (rc == LOOM_OK)
        qsort(t->configs, (size_t)t->n_configs, sizeof *t->configs, config_order);
    for (int32_t i = 0; rc == LOOM_OK && i < t->n_configs; i++)
        if (t->configs[i].index != i)
            rc = loom_set_error(err, LOOM_EINVAL, "configuration %d appears twice", i);
    free(id0);
    free(seen);
    return rc;
}

int loom_tune_read_config_text(const char *text, loom_tune_config *c, int32_t n_manifests)
{
    cJSON *j = cJSON_Parse(text);
    int rc = j ? read_config(j, c, n_manifests) : -1;
    cJSON_Delete(j);
    return rc;
}
