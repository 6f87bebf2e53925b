/* cmd_tune.c - `loom tune`: chooses the parallel layout. Enumerates the
 * layouts of a GPU count and global batch, bounds each one in closed form,
 * simulates them with each manifest in order of increasing bound until no
 * remaining bound can enter the top, and ranks what it simulated
 * (docs/tune.md). `loom tune merge` is cmd_tune_merge.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ab_shard.h"
#include "cli.h"
#include <loom/sys/output.h>
#include <loom/sys/problem.h>
#include <loom/sys/util.h>
#include <loom/sys/session.h>
#include <loom/sys/json.h>
#include "tune.h"

#define GIB 1073741824.0

/* Prints the usage text. */
static void usage(FILE *out)
{
    fprintf(out,
            "usage: loom tune --model M [--cluster C] --gpus N --global-batch B [options]\n"
            "       loom tune merge SHARD.json... --json OUT\n\n"
            "Searches the parallel layouts of N GPUs (tp within a node, cp, pp, dp, vpp and\n"
            "the microbatch size; a multimodal model's encoders also at their own tp,\n"
            "colocated, or disjoint on their own GPUs for manifests that lay modules out)\n"
            "with every manifest, bounding each configuration in closed form and simulating\n"
            "in order of increasing bound until no bound left can enter the top; prints the\n"
            "ranked table and the infeasible layouts with their reasons.\n\n"
            "  --model SPEC          model preset or model.json (required)\n"
            "  --cluster SPEC        cluster preset or cluster.json (default h800)\n"
            "  --gpus N              GPUs to lay out (required)\n"
            "  --global-batch B      samples (sequences) per iteration (required)\n"
            "  --seq-len S           tokens per sequence (default %d)\n"
            "  --micro-batch-size K  sequences per microbatch (default: try 1, 2, 4, ...)\n"
            "  --manifest FILE       a planner manifest to search with; repeatable (default\n"
            "                        examples/manifests/megatron-tuned.json; with\n"
            "                        --runtime torchtitan, torchtitan-tuned.json)\n"
            "  --top K               configurations to rank (default %d)\n"
            "  --json [FILE]         print (or write to FILE) the JSON report\n"
            "  --out DIR             write the winner's plan as `loom plan --out DIR` does\n"
            "  --shard K/N           search the K-th of N slices of the space; --json FILE\n"
            "                        then writes a shard file for `loom tune merge`\n"
            "  --tp-across-nodes     let tp span nodes (default: within a node)\n"
            "  --single-layouts      one layout for the whole model (no per-module layouts)\n"
            "  --runtime KEY         rank only plans the runtime's export can state\n"
            "                        (plan.json exports key: pytorch_csv, torchtitan,\n"
            "                        megatron, mimo); the others are infeasible, with the\n"
            "                        export's reason\n"
            "  --jobs N              simulations at a time, each in a process of its own\n"
            "                        (default: the online CPUs; the report is the same)\n"
            "  --no-prune            simulate every configuration (checks the pruning)\n"
            "  --quiet               no progress line\n"
            "planning options as `loom plan`: --iterations (default 1), --seed, --evaluations\n"
            "  (default %d for searching manifests that set none), --memory-cap, --use,\n"
            "  --param, --plugin-path, --generate, --packing-window, --allow-untrusted-plugins\n"
            "exit codes: 0 ok, 1 planning failure, 2 usage or input error (also: no layout\n"
            "uses the GPUs, no microbatch size divides the batch, nothing fits), 3 plugin error\n",
            LOOM_DEFAULT_SEQUENCE_TOKENS, LOOM_TUNE_DEFAULT_TOP, LOOM_TUNE_DEFAULT_EVALUATIONS);
}

/* Options of one `loom tune` call. */
typedef struct tune_cli {
    loom_tune_search t;
    int json, quiet;
    const char *json_file, *out_dir;
    loom_out_target *json_out; /* json_file, resolved before any plugin code runs */
    char *out_abs;             /* out_dir made absolute likewise */
    int32_t shard_k, shard_n;
    int32_t jobs;          /* --jobs, 0: the online CPUs */
    int32_t n_sim, bound_violations;
    int tty; /* progress on a terminal */
    double bound_ms, walk_ms; /* wall time of the two phases */
} tune_cli;

