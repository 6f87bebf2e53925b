/* test_balanced_dp.c - the min-max layer split of Optimus appendix B: the
 * digest's and PipeWeaver's oracles, optimality against brute force, the
 * tie rule, and the partitioner around it (cost service, layout, errors). */
#include <stdlib.h>
#include <string.h>
#include <loom/mock_host.h>
#include "balanced_dp.h"
#include <loom/mock_sim.h>
#include <cjson/cJSON.h>
#include "testutil.h"

/* Static twins of the plugins under test (linked into every suite). */
const loom_plugin_info *loom_static_balanced_dp(void);

/* Runs the DP on t[0..L-1] into S stages; returns the bottleneck and
 * checks the sizes (each >= 1, summing to L, slowest run = bottleneck). */
static double split(const double *t, int L, int S, int32_t *sizes)
{
    void *scratch = malloc(loom_balanced_dp_scratch_bytes(L, S));
    double f = -1.0;
    ck_assert_int_eq(loom_balanced_dp_split(t, L, S, scratch, sizes, &f),
                     LOOM_OK);
    free(scratch);
    int k = 0;
    double worst = 0.0;
    for (int s = 0; s < S; s++) {
        ck_assert_int_ge(sizes[s], 1);
        double sum = 0.0;
        for (int i = 0; i < sizes[s]; i++)
            sum += t[k++];
        if (sum > worst)
            worst = sum;
    }
    ck_assert_int_eq(k, L);
    ck_assert_double_eq_tol(worst, f, 1e-9);
    return f;
}

/* Fills t with n_a layers of a ms then n_b layers of b ms. */
static int two_kinds(double *t, int n_a, double a, int n_b, double b)
{
    for (int i = 0; i < n_a; i++)
        t[i] = a;
    for (int i = 0; i < n_b; i++)
        t[n_a + i] = b;
    return n_a + n_b;
}

START_TEST(small_oracles)
{
    int32_t sizes[8];
    const double six[6] = {1, 2, 3, 4, 5, 6};
    ck_assert_double_eq(split(six, 6, 3, sizes), 9.0);
    ck_assert_int_eq(sizes[0], 3); /* [1,2,3] [4,5] [6] */
    ck_assert_int_eq(sizes[1], 2);
    ck_assert_int_eq(sizes[2], 1);
    const double five[5] = {1, 2, 3, 4, 5};
    ck_assert_double_eq(split(five, 5, 2, sizes), 9.0);
    ck_assert_int_eq(sizes[0], 3);
    ck_assert_int_eq(sizes[1], 2);
    ck_assert_double_eq(split(five, 5, 3, sizes), 6.0);
    ck_assert_int_eq(sizes[0], 3);
    ck_assert_int_eq(sizes[1], 1);
    ck_assert_int_eq(sizes[2], 1);
    ck_assert_double_eq(split(five, 5, 5, sizes), 5.0);
    ck_assert_double_eq(split(five, 5, 1, sizes), 15.0);
    ck_assert_int_eq(sizes[0], 5);
}
END_TEST

START_TEST(paper_oracles)
{
    static double t[256];
    static int32_t sizes[128];
    /* PipeWeaver 2.2: 64 layers of 6.75 then 64 of 10.5 into 16 stages */
    int L = two_kinds(t, 64, 6.75, 64, 10.5);
    ck_assert_double_eq(split(t, L, 16, sizes), 73.5);
    /* Optimus model D: 48 ViT layers at 1/4 + 96 GPT layers into 96 */
    L = two_kinds(t, 48, 0.25, 96, 1.0);
    ck_assert_double_eq(split(t, L, 96, sizes), 2.0);
    /* Optimus model A: 48 ViT layers at 1/4 + 80 LLaMA layers into 24, 16 */
    L = two_kinds(t, 48, 0.25, 80, 1.0);
    ck_assert_double_eq(split(t, L, 24, sizes), 4.0);
    ck_assert_double_eq(split(t, L, 16, sizes), 6.0);
}
END_TEST

