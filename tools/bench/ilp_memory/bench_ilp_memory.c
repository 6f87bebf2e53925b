/*
 * bench_ilp_memory.c - median time of the "ilp" memory tuner (PipeWeaver
 * section 6.3; the target is < 10 ms for a VLM-M iteration).
 *
 * By default it plans iteration 0 of VLM-M with the PipeWeaver manifest
 * (ranker replaced by fifo) and hands that iteration's stage graph and
 * schedule to the tuner alone; --synthetic uses a generated instance of
 * the same order of size instead (no other plugin involved). The cap is
 * set cap_frac of the way from the most frugal peak to the all-NONE peak
 * of that schedule, so the tuner has to work.
 *
 * Usage: loom_bench_ilp_memory [--synthetic] [--runs N] [--model M]
 *          [--manifest FILE] [--iteration K] [--cap-frac X] [--gap G]
 *          [--timeout-ms T] [--seed S]
 * Prints the instance, the median wall time of one tune() call, the
 * median time of its ILP part (from the tuner's debug log) and the total
 * latency of the greedy and ilp choices.
 */
#include <loom/mock_host.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_ilp_memory.h"

const loom_plugin_info *loom_static_ilp_memory(void);
const loom_plugin_info *loom_static_greedy(void);

static const loom_simulator_service SIM = {
    sizeof(loom_simulator_service), 1, loom_sim_scratch_new,
    loom_sim_scratch_free, loom_sim_run,
};

typedef struct bench_opts {
    int synthetic, runs;
    const char *model, *manifest, *gap, *timeout_ms;
    int32_t iteration;
    double cap_frac;
    uint64_t seed;
} bench_opts;

/* Parses the command line; returns 0 on a bad option. */
static int parse(int argc, char **argv, bench_opts *o)
{
    o->synthetic = 0;
    o->runs = 21;
    o->model = "vlm-m";
    o->manifest = LOOM_BENCH_SOURCE_DIR "/examples/manifests/pipeweaver.json";
    o->gap = NULL;
    o->timeout_ms = NULL;
    o->iteration = 0;
    o->cap_frac = 0.5;
    o->seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--synthetic")) {
            o->synthetic = 1;
            continue;
        }
        if (!v)
            return 0;
        if (!strcmp(a, "--runs"))
            o->runs = atoi(v);
        else if (!strcmp(a, "--model"))
            o->model = v;
        else if (!strcmp(a, "--manifest"))
            o->manifest = v;
        else if (!strcmp(a, "--iteration"))
            o->iteration = atoi(v);
        else if (!strcmp(a, "--cap-frac"))
            o->cap_frac = atof(v);
        else if (!strcmp(a, "--gap"))
            o->gap = v;
        else if (!strcmp(a, "--timeout-ms"))
            o->timeout_ms = v;
        else if (!strcmp(a, "--seed"))
            o->seed = strtoull(v, NULL, 10);
        else
            return 0;
        i++;
    }
    return o->runs >= 1;
}

/* CPU time of this process in ms (insensitive to other processes' load,
 * unlike the wall clock). */
static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* qsort order of doubles, ascending. */
static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Total forward + backward latency of a policy choice. */
static double latency(const loom_stage_graph *g, const uint8_t *pol)
{
    double sum = 0.0;
    for (int32_t e = 0; e < g->n_layer_entries; e++) {
        const loom_policy_option *o =
            &g->layer_options[(size_t)e * LOOM_POLICY_COUNT + pol[e]];
        sum += o->forward_ms + o->backward_ms;
    }
    return sum;
}

/* Creates a tuner from a static plugin on host h. */
static void *make(const loom_memory_tuner_vtable *vt, loom_mock_host *h)
{
    void *self = NULL;
    loom_error err = {0};
    if (vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h), NULL, &self,
                   &err) != LOOM_OK) {
        fprintf(stderr, "create: %s\n", err.message);
        exit(1);
    }
    return self;
}

