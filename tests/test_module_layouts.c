/* test_module_layouts.c - per-module layouts: parallel.modules in
 * model.json and in a --parallel JSON file, their resolution into one
 * loom_module_layout per module (GPU sets), every error they can raise,
 * the SDK accessor's size check, and planning with them: a module is
 * costed at its own TP, and listing a module at the top-level layout plans
 * exactly as the single-layout problem. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <loom/sys/problem.h>
#include <loom/sys/session.h>
#include <loom/cost_model.h>
#include "problem_inputs.h"
#include "testutil.h"
#include "run_priv.h"

/* vit (16 heads, 24 layers) -> llm (32 heads, 32 layers), parallel object
 * text `par` spliced in. */
static const char *model_json(const char *par)
{
    static char buf[4096];
    snprintf(buf, sizeof buf,
             "{\"name\": \"m\", \"parallel\": %s, \"modules\": ["
             "{\"name\": \"vit\", \"kind\": \"encoder\", \"modality\": \"image\", "
             "\"tokens_per_item\": 169, \"layers\": {\"count\": 24, \"hidden\": 1024, "
             "\"ffn_hidden\": 4096, \"heads\": 16}},"
             "{\"name\": \"llm\", \"kind\": \"backbone\", \"modality\": \"text\", "
             "\"inputs\": [\"vit\"], \"vocab\": 32000, \"layers\": {\"count\": 32, "
             "\"hidden\": 4096, \"ffn_hidden\": 11008, \"heads\": 32}}]}",
             par);
    return buf;
}

/* Loads the model with parallel object `par`; returns the status (message
 * in *e) and the model in *out (NULL on failure). */
static int load(const char *par, loom_model_data **out, loom_error *e)
{
    memset(e, 0, sizeof *e);
    *out = NULL;
    return loom_model_load(loom_test_tmpfile(".json", model_json(par)), out, e);
}

/* Asserts that parallel object `par` fails with EINVAL naming `frag`. */
static void expect_error(const char *par, const char *frag)
{
    loom_model_data *m = NULL;
    loom_error e;
    ck_assert_int_eq(load(par, &m, &e), LOOM_EINVAL);
    ck_assert_ptr_null(m);
    ck_assert_msg(strstr(e.message, frag) != NULL, "message \"%s\" lacks \"%s\"", e.message,
                  frag);
    ck_assert_msg(strstr(e.message, "/tmp/loom-test-") != NULL, "message \"%s\" lacks the file",
                  e.message);
}

/* Resolves the model's layouts against its own parallel config. */
static loom_module_layout *resolve(const loom_model_data *m, int32_t *gpus)
{
    loom_module_layout *l = NULL;
    loom_error e = {0, ""};
    int rc = loom_module_layouts_resolve(loom_model_data_layouts(m), loom_model_data_parallel(m),
                                         loom_model_data_model(m), &l, gpus, &e);
    ck_assert_msg(rc == LOOM_OK, "%s", e.message);
    return l;
}

START_TEST(disjoint_layout_gets_its_own_gpus)
{
    loom_model_data *m = NULL;
    loom_error e;
    ck_assert_int_eq(load("{\"tp\": 4, \"pp\": 4, \"dp\": 1, \"microbatches\": 16, \"gpus\": 20,"
                          " \"modules\": {\"vit\": {\"tp\": 1, \"pp\": 2, \"dp\": 2,"
                          " \"placement\": \"disjoint\"}}}", &m, &e), LOOM_OK);
    ck_assert_int_eq(loom_layout_spec_count(loom_model_data_layouts(m)), 1);
    int32_t gpus = 0;
    loom_module_layout *l = resolve(m, &gpus);
    ck_assert_int_eq(gpus, 20); /* 4*4*1 top-level + 1*2*2 vit */
    /* modules in model order: vit 0, llm 1 */
    ck_assert_int_eq(l[0].tp, 1);
    ck_assert_int_eq(l[0].pp, 2);
    ck_assert_int_eq(l[0].dp, 2);
    ck_assert_int_eq(l[0].cp, 1);
    ck_assert_int_eq(l[0].placement, LOOM_LAYOUT_DISJOINT);
    ck_assert_int_eq(l[0].first_gpu, 16);
    ck_assert_int_eq(l[0].gpus, 4);
    ck_assert_int_eq(l[0].listed, 1);
    ck_assert_int_eq(l[1].tp, 4);
    ck_assert_int_eq(l[1].pp, 4);
    ck_assert_int_eq(l[1].placement, LOOM_LAYOUT_TOP);
    ck_assert_int_eq(l[1].first_gpu, 0);
    ck_assert_int_eq(l[1].gpus, 16);
    ck_assert_int_eq(l[1].listed, 0);
    ck_assert_uint_eq(l[0].struct_size, sizeof(loom_module_layout));
    free(l);
    loom_model_data_free(m);
}
END_TEST