enum { OPT_MANIFEST = 0x100, OPT_GPUS, OPT_TOP, OPT_JSON, OPT_OUT, OPT_SHARD, OPT_NO_PRUNE,
       OPT_TP_ACROSS, OPT_QUIET, OPT_SINGLE, OPT_JOBS, OPT_RUNTIME };

static const loom_cli_option tune_options[] = {
    {"manifest", 1, OPT_MANIFEST}, {"gpus", 1, OPT_GPUS},
    {"top", 1, OPT_TOP},           {"json", 0, OPT_JSON},
    {"out", 1, OPT_OUT},           {"shard", 1, OPT_SHARD},
    {"no-prune", 0, OPT_NO_PRUNE}, {"tp-across-nodes", 0, OPT_TP_ACROSS},
    {"quiet", 0, OPT_QUIET},       {"single-layouts", 0, OPT_SINGLE},
    {"jobs", 1, OPT_JOBS},         {"runtime", 1, OPT_RUNTIME},
    {NULL, 0, 0}};

/* One option or operand of `loom tune` (loom_cli_spec.handle). */
static int tune_option(void *ctx, int key, const char *name, const char *v)
{
    tune_cli *o = ctx;
    double d;
    loom_error err = {0};
    switch (key) {
    case LOOM_CLI_OPERAND:
        if (!o->json || o->json_file) {
            loom_cli_error("tune", "unexpected argument '%s'", v);
            return -1;
        }
        o->json_file = v;
        return 0;
    case OPT_MANIFEST:
        if (o->t.n_manifests >= LOOM_TUNE_MAX_MANIFESTS) {
            loom_cli_error("tune", "--manifest: at most %d", LOOM_TUNE_MAX_MANIFESTS);
            return -1;
        }
        o->t.manifests[o->t.n_manifests++] = v;
        return 0;
    case OPT_GPUS:
        if (loom_cli_number("tune", name, v, 1, LOOM_MAX_GPUS, &d))
            return -1;
        o->t.gpus = (int64_t)d;
        return 0;
    case OPT_TOP:
        if (loom_cli_number("tune", name, v, 1, 100000, &d))
            return -1;
        o->t.top = (int32_t)d;
        return 0;
    case OPT_JSON: o->json = 1; return 0;
    case OPT_OUT: o->out_dir = v; return 0;
    case OPT_SHARD:
        if (loom_ab_shard_parse(v, &o->shard_k, &o->shard_n, &err) != LOOM_OK) {
            loom_cli_error("tune", "%s", err.message);
            return -1;
        }
        return 0;
    case OPT_NO_PRUNE: o->t.no_prune = 1; return 0;
    case OPT_TP_ACROSS: o->t.tp_across_nodes = 1; return 0;
    case OPT_QUIET: o->quiet = 1; return 0;
    case OPT_SINGLE: o->t.single_layouts = 1; return 0;
    case OPT_RUNTIME:
        if (loom_export_fits(NULL, v, &(int){0}, NULL, 0, &err) != LOOM_OK) {
            loom_cli_error("tune", "--runtime: expected pytorch_csv, torchtitan, megatron or "
                           "mimo (plan.json's exports keys), found '%s'", v);
            return -1;
        }
        o->t.runtime = v;
        return 0;
    case OPT_JOBS:
        if (loom_cli_number("tune", name, v, 1, 64, &d))
            return -1;
        o->jobs = (int32_t)d;
        return 0;
    default: return -1;
    }
}

/* Checks what the options leave to `loom tune` itself; -1 after saying why. */
static int check_options(tune_cli *o)
{
    const loom_session_args *b = &o->t.base;
    const char *fixed = b->parallel ? "--parallel" : b->stage_times ? "--stage-times"
                      : b->workload ? "--workload" : NULL;
    if (fixed) {
        loom_cli_error("tune", "%s fixes what `loom tune` searches; leave it out", fixed);
        return -1;
    }
    if (!b->model || o->t.gpus < 1 || b->global_batch < 1) {
        loom_cli_error("tune", "--model, --gpus and --global-batch are required");
        return -1;
    }
    if (o->shard_n > 0 && !o->json_file) {
        loom_cli_error("tune", "--shard K/N needs --json FILE (the shard file to merge)");
        return -1;
    }
    if (o->shard_n > 0 && o->out_dir) {
        loom_cli_error("tune", "--out writes the winner, which only `loom tune merge` knows "
                       "with --shard");
        return -1;
    }
    return 0;
}

