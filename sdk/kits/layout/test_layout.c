/* test_layout.c - the layout kit (<loom/kits/layout.h>) on its own: a
 * layer split across module boundaries (an empty module skipped), a
 * single-module flow, the room and layer-count errors, and samples to
 * microbatches (even split, the workload's packing, and its errors). */
#include <string.h>
#include <loom/kits/layout.h>
#include <loom/mock_host.h>
#include "testutil.h"

/* vision (3 layers), an empty module, llm (5 layers). */
static const loom_module three_modules[3] = {
    {"vision", LOOM_MODULE_ENCODER, 0, 3, NULL, 1, 0, 0, 0, NULL, 0},
    {"empty", LOOM_MODULE_ENCODER, 0, 0, NULL, 1, 0, 0, 0, NULL, 0},
    {"llm", LOOM_MODULE_BACKBONE, 0, 5, NULL, 1, 0, 0, 0, NULL, 0},
};
static const loom_model model3 = {"m", 3, three_modules};

/* Room for `flows`, `positions` and `spans` and 4 microbatches of up to 8
 * samples over 3 modules. */
typedef struct room {
    loom_flow flows[2];
    loom_position positions[8];
    loom_span spans[16];
    int32_t sample_mb[3 * 8];
    int32_t subs[4];
    loom_partition part;
} room;

static void room_init(room *r, int32_t flows, int32_t positions, int32_t spans)
{
    memset(r, 0, sizeof *r);
    r->part.struct_size = sizeof r->part;
    r->part.flows = r->flows;
    r->part.cap_flows = flows;
    r->part.positions = r->positions;
    r->part.cap_positions = positions;
    r->part.spans = r->spans;
    r->part.cap_spans = spans;
    r->part.sample_mb = r->sample_mb;
    r->part.subs = r->subs;
    r->part.cap_microbatches = 4;
}

/* Asserts span i is (module, first layer, layers). */
static void span_is(const room *r, int32_t i, int32_t module, int32_t first,
                    int32_t n)
{
    ck_assert_int_eq(r->spans[i].module, module);
    ck_assert_int_eq(r->spans[i].first_layer, first);
    ck_assert_int_eq(r->spans[i].n_layers, n);
}

/* Two layers per position, position s on rank s % 2: position 1 ends the
 * vision module and starts the llm (the empty module in between is
 * skipped). */
START_TEST(split_by_hand)
{
    loom_mock_host *h = loom_mock_host_new();
    const loom_host_api *host = loom_mock_host_api(h);
    room r;
    room_init(&r, 1, 8, 16);
    loom_error err = {0};
    const int32_t sizes[4] = {2, 2, 2, 2};
    ck_assert_int_eq(loom_lk_layout(host, "t", &model3, 2, 4, sizes, &r.part, &err),
                     LOOM_OK);
    ck_assert_int_eq(r.part.n_flows, 1);
    ck_assert_int_eq(r.part.n_positions, 4);
    ck_assert_int_eq(r.part.n_spans, 5);
    ck_assert_int_eq(r.part.n_ranks, 2);
    ck_assert_int_eq(r.flows[0].pos_off, 0);
    ck_assert_int_eq(r.flows[0].n_pos, 4);
    ck_assert_int_eq(r.flows[0].module, -1); /* mixed */
    ck_assert_int_eq(r.flows[0].segments, 2);
    ck_assert_int_eq(r.flows[0].n_inputs, 0);
    const int32_t rank[4] = {0, 1, 0, 1}, off[4] = {0, 1, 3, 4}, n[4] = {1, 2, 1, 1};
    for (int s = 0; s < 4; s++) {
        ck_assert_int_eq(r.positions[s].rank, rank[s]);
        ck_assert_int_eq(r.positions[s].span_off, off[s]);
        ck_assert_int_eq(r.positions[s].n_spans, n[s]);
    }
    span_is(&r, 0, 0, 0, 2);
    span_is(&r, 1, 0, 2, 1);
    span_is(&r, 2, 2, 0, 1);
    span_is(&r, 3, 2, 1, 2);
    span_is(&r, 4, 2, 3, 2);

    /* one module with layers: the flow is that module's */
    static const loom_module llm_only[1] = {
        {"llm", LOOM_MODULE_BACKBONE, 0, 5, NULL, 1, 0, 0, 0, NULL, 0}};
    const loom_model one = {"m", 1, llm_only};
    const int32_t two[2] = {3, 2};
    ck_assert_int_eq(loom_lk_layout(host, "t", &one, 2, 2, two, &r.part, &err),
                     LOOM_OK);
    ck_assert_int_eq(r.flows[0].module, 0);
    ck_assert_int_eq(r.flows[0].segments, 1);
    ck_assert_int_eq(r.part.n_spans, 2);
    span_is(&r, 0, 0, 0, 3);
    span_is(&r, 1, 0, 3, 2);
    loom_mock_host_free(h);
}
END_TEST

