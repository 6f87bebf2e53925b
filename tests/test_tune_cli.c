/* test_tune_cli.c - `loom tune`'s command line: shard files merge into
 * the unsharded report byte for byte, and shards of other searches,
 * missing or repeated shards are refused; bad inputs exit 2 with their
 * reason (GPU count, global batch, a model that fits nothing, missing or
 * contradictory options); --out writes the winner's plan and `loom plan`
 * of the winner's layout predicts the same time; the batch identity of
 * `loom plan` and its memory hint; a per-module configuration plans with
 * `loom plan --parallel '{...}'` to the time tune ranked it at, and
 * `loom plan --json` reports per-module layouts. Run as subprocesses of
 * this build's `loom`. */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "testutil.h"

#define MANIFESTS LOOM_TEST_SOURCE_DIR "/examples/manifests/"
#define TUNED "--manifest " MANIFESTS "megatron-tuned.json"
/* a 12-layer VLM whose searches take a fraction of a second */
#define TINY "--model " LOOM_TEST_SOURCE_DIR "/tests/fixtures/models/tune-tiny.json --seq-len 2048"


/* The layout object's degree `key`. */
static int deg(const cJSON *lay, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(lay, key)->valueint;
}

START_TEST(shards_merge_to_the_same_bytes)
{
    char dir[64], whole[128], merged[128], f[4][128];
    loom_test_mkdtemp(dir, sizeof dir, "tune");
    const char *space = TINY " --gpus 8 --global-batch 16 --top 4 --memory-cap 3GiB --quiet " TUNED;
    snprintf(whole, sizeof whole, "%s/whole.json", dir);
    snprintf(merged, sizeof merged, "%s/merged.json", dir);
    free(loom_test_cli_expect(0, "tune %s --json %s", space, whole));
    char *want = loom_test_slurp(whole);
    for (int n = 1; n <= 3; n += 2) {
        char list[600] = "";
        for (int k = n; k >= 1; k--) { /* in reverse: order does not matter */
            snprintf(f[k], sizeof f[k], "%s/s%d-%d.json", dir, k, n);
            free(loom_test_cli_expect(0, "tune %s --shard %d/%d --json %s", space, k, n, f[k]));
            strcat(list, f[k]);
            strcat(list, " ");
        }
        free(loom_test_cli_expect(0, "tune merge %s--json %s --quiet", list, merged));
        char *got = loom_test_slurp(merged);
        ck_assert_msg(!strcmp(got, want), "%d shards merge to\n%s\nnot\n%s", n, got, want);
        free(got);
        got = loom_test_cli_expect(0, "tune merge %s--json - --quiet", list); /* standard output */
        ck_assert_msg(!strcmp(got, want), "%d shards merge on stdout to\n%s\nnot\n%s", n, got,
                      want);
        free(got);
    }
    /* a shard of another search, a missing and a repeated shard */
    char other[128], *out;
    snprintf(other, sizeof other, "%s/other.json", dir);
    free(loom_test_cli_expect(0, "tune " TINY " --gpus 4 --global-batch 16 --top 4 --memory-cap 3GiB --quiet " TUNED
                " --shard 2/3 --json %s", other));
    out = loom_test_cli_expect(2, "tune merge %s %s %s --json %s", f[1], other, f[3], merged);
    loom_test_has(out, "from a different search");
    free(out);
    out = loom_test_cli_expect(2, "tune merge %s %s --json %s", f[1], f[3], merged);
    loom_test_has(out, "shard 2/3 is missing");
    free(out);
    out = loom_test_cli_expect(2, "tune merge %s %s %s %s --json %s", f[1], f[2], f[2], f[3], merged);
    loom_test_has(out, "given twice");
    free(out);
    out = loom_test_cli_expect(2, "tune merge %s --json %s", whole, merged);
    loom_test_has(out, "not a `loom tune --shard` file");
    free(out);
    out = loom_test_cli_expect(2, "tune --model vlm-s --gpus 8 --global-batch 16 --shard 1/2");
    loom_test_has(out, "--shard K/N needs --json FILE");
    free(out);
    free(want);
    loom_test_rmdir(dir);
}
END_TEST

/* A README winner line: the layout (tp cp pp dp vpp K M), the manifest,
 * the makespan in whole ms, the MFU and the peak in GiB. */
typedef struct readme_winner {
    int layout[7];
    const char *manifest;
    int makespan_ms;
    double mfu, peak_gib;
} readme_winner;

