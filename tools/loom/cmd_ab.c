/* cmd_ab.c - `loom ab A.json B.json`: plans the same problems with two
 * planner manifests (each run in an isolated child by default), compares
 * the paired iterations and writes Markdown, JSON, JUnit and HTML reports. Exit
 * 0 no regression, 1 regression, 2 bad input, 3 plugin failure. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ab.h"
#include "ab_shard.h"
#include "cli.h"
#include <loom/sys/isolate.h>
#include <loom/sys/json.h>
#include <loom/sys/output.h>
#include <loom/sys/planner.h>
#include "progress.h"
#include <loom/sys/session.h>

/* Prints the usage text. */
static void usage(FILE *out)
{
    fprintf(out,
            "usage: loom ab A.json B.json [problem options] [options]\n"
            "       loom ab merge SHARD.json... [--markdown F] [--json F] [--junit F]\n\n"
            "Plans the same iterations with planner manifests A and B and compares the\n"
            "simulated iteration times (B/A) pair by pair: mean and median ratio, 95 %% CI of\n"
            "the mean by paired bootstrap, wins/losses/ties and a verdict per case.\n\n"
            "problem options (one case; as `loom plan`): --model, --cluster, --parallel,\n"
            "  --workload, --generate, --packing-window, --stage-times, --iterations, --seed,\n"
            "  --global-batch, --micro-batch-size, --seq-len\n"
            "applied to A and B in every case: --use ROLE=NAME, --param ROLE.KEY=VAL,\n"
            "  --plugin-path DIR, --memory-cap SIZE\n\n"
            "  --suite FILE          cases from a suite file instead of the problem options\n"
            "                        (--iterations / --seed then give defaults)\n"
            "  --threshold T         relative threshold of the verdict (default 0.01 = 1 %%)\n"
            "  --evaluations N       searching rankers stop after N evaluations (default\n"
            "                        %d unless the manifest sets max_evaluations)\n"
            "  --wall-clock          let searches run to their time budgets instead\n"
            "  --memory-threshold M  also give a memory verdict: worse when B's peak memory\n"
            "                        exceeds A's by more than the fraction M (exit 1 then),\n"
            "                        better when below by more than M (default: none, -1)\n"
            "                        Time decides the verdict; a plan over the memory cap\n"
            "                        loses, and a plan that fits is never worse for memory\n"
            "  --markdown FILE       also write the Markdown table to FILE (-: stdout)\n"
            "  --json FILE           write the JSON report (same inputs: same bytes)\n"
            "  --junit FILE          write JUnit XML (one test case per case)\n"
            "  --html FILE           write an HTML report (cases, ratios, verdicts)\n"
            "  --timings             put plan times into the JSON report (no longer\n"
            "                        byte-identical between runs)\n"
            "  --isolate             plan in a forked child per case and manifest (default)\n"
            "  --no-isolate          plan in this process (no limits; a crash ends the run)\n"
            "  --timeout-ms N        wall-clock limit per iteration (default 60000; with a\n"
            "                        search budget (budget_ms of the manifest or the ranker):\n"
            "                        budget + max(5000, budget), or N when given and smaller)\n"
            "  --memory-limit-mb N   address-space limit of each child (default 8192; 0 none;\n"
            "                        not applied in AddressSanitizer builds)\n"
            "  --shard K/N           run only the cases whose 0-based index i has\n"
            "                        i %% N == K - 1; --json then writes a shard report\n"
            "                        for `loom ab merge` (see `loom ab merge --help`)\n"
            "  --quiet               no progress display and no Markdown on stdout\n"
            "                        (unless --markdown -)\n"
            "The Markdown table is printed on stdout unless --quiet. docs/ab-testing.md has\n"
            "the rules.\n"
            "exit codes: 0 no regression, 1 regression (or a case could not be planned),\n"
            "2 bad input, 3 plugin failure (crash, timeout, memory limit, garbage)\n",
            LOOM_AB_DEFAULT_EVALUATIONS);
}

static volatile sig_atomic_t sigints;

/* SIGINT: the first stops the running plan and the run (exit 1); a
 * second kills and reaps every descendant and ends loom by SIGINT at
 * once. */
static void on_sigint(int sig)
{
    if (sigints++ == 0)
        loom_interrupt();
    else
        loom_cli_die_of(sig);
}

