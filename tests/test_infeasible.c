/* test_infeasible.c - a plan over the memory cap is marked infeasible and
 * its makespan never shown as a valid result: t2v-l with the balanced
 * Megatron split on the 80 GiB h800, on a workload of 32 equal
 * microbatches, peaks at 160.713 GiB on rank 0 and 82.226 GiB on rank 1
 * (derived below from the model, the cluster and the workload).
 * plan.json's metrics.feasible, summary.txt, `loom plan` (table and
 * --json) and `loom ab` (JSON and Markdown) all say so; a plan that fits
 * says feasible. */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <loom/sys/json.h>
#include "testutil.h"

/* The workload: two iterations of 32 microbatches, each one sample of 64
 * text tokens and 13 s of video. */
#define TEXT_TOKENS 64
#define VIDEO_SECONDS 13

/* ---- the expected peaks, derived (docs/cost-models.md, roofline "Memory";
 * the static-memory rule of "Rules above the layer") -------------------
 *
 * t2v-l (examples/models/t2v-l.json) at tp 8, pp 8, dp 1, 32 microbatches:
 * - text encoder: 64 layers, h 5120, heads 40, kv heads 8 (kv width
 *   5120*8/40 = 1024), ffn 27648 gated, vocab 152064, an encoder (input
 *   embedding only). Parameters of a layer:
 *     h(h + 2kv) + h^2 + 3hf + 4h
 *     = 5120*7168 + 5120^2 + 3*5120*27648 + 4*5120
 *     = 36,700,160 + 26,214,400 + 424,673,280 + 20,480 = 487,608,320
 *   embedding: 152064 * 5120 = 778,567,680
 * - dit: 48 layers, h 6144, heads = kv heads 48 (kv width h), ffn 24576
 *   not gated, cross-attention:
 *     h(h + 2h) + h^2 + 2hf + 2h^2 + 4h = 6h^2 + 2hf + 4h
 *     = 226,492,416 + 301,989,888 + 24,576 = 528,506,880
 * Static bytes per parameter at t = 8, dp = 1: (2 bf16 weight + 4 fp32
 * gradient + 12 optimizer state) / 8 = 2.25 (every count above is a
 * multiple of 4, so no rounding).
 *
 * The split (a premise, checked below, not derived: balanced-dp's
 * min-max by time): rank 0 holds the 64 encoder layers and dit layers
 * 0-5, rank r >= 1 dit layers 6r .. 6r+5.
 *   static(0) = 2.25 * (64 * 487,608,320 + 778,567,680 + 6 * 528,506,880)
 *             = 70,215,598,080 + 1,751,777,280 + 7,134,842,880
 *             = 79,102,218,240
 *   static(r) = 2.25 * 6 * 528,506,880 = 7,134,842,880
 *
 * Stored activations of one microbatch (flash attention, sequence
 * parallelism: N*h*34/t a layer, plus 8*N*h/t for cross-attention):
 *   text encoder, N = 64:              64 * 5120 * 34 / 8 = 1,392,640 a layer
 *   dit, N = 13 * 4608 = 59,904 tokens: 59,904 * 6144 * 42 / 8 = 1,932,263,424
 *   rank 0: 64 * 1,392,640 + 6 * 1,932,263,424 = 89,128,960 + 11,593,580,544
 *         = 11,682,709,504;  rank r >= 1: 11,593,580,544
 *
 * In flight under 1F1B: rank r runs 8 - 1 - r warm-up forwards and one
 * more before its first backward frees anything: 8 - r microbatches.
 *   peak(0) = 79,102,218,240 + 8 * 11,682,709,504 = 172,563,894,272
 *           = 160.713 GiB (/ 2^30, to 3 decimals)
 *   peak(1) = 7,134,842,880 + 7 * 11,593,580,544 = 88,289,906,688 = 82.226 GiB
 *   peak(2) = 7,134,842,880 + 6 * 11,593,580,544 = 76,696,326,144 = 71.429 GiB
 * The cap is the h800's 85,899,345,920 bytes (80 GiB): ranks 0 and 1 are
 * over it, 2..7 under. */