/* Asserts that rank 1 of `loom tune --json` output `out` is *w. */
static void expect_winner(const char *out, const readme_winner *w)
{
    static const char *const keys[] = {"tp", "cp", "pp", "dp", "vpp", "micro_batch_size",
                                       "microbatches"};
    cJSON *doc = cJSON_Parse(out);
    ck_assert_ptr_nonnull(doc);
    const cJSON *best = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "ranked"), 0);
    const cJSON *lay = cJSON_GetObjectItemCaseSensitive(best, "layout");
    for (int i = 0; i < 7; i++)
        ck_assert_int_eq(deg(lay, keys[i]), w->layout[i]);
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(best, "manifest")),
                     w->manifest);
    ck_assert_int_eq((int)cJSON_GetObjectItemCaseSensitive(best, "makespan_ms")->valuedouble,
                     w->makespan_ms);
    ck_assert_double_eq_tol(cJSON_GetObjectItemCaseSensitive(best, "mfu")->valuedouble, w->mfu,
                            0.0005);
    double peak = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(best, "peak_mem_bytes"))
        peak = e->valuedouble > peak ? e->valuedouble : peak;
    ck_assert_double_eq_tol(peak / 1073741824.0, w->peak_gib, 0.05);
    cJSON_Delete(doc);
}

/* 1 when `name` lies in `dir`/`sub`. */
static int has_file(const char *dir, const char *sub, const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s/%s", dir, sub, name);
    return access(path, F_OK) == 0;
}

START_TEST(readme_tune_example)
{
    /* README's first screen: loom tune of Llama-3-8B on 8 GPUs, batch 64,
     * for Megatron-LM (best/) and for torchtitan (tt/). The Megatron plan
     * is priced with the distributed optimizer, which torchtitan's FSDP2
     * is not; --runtime torchtitan searches torchtitan-tuned's FSDP2
     * pricing, whose memory Megatron-FSDP does not keep. */
    static const struct {
        const char *extra, *sub, *has, *lacks;
        readme_winner w;
    } runs[] = {
        {"", "best", "megatron.args", "torchtitan.toml",
         {{1, 2, 2, 2, 8, 2, 16}, "megatron-tuned", 5114, 0.508, 74.4}},
        {"--runtime torchtitan", "tt", "torchtitan.toml", "megatron.args",
         {{1, 4, 1, 2, 1, 8, 4}, "torchtitan-tuned", 4992, 0.520, 76.1}},
    };
    char dir[64];
    loom_test_mkdtemp(dir, sizeof dir, "tune");
    for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
        char *out = loom_test_cli_expect(0, "tune --model " LOOM_TEST_SOURCE_DIR
                                         "/examples/models/hf/llama-3-8b.json --gpus 8 "
                                         "--global-batch 64 %s --top 1 --quiet --json "
                                         "--out %s/%s", runs[k].extra, dir, runs[k].sub);
        expect_winner(out, &runs[k].w);
        free(out);
        ck_assert_msg(has_file(dir, runs[k].sub, runs[k].has), "the README's %s/ holds no %s",
                      runs[k].sub, runs[k].has);
        ck_assert_msg(!has_file(dir, runs[k].sub, runs[k].lacks), "%s/ holds %s", runs[k].sub,
                      runs[k].lacks);
    }
    loom_test_rmdir(dir);
}
END_TEST

START_TEST(jobs_print_the_same_bytes)
{
    /* simulations in parallel processes reach a superset of what one job
     * simulates; the walk then prints the same report, pruning counts
     * included, and the same table */
    const char *space = TINY " --gpus 8 --global-batch 16 --top 3 --quiet " TUNED;
    char *one = loom_test_cli_expect(0, "tune %s --json --jobs 1", space);
    char *three = loom_test_cli_expect(0, "tune %s --json --jobs 3", space);
    ck_assert_str_eq(three, one);
    free(three);
    free(one);
    one = loom_test_cli_expect(0, "tune %s --jobs 1", space);
    three = loom_test_cli_expect(0, "tune %s --jobs 2", space);
    ck_assert_str_eq(three, one);
    free(three);
    free(one);
}
END_TEST