/* Smallest possible bottleneck of t[from..L-1] in S runs, by search. */
static double brute(const double *t, int from, int L, int S)
{
    if (S == 1) {
        double sum = 0.0;
        for (int i = from; i < L; i++)
            sum += t[i];
        return sum;
    }
    double best = 1e300, head = 0.0;
    for (int end = from; end <= L - S; end++) {
        head += t[end];
        double rest = brute(t, end + 1, L, S - 1);
        double v = head > rest ? head : rest;
        if (v < best)
            best = v;
    }
    return best;
}

START_TEST(optimal_against_brute_force)
{
    uint64_t state = 42;
    double t[12];
    int32_t sizes[12];
    for (int trial = 0; trial < 300; trial++) {
        int L = 1 + (int)(loom_mock_splitmix64(&state) % 12);
        int S = 1 + (int)(loom_mock_splitmix64(&state) % (uint64_t)L);
        for (int i = 0; i < L; i++)
            t[i] = (double)(loom_mock_splitmix64(&state) % 10);
        ck_assert_double_eq(split(t, L, S, sizes), brute(t, 0, L, S));
    }
}
END_TEST

START_TEST(ties_take_the_smallest_cut)
{
    /* [2,2,2,2] into 3: bottleneck 4 wherever the pair goes; taking the
     * smallest cut index at every step leaves the pair last: 1,1,2 */
    const double t[4] = {2, 2, 2, 2};
    int32_t sizes[3];
    ck_assert_double_eq(split(t, 4, 3, sizes), 4.0);
    ck_assert_int_eq(sizes[0], 1);
    ck_assert_int_eq(sizes[1], 1);
    ck_assert_int_eq(sizes[2], 2);
}
END_TEST

START_TEST(rejects_more_stages_than_layers)
{
    const double t[3] = {1, 1, 1};
    int32_t sizes[4] = {-7, -7, -7, -7};
    double f = -1.0;
    char scratch[256];
    ck_assert_int_eq(loom_balanced_dp_split(t, 3, 4, scratch, sizes, &f),
                     LOOM_EINVAL);
    ck_assert_int_eq(loom_balanced_dp_split(t, 3, 0, scratch, sizes, &f),
                     LOOM_EINVAL);
    ck_assert_int_eq(sizes[0], -7);
    ck_assert_double_eq(f, -1.0);
    ck_assert_uint_eq(loom_balanced_dp_scratch_bytes(3, 0), 0);
}
END_TEST

/* ---- the partitioner, with a table-driven cost service ---------------- */

static loom_layer layers[8];
static const int32_t llm_inputs[1] = {0};
static double layer_table_ms[2][3] = {{1, 2, 3}, {4, 5, 6}};
static int cost_calls, cost_seen_mbs, cost_fail;
static const loom_iteration *cost_seen_it;

/* mean_layer_ms from layer_table_ms, recording what it was asked. */
static int table_mean_layer_ms(loom_ctx *ctx, int32_t module, int32_t layer,
                               const loom_iteration *it, int32_t microbatches,
                               double *ms, loom_error *err)
{
    ck_assert_ptr_nonnull(ctx);
    cost_calls++;
    cost_seen_it = it;
    cost_seen_mbs = microbatches;
    if (cost_fail) {
        snprintf(err->message, sizeof err->message, "no cost for layer %d",
                 layer);
        err->code = LOOM_EPLUGIN;
        return LOOM_EPLUGIN;
    }
    *ms = layer_table_ms[module][layer];
    return LOOM_OK;
}

/* Parameter bytes per layer for balance = "params": the reverse of the
 * times, so a split by parameters differs from a split by time. */
static const int64_t layer_table_bytes[2][3] = {{60, 50, 40}, {30, 20, 10}};
static int layer_calls, layer_seen_tp;

/* layer() from layer_table_bytes: only param_bytes matters to the split. */
static int table_layer(loom_ctx *ctx, int32_t module, int32_t layer,
                       const struct loom_shape *shape, int32_t policy,
                       struct loom_layer_cost *out, loom_error *err)
{
    (void)err;
    ck_assert_ptr_nonnull(ctx);
    ck_assert_int_eq(policy, LOOM_POLICY_NONE);
    layer_calls++;
    layer_seen_tp = shape->tp;
    out->param_bytes = layer_table_bytes[module][layer];
    return LOOM_OK;
}

static const loom_cost_service table_cost = {
    sizeof(loom_cost_service), 1, table_layer, NULL, table_mean_layer_ms, NULL, NULL,
};

