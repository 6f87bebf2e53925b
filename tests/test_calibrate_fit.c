/* test_calibrate_fit.c - `loom calibrate`: profiles and measured
 * iterations generated through Loom's own cost model on a cluster whose
 * efficiency factors differ from the h800 preset's are fitted back from
 * the preset's factors within 2 %; the table cost file it writes; too
 * little, contradictory and malformed data fail with file:line or JSON-path
 * errors and write nothing. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <loom/sys/json.h>
#include <loom/sys/session.h>
#include "testutil.h"
#include "run_priv.h"

/* The factors the measurements are generated with (h800: .75 .6 .8 .7). */
static const double truth[4] = {0.62, 0.47, 0.69, 0.55};
static const char *const keys[4] = {"gemm", "attention", "memory", "collective"};

/* Extra efficiency fields of the truth cluster (the model's shape:
 * launch overhead, attention backward), "" for none. */
static const char *truth_shape = "";

/* Writes the h800 cluster with the `truth` factors; returns its path. */
static const char *truth_cluster(void)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"name\": \"h800-measured\", \"peak_flops\": 989e12, \"hbm_bytes_per_s\": 3.35e12,"
             " \"hbm_bytes\": 85899345920, \"gpus_per_node\": 8, \"nvlink_bytes_per_s\": 200e9,"
             " \"net_bytes_per_s\": 25e9, \"p2p_latency_ms\": 0.02, \"efficiency\": {\"gemm\": "
             "%g, \"attention\": %g, \"memory\": %g, \"collective\": %g, \"gemm_half_flops\": 4e9,"
             " \"attention_half_flops\": 4e9%s}}",
             truth[0], truth[1], truth[2], truth[3], truth_shape);
    return loom_test_tmpfile(".json", text);
}

/* A profile of vlm-s measured on the truth cluster: every module's layer
 * 0 at several token counts, sequence lengths and TP degrees (only_tp > 0:
 * that TP degree and one sequence length per token count). */
static char *profile_text(int32_t only_tp)
{
    loom_session s;
    loom_session_args a;
    loom_session_args_init(&a);
    a.model = "vlm-s";
    a.cluster = truth_cluster();
    a.no_workload = 1;
    loom_error err = {0, ""};
    ck_assert_msg(loom_session_init(&s, &a, &err) == LOOM_OK, "%s", err.message);
    size_t cap = 1 << 16, len = 0;
    char *text = malloc(cap);
    len += (size_t)snprintf(text, cap, "module,layer,tokens,tp,forward_ms,backward_ms,"
                                       "activation_bytes,seq_len\n");
    static const int64_t tokens[] = {256, 2048, 16384};
    static const int64_t seqs[] = {256, 8192};
    static const int32_t tps[] = {1, 2, 4};
    for (int m = 0; m < 2; m++)
        for (int t = 0; t < 3; t++)
            for (int q = 0; q < 2; q++)
                for (int p = 0; p < 3; p++) {
                    int64_t seq = seqs[q] < tokens[t] ? seqs[q] : tokens[t];
                    if (q && seq == tokens[t] && seqs[0] >= tokens[t])
                        continue; /* the same row twice */
                    if (only_tp > 0 && (tps[p] != only_tp || q))
                        continue;
                    loom_shape sh = LOOM_SHAPE_INIT;
                    sh.tokens = tokens[t];
                    sh.sequences = tokens[t] / seq;
                    sh.seq_sq_sum = (double)tokens[t] * (double)seq;
                    sh.tp = tps[p];
                    sh.trainable_upstream = 1;
                    loom_layer_cost c;
                    ck_assert_int_eq(loom_session_layer_cost(&s, m, 0, &sh, LOOM_POLICY_NONE, &c,
                                                             &err), LOOM_OK);
                    len += (size_t)snprintf(text + len, cap - len,
                                            "%s,0,%lld,%d,%.12g,%.12g,%lld,%lld\n",
                                            m ? "llm" : "vit", (long long)tokens[t], tps[p],
                                            c.forward_ms, c.input_grad_ms + c.weight_grad_ms,
                                            (long long)c.activation_bytes, (long long)seq);
                }
    loom_session_release(&s);
    return text;
}

