/* layout_io.c - per-module parallel layouts: reading parallel.modules (of
 * model.json, or of a parallel JSON file given to --parallel), and
 * resolving them against the model into one loom_module_layout per module
 * with its GPU set. */
#include <stdlib.h>
#include <string.h>
#include "problem_io_priv.h"

/* One listed module as read; degrees 0 take the top-level value. */
typedef struct layout_entry {
    char *name;
    int32_t tp, cp, pp, dp;
    int32_t placement;    /* LOOM_LAYOUT_DISJOINT or _COLOCATED */
    char *colocated_with; /* NULL: the top-level GPUs */
} layout_entry;

struct loom_layout_spec {
    char *file;           /* for messages */
    char *path;           /* JSON path of the parallel object ("parallel" or "") */
    int32_t n;
    layout_entry *e;
    int32_t gpus;         /* the "gpus" total, 0 when not given */
};

void loom_layout_spec_free(loom_layout_spec *s)
{
    if (!s)
        return;
    for (int32_t i = 0; i < s->n; i++) {
        free(s->e[i].name);
        free(s->e[i].colocated_with);
    }
    free(s->e);
    free(s->file);
    free(s->path);
    free(s);
}

/* malloc'd copy of s (NULL stays NULL); *fail set when out of memory. */
static char *dup_or_null(const char *s, int *fail)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (!d)
        *fail = 1;
    else
        memcpy(d, s, n);
    return d;
}

/* "path.key" of the parallel object's member, path "" giving "key". */
static void member_path(char *buf, size_t size, const char *path, const char *key)
{
    if (path && *path)
        loom_json_path_key(buf, size, path, key);
    else
        snprintf(buf, size, "%s", key);
}

/* Parses one module's layout object at `path` into *e. */
static int parse_entry(const char *file, const cJSON *obj, const char *path, layout_entry *e,
                       loom_error *err)
{
    static const char *const keys[] = {"tp", "cp", "pp", "dp", "placement", "colocated_with",
                                       NULL};
    if (!cJSON_IsObject(obj))
        return loom_set_error(err, LOOM_EINVAL, "%s: %s: expected an object, found %s", file,
                              path, loom_json_type_name(obj));
    int rc = loom_json_check_keys(file, obj, path, keys, err);
    int64_t v[4] = {0, 0, 0, 0};
    for (int i = 0; !rc && i < 4; i++)
        rc = loom_json_get_int(file, obj, path, keys[i], 0, 1, LOOM_MAX_PARALLEL_DEGREE, &v[i],
                               err);
    const char *placement = NULL, *with = NULL;
    if (!rc)
        rc = loom_json_get_string(file, obj, path, "placement", 0, &placement, err);
    if (!rc)
        rc = loom_json_get_string(file, obj, path, "colocated_with", 0, &with, err);
    if (rc)
        return rc;
    e->tp = (int32_t)v[0];
    e->cp = (int32_t)v[1];
    e->pp = (int32_t)v[2];
    e->dp = (int32_t)v[3];
    e->placement = LOOM_LAYOUT_COLOCATED;
    if (placement && strcmp(placement, "disjoint") == 0)
        e->placement = LOOM_LAYOUT_DISJOINT;
    else if (placement && strcmp(placement, "colocated") != 0) {
        char shown[64];
        loom_escape(placement, shown, sizeof shown);
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s.placement: expected \"disjoint\" or \"colocated\", "
                              "found \"%s\"", file, path, shown);
    }
    if (with && e->placement == LOOM_LAYOUT_DISJOINT)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s.colocated_with: expected no colocated_with with placement "
                              "\"disjoint\" (a disjoint module has its own GPUs), found one",
                              file, path);
    int fail = 0;
    e->colocated_with = dup_or_null(with, &fail);
    return fail ? loom_set_error(err, LOOM_ENOMEM, "%s: out of memory", file) : LOOM_OK;
}

