/* model_io.c - reading model.json (modules, layer groups, module DAG,
 * optional parallel config and workload family) and loom_model_load, which
 * accepts a preset name or a path. */
#include <stdlib.h>
#include <string.h>
#include <loom/sys/json.h>
#include "problem_io_priv.h"

static const char *const kind_names[] = {"encoder", "backbone", "decoder", NULL};
static const char *const modality_names[] = {"text", "image", "video", "audio", NULL};


/* Reads string obj[key] (optional when `dflt` >= 0) naming one entry of
 * `names`; stores its index. */
static int get_enum(const char *file, const cJSON *obj, const char *path,
                    const char *key, const char *const *names, int dflt,
                    int32_t *out, loom_error *err)
{
    const char *s = NULL;
    int rc = loom_json_get_string(file, obj, path, key, dflt < 0, &s, err);
    if (rc)
        return rc;
    if (!s) {
        *out = dflt;
        return LOOM_OK;
    }
    for (int i = 0; names[i]; i++) {
        if (strcmp(names[i], s) == 0) {
            *out = i;
            return LOOM_OK;
        }
    }
    char list[128], full[256], shown[64];
    loom_join_names(names, list, sizeof list);
    loom_json_path_key(full, sizeof full, path, key);
    return loom_set_error(err, LOOM_EINVAL, "%s: %s: expected one of %s, found \"%s\"",
                          file, full, list, loom_escape(s, shown, sizeof shown));
}

/* Parses one layer group object at `path`. */
static int parse_group(const char *file, const cJSON *obj, const char *path,
                       loom_layer_group *g, loom_error *err)
{
    static const char *const keys[] = {"count", "hidden", "ffn_hidden", "heads",
                                       "kv_heads", "gated_ffn", "causal",
                                       "cross_attention", NULL};
    int64_t count = 0, hidden = 0, ffn = 0, heads = 0, kv = 0;
    int gated = 0, causal = 0, cross = 0;
    int rc = loom_json_check_keys(file, obj, path, keys, err);
    if (!rc)
        rc = loom_json_get_int(file, obj, path, "count", 1, 1, LOOM_MAX_LAYERS_PER_MODULE,
                               &count, err);
    if (!rc)
        rc = loom_json_get_int(file, obj, path, "hidden", 1, 1, 1 << 20, &hidden, err);
    if (!rc)
        rc = loom_json_get_int(file, obj, path, "ffn_hidden", 1, 1, 1 << 22, &ffn, err);
    if (!rc)
        rc = loom_json_get_int(file, obj, path, "heads", 1, 1, 1 << 16, &heads, err);
    kv = heads;
    if (!rc)
        rc = loom_json_get_int(file, obj, path, "kv_heads", 0, 1, heads, &kv, err);
    if (!rc)
        rc = loom_json_get_bool(file, obj, path, "gated_ffn", 0, &gated, err);
    if (!rc)
        rc = loom_json_get_bool(file, obj, path, "causal", 0, &causal, err);
    if (!rc)
        rc = loom_json_get_bool(file, obj, path, "cross_attention", 0, &cross, err);
    if (rc)
        return rc;
    if (heads % kv != 0)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s.kv_heads: expected a divisor of heads (%lld), found %lld",
                              file, path, (long long)heads, (long long)kv);
    if (hidden % heads != 0)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s.hidden: expected a multiple of heads (%lld), found %lld",
                              file, path, (long long)heads, (long long)hidden);
    memset(g, 0, sizeof *g);
    g->count = (int32_t)count;
    g->layer.hidden = hidden;
    g->layer.ffn_hidden = ffn;
    g->layer.heads = (int32_t)heads;
    g->layer.kv_heads = (int32_t)kv;
    g->layer.gated_ffn = gated;
    g->layer.causal = causal;
    g->layer.cross_attention = cross;
    return LOOM_OK;
}

/* Parses modules[i].layers (one group object or an array of groups) into a
 * malloc'd array stored in md. */
