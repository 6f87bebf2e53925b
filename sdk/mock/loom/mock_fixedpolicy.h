/* loom/mock_fixedpolicy.h - the Check suite of the memory tuners built on
 * the fixed-policy kit (<loom/kits/fixedpolicy.h>: "none",
 * "full-recompute"), included once by each plugin's test after it defines
 * POLICY (the policy every entry must get), STATIC_INFO (the plugin's
 * static twin) and NAME (its name in messages and manifests).
 * In-tree test code: it builds graphs with the graph kit
 * (<loom/kits/graph.h>), reads the manifest with cJSON (testutil.h's
 * loom_test_json) and defines the suite's main() with Check (testutil.h),
 * so it is not installed with the SDK. */
#ifndef LOOM_MOCK_FIXEDPOLICY_H
#define LOOM_MOCK_FIXEDPOLICY_H

#include <cjson/cJSON.h>
#include <loom/kits/graph.h>
#include "testutil.h"

/* A P x M stage-times graph, F = 1 ms, B = 2 ms, 1 byte per activation. */
static loom_stage_graph *st_graph(int P, int M)
{
    double fw[8], bw[8];
    for (int s = 0; s < P; s++) {
        fw[s] = 1.0;
        bw[s] = 2.0;
    }
    loom_stage_times st;
    memset(&st, 0, sizeof st);
    st.ranks = P;
    st.microbatches = M;
    st.virtual_stages = 1;
    st.forward_ms = fw;
    st.backward_ms = bw;
    loom_stage_graph *g = NULL;
    loom_error err = {0, ""};
    ck_assert_msg(loom_graph_from_stage_times(&st, 0, &g, &err) == LOOM_OK,
                  "%s", err.message);
    return g;
}

/* Calls the tuner's tune() on g with policies prefilled to `fill`. */
static int tune(const loom_stage_graph *g, uint8_t *policies, int n_fill,
                uint8_t fill, loom_error *err)
{
    const loom_memory_tuner_vtable *vt =
        (const loom_memory_tuner_vtable *)STATIC_INFO()->role(
            LOOM_ROLE_MEMORY_TUNER);
    ck_assert_ptr_nonnull(vt);
    ck_assert_ptr_null(STATIC_INFO()->role(LOOM_ROLE_INTERLEAVER));
    loom_mock_host *h = loom_test_mock_host(STATIC_INFO());
    void *self = NULL;
    ck_assert_int_eq(vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h),
                                NULL, &self, err), LOOM_OK);
    memset(policies, fill, (size_t)n_fill);
    int rc = vt->tune(self, g, NULL, policies, err);
    vt->destroy(self);
    loom_mock_host_free(h);
    return rc;
}

START_TEST(sets_every_entry)
{
    loom_stage_graph *g = st_graph(4, 3);
    uint8_t pol[64];
    loom_error err = {0, ""};
    ck_assert_int_eq(g->n_layer_entries, 12);
    ck_assert_int_eq(tune(g, pol, 64, 7, &err), LOOM_OK);
    for (int e = 0; e < 12; e++)
        ck_assert_int_eq(pol[e], POLICY);
    for (int e = 12; e < 64; e++)
        ck_assert_int_eq(pol[e], 7); /* nothing written past the entries */
    loom_graph_free(g);
}
END_TEST

START_TEST(cap_reachable)
{
    loom_stage_graph *g = st_graph(4, 3);
    for (int r = 0; r < 4; r++)
        g->static_bytes[r] = 10;
    g->memory_cap_bytes = 11.0; /* static 10 + one activation of 1 byte */
    uint8_t pol[12];
    loom_error err = {0, ""};
    ck_assert_int_eq(tune(g, pol, 12, 1, &err), LOOM_OK);
    loom_graph_free(g);
}
END_TEST

START_TEST(cap_unreachable_names_rank_and_bytes)
{
    loom_stage_graph *g = st_graph(4, 3);
    for (int r = 0; r < 4; r++)
        g->static_bytes[r] = 10;
    g->static_bytes[2] = 20;
    g->memory_cap_bytes = 15.0;
    uint8_t pol[12];
    loom_error err = {0, ""};
    ck_assert_int_eq(tune(g, pol, 12, 1, &err), LOOM_EINFEASIBLE);
    ck_assert_ptr_nonnull(strstr(err.message, "rank 2 "));
    ck_assert_ptr_nonnull(strstr(err.message, "static 20 + largest activation 1"));
    ck_assert_ptr_nonnull(strstr(err.message, "6 bytes short"));
    loom_graph_free(g);
}
END_TEST