/* Fills the search from the options: defaults, manifests' names, model. */
static int prepare(tune_cli *o, loom_error *err)
{
    loom_tune_search *t = &o->t;
    static char dflt[4200];
    if (t->n_manifests == 0) {
        /* the shipped megatron-tuned.json, as `--manifest megatron-tuned` finds it;
         * torchtitan-tuned.json for --runtime torchtitan, priced as its FSDP2 runs */
        const char *name = t->runtime && !strcmp(t->runtime, "torchtitan") ? "torchtitan-tuned"
                                                                             : "megatron-tuned";
        if (loom_planner_manifest_resolve(name, dflt, sizeof dflt, err) != LOOM_OK)
            return LOOM_ENOTFOUND;
        t->manifests[t->n_manifests++] = dflt;
    }
    t->model = t->base.model;
    t->cluster = t->base.cluster ? t->base.cluster : "h800";
    t->global_batch = t->base.global_batch;
    t->micro_batch_size = t->base.micro_batch_size;
    t->seq_len = t->base.seq_len > 0 ? t->base.seq_len : LOOM_DEFAULT_SEQUENCE_TOKENS;
    if (t->top < 1)
        t->top = LOOM_TUNE_DEFAULT_TOP;
    if (t->base.iterations < 1)
        t->base.iterations = 1;
    t->base.default_max_evaluations = LOOM_TUNE_DEFAULT_EVALUATIONS;
    for (int32_t m = 0; m < t->n_manifests; m++) {
        int rc = loom_tune_read_manifest(t, m, err);
        if (rc != LOOM_OK)
            return rc;
    }
    loom_model_data *md = NULL;
    loom_cluster_data *cd = NULL;
    loom_model_info mi = {0};
    int rc = loom_model_load(t->model, &md, err);
    if (rc == LOOM_OK)
        rc = loom_cluster_load(t->cluster, &cd, err);
    loom_model_data_info(md, &mi);
    if (rc == LOOM_OK && mi.has_module_layouts)
        rc = loom_set_error(err, LOOM_EINVAL, "%s: the model's parallel object lists per-module "
                            "layouts, which `loom tune` chooses itself (docs/tune.md): remove "
                            "\"modules\" from it", t->model);
    if (rc == LOOM_OK)
        rc = loom_tune_space(t, mi.model, loom_cluster_data_cluster(cd), err);
    loom_model_data_free(md);
    loom_cluster_data_free(cd);
    return rc;
}

/* Keeps shard k of n's slice of the configurations (index % n == k - 1). */
static void keep_slice(loom_tune_search *t, int32_t k, int32_t n)
{
    int32_t j = 0;
    for (int32_t i = 0; i < t->n_configs; i++)
        if (t->configs[i].index % n == k - 1)
            t->configs[j++] = t->configs[i];
    t->n_configs = j;
}

/* Simulations (and bounding slices) at a time: --jobs, else the CPUs. */
static int32_t jobs_of(const tune_cli *o)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return o->jobs > 0 ? o->jobs : cpus > 64 ? 64 : cpus < 1 ? 1 : (int32_t)cpus;
}

/* Bounds every configuration of the search: in --jobs processes, then
 * in-process whatever they did not bound. */
static int bound_all(tune_cli *o, loom_error *err)
{
    char *bounded = calloc((size_t)o->t.n_configs + 1, 1);
    if (!bounded)
        return loom_set_error(err, LOOM_ENOMEM, "out of memory");
    if (o->tty)
        fprintf(stderr, "\rloom tune: bounding %d configurations", o->t.n_configs);
    loom_tune_bound_jobs(&o->t, jobs_of(o), bounded);
    int rc = LOOM_OK;
    for (int32_t i = 0; i < o->t.n_configs && rc == LOOM_OK; i++)
        if (!bounded[i])
            rc = loom_tune_bound(&o->t, &o->t.configs[i], err);
    free(bounded);
    if (o->tty)
        fputc('\n', stderr);
    return rc;
}