static int parse_layers(const char *file, const cJSON *mod, const char *mpath,
                        loom_module_desc *md, loom_error *err)
{
    char path[256], sub[256], found[80];
    loom_json_path_key(path, sizeof path, mpath, "layers");
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(mod, "layers");
    if (!layers)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s: expected a layer group object or an array of them, "
                              "found nothing (missing field)", file, path);
    int n = cJSON_IsArray(layers) ? cJSON_GetArraySize(layers) : 1;
    if (!cJSON_IsArray(layers) && !cJSON_IsObject(layers))
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s: expected a layer group object or an array of them, "
                              "found %s", file, path,
                              loom_json_describe(layers, found, sizeof found));
    if (n < 1 || n > LOOM_MAX_LAYERS_PER_MODULE)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s: expected 1 to %d layer groups, found %d", file, path,
                              LOOM_MAX_LAYERS_PER_MODULE, n);
    loom_layer_group *groups = calloc((size_t)n, sizeof *groups);
    if (!groups)
        return loom_set_error(err, LOOM_ENOMEM, "%s: out of memory", file);
    md->groups = groups;
    md->n_groups = n;
    if (!cJSON_IsArray(layers))
        return parse_group(file, layers, path, &groups[0], err);
    int i = 0;
    int64_t total = 0;
    for (const cJSON *g = layers->child; g; g = g->next, i++) {
        loom_json_path_index(sub, sizeof sub, path, i);
        if (!cJSON_IsObject(g))
            return loom_set_error(err, LOOM_EINVAL,
                                  "%s: %s: expected a layer group object, found %s", file,
                                  sub, loom_json_describe(g, found, sizeof found));
        int rc = parse_group(file, g, sub, &groups[i], err);
        if (rc)
            return rc;
        total += groups[i].count;
        if (total > LOOM_MAX_LAYERS_PER_MODULE)
            return loom_set_error(err, LOOM_EINVAL,
                                  "%s: %s: expected at most %d layers in total, found more",
                                  file, path, LOOM_MAX_LAYERS_PER_MODULE);
    }
    return LOOM_OK;
}

/* Parses modules[i].inputs into a malloc'd array of borrowed names. */
static int parse_inputs(const char *file, const cJSON *mod, const char *mpath,
                        loom_module_desc *md, loom_error *err)
{
    char path[256], sub[256], found[80];
    const cJSON *arr = NULL;
    int rc = loom_json_get_array(file, mod, mpath, "inputs", 0, &arr, err);
    if (rc || !arr)
        return rc;
    loom_json_path_key(path, sizeof path, mpath, "inputs");
    int n = cJSON_GetArraySize(arr);
    if (n > LOOM_MAX_MODULES)
        return loom_set_error(err, LOOM_EINVAL, "%s: %s: expected at most %d inputs, found %d",
                              file, path, LOOM_MAX_MODULES, n);
    if (n == 0)
        return LOOM_OK;
    const char **names = calloc((size_t)n, sizeof *names);
    if (!names)
        return loom_set_error(err, LOOM_ENOMEM, "%s: out of memory", file);
    md->inputs = names;
    md->n_inputs = n;
    int i = 0;
    for (const cJSON *it = arr->child; it; it = it->next, i++) {
        if (!cJSON_IsString(it) || !it->valuestring) {
            loom_json_path_index(sub, sizeof sub, path, i);
            return loom_set_error(err, LOOM_EINVAL,
                                  "%s: %s: expected a module name, found %s", file, sub,
                                  loom_json_describe(it, found, sizeof found));
        }
        names[i] = it->valuestring;
    }
    return LOOM_OK;
}