START_TEST(model_info_reports_layouts)
{
    loom_model_info mi;
    memset(&mi, 0xff, sizeof mi);
    loom_model_data_info(NULL, &mi);
    ck_assert_ptr_null(mi.model);
    ck_assert_ptr_null(mi.parallel);
    ck_assert_int_eq(mi.has_module_layouts, 0);
    loom_model_data *m = NULL;
    loom_error e;
    ck_assert_int_eq(load("{\"tp\": 4, \"pp\": 4, \"microbatches\": 16,"
                          " \"modules\": {\"vit\": {\"tp\": 1}}}", &m, &e), LOOM_OK);
    loom_model_data_info(m, &mi);
    ck_assert_ptr_eq(mi.model, loom_model_data_model(m));
    ck_assert_ptr_eq(mi.parallel, loom_model_data_parallel(m));
    ck_assert_int_eq(mi.parallel->tp, 4);
    ck_assert_int_eq(mi.parallel->microbatches, 16);
    ck_assert_int_eq(mi.has_module_layouts, 1);
    loom_model_data_free(m);
    ck_assert_int_eq(load("{\"tp\": 2, \"pp\": 4}", &m, &e), LOOM_OK);
    loom_model_data_info(m, &mi);
    ck_assert_int_eq(mi.model->n_modules, 2);
    ck_assert_int_eq(mi.parallel->tp, 2);
    ck_assert_int_eq(mi.has_module_layouts, 0);
    loom_model_data_free(m);
}
END_TEST

START_TEST(colocated_layout_fills_its_set)
{
    loom_model_data *m = NULL;
    loom_error e;
    /* dp omitted: 16 GPUs / (tp 1 * pp 4) = 4 */
    ck_assert_int_eq(load("{\"tp\": 4, \"pp\": 4, \"microbatches\": 16,"
                          " \"modules\": {\"vit\": {\"tp\": 1}}}", &m, &e), LOOM_OK);
    int32_t gpus = 0;
    loom_module_layout *l = resolve(m, &gpus);
    ck_assert_int_eq(gpus, 16);
    ck_assert_int_eq(l[0].placement, LOOM_LAYOUT_COLOCATED);
    ck_assert_int_eq(l[0].colocated_with, -1);
    ck_assert_int_eq(l[0].dp, 4);
    ck_assert_int_eq(l[0].first_gpu, 0);
    ck_assert_int_eq(l[0].gpus, 16);
    free(l);
    loom_model_data_free(m);
    /* colocated with a disjoint module: its set */
    ck_assert_int_eq(load("{\"tp\": 4, \"pp\": 2, \"microbatches\": 8, \"modules\": {"
                          "\"vit\": {\"tp\": 2, \"pp\": 2, \"dp\": 2, \"placement\": \"disjoint\"},"
                          "\"llm\": {\"tp\": 8, \"pp\": 1, \"placement\": \"colocated\","
                          " \"colocated_with\": \"vit\"}}}", &m, &e), LOOM_OK);
    l = resolve(m, &gpus);
    ck_assert_int_eq(gpus, 16);
    ck_assert_int_eq(l[1].colocated_with, 0);
    ck_assert_int_eq(l[1].first_gpu, 8);
    ck_assert_int_eq(l[1].gpus, 8);
    ck_assert_int_eq(l[1].dp, 1);
    free(l);
    loom_model_data_free(m);
}
END_TEST

