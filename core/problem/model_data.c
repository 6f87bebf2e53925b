/* model_data.c - the owned model object: building it from module
 * descriptions (name resolution, DAG checks, topological order, layer
 * expansion), its accessors and freeing. */
#include <stdlib.h>
#include <string.h>
#include <loom/sys/json.h>
#include "problem_io_priv.h"

struct loom_model_data {
    loom_model model;
    loom_module *modules;  /* model.n_modules entries; names, layers and
                              inputs each malloc'd */
    char *name;
    loom_parallel parallel;
    int has_parallel;
    const char *family;    /* static string or NULL */
    loom_layout_spec *layouts; /* parallel.modules, NULL when none */
};

const loom_layout_spec *loom_model_data_layouts(const loom_model_data *m)
{
    return m ? m->layouts : NULL;
}

void loom_model_data_set_layouts(loom_model_data *m, loom_layout_spec *layouts)
{
    loom_layout_spec_free(m->layouts);
    m->layouts = layouts;
}

const loom_model *loom_model_data_model(const loom_model_data *m)
{
    return m ? &m->model : NULL;
}

const loom_parallel *loom_model_data_parallel(const loom_model_data *m)
{
    return (m && m->has_parallel) ? &m->parallel : NULL;
}

const char *loom_model_data_family(const loom_model_data *m)
{
    return m ? m->family : NULL;
}

/* See loom/sys/problem.h. */
void loom_model_data_info(const loom_model_data *m, loom_model_info *out)
{
    out->model = loom_model_data_model(m);
    out->parallel = loom_model_data_parallel(m);
    out->has_module_layouts = m && m->layouts ? 1 : 0;
}

void loom_model_data_free(loom_model_data *m)
{
    if (!m)
        return;
    if (m->modules) {
        for (int32_t i = 0; i < m->model.n_modules; i++) {
            free((void *)m->modules[i].name);
            free((void *)m->modules[i].layers);
            free((void *)m->modules[i].inputs);
        }
    }
    free(m->modules);
    free(m->name);
    loom_layout_spec_free(m->layouts);
    free(m);
}

