/*
 * bench_disttrain_alloc.c - the speed target of DistTrain's orchestration
 * (DistTrain §8.2, Table 2): plan MLLM-72B on 1296 GPUs with global batch
 * 1920 and print the median planning time of the whole disttrain-alloc
 * partitioner step (cost measurement through the roofline cost model,
 * the TP x DP search, and the partition layout).
 *
 * usage: bench-disttrain-alloc [RUNS] [MODEL] [GPUS] [GLOBAL_BATCH]
 * defaults: 11 runs, examples/models/disttrain-mllm-72b.json, 1296, 1920.
 * The cluster is the a100 preset (80 GB; DistTrain used A800s); the data
 * is one seeded "interleaved" iteration of GLOBAL_BATCH microbatches.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <loom/mock_host.h>
#include "engine_api.h"
#include <loom/sys/problem.h>

const loom_plugin_info *loom_static_disttrain_alloc(void);
const loom_plugin_info *loom_static_roofline(void);

/* The roofline instance and problem behind the benchmark's "loom.cost". */
static struct {
    const loom_cost_model_vtable *vt;
    void *self;
    const loom_problem *problem;
} bench;

/* Monotonic clock in milliseconds. */
static double bench_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* "loom.cost" layer(): the roofline estimate. */
static int bench_layer(loom_ctx *ctx, int32_t module, int32_t layer,
                       const loom_shape *shape, int32_t policy,
                       loom_layer_cost *out, loom_error *err)
{
    (void)ctx;
    return bench.vt->estimate(bench.self, bench.problem, module, layer, shape,
                              policy, out, err);
}

/* "loom.cost" module_shape(): the core's shape of one microbatch, or the
 * mean over all microbatches for microbatch -1. */
static int bench_shape(loom_ctx *ctx, int32_t module, const loom_iteration *it,
                       int32_t microbatches, int32_t microbatch, int32_t subs,
                       loom_shape *out, loom_error *err)
{
    (void)ctx, (void)err;
    if (microbatch >= 0) {
        loom_shape_for(bench.problem, module, it, NULL, microbatches,
                       microbatch, subs, out);
        return LOOM_OK;
    }
    double tokens = 0, sq = 0, seqs = 0;
    for (int32_t mb = 0; mb < microbatches; mb++) {
        loom_shape s = LOOM_SHAPE_INIT;
        loom_shape_for(bench.problem, module, it, NULL, microbatches, mb, subs, &s);
        tokens += (double)s.tokens;
        sq += s.seq_sq_sum;
        seqs += (double)s.sequences;
        out->tp = s.tp;
    }
    out->tokens = (int64_t)(tokens / microbatches);
    out->seq_sq_sum = sq / microbatches;
    out->sequences = (int64_t)((seqs + microbatches - 1) / microbatches);
    out->trainable_upstream = 0;
    return LOOM_OK;
}

static const loom_cost_service bench_cost = {
    sizeof(loom_cost_service), 1, bench_layer, bench_shape, NULL, NULL, NULL,
};