/* The same service without mean_layer_ms or without layer. */
static const loom_cost_service no_mean_cost = {
    sizeof(loom_cost_service), 1, table_layer, NULL, NULL, NULL, NULL,
};
static const loom_cost_service no_layer_cost = {
    sizeof(loom_cost_service), 1, NULL, NULL, table_mean_layer_ms, NULL, NULL,
};

typedef struct fixture {
    loom_module modules[2];
    loom_model model;
    loom_problem problem;
} fixture;

/* Two modules of 3 layers each, pp x 1 positions, 4 microbatches. */
static void setup(fixture *f, int pp)
{
    memset(f, 0, sizeof *f);
    f->modules[0].name = "vit";
    f->modules[0].n_layers = 3;
    f->modules[0].layers = layers;
    f->modules[1].name = "llm";
    f->modules[1].kind = LOOM_MODULE_BACKBONE;
    f->modules[1].n_layers = 3;
    f->modules[1].layers = layers;
    f->modules[1].n_inputs = 1;
    f->modules[1].inputs = llm_inputs;
    f->model.name = "toy";
    f->model.n_modules = 2;
    f->model.modules = f->modules;
    f->problem.struct_size = sizeof f->problem;
    f->problem.kind = LOOM_PROBLEM_MODEL;
    f->problem.model = &f->model;
    f->problem.parallel.tp = 1;
    f->problem.parallel.pp = pp;
    f->problem.parallel.dp = 1;
    f->problem.parallel.vpp = 1;
    f->problem.parallel.microbatches = 4;
}

/* Runs the partitioner on host h. */
static int partition(loom_mock_host *h, const loom_problem *pb,
                     const loom_iteration *it, loom_candidates *set,
                     loom_error *err)
{
    const loom_partitioner_vtable *vt =
        (const loom_partitioner_vtable *)loom_static_balanced_dp()->role(
            LOOM_ROLE_PARTITIONER);
    ck_assert_ptr_nonnull(vt);
    void *self = NULL;
    ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h),
                                NULL, &self, err), LOOM_OK);
    int rc = vt->partition(self, pb, it, set, err);
    vt->destroy(self);
    return rc;
}

START_TEST(partitioner_cuts_by_cost)
{
    /* layer times [1,2,3 | 4,5,6] into 3 positions: [1,2,3] [4,5] [6] */
    fixture f;
    setup(&f, 3);
    loom_sample samples[6];
    memset(samples, 0, sizeof samples);
    for (int i = 0; i < 6; i++)
        samples[i].microbatch = -1;
    loom_iteration it = {0, 6, samples};
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    loom_mock_host_add_service(h, LOOM_SERVICE_COST, 1, &table_cost);
    loom_candidates *set = loom_mock_candidates_new(&f.problem, &it);
    loom_error err = {0, ""};
    ck_assert_msg(partition(h, &f.problem, &it, set, &err) == LOOM_OK, "%s",
                  err.message);
    ck_assert_int_eq(cost_calls, 6);
    ck_assert_ptr_eq(cost_seen_it, &it);
    ck_assert_int_eq(cost_seen_mbs, 4);
    ck_assert_int_eq(set->n, 1);
    const loom_partition *p = set->items[0];
    ck_assert_int_eq(p->n_positions, 3);
    ck_assert_int_eq(p->n_spans, 3);
    ck_assert_int_eq(p->spans[0].module, 0);
    ck_assert_int_eq(p->spans[0].n_layers, 3);
    ck_assert_int_eq(p->spans[1].module, 1);
    ck_assert_int_eq(p->spans[1].first_layer, 0);
    ck_assert_int_eq(p->spans[1].n_layers, 2);
    ck_assert_int_eq(p->spans[2].first_layer, 2);
    ck_assert_int_eq(p->spans[2].n_layers, 1);
    for (int s = 0; s < 3; s++)
        ck_assert_int_eq(p->positions[s].rank, s);
    ck_assert_int_eq(p->flows[0].module, -1);
    ck_assert_int_eq(p->n_microbatches, 4);
    ck_assert_int_eq(p->sample_mb[0 * 6 + 5], 3); /* 5 * 4 / 6 */
    ck_assert_int_eq(p->sample_mb[1 * 6 + 2], 1); /* 2 * 4 / 6 */
    ck_assert_ptr_nonnull(strstr(p->label, "max=9ms"));
    loom_mock_candidates_free(set);
    loom_mock_host_free(h);
}
END_TEST

