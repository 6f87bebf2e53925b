/* tune_space.c - the layouts `loom tune` searches: TP a power of two
 * within a node (or across nodes when allowed) dividing every layer's
 * heads, CP a power of two, PP at most the layers, DP = GPUs / (TP CP PP),
 * the microbatch size K (given, or 1, 2, 4, ... dividing B / DP), the
 * microbatches M = B / (K DP), and the virtual stages V that divide the
 * layers evenly over PP x V chunks of at least two layers (V > 1 only when
 * PP divides M, as Megatron-LM's interleaved schedule needs). A multimodal
 * model's non-backbone modules also get layouts of their own: colocated on
 * the top-level GPUs at a narrower TP, and, for manifests whose
 * partitioner lays per-module layouts out, disjoint on GPUs of their own
 * (docs/tune.md, "Per-module layouts"). */
#include <stdlib.h>
#include <string.h>
#include <loom/sys/json.h>
#include <loom/sys/planner.h>
#include <loom/sys/problem.h>
#include "tune.h"

#define MAX_CP 8
#define MAX_VPP 8
#define MIN_CHUNK_LAYERS 2

/* Layers of every module together. */
static int64_t model_layers(const loom_model *m)
{
    int64_t n = 0;
    for (int32_t i = 0; i < m->n_modules; i++)
        n += m->modules[i].n_layers;
    return n;
}

/* 1 when tp divides the heads (and KV heads) of every layer. */
static int tp_fits_heads(const loom_model *m, int32_t tp)
{
    for (int32_t i = 0; i < m->n_modules; i++)
        for (int32_t l = 0; l < m->modules[i].n_layers; l++) {
            const loom_layer *ly = &m->modules[i].layers[l];
            if (ly->heads % tp != 0)
                return 0;
        }
    return 1;
}

/* The virtual-stage counts of a layout, into v (at most MAX_VPP). */
static int32_t vpp_options(int64_t layers, int32_t pp, int32_t mb, int32_t *v)
{
    int32_t n = 0;
    v[n++] = 1;
    for (int32_t k = 2; k <= MAX_VPP && pp > 1; k++)
        if (layers % ((int64_t)pp * k) == 0 && layers / ((int64_t)pp * k) >= MIN_CHUNK_LAYERS &&
            mb % pp == 0)
            v[n++] = k;
    return n;
}

/* A module's own layout within a configuration (module -1: none). */
typedef struct variant {
    int32_t module, tp, pp, dp, placement;
} variant;

/* 1 when manifest m plans configurations of variant v: a layout-choosing
 * manifest only single layouts, a per-module layout needs a manifest that
 * lays it out when disjoint, and a layout-laying manifest always gets its
 * modules listed (colocated at the top-level TP for the plain layout). */
static int manifest_takes(const loom_tune_search *t, int32_t m, const variant *v)
{
    if (t->layouts[m] == 2)
        return v->module < 0;
    if (v->module >= 0 && v->placement == LOOM_LAYOUT_DISJOINT)
        return t->layouts[m] == 1;
    return 1;
}

/* Appends one configuration per manifest that takes v; -1 when the space
 * is too big. */
static int add_layout(loom_tune_search *t, int32_t *cap, const loom_parallel *p, int32_t K,
                      const variant *v)
{
    for (int32_t m = 0; m < t->n_manifests; m++) {
        if (!manifest_takes(t, m, v))
            continue;
        if (t->n_configs >= LOOM_TUNE_MAX_CONFIGS)
            return -1;
        if (t->n_configs == *cap) {
            int32_t nc = *cap ? *cap * 2 : 256;
            loom_tune_config *g = realloc(t->configs, (size_t)nc * sizeof *g);
            if (!g)
                return -1;
            t->configs = g;
            *cap = nc;
        }
        loom_tune_config *c = &t->configs[t->n_configs];
        memset(c, 0, sizeof *c);
        c->index = t->n_configs++;
        c->manifest = m;
        c->par = *p;
        c->micro_batch_size = K;
        c->module = v->module;
        c->module_tp = v->tp;
        c->module_pp = v->pp;
        c->module_dp = v->dp;
        c->module_placement = v->placement;
    }
    return 0;
}