START_TEST(layout_errors_name_path_and_values)
{
    expect_error("{\"tp\": 4, \"modules\": {\"vision\": {\"tp\": 1}}}",
                 "parallel.modules: expected module names of the model (vit, llm), found "
                 "\"vision\"");
    expect_error("{\"tp\": 4, \"modules\": {\"vit\": {\"tp\": 3, \"placement\": \"disjoint\"}}}",
                 "parallel.modules.vit.tp: expected a divisor of every layer's attention heads, "
                 "found 3 (module \"vit\" layer 0 has 16 heads)");
    expect_error("{\"tp\": 4, \"modules\": {\"vit\": {\"colocated_with\": \"dec\"}}}",
                 "parallel.modules.vit.colocated_with: expected another module of the model "
                 "(vit, llm), found \"dec\"");
    expect_error("{\"tp\": 4, \"modules\": {\"vit\": {\"colocated_with\": \"vit\"}}}",
                 "found \"vit\" (the module itself)");
    expect_error("{\"tp\": 4, \"modules\": {\"vit\": {\"colocated_with\": \"llm\"},"
                 " \"llm\": {\"colocated_with\": \"vit\"}}}",
                 "parallel.modules: expected colocated_with to lead to a module with its own "
                 "GPUs, found a cycle");
    expect_error("{\"tp\": 4, \"pp\": 4, \"microbatches\": 16,"
                 " \"modules\": {\"vit\": {\"tp\": 2, \"pp\": 2, \"dp\": 2}}}",
                 "parallel.modules.vit: expected tp*cp*pp*dp = 16, the GPUs of the set it is "
                 "colocated with (the top-level layout), found 2*1*2*2 = 8");
    expect_error("{\"tp\": 4, \"pp\": 4, \"microbatches\": 16, \"gpus\": 16, \"modules\": "
                 "{\"vit\": {\"tp\": 1, \"pp\": 2, \"dp\": 2, \"placement\": \"disjoint\"}}}",
                 "parallel.gpus: expected the GPUs of the layouts, 20 (top-level tp*cp*pp*dp 16 "
                 "+ 4 on disjoint modules), found 16");
    /* 65536 * 65536 GPUs: counted without overflowing int */
    expect_error("{\"tp\": 1, \"microbatches\": 65536, \"modules\": {\"vit\": {\"cp\": 65536,"
                 " \"dp\": 65536, \"placement\": \"disjoint\"}}}",
                 "parallel.modules.vit: expected at most 1048576 GPUs over every layout, found "
                 "4294967297 with this module");
    expect_error("{\"tp\": 4, \"modules\": {\"vit\": {\"pp\": 25, \"placement\": \"disjoint\"}}}",
                 "parallel.modules.vit.pp: expected at most the module's 24 layers, found 25");
    expect_error("{\"tp\": 4, \"microbatches\": 16, \"modules\": {\"vit\": {\"dp\": 3,"
                 " \"placement\": \"disjoint\"}}}",
                 "parallel.modules.vit.dp: expected a divisor of dp*microbatches = 16");
    expect_error("{\"modules\": {\"vit\": {\"placement\": \"shared\"}}}",
                 "parallel.modules.vit.placement: expected \"disjoint\" or \"colocated\", found "
                 "\"shared\"");
    expect_error("{\"modules\": {\"vit\": {\"placement\": \"disjoint\", \"colocated_with\": "
                 "\"llm\"}}}",
                 "parallel.modules.vit.colocated_with: expected no colocated_with with "
                 "placement \"disjoint\"");
    expect_error("{\"modules\": {\"vit\": {\"tp\": 0}}}", "parallel.modules.vit.tp");
    expect_error("{\"modules\": {\"vit\": 4}}",
                 "parallel.modules.vit: expected an object, found a number");
    /* the top-level tp is checked only against the modules it runs */
    expect_error("{\"tp\": 32}",
                 "parallel.tp: expected a divisor of every layer's attention heads, found 32 "
                 "(module \"vit\" layer 0 has 16 heads)");
    loom_model_data *m = NULL;
    loom_error e;
    ck_assert_int_eq(load("{\"tp\": 32, \"modules\": {\"vit\": {\"tp\": 4, \"pp\": 1,"
                          " \"placement\": \"disjoint\"}}}", &m, &e), LOOM_OK);
    loom_model_data_free(m);
}
END_TEST