/* Walk callback: simulates one configuration, checking its bound. */
static int simulate(void *user, loom_tune_config *c)
{
    tune_cli *o = user;
    loom_error err = {0};
    int fresh = !c->simulated; /* else --jobs simulated it already */
    int rc = fresh ? loom_tune_simulate(&o->t, c, &err) : LOOM_OK;
    if (rc != LOOM_OK) {
        fprintf(stderr, "loom tune: %s\n", err.message);
        return rc;
    }
    if (o->tty && fresh)
        fprintf(stderr, "\rloom tune: simulated %d configurations", ++o->n_sim);
    if (c->result.feasible && c->result.makespan_ms < c->lower_bound_ms * (1 - 1e-9)) {
        o->bound_violations++;
        fprintf(stderr, "\nloom tune: warning: configuration %d simulated %.6f ms below its "
                "bound %.6f ms: the pruning may have dropped a better one\n", c->index,
                c->result.makespan_ms, c->lower_bound_ms);
    }
    return LOOM_OK;
}

/* Progress of the parallel simulations, on a terminal. */
static void prefetched(void *user)
{
    tune_cli *o = user;
    fprintf(stderr, "\rloom tune: simulated %d configurations", ++o->n_sim);
}

/* The JSON report in the shape loom_write_atomic calls. */
typedef struct json_job {
    const tune_cli *o;
    const loom_tune_walk *w;
} json_job;

/* Writes the report (or the shard file) of a job. */
static int write_job(void *ctx, FILE *out, loom_error *err)
{
    const json_job *j = ctx;
    int rc = j->o->shard_n > 0 ? loom_tune_write_shard(&j->o->t, j->o->shard_k, j->o->shard_n, out)
                               : loom_tune_write_json(&j->o->t, j->w, out);
    if (rc != LOOM_OK)
        return loom_set_error(err, rc, "cannot write the report");
    return LOOM_OK;
}

/* The reason of c when --runtime's export refused its plan (after
 * "RUNTIME: "), else NULL. */
static const char *runtime_reason(const loom_tune_search *t, const loom_tune_config *c)
{
    size_t n = t->runtime ? strlen(t->runtime) : 0;
    const char *r = c->simulated && !c->static_reason ? c->result.reason : NULL;
    return n && r && !strncmp(r, t->runtime, n) && r[n] == ':' ? r + n + 2 : NULL;
}

/* Says which resource ran out when nothing fits, or that --runtime's
 * export states none of the plans that fit; exit code 2. */
static int nothing_fits(const tune_cli *o, const loom_tune_walk *w)
{
    const loom_tune_search *t = &o->t;
    const loom_tune_config *least = NULL;
    const char *refusal = NULL;
    int all_static = 1;
    int32_t refused = 0;
    for (int32_t i = 0; i < w->n_infeasible; i++) {
        const loom_tune_config *c = &t->configs[w->infeasible[i]];
        double s = c->param_rank_bytes + c->state_rank_bytes;
        if (!least || s < least->param_rank_bytes + least->state_rank_bytes)
            least = c;
        if (c->simulated && c->result.reason && !c->static_reason)
            all_static = 0;
        if (runtime_reason(t, c) && refused++ == 0)
            refusal = runtime_reason(t, c);
    }
    if (!least) {
        fprintf(stderr, "loom tune: no configuration could be planned\n");
        return LOOM_EXIT_USAGE;
    }
    if (refused > 0) {
        fprintf(stderr, "loom tune: %d layouts of %s on %lld GPUs fit, but the %s export states "
                "none of them (the infeasible list gives each reason; the first: %s)\n",
                refused, t->model, (long long)t->gpus, t->runtime, refusal);
        return LOOM_EXIT_USAGE;
    }
    fprintf(stderr, "loom tune: %s fits no configuration of %lld GPUs: ", t->model,
            (long long)t->gpus);
    if (all_static)
        fprintf(stderr, "static memory runs out first: even tp%d cp%d pp%d dp%d leaves %.2f GiB "
                "of parameters and %.2f GiB of gradients + optimizer states a rank, over the "
                "cap (give more GPUs, or a cluster with more memory)\n", least->par.tp,
                loom_parallel_cp(&least->par), least->par.pp, least->par.dp,
                least->param_rank_bytes / GIB, least->state_rank_bytes / GIB);
    else
        fprintf(stderr, "activation memory runs out first: every layout whose static memory "
                "fits (parameters, gradients, optimizer states) exceeds the cap with its "
                "activations under every memory policy the manifests try (the infeasible "
                "list says by how much)\n");
    return LOOM_EXIT_USAGE;
}