/* Reads efficiency.<key> of the cluster file at path. */
static double factor_of(const char *path, const char *key)
{
    cJSON *root = NULL;
    loom_error err = {0, ""};
    ck_assert_msg(loom_json_load(path, &root, &err) == LOOM_OK, "%s", err.message);
    const cJSON *e = cJSON_GetObjectItem(root, "efficiency");
    double v = cJSON_GetNumberValue(cJSON_GetObjectItem(e, key));
    cJSON_Delete(root);
    return v;
}

START_TEST(profile_recovers_factors)
{
    char *csv = profile_text(0);
    const char *prof = loom_test_tmpfile(".csv", csv);
    free(csv);
    csv = profile_text(2);
    const char *prof2 = loom_test_tmpfile(".csv", csv);
    free(csv);
    char out_path[] = "/tmp/loom-calib-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(out_path));
    char args[16384], *out = NULL;
    snprintf(args, sizeof args, "calibrate --cluster h800 --model vlm-s --profile %s --out "
             "%s/c.json --table %s/t.csv", prof, out_path, out_path);
    int code = loom_test_cli(args, &out);
    /* a table holds one TP degree */
    ck_assert_int_eq(code, 2);
    ck_assert_msg(strstr(out, "measure the same layer and tokens at different tp or seq_len"),
                  "%.1500s", out);
    free(out);
    snprintf(args, sizeof args, "calibrate --cluster h800 --model vlm-s --profile %s --out "
             "%s/c.json", prof, out_path);
    code = loom_test_cli(args, &out);
    ck_assert_msg(code == 0, "%.1500s", out);
    ck_assert_ptr_nonnull(strstr(out, "residual"));
    ck_assert_ptr_nonnull(strstr(out, "vit layer 0 tokens 2048 tp 2 backward"));
    free(out);
    char path[512];
    snprintf(path, sizeof path, "%s/c.json", out_path);
    for (int k = 0; k < 4; k++) {
        double v = factor_of(path, keys[k]);
        ck_assert_msg(fabs(v - truth[k]) <= 0.02 * truth[k], "%s: fitted %g, truth %g",
                      keys[k], v, truth[k]);
    }
    /* the spelled-out preset keeps its FlashAttention-2 factor, not fitted */
    ck_assert_double_eq(factor_of(path, "attention_flash2"), 0.279);
    /* a TP 2 profile gives a table cost file */
    snprintf(args, sizeof args, "calibrate --cluster %s --model vlm-s --profile %s --fit "
             "eff_gemm --table %s/t.csv", path, prof2, out_path);
    code = loom_test_cli(args, &out);
    ck_assert_msg(code == 0, "%.1500s", out);
    free(out);
    /* the calibrated file plans, and the table file loads as a cost model */
    char tpath[512];
    snprintf(tpath, sizeof tpath, "%s/t.csv", out_path);
    snprintf(args, sizeof args, "plan --model vlm-s --cluster %s --iterations 1 "
             "--parallel tp=2,pp=2,mb=4 --use cost_model=table --param cost_model.file=%s "
             "--json", path, tpath);
    code = loom_test_cli(args, &out);
    /* the table lacks rows for every layer but layer 0 only through "0"
     * rows, so the table plugin must complain about layer 1 by name */
    ck_assert_msg(code != 0 && strstr(out, "layer 1"), "%.1500s", out);
    free(out);
    char *text = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_read_file(tpath, &text, NULL, &err), LOOM_OK);
    ck_assert(!strncmp(text, "module,layer,tokens,forward_ms,input_grad_ms,weight_grad_ms,"
                             "activation_bytes,param_bytes\nvit,0,256,", 77));
    free(text);
    unlink(path);
    unlink(tpath);
    rmdir(out_path);
}
END_TEST

/* The opt-in factors: a launch overhead and a fused-attention backward
 * are fitted back with the efficiencies when --fit names them, absent
 * from --out otherwise; --fit none only prices the cluster as given. */