START_TEST(parallel_file_and_pairs)
{
    loom_parallel p = {1, 1, 1, 1, 4, 0};
    loom_layout_spec *spec = NULL;
    loom_error e = {0, ""};
    /* key=value pairs keep working and carry no layouts */
    ck_assert_int_eq(loom_parallel_load("tp=2,pp=2,mb=8", &p, &spec, &e), LOOM_OK);
    ck_assert_ptr_null(spec);
    ck_assert_int_eq(p.tp, 2);
    ck_assert_int_eq(p.microbatches, 8);
    const char *file = loom_test_tmpfile(".json",
        "{\"tp\": 4, \"pp\": 4, \"dp\": 1, \"microbatches\": 16, \"modules\": {\"vit\":"
        " {\"tp\": 1, \"pp\": 2, \"dp\": 2, \"placement\": \"disjoint\"}}}");
    ck_assert_int_eq(loom_parallel_load(file, &p, &spec, &e), LOOM_OK);
    ck_assert_int_eq(p.tp, 4);
    ck_assert_int_eq(p.pp, 4);
    ck_assert_int_eq(p.microbatches, 16);
    ck_assert_int_eq(loom_layout_spec_count(spec), 1);
    loom_model_data *m = NULL;
    ck_assert_int_eq(loom_model_load("vlm-s", &m, &e), LOOM_OK);
    loom_module_layout *l = NULL;
    int32_t gpus = 0;
    ck_assert_int_eq(loom_module_layouts_resolve(spec, &p, loom_model_data_model(m), &l, &gpus, &e),
                     LOOM_OK);
    ck_assert_int_eq(gpus, 20);
    free(l);
    loom_layout_spec_free(spec);
    /* errors in a parallel file name the file and the path from its root */
    file = loom_test_tmpfile(".json", "{\"tp\": 4, \"modules\": {\"vit\": {\"tpp\": 1}}}");
    ck_assert_int_eq(loom_parallel_load(file, &p, &spec, &e), LOOM_EINVAL);
    ck_assert_msg(strstr(e.message, "modules.vit: unknown field \"tpp\"") &&
                  strstr(e.message, file), "%s", e.message);
    file = loom_test_tmpfile(".json", "{\"tp\": 4, \"modules\": {\"enc\": {\"tp\": 1}}}");
    ck_assert_int_eq(loom_parallel_load(file, &p, &spec, &e), LOOM_OK);
    ck_assert_int_eq(loom_module_layouts_resolve(spec, &p, loom_model_data_model(m), &l, &gpus, &e),
                     LOOM_EINVAL);
    ck_assert_msg(strstr(e.message, ": modules: expected module names of the model (vit, llm), "
                                    "found \"enc\""), "%s", e.message);
    loom_layout_spec_free(spec);
    loom_model_data_free(m);
}
END_TEST

START_TEST(accessor_checks_sizes)
{
    loom_module_layout l[2] = {{(uint32_t)sizeof l[0], 1, 1, 2, 2, 1, -1, 16, 4, 1},
                               {(uint32_t)sizeof l[0], 4, 2, 4, 1, 0, -1, 0, 32, 0}};
    loom_problem pb;
    memset(&pb, 0, sizeof pb);
    pb.struct_size = (uint32_t)sizeof pb;
    pb.parallel = (loom_parallel){4, 4, 1, 1, 16, 0};
    ck_assert_ptr_null(loom_problem_module_layout(&pb, 0)); /* single layout */
    ck_assert_int_eq(loom_problem_module_tp(&pb, 0), 4);
    pb.module_layouts = l;
    pb.n_module_layouts = 2;
    pb.module_layout_size = (uint32_t)sizeof l[0];
    ck_assert_ptr_eq(loom_problem_module_layout(&pb, 1), &l[1]);
    ck_assert_ptr_null(loom_problem_module_layout(&pb, 2));
    ck_assert_int_eq(loom_problem_module_tp(&pb, 0), 1);
    ck_assert_int_eq(loom_problem_module_cp(&pb, 1), 2);
    /* a host before Loom 0.4 (struct_size without the layouts) has none */
    pb.struct_size = (uint32_t)offsetof(loom_problem, module_layouts);
    ck_assert_ptr_null(loom_problem_module_layout(&pb, 0));
    pb.struct_size = (uint32_t)sizeof pb;
    pb.module_layout_size = 8; /* smaller than any loom_module_layout */
    ck_assert_ptr_null(loom_problem_module_layout(&pb, 0));
}
END_TEST