START_TEST(layout_errors)
{
    loom_mock_host *h = loom_mock_host_new();
    const loom_host_api *host = loom_mock_host_api(h);
    room r;
    loom_error err = {0};
    const int32_t sizes[4] = {2, 2, 2, 2}, big[4] = {4, 4, 4, 4};
    room_init(&r, 1, 3, 16);
    ck_assert_int_eq(loom_lk_layout(host, "t", &model3, 2, 4, sizes, &r.part, &err),
                     LOOM_EINVAL);
    ck_assert_str_eq(err.message, "t: candidate has room for 1 flows and 3 "
                                  "positions, need 1 and 4");
    room_init(&r, 1, 8, 2);
    ck_assert_int_eq(loom_lk_layout(host, "t", &model3, 2, 4, sizes, &r.part, &err),
                     LOOM_EINVAL);
    ck_assert_str_eq(err.message, "t: candidate has room for 2 spans, position 1 "
                                  "needs more");
    room_init(&r, 1, 8, 16);
    ck_assert_int_eq(loom_lk_layout(host, "t", &model3, 2, 4, big, &r.part, &err),
                     LOOM_EINVAL);
    ck_assert_str_eq(err.message, "t: position 2 asks for more layers than the "
                                  "model has");
    loom_mock_host_free(h);
}
END_TEST

START_TEST(samples_to_microbatches)
{
    loom_mock_host *h = loom_mock_host_new();
    const loom_host_api *host = loom_mock_host_api(h);
    room r;
    room_init(&r, 1, 8, 16);
    loom_error err = {0};
    loom_sample samples[5];
    memset(samples, 0, sizeof samples);
    for (int i = 0; i < 5; i++)
        samples[i].microbatch = -1;
    loom_iteration it = {7, 5, samples};
    /* sample i -> i * 2 / 5, for every module */
    ck_assert_int_eq(loom_lk_assign_samples(host, "t", &model3, &it, 2, &r.part, &err),
                     LOOM_OK);
    const int32_t even[5] = {0, 0, 0, 1, 1};
    for (int m = 0; m < 3; m++)
        ck_assert_mem_eq(&r.sample_mb[m * 5], even, sizeof even);
    ck_assert_int_eq(r.part.n_microbatches, 2);
    ck_assert_int_eq(r.part.n_samples, 5);
    ck_assert_int_eq(r.part.n_modules, 3);
    ck_assert_int_eq(r.subs[0], 1);
    ck_assert_int_eq(r.subs[1], 1);

    /* the workload's packing where a sample names one */
    samples[0].microbatch = 1;
    samples[4].microbatch = 0;
    ck_assert_int_eq(loom_lk_assign_samples(host, "t", &model3, &it, 2, &r.part, &err),
                     LOOM_OK);
    const int32_t packed[5] = {1, 0, 0, 1, 0};
    ck_assert_mem_eq(&r.sample_mb[5], packed, sizeof packed);

    samples[2].microbatch = 2;
    ck_assert_int_eq(loom_lk_assign_samples(host, "t", &model3, &it, 2, &r.part, &err),
                     LOOM_EINVAL);
    ck_assert_str_eq(err.message, "iteration 7: samples[2].microbatch: expected "
                                  "< 2 (parallel.microbatches), found 2");
    r.part.cap_microbatches = 1;
    ck_assert_int_eq(loom_lk_assign_samples(host, "t", &model3, &it, 2, &r.part, &err),
                     LOOM_EINVAL);
    ck_assert_str_eq(err.message, "t: candidate has room for 1 microbatches, "
                                  "parallel.microbatches is 2");
    loom_mock_host_free(h);
}
END_TEST