START_TEST(shape_factors_recovered)
{
    truth_shape = ", \"kernel_launch_us\": 8, \"attention_backward\": 2.5";
    char *csv = profile_text(0);
    truth_shape = "";
    const char *prof = loom_test_tmpfile(".csv", csv);
    free(csv);
    const char *outp = loom_test_tmpfile(".json", "");
    char args[16384], *out = NULL;
    snprintf(args, sizeof args, "calibrate --cluster h800 --model vlm-s --profile %s --fit "
             "eff_gemm,eff_attention,eff_memory,eff_collective,kernel_launch_us,"
             "attention_backward --out %s", prof, outp);
    ck_assert_msg(loom_test_cli(args, &out) == 0, "%.1500s", out);
    free(out);
    ck_assert_msg(fabs(factor_of(outp, "kernel_launch_us") - 8.0) <= 0.02 * 8.0,
                  "kernel_launch_us %g", factor_of(outp, "kernel_launch_us"));
    ck_assert_msg(fabs(factor_of(outp, "attention_backward") - 2.5) <= 0.02 * 2.5,
                  "attention_backward %g", factor_of(outp, "attention_backward"));
    for (int k = 0; k < 4; k++)
        ck_assert_msg(fabs(factor_of(outp, keys[k]) - truth[k]) <= 0.02 * truth[k],
                      "%s: fitted %g, truth %g", keys[k], factor_of(outp, keys[k]), truth[k]);
    /* the default fit leaves them out of the file, and misses the data */
    snprintf(args, sizeof args, "calibrate --cluster h800 --model vlm-s --profile %s --out %s "
             "--max-residual 1000", prof, outp);
    ck_assert_int_eq(loom_test_cli(args, &out), 0);
    free(out);
    char *text = NULL;
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_read_file(outp, &text, NULL, &err), LOOM_OK);
    ck_assert_ptr_null(strstr(text, "kernel_launch_us"));
    ck_assert_ptr_null(strstr(text, "attention_backward"));
    free(text);
    /* --fit none: the residuals of the cluster as given, nothing to write */
    snprintf(args, sizeof args, "calibrate --cluster h800 --model vlm-s --profile %s --fit none "
             "--max-residual 1000", prof);
    ck_assert_int_eq(loom_test_cli(args, &out), 0);
    ck_assert_msg(strstr(out, "0 factors, 0 steps"), "%.1500s", out);
    free(out);
    snprintf(args, sizeof args, "calibrate --cluster h800 --model vlm-s --profile %s --fit none",
             prof);
    ck_assert_int_eq(loom_test_cli(args, &out), 1);
    ck_assert_msg(strstr(out, "of the cluster as given exceeds --max-residual 10 %"), "%.1500s",
                  out);
    free(out);
    snprintf(args, sizeof args, "calibrate --cluster h800 --model vlm-s --profile %s --fit none "
             "--out %s", prof, outp);
    ck_assert_int_eq(loom_test_cli(args, &out), 2);
    ck_assert_msg(strstr(out, "--fit none: nothing is fitted, so there is no calibrated cluster "
                              "(--out) to write"), "%.1500s", out);
    free(out);
}
END_TEST

