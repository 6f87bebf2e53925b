/*
 * uniform.c - the Megatron-LM layer split as a partitioner.
 *
 * One mixed flow of S = pp * vpp positions; position s runs on rank s % pp
 * (chunk s / pp), or on the V / zig-zag placement (params.placement: odd
 * chunks run the ranks backwards). All modules' layers, concatenated in module order, are cut
 * into S contiguous runs of equal length, the first L % S runs taking one
 * extra layer. A run may cross a module boundary and then holds two (or
 * more) spans. Samples go to parallel.microbatches microbatches: the
 * workload's packing when given, an even contiguous split otherwise.
 * With the vpp_sweep param, one candidate per virtual-stage count a
 * Megatron-LM user can choose (loom_lk_vpp_options) instead of
 * parallel.vpp alone. With params.encoders "first", every encoder layer
 * runs at position 0 (the first pipeline stage) and only the layers after
 * the encoders are cut into equal runs, as Megatron-LM's multimodal
 * models build the vision encoder on the first stage alone
 * (pretrain_vlm.py: add_encoder = is_pipeline_first_stage()). With
 * params.layers_per_position, the runs take the given lengths instead: a
 * split chosen elsewhere (Megatron-LM's pipeline layout, a torchtitan
 * split, another partitioner's) priced as it is.
 */
#include <stdio.h>
#include <string.h>
#include <loom/loom.h>
#include <loom/kits/layout.h>

typedef struct uniform_self {
    const loom_host_api *host;
    loom_ctx *ctx;
    int vpp_sweep; /* 1: a candidate per loom_lk_vpp_options */
    const char *placement; /* params.placement */
    const char *encoders;  /* params.encoders: "split" or "first" */
    const char *layers_per_position; /* params.layers_per_position, "" none */
} uniform_self;

/* The params, declared once (manifest.json says the same); read into
 * uniform_self. */
static const loom_param_def uniform_param_table[] = {
    LOOM_LK_VPP_SWEEP_PARAM(uniform_self, vpp_sweep),
    LOOM_ENUM_PARAM(uniform_self, placement, "loop", "loop|v|zigzag",
                   "position-to-rank map: loop puts position s on rank s % pp; zigzag runs "
                   "odd chunks backwards (rank pp-1-s % pp), so the flow turns on the last "
                   "and the first rank; v is zigzag with vpp = 2 (ZB-V, DualPipeV)"),
    LOOM_ENUM_PARAM(uniform_self, encoders, "split", "split|first",
                   "split cuts all modules' layers, concatenated, into equal runs; first puts "
                   "every encoder layer at position 0 (the first pipeline stage, as Megatron-LM "
                   "builds the vision encoder there) and cuts the layers after the encoders "
                   "into equal runs"),
    LOOM_STRING_PARAM(uniform_self, layers_per_position, "",
                      "the split to price instead of the even cut: a comma-separated list of "
                      "pp * vpp positive layer counts, one per position in position order "
                      "(all modules' layers concatenated), summing to the model's layers; "
                      "empty: the even cut"),
    LOOM_PARAM_END};

/* Creates an instance holding the host table and the step context. */
static int uniform_create(const loom_host_api *host, loom_ctx *ctx,
                          void *plugin_state, void **self, loom_error *err)
{
    (void)plugin_state;
    uniform_self *u = host->alloc(sizeof *u);
    if (!u)
        return host->error(err, LOOM_ENOMEM, "uniform: out of memory");
    u->host = host;
    u->ctx = ctx;
    /* a host without the params (a bare mock) gives the table's defaults */
    int rc = loom_params_read(host, ctx, "uniform", uniform_param_table, u, err);
    if (rc != LOOM_OK) {
        host->free(u);
        return rc;
    }
    *self = u;
    return LOOM_OK;
}

/* Releases an instance from uniform_create. */
static void uniform_destroy(void *self)
{
    uniform_self *u = self;
    if (u)
        u->host->free(u);
}

/* The layers of the model's encoder modules into *out, when every
 * encoder comes before the first module of another kind (module order is
 * layer order); LOOM_EINVAL naming the first encoder after one. */