/* A mock host with the plugin's manifest, cost service `svc` and, when
 * key is not NULL, one param set. */
static loom_mock_host *host_with(const loom_cost_service *svc, const char *key,
                                 const char *value)
{
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    loom_mock_host_add_service(h, LOOM_SERVICE_COST, 1, svc);
    if (key)
        loom_mock_host_set_param(h, key, value);
    return h;
}

START_TEST(partitioner_cuts_by_params)
{
    /* balance = params: parameter bytes [60,50,40 | 30,20,10] (210 in all)
     * into 3 positions: [60] [50,40] [30,20,10], the largest 90 bytes (45
     * bf16 parameters), whatever the times; the split is asked at TP 1,
     * and mean_layer_ms is not needed */
    fixture f;
    setup(&f, 3);
    f.problem.parallel.tp = 4;
    loom_mock_host *h = host_with(&no_mean_cost, "balance", "params");
    loom_candidates *set = loom_mock_candidates_new(&f.problem, NULL);
    loom_error err = {0, ""};
    cost_calls = layer_calls = 0;
    ck_assert_msg(partition(h, &f.problem, NULL, set, &err) == LOOM_OK, "%s", err.message);
    ck_assert_int_eq(layer_calls, 6);
    ck_assert_int_eq(cost_calls, 0);
    ck_assert_int_eq(layer_seen_tp, 1);
    const loom_partition *p = set->items[0];
    ck_assert_int_eq(p->n_spans, 3);
    ck_assert_int_eq(p->spans[0].module, 0);
    ck_assert_int_eq(p->spans[0].n_layers, 1);
    ck_assert_int_eq(p->spans[1].module, 0);
    ck_assert_int_eq(p->spans[1].first_layer, 1);
    ck_assert_int_eq(p->spans[1].n_layers, 2);
    ck_assert_int_eq(p->spans[2].module, 1);
    ck_assert_int_eq(p->spans[2].n_layers, 3);
    ck_assert_msg(strstr(p->label, "max=45 params") != NULL, "label %s", p->label);
    loom_mock_candidates_free(set);
    loom_mock_host_free(h);

    /* without layer() the params split is refused, naming what is missing */
    h = host_with(&no_layer_cost, "balance", "params");
    set = loom_mock_candidates_new(&f.problem, NULL);
    ck_assert_int_eq(partition(h, &f.problem, NULL, set, &err), LOOM_ENOTFOUND);
    ck_assert_ptr_nonnull(strstr(err.message, "\"loom.cost\" service with layer"));
    ck_assert_int_eq(set->n, 0);
    loom_mock_candidates_free(set);
    loom_mock_host_free(h);
}
END_TEST

START_TEST(partitioner_v_placement)
{
    /* pp 2 x vpp 2 on the V: layer times [1,2,3 | 4,5,6] cut into 4
     * positions on ranks 0 1 1 0 */
    fixture f;
    setup(&f, 2);
    f.problem.parallel.vpp = 2;
    loom_mock_host *h = host_with(&table_cost, "placement", "v");
    loom_candidates *set = loom_mock_candidates_new(&f.problem, NULL);
    loom_error err = {0, ""};
    ck_assert_msg(partition(h, &f.problem, NULL, set, &err) == LOOM_OK, "%s", err.message);
    static const int32_t v[4] = {0, 1, 1, 0};
    for (int s = 0; s < 4; s++)
        ck_assert_int_eq(set->items[0]->positions[s].rank, v[s]);
    ck_assert_ptr_nonnull(strstr(set->items[0]->label, "vpp=2 v max="));
    loom_mock_candidates_free(set);
    loom_mock_host_free(h);
}
END_TEST

