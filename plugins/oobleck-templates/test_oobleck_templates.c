/* test_oobleck_templates.c - the oobleck-templates partitioner with a mock
 * cost service: n0 from memory, one template per node count n0..N-f*n0 in
 * the candidate order oobleck-instantiate relies on, stages as ranks with
 * their GPU count as TP degree, microbatch shares, and its errors. */
#include <stdlib.h>
#include <string.h>
#include <loom/mock_host.h>
#include <loom/mock_sim.h>
#include "testutil.h"

const loom_plugin_info *loom_static_oobleck_templates(void);

/* Every module sees 1000 tokens per microbatch. */
static int mock_shape(loom_ctx *ctx, int32_t module, const loom_iteration *it,
                      int32_t microbatches, int32_t mb, int32_t subs,
                      loom_shape *out, loom_error *err)
{
    (void)ctx;
    (void)module;
    (void)it;
    (void)microbatches;
    (void)mb;
    (void)subs;
    (void)err;
    memset(out, 0, sizeof *out);
    out->tokens = 1000;
    out->tp = 1;
    return LOOM_OK;
}

/* 1 ms forward, 2 ms backward per layer on one GPU, 10 % TP overhead; a TP
 * degree of 4 is rejected (as when it does not divide the heads); 1 GiB
 * of parameters and states per layer. */
static int mock_layer(loom_ctx *ctx, int32_t module, int32_t layer,
                      const loom_shape *shape, int32_t policy,
                      loom_layer_cost *out, loom_error *err)
{
    (void)ctx;
    (void)module;
    (void)layer;
    (void)policy;
    memset(out, 0, sizeof *out);
    if (shape->tp == 4) {
        err->code = LOOM_EINVAL;
        strcpy(err->message, "tp 4 does not divide the heads");
        return LOOM_EINVAL;
    }
    double d = shape->tp > 1 ? shape->tp * 0.9 : 1;
    out->forward_ms = 1 / d;
    out->input_grad_ms = 1 / d;
    out->weight_grad_ms = 1 / d;
    out->param_bytes = 1 << 29;
    out->state_bytes = 1 << 29;
    return LOOM_OK;
}

static const loom_cost_service mock_cost = {sizeof(loom_cost_service), 1,
                                            mock_layer, mock_shape, NULL, NULL, NULL};

static loom_layer layer = {64, 256, 4, 4, 0, 0, 0, 0};
static int64_t test_hbm = 8LL << 30; /* HBM per GPU of the test cluster */

/* Runs the partitioner on a 12-layer model, tp*pp*dp GPUs, 8 GPUs per
 * node of test_hbm bytes, mbs microbatches of n_samples samples (spread
 * evenly); params as "k", "v" pairs. */
static int run_with(int32_t gpus, int32_t mbs, int32_t n_samples, const char *const *params,
                    loom_candidates **set, loom_error *err)
{
    static loom_module mods[1];
    static loom_model model;
    static loom_cluster cl;
    static loom_problem pb;
    mods[0] = (loom_module){"llm", LOOM_MODULE_BACKBONE, LOOM_MODALITY_TEXT, 12,
                            &layer, 1, 0, 0, 0, NULL, 0};
    model = (loom_model){"toy", 1, mods};
    memset(&cl, 0, sizeof cl);
    cl.gpus_per_node = 8;
    cl.hbm_bytes = test_hbm;
    memset(&pb, 0, sizeof pb);
    pb.struct_size = sizeof pb;
    pb.kind = LOOM_PROBLEM_MODEL;
    pb.model = &model;
    pb.cluster = &cl;
    pb.parallel = (loom_parallel){1, gpus, 1, 1, mbs, 0};
    loom_sample *smp = calloc((size_t)n_samples, sizeof *smp);
    ck_assert_ptr_nonnull(smp);
    for (int32_t i = 0; i < n_samples; i++)
        smp[i] = (loom_sample){100, 0, -1, 0, 0};
    loom_iteration it = {0, n_samples, smp};
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    loom_mock_host_set_problem(h, &pb);
    loom_mock_host_add_service(h, LOOM_SERVICE_COST, 1, &mock_cost);
    for (int i = 0; params && params[i]; i += 2)
        loom_mock_host_set_param(h, params[i], params[i + 1]);
    const loom_partitioner_vtable *vt = (const loom_partitioner_vtable *)
        loom_static_oobleck_templates()->role(LOOM_ROLE_PARTITIONER);
    void *self = NULL;
    ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h), NULL,
                                &self, err), LOOM_OK);
    *set = loom_mock_candidates_new(&pb, &it);
    int rc = vt->partition(self, &pb, &it, *set, err);
    vt->destroy(self);
    loom_mock_host_free(h);
    free(smp);
    return rc;
}