/* Plans one iteration of vlm-s with --parallel `par`; returns the
 * makespan and, in *mem0, rank 0's peak memory. */
static double plan_ms(const char *par, int64_t *mem0)
{
    loom_session s;
    loom_session_args a;
    loom_session_args_init(&a);
    a.model = "vlm-s";
    a.parallel = par;
    a.iterations = 1;
    loom_error err = {0, ""};
    ck_assert_msg(loom_session_init(&s, &a, &err) == LOOM_OK, "%s", err.message);
    loom_plan plan;
    memset(&plan, 0, sizeof plan);
    ck_assert_msg(loom_session_plan(&s, 0, &plan, &err) == LOOM_OK, "%s", err.message);
    double ms = plan.metrics.makespan_ms;
    *mem0 = plan.metrics.peak_bytes[0];
    loom_plan_clear(&plan);
    loom_session_release(&s);
    return ms;
}

/* A parallel file for vlm-s: tp 4, pp 4, 16 microbatches, vit at `vit`. */
static const char *par_file(const char *vit)
{
    static char buf[256];
    snprintf(buf, sizeof buf,
             "{\"tp\": 4, \"pp\": 4, \"dp\": 1, \"microbatches\": 16, \"modules\": {\"vit\": %s}}",
             vit);
    return loom_test_tmpfile(".json", buf);
}

START_TEST(encoder_tp_changes_its_time)
{
    int64_t mem_single = 0, mem4 = 0, mem1 = 0, mem2 = 0;
    double single = plan_ms("tp=4,pp=4,dp=1,mb=16", &mem_single);
    /* listing the encoder at the top-level layout plans exactly as before */
    double tp4 = plan_ms(par_file("{\"tp\": 4}"), &mem4);
    ck_assert_double_eq(tp4, single);
    ck_assert_int_eq(mem4, mem_single);
    /* the encoder on the same GPUs at TP 1 (4 copies per TP-4 group) and
     * TP 2: a different time (no TP collectives), more weight memory */
    double tp1 = plan_ms(par_file("{\"tp\": 1}"), &mem1);
    double tp2 = plan_ms(par_file("{\"tp\": 2}"), &mem2);
    ck_assert_msg(tp1 != tp4 && tp2 != tp4 && tp1 != tp2, "tp1 %.6f tp2 %.6f tp4 %.6f", tp1,
                  tp2, tp4);
    ck_assert_int_gt(mem1, mem2);
    ck_assert_int_gt(mem2, mem4);
}
END_TEST

/* The boundary between a disjoint TP-4 encoder (one rank of 4 GPUs) and a
 * TP-1 backbone: the activation (and its gradient) of T bytes is
 * resharded over min(4, 1) GPU pairs, so each edge is charged T bytes,
 * not the sender's T / 4 share. */
START_TEST(boundary_resharding)
{
    char work[2048];
    size_t k = (size_t)snprintf(work, sizeof work, "{\"iteration\": 0, \"samples\": [");
    for (int i = 0; i < 4; i++)
        k += (size_t)snprintf(work + k, sizeof work - k,
                              "%s{\"text_tokens\": 100, \"images\": 4, \"microbatch\": %d}",
                              i ? ", " : "", i);
    snprintf(work + k, sizeof work - k, "]}\n");
    loom_session_args a;
    loom_session_args_init(&a);
    a.manifest = loom_test_src("examples/manifests/hetero.json");
    a.model = "vlm-s";
    a.parallel = loom_test_tmpfile(".json",
        "{\"tp\": 1, \"pp\": 4, \"dp\": 1, \"microbatches\": 4, \"modules\": {\"vit\": "
        "{\"tp\": 4, \"pp\": 1, \"dp\": 1, \"placement\": \"disjoint\"}}}");
    a.workload = loom_test_tmpfile(".jsonl", work);
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_session_args_set(&a, "param", "partitioner.mode=given", &err), LOOM_OK);
    loom_session s;
    ck_assert_msg(loom_session_init(&s, &a, &err) == LOOM_OK, "%s", err.message);
    loom_plan plan;
    ck_assert_msg(loom_session_plan(&s, 0, &plan, &err) == LOOM_OK, "%s", err.message);
    const loom_stage_graph *g = plan.graph;
    ck_assert_int_eq(g->n_ranks, 5); /* llm on ranks 0-3, vit on rank 4 */
    double T = 4.0 * 169 * 1792 * 2; /* 4 images of 169 tokens, hidden 1792, bf16 */
    loom_p2p_link link = {(uint32_t)sizeof link, 4, 0, 1, 4, 0}; /* GPUs 4-7 -> GPU 0 */
    double want = loom_p2p_link_ms(s.problem.cluster, &link, T);
    int forward = 0, backward = 0;
    for (int32_t v = 0; v < g->n_stages; v++) {
        if (g->microbatch[v] != 0)
            continue;
        for (int32_t e = g->pred_off[v]; e < g->pred_off[v + 1]; e++) {
            int32_t q = g->pred[e];
            if (g->kind[v] == LOOM_STAGE_F && g->rank[v] == 0 && g->rank[q] == 4) {
                ck_assert_double_eq_tol(g->pred_p2p_ms[e], want, 1e-12);
                forward++;
            }
            if (g->kind[v] != LOOM_STAGE_F && g->rank[v] == 4 && g->rank[q] == 0) {
                ck_assert_double_eq_tol(g->pred_p2p_ms[e], want, 1e-12);
                backward++;
            }
        }
    }
    ck_assert_int_eq(forward, 1);
    ck_assert_int_eq(backward, 1);
    loom_plan_clear(&plan);
    loom_session_release(&s);
}
END_TEST

