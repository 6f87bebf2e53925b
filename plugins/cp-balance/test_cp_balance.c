/* test_cp_balance.c (plugin) - the cp-balance pipeline step: the packed
 * prefix mask of each microbatch's backbone sequence, LPT (sorted and as
 * listed) against zigzag over the CP group, the label summary, and its
 * refusals. The algorithm's own oracles are in tests/test_cp_balance.c. */
#include <stdlib.h>
#include <string.h>
#include <loom/mock_host.h>
#include <loom/mock_sim.h>
#include "testutil.h"

const loom_plugin_info *loom_static_cp_balance(void);
const loom_plugin_info *loom_static_uniform(void);

static loom_layer layer = {64, 256, 4, 4, 0, 0, 0, 0};
static const int32_t in0[1] = {0};

/* Runs a partitioner plugin with the mock host. */
static int run_part(const loom_plugin_info *info, loom_mock_host *h,
                    const loom_problem *pb, const loom_iteration *it,
                    loom_candidates *set, loom_error *err)
{
    const loom_partitioner_vtable *vt =
        (const loom_partitioner_vtable *)info->role(LOOM_ROLE_PARTITIONER);
    void *self = NULL;
    ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h), NULL,
                                &self, err), LOOM_OK);
    int rc = vt->partition(self, pb, it, set, err);
    vt->destroy(self);
    return rc;
}

/* uniform + cp-balance on two microbatches with the given params; returns
 * the label. mb0: 2 images of 64 tokens then 256 text tokens (block
 * workloads 2,2,3,4,5,6); mb1: 512 causal text tokens (1..8). */
static void plan(const char *order, char *label)
{
    loom_module mods[2] = {
        {"vit", LOOM_MODULE_ENCODER, LOOM_MODALITY_IMAGE, 1, &layer, 64, 0, 1, 0, NULL, 0},
        {"llm", LOOM_MODULE_BACKBONE, LOOM_MODALITY_TEXT, 1, &layer, 1, 0, 1, 1, in0, 0}};
    loom_model model = {"toy", 2, mods};
    loom_problem pb;
    memset(&pb, 0, sizeof pb);
    pb.struct_size = sizeof pb;
    pb.kind = LOOM_PROBLEM_MODEL;
    pb.model = &model;
    pb.parallel = (loom_parallel){1, 1, 1, 1, 2, 0};
    loom_sample smp[2] = {{256, 2, 0, 0, 0}, {512, 0, 1, 0, 0}};
    loom_iteration it = {0, 2, smp};
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    loom_mock_host_set_problem(h, &pb);
    loom_mock_host_set_param(h, "gpus", "2");
    loom_mock_host_set_param(h, "block_tokens", "64");
    if (order)
        loom_mock_host_set_param(h, "order", order);
    loom_candidates *set = loom_mock_candidates_new(&pb, &it);
    loom_error err = {0, ""};
    ck_assert_int_eq(run_part(loom_static_uniform(), h, &pb, &it, set, &err), LOOM_OK);
    int32_t before = set->items[0]->n_microbatches;
    ck_assert_msg(run_part(loom_static_cp_balance(), h, &pb, &it, set, &err) == LOOM_OK,
                  "%s", err.message);
    ck_assert_int_eq(set->items[0]->n_microbatches, before);
    ck_assert_int_eq(set->items[0]->sample_mb[2], 0); /* data untouched */
    strcpy(label, set->items[0]->label);
    loom_mock_candidates_free(set);
    loom_mock_host_free(h);
}

START_TEST(label_reports_balance)
{
    char label[64];
    /* sorted LPT: 11/11 and 18/18; zigzag 12/11 on mb0 */
    plan(NULL, label);
    ck_assert_msg(strstr(label, " cp2 lpt1.00 zz1.09") != NULL, "%s", label);
    /* as listed (unsorted): 12/11 and 20/18 */
    plan("unsorted", label);
    ck_assert_msg(strstr(label, " cp2 lpt1.11 zz1.09") != NULL, "%s", label);
}
END_TEST

START_TEST(refusals)
{
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_PLUGIN_SOURCE_DIR);
    loom_error err = {0, ""};
    loom_problem st;
    memset(&st, 0, sizeof st);
    st.kind = LOOM_PROBLEM_STAGE_TIMES;
    ck_assert_int_eq(run_part(loom_static_cp_balance(), h, &st, NULL, NULL, &err),
                     LOOM_DECLINED);
    loom_module mods[1] = {
        {"llm", LOOM_MODULE_BACKBONE, LOOM_MODALITY_TEXT, 1, &layer, 1, 0, 1, 0, NULL, 0}};
    loom_model model = {"toy", 1, mods};
    loom_problem pb;
    memset(&pb, 0, sizeof pb);
    pb.struct_size = sizeof pb;
    pb.kind = LOOM_PROBLEM_MODEL;
    pb.model = &model;
    pb.parallel = (loom_parallel){1, 1, 1, 1, 1, 0};
    loom_candidates *set = loom_mock_candidates_new(&pb, NULL);
    ck_assert_int_eq(run_part(loom_static_cp_balance(), h, &pb, NULL, set, &err),
                     LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "layout partitioner"));
    loom_mock_candidates_free(set);
    loom_mock_host_free(h);
}
END_TEST

/* The suite of this file. */
static Suite *cpb_suite(void)
{
    Suite *s = suite_create("cp_balance_plugin");
    TCase *tc = tcase_create("plugin");
    tcase_add_test(tc, label_reports_balance);
    tcase_add_test(tc, refusals);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(cpb_suite());
}
