/* test_stage_times_io.c - stage-times problems: the example oracles,
 * broadcasting and defaults, and every error path. */
#include <string.h>
#include <loom/sys/problem.h>
#include <loom/kits/graph.h>
#include "problem_inputs.h"
#include "testutil.h"

/* Loads a stage-times file that must load. */
static loom_stage_times_data *must_load(const char *path)
{
    loom_error e;
    loom_stage_times_data *s = NULL;
    memset(&e, 0, sizeof e);
    int rc = loom_stage_times_load(path, &s, &e);
    ck_assert_msg(rc == LOOM_OK, "%s: %s", path, e.message);
    return s;
}

/* Asserts that `json` fails with EINVAL naming the file and `frag`. */
static void expect_error(const char *json, const char *frag)
{
    loom_error e;
    loom_stage_times_data *s = NULL;
    memset(&e, 0, sizeof e);
    int rc = loom_stage_times_load(loom_test_tmpfile(".json", json), &s, &e);
    ck_assert_int_eq(rc, LOOM_EINVAL);
    ck_assert_ptr_null(s);
    ck_assert_msg(strstr(e.message, frag) != NULL, "message \"%s\" lacks \"%s\"", e.message,
                  frag);
    ck_assert_msg(strstr(e.message, "/tmp/loom-test-") != NULL, "message \"%s\" lacks the file",
                  e.message);
}

START_TEST(test_oracle_1f1b)
{
    loom_stage_times_data *d = must_load(loom_test_src("examples/stage-times/oracle-1f1b.json"));
    const loom_stage_times *s = loom_stage_times_data_get(d);
    ck_assert_int_eq(s->ranks, 4);
    ck_assert_int_eq(s->microbatches, 8);
    ck_assert_int_eq(s->virtual_stages, 1);
    ck_assert_int_eq(s->split_backward, 0);
    ck_assert_ptr_null(s->input_grad_ms);
    ck_assert_ptr_null(s->weight_grad_ms);
    for (int i = 0; i < 4; i++) {
        ck_assert_double_eq(s->forward_ms[i], 1.0);
        ck_assert_double_eq(s->backward_ms[i], 2.0);
        ck_assert_double_eq(s->activation_bytes[i], 1.0); /* default */
    }
    for (int m = 0; m < 8; m++)
        ck_assert_double_eq(s->microbatch_scale[m], 1.0); /* default */
    ck_assert_double_eq(s->p2p_ms, 0.0);
    ck_assert_double_eq(s->memory_cap_bytes, 0.0);
    loom_stage_times_data_free(d);
}
END_TEST

START_TEST(test_oracle_zb)
{
    loom_stage_times_data *d = must_load(loom_test_src("examples/stage-times/oracle-zb.json"));
    const loom_stage_times *s = loom_stage_times_data_get(d);
    ck_assert_int_eq(s->ranks, 4);
    ck_assert_int_eq(s->microbatches, 8);
    ck_assert_int_eq(s->split_backward, 1);
    ck_assert_ptr_null(s->backward_ms);
    for (int i = 0; i < 4; i++) {
        ck_assert_double_eq(s->forward_ms[i], 1.0);
        ck_assert_double_eq(s->input_grad_ms[i], 1.0);
        ck_assert_double_eq(s->weight_grad_ms[i], 1.0);
        ck_assert_double_eq(s->activation_bytes[i], 1.0);
    }
    ck_assert_double_eq(s->memory_cap_bytes, 4.0);
    loom_stage_times_data_free(d);
}
END_TEST

START_TEST(test_interleaved_v2)
{
    loom_stage_times_data *d = must_load(loom_test_src("examples/stage-times/interleaved-v2.json"));
    const loom_stage_times *s = loom_stage_times_data_get(d);
    ck_assert_int_eq(s->ranks, 4);
    ck_assert_int_eq(s->virtual_stages, 2);
    ck_assert_double_eq(s->forward_ms[1], 1.2);
    ck_assert_double_eq(s->forward_ms[7], 1.1);
    ck_assert_double_eq(s->backward_ms[6], 1.8);
    ck_assert_double_eq(s->microbatch_scale[4], 2.0);
    ck_assert_double_eq(s->microbatch_scale[6], 0.75);
    ck_assert_double_eq(s->activation_bytes[0], 4.0e8);
    ck_assert_double_eq(s->activation_bytes[5], 3.0e8);
    ck_assert_double_eq(s->p2p_ms, 0.05);
    ck_assert_double_eq(s->memory_cap_bytes, 6.0e9);
    loom_stage_times_data_free(d);
}
END_TEST