int loom_layout_spec_parse(const char *file, const cJSON *parallel, const char *path,
                           loom_layout_spec **out, loom_error *err)
{
    *out = NULL;
    const cJSON *mods = NULL;
    int64_t gpus = 0;
    int rc = loom_json_get_object(file, parallel, path, "modules", 0, &mods, err);
    if (!rc)
        rc = loom_json_get_int(file, parallel, path, "gpus", 0, 1, LOOM_MAX_GPUS, &gpus, err);
    if (rc || (!mods && gpus == 0))
        return rc;
    char mpath[160];
    member_path(mpath, sizeof mpath, path, "modules");
    int n = mods ? cJSON_GetArraySize(mods) : 0;
    if (n > LOOM_MAX_MODULES)
        return loom_set_error(err, LOOM_EINVAL, "%s: %s: expected at most %d modules, found %d",
                              file, mpath, LOOM_MAX_MODULES, n);
    loom_layout_spec *s = calloc(1, sizeof *s);
    int fail = !s;
    if (s) {
        s->file = dup_or_null(file, &fail);
        s->path = dup_or_null(path ? path : "", &fail);
        s->e = calloc((size_t)n + 1, sizeof *s->e);
        fail |= !s->e;
        s->gpus = (int32_t)gpus;
    }
    if (fail) {
        loom_layout_spec_free(s);
        return loom_set_error(err, LOOM_ENOMEM, "%s: out of memory", file);
    }
    for (const cJSON *m = mods ? mods->child : NULL; m && !rc; m = m->next) {
        char epath[256];
        loom_json_path_key(epath, sizeof epath, mpath, m->string);
        layout_entry *e = &s->e[s->n++];
        e->name = dup_or_null(m->string, &fail);
        rc = fail ? loom_set_error(err, LOOM_ENOMEM, "%s: out of memory", file)
                  : parse_entry(file, m, epath, e, err);
    }
    if (rc) {
        loom_layout_spec_free(s);
        return rc;
    }
    *out = s;
    return LOOM_OK;
}

/* Index of the module called `name`, or -1. */
static int32_t module_index(const loom_model *model, const char *name)
{
    for (int32_t i = 0; i < model->n_modules; i++)
        if (strcmp(model->modules[i].name, name) == 0)
            return i;
    return -1;
}

/* The model's module names joined with ", " into buf. */
static void module_list(const loom_model *model, char *buf, size_t size)
{
    const char *names[LOOM_MAX_MODULES + 1];
    for (int32_t i = 0; i < model->n_modules && i < LOOM_MAX_MODULES; i++)
        names[i] = model->modules[i].name;
    names[model->n_modules < LOOM_MAX_MODULES ? model->n_modules : LOOM_MAX_MODULES] = NULL;
    loom_join_names(names, buf, size);
}

/* Checks one listed module's own degrees against its layers and the
 * global batch. `at` is its JSON path. */
static int check_degrees(const loom_layout_spec *s, const char *at, const loom_module *mod,
                         const loom_module_layout *l, const loom_parallel *p, loom_error *err)
{
    for (int32_t k = 0; k < mod->n_layers; k++)
        if (mod->layers[k].heads % l->tp != 0)
            return loom_set_error(err, LOOM_EINVAL,
                                  "%s: %s.tp: expected a divisor of every layer's attention "
                                  "heads, found %d (module \"%s\" layer %d has %d heads)",
                                  s->file, at, (int)l->tp, mod->name, (int)k,
                                  (int)mod->layers[k].heads);
    if (l->pp > mod->n_layers)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s.pp: expected at most the module's %d layers, found %d",
                              s->file, at, (int)mod->n_layers, (int)l->pp);
    int64_t batch = (int64_t)p->dp * p->microbatches;
    if (batch % l->dp != 0)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: %s.dp: expected a divisor of dp*microbatches = %lld (the "
                              "iteration's microbatches over every replica), found %d",
                              s->file, at, (long long)batch, (int)l->dp);
    return LOOM_OK;
}

/* Follows colocated_with from module m to the module owning the GPU set
 * (-1: the top-level set). LOOM_EINVAL on a name that is no module, on
 * the module itself, and on a cycle. */
static int owner_of(const loom_layout_spec *s, const loom_model *model, const int32_t *entry_of,
                    int32_t m, int32_t *owner, loom_error *err)
{
    int32_t cur = m;
    for (int32_t step = 0; step <= model->n_modules; step++) {
        int32_t k = entry_of[cur];
        if (k < 0) { /* an unlisted module runs on the top-level GPUs */
            *owner = -1;
            return LOOM_OK;
        }
        if (s->e[k].placement == LOOM_LAYOUT_DISJOINT) {
            *owner = cur;
            return LOOM_OK;
        }
        const char *with = s->e[k].colocated_with;
        if (!with) {
            *owner = -1;
            return LOOM_OK;
        }
        char at[256], list[512];
        snprintf(at, sizeof at, "%s%smodules.%s.colocated_with", s->path, *s->path ? "." : "",
                 s->e[k].name);
        int32_t next = module_index(model, with);
        if (next < 0 || next == cur) {
            char shown[64];
            module_list(model, list, sizeof list);
            loom_escape(with, shown, sizeof shown);
            return loom_set_error(err, LOOM_EINVAL,
                                  "%s: %s: expected another module of the model (%s), found "
                                  "\"%s\"%s", s->file, at, list, shown,
                                  next == cur ? " (the module itself)" : "");
        }
        cur = next;
    }
    return loom_set_error(err, LOOM_EINVAL,
                          "%s: %s%smodules: expected colocated_with to lead to a module with its "
                          "own GPUs, found a cycle through \"%s\"", s->file, s->path,
                          *s->path ? "." : "", model->modules[m].name);
}