/* Appends one argument to the `loom plan` command line. */
static void arg(const char **argv, int *n, const char *a)
{
    argv[(*n)++] = a;
}

/* Writes the winner's plan by running `loom plan --out` with its layout. */
static int write_winner(const tune_cli *o, const loom_tune_config *c)
{
    const loom_tune_search *t = &o->t;
    const loom_session_args *b = &t->base;
    char par[512], gb[32], k[32], sl[32], it[32], ev[32], seed[32], cap[48], pw[32];
    const char *argv[64 + 3 * LOOM_SESSION_MAX_OVERRIDES];
    int n = 0;
    if (loom_tune_parallel_text(t, c, par, sizeof par) != 0) {
        fprintf(stderr, "loom tune: the winner's layout text is too long\n");
        return LOOM_EXIT_USAGE;
    }
    snprintf(gb, sizeof gb, "%lld", (long long)t->global_batch);
    snprintf(k, sizeof k, "%d", c->micro_batch_size);
    snprintf(sl, sizeof sl, "%d", t->seq_len);
    snprintf(it, sizeof it, "%d", b->iterations);
    int64_t evals = b->max_evaluations > 0 ? b->max_evaluations
                  : t->manifest_evaluations[c->manifest] > 0 ? 0 : LOOM_TUNE_DEFAULT_EVALUATIONS;
    snprintf(ev, sizeof ev, "%lld", (long long)evals);
    const char *fixed[] = {"plan", "--quiet", "--manifest", t->manifests[c->manifest],
                           "--model", t->model, "--cluster", t->cluster, "--parallel", par,
                           "--global-batch", gb, "--micro-batch-size", k, "--seq-len", sl,
                           "--iterations", it, "--out", o->out_dir};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        arg(argv, &n, fixed[i]);
    if (evals > 0) {
        arg(argv, &n, "--evaluations");
        arg(argv, &n, ev);
    }
    if (b->has_seed) {
        snprintf(seed, sizeof seed, "%llu", (unsigned long long)b->seed);
        arg(argv, &n, "--seed");
        arg(argv, &n, seed);
    }
    if (b->memory_cap_bytes > 0) {
        snprintf(cap, sizeof cap, "%.0f", b->memory_cap_bytes);
        arg(argv, &n, "--memory-cap");
        arg(argv, &n, cap);
    }
    if (b->generate) {
        arg(argv, &n, "--generate");
        arg(argv, &n, b->generate);
    }
    if (b->packing_window > 0) {
        snprintf(pw, sizeof pw, "%d", b->packing_window);
        arg(argv, &n, "--packing-window");
        arg(argv, &n, pw);
    }
    if (b->allow_untrusted)
        arg(argv, &n, "--allow-untrusted-plugins");
    for (int i = 0; i < b->n_uses; i++) {
        arg(argv, &n, "--use");
        arg(argv, &n, b->uses[i]);
    }
    for (int i = 0; i < b->n_params; i++) {
        arg(argv, &n, "--param");
        arg(argv, &n, b->params[i]);
    }
    for (int i = 0; i < t->n_pins[c->manifest]; i++) {
        arg(argv, &n, "--param");
        arg(argv, &n, t->pins[c->manifest][i]);
    }
    for (int i = 0; i < b->n_plugin_paths; i++) {
        arg(argv, &n, "--plugin-path");
        arg(argv, &n, b->plugin_paths[i]);
    }
    argv[n] = NULL;
    return loom_cmd_plan(n, (char **)argv);
}