/* Options of one `loom ab` call. */
typedef struct ab_cli {
    const char *manifest[2];
    const char *suite;
    const char *markdown, *json, *junit, *html;
    double threshold;
    double memory_threshold;
    int wall_clock;
    int timings, quiet;
    loom_isolate_opts iso;
    loom_session_args base;
    loom_ab_shard shard; /* shard.n == 0: the whole suite */
    loom_out_target *out[4]; /* --markdown, --json, --junit, --html files, resolved early */
} ab_cli;

enum { OPT_SUITE = 0x100, OPT_MARKDOWN, OPT_JSON, OPT_JUNIT, OPT_HTML, OPT_THRESHOLD,
       OPT_MEMORY_THRESHOLD, OPT_TIMEOUT_MS, OPT_MEMORY_LIMIT_MB, OPT_ISOLATE, OPT_NO_ISOLATE,
       OPT_WALL_CLOCK, OPT_TIMINGS, OPT_QUIET, OPT_SHARD };

static const loom_cli_option ab_options[] = {
    {"suite", 1, OPT_SUITE},       {"markdown", 1, OPT_MARKDOWN},
    {"json", 1, OPT_JSON},         {"junit", 1, OPT_JUNIT},
    {"html", 1, OPT_HTML},         {"threshold", 1, OPT_THRESHOLD},
    {"memory-threshold", 1, OPT_MEMORY_THRESHOLD},
    {"timeout-ms", 1, OPT_TIMEOUT_MS}, {"memory-limit-mb", 1, OPT_MEMORY_LIMIT_MB},
    {"isolate", 0, OPT_ISOLATE},   {"no-isolate", 0, OPT_NO_ISOLATE},
    {"wall-clock", 0, OPT_WALL_CLOCK}, {"timings", 0, OPT_TIMINGS},
    {"quiet", 0, OPT_QUIET},       {"shard", 1, OPT_SHARD},
    {NULL, 0, 0}};

/* One option or operand of `loom ab` (loom_cli_spec.handle). */
static int ab_option(void *ctx, int key, const char *name, const char *v)
{
    ab_cli *o = ctx;
    double d;
    loom_error err = {0};
    switch (key) {
    case LOOM_CLI_OPERAND:
        if (o->manifest[0] && o->manifest[1]) {
            loom_cli_error("ab", "unexpected argument '%s' (the two manifests are %s and %s)", v,
                           o->manifest[0], o->manifest[1]);
            return -1;
        }
        o->manifest[o->manifest[0] ? 1 : 0] = v;
        return 0;
    case OPT_SUITE: o->suite = v; return 0;
    case OPT_MARKDOWN: o->markdown = v; return 0;
    case OPT_JSON: o->json = v; return 0;
    case OPT_JUNIT: o->junit = v; return 0;
    case OPT_HTML: o->html = v; return 0;
    case OPT_THRESHOLD: return loom_cli_number("ab", name, v, 0, 0.99, &o->threshold);
    case OPT_MEMORY_THRESHOLD:
        if (!strcmp(v, "-1")) {
            o->memory_threshold = -1;
            return 0;
        }
        if (loom_cli_number("ab", name, v, 0, 10, &d)) {
            fprintf(stderr, "  (or -1 for no memory verdict)\n");
            return -1;
        }
        o->memory_threshold = d;
        return 0;
    case OPT_TIMEOUT_MS:
        if (loom_cli_number("ab", name, v, 0, 1e9, &d))
            return -1;
        o->iso.timeout_ms = d;
        o->iso.timeout_given = 1;
        return 0;
    case OPT_MEMORY_LIMIT_MB:
        if (loom_cli_number("ab", name, v, 0, (double)(1 << 30), &d))
            return -1;
        o->iso.memory_limit_mb = (int64_t)d;
        return 0;
    case OPT_ISOLATE: o->iso.isolate = 1; return 0;
    case OPT_NO_ISOLATE: o->iso.isolate = 0; return 0;
    case OPT_WALL_CLOCK: o->wall_clock = 1; return 0;
    case OPT_TIMINGS: o->timings = 1; return 0;
    case OPT_QUIET: o->quiet = 1; return 0;
    case OPT_SHARD:
        if (loom_ab_shard_parse(v, &o->shard.k, &o->shard.n, &err) != LOOM_OK) {
            loom_cli_error("ab", "%s", err.message);
            return -1;
        }
        return 0;
    default:
        return -1;
    }
}