START_TEST(uses_most_frugal_option)
{
    /* NONE and SELECTIVE hold 100 bytes, FULL 10: a cap of 50 is
     * reachable (by recomputing), a cap of 5 is not */
    loom_stage_graph *g = st_graph(2, 2);
    for (int e = 0; e < g->n_layer_entries; e++)
        for (int p = 0; p < LOOM_POLICY_COUNT; p++)
            g->layer_options[e * LOOM_POLICY_COUNT + p].activation_bytes =
                p == LOOM_POLICY_FULL ? 10 : 100;
    uint8_t pol[4];
    loom_error err = {0, ""};
    g->memory_cap_bytes = 50.0;
    ck_assert_int_eq(tune(g, pol, 4, 1, &err), LOOM_OK);
    g->memory_cap_bytes = 5.0;
    ck_assert_int_eq(tune(g, pol, 4, 1, &err), LOOM_EINFEASIBLE);
    ck_assert_ptr_nonnull(strstr(err.message, "rank 0 "));
    ck_assert_ptr_nonnull(strstr(err.message, "5 bytes short"));
    loom_graph_free(g);
}
END_TEST

START_TEST(sums_layer_entries_of_a_pair)
{
    /* one rank, one pair of two layer entries: frugal bytes 10 + 5 */
    loom_graph_builder *b = loom_graph_builder_new(1);
    ck_assert_ptr_nonnull(b);
    loom_graph_stage st;
    memset(&st, 0, sizeof st);
    st.kind = LOOM_STAGE_F;
    ck_assert_int_eq(loom_graph_builder_add_stage(b, &st), 0);
    st.kind = LOOM_STAGE_B;
    ck_assert_int_eq(loom_graph_builder_add_stage(b, &st), 1);
    loom_graph_builder_add_edge(b, 0, 1, 0);
    static const int64_t bytes[2][3] = {{40, 30, 10}, {50, 20, 5}};
    for (int e = 0; e < 2; e++) {
        loom_policy_option o[LOOM_POLICY_COUNT];
        memset(o, 0, sizeof o);
        for (int p = 0; p < LOOM_POLICY_COUNT; p++) {
            o[p].forward_ms = 1.0;
            o[p].backward_ms = 2.0;
            o[p].activation_bytes = bytes[e][p < LOOM_POLICY_OFFLOAD ? p : LOOM_POLICY_NONE];
        }
        loom_graph_builder_add_entry(b, 0, o);
    }
    loom_stage_graph *g = NULL;
    loom_error berr = {0, ""};
    ck_assert_msg(loom_graph_builder_finish(b, &g, &berr) == LOOM_OK, "%s", berr.message);
    loom_graph_builder_free(b);
    loom_graph_apply_policies(g);
    g->static_bytes[0] = 100;
    uint8_t pol[2];
    loom_error err = {0, ""};
    g->memory_cap_bytes = 115.0;
    ck_assert_int_eq(tune(g, pol, 2, 1, &err), LOOM_OK);
    ck_assert_int_eq(pol[0], POLICY);
    ck_assert_int_eq(pol[1], POLICY);
    g->memory_cap_bytes = 114.0;
    ck_assert_int_eq(tune(g, pol, 2, 1, &err), LOOM_EINFEASIBLE);
    ck_assert_ptr_nonnull(strstr(err.message, "largest activation 15 bytes"));
    ck_assert_ptr_nonnull(strstr(err.message, "1 bytes short"));
    loom_graph_free(g);
}
END_TEST

START_TEST(manifest_matches_binary)
{
    const loom_plugin_info *info = STATIC_INFO();
    ck_assert_int_eq(info->struct_size, sizeof(loom_plugin_info));
    ck_assert_int_eq(info->abi_version, LOOM_ABI_VERSION);
    cJSON *m = loom_test_json(loom_test_src("plugins/" NAME "/manifest.json"));
    ck_assert_str_eq(cJSON_GetObjectItem(m, "id")->valuestring, info->id);
    ck_assert_str_eq(cJSON_GetObjectItem(m, "id")->valuestring, "org.loom." NAME);
    ck_assert_str_eq(cJSON_GetObjectItem(m, "version")->valuestring, info->version);
    ck_assert_str_eq(cJSON_GetObjectItem(m, "binary")->valuestring, "loom-" NAME ".so");
    const cJSON *prov = cJSON_GetObjectItem(m, "provides");
    ck_assert_str_eq(cJSON_GetObjectItem(prov, "role")->valuestring,
                     LOOM_ROLE_MEMORY_TUNER);
    ck_assert_str_eq(cJSON_GetObjectItem(prov, "name")->valuestring, NAME);
    cJSON_Delete(m);
}
END_TEST

/* The memory tuner suite. */
static Suite *suite(void)
{
    Suite *s = suite_create(NAME);
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, sets_every_entry);
    tcase_add_test(tc, cap_reachable);
    tcase_add_test(tc, cap_unreachable_names_rank_and_bytes);
    tcase_add_test(tc, uses_most_frugal_option);
    tcase_add_test(tc, sums_layer_entries_of_a_pair);
    tcase_add_test(tc, manifest_matches_binary);
    suite_add_tcase(s, tc);
    return s;
}

/* Runs the suite; exits non-zero when a check fails. */
int main(void)
{
    return loom_test_main(suite());
}

#endif
