/* bench_calibrate.c - how well `loom calibrate` recovers known factors: for
 * each of several "true" factor sets it prices a vlm-s profile (both
 * modules' layer 0 at 3 token counts, 2 sequence lengths and TP 1, 2, 4)
 * with Loom's roofline on an h800 carrying those factors, optionally adds
 * seeded multiplicative noise, fits it with `loom calibrate` from the h800
 * preset's factors and prints each factor's relative error.
 *
 *   loom-bench-calibrate [--loom build/bin/loom] [--noise 0.0]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include <loom/sys/json.h>
#include <loom/sys/session.h>

static const char *const keys[4] = {"gemm", "attention", "memory", "collective"};

/* Writes the h800 cluster with factors f to path. */
static int write_cluster(const char *path, const double f[4])
{
    FILE *o = fopen(path, "w");
    if (!o)
        return -1;
    fprintf(o, "{\"name\": \"truth\", \"peak_flops\": 989e12, \"hbm_bytes_per_s\": 3.35e12, "
               "\"hbm_bytes\": 85899345920, \"gpus_per_node\": 8, \"nvlink_bytes_per_s\": "
               "200e9, \"net_bytes_per_s\": 25e9, \"efficiency\": {\"gemm\": %.6f, "
               "\"attention\": %.6f, \"memory\": %.6f, \"collective\": %.6f, "
               "\"gemm_half_flops\": 4e9, \"attention_half_flops\": 4e9}}\n",
            f[0], f[1], f[2], f[3]);
    return fclose(o);
}

/* A seeded uniform number in [-1, 1]. */
static double jitter(unsigned long long *st)
{
    *st = *st * 6364136223846793005ULL + 1442695040888963407ULL;
    return 2.0 * ((double)(*st >> 11) / 9007199254740992.0) - 1.0;
}

/* Prices the profile on `cluster` into csv; 0 on success. */
static int write_profile(const char *cluster, const char *csv, double noise,
                         unsigned long long seed)
{
    loom_session *s = NULL;
    loom_session_args a;
    loom_session_args_init(&a);
    a.model = "vlm-s";
    a.cluster = cluster;
    a.no_workload = 1;
    loom_error err = {0, ""};
    if (loom_session_open(&s, &a, &err) != LOOM_OK) {
        fprintf(stderr, "bench_calibrate: %s\n", err.message);
        return -1;
    }
    FILE *o = fopen(csv, "w");
    int rc = o ? 0 : -1;
    if (o)
        fprintf(o, "module,layer,tokens,tp,forward_ms,backward_ms,seq_len\n");
    static const long long tokens[] = {512, 4096, 32768};
    static const long long seqs[] = {512, 8192};
    static const int tps[] = {1, 2, 4};
    for (int m = 0; o && rc == 0 && m < 2; m++)
        for (int t = 0; t < 3; t++)
            for (int q = 0; q < 2; q++)
                for (int p = 0; p < 3; p++) {
                    long long seq = seqs[q] < tokens[t] ? seqs[q] : tokens[t];
                    if (q && seq == tokens[t] && seqs[0] >= tokens[t])
                        continue;
                    loom_shape sh = LOOM_SHAPE_INIT;
                    sh.tokens = tokens[t];
                    sh.sequences = tokens[t] / seq;
                    sh.seq_sq_sum = (double)tokens[t] * (double)seq;
                    sh.tp = tps[p];
                    sh.trainable_upstream = 1;
                    loom_layer_cost c;
                    if (loom_session_layer_cost(s, m, 0, &sh, LOOM_POLICY_NONE, &c, &err)) {
                        fprintf(stderr, "bench_calibrate: %s\n", err.message);
                        rc = -1;
                        break;
                    }
                    fprintf(o, "%s,0,%lld,%d,%.9g,%.9g,%lld\n", m ? "llm" : "vit", tokens[t],
                            tps[p], c.forward_ms * (1 + noise * jitter(&seed)),
                            (c.input_grad_ms + c.weight_grad_ms) * (1 + noise * jitter(&seed)),
                            seq);
                }
    if (o && fclose(o) != 0)
        rc = -1;
    loom_session_close(s);
    return rc;
}

int main(int argc, char **argv)
{
    const char *loom = "build/bin/loom";
    double noise = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--loom"))
            loom = argv[i + 1];
        else if (!strcmp(argv[i], "--noise"))
            noise = atof(argv[i + 1]);
    }
    static const double truths[][4] = {
        {0.62, 0.47, 0.69, 0.55}, {0.85, 0.70, 0.90, 0.80}, {0.50, 0.35, 0.60, 0.40},
        {0.70, 0.55, 0.75, 0.65}, {0.90, 0.30, 0.50, 0.90}};
    char dir[] = "/tmp/loom-bench-calibrate-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char cl[128], csv[128], out[128];
    snprintf(cl, sizeof cl, "%s/truth.json", dir);
    snprintf(csv, sizeof csv, "%s/profile.csv", dir);
    snprintf(out, sizeof out, "%s/fitted.json", dir);
    printf("loom calibrate on vlm-s profiles priced at known factors (noise %.1f %%), fitted "
           "from the h800 preset (0.6 0.45 0.8 0.7)\n", 100 * noise);
    printf("%-28s %-28s %s\n", "true gemm/attn/mem/coll", "fitted", "largest error");
    double worst = 0;
    int failed = 0;
    for (size_t k = 0; k < sizeof truths / sizeof truths[0]; k++) {
        const double *f = truths[k];
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "%s calibrate --cluster h800 --model vlm-s --profile %s "
                 "--out %s --max-residual 50 > /dev/null", loom, csv, out);
        cJSON *root = NULL;
        loom_error err = {0, ""};
        if (write_cluster(cl, f) || write_profile(cl, csv, noise, 7 + k) || system(cmd) != 0 ||
            loom_json_load(out, &root, &err) != LOOM_OK) {
            printf("%.2f %.2f %.2f %.2f: failed %s\n", f[0], f[1], f[2], f[3], err.message);
            failed = 1;
            continue;
        }
        const cJSON *e = cJSON_GetObjectItem(root, "efficiency");
        double got[4], most = 0;
        for (int j = 0; j < 4; j++) {
            got[j] = cJSON_GetNumberValue(cJSON_GetObjectItem(e, keys[j]));
            most = fmax(most, fabs(got[j] - f[j]) / f[j]);
        }
        cJSON_Delete(root);
        worst = fmax(worst, most);
        char t[64], g[64];
        snprintf(t, sizeof t, "%.2f %.2f %.2f %.2f", f[0], f[1], f[2], f[3]);
        snprintf(g, sizeof g, "%.4f %.4f %.4f %.4f", got[0], got[1], got[2], got[3]);
        printf("%-28s %-28s %.3f %%\n", t, g, 100 * most);
    }
    printf("largest relative error over all factors and sets: %.3f %%\n", 100 * worst);
    unlink(cl);
    unlink(csv);
    unlink(out);
    rmdir(dir);
    return failed;
}