/* Parses modules[i] into md (strings borrowed from the tree). */
static int parse_module(const char *file, const cJSON *mod, const char *path,
                        loom_module_desc *md, loom_error *err)
{
    static const char *const keys[] = {"name", "kind", "modality", "tokens_per_item",
                                       "patches_per_item", "vocab", "frozen", "inputs",
                                       "layers", NULL};
    char sub[256];
    int64_t tpi = 1, ppi = 0, vocab = 0;
    int frozen = 0;
    int rc = loom_json_check_keys(file, mod, path, keys, err);
    if (!rc)
        rc = loom_json_get_string(file, mod, path, "name", 1, &md->name, err);
    if (!rc) {
        loom_json_path_key(sub, sizeof sub, path, "name");
        rc = loom_check_name(file, sub, md->name, err);
    }
    if (!rc)
        rc = get_enum(file, mod, path, "kind", kind_names, -1, &md->kind, err);
    if (!rc)
        rc = get_enum(file, mod, path, "modality", modality_names, LOOM_MODALITY_TEXT,
                      &md->modality, err);
    if (!rc)
        rc = loom_json_get_int(file, mod, path, "tokens_per_item", 0, 1, 1 << 24, &tpi, err);
    if (!rc)
        rc = loom_json_get_int(file, mod, path, "patches_per_item", 0, 1, 1 << 24, &ppi, err);
    if (!rc)
        rc = loom_json_get_int(file, mod, path, "vocab", 0, 0, 1 << 24, &vocab, err);
    if (!rc)
        rc = loom_json_get_bool(file, mod, path, "frozen", 0, &frozen, err);
    if (!rc)
        rc = parse_inputs(file, mod, path, md, err);
    if (!rc)
        rc = parse_layers(file, mod, path, md, err);
    md->tokens_per_item = tpi;
    md->patches_per_item = ppi;
    md->vocab = vocab;
    md->frozen = frozen;
    return rc;
}

/* Parses the optional "parallel" object (each degree in [1, 65536]);
 * microbatches defaults to 4*pp. */
static int parse_parallel(const char *file, const cJSON *root, loom_parallel *p,
                          int *present, loom_layout_spec **layouts, loom_error *err)
{
    static const char *const keys[] = {"tp", "pp", "dp", "vpp", "microbatches", "cp",
                                       "modules", "gpus", NULL};
    const cJSON *obj = NULL;
    int64_t v[6] = {1, 1, 1, 1, -1, 1};
    *present = 0;
    int rc = loom_json_get_object(file, root, "", "parallel", 0, &obj, err);
    if (rc || !obj)
        return rc;
    rc = loom_json_check_keys(file, obj, "parallel", keys, err);
    for (int i = 0; !rc && i < 6; i++)
        rc = loom_json_get_int(file, obj, "parallel", keys[i], 0, 1,
                               LOOM_MAX_PARALLEL_DEGREE, &v[i], err);
    if (!rc)
        rc = loom_layout_spec_parse(file, obj, "parallel", layouts, err);
    if (rc)
        return rc;
    if (v[4] < 0)
        v[4] = 4 * v[1] > LOOM_MAX_PARALLEL_DEGREE ? LOOM_MAX_PARALLEL_DEGREE : 4 * v[1];
    memset(p, 0, sizeof *p);
    p->tp = (int32_t)v[0];
    p->pp = (int32_t)v[1];
    p->dp = (int32_t)v[2];
    p->vpp = (int32_t)v[3];
    p->microbatches = (int32_t)v[4];
    p->cp = (int32_t)v[5];
    *present = 1; /* checked against the model once it is built */
    return LOOM_OK;
}

/* Frees the arrays parse_module allocated. */
static void free_descs(loom_module_desc *mods, int n)
{
    for (int i = 0; mods && i < n; i++) {
        free((void *)mods[i].groups);
        free((void *)mods[i].inputs);
    }
    free(mods);
}