/* run_with 4 microbatches of one sample each. */
static int run(int32_t gpus, const char *const *params, loom_candidates **set,
               loom_error *err)
{
    return run_with(gpus, 4, 4, params, set, err);
}

/* The candidates' work is bounded before they are offered: stages x
 * microbatches over every template and share (2^23), and the samples
 * every candidate maps (2^27 entries). */
START_TEST(candidate_work_is_bounded)
{
    loom_candidates *set = NULL;
    loom_error err = {0, ""};
    /* 12 nodes, templates of 1..11 nodes with a stage a node, at 130,000
     * microbatches: the 128 shares and the whole batch are 138,256
     * microbatches a template, over 66 stages */
    ck_assert_int_eq(run_with(96, 130000, 130000, NULL, &set, &err), LOOM_EINVAL);
    loom_test_has(err.message, "oobleck-templates: 11 templates of 129 microbatch share(s) "
                               "(138256 microbatches in all) hold 9124896 stage-microbatches, "
                               "at most 8388608 (docs/formats.md, bounds); plan fewer "
                               "microbatches or nodes");
    loom_mock_candidates_free(set);
    set = NULL;
    /* 3 templates x 128 shares x 400,000 samples */
    ck_assert_int_eq(run_with(32, 128, 400000, NULL, &set, &err), LOOM_EINVAL);
    loom_test_has(err.message, "3 templates x 128 microbatch shares x 400000 samples x 1 "
                               "modules = 153600000 sample-map entries, at most 134217728");
    loom_mock_candidates_free(set);
    set = NULL;
    /* within both: 128 microbatches of 1,000 samples */
    ck_assert_msg(run_with(32, 128, 1000, NULL, &set, &err) == LOOM_OK, "%s", err.message);
    ck_assert_int_eq(set->n, 3 * 128);
    loom_mock_candidates_free(set);
}
END_TEST

START_TEST(templates_in_order)
{
    /* 32 GPUs of 8 per node: N = 4; 12 GiB of states over 8 x 8 GiB:
     * n0 = 1; f = 1: templates for 1, 2, 3 nodes, 4 shares each */
    loom_candidates *set = NULL;
    loom_error err = {0, ""};
    ck_assert_msg(run(32, NULL, &set, &err) == LOOM_OK, "%s", err.message);
    ck_assert_int_eq(set->n, 12);
    for (int c = 0; c < 12; c++) {
        const loom_partition *p = set->items[c];
        int nodes = 1 + c / 4, share = 1 + c % 4;
        ck_assert_int_eq(p->n_microbatches, share);
        ck_assert_int_eq(p->cap_microbatches, share + 1); /* room for its share alone */
        char want[32];
        snprintf(want, sizeof want, "oobleck n=%d ", nodes);
        ck_assert_msg(strstr(p->label, want) != NULL, "%s", p->label);
        /* a stage per rank, stages on whole nodes, layers in order */
        ck_assert_int_eq(p->n_ranks, p->n_positions);
        ck_assert_int_ge(p->n_positions, nodes);
        int gpus = 0, layer_at = 0;
        for (int k = 0; k < p->n_positions; k++) {
            ck_assert_int_eq(p->positions[k].rank, k);
            const loom_span *sp = &p->spans[p->positions[k].span_off];
            ck_assert_int_eq(sp->first_layer, layer_at);
            ck_assert(sp->tp == 1 || sp->tp == 2 || sp->tp == 8); /* no 4 */
            layer_at += sp->n_layers;
            gpus += sp->tp;
        }
        ck_assert_int_eq(layer_at, 12);
        ck_assert_int_eq(gpus, 8 * nodes);
        /* samples beyond the share are left out */
        for (int s = 0; s < 4; s++)
            ck_assert_int_eq(p->sample_mb[s], s < share ? s : -1);
    }
    loom_mock_candidates_free(set);
}
END_TEST