#define HEAD "{\"kind\": \"stage-times\", \"ranks\": 2, \"microbatches\": 3, "

START_TEST(test_broadcast_and_arrays)
{
    loom_stage_times_data *d = must_load(loom_test_tmpfile(".json",
        HEAD "\"virtual_stages\": 2, \"forward_ms\": [1, 2, 3, 4], \"input_grad_ms\": 0.5, "
        "\"weight_grad_ms\": [0, 0.25, 0, 0.25], \"microbatch_scale\": [1, 2, 0.5], "
        "\"activation_bytes\": 7}"));
    const loom_stage_times *s = loom_stage_times_data_get(d);
    ck_assert_int_eq(s->split_backward, 1);
    ck_assert_double_eq(s->forward_ms[3], 4.0);
    for (int i = 0; i < 4; i++) {
        ck_assert_double_eq(s->input_grad_ms[i], 0.5);
        ck_assert_double_eq(s->activation_bytes[i], 7.0);
    }
    ck_assert_double_eq(s->weight_grad_ms[1], 0.25);
    ck_assert_double_eq(s->microbatch_scale[2], 0.5);
    loom_stage_times_data_free(d);
}
END_TEST

START_TEST(test_errors)
{
    expect_error("{\"ranks\": 2}", "kind: expected a string, found nothing (missing field)");
    expect_error("{\"kind\": \"model\"}", "kind: expected \"stage-times\", found \"model\"");
    expect_error(HEAD "\"forward_ms\": 1, \"backward_ms\": 1, \"extra\": 1}",
                 "unknown field \"extra\"");
    expect_error("{\"kind\": \"stage-times\", \"ranks\": 0}",
                 "ranks: expected an integer in [1, 4096], found 0");
    expect_error("{\"kind\": \"stage-times\", \"ranks\": 2}",
                 "microbatches: expected an integer in [1, 65536], found nothing");
    expect_error("{\"kind\": \"stage-times\", \"ranks\": 64, \"microbatches\": 1, "
                 "\"virtual_stages\": 65}",
                 "virtual_stages: expected ranks*virtual_stages <= 4096, found 64*65 = 4160");
    expect_error(HEAD "\"backward_ms\": 1}",
                 "forward_ms: expected an array of 2 entries (ranks*virtual_stages) or a single "
                 "number, found nothing (missing field)");
    expect_error(HEAD "\"forward_ms\": [1, 2, 3], \"backward_ms\": 1}",
                 "forward_ms: expected an array of 2 entries (ranks*virtual_stages) or a single "
                 "number, found 3 entries");
    expect_error(HEAD "\"forward_ms\": \"fast\", \"backward_ms\": 1}",
                 "forward_ms: expected an array of 2 entries (ranks*virtual_stages) or a single "
                 "number, found \"fast\"");
    expect_error(HEAD "\"forward_ms\": [1, -1], \"backward_ms\": 1}",
                 "forward_ms[1]: expected a number of milliseconds in [0, 1e+09], found -1");
    expect_error(HEAD "\"forward_ms\": [1, \"a\"], \"backward_ms\": 1}",
                 "forward_ms[1]: expected a number of milliseconds in [0, 1e+09], found \"a\"");
    expect_error(HEAD "\"forward_ms\": -2, \"backward_ms\": 1}",
                 "forward_ms: expected a number of milliseconds in [0, 1e+09], found -2");
    expect_error(HEAD "\"forward_ms\": [1, 1e999], \"backward_ms\": 1}",
                 "forward_ms[1]: expected a finite number");
    expect_error(HEAD "\"forward_ms\": 1}",
                 "backward_ms: expected backward_ms or input_grad_ms + weight_grad_ms, found "
                 "nothing (missing field)");
    expect_error(HEAD "\"forward_ms\": 1, \"backward_ms\": 2, \"input_grad_ms\": 1, "
                 "\"weight_grad_ms\": 1}",
                 "input_grad_ms: expected either backward_ms or input_grad_ms + weight_grad_ms, "
                 "found both");
    expect_error(HEAD "\"forward_ms\": 1, \"input_grad_ms\": 1}",
                 "weight_grad_ms: expected it together with input_grad_ms, found nothing");
    expect_error(HEAD "\"forward_ms\": 1, \"weight_grad_ms\": 1}",
                 "input_grad_ms: expected it together with weight_grad_ms, found nothing");
    expect_error(HEAD "\"forward_ms\": 1, \"input_grad_ms\": 1, \"weight_grad_ms\": [1]}",
                 "weight_grad_ms: expected an array of 2 entries (ranks*virtual_stages) or a "
                 "single number, found 1 entry");
    expect_error(HEAD "\"forward_ms\": 1, \"backward_ms\": 1, \"microbatch_scale\": [1, 1]}",
                 "microbatch_scale: expected an array of 3 entries (microbatches), found 2 entries");
    expect_error(HEAD "\"forward_ms\": 1, \"backward_ms\": 1, \"microbatch_scale\": 2}",
                 "microbatch_scale: expected an array of 3 entries (microbatches), found 2");
    expect_error(HEAD "\"forward_ms\": 1, \"backward_ms\": 1, \"microbatch_scale\": [1, 0, 1]}",
                 "microbatch_scale[1]: expected a scale factor in (0, 1e+06], found 0");
    expect_error(HEAD "\"forward_ms\": 1, \"backward_ms\": 1, \"activation_bytes\": [1, -3]}",
                 "activation_bytes[1]: expected a number of bytes in [0, 1e+18], found -3");
    expect_error(HEAD "\"forward_ms\": 1, \"backward_ms\": 1, \"p2p_ms\": \"x\"}",
                 "p2p_ms: expected a number in [0, 1000000000], found \"x\"");
    expect_error(HEAD "\"forward_ms\": 1, \"backward_ms\": 1, \"memory_cap_bytes\": -1}",
                 "memory_cap_bytes: expected a number in [0, 1e+18], found -1");
}
END_TEST

