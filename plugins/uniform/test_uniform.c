/* test_uniform.c - the uniform (Megatron) partitioner: the layer split
 * across a module boundary, position-to-rank placement, the encoders on
 * the first position, a given split, the even and the workload-given
 * sample split, and its input errors. */
#include <stdlib.h>
#include <string.h>
#include <loom/mock_host.h>
#include <loom/mock_sim.h>
#include <cjson/cJSON.h>
#include "testutil.h"

/* Static twins of the plugins under test (linked into every suite). */
const loom_plugin_info *loom_static_uniform(void);

static loom_layer layers[64];
static const int32_t llm_inputs[1] = {0};

/* A two-module model (encoder of n_enc layers feeding a backbone of n_llm
 * layers) planned with pp x vpp positions and `mbs` microbatches. */
typedef struct fixture {
    loom_module modules[2];
    loom_model model;
    loom_problem problem;
} fixture;

/* Fills f with the model and parallel config above. */
static void setup(fixture *f, int n_enc, int n_llm, int pp, int vpp, int mbs)
{
    memset(f, 0, sizeof *f);
    for (int i = 0; i < 64; i++) {
        layers[i].hidden = 1024;
        layers[i].ffn_hidden = 4096;
        layers[i].heads = 16;
        layers[i].kv_heads = 16;
    }
    f->modules[0].name = "vit";
    f->modules[0].kind = LOOM_MODULE_ENCODER;
    f->modules[0].modality = LOOM_MODALITY_IMAGE;
    f->modules[0].n_layers = n_enc;
    f->modules[0].layers = layers;
    f->modules[0].tokens_per_item = 169;
    f->modules[1].name = "llm";
    f->modules[1].kind = LOOM_MODULE_BACKBONE;
    f->modules[1].modality = LOOM_MODALITY_TEXT;
    f->modules[1].n_layers = n_llm;
    f->modules[1].layers = layers;
    f->modules[1].tokens_per_item = 1;
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
    f->problem.parallel.vpp = vpp;
    f->problem.parallel.microbatches = mbs;
}

/* Runs the uniform partitioner on `set` with the params of `kv`, key and
 * value pairs ended by a NULL key (kv NULL: the defaults). */
static int partition_params(const loom_problem *pb, const loom_iteration *it,
                            const char *const *kv, loom_candidates *set, loom_error *err)
{
    const loom_partitioner_vtable *vt =
        (const loom_partitioner_vtable *)loom_static_uniform()->role(
            LOOM_ROLE_PARTITIONER);
    ck_assert_ptr_nonnull(vt);
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    loom_mock_host_set_problem(h, pb);
    for (int i = 0; kv && kv[i]; i += 2)
        loom_mock_host_set_param(h, kv[i], kv[i + 1]);
    void *self = NULL;
    ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h),
                                NULL, &self, err), LOOM_OK);
    int rc = vt->partition(self, pb, it, set, err);
    vt->destroy(self);
    loom_mock_host_free(h);
    return rc;
}

/* Runs the uniform partitioner on `set`, with param `key` set to `value`
 * (key NULL or value NULL: the defaults). */
static int partition_with(const loom_problem *pb, const loom_iteration *it, const char *key,
                          const char *value, loom_candidates *set, loom_error *err)
{
    const char *kv[3] = {key && value ? key : NULL, value, NULL};
    return partition_params(pb, it, kv, set, err);
}

/* A new candidate set holding the split of pb with param `key` set to
 * `value` (key NULL: the defaults), asserting success; free it with
 * loom_mock_candidates_free. */
static loom_candidates *partitioned(const loom_problem *pb, const char *key, const char *value)
{
    loom_candidates *set = loom_mock_candidates_new(pb, NULL);
    loom_error err = {0, ""};
    ck_assert_msg(partition_with(pb, NULL, key, value, set, &err) == LOOM_OK, "%s",
                  err.message);
    return set;
}

/* Runs the uniform partitioner on `set` with params.placement (NULL: the
 * default). */