#define TEXT_LAYER_PARAMS (5120LL * (5120 + 2 * 1024) + 5120LL * 5120 + 3LL * 5120 * 27648 + \
                           4 * 5120)
#define TEXT_EMBEDDING_PARAMS (152064LL * 5120)
#define DIT_LAYER_PARAMS (6LL * 6144 * 6144 + 2LL * 6144 * 24576 + 4 * 6144)
#define STATIC_PER_PARAM_X4 9 /* 2.25 bytes per parameter, times 4 */
#define TEXT_LAYER_ACT (TEXT_TOKENS * 5120LL * 34 / 8)
#define DIT_LAYER_ACT (VIDEO_SECONDS * 4608LL * 6144 * (34 + 8) / 8)

/* Rank r's derived peak in bytes. */
static int64_t derived_peak(int r)
{
    int64_t params = 6 * DIT_LAYER_PARAMS, act = 6 * DIT_LAYER_ACT;
    if (r == 0) {
        params += 64 * TEXT_LAYER_PARAMS + TEXT_EMBEDDING_PARAMS;
        act += 64 * TEXT_LAYER_ACT;
    }
    return params * STATIC_PER_PARAM_X4 / 4 + (8 - r) * act;
}

/* Reads a whole file; the caller frees it. */
static char *slurp(const char *dir, const char *name)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *text = NULL;
    loom_error err = {0, ""};
    ck_assert_msg(loom_read_file(path, &text, NULL, &err) == LOOM_OK, "%s", err.message);
    return text;
}

/* The workload file (two iterations of 32 equal microbatches). */
static const char *workload(void)
{
    static char text[16384];
    size_t n = 0;
    for (int it = 0; it < 2; it++) {
        n += (size_t)snprintf(text + n, sizeof text - n, "{\"iteration\": %d, \"samples\": [", it);
        for (int mb = 0; mb < 32; mb++)
            n += (size_t)snprintf(text + n, sizeof text - n,
                                  "%s{\"text_tokens\": %d, \"images\": 0, \"video_seconds\": %d, "
                                  "\"microbatch\": %d}",
                                  mb ? ", " : "", TEXT_TOKENS, VIDEO_SECONDS, mb);
        n += (size_t)snprintf(text + n, sizeof text - n, "]}\n");
    }
    ck_assert_uint_lt(n, sizeof text);
    return loom_test_tmpfile(".jsonl", text);
}