/* p2p_ms as an array: entry s times every transfer out of stage s, the
 * forward output to s + 1 and the input gradient to s - 1. */
START_TEST(test_per_stage_p2p)
{
    loom_stage_times_data *d = must_load(loom_test_tmpfile(".json",
        "{\"kind\": \"stage-times\", \"ranks\": 3, \"microbatches\": 2, "
        "\"forward_ms\": 1, \"backward_ms\": 2, \"p2p_ms\": [0.5, 0.25, 0.125]}"));
    const loom_stage_times *s = loom_stage_times_data_get(d);
    ck_assert_ptr_nonnull(s->p2p_stage_ms);
    ck_assert_double_eq(s->p2p_ms, 0.0);
    ck_assert_double_eq(s->p2p_stage_ms[2], 0.125);
    loom_stage_graph *g = NULL;
    loom_error e = {0};
    ck_assert_int_eq(loom_graph_from_stage_times(s, 0, &g, &e), LOOM_OK);
    int checked = 0;
    for (int32_t v = 0; v < g->n_stages; v++)
        for (int32_t k = g->pred_off[v]; k < g->pred_off[v + 1]; k++) {
            int32_t u = g->pred[k];
            if (g->kind[u] != g->kind[v]) /* F -> B on the last stage */
                continue;
            int32_t from = g->position[u];
            double want = s->p2p_stage_ms[from];
            ck_assert_double_eq(g->pred_p2p_ms[k], want);
            ck_assert_int_eq(g->position[v], from + (g->kind[v] == LOOM_STAGE_F ? 1 : -1));
            checked++;
        }
    ck_assert_int_eq(checked, 2 * 2 * 2); /* 2 microbatches x 2 links x F, B */
    loom_graph_free(g);
    loom_stage_times_data_free(d);
    expect_error("{\"kind\": \"stage-times\", \"ranks\": 2, \"microbatches\": 1, "
                 "\"forward_ms\": 1, \"backward_ms\": 1, \"p2p_ms\": [1, 2, 3]}",
                 "p2p_ms: expected an array of 2 entries (ranks*virtual_stages) or a single "
                 "number, found 3 entries");
    expect_error("{\"kind\": \"stage-times\", \"ranks\": 2, \"microbatches\": 1, "
                 "\"forward_ms\": 1, \"backward_ms\": 1, \"p2p_ms\": [1, -2]}",
                 "p2p_ms[1]: expected a number of milliseconds in [0, 1e+09], found -2");
}
END_TEST