/* Builds the instance, times both tuners and prints the figures. */
int main(int argc, char **argv)
{
    bench_opts o;
    if (!parse(argc, argv, &o)) {
        fprintf(stderr, "usage: %s [--synthetic] [--runs N] [--model M] "
                        "[--manifest FILE] [--iteration K] [--cap-frac X] "
                        "[--gap G] [--timeout-ms T] [--seed S]\n", argv[0]);
        return 2;
    }
    loom_bench_instance in;
    loom_error err = {0};
    int rc = o.synthetic ? loom_bench_synthetic(o.seed, &in)
                         : loom_bench_planned(o.manifest, o.model, o.iteration,
                                              &in, &err);
    if (rc != LOOM_OK) {
        fprintf(stderr, "instance: %s\n", err.message);
        return 1;
    }
    loom_stage_graph *g = in.graph;
    int64_t lo = loom_bench_uniform_peak(g, in.schedule, LOOM_POLICY_FULL);
    int64_t hi = loom_bench_uniform_peak(g, in.schedule, LOOM_POLICY_NONE);
    g->memory_cap_bytes = (double)lo + o.cap_frac * (double)(hi - lo);

    loom_mock_host *h =
        loom_mock_host_new_with_manifest(LOOM_BENCH_SOURCE_DIR "/plugins/ilp-memory");
    if (!h)
        return 1;
    loom_mock_host_add_service(h, LOOM_SERVICE_SIMULATOR, 1, &SIM);
    if (o.gap)
        loom_mock_host_set_param(h, "gap", o.gap);
    if (o.timeout_ms)
        loom_mock_host_set_param(h, "timeout_ms", o.timeout_ms);
    const loom_memory_tuner_vtable *ilp =
        (const loom_memory_tuner_vtable *)loom_static_ilp_memory()->role(
            LOOM_ROLE_MEMORY_TUNER);
    const loom_memory_tuner_vtable *gr =
        (const loom_memory_tuner_vtable *)loom_static_greedy()->role(
            LOOM_ROLE_MEMORY_TUNER);
    void *self = make(ilp, h), *greedy = make(gr, h);
    uint8_t *pol = malloc((size_t)g->n_layer_entries + 1);
    double *total = malloc((size_t)o.runs * sizeof *total);
    double *part = malloc((size_t)o.runs * sizeof *part);
    const loom_host_api *host = loom_mock_host_api(h);
    double *gtime = malloc((size_t)o.runs * sizeof *gtime);
    double *gcpu = malloc((size_t)o.runs * sizeof *gcpu);
    double *cpu = malloc((size_t)o.runs * sizeof *cpu);
    for (int i = 0; i < o.runs; i++) {
        double t0 = host->now_ms(), c0 = cpu_ms();
        if (gr->tune(greedy, g, in.schedule, pol, &err) != LOOM_OK) {
            fprintf(stderr, "greedy: %s\n", err.message);
            return 1;
        }
        gtime[i] = host->now_ms() - t0;
        gcpu[i] = cpu_ms() - c0;
    }
    double greedy_ms = latency(g, pol);
    int rows = 0, cols = 0, bounds = 0, lps = 0, mips = 0, better = 0;
    for (int i = 0; i < o.runs; i++) {
        double t0 = host->now_ms(), c0 = cpu_ms();
        rc = ilp->tune(self, g, in.schedule, pol, &err);
        total[i] = host->now_ms() - t0;
        cpu[i] = cpu_ms() - c0;
        if (rc != LOOM_OK) {
            fprintf(stderr, "ilp: %s\n", err.message);
            return 1;
        }
        part[i] = 0.0;
        const char *at = strstr(loom_mock_host_last_log(h), "ilp: ");
        if (at && strstr(at, "memory rows"))
            sscanf(at, "ilp: %d memory rows, %*d pairs, %d columns, %d bounds, "
                       "%d LPs, %d MIPs, %lf ms; %d ranks improved",
                   &rows, &cols, &bounds, &lps, &mips, &part[i], &better);
    }
    qsort(total, (size_t)o.runs, sizeof *total, cmp_double);
    qsort(part, (size_t)o.runs, sizeof *part, cmp_double);
    qsort(gtime, (size_t)o.runs, sizeof *gtime, cmp_double);
    qsort(gcpu, (size_t)o.runs, sizeof *gcpu, cmp_double);
    qsort(cpu, (size_t)o.runs, sizeof *cpu, cmp_double);
    printf("instance: %s\n", in.label);
    printf("  %d stages, %d stage pairs, %d layer entries, %d ranks; cap "
           "%.0f MiB (%.2f of the way from the most frugal to the NONE "
           "peak)\n",
           g->n_stages, g->n_pairs, g->n_layer_entries, g->n_ranks,
           g->memory_cap_bytes / 1048576.0, o.cap_frac);
    printf("ILP: %d memory rows, %d columns; ranks settled by the window "
           "bound %d, by an LP %d, by branch and bound %d; %d ranks improved "
           "on the warm start\n",
           rows, cols, bounds, lps - mips, mips, better);
    printf("median over %d runs (gap %s): tune %.3f ms wall (%.3f ms CPU), "
           "of which ILP %.3f ms wall\n",
           o.runs, o.gap ? o.gap : "0.05", total[o.runs / 2], cpu[o.runs / 2],
           part[o.runs / 2]);
    printf("the greedy tuner alone: median %.3f ms wall (%.3f ms CPU)\n",
           gtime[o.runs / 2], gcpu[o.runs / 2]);
    printf("total latency: greedy %.3f ms, ilp %.3f ms\n", greedy_ms,
           latency(g, pol));
    ilp->destroy(self);
    gr->destroy(greedy);
    loom_mock_host_free(h);
    free(pol);
    free(total);
    free(part);
    free(gtime);
    free(gcpu);
    free(cpu);
    loom_bench_instance_free(&in);
    return 0;
}