/* tp*cp*pp*dp of l, or LOOM_MAX_GPUS + 1 when that is larger than
 * LOOM_MAX_GPUS (each degree is at most LOOM_MAX_PARALLEL_DEGREE, so the
 * product is bounded before it can overflow). */
static int64_t layout_gpus(const loom_module_layout *l)
{
    const int32_t deg[4] = {l->tp, l->cp, l->pp, l->dp};
    int64_t n = 1;
    for (int i = 0; i < 4; i++) {
        n *= deg[i];
        if (n > LOOM_MAX_GPUS)
            return (int64_t)LOOM_MAX_GPUS + 1;
    }
    return n;
}

/* tp*cp*pp*dp of l for messages (exact up to 2^53). */
static double layout_gpus_shown(const loom_module_layout *l)
{
    return (double)l->tp * l->cp * l->pp * l->dp;
}

int loom_module_layouts_resolve(const loom_layout_spec *s, const loom_parallel *p,
                                const loom_model *model, loom_module_layout **out,
                                int32_t *total_gpus, loom_error *err)
{
    *out = NULL;
    *total_gpus = 0;
    int32_t entry_of[LOOM_MAX_MODULES];
    unsigned char listed[LOOM_MAX_MODULES];
    char at[256], list[512];
    for (int32_t i = 0; i < model->n_modules; i++) {
        entry_of[i] = -1;
        listed[i] = 0;
    }
    for (int32_t k = 0; k < s->n; k++) {
        snprintf(at, sizeof at, "%s%smodules", s->path, *s->path ? "." : "");
        int32_t m = module_index(model, s->e[k].name);
        if (m < 0) {
            char shown[64];
            module_list(model, list, sizeof list);
            loom_escape(s->e[k].name, shown, sizeof shown);
            return loom_set_error(err, LOOM_EINVAL,
                                  "%s: %s: expected module names of the model (%s), found "
                                  "\"%s\"", s->file, at, list, shown);
        }
        entry_of[m] = k;
        listed[m] = 1;
    }
    /* the top-level layout's own checks, for the modules it runs */
    int rc = loom_parallel_validate_skip(p, model, listed, err);
    if (rc)
        return loom_error_prefix(err, rc, s->file);
    loom_module_layout *l = calloc((size_t)model->n_modules, sizeof *l);
    if (!l)
        return loom_set_error(err, LOOM_ENOMEM, "%s: out of memory", s->file);
    int64_t top = (int64_t)p->tp * loom_parallel_cp(p) * p->pp * p->dp, next_gpu = top;
    for (int32_t m = 0; m < model->n_modules; m++) {
        const layout_entry *e = entry_of[m] >= 0 ? &s->e[entry_of[m]] : NULL;
        l[m] = (loom_module_layout){(uint32_t)sizeof *l, p->tp, loom_parallel_cp(p), p->pp, p->dp,
                                    LOOM_LAYOUT_TOP, -1, 0, (int32_t)top, e != NULL};
        if (!e)
            continue;
        l[m].tp = e->tp ? e->tp : l[m].tp;
        l[m].cp = e->cp ? e->cp : l[m].cp;
        l[m].pp = e->pp ? e->pp : l[m].pp;
        l[m].dp = e->dp ? e->dp : l[m].dp;
        l[m].placement = e->placement;
        snprintf(at, sizeof at, "%s%smodules.%s", s->path, *s->path ? "." : "", e->name);
        rc = check_degrees(s, at, &model->modules[m], &l[m], p, err);
        if (rc)
            break;
        if (e->placement == LOOM_LAYOUT_DISJOINT) {
            l[m].first_gpu = (int32_t)next_gpu;
            int64_t own = layout_gpus(&l[m]);
            if (next_gpu + own > LOOM_MAX_GPUS) {
                rc = loom_set_error(err, LOOM_EINVAL,
                                    "%s: %s: expected at most %d GPUs over every layout, "
                                    "found %.0f with this module", s->file, at, LOOM_MAX_GPUS,
                                    (double)next_gpu + layout_gpus_shown(&l[m]));
                break;
            }
            l[m].gpus = (int32_t)own;
            next_gpu += own;
        }
    }
    /* colocated modules take the set of the module they lead to */
    for (int32_t m = 0; m < model->n_modules && !rc; m++) {
        if (l[m].placement != LOOM_LAYOUT_COLOCATED)
            continue;
        snprintf(at, sizeof at, "%s%smodules.%s", s->path, *s->path ? "." : "",
                 model->modules[m].name);
        int32_t owner = -1;
        rc = owner_of(s, model, entry_of, m, &owner, err);
        if (rc)
            break;
        const char *with = s->e[entry_of[m]].colocated_with;
        l[m].colocated_with = with ? module_index(model, with) : -1;
        l[m].first_gpu = owner >= 0 ? l[owner].first_gpu : 0;
        int32_t set = owner >= 0 ? l[owner].gpus : (int32_t)top;
        l[m].gpus = set;
        const layout_entry *e = &s->e[entry_of[m]];
        int64_t fixed = (int64_t)l[m].tp * l[m].cp * l[m].pp;
        if (!e->dp && set % fixed == 0) /* dp not given: whatever fills the set */
            l[m].dp = (int32_t)(set / fixed);
        if (!e->dp && (rc = check_degrees(s, at, &model->modules[m], &l[m], p, err)) != LOOM_OK)
            break;
        if (layout_gpus(&l[m]) != set)
            rc = loom_set_error(err, LOOM_EINVAL,
                                "%s: %s: expected tp*cp*pp*dp = %d, the GPUs of the set it is "
                                "colocated with (%s), found %d*%d*%d*%d = %.0f", s->file, at,
                                (int)set, owner >= 0 ? model->modules[owner].name
                                                     : "the top-level layout",
                                (int)l[m].tp, (int)l[m].cp, (int)l[m].pp, (int)l[m].dp,
                                layout_gpus_shown(&l[m]));
    }
    if (!rc && s->gpus > 0 && s->gpus != next_gpu)
        rc = loom_set_error(err, LOOM_EINVAL,
                            "%s: %s%sgpus: expected the GPUs of the layouts, %lld (top-level "
                            "tp*cp*pp*dp %lld + %lld on disjoint modules), found %d", s->file,
                            s->path, *s->path ? "." : "", (long long)next_gpu, (long long)top,
                            (long long)(next_gpu - top), (int)s->gpus);
    if (rc) {
        free(l);
        return rc;
    }
    *out = l;
    *total_gpus = (int32_t)next_gpu;
    return LOOM_OK;
}