START_TEST(partitioner_errors)
{
    fixture f;
    setup(&f, 3);
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    loom_candidates *set = loom_mock_candidates_new(&f.problem, NULL);
    loom_error err = {0, ""};
    /* no cost service */
    ck_assert_int_eq(partition(h, &f.problem, NULL, set, &err), LOOM_ENOTFOUND);
    ck_assert_ptr_nonnull(strstr(err.message, "\"loom.cost\""));
    /* a cost service too old to have mean_layer_ms */
    loom_cost_service old = table_cost;
    old.struct_size = (uint32_t)offsetof(loom_cost_service, mean_layer_ms);
    loom_mock_host_add_service(h, LOOM_SERVICE_COST, 1, &old);
    ck_assert_int_eq(partition(h, &f.problem, NULL, set, &err), LOOM_ENOTFOUND);
    loom_mock_host_add_service(h, LOOM_SERVICE_COST, 1, &table_cost);
    /* the cost model's failure comes back */
    cost_fail = 1;
    ck_assert_int_eq(partition(h, &f.problem, NULL, set, &err), LOOM_EPLUGIN);
    ck_assert_str_eq(err.message, "no cost for layer 0");
    cost_fail = 0;
    /* a negative time names the module and layer */
    layer_table_ms[1][1] = -1.0;
    ck_assert_int_eq(partition(h, &f.problem, NULL, set, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "module llm layer 1"));
    layer_table_ms[1][1] = 5.0;
    /* more positions than layers */
    f.problem.parallel.pp = 4;
    f.problem.parallel.vpp = 2;
    ck_assert_int_eq(partition(h, &f.problem, NULL, set, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "6 layers, fewer than the 8 positions"));
    /* stage-times problems are not for it */
    f.problem.kind = LOOM_PROBLEM_STAGE_TIMES;
    ck_assert_int_eq(partition(h, &f.problem, NULL, set, &err), LOOM_DECLINED);
    ck_assert_int_eq(set->n, 0);
    loom_mock_candidates_free(set);
    loom_mock_host_free(h);
}
END_TEST

/* ---- one split for the whole run (params.reference) ------------------- */

/* Two iterations: the ViT sees 100 tokens in one microbatch of iteration 0
 * and 500 in iteration 1, the LM 100 in both; a layer takes 1 ms per 100
 * tokens. */
static int64_t vit_tokens(const loom_iteration *it)
{
    return it->index == 0 ? 100 : 500;
}

static int shape_calls, shape_layer_calls;
static loom_shape shape_seen[2]; /* last shape layer() saw per module */
static int upstream_seen[2][3];

/* module_shape: the mean microbatch of `it` as above. */
static int it_module_shape(loom_ctx *ctx, int32_t module, const loom_iteration *it,
                           int32_t microbatches, int32_t microbatch, int32_t subs,
                           loom_shape *out, loom_error *err)
{
    (void)ctx, (void)err;
    ck_assert_int_eq(microbatches, 4);
    ck_assert_int_eq(microbatch, -1);
    ck_assert_int_eq(subs, 1);
    shape_calls++;
    out->tokens = module == 0 ? vit_tokens(it) : 100;
    out->seq_sq_sum = (double)out->tokens * (double)out->tokens;
    out->sequences = it->index + 1;
    out->tp = 2;
    return LOOM_OK;
}

/* layer: 1 ms of forward per 100 tokens, nothing else. */
static int it_layer(loom_ctx *ctx, int32_t module, int32_t layer, const loom_shape *shape,
                    int32_t policy, loom_layer_cost *out, loom_error *err)
{
    (void)ctx, (void)err;
    ck_assert_int_eq(policy, LOOM_POLICY_NONE);
    shape_layer_calls++;
    shape_seen[module] = *shape;
    upstream_seen[module][layer] = shape->trainable_upstream;
    out->forward_ms = (double)shape->tokens / 100.0;
    return LOOM_OK;
}

/* mean_layer_ms of one iteration by the same rule. */
static int it_mean_layer_ms(loom_ctx *ctx, int32_t module, int32_t layer,
                            const loom_iteration *it, int32_t microbatches, double *ms,
                            loom_error *err)
{
    (void)ctx, (void)layer, (void)microbatches, (void)err;
    cost_calls++;
    *ms = (module == 0 ? (double)vit_tokens(it) : 100.0) / 100.0;
    return LOOM_OK;
}

/* run_module_shape: the mean of the two iterations' mean microbatches as
 * the host averages them (test_struct_sizes checks the host's rule):
 * 300 ViT tokens, attention work the mean of 100^2 and 500^2, sequences
 * 1 and 2 rounded up to 2. */