START_TEST(iterations_recover_factors)
{
    /* measured iteration times on the truth cluster, fitted for eff_gemm
     * and eff_memory with the other two held */
    const char *cl = truth_cluster();
    static const char *const pars[] = {"tp=2,pp=4,mb=4", "tp=4,pp=2,mb=4", "tp=8,pp=2,mb=4",
                                       "tp=4,pp=4,mb=8"};
    char json[8192];
    size_t len = (size_t)snprintf(json, sizeof json, "{\"iterations\": [");
    for (int i = 0; i < 4; i++) {
        loom_session s;
        loom_session_args a;
        loom_session_args_init(&a);
        a.model = "vlm-s";
        a.cluster = cl;
        a.parallel = pars[i];
        a.iterations = 1;
        a.has_seed = 1;
        a.seed = (uint64_t)i + 1;
        loom_error err = {0, ""};
        loom_plan plan;
        ck_assert_msg(loom_session_init(&s, &a, &err) == LOOM_OK, "%s", err.message);
        ck_assert_msg(loom_session_plan(&s, 0, &plan, &err) == LOOM_OK, "%s", err.message);
        char mfu[64] = ""; /* the last one's MFU too */
        if (i == 3)
            snprintf(mfu, sizeof mfu, ", \"mfu\": %.12g", plan.metrics.mfu);
        len += (size_t)snprintf(json + len, sizeof json - len,
                                "%s{\"model\": \"vlm-s\", \"cluster\": \"h800\", \"parallel\": "
                                "\"%s\", \"generate\": \"interleaved\", \"seed\": %d, "
                                "\"measured_ms\": %.12g%s}", i ? ", " : "", pars[i], i + 1,
                                plan.metrics.makespan_ms, mfu);
        loom_plan_clear(&plan);
        loom_session_release(&s);
    }
    snprintf(json + len, sizeof json - len, "]}");
    const char *iters = loom_test_tmpfile(".json", json);
    /* the h800 preset with the truth's attention and collective factors */
    char start[1024];
    snprintf(start, sizeof start,
             "{\"name\": \"h800\", \"peak_flops\": 989e12, \"hbm_bytes_per_s\": 3.35e12,"
             " \"hbm_bytes\": 85899345920, \"gpus_per_node\": 8, \"nvlink_bytes_per_s\": 200e9,"
             " \"net_bytes_per_s\": 25e9, \"efficiency\": {\"gemm\": 0.75, \"attention\": %g,"
             " \"memory\": 0.8, \"collective\": %g, \"gemm_half_flops\": 4e9,"
             " \"attention_half_flops\": 4e9}}", truth[1], truth[3]);
    const char *base = loom_test_tmpfile(".json", start);
    const char *outp = loom_test_tmpfile(".json", "");
    char args[16384], *out = NULL;
    snprintf(args, sizeof args, "calibrate --cluster %s --measured %s --fit eff_gemm,eff_memory "
             "--out %s --json", base, iters, outp);
    /* rows name cluster "h800", which is not the file being fitted */
    ck_assert_int_eq(loom_test_cli(args, &out), 2);
    ck_assert_msg(strstr(out, "iterations[0].cluster: expected the cluster being calibrated"),
                  "%.1500s", out);
    free(out);
    snprintf(args, sizeof args, "sed -i 's/\"cluster\": \"h800\", //g' %s", iters);
    ck_assert_int_eq(loom_test_run(args, &out), 0);
    free(out);
    snprintf(args, sizeof args, "calibrate --cluster %s --measured %s --fit eff_gemm,eff_memory "
             "--out %s --json", base, iters, outp);
    int code = loom_test_cli(args, &out);
    ck_assert_msg(code == 0, "%.1500s", out);
    cJSON *r = cJSON_Parse(out);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(r, "rows")), 5);
    cJSON_Delete(r);
    free(out);
    ck_assert_msg(fabs(factor_of(outp, "gemm") - truth[0]) <= 0.02 * truth[0], "gemm %g",
                  factor_of(outp, "gemm"));
    ck_assert_msg(fabs(factor_of(outp, "memory") - truth[2]) <= 0.02 * truth[2], "memory %g",
                  factor_of(outp, "memory"));
    ck_assert_double_eq_tol(factor_of(outp, "attention"), truth[1], 1e-9);
}
END_TEST

/* Runs calibrate on a profile text and checks the exit code, the error
 * text and that --out was not written. */
static void bad_profile(const char *csv, const char *extra, int want, const char *msg)
{
    const char *prof = loom_test_tmpfile(".csv", csv);
    char out_path[] = "/tmp/loom-calib-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(out_path));
    char args[16384], *out = NULL;
    snprintf(args, sizeof args, "calibrate --cluster h800 --model vlm-s --profile %s --out "
             "%s/c.json %s", prof, out_path, extra);
    ck_assert_int_eq(loom_test_cli(args, &out), want);
    ck_assert_msg(strstr(out, msg), "expected \"%s\" in: %s", msg, out);
    free(out);
    char path[512];
    snprintf(path, sizeof path, "%s/c.json", out_path);
    ck_assert_int_ne(access(path, F_OK), 0);
    ck_assert_int_eq(rmdir(out_path), 0); /* nothing else either */
}

