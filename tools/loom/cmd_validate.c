/* cmd_validate.c - `loom validate MANIFEST`: loads and checks a planner
 * manifest (config, plugins, params, create) without planning, and prints
 * the resolved pipeline. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include <loom/sys/planner.h>

/* Prints the usage text. */
static void validate_usage(FILE *out)
{
    fprintf(out,
            "usage: loom validate MANIFEST [--plugin-path DIR]... [--use ROLE=NAME]...\n"
            "                     [--param ROLE.KEY=VALUE]... [--allow-untrusted-plugins]\n"
            "\n"
            "Reads the planner manifest, finds and loads every plugin it names,\n"
            "checks their params and creates each step once, without planning.\n"
            "Prints the resolved pipeline.\n"
            "\n"
            "  --plugin-path DIR       also search DIR for plugins (alias: --path)\n"
            "  --use ROLE=NAME         use plugin NAME (id or name) for ROLE\n"
            "  --param ROLE.KEY=VALUE  set a param of the ROLE step (VALUE is JSON\n"
            "                          when it parses, else a string)\n"
            "  --allow-untrusted-plugins  register plugins others could have changed\n"
            "                          (docs/security.md)\n"
            "\n"
            "exit codes: 0 valid, 2 usage, input or output error, 3 plugin error\n");
}

/* Collected command-line arguments. */
typedef struct validate_opts {
    const char *manifest;
    const char **paths, **uses, **params;
    int n_paths, n_uses, n_params;
    int allow_untrusted;
} validate_opts;

enum { OPT_UNTRUSTED = 0x100, OPT_PATH, OPT_USE, OPT_PARAM };

static const loom_cli_option validate_options[] = {
    {"allow-untrusted-plugins", 0, OPT_UNTRUSTED},
    {"plugin-path", 1, OPT_PATH},
    {"path", 1, OPT_PATH},
    {"use", 1, OPT_USE},
    {"param", 1, OPT_PARAM},
    {NULL, 0, 0}};

/* One option or operand of `loom validate` (loom_cli_spec.handle). */
static int validate_option(void *ctx, int key, const char *name, const char *v)
{
    validate_opts *o = ctx;
    (void)name;
    switch (key) {
    case LOOM_CLI_OPERAND:
        if (o->manifest) {
            loom_cli_error("validate", "unexpected argument '%s' (the manifest is %s)", v,
                           o->manifest);
            return -1;
        }
        o->manifest = v;
        return 0;
    case OPT_UNTRUSTED: o->allow_untrusted = 1; return 0;
    case OPT_PATH: o->paths[o->n_paths++] = v; return 0;
    case OPT_USE: o->uses[o->n_uses++] = v; return 0;
    case OPT_PARAM: o->params[o->n_params++] = v; return 0;
    default: return -1;
    }
}

/* Parses argv; returns -1 to continue, else an exit code. */
static int parse_args(int argc, char **argv, validate_opts *o)
{
    size_t cap = (size_t)argc + 1;
    o->paths = calloc(cap, sizeof *o->paths);
    o->uses = calloc(cap, sizeof *o->uses);
    o->params = calloc(cap, sizeof *o->params);
    if (!o->paths || !o->uses || !o->params)
        return LOOM_EXIT_PLAN;
    loom_cli_spec spec = {"validate", validate_options, NULL, NULL, validate_option, o};
    int parsed = loom_cli_parse(&spec, argc, argv);
    if (parsed != 0) {
        validate_usage(parsed > 0 ? loom_cli_out() : stderr);
        return parsed > 0 ? LOOM_EXIT_OK : LOOM_EXIT_USAGE;
    }
    if (!o->manifest) {
        fprintf(stderr, "loom validate: expected a planner manifest\n");
        validate_usage(stderr);
        return LOOM_EXIT_USAGE;
    }
    return -1;
}

/* Loads the config, applies overrides and opens the pipeline. */
static int run_validate(const validate_opts *o, loom_error *err)
{
    loom_planner_config *cfg = NULL;
    loom_registry *reg = NULL;
    int rc = loom_planner_config_load(o->manifest, &cfg, err);
    if (!rc)
        rc = loom_planner_config_apply(cfg, o->uses, o->n_uses, o->params, o->n_params, err);
    if (!rc)
        rc = loom_registry_open(o->paths, o->n_paths, o->allow_untrusted, &reg, err);
    static volatile int32_t step_now = -1; /* whose create() runs, for the exit guard */
    loom_pipeline_hooks hooks = {&step_now, loom_cli_guard_on_step, NULL, NULL};
    loom_cli_guard_marker(&step_now);
    int n_steps = 0;
    if (!rc)
        rc = loom_pipeline_check(reg, cfg, &hooks, loom_cli_out(), &n_steps, err);
    if (!rc)
        fprintf(loom_cli_out(), "%s: valid (%d steps)\n", o->manifest, n_steps);
    loom_registry_free(reg);
    loom_planner_config_free(cfg);
    return rc;
}

int loom_cmd_validate(int argc, char **argv)
{
    validate_opts o;
    memset(&o, 0, sizeof o);
    int code = parse_args(argc, argv, &o);
    if (code < 0) {
        loom_error err = {0};
        int rc = run_validate(&o, &err);
        if (rc)
            fprintf(stderr, "loom validate: %s\n", err.message);
        code = loom_cli_exit_for_status(rc);
    }
    free(o.paths);
    free(o.uses);
    free(o.params);
    return code;
}