static int run_shape_calls;
static int it_run_module_shape(loom_ctx *ctx, int32_t module, const loom_iteration *it,
                               int32_t microbatches, loom_shape *out, loom_error *err)
{
    (void)ctx, (void)it, (void)err;
    ck_assert_int_eq(microbatches, 4);
    run_shape_calls++;
    out->tokens = module == 0 ? 300 : 100;
    out->seq_sq_sum = module == 0 ? (100.0 * 100.0 + 500.0 * 500.0) / 2.0 : 100.0 * 100.0;
    out->sequences = 2;
    out->tp = 2;
    return LOOM_OK;
}

static const loom_cost_service it_cost = {
    sizeof(loom_cost_service), 1, it_layer, it_module_shape, it_mean_layer_ms,
    it_run_module_shape, NULL,
};

/* The split of iteration `k` of `its` (2 positions): sizes in sizes[2],
 * the label in label. */
static void split_of(const char *reference, fixture *f, const loom_iteration *its, int k,
                     int32_t sizes[2], char *label, size_t label_size)
{
    loom_mock_host *h = host_with(&it_cost, reference ? "reference" : NULL, reference);
    loom_candidates *set = loom_mock_candidates_new(&f->problem, &its[k]);
    loom_error err = {0, ""};
    ck_assert_msg(partition(h, &f->problem, &its[k], set, &err) == LOOM_OK, "%s", err.message);
    ck_assert_int_eq(set->n, 1);
    const loom_partition *p = set->items[0];
    ck_assert_int_eq(p->n_positions, 2);
    for (int32_t s = 0; s < 2; s++) {
        sizes[s] = 0;
        for (int32_t i = 0; i < p->positions[s].n_spans; i++)
            sizes[s] += p->spans[p->positions[s].span_off + i].n_layers;
    }
    snprintf(label, label_size, "%s", p->label);
    loom_mock_candidates_free(set);
    loom_mock_host_free(h);
}