/* Parses argv; returns -1 for a usage error (printed), 1 for --help, 0 to run. */
static int parse(ab_cli *o, int argc, char **argv)
{
    static const char *const conflicts[][2] = {
        {"isolate", "no-isolate"}, {"wall-clock", "evaluations"}, {NULL, NULL}};
    loom_cli_spec spec = {"ab", ab_options, &o->base, conflicts, ab_option, o};
    int p = loom_cli_parse(&spec, argc, argv);
    if (p != 0)
        return p;
    if (o->base.manifest) {
        fprintf(stderr, "loom ab: give the two manifests as A.json B.json, not --manifest\n");
        return -1;
    }
    if (!o->manifest[1]) {
        fprintf(stderr, "loom ab: expected two planner manifests (A.json B.json), found %d\n",
                o->manifest[0] ? 1 : 0);
        return -1;
    }
    const loom_session_args *b = &o->base;
    if (o->suite && (b->model || b->cluster || b->parallel || b->workload || b->generate ||
                     b->stage_times)) {
        fprintf(stderr, "loom ab: --suite names the problems; drop --model, --cluster, "
                        "--parallel, --workload, --generate and --stage-times\n");
        return -1;
    }
    return 0;
}

/* One case to run: its name, a description and its session args per side. */
typedef struct ab_case {
    const char *name;
    char problem[512];
    loom_session_args args[2];
    int32_t expected_iterations; /* for the progress estimate */
} ab_case;

/* Counts the non-blank lines of a JSON Lines file (0 when unreadable). */
static int32_t count_lines(const char *path)
{
    int fd = -1; /* a FIFO or a device is refused, not read (nor waited for) */
    FILE *f = loom_open_input(path, &fd, NULL) == LOOM_OK ? fdopen(fd, "r") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    int32_t n = 0;
    int c, blank = 1;
    while ((c = fgetc(f)) != EOF) {
        if (c == '\n') {
            n += !blank;
            blank = 1;
        } else if (c != ' ' && c != '\t' && c != '\r') {
            blank = 0;
        }
    }
    n += !blank;
    fclose(f);
    return n;
}

/* Describes a case's problem in one line and estimates its iterations. */
static void describe(ab_case *c)
{
    const loom_session_args *a = &c->args[0];
    size_t n = 0;
    char *p = c->problem;
    size_t size = sizeof c->problem;
    if (a->stage_times) {
        snprintf(p, size, "stage-times %s", a->stage_times);
        c->expected_iterations = 1;
        return;
    }
    n += (size_t)snprintf(p + n, size - n, "model %s, cluster %s", a->model ? a->model : "vlm-s",
                          a->cluster ? a->cluster : "h800");
    if (a->parallel && n < size)
        n += (size_t)snprintf(p + n, size - n, ", parallel %s", a->parallel);
    int32_t iters = a->iterations > 0 ? a->iterations : 4;
    if (a->workload && n < size) {
        int32_t lines = count_lines(a->workload);
        iters = a->iterations > 0 && a->iterations < lines ? a->iterations : lines;
        n += (size_t)snprintf(p + n, size - n, ", workload %s", a->workload);
    } else if (n < size) {
        n += (size_t)snprintf(p + n, size - n, ", generated %s",
                              a->generate ? a->generate : "(the model's family)");
    }
    if (n < size)
        n += (size_t)snprintf(p + n, size - n, ", %d iteration%s", iters, iters == 1 ? "" : "s");
    if (a->has_seed && n < size)
        snprintf(p + n, size - n, ", seed %llu", (unsigned long long)a->seed);
    c->expected_iterations = iters;
}

/* Progress state shared with the iteration callback. */
typedef struct ab_progress {
    loom_progress *bar;
    char label[96];
    int64_t done;
} ab_progress;

/* Iteration callback of a run: advances (or, on a tick, redraws) the
 * display. */
static void on_iter(void *user, int32_t iteration, int32_t n_iterations, int done)
{
    ab_progress *p = user;
    if (done == 1)
        p->done++;
    loom_progress_update(p->bar, p->label, iteration, n_iterations, p->done);
}

/* The Markdown writer in the shape loom_write_atomic calls. */
static int write_md(void *r, FILE *out, loom_error *err)
{
    return loom_ab_write_markdown(r, out, err);
}