START_TEST(bad_profiles)
{
    const char *h = "module,layer,tokens,tp,forward_ms,backward_ms\n";
    char buf[1024];
    snprintf(buf, sizeof buf, "%svit,0,1024,1,2.5,5\nllm,0,1024,1,abc,3\n", h);
    bad_profile(buf, "", 2, ":3: column forward_ms: expected a number in [0, 1e+09], "
                            "found \"abc\"");
    snprintf(buf, sizeof buf, "%s# comment\n\nvision,0,1024,1,2.5,5\n", h);
    bad_profile(buf, "", 2, ":4: column module: expected a module of model vlm-s, found "
                            "\"vision\"");
    snprintf(buf, sizeof buf, "%svit,63,1024,1,2.5,5\n", h);
    bad_profile(buf, "", 2, ":2: column layer: expected * or a layer index in [0, 63)");
    bad_profile("module,layer,tokens,tp,forward_ms\nvit,0,1,1,1\n", "", 2,
                ":1: header: expected a column backward_ms, found none");
    bad_profile("module,layer,tokens,tp,forward_ms,backward_ms,speed\n", "", 2,
                ":1: header: unknown column \"speed\"");
    snprintf(buf, sizeof buf, "%svit,0,1024,1,2.5\n", h);
    bad_profile(buf, "", 2, ":2: expected 6 columns as in the header, found 5");
    snprintf(buf, sizeof buf, "%svit,0,1024,1,2.5,5\nvit,0,1024,1,2.6,5\n", h);
    bad_profile(buf, "", 2, ":3: the same layer, tokens, seq_len and tp as line 2");
    bad_profile(h, "", 2, "expected at least one measured layer after the header");
    /* too little data: 2 measurements, 4 factors */
    snprintf(buf, sizeof buf, "%svit,0,1024,1,2.5,5\n", h);
    bad_profile(buf, "", 2, "too little data: 2 measurements for 4 free factors");
    /* tp 1 only: nothing depends on the collective factor */
    snprintf(buf, sizeof buf, "%svit,0,1024,1,2.5,5\nvit,0,4096,1,10,20\n", h);
    bad_profile(buf, "", 2, "too little data: no measurement depends on eff_collective");
    bad_profile(buf, "--fit eff_gemm,eff_bogus", 2, "--fit: expected factors among eff_gemm");
    /* contradictory: the same layer twice as fast at 4x the tokens */
    snprintf(buf, sizeof buf, "%svit,0,1024,1,10,20\nvit,0,4096,1,5,10\n"
             "vit,0,16384,1,40,80\n", h);
    bad_profile(buf, "--fit eff_gemm", 1, "the measurements contradict each other or the "
                                          "cost model");
    /* an output that cannot be written is refused before fitting: exit 2 */
    bad_profile(buf, "--table /tmp --fit eff_gemm", 2,
                "cannot write /tmp: it exists and is a folder, not a regular file");
}
END_TEST