START_TEST(partitioner_splits_once_for_the_run)
{
    fixture f;
    setup(&f, 2);
    loom_sample samples[1];
    memset(samples, 0, sizeof samples);
    loom_iteration its[2] = {{0, 1, samples}, {1, 1, samples}};
    int32_t sizes[2];
    char label[128];

    /* each iteration on its own: [1,1,1 | 1,1,1] cuts 3 + 3 (max 3 ms),
     * [5,5,5 | 1,1,1] cuts 2 + 4 (max 10 ms) */
    split_of("iteration", &f, its, 0, sizes, label, sizeof label);
    ck_assert_int_eq(sizes[0], 3);
    ck_assert_msg(strstr(label, "max=3ms") != NULL, "label %s", label);
    split_of("iteration", &f, its, 1, sizes, label, sizeof label);
    ck_assert_int_eq(sizes[0], 2);
    ck_assert_msg(strstr(label, "max=10ms") != NULL, "label %s", label);

    /* the problem lists both iterations: the default balances their mean,
     * 300 ViT tokens, [3,3,3 | 1,1,1] cut 2 + 4 (6 ms each), the same split
     * for iteration 0 as for iteration 1 */
    f.problem.iterations = its;
    f.problem.n_iterations = 2;
    for (int k = 0; k < 2; k++) {
        run_shape_calls = shape_calls = shape_layer_calls = cost_calls = 0;
        split_of(NULL, &f, its, k, sizes, label, sizeof label);
        ck_assert_int_eq(sizes[0], 2);
        ck_assert_int_eq(sizes[1], 4);
        ck_assert_msg(strstr(label, "max=6ms") != NULL, "label %s", label);
        ck_assert_int_eq(run_shape_calls, 2);   /* once per module */
        ck_assert_int_eq(shape_layer_calls, 6); /* once per layer */
        ck_assert_int_eq(shape_calls + cost_calls, 0);
    }
    /* each layer is costed on the host's run shape as given, with input
     * gradients as the host rules (the ViT's first layer has nothing
     * upstream, the LM has) */
    ck_assert_int_eq(shape_seen[0].tokens, 300);
    ck_assert_double_eq(shape_seen[0].seq_sq_sum, (100.0 * 100.0 + 500.0 * 500.0) / 2.0);
    ck_assert_int_eq(shape_seen[0].sequences, 2);
    ck_assert_int_eq(shape_seen[0].tp, 2);
    ck_assert_int_eq(upstream_seen[0][0], 0);
    ck_assert_int_eq(upstream_seen[0][1], 1);
    ck_assert_int_eq(upstream_seen[1][0], 1);

    /* reference "iteration" still re-splits each iteration */
    split_of("iteration", &f, its, 0, sizes, label, sizeof label);
    ck_assert_int_eq(sizes[0], 3);

    /* one listed iteration is its own mean: mean_layer_ms, as before */
    f.problem.n_iterations = 1;
    cost_calls = shape_calls = 0;
    split_of(NULL, &f, its, 0, sizes, label, sizeof label);
    ck_assert_int_eq(sizes[0], 3);
    ck_assert_int_eq(cost_calls, 6);
    ck_assert_int_eq(shape_calls, 0);

    /* a host older than the iterations list (struct_size short of it) */
    f.problem.n_iterations = 2;
    f.problem.struct_size = (uint32_t)offsetof(loom_problem, iterations);
    split_of(NULL, &f, its, 1, sizes, label, sizeof label);
    ck_assert_msg(strstr(label, "max=10ms") != NULL, "label %s", label);
    f.problem.struct_size = sizeof f.problem;

    /* the run's split needs run_module_shape and layer, and says so (a
     * host table that ends before run_module_shape) */
    loom_cost_service no_shape = it_cost;
    no_shape.struct_size = (uint32_t)offsetof(loom_cost_service, run_module_shape);
    loom_mock_host *h = host_with(&no_shape, NULL, NULL);
    loom_candidates *set = loom_mock_candidates_new(&f.problem, &its[0]);
    loom_error err = {0, ""};
    ck_assert_int_eq(partition(h, &f.problem, &its[0], set, &err), LOOM_ENOTFOUND);
    ck_assert_msg(strstr(err.message, "\"loom.cost\" service with run_module_shape and layer") !=
                      NULL, "%s", err.message);
    ck_assert_int_eq(set->n, 0);
    loom_mock_candidates_free(set);
    loom_mock_host_free(h);
}
END_TEST

START_TEST(manifest_matches_binary)
{
    const loom_plugin_info *info = loom_static_balanced_dp();
    ck_assert_int_eq(info->abi_version, LOOM_ABI_VERSION);
    cJSON *m = loom_test_json(loom_test_src("plugins/balanced-dp/manifest.json"));
    ck_assert_str_eq(cJSON_GetObjectItem(m, "id")->valuestring, info->id);
    ck_assert_str_eq(cJSON_GetObjectItem(m, "version")->valuestring, info->version);
    ck_assert_str_eq(cJSON_GetObjectItem(m, "binary")->valuestring,
                     "loom-balanced-dp.so");
    const cJSON *prov = cJSON_GetObjectItem(m, "provides");
    ck_assert_str_eq(cJSON_GetObjectItem(prov, "role")->valuestring,
                     LOOM_ROLE_PARTITIONER);
    ck_assert_str_eq(cJSON_GetObjectItem(prov, "name")->valuestring,
                     "balanced-dp");
    cJSON_Delete(m);
}
END_TEST

/* The balanced-dp suite. */
static Suite *suite(void)
{
    Suite *s = suite_create("balanced-dp");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, small_oracles);
    tcase_add_test(tc, paper_oracles);
    tcase_add_test(tc, optimal_against_brute_force);
    tcase_add_test(tc, ties_take_the_smallest_cut);
    tcase_add_test(tc, rejects_more_stages_than_layers);
    tcase_add_test(tc, partitioner_cuts_by_cost);
    tcase_add_test(tc, partitioner_errors);
    tcase_add_test(tc, manifest_matches_binary);
    tcase_add_test(tc, partitioner_v_placement);
    tcase_add_test(tc, partitioner_cuts_by_params);
    tcase_add_test(tc, partitioner_splits_once_for_the_run);
    suite_add_tcase(s, tc);
    return s;
}

/* Runs the suite; exits non-zero when a check fails. */
int main(void)
{
    return loom_test_main(suite());
}
