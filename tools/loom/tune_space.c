/* tune_space.c - the layouts `loom tune` searches: TP a power of two
 * within a node (or across nodes when allowed) dividing every layer's
 * heads, CP a power of two, PP at most the layers, DP = GPUs / (TP CP PP),
 * the microbatch size K (given, or 1, 2, 4, ... dividing B / DP), the
 * microbatches M = B / (K DP), and the virtual stages V that divide the
 * layers evenly over PP x V chunks of at least two layers (V > 1 only when
 * PP divides M, as Megatron-LM's interleaved schedule needs). */
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

/* Appends one configuration per manifest; -1 when the space is too big. */
static int add_layout(loom_tune_search *t, int32_t *cap, const loom_parallel *p, int32_t K)
{
    for (int32_t m = 0; m < t->n_manifests; m++) {
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

/* Appends every K and V of one (tp, cp, pp, dp). */
static int add_batches(loom_tune_search *t, int32_t *cap, loom_parallel p, int64_t layers)
{
    int32_t ks[32], vs[MAX_VPP];
    if (t->global_batch % p.dp != 0)
        return 0;
    int32_t nk = batch_options(t, t->global_batch / p.dp, ks);
    for (int32_t i = 0; i < nk; i++) {
        p.microbatches = (int32_t)(t->global_batch / p.dp / ks[i]);
        if (layers * p.microbatches > LOOM_MAX_LAYER_MICROBATCHES)
            continue; /* more layer costs than one iteration may price */
        int32_t nv = vpp_options(layers, p.pp, p.microbatches, vs);
        for (int32_t j = 0; j < nv; j++) {
            p.vpp = vs[j];
            if ((int64_t)p.pp * p.vpp * p.microbatches > LOOM_MAX_FORWARD_STAGES)
                continue;
            if (add_layout(t, cap, &p, ks[i]) != 0)
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

int loom_tune_space(loom_tune_search *t, const loom_model *model, const loom_cluster *cluster,
                    loom_error *err)
{
    int64_t layers = model_layers(model), shapes = 0;
    int32_t gpn = cluster->gpus_per_node > 0 ? cluster->gpus_per_node : 8;
    int32_t tpmax = t->tp_across_nodes ? (int32_t)(t->gpus < 65536 ? t->gpus : 65536) : gpn;
    int32_t cap = 0;
    t->gpus_per_node = gpn;
    for (int32_t tp = 1; tp <= tpmax; tp *= 2) {
        if ((!t->tp_across_nodes && gpn % tp != 0) || t->gpus % tp != 0 ||
            !tp_fits_heads(model, tp))
            continue;
        for (int32_t cp = 1; cp <= MAX_CP && t->gpus % ((int64_t)tp * cp) == 0; cp *= 2) {
            int64_t rest = t->gpus / ((int64_t)tp * cp);
            for (int64_t pp = 1; pp <= rest && pp <= layers; pp++) {
                if (rest % pp != 0 || pp > LOOM_MAX_PARALLEL_DEGREE ||
                    rest / pp > LOOM_MAX_PARALLEL_DEGREE)
                    continue;
                shapes += t->global_batch % (rest / pp) == 0;
                loom_parallel p = {tp, (int32_t)pp, (int32_t)(rest / pp), 1, 1, cp};
                if (add_batches(t, &cap, p, layers) != 0)
                    return loom_set_error(err, LOOM_EINVAL,
                                          "the layout space of %lld GPUs exceeds %d "
                                          "configurations: give --micro-batch-size",
                                          (long long)t->gpus, LOOM_TUNE_MAX_CONFIGS);
            }
        }
    }
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
    loom_planner_config *cfg = NULL;
    int rc = loom_planner_config_load(t->manifests[m], &cfg, err);
    if (rc != LOOM_OK)
        return rc;
    int k = 0;
    t->n_pins[m] = 0;
    for (int i = 0; i < cfg->n_steps; i++) {
        if (strcmp(cfg->steps[i].role, "partitioner") != 0)
            continue;
        const cJSON *v = cfg->steps[i].params
                             ? cJSON_GetObjectItemCaseSensitive(cfg->steps[i].params, "vpp_sweep")
                             : NULL;
        if (cJSON_IsTrue(v) && k < 4)
            t->pins[m][t->n_pins[m]++] = pins[k];
        k++;
    }
    t->manifest_evaluations[m] = cfg->max_evaluations;
    t->manifest_names[m] = strdup(cfg->name ? cfg->name : t->manifests[m]);
    loom_planner_config_free(cfg);
    return t->manifest_names[m] ? LOOM_OK : loom_set_error(err, LOOM_ENOMEM, "out of memory");
}