/* 1 when tp divides the heads of every layer of module e. */
static int tp_fits_module(const loom_module *e, int32_t tp)
{
    for (int32_t l = 0; l < e->n_layers; l++)
        if (e->layers[l].heads % tp != 0 || e->layers[l].kv_heads % tp != 0)
            return 0;
    return 1;
}

/* Appends the layout p with K as one layout, and (without
 * --single-layouts) with each non-backbone module colocated at every
 * narrower power-of-two TP dividing its heads: tp / tp_e copies of it on
 * each rank's GPUs (its dp filling the top-level GPUs), when the copies
 * divide the iteration's microbatches. A disjoint variant d (module >= 0)
 * is appended as it is. */
static int add_variants(loom_tune_search *t, int32_t *cap, const loom_model *model,
                        const loom_parallel *p, int32_t K, const variant *d)
{
    variant one = {-1, 0, 0, 0, 0};
    if (d)
        return add_layout(t, cap, p, K, d);
    if (add_layout(t, cap, p, K, &one) != 0)
        return -1;
    for (int32_t e = 0; !t->single_layouts && e < model->n_modules; e++) {
        if (model->modules[e].kind == LOOM_MODULE_BACKBONE || p->pp > model->modules[e].n_layers)
            continue;
        for (int32_t tp = p->tp / 2; tp >= 1; tp /= 2) {
            int32_t copies = p->tp / tp;
            if (!tp_fits_module(&model->modules[e], tp) || p->microbatches % copies != 0)
                continue;
            variant v = {e, tp, p->pp, p->dp * copies, LOOM_LAYOUT_COLOCATED};
            if (add_layout(t, cap, p, K, &v) != 0)
                return -1;
        }
    }
    return 0;
}

/* The microbatch sizes K to try for a replica batch of `per_replica`. */
static int32_t batch_options(const loom_tune_search *t, int64_t per_replica, int32_t *k)
{
    int32_t n = 0;
    if (t->micro_batch_size > 0) {
        if (per_replica % t->micro_batch_size == 0)
            k[n++] = t->micro_batch_size;
        return n;
    }
    for (int64_t K = 1; K <= per_replica && K * t->seq_len <= (1 << 20) && n < 30; K *= 2)
        if (per_replica % K == 0 && per_replica / K <= LOOM_MAX_PARALLEL_DEGREE)
            k[n++] = (int32_t)K;
    return n;
}

/* Appends every K and V of one (tp, cp, pp, dp), with the per-module
 * variants of each (a disjoint one d: at vpp 1, dp_d dividing dp x M). */
static int add_batches(loom_tune_search *t, int32_t *cap, const loom_model *model,
                       loom_parallel p, int64_t layers, const variant *d)
{
    int32_t ks[32], vs[MAX_VPP];
    if (t->global_batch % p.dp != 0)
        return 0;
    int32_t nk = batch_options(t, t->global_batch / p.dp, ks);
    for (int32_t i = 0; i < nk; i++) {
        p.microbatches = (int32_t)(t->global_batch / p.dp / ks[i]);
        if (layers * p.microbatches > LOOM_MAX_LAYER_MICROBATCHES)
            continue; /* more layer costs than one iteration may price */
        if (d && ((int64_t)p.dp * p.microbatches) % d->dp != 0)
            continue;
        int32_t nv = d ? 1 : vpp_options(layers, p.pp, p.microbatches, vs);
        if (d)
            vs[0] = 1;
        for (int32_t j = 0; j < nv; j++) {
            p.vpp = vs[j];
            if ((int64_t)p.pp * p.vpp * p.microbatches > LOOM_MAX_FORWARD_STAGES)
                continue;
            if (add_variants(t, cap, model, &p, ks[i], d) != 0)
                return -1;
        }
    }
    return 0;
}