/* The virtual-stage counts of a vpp sweep: 1, then every V whose pp * V
 * chunks divide the layers, when microbatches % pp == 0. */
START_TEST(vpp_options)
{
    int32_t v[8];
    ck_assert_int_eq(loom_lk_vpp_options(48, 4, 8, v, 8), 6); /* 1, 2, 3, 4, 6, 12 */
    ck_assert_int_eq(v[0], 1);
    ck_assert_int_eq(v[1], 2);
    ck_assert_int_eq(v[2], 3);
    ck_assert_int_eq(v[3], 4);
    ck_assert_int_eq(v[4], 6);
    ck_assert_int_eq(v[5], 12);
    ck_assert_int_eq(loom_lk_vpp_options(60, 4, 16, v, 8), 4); /* t2v-s: 1, 3, 5, 15 */
    ck_assert_int_eq(v[1], 3);
    ck_assert_int_eq(v[3], 15);
    ck_assert_int_eq(loom_lk_vpp_options(64, 8, 8, v, 8), 4); /* up to 8 x 8 = 64 */
    ck_assert_int_eq(v[3], 8);
    ck_assert_int_eq(loom_lk_vpp_options(64, 8, 8, v, 2), 2); /* cap */
    ck_assert_int_eq(loom_lk_vpp_options(48, 4, 6, v, 8), 1); /* 6 % 4 != 0 */
    ck_assert_int_eq(loom_lk_vpp_options(95, 4, 16, v, 8), 1); /* vlm-s: 95 layers */
    ck_assert_int_eq(loom_lk_vpp_options(3, 4, 8, v, 8), 0);  /* fewer layers than ranks */
    ck_assert_int_eq(loom_lk_vpp_options(48, 0, 8, v, 8), 0);
}
END_TEST

START_TEST(vpp_candidates)
{
    loom_layer layer = {16, 64, 2, 2, 0, 0, 0, 0};
    loom_layer layers[48];
    for (int i = 0; i < 48; i++)
        layers[i] = layer;
    loom_module mods[2] = {
        {"a", LOOM_MODULE_ENCODER, LOOM_MODALITY_IMAGE, 16, layers, 1, 0, 0, 0, NULL, 0},
        {"b", LOOM_MODULE_BACKBONE, LOOM_MODALITY_TEXT, 32, layers, 1, 0, 0, 0, NULL, 0}};
    loom_model model = {"m", 2, mods};
    loom_problem pb;
    memset(&pb, 0, sizeof pb);
    pb.model = &model;
    pb.parallel = (loom_parallel){1, 4, 1, 3, 8, 1};
    int32_t v[8];
    /* without the sweep: parallel.vpp alone, 1 when unset */
    ck_assert_int_eq(loom_lk_vpp_candidates(&pb, 0, v, 8), 1);
    ck_assert_int_eq(v[0], 3);
    pb.parallel.vpp = 0;
    ck_assert_int_eq(loom_lk_vpp_candidates(&pb, 0, v, 8), 1);
    ck_assert_int_eq(v[0], 1);
    /* with it: the 48 layers of both modules at pp 4 give 1, 2, 3, 4, 6, 12 */
    ck_assert_int_eq(loom_lk_vpp_candidates(&pb, 1, v, 8), 6);
    ck_assert_int_eq(v[2], 3);
    /* fewer layers than ranks: vpp 1, whose partition reports the error */
    pb.parallel.pp = 64;
    ck_assert_int_eq(loom_lk_vpp_candidates(&pb, 1, v, 8), 1);
    ck_assert_int_eq(v[0], 1);
}
END_TEST

/* The suite: every test in one case. */
static Suite *suite(void)
{
    Suite *s = suite_create("kit-layout");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, split_by_hand);
    tcase_add_test(tc, layout_errors);
    tcase_add_test(tc, samples_to_microbatches);
    tcase_add_test(tc, vpp_options);
    tcase_add_test(tc, vpp_candidates);
    suite_add_tcase(s, tc);
    return s;
}

/* Runs the suite. */
int main(void)
{
    return loom_test_main(suite());
}