START_TEST(test_placement)
{
    /* examples/stage-times/oracle-zbv.json: the V placement of 4 ranks */
    loom_stage_times_data *d = must_load(loom_test_src("examples/stage-times/oracle-zbv.json"));
    const loom_stage_times *s = loom_stage_times_data_get(d);
    static const int32_t v[8] = {0, 1, 2, 3, 3, 2, 1, 0};
    ck_assert_ptr_nonnull(s->stage_rank);
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(s->stage_rank[i], v[i]);
    ck_assert_ptr_null(s->weight_grad_bytes);
    loom_stage_times_data_free(d);
    /* zigzag over three chunks, an explicit map, loop (NULL), held bytes */
    d = must_load(loom_test_tmpfile(".json",
        "{\"kind\": \"stage-times\", \"ranks\": 2, \"microbatches\": 2, "
        "\"virtual_stages\": 3, \"placement\": \"zigzag\", \"forward_ms\": 1, "
        "\"backward_ms\": 2}"));
    s = loom_stage_times_data_get(d);
    static const int32_t z[6] = {0, 1, 1, 0, 0, 1};
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(s->stage_rank[i], z[i]);
    loom_stage_times_data_free(d);
    d = must_load(loom_test_tmpfile(".json",
        "{\"kind\": \"stage-times\", \"ranks\": 2, \"microbatches\": 2, "
        "\"virtual_stages\": 2, \"placement\": [1, 0, 0, 1], \"forward_ms\": 1, "
        "\"input_grad_ms\": 1, \"weight_grad_ms\": 1, \"activation_bytes\": 4, "
        "\"weight_grad_bytes\": [1, 2, 3, 4]}"));
    s = loom_stage_times_data_get(d);
    static const int32_t x[4] = {1, 0, 0, 1};
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(s->stage_rank[i], x[i]);
        ck_assert_double_eq(s->weight_grad_bytes[i], i + 1);
    }
    loom_stage_times_data_free(d);
    d = must_load(loom_test_tmpfile(".json",
        "{\"kind\": \"stage-times\", \"ranks\": 2, \"microbatches\": 2, "
        "\"placement\": \"loop\", \"forward_ms\": 1, \"backward_ms\": 2}"));
    ck_assert_ptr_null(loom_stage_times_data_get(d)->stage_rank);
    loom_stage_times_data_free(d);
    expect_error("{\"kind\": \"stage-times\", \"ranks\": 2, \"microbatches\": 2, "
                 "\"placement\": [0, 1.5], \"forward_ms\": 1, \"backward_ms\": 2}",
                 "placement[1]: expected a rank in 0..1, found 1.5");
    /* a rank past int32 is refused, not cast */
    expect_error("{\"kind\": \"stage-times\", \"ranks\": 2, \"microbatches\": 2, "
                 "\"placement\": [0, 1e72], \"forward_ms\": 1, \"backward_ms\": 2}",
                 "placement[1]: expected a rank in 0..1, found 1e+72");
    expect_error("{\"kind\": \"stage-times\", \"ranks\": 2, \"microbatches\": 2, "
                 "\"placement\": 3, \"forward_ms\": 1, \"backward_ms\": 2}",
                 "placement: expected \"loop\", \"v\", \"zigzag\" or an array of 2 ranks");
}
END_TEST

START_TEST(test_missing_file)
{
    loom_error e;
    loom_stage_times_data *s = NULL;
    memset(&e, 0, sizeof e);
    ck_assert_int_eq(loom_stage_times_load("/nonexistent/st.json", &s, &e), LOOM_EIO);
    ck_assert_ptr_nonnull(strstr(e.message, "/nonexistent/st.json: cannot open"));
}
END_TEST

/* Builds the suite. */
static Suite *stage_times_io_suite(void)
{
    Suite *s = suite_create("stage_times_io");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_oracle_1f1b);
    tcase_add_test(tc, test_oracle_zb);
    tcase_add_test(tc, test_interleaved_v2);
    tcase_add_test(tc, test_broadcast_and_arrays);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_per_stage_p2p);
    tcase_add_test(tc, test_missing_file);
    tcase_add_test(tc, test_placement);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(stage_times_io_suite());
}