/* The JSON writer in the shape loom_write_atomic calls. */
static int write_json(void *r, FILE *out, loom_error *err)
{
    return loom_ab_write_json(r, out, err);
}

/* The JUnit writer in the shape loom_write_atomic calls. */
static int write_junit(void *r, FILE *out, loom_error *err)
{
    return loom_ab_write_junit(r, out, err);
}

/* The HTML writer in the shape loom_write_atomic calls. */
static int write_html(void *r, FILE *out, loom_error *err)
{
    return loom_ab_write_html(r, out, err);
}

/* Loads a manifest in this process to fail early on bad input and to
 * learn its name (copied into name). */
static int check_manifest(const char *path, char *name, size_t size)
{
    loom_planner_config *cfg = NULL;
    loom_error err = {0};
    int rc = loom_planner_config_load(path, &cfg, &err);
    if (rc != LOOM_OK) {
        fprintf(stderr, "loom ab: %s\n", err.message);
        return rc;
    }
    snprintf(name, size, "%s", cfg->name ? cfg->name : "");
    loom_planner_config_free(cfg);
    return LOOM_OK;
}

/* Builds the case list from the suite or the command line. */
static int build_cases(ab_cli *o, loom_ab_suite *suite, ab_case **out, int32_t *n_out)
{
    int32_t n = suite ? suite->n_cases : 1;
    ab_case *cases = calloc((size_t)n, sizeof *cases);
    if (!cases) {
        fprintf(stderr, "loom ab: out of memory\n");
        return -1;
    }
    for (int32_t i = 0; i < n; i++) {
        ab_case *c = &cases[i];
        for (int k = 0; k < 2; k++) {
            if (suite) {
                loom_ab_case_args(&suite->cases[i], &o->base, o->manifest[k], &c->args[k]);
            } else {
                c->args[k] = o->base;
                c->args[k].manifest = o->manifest[k];
            }
        }
        c->name = suite ? suite->cases[i].name : "default";
        describe(c);
    }
    *out = cases;
    *n_out = n;
    return 0;
}

/* Keeps the cases of shard o->shard (in suite order) and describes the
 * shard's inputs for the merge. */
static int shard_cases(ab_cli *o, ab_case *cases, int32_t *n)
{
    loom_error err = {0};
    if (loom_ab_shard_describe(&o->shard, &o->base, &o->iso, o->manifest[0], o->manifest[1],
                               o->suite, &err) != LOOM_OK) {
        fprintf(stderr, "loom ab: %s\n", err.message);
        return -1;
    }
    o->shard.suite_cases = *n;
    int32_t kept = 0;
    for (int32_t i = 0; i < *n; i++)
        if (loom_ab_shard_selects(o->shard.k, o->shard.n, i))
            cases[kept++] = cases[i];
    *n = kept;
    return 0;
}

/* Runs side k of one case and reports a failure on stderr at once. */
static int run_side(ab_cli *o, ab_case *c, int k, ab_progress *prog, loom_run_output *out)
{
    loom_error err = {0};
    static volatile int32_t step_now = -1; /* in-process (--no-isolate): for the exit guard */
    c->args[k].step_marker = &step_now;
    c->args[k].on_step = loom_cli_guard_on_step;
    loom_cli_guard_marker(&step_now);
    snprintf(prog->label, sizeof prog->label, "case %s, %s", c->name, k ? "B" : "A");
    loom_progress_update(prog->bar, prog->label, -1, 0, prog->done);
    int rc = loom_isolate_plan(&c->args[k], &o->iso, on_iter, prog, out, &err);
    if (rc != LOOM_OK) {
        loom_progress_finish(prog->bar);
        fprintf(stderr, "loom ab: case %s, %s: %s\n", c->name, k ? "B" : "A", err.message);
        return rc;
    }
    if (out->failure.kind != LOOM_FAIL_NONE) {
        char buf[1024];
        loom_failure_describe(&out->failure, buf, sizeof buf);
        loom_progress_finish(prog->bar);
        fprintf(stderr, "loom ab: case %s, %s (%s): %s\n", c->name, k ? "B" : "A",
                o->manifest[k], buf);
    }
    return LOOM_OK;
}

/* What write_shard prints: the report and its shard. */
typedef struct shard_out {
    const loom_ab_report *rep;
    const loom_ab_shard *shard;
} shard_out;