/* Static bytes of rank 0 and the makespan of vlm-s with vit colocated at
 * `vit` (megatron-1f1b: vit's layers on the first ranks). */
static int64_t rank0_static(const char *vit, double *ms)
{
    loom_session s;
    loom_session_args a;
    loom_session_args_init(&a);
    a.model = "vlm-s";
    a.parallel = par_file(vit);
    a.iterations = 1;
    loom_error err = {0, ""};
    ck_assert_msg(loom_session_init(&s, &a, &err) == LOOM_OK, "%s", err.message);
    loom_plan plan;
    ck_assert_msg(loom_session_plan(&s, 0, &plan, &err) == LOOM_OK, "%s", err.message);
    int64_t bytes = plan.graph->static_bytes[0];
    *ms = plan.metrics.makespan_ms;
    loom_plan_clear(&plan);
    loom_session_release(&s);
    return bytes;
}

/* A module's optimizer states shard over its own dp x cp: the TP-1 vit
 * at pp 2 (dp 8 on the 16 GPUs) holds half the optimizer bytes per GPU of
 * the one at pp 4 (dp 4); its time does not change. */
START_TEST(states_shard_over_module_dp)
{
    double ms4 = 0, ms8 = 0;
    int64_t dp4 = rank0_static("{\"tp\": 1, \"pp\": 4}", &ms4);
    int64_t dp8 = rank0_static("{\"tp\": 1, \"pp\": 2}", &ms8);
    ck_assert_int_lt(dp8, dp4);
    ck_assert_double_eq(ms4, ms8);
    loom_shape sh = LOOM_SHAPE_INIT;
    loom_problem pb;
    memset(&pb, 0, sizeof pb);
    pb.parallel = (loom_parallel){4, 4, 2, 1, 16, 2};
    ck_assert_int_eq(loom_shape_state_shards(&sh, &pb), 4); /* the problem's dp x cp */
    sh.dp = 8;
    sh.cp = 1;
    ck_assert_int_eq(loom_shape_state_shards(&sh, &pb), 8);
    sh.struct_size = (uint32_t)offsetof(loom_shape, dp); /* an older allocator */
    ck_assert_int_eq(loom_shape_state_shards(&sh, &pb), 4);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("module_layouts");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, disjoint_layout_gets_its_own_gpus);
    tcase_add_test(tc, colocated_layout_fills_its_set);
    tcase_add_test(tc, model_info_reports_layouts);
    tcase_add_test(tc, layout_errors_name_path_and_values);
    tcase_add_test(tc, parallel_file_and_pairs);
    tcase_add_test(tc, accessor_checks_sizes);
    tcase_add_test(tc, encoder_tp_changes_its_time);
    tcase_add_test(tc, boundary_resharding);
    tcase_add_test(tc, states_shard_over_module_dp);
    suite_add_tcase(s, tc);
    return loom_test_main(s);
}