/* Orders doubles ascending (qsort). */
static int bench_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Loads the inputs, runs the partitioner RUNS times, prints the median. */
int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 11;
    const char *model_spec = argc > 2 ? argv[2]
                                      : LOOM_SOURCE_DIR "/examples/models/disttrain-mllm-72b.json";
    const char *gpus = argc > 3 ? argv[3] : "1296";
    int batch = argc > 4 ? atoi(argv[4]) : 1920;
    if (runs < 1 || runs > 1000 || batch < 1) {
        fprintf(stderr, "usage: bench-disttrain-alloc [RUNS] [MODEL] [GPUS] [GLOBAL_BATCH]\n");
        return 2;
    }
    loom_error err = {0, ""};
    loom_model_data *md = NULL;
    loom_cluster_data *cd = NULL;
    loom_workload *wl = NULL;
    if (loom_model_load(model_spec, &md, &err) != LOOM_OK ||
        loom_cluster_load("a100", &cd, &err) != LOOM_OK ||
        loom_workload_generate_packed("interleaved", 1, batch, 1, NULL, &wl, &err) != LOOM_OK) {
        fprintf(stderr, "bench-disttrain-alloc: %s\n", err.message);
        loom_model_data_free(md);
        loom_cluster_data_free(cd);
        return 2;
    }
    loom_problem pb;
    memset(&pb, 0, sizeof pb);
    pb.struct_size = sizeof pb;
    pb.kind = LOOM_PROBLEM_MODEL;
    loom_model_info mi;
    loom_model_data_info(md, &mi);
    pb.model = mi.model;
    pb.cluster = loom_cluster_data_cluster(cd);
    if (mi.parallel)
        pb.parallel = *mi.parallel;
    pb.parallel.microbatches = batch;
    bench.problem = &pb;

    /* each plugin reads its params' defaults from its own manifest */
    loom_mock_host *h = loom_mock_host_new_with_manifest(LOOM_SOURCE_DIR "/plugins/disttrain-alloc");
    loom_mock_host *hc = loom_mock_host_new_with_manifest(LOOM_SOURCE_DIR "/plugins/roofline");
    if (!h || !hc)
        return 1;
    loom_mock_host_set_problem(h, &pb);
    loom_mock_host_set_problem(hc, &pb);
    char batch_text[32];
    snprintf(batch_text, sizeof batch_text, "%d", batch);
    loom_mock_host_set_param(h, "gpus", gpus);
    loom_mock_host_set_param(h, "global_batch", batch_text);
    loom_mock_host_add_service(h, LOOM_SERVICE_COST, 1, &bench_cost);
    const loom_host_api *api = loom_mock_host_api(h);
    bench.vt = (const loom_cost_model_vtable *)loom_static_roofline()->role(
        LOOM_ROLE_COST_MODEL);
    const loom_partitioner_vtable *pv =
        (const loom_partitioner_vtable *)loom_static_disttrain_alloc()->role(
            LOOM_ROLE_PARTITIONER);
    void *part_self = NULL;
    int rc = bench.vt->create(loom_mock_host_api(hc), loom_mock_host_ctx(hc), NULL, &bench.self,
                              &err);
    if (rc == LOOM_OK)
        rc = pv->create(api, loom_mock_host_ctx(h), NULL, &part_self, &err);
    double *ms = calloc((size_t)runs, sizeof *ms);
    char label[64] = "";
    for (int r = 0; r < runs && rc == LOOM_OK && ms; r++) {
        loom_candidates *set = loom_candidates_new(&pb, &wl->iterations[0]);
        double t0 = bench_now_ms();
        rc = pv->partition(part_self, &pb, &wl->iterations[0], set, &err);
        ms[r] = bench_now_ms() - t0;
        if (rc == LOOM_OK && set->n > 0)
            memcpy(label, set->items[0]->label, sizeof label);
        loom_candidates_free(set);
    }
    if (rc == LOOM_OK && ms) {
        qsort(ms, (size_t)runs, sizeof *ms, bench_cmp);
        printf("disttrain-alloc: %s on %s GPUs (a100), global batch %d\n",
               pb.model->name, gpus, batch);
        printf("search: %s\n", loom_mock_host_last_log(h));
        printf("best plan: %s\n", label);
        printf("planning time over %d runs: median %.1f ms (min %.1f, max %.1f)\n",
               runs, ms[runs / 2], ms[0], ms[runs - 1]);
    } else {
        fprintf(stderr, "bench-disttrain-alloc: %s\n",
                ms ? err.message : "out of memory");
    }
    free(ms);
    if (part_self)
        pv->destroy(part_self);
    if (bench.self)
        bench.vt->destroy(bench.self);
    loom_mock_host_free(h);
    loom_mock_host_free(hc);
    loom_workload_free(wl);
    loom_cluster_data_free(cd);
    loom_model_data_free(md);
    return rc == LOOM_OK ? 0 : 1;
}