int32_t loom_layout_spec_count(const loom_layout_spec *s)
{
    return s ? s->n : 0;
}

/* 1 when spec names a JSON file (ends in ".json") rather than key=value pairs. */
static int is_json_path(const char *spec)
{
    size_t n = spec ? strlen(spec) : 0;
    return n > 5 && strcmp(spec + n - 5, ".json") == 0;
}

/* 1 when spec is a parallel object written inline ("{...}"). */
static int is_json_text(const char *spec)
{
    while (spec && (*spec == ' ' || *spec == '\t' || *spec == '\n'))
        spec++;
    return spec && *spec == '{';
}

int loom_parallel_load(const char *spec, loom_parallel *inout, loom_layout_spec **layouts,
                       loom_error *err)
{
    *layouts = NULL;
    int text = is_json_text(spec);
    if (!text && !is_json_path(spec))
        return loom_parallel_parse(spec, inout, err);
    cJSON *root = NULL;
    int rc = text ? loom_json_parse("--parallel", spec, strlen(spec), &root, err)
                  : loom_json_load(spec, &root, err);
    if (rc)
        return rc;
    if (text)
        spec = "--parallel"; /* messages name the option */
    static const char *const keys[] = {"tp", "pp", "dp", "vpp", "microbatches", "cp", "modules",
                                       "gpus", NULL};
    if (!cJSON_IsObject(root))
        rc = loom_set_error(err, LOOM_EINVAL, "%s: expected a parallel object, found %s", spec,
                            loom_json_type_name(root));
    if (!rc)
        rc = loom_json_check_keys(spec, root, "", keys, err);
    int64_t v[6] = {inout->tp, inout->pp, inout->dp, inout->vpp, inout->microbatches,
                    loom_parallel_cp(inout)};
    for (int i = 0; !rc && i < 6; i++)
        rc = loom_json_get_int(spec, root, "", keys[i], 0, 1, LOOM_MAX_PARALLEL_DEGREE, &v[i],
                               err);
    loom_layout_spec *ls = NULL;
    if (!rc)
        rc = loom_layout_spec_parse(spec, root, "", &ls, err);
    cJSON_Delete(root);
    if (rc)
        return rc;
    inout->tp = (int32_t)v[0];
    inout->pp = (int32_t)v[1];
    inout->dp = (int32_t)v[2];
    inout->vpp = (int32_t)v[3];
    inout->microbatches = (int32_t)v[4];
    inout->cp = (int32_t)v[5];
    *layouts = ls;
    return LOOM_OK;
}