static int partition_placed(const loom_problem *pb, const loom_iteration *it,
                            const char *placement, loom_candidates *set, loom_error *err)
{
    return partition_with(pb, it, "placement", placement, set, err);
}

/* Runs the uniform partitioner on `set` with params.encoders. */
static int partition_encoders(const loom_problem *pb, const char *encoders,
                              loom_candidates *set, loom_error *err)
{
    return partition_with(pb, NULL, "encoders", encoders, set, err);
}

/* Runs the uniform partitioner on `set`. */
static int partition(const loom_problem *pb, const loom_iteration *it,
                     loom_candidates *set, loom_error *err)
{
    return partition_with(pb, it, NULL, NULL, set, err);
}

/* Asserts span k of p is (module, first layer, count). */
static void check_span(const loom_partition *p, int k, int module, int first,
                       int count)
{
    ck_assert_int_eq(p->spans[k].module, module);
    ck_assert_int_eq(p->spans[k].first_layer, first);
    ck_assert_int_eq(p->spans[k].n_layers, count);
}

/* Asserts the layout of the 6 positions of a pp 2 x vpp 3 split of a
 * 5-layer encoder and an 11-layer backbone whose position 0 holds the
 * whole encoder and backbone layers 0..1: position s on rank s % 2, one
 * span each but position 0's two, then the backbone runs of `runs` layers
 * (positions 1..5) and the label `label`. */
static void check_encoder_at_first(const loom_partition *p, const int runs[5], const char *label)
{
    ck_assert_int_eq(p->n_positions, 6);
    for (int s = 0; s < 6; s++) {
        ck_assert_int_eq(p->positions[s].rank, s % 2);
        ck_assert_int_eq(p->positions[s].n_spans, s == 0 ? 2 : 1);
    }
    ck_assert_int_eq(p->n_spans, 7);
    check_span(p, 0, 0, 0, 5); /* position 0: vit 0..4 and llm 0..1 */
    check_span(p, 1, 1, 0, 2);
    for (int k = 0, first = 2; k < 5; first += runs[k], k++)
        check_span(p, 2 + k, 1, first, runs[k]);
    ck_assert_str_eq(p->label, label);
}

START_TEST(split_crosses_module_boundary)
{
    /* 5 + 11 = 16 layers into pp 2 x vpp 3 = 6 positions: 3,3,3,3,2,2 */
    fixture f;
    setup(&f, 5, 11, 2, 3, 4);
    loom_candidates *set = loom_mock_candidates_new(&f.problem, NULL);
    loom_error err = {0, ""};
    ck_assert_msg(partition(&f.problem, NULL, set, &err) == LOOM_OK, "%s",
                  err.message);
    ck_assert_int_eq(set->n, 1);
    const loom_partition *p = set->items[0];
    ck_assert_int_eq(p->n_ranks, 2);
    ck_assert_int_eq(p->n_flows, 1);
    ck_assert_int_eq(p->flows[0].pos_off, 0);
    ck_assert_int_eq(p->flows[0].n_pos, 6);
    ck_assert_int_eq(p->flows[0].module, -1);
    ck_assert_int_eq(p->flows[0].segments, 3);
    ck_assert_int_eq(p->flows[0].n_inputs, 0);
    ck_assert_int_eq(p->n_positions, 6);
    static const int n_spans[6] = {1, 2, 1, 1, 1, 1};
    int off = 0;
    for (int s = 0; s < 6; s++) {
        ck_assert_int_eq(p->positions[s].rank, s % 2);
        ck_assert_int_eq(p->positions[s].span_off, off);
        ck_assert_int_eq(p->positions[s].n_spans, n_spans[s]);
        off += n_spans[s];
    }
    ck_assert_int_eq(p->n_spans, 7);
    check_span(p, 0, 0, 0, 3);
    check_span(p, 1, 0, 3, 2); /* position 1: vit 3..4 and llm 0 */
    check_span(p, 2, 1, 0, 1);
    check_span(p, 3, 1, 1, 3);
    check_span(p, 4, 1, 4, 3);
    check_span(p, 5, 1, 7, 2);
    check_span(p, 6, 1, 9, 2);
    ck_assert_int_eq(p->n_microbatches, 4);
    for (int mb = 0; mb < 4; mb++)
        ck_assert_int_eq(p->subs[mb], 1);
    ck_assert_ptr_nonnull(strstr(p->label, "uniform"));
    loom_mock_candidates_free(set);
}
END_TEST