START_TEST(bad_iterations)
{
    static const struct { const char *json, *msg; } cases[] = {
        {"[]", ": expected an object with \"iterations\", found an array"},
        {"{\"iterations\": []}", "iterations: expected at least one measured iteration"},
        {"{\"iterations\": [{\"model\": \"vlm-s\", \"measured_ms\": 5}, {\"model\": \"vlm-s\"}]}",
         "iterations[1]: expected measured_ms or mfu (or both), found neither"},
        {"{\"iterations\": [{\"model\": \"vlm-s\", \"measured_ms\": -5}]}",
         "iterations[0].measured_ms: expected"},
        {"{\"iterations\": [{\"model\": \"vlm-s\", \"mfu\": 0.4, \"speed\": 1}]}",
         "iterations[0]: unknown field \"speed\""},
        {"{\"iterations\": [{\"model\": \"vlm-s\", \"mfu\": 0.4, \"iteration\": 9, "
         "\"workload\": \"/nonexistent/w.jsonl\"}]}", "iterations[0]: "},
        {"{\"iterations\": [{\"model\": \"vlm-s\", \"mfu\": 0.4, \"parallel\": \"tp=3\"}]}",
         "iterations[0]: "},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *f = loom_test_tmpfile(".json", cases[i].json);
        char args[16384], *out = NULL;
        snprintf(args, sizeof args, "calibrate --cluster h800 --measured %s --out "
                 "/tmp/loom-calib-never.json", f);
        ck_assert_int_eq(loom_test_cli(args, &out), 2);
        ck_assert_msg(strstr(out, cases[i].msg), "case %zu: expected \"%s\" in: %s", i,
                      cases[i].msg, out);
        ck_assert_ptr_nonnull(strstr(out, f));
        free(out);
        ck_assert_int_ne(access("/tmp/loom-calib-never.json", F_OK), 0);
    }
    char *out = NULL;
    ck_assert_int_eq(loom_test_cli("calibrate --cluster h800 --profile x.csv", &out), 2);
    ck_assert_ptr_nonnull(strstr(out, "--profile (with --model)"));
    free(out);
}
END_TEST

START_TEST(shipped_examples_fit)
{
    /* examples/calibration: a synthetic profile with noise and three
     * measured iterations, fitted together */
    char args[4096], *out = NULL;
    const char *outp = loom_test_tmpfile(".json", "");
    snprintf(args, sizeof args, "calibrate --cluster h800 --model vlm-s --profile %s "
             "--measured %s --out %s --json", loom_test_src("examples/calibration/profile.csv"),
             loom_test_src("examples/calibration/iterations.json"), outp);
    /* the iterations name presets and generated workloads: any directory */
    ck_assert_msg(loom_test_cli(args, &out) == 0, "%.1500s", out);
    cJSON *r = cJSON_Parse(out);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(r, "rows")), 36 + 4);
    ck_assert(cJSON_GetObjectItem(r, "rms_residual_pct")->valuedouble < 2);
    cJSON_Delete(r);
    free(out);
    ck_assert_msg(fabs(factor_of(outp, "gemm") - truth[0]) <= 0.03 * truth[0], "gemm %g",
                  factor_of(outp, "gemm"));
}
END_TEST

/* --json names each row by its file and line as a JSON string: a profile
 * whose path holds a quote and a backslash still gives valid JSON with
 * the path as it is. */
START_TEST(json_rows_name_odd_paths)
{
    char dir[128], sub[256], path[320];
    loom_test_mkdtemp(dir, sizeof dir, "calibjson");
    snprintf(sub, sizeof sub, "%s/q\"b\\s", dir);
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    snprintf(path, sizeof path, "%s/p.csv", sub);
    char *text = loom_test_slurp(LOOM_TEST_SOURCE_DIR
                                 "/tests/fidelity/measured/h200/profile-vlm-s.csv");
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
    free(text);
    char *out = loom_test_cli_expect(0, "calibrate --cluster h200 --model " LOOM_TEST_SOURCE_DIR
                                     "/examples/models/vlm-s.json --profile '%s' --fit "
                                     "eff_gemm,eff_attention --max-residual 15 --json", path);
    cJSON *doc = cJSON_Parse(out);
    ck_assert_msg(doc != NULL, "not JSON:\n%.500s", out);
    const cJSON *row = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "rows"), 0);
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(row, "row"));
    ck_assert_ptr_nonnull(name);
    ck_assert_int_eq(strncmp(name, path, strlen(path)), 0);
    cJSON_Delete(doc);
    free(out);
    unlink(path);
    rmdir(sub);
    loom_test_rmdir(dir);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("calibrate_fit");
    TCase *tc = tcase_create("calibrate");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, profile_recovers_factors);
    tcase_add_test(tc, shape_factors_recovered);
    tcase_add_test(tc, iterations_recover_factors);
    tcase_add_test(tc, bad_profiles);
    tcase_add_test(tc, bad_iterations);
    tcase_add_test(tc, shipped_examples_fit);
    tcase_add_test(tc, json_rows_name_odd_paths);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(suite());
}