START_TEST(bad_inputs)
{
    char *out = loom_test_cli_expect(2, "tune --model vlm-s --gpus 1031 --global-batch 512 " TUNED);
    loom_test_has(out, "--gpus 1031: no layout uses 1031 GPUs");
    free(out);
    out = loom_test_cli_expect(2, "tune --model vlm-s --gpus 8 --global-batch 8 --jobs 0");
    loom_test_has(out, "--jobs");
    free(out);
    out = loom_test_cli_expect(2, "tune --model vlm-s --gpus 8 --global-batch 7 --micro-batch-size 2 " TUNED);
    loom_test_has(out, "--global-batch 7: no layout of 8 GPUs divides it");
    free(out);
    out = loom_test_cli_expect(2, "tune --model vlm-l --gpus 1 --global-batch 4 --quiet " TUNED);
    loom_test_has(out, "vlm-l fits no configuration of 1 GPUs: static memory runs out first");
    loom_test_has(out, "GiB of parameters");
    free(out);
    out = loom_test_cli_expect(2, "tune --model vlm-s --global-batch 4");
    loom_test_has(out, "--model, --gpus and --global-batch are required");
    free(out);
    out = loom_test_cli_expect(2, "tune --model vlm-s --gpus 8 --global-batch 8 --parallel tp=2");
    loom_test_has(out, "--parallel fixes what `loom tune` searches");
    free(out);
    out = loom_test_cli_expect(2, "tune --model vlm-s --gpus 0 --global-batch 8");
    loom_test_has(out, "--gpus");
    free(out);
}
END_TEST

/* --runtime torchtitan ranks only plans torchtitan.toml states: every
 * ranked layout trains bf16 through FSDP (dp or cp above 1), the winner's
 * folder holds the file, and the others are infeasible with the export's
 * reason. A name that is no export's key is refused. */
START_TEST(runtime_ranks_what_the_export_states)
{
    char dir[64];
    loom_test_mkdtemp(dir, sizeof dir, "tune");
    /* without --manifest, --runtime torchtitan searches torchtitan-tuned.json */
    const char *llama = "--model " LOOM_TEST_SOURCE_DIR "/examples/models/hf/llama-3-8b.json "
                        "--gpus 8 --global-batch 16 --quiet --json";
    char *out = loom_test_cli_expect(0, "tune %s --runtime torchtitan --out %s/best", llama, dir);
    cJSON *doc = cJSON_Parse(out);
    ck_assert_ptr_nonnull(doc);
    const cJSON *e, *ranked = cJSON_GetObjectItemCaseSensitive(doc, "ranked");
    ck_assert_int_gt(cJSON_GetArraySize(ranked), 0);
    cJSON_ArrayForEach(e, ranked)
    {
        const cJSON *lay = cJSON_GetObjectItemCaseSensitive(e, "layout");
        ck_assert(deg(lay, "dp") > 1 || deg(lay, "cp") > 1);
        ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "manifest")),
                         "torchtitan-tuned");
    }
    int refused = 0;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(doc, "infeasible"))
    {
        const char *why = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "reason"));
        refused += why && !strcmp(why, "torchtitan: the plan is priced in bf16 at data-parallel "
                                       "degree 1 and cp 1; torchtitan 0.2.2 trains mixed "
                                       "precision only through FSDP (data-parallel shard degree "
                                       "or cp above 1) and otherwise, under pipeline "
                                       "parallelism, in float32");
    }
    ck_assert_int_gt(refused, 0);
    char path[256];
    snprintf(path, sizeof path, "%s/best/torchtitan.toml", dir);
    ck_assert_int_eq(access(path, R_OK), 0);
    cJSON_Delete(doc);
    free(out);
    /* the report names the runtime, and shards of the search merge to it */
    char whole[128], merged[128], s1[128], s2[128];
    snprintf(whole, sizeof whole, "%s/whole.json", dir);
    snprintf(merged, sizeof merged, "%s/merged.json", dir);
    snprintf(s1, sizeof s1, "%s/s1.json", dir);
    snprintf(s2, sizeof s2, "%s/s2.json", dir);
    free(loom_test_cli_expect(0, "tune %s --runtime torchtitan --top 3 --json %s", llama, whole));
    free(loom_test_cli_expect(0, "tune %s --runtime torchtitan --top 3 --shard 1/2 --json %s",
                              llama, s1));
    free(loom_test_cli_expect(0, "tune %s --runtime torchtitan --top 3 --shard 2/2 --json %s",
                              llama, s2));
    free(loom_test_cli_expect(0, "tune merge %s %s --json %s --quiet", s1, s2, merged));
    char *want = loom_test_slurp(whole), *got = loom_test_slurp(merged);
    loom_test_has(want, "\"runtime\": \"torchtitan\"");
    ck_assert_str_eq(got, want);
    free(want);
    free(got);
    /* a shard of the same search without the runtime is another search */
    free(loom_test_cli_expect(0, "tune %s --top 3 --shard 2/2 --json %s", llama, s2));
    out = loom_test_cli_expect(2, "tune merge %s %s --json %s", s1, s2, merged);
    loom_test_has(out, "from a different search");
    free(out);
    /* Megatron-LM's distributed optimizer is not torchtitan's FSDP2: with
     * megatron-tuned.json torchtitan states none of the plans that fit */
    out = loom_test_cli_expect(2, "tune %s " TUNED " --runtime torchtitan", llama);
    loom_test_has(out, "layouts of " LOOM_TEST_SOURCE_DIR "/examples/models/hf/llama-3-8b.json "
                       "on 8 GPUs fit, but the torchtitan export states none of them (the "
                       "infeasible list gives each reason; the first: ");
    loom_test_has(out, "\"torchtitan: the plan is priced with Megatron-LM's distributed "
                       "optimizer, whole weights and gradients on every data-parallel replica;");
    free(out);
    out = loom_test_cli_expect(2, "tune %s --runtime deepspeed", llama);
    loom_test_has(out, "--runtime: expected pytorch_csv, torchtitan, megatron or mimo "
                       "(plan.json's exports keys), found 'deepspeed'");
    free(out);
    loom_test_rmdir(dir);
}
END_TEST