START_TEST(derived_peaks_hold)
{
    /* the arithmetic of the derivation above */
    ck_assert_int_eq(TEXT_LAYER_PARAMS, 487608320LL);
    ck_assert_int_eq(DIT_LAYER_PARAMS, 528506880LL);
    ck_assert_int_eq(TEXT_LAYER_ACT, 1392640LL);
    ck_assert_int_eq(DIT_LAYER_ACT, 1932263424LL);
    ck_assert_int_eq(derived_peak(0), 172563894272LL);
    ck_assert_int_eq(derived_peak(1), 88289906688LL);
    ck_assert_int_eq(derived_peak(2), 76696326144LL);
    char dir[] = "/tmp/loom-infeasible-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char args[4096], *out = NULL;
    snprintf(args, sizeof args, "plan --manifest %s --model t2v-l --workload %s --iterations 1 "
             "--quiet --out %s/p", loom_test_src("examples/manifests/megatron-balanced.json"),
             workload(), dir);
    ck_assert_int_eq(loom_test_cli(args, &out), 0);
    free(out);
    char sub[4200];
    snprintf(sub, sizeof sub, "%s/p", dir);
    char *pj = slurp(sub, "plan.json");
    cJSON *plan = cJSON_Parse(pj);
    free(pj);
    /* the premise: the split */
    const cJSON *pos = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(
        cJSON_GetObjectItem(plan, "partition"), "flows"), 0), "positions");
    ck_assert_int_eq(cJSON_GetArraySize(pos), 8);
    for (int r = 0; r < 8; r++) {
        const cJSON *p = cJSON_GetArrayItem(pos, r);
        const cJSON *spans = cJSON_GetObjectItem(p, "spans");
        ck_assert_int_eq(cJSON_GetObjectItem(p, "rank")->valueint, r);
        ck_assert_int_eq(cJSON_GetArraySize(spans), r == 0 ? 2 : 1);
        const cJSON *dit = cJSON_GetArrayItem(spans, r == 0 ? 1 : 0);
        if (r == 0) {
            const cJSON *te = cJSON_GetArrayItem(spans, 0);
            ck_assert_str_eq(cJSON_GetObjectItem(te, "module")->valuestring, "text_encoder");
            ck_assert_int_eq(cJSON_GetObjectItem(te, "first_layer")->valueint, 0);
            ck_assert_int_eq(cJSON_GetObjectItem(te, "layers")->valueint, 64);
        }
        ck_assert_str_eq(cJSON_GetObjectItem(dit, "module")->valuestring, "dit");
        ck_assert_int_eq(cJSON_GetObjectItem(dit, "first_layer")->valueint, 6 * r);
        ck_assert_int_eq(cJSON_GetObjectItem(dit, "layers")->valueint, 6);
    }
    /* every rank's peak, exactly */
    const cJSON *m = cJSON_GetObjectItem(plan, "metrics");
    const cJSON *peaks = cJSON_GetObjectItem(m, "peak_mem_bytes");
    ck_assert_int_eq(cJSON_GetArraySize(peaks), 8);
    for (int r = 0; r < 8; r++)
        ck_assert_msg((int64_t)cJSON_GetArrayItem(peaks, r)->valuedouble == derived_peak(r),
                      "rank %d: peak %.0f, derived %lld", r,
                      cJSON_GetArrayItem(peaks, r)->valuedouble, (long long)derived_peak(r));
    ck_assert_int_eq(cJSON_GetObjectItem(m, "cap_violations")->valueint, 2);
    cJSON_Delete(plan);
    snprintf(args, sizeof args, "rm -rf %s", dir);
    ck_assert_int_eq(system(args), 0);
}
END_TEST

START_TEST(plan_outputs_mark_infeasible)
{
    char dir[] = "/tmp/loom-infeasible-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char args[4096], *out = NULL, want[200];
    /* the derived peak of rank 0, as printed: GiB to 3 decimals (160.713) */
    char peak[32];
    snprintf(peak, sizeof peak, "%.3f", (double)derived_peak(0) / 1073741824.0);
    ck_assert_str_eq(peak, "160.713");
    snprintf(args, sizeof args, "plan --manifest %s --model t2v-l --workload %s --iterations 1 "
             "--out %s/p", loom_test_src("examples/manifests/megatron-balanced.json"),
             workload(), dir);
    ck_assert_int_eq(loom_test_cli(args, &out), 0);
    snprintf(want, sizeof want, "INFEASIBLE (peak %s GiB > cap 80.000 GiB)", peak);
    ck_assert_msg(strstr(out, want), "%s", out);
    snprintf(want, sizeof want, "  makespan      INFEASIBLE (peak %s GiB > cap 80.000 GiB); "
             "the simulated ", peak);
    ck_assert_msg(strstr(out, want), "%s", out);
    ck_assert_ptr_null(strstr(out, "  makespan      3")); /* no bare makespan line */
    free(out);
    char sub[4200];
    snprintf(sub, sizeof sub, "%s/p", dir);
    char *summary = slurp(sub, "summary.txt");
    snprintf(want, sizeof want, "makespan      INFEASIBLE (peak %s GiB > cap 80.000 GiB)", peak);
    ck_assert_ptr_nonnull(strstr(summary, want));
    free(summary);
    char *html = slurp(sub, "report.html");
    snprintf(want, sizeof want, "INFEASIBLE (peak %s GiB &gt; cap 80.000 GiB; simulated ", peak);
    ck_assert_ptr_nonnull(strstr(html, want));
    ck_assert_ptr_nonnull(strstr(html, "INFEASIBLE: over the memory cap on 2 ranks"));
    free(html);
    char *pj = slurp(sub, "plan.json");
    cJSON *plan = cJSON_Parse(pj);
    free(pj);
    const cJSON *m = cJSON_GetObjectItem(plan, "metrics");
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(m, "feasible")));
    ck_assert_int_eq(cJSON_GetObjectItem(m, "cap_violations")->valueint, 2);
    cJSON_Delete(plan);
    snprintf(args, sizeof args, "rm -rf %s", dir);
    ck_assert_int_eq(system(args), 0);

    /* --json: per iteration and overall */
    snprintf(args, sizeof args, "plan --manifest %s --model t2v-l --workload %s --iterations 2 "
             "--json", loom_test_src("examples/manifests/megatron-balanced.json"), workload());
    ck_assert_int_eq(loom_test_cli(args, &out), 0);
    const char *brace = strchr(out, '{');
    ck_assert_ptr_nonnull(brace);
    cJSON *r = cJSON_Parse(brace);
    ck_assert_ptr_nonnull(r);
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(r, "feasible")));
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetArrayItem(
        cJSON_GetObjectItem(r, "iterations"), 1), "feasible")));
    cJSON_Delete(r);
    free(out);
    /* several iterations: no mean is presented as a result */
    snprintf(args, sizeof args, "plan --manifest %s --model t2v-l --workload %s --iterations 2",
             loom_test_src("examples/manifests/megatron-balanced.json"), workload());
    ck_assert_int_eq(loom_test_cli(args, &out), 0);
    ck_assert_msg(strstr(out, "GiB) in 2 of 2 iterations: the simulated mean iteration"), "%s",
                  out);
    ck_assert_ptr_null(strstr(out, "\nmean iteration "));
    free(out);
    /* a plan that fits */
    ck_assert_int_eq(loom_test_cli("plan --model vlm-s --iterations 1 --json", &out), 0);
    brace = strchr(out, '{');
    r = cJSON_Parse(brace);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(r, "feasible")));
    cJSON_Delete(r);
    free(out);
}
END_TEST