START_TEST(memory_sets_n0_and_params)
{
    /* 12 GiB of states: one node of 8 x 8 GiB holds them (n0 = 1, with 6
     * nodes and f = 1 templates 1..5); with 1 GiB GPUs it takes 2 nodes
     * (n0 = 2: templates 2..4) */
    const char *const p1[] = {"shares", "full", "nodes", "6", NULL};
    loom_candidates *set = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(run(48, p1, &set, &err), LOOM_OK);
    ck_assert_int_eq(set->n, 5);
    loom_mock_candidates_free(set);
    test_hbm = 1LL << 30;
    ck_assert_int_eq(run(48, p1, &set, &err), LOOM_OK);
    test_hbm = 8LL << 30;
    ck_assert_int_eq(set->n, 3);
    ck_assert_ptr_nonnull(strstr(set->items[0]->label, "n=2 "));
    loom_mock_candidates_free(set);
    const char *const p2[] = {"shares", "full", "nodes", "6", "min_nodes", "2", NULL};
    ck_assert_int_eq(run(48, p2, &set, &err), LOOM_OK);
    ck_assert_int_eq(set->n, 3); /* 2, 3, 4 */
    ck_assert_ptr_nonnull(strstr(set->items[0]->label, "n=2 "));
    ck_assert_int_eq(set->items[0]->n_microbatches, 4);
    loom_mock_candidates_free(set);
    /* fewer nodes than (f+1) n0 */
    const char *const p3[] = {"nodes", "3", "min_nodes", "2", NULL};
    ck_assert_int_eq(run(48, p3, &set, &err), LOOM_EINFEASIBLE);
    ck_assert_ptr_nonnull(strstr(err.message, "need 4"));
    loom_mock_candidates_free(set);
    /* more nodes than layers: no template for 13 nodes */
    const char *const p4[] = {"nodes", "14", "gpus_per_node", "1", "fault_tolerance",
                              "0", NULL};
    ck_assert_int_eq(run(48, p4, &set, &err), LOOM_EINFEASIBLE);
    ck_assert_ptr_nonnull(strstr(err.message, "no template for 13 node(s)"));
    loom_mock_candidates_free(set);
}
END_TEST

START_TEST(templates_kept_across_iterations)
{
    /* the instance plans once and re-emits; per_iteration plans again */
    static loom_module mods[1];
    mods[0] = (loom_module){"llm", LOOM_MODULE_BACKBONE, LOOM_MODALITY_TEXT, 12,
                            &layer, 1, 0, 0, 0, NULL, 0};
    loom_model model = {"toy", 1, mods};
    loom_cluster cl;
    memset(&cl, 0, sizeof cl);
    cl.gpus_per_node = 8;
    cl.hbm_bytes = 8LL << 30;
    loom_problem pb;
    memset(&pb, 0, sizeof pb);
    pb.struct_size = sizeof pb;
    pb.kind = LOOM_PROBLEM_MODEL;
    pb.model = &model;
    pb.cluster = &cl;
    pb.parallel = (loom_parallel){1, 16, 1, 1, 2, 0};
    loom_sample smp[2] = {{100, 0, -1, 0, 0}, {100, 0, -1, 0, 0}};
    loom_iteration it = {0, 2, smp};
    for (int per = 0; per < 2; per++) {
        loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
        loom_mock_host_set_problem(h, &pb);
        loom_mock_host_add_service(h, LOOM_SERVICE_COST, 1, &mock_cost);
        loom_mock_host_set_param(h, "per_iteration", per ? "true" : "false");
        const loom_partitioner_vtable *vt = (const loom_partitioner_vtable *)
            loom_static_oobleck_templates()->role(LOOM_ROLE_PARTITIONER);
        void *self = NULL;
        loom_error err = {0, ""};
        ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h),
                                    NULL, &self, &err), LOOM_OK);
        int64_t logs[2];
        for (int k = 0; k < 2; k++) {
            loom_candidates *set = loom_mock_candidates_new(&pb, &it);
            ck_assert_int_eq(vt->partition(self, &pb, &it, set, &err), LOOM_OK);
            ck_assert_int_eq(set->n, 2); /* N = 2, f = 1: one template, 2 shares */
            loom_mock_candidates_free(set);
            logs[k] = loom_mock_host_log_count(h);
        }
        /* planning logs the template and a summary: none the second time */
        if (per)
            ck_assert_int_eq(logs[1], 2 * logs[0]);
        else
            ck_assert_int_eq(logs[1], logs[0]);
        vt->destroy(self);
        loom_mock_host_free(h);
    }
}
END_TEST

/* The suite of this file. */
static Suite *ot_suite(void)
{
    Suite *s = suite_create("oobleck_templates");
    TCase *tc = tcase_create("partitioner");
    tcase_add_test(tc, templates_in_order);
    tcase_add_test(tc, candidate_work_is_bounded);
    tcase_add_test(tc, memory_sets_n0_and_params);
    tcase_add_test(tc, templates_kept_across_iterations);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(ot_suite());
}