START_TEST(out_writes_the_winner)
{
    char dir[64];
    loom_test_mkdtemp(dir, sizeof dir, "tune");
    char *out = loom_test_cli_expect(0, "tune " TINY " --gpus 4 --global-batch 8 --top 1 --quiet --json "
                       TUNED " --out %s/best", dir);
    cJSON *doc = cJSON_Parse(out);
    ck_assert_ptr_nonnull(doc);
    cJSON *lay = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "ranked"), 0), "layout");
    char *lay_text = cJSON_PrintUnformatted(lay);
    const char *files[] = {"plan.json", "report.html", "trace.json", "summary.txt"};
    for (int i = 0; i < 4; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/best/%s", dir, files[i]);
        ck_assert_msg(access(path, R_OK) == 0, "tune --out wrote no %s", path);
    }
    /* the plan `loom plan` makes of the winner's layout says the same */
    char par[256];
    snprintf(par, sizeof par, "tp=%d,cp=%d,pp=%d,dp=%d,vpp=%d,mb=%d",
             cJSON_GetObjectItemCaseSensitive(lay, "tp")->valueint,
             cJSON_GetObjectItemCaseSensitive(lay, "cp")->valueint,
             cJSON_GetObjectItemCaseSensitive(lay, "pp")->valueint,
             cJSON_GetObjectItemCaseSensitive(lay, "dp")->valueint,
             cJSON_GetObjectItemCaseSensitive(lay, "vpp")->valueint,
             cJSON_GetObjectItemCaseSensitive(lay, "microbatches")->valueint);
    char *plan = loom_test_cli_expect(0, "plan " TINY " --parallel %s --global-batch 8 --micro-batch-size %d "
                        "--iterations 1 --evaluations 200 --quiet --json " TUNED
                        " --param 'partitioner[0].vpp_sweep=false' "
                        "--param 'partitioner[1].vpp_sweep=false'",
                     par, cJSON_GetObjectItemCaseSensitive(lay, "micro_batch_size")->valueint);
    cJSON *pdoc = cJSON_Parse(plan);
    ck_assert_ptr_nonnull(pdoc);
    char *plan_lay = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(pdoc, "layout"));
    ck_assert_str_eq(plan_lay, lay_text);
    double a = cJSON_GetObjectItemCaseSensitive(pdoc, "makespan_ms")->valuedouble;
    double b = cJSON_GetObjectItemCaseSensitive(
                   cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "ranked"), 0),
                   "makespan_ms")->valuedouble;
    ck_assert_double_eq_tol(a, b, 1e-6);
    free(plan_lay);
    free(lay_text);
    cJSON_Delete(pdoc);
    cJSON_Delete(doc);
    free(plan);
    free(out);
    loom_test_rmdir(dir);
}
END_TEST