START_TEST(ab_marks_infeasible_side)
{
    char dir[] = "/tmp/loom-infeasible-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char args[8192], *out = NULL;
    /* A: the balanced split with full recomputation, which fits */
    const char *a = loom_test_tmpfile(".json",
        "{\"loom_planner\": 1, \"name\": \"balanced-full\", \"pipeline\": ["
        "{\"role\": \"cost_model\", \"use\": \"roofline\"},"
        "{\"role\": \"partitioner\", \"use\": \"balanced-dp\"},"
        "{\"role\": \"ranker\", \"use\": \"fifo\"},"
        "{\"role\": \"interleaver\", \"use\": \"interleaved-1f1b\"},"
        "{\"role\": \"memory_tuner\", \"use\": \"full-recompute\"}]}");
    snprintf(args, sizeof args, "ab %s %s --model t2v-l --iterations 1 --json %s/r.json "
             "--markdown %s/r.md --html %s/r.html --no-isolate", a,
             loom_test_src("examples/manifests/megatron-balanced.json"), dir, dir, dir);
    int code = loom_test_cli(args, &out);
    ck_assert_msg(code == 1, "%s", out);
    free(out);
    char *md = slurp(dir, "r.md");
    ck_assert_msg(strstr(md, "| INFEASIBLE (over the memory cap; simulated "), "%s", md);
    free(md);
    char *html = slurp(dir, "r.html");
    ck_assert_ptr_nonnull(strstr(html, "<td>INFEASIBLE</td>"));
    free(html);
    char *js = slurp(dir, "r.json");
    cJSON *r = cJSON_Parse(js);
    free(js);
    const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "cases"), 0);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(c, "a"), "feasible")));
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(c, "b"), "feasible")));
    const cJSON *it = cJSON_GetArrayItem(cJSON_GetObjectItem(c, "iterations"), 0);
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(it, "b"), "feasible")));
    ck_assert_str_eq(cJSON_GetObjectItem(c, "reason")->valuestring, "infeasible");
    cJSON_Delete(r);
    snprintf(args, sizeof args, "rm -rf %s", dir);
    ck_assert_int_eq(system(args), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("infeasible");
    TCase *tc = tcase_create("infeasible");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, derived_peaks_hold);
    tcase_add_test(tc, plan_outputs_mark_infeasible);
    tcase_add_test(tc, ab_marks_infeasible_side);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return loom_test_main(suite());
}