/* Parses a whole model.json tree into a loom_model_data. */
static int parse_model(const char *file, const cJSON *root, loom_model_data **out,
                       loom_error *err)
{
    static const char *const keys[] = {"name", "parallel", "workload_family", "modules", NULL};
    loom_model_desc d;
    loom_parallel par;
    int has_par = 0;
    loom_layout_spec *layouts = NULL; /* parallel.modules, moved into the model */
    const cJSON *mods = NULL;
    memset(&d, 0, sizeof d);
    int rc = loom_json_check_keys(file, root, "", keys, err);
    if (!rc)
        rc = loom_json_get_string(file, root, "", "name", 1, &d.name, err);
    if (!rc)
        rc = loom_check_name(file, "name", d.name, err);
    if (!rc)
        rc = parse_parallel(file, root, &par, &has_par, &layouts, err);
    if (!rc)
        rc = loom_json_get_string(file, root, "", "workload_family", 0, &d.family, err);
    if (!rc)
        rc = loom_json_get_array(file, root, "", "modules", 1, &mods, err);
    if (rc) {
        loom_layout_spec_free(layouts);
        return rc;
    }
    int n = cJSON_GetArraySize(mods);
    if (n < 1 || n > LOOM_MAX_MODULES) {
        loom_layout_spec_free(layouts);
        return loom_set_error(err, LOOM_EINVAL, "%s: modules: expected 1 to %d modules, found %d",
                              file, LOOM_MAX_MODULES, n);
    }
    loom_module_desc *descs = calloc((size_t)n, sizeof *descs);
    if (!descs) {
        loom_layout_spec_free(layouts);
        return loom_set_error(err, LOOM_ENOMEM, "%s: out of memory", file);
    }
    int i = 0;
    char path[64];
    int64_t layers = 0; /* across modules so far */
    for (const cJSON *m = mods->child; m && !rc; m = m->next, i++) {
        loom_json_path_index(path, sizeof path, "modules", i);
        rc = parse_module(file, m, path, &descs[i], err);
        for (int k = 0; !rc && k < descs[i].n_groups; k++)
            layers += descs[i].groups[k].count;
        if (!rc && layers > LOOM_MAX_LAYERS_TOTAL)
            rc = loom_set_error(err, LOOM_EINVAL,
                                "%s: %s.layers: expected at most %d layers across all "
                                "modules, found %lld by this module",
                                file, path, LOOM_MAX_LAYERS_TOTAL, (long long)layers);
    }
    if (!rc) {
        d.n_modules = n;
        d.modules = descs;
        d.parallel = has_par ? &par : NULL;
        rc = loom_model_build(file, &d, out, err);
    }
    if (!rc && has_par) {
        loom_module_layout *l = NULL;
        int32_t gpus = 0;
        if (layouts) /* checks the listed modules and the top-level layout */
            rc = loom_module_layouts_resolve(layouts, &par, loom_model_data_model(*out), &l,
                                             &gpus, err);
        else
            rc = loom_parallel_validate(&par, loom_model_data_model(*out), err);
        free(l);
        if (rc && layouts) {
            loom_model_data_free(*out);
            *out = NULL;
        } else if (rc) {
            loom_error_prefix(err, rc, file);
            loom_model_data_free(*out);
            *out = NULL;
        }
    }
    free_descs(descs, n);
    if (!rc && layouts) {
        loom_model_data_set_layouts(*out, layouts);
        layouts = NULL;
    }
    loom_layout_spec_free(layouts);
    return rc;
}

int loom_model_load(const char *spec, loom_model_data **out, loom_error *err)
{
    *out = NULL;
    if (!spec || !*spec)
        return loom_set_error(err, LOOM_EINVAL,
                              "model: expected a preset name or a path to a model.json, "
                              "found an empty string");
    int rc = loom_model_preset(spec, out, err);
    if (rc != LOOM_ENOTFOUND)
        return rc;
    cJSON *root = NULL;
    rc = loom_load_spec_json("model", spec, loom_model_preset_names(), &root, err);
    if (rc)
        return rc;
    rc = loom_model_is_hf_config(root) ? loom_model_from_hf(spec, root, out, err)
                                       : parse_model(spec, root, out, err);
    cJSON_Delete(root);
    return rc;
}