/* malloc'd copy of a string, NULL on failure. */
static char *dup_string(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* Index of the module named `name` in file order, or -1. */
static int find_module(const loom_model_desc *d, const char *name)
{
    for (int32_t i = 0; i < d->n_modules; i++)
        if (strcmp(d->modules[i].name, name) == 0)
            return i;
    return -1;
}

/* Checks names, inputs and layer totals and fills adj[i][j] = 1 when module
 * j (file order) is an input of module i. */
static int check_modules(const char *file, const loom_model_desc *d,
                         unsigned char adj[LOOM_MAX_MODULES][LOOM_MAX_MODULES],
                         loom_error *err)
{
    char names[LOOM_MAX_MODULES * 66], shown[80];
    int64_t all_layers = 0;
    for (int32_t i = 0; i < d->n_modules; i++) {
        const loom_module_desc *md = &d->modules[i];
        for (int32_t j = 0; j < i; j++)
            if (strcmp(d->modules[j].name, md->name) == 0)
                return loom_set_error(err, LOOM_EINVAL,
                                      "%s: modules[%d].name: expected a unique module name, "
                                      "found \"%s\" again (also modules[%d].name)",
                                      file, (int)i, loom_escape(md->name, shown, sizeof shown),
                                      (int)j);
        int64_t total = 0;
        for (int32_t g = 0; g < md->n_groups; g++) {
            if (md->groups[g].count < 1)
                return loom_set_error(err, LOOM_EINVAL,
                                      "%s: modules[%d].layers[%d].count: expected an integer >= 1, "
                                      "found %d", file, (int)i, (int)g,
                                      (int)md->groups[g].count);
            total += md->groups[g].count;
        }
        if (total < 1 || total > LOOM_MAX_LAYERS_PER_MODULE)
            return loom_set_error(err, LOOM_EINVAL,
                                  "%s: modules[%d].layers: expected 1 to %d layers in total, "
                                  "found %lld", file, (int)i, LOOM_MAX_LAYERS_PER_MODULE,
                                  (long long)total);
        all_layers += total;
        if (all_layers > LOOM_MAX_LAYERS_TOTAL)
            return loom_set_error(err, LOOM_EINVAL,
                                  "%s: modules[%d].layers: expected at most %d layers across all "
                                  "modules, found %lld by this module", file, (int)i,
                                  LOOM_MAX_LAYERS_TOTAL, (long long)all_layers);
    }
    for (int32_t i = 0; i < d->n_modules; i++) {
        const loom_module_desc *md = &d->modules[i];
        if (md->n_inputs > LOOM_MAX_MODULES)
            return loom_set_error(err, LOOM_EINVAL,
                                  "%s: modules[%d].inputs: expected at most %d inputs, found %d",
                                  file, (int)i, LOOM_MAX_MODULES, (int)md->n_inputs);
        for (int32_t k = 0; k < md->n_inputs; k++) {
            int j = find_module(d, md->inputs[k]);
            if (j < 0) {
                size_t n = 0;
                names[0] = 0;
                for (int32_t q = 0; q < d->n_modules && n < sizeof names; q++)
                    n += (size_t)snprintf(names + n, sizeof names - n, "%s%s",
                                          q ? ", " : "",
                                          loom_escape(d->modules[q].name, shown, sizeof shown));
                return loom_set_error(err, LOOM_EINVAL,
                                      "%s: modules[%d].inputs[%d]: expected the name of a module "
                                      "(%s), found \"%s\"", file, (int)i, (int)k, names,
                                      loom_escape(md->inputs[k], shown, sizeof shown));
            }
            if (adj[i][j])
                return loom_set_error(err, LOOM_EINVAL,
                                      "%s: modules[%d].inputs[%d]: expected each input once, "
                                      "found \"%s\" twice", file, (int)i, (int)k,
                                      loom_escape(md->inputs[k], shown, sizeof shown));
            adj[i][j] = 1;
        }
    }
    return LOOM_OK;
}

/* Reports a cycle among the modules not yet placed (done[i] == 0), walking
 * input edges until a module repeats; prints it in data-flow order. */
static int report_cycle(const char *file, const loom_model_desc *d,
                        unsigned char adj[LOOM_MAX_MODULES][LOOM_MAX_MODULES],
                        const unsigned char *done, loom_error *err)
{
    int walk[LOOM_MAX_MODULES + 1], pos[LOOM_MAX_MODULES];
    int n = 0, cur = -1;
    for (int i = 0; i < d->n_modules; i++) {
        pos[i] = -1;
        if (!done[i] && cur < 0)
            cur = i;
    }
    while (cur >= 0 && pos[cur] < 0) {
        pos[cur] = n;
        walk[n++] = cur;
        int next = -1;
        for (int j = 0; j < d->n_modules && next < 0; j++)
            if (adj[cur][j] && !done[j])
                next = j;
        cur = next;
    }
    char msg[LOOM_ERROR_MSG_BYTES / 2];
    size_t len = 0;
    msg[0] = 0;
    if (cur >= 0) {
        /* walk[pos[cur]..n-1] follows inputs upstream; print downstream. */
        for (int k = n - 1; k >= pos[cur] && len < sizeof msg; k--)
            len += (size_t)snprintf(msg + len, sizeof msg - len, "%s -> ",
                                    d->modules[walk[k]].name);
        if (len < sizeof msg)
            snprintf(msg + len, sizeof msg - len, "%s", d->modules[walk[n - 1]].name);
    }
    return loom_set_error(err, LOOM_EINVAL,
                          "%s: modules: expected an acyclic module graph (inputs), "
                          "found the cycle %s", file, msg);
}

/* Kahn's algorithm, lowest file index first: order[k] = file index of the
 * k-th module in topological order. */
static int topo_order(const char *file, const loom_model_desc *d,
                      unsigned char adj[LOOM_MAX_MODULES][LOOM_MAX_MODULES],
                      int *order, loom_error *err)
{
    unsigned char done[LOOM_MAX_MODULES] = {0};
    for (int k = 0; k < d->n_modules; k++) {
        int pick = -1;
        for (int i = 0; i < d->n_modules && pick < 0; i++) {
            if (done[i])
                continue;
            int ready = 1;
            for (int j = 0; j < d->n_modules; j++)
                if (adj[i][j] && !done[j])
                    ready = 0;
            if (ready)
                pick = i;
        }
        if (pick < 0)
            return report_cycle(file, d, adj, done, err);
        done[pick] = 1;
        order[k] = pick;
    }
    return LOOM_OK;
}

/* Default family from the modalities: video -> "video", image ->
 * "interleaved", otherwise NULL. */
static const char *infer_family(const loom_model_desc *d)
{
    const char *const *fam = loom_workload_family_names();
    int image = 0, video = 0;
    for (int32_t i = 0; i < d->n_modules; i++) {
        video |= d->modules[i].modality == LOOM_MODALITY_VIDEO;
        image |= d->modules[i].modality == LOOM_MODALITY_IMAGE;
    }
    const char *want = video ? "video" : image ? "interleaved" : NULL;
    for (int i = 0; want && fam[i]; i++)
        if (strcmp(fam[i], want) == 0)
            return fam[i];
    return NULL;
}

/* Copies module `src` (file order) into `dst`, mapping inputs through
 * `rank_of` (file index -> topological index). */
static int copy_module(const loom_module_desc *src, const int *rank_of,
                       const loom_model_desc *d, loom_module *dst)
{
    int64_t total = 0;
    for (int32_t g = 0; g < src->n_groups; g++)
        total += src->groups[g].count;
    loom_layer *layers = calloc((size_t)total, sizeof *layers);
    int32_t *inputs = src->n_inputs ? calloc((size_t)src->n_inputs, sizeof *inputs) : NULL;
    char *name = dup_string(src->name);
    if (!layers || !name || (src->n_inputs && !inputs)) {
        free(layers);
        free(inputs);
        free(name);
        return LOOM_ENOMEM;
    }
    int64_t at = 0;
    for (int32_t g = 0; g < src->n_groups; g++)
        for (int32_t c = 0; c < src->groups[g].count; c++)
            layers[at++] = src->groups[g].layer;
    for (int32_t k = 0; k < src->n_inputs; k++)
        inputs[k] = rank_of[find_module(d, src->inputs[k])];
    dst->name = name;
    dst->kind = src->kind;
    dst->modality = src->modality;
    dst->n_layers = (int32_t)total;
    dst->layers = layers;
    dst->tokens_per_item = src->tokens_per_item;
    dst->patches_per_item = src->patches_per_item;
    dst->vocab = src->vocab;
    dst->frozen = src->frozen;
    dst->n_inputs = src->n_inputs;
    dst->inputs = inputs;
    return LOOM_OK;
}

int loom_model_build(const char *file, const loom_model_desc *d,
                     loom_model_data **out, loom_error *err)
{
    static unsigned char zero[LOOM_MAX_MODULES][LOOM_MAX_MODULES];
    unsigned char adj[LOOM_MAX_MODULES][LOOM_MAX_MODULES];
    int order[LOOM_MAX_MODULES], rank_of[LOOM_MAX_MODULES];
    *out = NULL;
    if (d->n_modules < 1 || d->n_modules > LOOM_MAX_MODULES)
        return loom_set_error(err, LOOM_EINVAL,
                              "%s: modules: expected 1 to %d modules, found %d", file,
                              LOOM_MAX_MODULES, (int)d->n_modules);
    memcpy(adj, zero, sizeof adj);
    int rc = check_modules(file, d, adj, err);
    if (!rc)
        rc = topo_order(file, d, adj, order, err);
    if (rc)
        return rc;
    for (int k = 0; k < d->n_modules; k++)
        rank_of[order[k]] = k;

    loom_model_data *m = calloc(1, sizeof *m);
    if (!m)
        return loom_set_error(err, LOOM_ENOMEM, "%s: out of memory", file);
    m->name = dup_string(d->name);
    m->modules = calloc((size_t)d->n_modules, sizeof *m->modules);
    if (!m->name || !m->modules) {
        loom_model_data_free(m);
        return loom_set_error(err, LOOM_ENOMEM, "%s: out of memory", file);
    }
    m->model.name = m->name;
    m->model.modules = m->modules;
    for (int k = 0; k < d->n_modules; k++) {
        m->model.n_modules = k + 1;
        if (copy_module(&d->modules[order[k]], rank_of, d, &m->modules[k])) {
            loom_model_data_free(m);
            return loom_set_error(err, LOOM_ENOMEM, "%s: out of memory", file);
        }
    }
    if (d->parallel) {
        m->parallel = *d->parallel;
        m->has_parallel = 1;
    }
    m->family = infer_family(d);
    if (d->family) {
        const char *const *fam = loom_workload_family_names();
        m->family = NULL;
        for (int i = 0; fam[i]; i++)
            if (strcmp(fam[i], d->family) == 0)
                m->family = fam[i];
        if (!m->family) {
            char list[160], shown[64];
            loom_join_names(fam, list, sizeof list);
            loom_escape(d->family, shown, sizeof shown);
            loom_model_data_free(m);
            return loom_set_error(err, LOOM_EINVAL,
                                  "%s: workload_family: expected one of %s, found \"%s\"",
                                  file, list, shown);
        }
    }
    *out = m;
    return LOOM_OK;
}