static int uniform_encoder_layers(const loom_host_api *host, const loom_model *model,
                                  int64_t *out, loom_error *err)
{
    int64_t n = 0;
    int32_t other = -1;
    for (int32_t m = 0; m < model->n_modules; m++) {
        const loom_module *mod = &model->modules[m];
        if (mod->kind != LOOM_MODULE_ENCODER) {
            if (other < 0)
                other = m;
            continue;
        }
        if (other >= 0)
            return host->error(err, LOOM_EINVAL,
                               "uniform: params.encoders \"first\": modules[%d] (%s) is an "
                               "encoder after modules[%d] (%s); expected every encoder "
                               "before the other modules",
                               m, mod->name ? mod->name : "?", other,
                               model->modules[other].name ? model->modules[other].name : "?");
        n += mod->n_layers;
    }
    *out = n;
    return LOOM_OK;
}

/* Reads params.layers_per_position into sizes[0..n_pos-1]; LOOM_EINVAL
 * naming the entry that is not a positive integer, a count other than
 * n_pos, or a sum other than the model's n_layers. */
static int uniform_given_sizes(const loom_host_api *host, const char *text, int64_t n_pos,
                               int64_t n_layers, int32_t pp, int32_t vpp, int64_t *sizes,
                               loom_error *err)
{
    const char *bad = NULL;
    size_t bad_len = 0;
    int64_t n = loom_param_int_list(text, 1, INT32_MAX, sizes, n_pos, &bad, &bad_len);
    if (n < 0)
        return host->error(err, LOOM_EINVAL,
                           "uniform: params.layers_per_position: entry %lld is \"%.*s\", "
                           "expected a positive integer", (long long)-n,
                           (int)(bad_len > 32 ? 32 : bad_len), bad);
    if (n != n_pos)
        return host->error(err, LOOM_EINVAL,
                           "uniform: params.layers_per_position has %lld entries, expected "
                           "one per position: %lld (pp %d x vpp %d)",
                           (long long)n, (long long)n_pos, pp, vpp);
    int64_t sum = 0;
    for (int64_t s = 0; s < n_pos; s++)
        sum += sizes[s];
    if (sum != n_layers)
        return host->error(err, LOOM_EINVAL,
                           "uniform: params.layers_per_position sums to %lld layers, expected "
                           "the model's %lld", (long long)sum, (long long)n_layers);
    return LOOM_OK;
}

/* Appends one candidate: the uniform split into pp * vpp positions. */
static int uniform_one(uniform_self *u, const loom_problem *problem,
                       const loom_iteration *iteration, int32_t vpp,
                       loom_candidates *set, loom_error *err)
{
    const loom_host_api *host = u->host;
    const loom_model *model = problem->model;
    int32_t pp = problem->parallel.pp;
    int32_t mbs = problem->parallel.microbatches;
    int64_t n_layers = 0;
    for (int32_t m = 0; m < model->n_modules; m++)
        n_layers += model->modules[m].n_layers;
    int64_t n_pos = (int64_t)pp * vpp;
    if (n_layers < n_pos)
        return host->error(err, LOOM_EINVAL,
                           "uniform: the model has %lld layers, fewer than "
                           "the %lld positions (pp %d x vpp %d); every "
                           "position needs at least one layer",
                           (long long)n_layers, (long long)n_pos, pp, vpp);
    int given = u->layers_per_position[0] != '\0';
    if (given && strcmp(u->encoders, "first") == 0)
        return host->error(err, LOOM_EINVAL,
                           "uniform: params.layers_per_position and params.encoders \"first\" "
                           "both place layers; expected one of them");
    int64_t lead = 0; /* layers run at position 0 ahead of the even cut */
    if (strcmp(u->encoders, "first") == 0) {
        int rc = uniform_encoder_layers(host, model, &lead, err);
        if (rc != LOOM_OK)
            return rc;
        if (n_layers - lead < n_pos)
            return host->error(err, LOOM_EINVAL,
                               "uniform: params.encoders \"first\": the model has %lld "
                               "layers after its encoders, fewer than the %lld positions "
                               "(pp %d x vpp %d); every position needs at least one",
                               (long long)(n_layers - lead), (long long)n_pos, pp, vpp);
    }
    int32_t *sizes = host->alloc((size_t)n_pos * sizeof *sizes);
    if (!sizes)
        return host->error(err, LOOM_ENOMEM, "uniform: out of memory");
    int rc = LOOM_OK;
    if (given) {
        int64_t *given_sizes = host->alloc((size_t)n_pos * sizeof *given_sizes);
        rc = given_sizes ? uniform_given_sizes(host, u->layers_per_position, n_pos, n_layers,
                                               pp, vpp, given_sizes, err)
                         : host->error(err, LOOM_ENOMEM, "uniform: out of memory");
        for (int64_t s = 0; rc == LOOM_OK && s < n_pos; s++)
            sizes[s] = (int32_t)given_sizes[s];
        host->free(given_sizes);
    } else {
        int64_t cut = n_layers - lead;
        for (int64_t s = 0; s < n_pos; s++)
            sizes[s] = (int32_t)(cut / n_pos + (s < cut % n_pos));
        sizes[0] += (int32_t)lead;
    }
    if (rc != LOOM_OK) {
        host->free(sizes);
        return rc;
    }
    loom_partition *part = NULL;
    rc = set->add(set, &part, err);
    if (rc == LOOM_OK)
        rc = loom_lk_layout(host, "uniform", model, pp, (int32_t)n_pos, sizes, part, err);
    host->free(sizes);
    if (rc == LOOM_OK)
        rc = loom_lk_place(host, "uniform", u->placement, pp, part, err);
    if (rc == LOOM_OK)
        rc = loom_lk_assign_samples(host, "uniform", model, iteration, mbs, part, err);
    if (rc != LOOM_OK) {
        if (part)
            set->remove(set, set->n - 1);
        return rc;
    }
    snprintf(part->label, sizeof part->label, "uniform pp=%d vpp=%d%s%s%s%s", pp, vpp,
             strcmp(u->placement, "loop") ? " " : "",
             strcmp(u->placement, "loop") ? u->placement : "",
             lead > 0 ? " encoders-first" : "", given ? " layers-given" : "");
    return LOOM_OK;
}

