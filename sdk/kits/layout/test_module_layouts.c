/* test_module_layouts.c - loom_lk_module_layouts: one flow per module on
 * the ranks of its GPU set (the top-level layout's first, then each
 * disjoint module's share, a module colocated with a disjoint one on that
 * module's ranks), the layouts copied into the partition, the share's
 * rounding, and the errors. */
#include <string.h>
#include <loom/kits/layout.h>
#include <loom/mock_host.h>
#include "testutil.h"

static const int32_t from_enc[1] = {0}, from_llm[1] = {1};
/* enc (4 layers) -> llm (8 layers, backbone) -> gen (2 layers). */
static const loom_module mods[3] = {
    {"enc", LOOM_MODULE_ENCODER, 0, 4, NULL, 1, 0, 0, 0, NULL, 0},
    {"llm", LOOM_MODULE_BACKBONE, 0, 8, NULL, 1, 0, 0, 1, from_enc, 0},
    {"gen", LOOM_MODULE_DECODER, 0, 2, NULL, 1, 0, 0, 1, from_llm, 0},
};
static const loom_model model = {"m", 3, mods};

typedef struct room {
    loom_flow flows[4];
    loom_position positions[16];
    loom_span spans[16];
    int32_t subs[4 * 4];
    loom_module_layout layouts[3];
    loom_partition part;
} room;

static void room_init(room *r, int32_t positions)
{
    memset(r, 0, sizeof *r);
    r->part.struct_size = sizeof r->part;
    r->part.flows = r->flows;
    r->part.cap_flows = 4;
    r->part.positions = r->positions;
    r->part.cap_positions = positions;
    r->part.spans = r->spans;
    r->part.cap_spans = 16;
    r->part.subs = r->subs;
    r->part.cap_microbatches = 4;
    r->part.n_modules = 3;
    r->part.layouts = r->layouts;
    r->part.cap_layouts = 3;
}

static loom_module_layout lay(int32_t tp, int32_t pp, int32_t dp, int32_t placement,
                              int32_t with)
{
    loom_module_layout l = {(uint32_t)sizeof l, tp, 1, pp, dp, placement, with, 0, 0, 1};
    return l;
}

START_TEST(sets_and_flows)
{
    loom_mock_host *h = loom_mock_host_new();
    const loom_host_api *host = loom_mock_host_api(h);
    loom_problem pb;
    memset(&pb, 0, sizeof pb);
    pb.struct_size = sizeof pb;
    pb.kind = LOOM_PROBLEM_MODEL;
    pb.model = &model;
    pb.parallel = (loom_parallel){2, 3, 2, 1, 4, 0}; /* overridden by the TOP entry */
    loom_module_layout l[3] = {lay(1, 2, 2, LOOM_LAYOUT_DISJOINT, -1),
                               lay(4, 4, 2, LOOM_LAYOUT_TOP, -1),
                               lay(2, 1, 2, LOOM_LAYOUT_COLOCATED, 0)};
    l[1].listed = 0;
    room r;
    room_init(&r, 16);
    loom_lk_module_place places[3];
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_lk_module_layouts(host, "t", &pb, l, NULL, 4, &r.part, places, &err),
                     LOOM_OK);
    /* llm: ranks 0-3 (top-level pp 4); enc: share 2 * 2 / 2 = 2 ranks
     * after them; gen on enc's ranks, 2 positions (its 2 layers) */
    ck_assert_int_eq(r.part.n_ranks, 6);
    ck_assert_int_eq(places[1].first_rank, 0);
    ck_assert_int_eq(places[1].n_pos, 4);
    ck_assert_int_eq(places[1].set, -1);
    ck_assert_int_eq(places[0].first_rank, 4);
    ck_assert_int_eq(places[0].n_pos, 2);
    ck_assert_int_eq(places[0].set, 0);
    ck_assert_int_eq(places[2].first_rank, 4);
    ck_assert_int_eq(places[2].n_pos, 2);
    ck_assert_int_eq(places[2].set, 0);
    ck_assert_int_eq(r.part.n_flows, 3);
    ck_assert_int_eq(r.flows[0].module, 0);
    ck_assert_int_eq(r.flows[1].n_inputs, 1);
    ck_assert_int_eq(r.flows[1].inputs[0], 0);
    ck_assert_int_eq(r.flows[2].inputs[0], 1);
    ck_assert_int_eq(r.part.n_positions, 8);
    ck_assert_int_eq(r.positions[0].rank, 4);
    ck_assert_int_eq(r.positions[2].rank, 0);
    ck_assert_int_eq(r.positions[5].rank, 3);
    ck_assert_int_eq(r.positions[7].rank, 5);
    for (int32_t i = 0; i < r.part.n_spans; i++)
        ck_assert_int_eq(r.spans[i].tp, 0);
    ck_assert_int_eq(r.spans[3].n_layers, 2); /* llm's 8 layers over 4 */
    ck_assert_int_eq(r.part.tp, 4);           /* the top-level layout's */
    ck_assert_int_eq(r.part.n_layouts, 3);
    ck_assert_int_eq(r.layouts[2].colocated_with, 0);
    ck_assert_int_eq(r.part.n_microbatches, 4);
    ck_assert_ptr_nonnull(strstr(r.part.label, "enc:t1p2d2D"));
    /* a share under one group rounds up to one rank: pp 1 x dp 1 / dp 2 */
    l[0].pp = 1;
    l[0].dp = 1;
    ck_assert_int_eq(loom_lk_module_layouts(host, "t", &pb, l, NULL, 4, &r.part, places, &err),
                     LOOM_OK);
    ck_assert_int_eq(places[0].n_pos, 1);
    ck_assert_int_eq(r.part.n_ranks, 5);
    /* errors */
    ck_assert_int_eq(loom_lk_module_layouts(host, "t", &pb, NULL, NULL, 4, &r.part, NULL, &err),
                     LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "t: expected a model problem"));
    room_init(&r, 4);
    ck_assert_int_eq(loom_lk_module_layouts(host, "t", &pb, l, NULL, 4, &r.part, NULL, &err),
                     LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "t: candidate has room for 4 flows, 4 positions"));
    loom_mock_host_free(h);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kit_layout_module_layouts");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, sets_and_flows);
    suite_add_tcase(s, tc);
    return loom_test_main(s);
}