/* Why the space is empty: the GPU count or the global batch. */
static int empty_space(const loom_tune_search *t, int64_t shapes, int64_t layers, int32_t tpmax,
                       loom_error *err)
{
    if (shapes == 0)
        return loom_set_error(err, LOOM_EINVAL,
                              "--gpus %lld: no layout uses %lld GPUs: tp (a power of two up to "
                              "%d dividing every layer's heads) x cp (1, 2, 4 or 8) x pp (at most "
                              "the model's %lld layers) x dp must equal it, with dp dividing "
                              "the global batch of %lld", (long long)t->gpus, (long long)t->gpus,
                              tpmax, (long long)layers, (long long)t->global_batch);
    if (t->micro_batch_size > 0)
        return loom_set_error(err, LOOM_EINVAL,
                              "--global-batch %lld: no layout of %lld GPUs divides it into "
                              "microbatches of --micro-batch-size %d (B = K x M x dp needs "
                              "K x dp to divide B)", (long long)t->global_batch,
                              (long long)t->gpus, t->micro_batch_size);
    return loom_set_error(err, LOOM_EINVAL,
                          "--global-batch %lld: no microbatch size divides it on %lld GPUs "
                          "(B = K x M x dp needs some dp of a layout to divide B)",
                          (long long)t->global_batch, (long long)t->gpus);
}

/* Appends every top-level layout of `gpus` GPUs (with the disjoint
 * variant d, or NULL); counts in *shapes the (tp, cp, pp) whose dp divides
 * the global batch. -1 when the space is too big. */
static int enumerate_top(loom_tune_search *t, int32_t *cap, const loom_model *model,
                         int64_t gpus, int32_t tpmax, const variant *d, int64_t *shapes)
{
    int64_t layers = model_layers(model);
    int32_t gpn = t->gpus_per_node;
    for (int32_t tp = 1; tp <= tpmax; tp *= 2) {
        if ((!t->tp_across_nodes && gpn % tp != 0) || gpus % tp != 0 ||
            !tp_fits_heads(model, tp))
            continue;
        for (int32_t cp = 1; cp <= MAX_CP && gpus % ((int64_t)tp * cp) == 0; cp *= 2) {
            int64_t rest = gpus / ((int64_t)tp * cp);
            for (int64_t pp = 1; pp <= rest && pp <= layers; pp++) {
                if (rest % pp != 0 || pp > LOOM_MAX_PARALLEL_DEGREE ||
                    rest / pp > LOOM_MAX_PARALLEL_DEGREE)
                    continue;
                *shapes += t->global_batch % (rest / pp) == 0;
                loom_parallel p = {tp, (int32_t)pp, (int32_t)(rest / pp), 1, 1, cp};
                if (add_batches(t, cap, model, p, layers, d) != 0)
                    return -1;
            }
        }
    }
    return 0;
}

/* 1 when some manifest lays per-module layouts out (disjoint variants). */
static int any_layout_manifest(const loom_tune_search *t)
{
    for (int32_t m = 0; m < t->n_manifests; m++)
        if (t->layouts[m] == 1)
            return 1;
    return 0;
}

/* Appends the disjoint variants: each non-backbone module e on g = N/2,
 * N/4, ... GPUs of its own (tp_e a power of two within a node dividing its
 * heads, pp_e 1, 2, 4 or 8 up to its layers, dp_e = g / (tp_e pp_e)), the
 * top-level layout on the other N - g. */
static int enumerate_disjoint(loom_tune_search *t, int32_t *cap, const loom_model *model,
                              int32_t tpmax)
{
    int64_t ignored = 0;
    for (int32_t e = 0; e < model->n_modules; e++) {
        const loom_module *mod = &model->modules[e];
        if (mod->kind == LOOM_MODULE_BACKBONE)
            continue;
        for (int64_t g = t->gpus / 2; g >= 1; g /= 2) {
            if (t->gpus % g != 0 && g != t->gpus / 2)
                continue;
            for (int32_t tp = 1; tp <= t->gpus_per_node && tp <= g; tp *= 2) {
                if (g % tp != 0 || !tp_fits_module(mod, tp))
                    continue;
                for (int32_t pp = 1; pp <= 8 && pp <= mod->n_layers; pp *= 2) {
                    if ((g / tp) % pp != 0 || g / tp / pp > LOOM_MAX_PARALLEL_DEGREE)
                        continue;
                    variant d = {e, tp, pp, (int32_t)(g / tp / pp), LOOM_LAYOUT_DISJOINT};
                    if (enumerate_top(t, cap, model, t->gpus - g, tpmax, &d, &ignored) != 0)
                        return -1;
                }
            }
        }
    }
    return 0;
}