/* Appends the uniform candidate at parallel.vpp, or with vpp_sweep one
 * per loom_lk_vpp_options. Declines stage-times problems (they carry
 * their own stages). */
static int uniform_partition(void *self, const loom_problem *problem,
                             const loom_iteration *iteration,
                             loom_candidates *set, loom_error *err)
{
    uniform_self *u = self;
    const loom_host_api *host = u->host;
    if (problem->kind != LOOM_PROBLEM_MODEL || !problem->model)
        return host->error(err, LOOM_DECLINED,
                           "uniform: only model problems are partitioned");
    int32_t pp = problem->parallel.pp;
    int32_t mbs = problem->parallel.microbatches;
    if (pp < 1 || mbs < 1)
        return host->error(err, LOOM_EINVAL,
                           "uniform: parallel.pp and parallel.microbatches: "
                           "expected >= 1, found %d and %d", pp, mbs);
    if (u->vpp_sweep && u->layers_per_position[0] != '\0')
        return host->error(err, LOOM_EINVAL,
                           "uniform: params.layers_per_position fixes one split of pp x vpp "
                           "positions; expected params.vpp_sweep false with it");
    int32_t vpps[32];
    int32_t n = loom_lk_vpp_candidates(problem, u->vpp_sweep, vpps, 32);
    for (int32_t i = 0; i < n; i++) {
        int rc = uniform_one(u, problem, iteration, vpps[i], set, err);
        if (rc != LOOM_OK)
            return rc;
    }
    return LOOM_OK;
}

static const loom_partitioner_vtable uniform_vtable = {
    { sizeof(loom_partitioner_vtable), LOOM_PARTITIONER_VERSION },
    uniform_create,
    uniform_destroy,
    uniform_partition,
};

/* Returns the partitioner vtable for role "partitioner", else NULL. */
static const loom_role_header *uniform_role(const char *role)
{
    if (role && strcmp(role, LOOM_ROLE_PARTITIONER) == 0)
        return &uniform_vtable.header;
    return NULL;
}

static const loom_plugin_info uniform_info = {
    LOOM_PLUGIN_INFO_HEADER,
    "org.loom.uniform",
    "1.0.0",
    NULL,
    NULL,
    uniform_role,
    uniform_param_table,
};

LOOM_PLUGIN_DEFINE(uniform, uniform_info);