/* The shard report in the shape loom_out_target_write calls. */
static int write_shard(void *ctx, FILE *out, loom_error *err)
{
    const shard_out *s = ctx;
    return loom_ab_write_shard_json(s->rep, s->shard, out, err);
}

/* Resolves every report file before any plugin code runs, so a plugin's
 * chdir() cannot move them; 0, or prints why and returns -1. */
static int open_reports(ab_cli *o)
{
    const char *paths[4] = {o->markdown, o->json, o->junit, o->html};
    for (int k = 0; k < 4; k++) {
        loom_error err = {0};
        if (paths[k] && strcmp(paths[k], "-") != 0 &&
            loom_out_target_open(paths[k], &o->out[k], &err) != LOOM_OK) {
            fprintf(stderr, "loom ab: %s\n", err.message);
            return -1;
        }
    }
    return 0;
}

/* Closes what open_reports resolved. */
static void close_reports(ab_cli *o)
{
    for (int k = 0; k < 4; k++)
        loom_out_target_close(o->out[k]);
}

/* Writes the reports; returns a non-zero exit code when one fails. */
static int write_reports(ab_cli *o, loom_ab_report *rep)
{
    loom_error err = {0};
    FILE *out = loom_cli_out();
    /* stdout carries the Markdown once: by default, or for --markdown - */
    int md_stdout = o->markdown && !strcmp(o->markdown, "-");
    if (!o->quiet && !md_stdout) {
        if (loom_ab_write_markdown(rep, out, &err) != LOOM_OK) {
            fprintf(stderr, "loom ab: %s\n", err.message);
            return LOOM_EXIT_USAGE;
        }
        if (loom_cli_io_check(LOOM_EXIT_OK) != LOOM_EXIT_OK)
            return LOOM_EXIT_USAGE;
    }
    const char *paths[4] = {o->markdown, o->json, o->junit, o->html};
    int (*writers[4])(void *, FILE *, loom_error *) = {write_md, write_json, write_junit,
                                                       write_html};
    for (int k = 0; k < 4; k++) {
        if (!paths[k])
            continue;
        if (!strcmp(paths[k], "-")) { /* standard output: the command's own */
            int wrc = k == 1 && o->shard.n
                          ? loom_ab_write_shard_json(rep, &o->shard, out, &err)
                          : writers[k](rep, out, &err);
            if (wrc != LOOM_OK) {
                fprintf(stderr, "loom ab: %s\n", err.message);
                return LOOM_EXIT_USAGE;
            }
            if (loom_cli_io_check(LOOM_EXIT_OK) != LOOM_EXIT_OK)
                return LOOM_EXIT_USAGE;
            continue;
        }
        shard_out sh = {rep, &o->shard};
        int rc = k == 1 && o->shard.n ? loom_out_target_write(o->out[k], write_shard, &sh, &err)
                                      : loom_out_target_write(o->out[k], writers[k], rep, &err);
        if (rc != LOOM_OK) {
            fprintf(stderr, "loom ab: %s\n", err.message);
            return LOOM_EXIT_USAGE;
        }
    }
    return LOOM_EXIT_OK;
}

/* Runs every case on both sides, evaluates and reports. */
static int run_all(ab_cli *o, ab_case *cases, int32_t n, const char *names[2])
{
    loom_ab_case_result *res = calloc((size_t)n, sizeof *res);
    if (!res) {
        fprintf(stderr, "loom ab: out of memory\n");
        return LOOM_EXIT_PLAN;
    }
    ab_progress prog = {loom_progress_new(stderr, o->quiet), "", 0};
    int64_t total = 0;
    for (int32_t i = 0; i < n; i++)
        total += 2 * (int64_t)cases[i].expected_iterations;
    loom_progress_set_total(prog.bar, total);
    int code = LOOM_EXIT_OK, stopped = 0;
    int32_t ran = 0;
    for (int32_t i = 0; i < n && !stopped; i++) {
        res[i].name = cases[i].name;
        res[i].problem = cases[i].problem;
        loom_run_output *side[2] = {&res[i].a, &res[i].b};
        for (int k = 0; k < 2 && !stopped; k++)
            stopped = run_side(o, &cases[i], k, &prog, side[k]) != LOOM_OK;
        loom_error err = {0};
        if (!stopped && loom_ab_evaluate(&res[i], o->threshold, LOOM_AB_RESAMPLES, &err)) {
            fprintf(stderr, "loom ab: case %s: %s\n", cases[i].name, err.message);
            stopped = 1;
        }
        if (!stopped)
            loom_ab_judge_memory(&res[i], o->memory_threshold);
        ran = i + 1;
    }
    loom_progress_finish(prog.bar);
    loom_progress_free(prog.bar);
    if (stopped) {
        code = LOOM_EXIT_PLAN;
    } else {
        loom_ab_report rep = {o->manifest[0], o->manifest[1], names[0], names[1], o->suite,
                              o->threshold, o->memory_threshold, LOOM_AB_RESAMPLES,
                              o->timings, res, n};
        code = write_reports(o, &rep);
        if (code == LOOM_EXIT_OK)
            code = loom_ab_exit_code(&rep);
    }
    for (int32_t i = 0; i < ran; i++)
        loom_ab_case_result_clear(&res[i]);
    free(res);
    return code;
}