START_TEST(per_module_configurations_plan_the_same)
{
    char *out = loom_test_cli_expect(0, "tune " TINY " --gpus 8 --global-batch 16 --top 3 "
                                     "--quiet --json " TUNED);
    cJSON *doc = cJSON_Parse(out), *e, *pick = NULL;
    ck_assert_ptr_nonnull(doc);
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(doc, "ranked"))
        if (!pick && cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(e, "layout"),
                                                      "modules"))
            pick = e;
    ck_assert_msg(pick != NULL, "no per-module layout in the top 3:\n%s", out);
    cJSON *lay = cJSON_GetObjectItemCaseSensitive(pick, "layout");
    cJSON *vit = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(lay, "modules"),
                                                  "vit");
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(vit, "placement")->valuestring, "colocated");
    char par[512];
    snprintf(par, sizeof par, "{\"tp\": %d, \"cp\": %d, \"pp\": %d, \"dp\": %d, \"vpp\": %d, "
             "\"microbatches\": %d, \"modules\": {\"vit\": {\"tp\": %d}}}", deg(lay, "tp"),
             deg(lay, "cp"), deg(lay, "pp"), deg(lay, "dp"), deg(lay, "vpp"),
             deg(lay, "microbatches"), deg(vit, "tp"));
    char *plan = loom_test_cli_expect(0, "plan " TINY " --parallel '%s' --global-batch 16 "
                                      "--micro-batch-size %d --iterations 1 --evaluations 200 "
                                      "--quiet --json " TUNED
                                      " --param 'partitioner[0].vpp_sweep=false' "
                                      "--param 'partitioner[1].vpp_sweep=false'",
                                      par, deg(lay, "micro_batch_size"));
    cJSON *pdoc = cJSON_Parse(plan);
    ck_assert_ptr_nonnull(pdoc);
    char *want = cJSON_PrintUnformatted(lay);
    char *got = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(pdoc, "layout"));
    ck_assert_str_eq(got, want);
    ck_assert_double_eq_tol(cJSON_GetObjectItemCaseSensitive(pdoc, "makespan_ms")->valuedouble,
                            cJSON_GetObjectItemCaseSensitive(pick, "makespan_ms")->valuedouble,
                            1e-6);
    free(got);
    free(want);
    cJSON_Delete(pdoc);
    cJSON_Delete(doc);
    free(plan);
    free(out);
}
END_TEST

START_TEST(plan_json_reports_module_layouts)
{
    /* a disjoint vit: 16 top-level GPUs and 4 of its own */
    char *out = loom_test_cli_expect(0, "plan --model vlm-s --parallel " LOOM_TEST_SOURCE_DIR
                                     "/examples/parallel/vlm-s-vit-disjoint.json --manifest "
                                     MANIFESTS "hetero.json --param partitioner.mode=given "
                                     "--quiet --json");
    cJSON *doc = cJSON_Parse(out);
    ck_assert_ptr_nonnull(doc);
    cJSON *lay = cJSON_GetObjectItemCaseSensitive(doc, "layout");
    ck_assert_int_eq(deg(lay, "gpus"), 20);
    ck_assert_int_eq(deg(lay, "tp") * deg(lay, "pp") * deg(lay, "dp"), 16);
    cJSON *mods = cJSON_GetObjectItemCaseSensitive(lay, "modules");
    ck_assert_int_eq(cJSON_GetArraySize(mods), 1); /* the llm keeps the top-level layout */
    cJSON *vit = cJSON_GetObjectItemCaseSensitive(mods, "vit");
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(vit, "placement")->valuestring, "disjoint");
    ck_assert_int_eq(deg(vit, "tp"), 1);
    ck_assert_int_eq(deg(vit, "pp"), 2);
    ck_assert_int_eq(deg(vit, "dp"), 2);
    ck_assert_int_eq(deg(vit, "gpus"), 4);
    cJSON_Delete(doc);
    free(out);
    /* MFU counts the GPUs a replica holds: a disjoint vit serving both
     * replicas counts half its GPUs, so model FLOPs = mfu x time x GPUs
     * come out the same as a single layout's on the same batch (with
     * --global-batch both plan the heaviest replica of the whole batch and
     * count every replica's FLOPs) */
    char *a = loom_test_cli_expect(0, "plan --model vlm-s --global-batch 64 --micro-batch-size 1 "
                                   "--iterations 1 --evaluations 200 --quiet --json --parallel "
                                   "'{\"tp\": 1, \"cp\": 2, \"pp\": 3, \"dp\": 2, "
                                   "\"microbatches\": 32, \"modules\": {\"vit\": {\"tp\": 4, "
                                   "\"pp\": 1, \"dp\": 1, \"cp\": 1, \"placement\": "
                                   "\"disjoint\"}}}' --manifest " MANIFESTS "hetero.json "
                                   "--param partitioner.mode=given");
    char *b = loom_test_cli_expect(0, "plan --model vlm-s --global-batch 64 --micro-batch-size 1 "
                                   "--iterations 1 --quiet --json --parallel "
                                   "tp=1,cp=2,pp=4,dp=2,mb=32");
    double flops[2];
    char *texts[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        cJSON *d = cJSON_Parse(texts[i]);
        ck_assert_ptr_nonnull(d);
        flops[i] = cJSON_GetObjectItemCaseSensitive(d, "mfu")->valuedouble *
                   cJSON_GetObjectItemCaseSensitive(d, "makespan_ms")->valuedouble * 16;
        cJSON_Delete(d);
    }
    ck_assert_double_eq_tol(flops[0] / flops[1], 1.0, 1e-5);
    free(a);
    free(b);
    /* a single layout has no "modules" */
    out = loom_test_cli_expect(0, "plan --model vlm-s --quiet --json");
    ck_assert_ptr_null(strstr(out, "\"modules\""));
    free(out);
    /* the parallel object inline: errors name --parallel and the path */
    out = loom_test_cli_expect(2, "plan --model vlm-s --parallel '{\"tp\": 4, \"pp\": 4, "
                               "\"modules\": {\"vit\": {\"tp\": 3}}}' --quiet");
    loom_test_has(out, "--parallel: modules.vit.tp: expected a divisor of every layer's "
                       "attention heads, found 3");
    free(out);
    out = loom_test_cli_expect(2, "plan --model vlm-s --parallel '{\"tp\": 4,' --quiet");
    loom_test_has(out, "--parallel:");
    free(out);
}
END_TEST