int loom_tune_space(loom_tune_search *t, const loom_model *model, const loom_cluster *cluster,
                    loom_error *err)
{
    int64_t layers = model_layers(model), shapes = 0;
    int32_t gpn = cluster->gpus_per_node > 0 ? cluster->gpus_per_node : 8;
    int32_t tpmax = t->tp_across_nodes ? (int32_t)(t->gpus < 65536 ? t->gpus : 65536) : gpn;
    int32_t cap = 0;
    t->gpus_per_node = gpn;
    t->listed_module = 0;
    for (int32_t m = 0; m < model->n_modules && m < 64; m++) {
        if (model->modules[m].kind == LOOM_MODULE_BACKBONE && t->listed_module == 0 &&
            model->modules[0].kind != LOOM_MODULE_BACKBONE)
            t->listed_module = m;
        t->module_names[m] = strdup(model->modules[m].name);
        if (!t->module_names[m])
            return loom_set_error(err, LOOM_ENOMEM, "out of memory");
        t->n_module_names = m + 1;
    }
    int rc = enumerate_top(t, &cap, model, t->gpus, tpmax, NULL, &shapes);
    if (rc == 0 && !t->single_layouts && any_layout_manifest(t) && model->n_modules > 1)
        rc = enumerate_disjoint(t, &cap, model, tpmax);
    if (rc != 0)
        return loom_set_error(err, LOOM_EINVAL,
                              "the layout space of %lld GPUs exceeds %d configurations: give "
                              "--micro-batch-size (or --single-layouts)", (long long)t->gpus,
                              LOOM_TUNE_MAX_CONFIGS);
    if (t->n_configs == 0)
        return empty_space(t, shapes, layers, tpmax, err);
    t->n_space = t->n_configs;
    return LOOM_OK;
}

int loom_tune_read_manifest(loom_tune_search *t, int32_t m, loom_error *err)
{
    static const char *const pins[] = {"partitioner[0].vpp_sweep=false",
                                       "partitioner[1].vpp_sweep=false",
                                       "partitioner[2].vpp_sweep=false",
                                       "partitioner[3].vpp_sweep=false"};
    static const char *const given[] = {"partitioner[0].mode=given", "partitioner[1].mode=given",
                                        "partitioner[2].mode=given", "partitioner[3].mode=given"};
    loom_planner_config *cfg = NULL;
    int rc = loom_planner_config_load(t->manifests[m], &cfg, err);
    if (rc != LOOM_OK)
        return rc;
    int k = 0;
    t->n_pins[m] = 0;
    t->layouts[m] = 0;
    for (int i = 0; i < cfg->n_steps; i++) {
        if (strcmp(cfg->steps[i].role, "partitioner") != 0)
            continue;
        const char *use = cfg->steps[i].use ? cfg->steps[i].use : "";
        if (!strcmp(use, "hetero-search") || !strcmp(use, "org.loom.hetero-search")) {
            if (k < 4 && t->layouts[m] != 2) {
                t->pins[m][t->n_pins[m]++] = given[k];
                t->layouts[m] = 1;
            }
        } else if (!strcmp(use, "disttrain-alloc") || !strcmp(use, "org.loom.disttrain-alloc") ||
                   !strcmp(use, "optimus-planner") || !strcmp(use, "org.loom.optimus-planner")) {
            t->layouts[m] = 2;
        }
        const cJSON *v = cfg->steps[i].params
                             ? cJSON_GetObjectItemCaseSensitive(cfg->steps[i].params, "vpp_sweep")
                             : NULL;
        if (cJSON_IsTrue(v) && k < 4 && t->n_pins[m] < 5)
            t->pins[m][t->n_pins[m]++] = pins[k];
        k++;
    }
    t->manifest_evaluations[m] = cfg->max_evaluations;
    t->manifest_names[m] = strdup(cfg->name ? cfg->name : t->manifests[m]);
    loom_planner_config_free(cfg);
    return t->manifest_names[m] ? LOOM_OK : loom_set_error(err, LOOM_ENOMEM, "out of memory");
}