START_TEST(encoders_first_position)
{
    /* encoders "first": the 5 encoder layers at position 0, the 11
     * backbone layers cut over the 6 positions as 2,2,2,2,2,1 */
    fixture f;
    setup(&f, 5, 11, 2, 3, 4);
    loom_candidates *set = partitioned(&f.problem, "encoders", "first");
    static const int runs[5] = {2, 2, 2, 2, 1};
    check_encoder_at_first(set->items[0], runs, "uniform pp=2 vpp=3 encoders-first");
    loom_mock_candidates_free(set);

    /* without encoders the split is the plain one, label and all */
    setup(&f, 0, 8, 4, 1, 8);
    set = partitioned(&f.problem, "encoders", "first");
    for (int s = 0; s < 4; s++)
        check_span(set->items[0], s, 1, 2 * s, 2);
    ck_assert_str_eq(set->items[0]->label, "uniform pp=4 vpp=1");
    loom_mock_candidates_free(set);
}
END_TEST

START_TEST(encoders_first_errors)
{
    /* 5 backbone layers cannot fill 6 positions once the encoder's 5 sit
     * at the first */
    fixture f;
    setup(&f, 5, 5, 2, 3, 4);
    loom_candidates *set = loom_mock_candidates_new(&f.problem, NULL);
    loom_error err = {0, ""};
    ck_assert_int_eq(partition_encoders(&f.problem, "first", set, &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "uniform: params.encoders \"first\": the model has 5 layers "
                                  "after its encoders, fewer than the 6 positions (pp 2 x vpp "
                                  "3); every position needs at least one");
    ck_assert_int_eq(set->n, 0);
    /* the plain split takes the same model */
    ck_assert_int_eq(partition_encoders(&f.problem, "split", set, &err), LOOM_OK);
    ck_assert_int_eq(set->n, 1);
    loom_mock_candidates_free(set);

    /* an encoder after the backbone in module order */
    setup(&f, 4, 8, 2, 1, 4);
    f.modules[0].kind = LOOM_MODULE_BACKBONE;
    f.modules[1].kind = LOOM_MODULE_ENCODER;
    set = loom_mock_candidates_new(&f.problem, NULL);
    ck_assert_int_eq(partition_encoders(&f.problem, "first", set, &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "uniform: params.encoders \"first\": modules[1] (llm) is an "
                                  "encoder after modules[0] (vit); expected every encoder before "
                                  "the other modules");
    ck_assert_int_eq(set->n, 0);
    loom_mock_candidates_free(set);
}
END_TEST

START_TEST(given_layers_per_position)
{
    /* 5 + 11 = 16 layers given as 7,1,3,2,2,1 over pp 2 x vpp 3: the
     * runs take exactly those lengths, crossing the module boundary at
     * position 0 */
    fixture f;
    setup(&f, 5, 11, 2, 3, 4);
    loom_candidates *set = partitioned(&f.problem, "layers_per_position", "7,1,3,2,2,1");
    ck_assert_int_eq(set->n, 1);
    static const int runs[5] = {1, 3, 2, 2, 1};
    check_encoder_at_first(set->items[0], runs, "uniform pp=2 vpp=3 layers-given");
    loom_mock_candidates_free(set);

    /* the even cut given by hand is the default split, span for span */
    set = partitioned(&f.problem, "layers_per_position", "3,3,3,3,2,2");
    loom_candidates *even = partitioned(&f.problem, NULL, NULL);
    ck_assert_int_eq(set->items[0]->n_spans, even->items[0]->n_spans);
    for (int k = 0; k < even->items[0]->n_spans; k++)
        check_span(set->items[0], k, even->items[0]->spans[k].module,
                   even->items[0]->spans[k].first_layer, even->items[0]->spans[k].n_layers);
    loom_mock_candidates_free(set);
    loom_mock_candidates_free(even);
}
END_TEST

/* Asserts that layers_per_position `text` (with params `more`, NULL
 * ended, beside it) fails with `message` and adds no candidate. */
static void check_given_error(const fixture *f, const char *text, const char *more_key,
                              const char *more_value, const char *message)
{
    loom_candidates *set = loom_mock_candidates_new(&f->problem, NULL);
    loom_error err = {0, ""};
    const char *kv[5] = {"layers_per_position", text, more_key, more_value, NULL};
    ck_assert_int_eq(partition_params(&f->problem, NULL, kv, set, &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, message);
    ck_assert_int_eq(set->n, 0);
    loom_mock_candidates_free(set);
}

START_TEST(given_layers_errors)
{
    /* the list, a param beside it (or none), and the message */
    static const struct {
        const char *text, *key, *value, *message;
    } cases[] = {
        {"7,1,3,2,2", NULL, NULL,
         "uniform: params.layers_per_position has 5 entries, expected one per position: 6 "
         "(pp 2 x vpp 3)"},
        {"7,1,3,2,2,1,1", NULL, NULL,
         "uniform: params.layers_per_position has 7 entries, expected one per position: 6 "
         "(pp 2 x vpp 3)"},
        {"7,1,3,2,2,2", NULL, NULL,
         "uniform: params.layers_per_position sums to 17 layers, expected the model's 16"},
        {"7,0,4,2,2,1", NULL, NULL,
         "uniform: params.layers_per_position: entry 2 is \"0\", expected a positive integer"},
        {"7,1,3,two,2,1", NULL, NULL,
         "uniform: params.layers_per_position: entry 4 is \"two\", expected a positive "
         "integer"},
        {"7,1,3,2,2,", NULL, NULL,
         "uniform: params.layers_per_position: entry 6 is \"\", expected a positive integer"},
        {"8,-1,4,2,2,1", NULL, NULL,
         "uniform: params.layers_per_position: entry 2 is \"-1\", expected a positive integer"},
        {"3,3,3,3,2,2", "encoders", "first",
         "uniform: params.layers_per_position and params.encoders \"first\" both place layers; "
         "expected one of them"},
        {"3,3,3,3,2,2", "vpp_sweep", "true",
         "uniform: params.layers_per_position fixes one split of pp x vpp positions; expected "
         "params.vpp_sweep false with it"},
    };
    fixture f;
    setup(&f, 5, 11, 2, 3, 4);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_given_error(&f, cases[i].text, cases[i].key, cases[i].value, cases[i].message);
}
END_TEST

START_TEST(single_module_flow)
{
    fixture f;
    setup(&f, 0, 8, 4, 1, 8);
    loom_candidates *set = loom_mock_candidates_new(&f.problem, NULL);
    loom_error err = {0, ""};
    ck_assert_int_eq(partition(&f.problem, NULL, set, &err), LOOM_OK);
    const loom_partition *p = set->items[0];
    ck_assert_int_eq(p->flows[0].module, 1);
    ck_assert_int_eq(p->flows[0].segments, 1);
    for (int s = 0; s < 4; s++) {
        ck_assert_int_eq(p->positions[s].rank, s);
        ck_assert_int_eq(p->positions[s].n_spans, 1);
        check_span(p, s, 1, 2 * s, 2);
    }
    /* a second call appends a second candidate, leaving the first alone */
    ck_assert_int_eq(partition(&f.problem, NULL, set, &err), LOOM_OK);
    ck_assert_int_eq(set->n, 2);
    ck_assert_int_eq(set->items[1]->n_positions, 4);
    loom_mock_candidates_free(set);
}
END_TEST

START_TEST(even_sample_split)
{
    fixture f;
    setup(&f, 2, 4, 2, 1, 4);
    loom_sample samples[10];
    memset(samples, 0, sizeof samples);
    for (int i = 0; i < 10; i++) {
        samples[i].text_tokens = 100;
        samples[i].images = 1;
        samples[i].microbatch = -1;
    }
    loom_iteration it = {0, 10, samples};
    loom_candidates *set = loom_mock_candidates_new(&f.problem, &it);
    loom_error err = {0, ""};
    ck_assert_int_eq(partition(&f.problem, &it, set, &err), LOOM_OK);
    const loom_partition *p = set->items[0];
    ck_assert_int_eq(p->n_samples, 10);
    ck_assert_int_eq(p->n_modules, 2);
    static const int want[10] = {0, 0, 0, 1, 1, 2, 2, 2, 3, 3}; /* i*4/10 */
    for (int m = 0; m < 2; m++)
        for (int i = 0; i < 10; i++)
            ck_assert_int_eq(p->sample_mb[m * 10 + i], want[i]);
    loom_mock_candidates_free(set);
}
END_TEST

START_TEST(workload_packing_and_its_errors)
{
    fixture f;
    setup(&f, 2, 4, 2, 1, 4);
    loom_sample samples[4];
    memset(samples, 0, sizeof samples);
    static const int given[4] = {3, 2, 2, 0};
    for (int i = 0; i < 4; i++)
        samples[i].microbatch = given[i];
    loom_iteration it = {7, 4, samples};
    loom_candidates *set = loom_mock_candidates_new(&f.problem, &it);
    loom_error err = {0, ""};
    ck_assert_int_eq(partition(&f.problem, &it, set, &err), LOOM_OK);
    for (int m = 0; m < 2; m++)
        for (int i = 0; i < 4; i++)
            ck_assert_int_eq(set->items[0]->sample_mb[m * 4 + i], given[i]);
    samples[2].microbatch = 4;
    ck_assert_int_eq(partition(&f.problem, &it, set, &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "iteration 7: samples[2].microbatch: "
                                  "expected < 4 (parallel.microbatches), "
                                  "found 4");
    ck_assert_int_eq(set->n, 1); /* the failed candidate is dropped */
    loom_mock_candidates_free(set);
}
END_TEST

START_TEST(too_few_layers)
{
    fixture f;
    setup(&f, 2, 3, 2, 3, 4);
    loom_candidates *set = loom_mock_candidates_new(&f.problem, NULL);
    loom_error err = {0, ""};
    ck_assert_int_eq(partition(&f.problem, NULL, set, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "5 layers, fewer than the 6 positions"));
    ck_assert_ptr_nonnull(strstr(err.message, "pp 2 x vpp 3"));
    ck_assert_int_eq(set->n, 0);
    loom_mock_candidates_free(set);
}
END_TEST

START_TEST(declines_stage_times)
{
    fixture f;
    setup(&f, 2, 3, 2, 1, 4);
    f.problem.kind = LOOM_PROBLEM_STAGE_TIMES;
    f.problem.model = NULL;
    loom_candidates *set = loom_mock_candidates_new(&f.problem, NULL);
    loom_error err = {0, ""};
    ck_assert_int_eq(partition(&f.problem, NULL, set, &err), LOOM_DECLINED);
    ck_assert_int_eq(set->n, 0);
    loom_mock_candidates_free(set);
}
END_TEST

START_TEST(manifest_matches_binary)
{
    const loom_plugin_info *info = loom_static_uniform();
    ck_assert_int_eq(info->abi_version, LOOM_ABI_VERSION);
    ck_assert_ptr_null(info->role(LOOM_ROLE_RANKER));
    cJSON *m = loom_test_json(loom_test_src("plugins/uniform/manifest.json"));
    ck_assert_str_eq(cJSON_GetObjectItem(m, "id")->valuestring, info->id);
    ck_assert_str_eq(cJSON_GetObjectItem(m, "version")->valuestring, info->version);
    ck_assert_str_eq(cJSON_GetObjectItem(m, "binary")->valuestring, "loom-uniform.so");
    const cJSON *prov = cJSON_GetObjectItem(m, "provides");
    ck_assert_str_eq(cJSON_GetObjectItem(prov, "role")->valuestring,
                     LOOM_ROLE_PARTITIONER);
    ck_assert_str_eq(cJSON_GetObjectItem(prov, "name")->valuestring, "uniform");
    cJSON_Delete(m);
}
END_TEST

START_TEST(v_and_zigzag_placement)
{
    /* 16 layers, pp 4 x vpp 2: V puts chunk 1 on ranks 3 2 1 0 */
    fixture f;
    setup(&f, 0, 16, 4, 2, 8);
    loom_candidates *set = loom_mock_candidates_new(&f.problem, NULL);
    loom_error err = {0, ""};
    ck_assert_msg(partition_placed(&f.problem, NULL, "v", set, &err) == LOOM_OK, "%s",
                  err.message);
    static const int32_t v[8] = {0, 1, 2, 3, 3, 2, 1, 0};
    for (int s = 0; s < 8; s++)
        ck_assert_int_eq(set->items[0]->positions[s].rank, v[s]);
    ck_assert_str_eq(set->items[0]->label, "uniform pp=4 vpp=2 v");
    loom_mock_candidates_free(set);
    /* zigzag over vpp 3 on pp 2: 0 1 | 1 0 | 0 1 */
    setup(&f, 0, 12, 2, 3, 4);
    set = loom_mock_candidates_new(&f.problem, NULL);
    ck_assert_int_eq(partition_placed(&f.problem, NULL, "zigzag", set, &err), LOOM_OK);
    static const int32_t z[6] = {0, 1, 1, 0, 0, 1};
    for (int s = 0; s < 6; s++)
        ck_assert_int_eq(set->items[0]->positions[s].rank, z[s]);
    loom_mock_candidates_free(set);
    /* v needs vpp = 2 */
    set = loom_mock_candidates_new(&f.problem, NULL);
    ck_assert_int_eq(partition_placed(&f.problem, NULL, "v", set, &err), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "uniform: params.placement: \"v\" expected 2 positions "
                                  "per rank (vpp = 2), found 6 on 2 ranks (\"zigzag\" "
                                  "takes any vpp)");
    ck_assert_int_eq(set->n, 0);
    loom_mock_candidates_free(set);
    /* a value the table does not list fails at create */
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    loom_mock_host_set_param(h, "placement", "w");
    void *self = NULL;
    const loom_partitioner_vtable *vt =
        (const loom_partitioner_vtable *)loom_static_uniform()->role(LOOM_ROLE_PARTITIONER);
    ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h), NULL, &self, &err),
                     LOOM_EINVAL);
    ck_assert_str_eq(err.message, "uniform: params.placement: expected one of \"loop\", \"v\", "
                                  "\"zigzag\", found \"w\"");
    ck_assert_ptr_null(self);
    loom_mock_host_free(h);
}
END_TEST

/* The uniform suite. */
static Suite *suite(void)
{
    Suite *s = suite_create("uniform");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, split_crosses_module_boundary);
    tcase_add_test(tc, encoders_first_position);
    tcase_add_test(tc, encoders_first_errors);
    tcase_add_test(tc, given_layers_per_position);
    tcase_add_test(tc, given_layers_errors);
    tcase_add_test(tc, single_module_flow);
    tcase_add_test(tc, even_sample_split);
    tcase_add_test(tc, workload_packing_and_its_errors);
    tcase_add_test(tc, too_few_layers);
    tcase_add_test(tc, declines_stage_times);
    tcase_add_test(tc, manifest_matches_binary);
    tcase_add_test(tc, v_and_zigzag_placement);
    suite_add_tcase(s, tc);
    return s;
}

/* Runs the suite; exits non-zero when a check fails. */
int main(void)
{
    return loom_test_main(suite());
}