/* Prints (or writes) the results of a finished walk; returns the exit code. */
static int report(tune_cli *o, const loom_tune_walk *w)
{
    loom_error err = {0};
    json_job job = {o, w};
    if (o->json_file && !strcmp(o->json_file, "-")) /* standard output */
        o->json_file = NULL;
    if (o->shard_n > 0 && !o->json_file) {
        if (write_job(&job, loom_cli_out(), &err) != LOOM_OK) {
            fprintf(stderr, "loom tune: %s\n", err.message);
            return LOOM_EXIT_USAGE;
        }
        return LOOM_EXIT_OK;
    }
    if (o->shard_n > 0 || (o->json && o->json_file)) {
        if (loom_out_target_write(o->json_out, write_job, &job, &err) != LOOM_OK) {
            fprintf(stderr, "loom tune: %s\n", err.message);
            return LOOM_EXIT_USAGE;
        }
        if (o->shard_n > 0)
            return LOOM_EXIT_OK;
    }
    if (o->json && !o->json_file)
        loom_tune_write_json(&o->t, w, loom_cli_out());
    else if (!o->json)
        loom_tune_write_table(&o->t, w, loom_cli_out());
    if (w->n_ranked == 0)
        return nothing_fits(o, w);
    if (o->out_dir)
        return write_winner(o, &o->t.configs[w->ranked[0]]);
    return LOOM_EXIT_OK;
}

/* Bounds, walks and reports; returns the exit code. */
static int run_tune(tune_cli *o)
{
    loom_error err = {0};
    int rc = prepare(o, &err);
    if (rc != LOOM_OK) {
        fprintf(stderr, "loom tune: %s\n", err.message);
        return loom_cli_exit_for_status(rc);
    }
    if (o->shard_n > 0)
        keep_slice(&o->t, o->shard_k, o->shard_n);
    double t0 = loom_now_ms();
    rc = bound_all(o, &err);
    o->bound_ms = loom_now_ms() - t0;
    if (rc != LOOM_OK) {
        fprintf(stderr, "loom tune: %s\n", err.message);
        return loom_cli_exit_for_status(rc);
    }
    loom_tune_walk w;
    t0 = loom_now_ms();
    loom_tune_prefetch(&o->t, jobs_of(o), o->tty ? prefetched : NULL, o);
    rc = loom_tune_walk_run(&o->t, simulate, o, &w);
    o->walk_ms = loom_now_ms() - t0;
    if (!o->quiet)
        fprintf(stderr, "%sloom tune: considered %d, simulated %d, pruned %d; bounds %.1f s, "
                "simulations %.1f s%s\n", o->tty ? "\n" : "", w.considered, w.simulated, w.pruned,
                o->bound_ms / 1000, o->walk_ms / 1000,
                o->bound_violations ? " (BOUND VIOLATED: see the warnings)" : "");
    int code = rc == LOOM_OK ? report(o, &w) : loom_cli_exit_for_status(rc);
    loom_tune_walk_clear(&w);
    return loom_cli_io_check(code);
}

/* Resolves --json FILE and --out before any plugin code runs, so a
 * plugin's chdir() cannot move them; 0, or prints why and returns -1. */
static int resolve_outputs(tune_cli *o)
{
    loom_error err = {0};
    if (o->json_file && strcmp(o->json_file, "-") != 0 &&
        loom_out_target_open(o->json_file, &o->json_out, &err) != LOOM_OK) {
        fprintf(stderr, "loom tune: %s\n", err.message);
        return -1;
    }
    if (o->out_dir && !(o->out_abs = loom_cli_absolute_path(o->out_dir))) {
        fprintf(stderr, "loom tune: --out %s: cannot resolve the path\n", o->out_dir);
        return -1;
    }
    if (o->out_abs)
        o->out_dir = o->out_abs;
    return 0;
}

int loom_cmd_tune(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "merge"))
        return loom_cmd_tune_merge(argc - 1, argv + 1);
    tune_cli o;
    memset(&o, 0, sizeof o);
    loom_session_args_init(&o.t.base);
    loom_cli_spec spec = {"tune", tune_options, &o.t.base, NULL, tune_option, &o};
    int parsed = loom_cli_parse(&spec, argc, argv);
    if (parsed == 1) {
        usage(loom_cli_out());
        return LOOM_EXIT_OK;
    }
    if (parsed < 0 || check_options(&o) != 0) {
        fprintf(stderr, "`loom tune --help` lists the options.\n");
        return LOOM_EXIT_USAGE;
    }
    o.tty = !o.quiet && isatty(2);
    if (resolve_outputs(&o) != 0) {
        loom_out_target_close(o.json_out);
        free(o.out_abs);
        loom_tune_search_clear(&o.t);
        return LOOM_EXIT_USAGE;
    }
    int code = run_tune(&o);
    loom_out_target_close(o.json_out);
    free(o.out_abs);
    loom_tune_search_clear(&o.t);
    return code;
}