START_TEST(plan_batch_identity)
{
    char *out = loom_test_cli_expect(2, "plan --model vlm-s --parallel tp=2,pp=4,dp=8,mb=16 --global-batch 512 "
                       "--micro-batch-size 1 --quiet");
    loom_test_has(out, "--global-batch 512 != micro-batch-size 1 x microbatches 16 x dp 8 = 128");
    free(out);
    out = loom_test_cli_expect(2, "plan --model vlm-s --parallel dp=2 --global-batch 9 --quiet");
    loom_test_has(out, "--global-batch 9: expected a multiple of micro-batch-size 1 x dp 2 = 2");
    free(out);
    /* derived microbatches: 24 / (2 x 2) = 6 */
    out = loom_test_cli_expect(0, "plan --model vlm-s --parallel tp=2,pp=2,dp=2 --global-batch 24 "
                 "--micro-batch-size 2 --iterations 1 --quiet --json");
    loom_test_has(out, "\"microbatches\": 6, \"micro_batch_size\": 2, \"global_batch\": 24");
    free(out);
    /* the model's own layout states the identity it implies */
    out = loom_test_cli_expect(0, "plan --model vlm-s --iterations 1 --quiet --json");
    loom_test_has(out, "\"micro_batch_size\": 1, \"global_batch\": ");
    free(out);
    out = loom_test_cli_expect(2, "plan --global-batch 0 --quiet");
    loom_test_has(out, "--global-batch: expected an integer");
    free(out);
}
END_TEST

START_TEST(plan_memory_hint)
{
    char *out = loom_test_cli_expect(1, "plan --model " LOOM_TEST_SOURCE_DIR
                       "/examples/models/hf/llama-3-8b.json --iterations 1 --quiet");
    loom_test_has(out, "rank 0 cannot fit the memory cap");
    loom_test_has(out, "static memory of a rank is 134.62 GiB");
    loom_test_has(out, "gradients + optimizer states");
    loom_test_has(out, "loom tune --model");
    free(out);
}
END_TEST

/* The suite. */
static Suite *suite(void)
{
    Suite *s = suite_create("tune-cli");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, shards_merge_to_the_same_bytes);
    tcase_add_test(tc, bad_inputs);
    tcase_add_test(tc, out_writes_the_winner);
    tcase_add_test(tc, runtime_ranks_what_the_export_states);
    tcase_add_test(tc, plan_batch_identity);
    tcase_add_test(tc, plan_memory_hint);
    tcase_add_test(tc, jobs_print_the_same_bytes);
    tcase_add_test(tc, readme_tune_example);
    tcase_add_test(tc, per_module_configurations_plan_the_same);
    tcase_add_test(tc, plan_json_reports_module_layouts);
    suite_add_tcase(s, tc);
    return s;
}

/* Runs the suite. */
int main(void)
{
    return loom_test_main(suite());
}