int loom_cmd_ab(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "merge"))
        return loom_cmd_ab_merge(argc - 1, argv + 1);
    ab_cli o;
    memset(&o, 0, sizeof o);
    loom_session_args_init(&o.base);
    o.threshold = LOOM_AB_DEFAULT_THRESHOLD;
    o.memory_threshold = -1;
    o.iso.isolate = 1;
    o.iso.timeout_ms = LOOM_ISOLATE_DEFAULT_TIMEOUT_MS;
    o.iso.memory_limit_mb = LOOM_ISOLATE_DEFAULT_MEMORY_MB;
    int p = parse(&o, argc, argv);
    if (p > 0) {
        usage(loom_cli_out());
        return LOOM_EXIT_OK;
    }
    if (p < 0) {
        fprintf(stderr, "`loom ab --help` lists the options.\n");
        return LOOM_EXIT_USAGE;
    }
    if (!o.wall_clock) /* reports that do not depend on the machine's speed */
        o.base.default_max_evaluations = LOOM_AB_DEFAULT_EVALUATIONS;
    char name_a[128], name_b[128], path_a[4096], path_b[4096];
    loom_error rerr = {0};
    /* shipped manifests by name ("pipeweaver"): the file from here on */
    if (loom_planner_manifest_resolve(o.manifest[0], path_a, sizeof path_a, &rerr) != LOOM_OK ||
        loom_planner_manifest_resolve(o.manifest[1], path_b, sizeof path_b, &rerr) != LOOM_OK) {
        fprintf(stderr, "loom ab: %s\n", rerr.message);
        return LOOM_EXIT_USAGE;
    }
    o.manifest[0] = path_a;
    o.manifest[1] = path_b;
    if (check_manifest(o.manifest[0], name_a, sizeof name_a) != LOOM_OK ||
        check_manifest(o.manifest[1], name_b, sizeof name_b) != LOOM_OK)
        return LOOM_EXIT_USAGE;
    loom_ab_suite *suite = NULL;
    if (o.suite) {
        loom_error err = {0};
        if (loom_ab_suite_load(o.suite, &suite, &err) != LOOM_OK) {
            fprintf(stderr, "loom ab: %s\n", err.message);
            return LOOM_EXIT_USAGE;
        }
    }
    ab_case *cases = NULL;
    int32_t n = 0;
    if (build_cases(&o, suite, &cases, &n) != 0) {
        loom_ab_suite_free(suite);
        return LOOM_EXIT_PLAN;
    }
    if (o.shard.n && shard_cases(&o, cases, &n) != 0) {
        free(cases);
        loom_ab_suite_free(suite);
        return LOOM_EXIT_USAGE;
    }
    if (open_reports(&o) != 0) {
        close_reports(&o);
        free(cases);
        loom_ab_suite_free(suite);
        return LOOM_EXIT_USAGE;
    }
    struct sigaction old;
    loom_cli_catch(SIGINT, on_sigint, &old);
    const char *names[2] = {name_a, name_b};
    int code = run_all(&o, cases, n, names);
    sigaction(SIGINT, &old, NULL);
    close_reports(&o);
    if (loom_interrupt_requested())
        fprintf(stderr, "loom ab: interrupted\n");
    free(cases);
    loom_ab_suite_free(suite);
    return code;
}
