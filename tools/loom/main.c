/* main.c - `loom` entry point: dispatches to the subcommands. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <loom/common.h>
#include <loom/sys/util.h>
#include "cli.h"

typedef struct loom_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
    int plugin_code; /* 1: may load plugins (see loom_cli_io_begin) */
} loom_command;

static const loom_command commands[] = {
    {"ab", loom_cmd_ab, "compare two planner manifests on the same workloads (A/B test)", 1},
    {"plan", loom_cmd_plan, "plan iterations of a workload and write the plan", 1},
    {"tune", loom_cmd_tune, "choose the parallel layout: search, bound and rank layouts", 1},
    {"plugins", loom_cmd_plugins, "list or inspect the plugins Loom can find", 1},
    {"validate", loom_cmd_validate, "load and check a planner manifest without planning", 1},
    {"workload", loom_cmd_workload, "generate a seeded synthetic workload (JSON Lines)", 0},
    {"replan", loom_cmd_replan, "Oobleck: repair pipelines after node failures", 0},
    {"cp-balance", loom_cmd_cp_balance, "Cornstarch: balance attention blocks over a CP group", 0},
    {"calibrate", loom_cmd_calibrate, "fit the cluster's efficiency factors to measurements", 1},
    {"calibrate-batch", loom_cmd_calibrate_batch, "Entrain: minimum stable profiling batch size", 0},
};

/* Prints "loom[ help]: unknown command 'x'" with the closest command. */
static void unknown_command(const char *who, const char *name)
{
    const char *names[sizeof commands / sizeof commands[0]];
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        names[i] = commands[i].name;
    const char *near = loom_closest_name(name, names, (int)(sizeof names / sizeof names[0]));
    fprintf(stderr, "%s: unknown command '%s'", who, name);
    if (near)
        fprintf(stderr, "; did you mean '%s'?", near);
    fputc('\n', stderr);
}

static void usage(FILE *out)
{
    fprintf(out, "usage: loom [--version] [--help] <command> [<args>]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n`loom <command> --help` describes a command.\n"
                 "exit codes: 0 ok, 1 planning failure, 2 usage, input or output error,\n"
                 "3 plugin error\n");
}

int loom_cli_exit_for_status(int status)
{
    switch (status) {
    case LOOM_OK: return LOOM_EXIT_OK;
    case LOOM_EABI:
    case LOOM_EPLUGIN: return LOOM_EXIT_PLUGIN;
    case LOOM_EINVAL:
    case LOOM_ENOTFOUND:
    case LOOM_EIO: return LOOM_EXIT_USAGE;
    default: return LOOM_EXIT_PLAN;
    }
}

int main(int argc, char **argv)
{
    const loom_command *cmd = NULL;
    for (size_t i = 0; argc >= 2 && i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            cmd = &commands[i];
    loom_cli_io_begin(cmd ? cmd->name : NULL, cmd ? cmd->plugin_code : 0);
    if (cmd) /* each command parses its options with loom_cli_parse (cli_args.c) */
        return loom_cli_io_end(cmd->run(argc - 1, argv + 1));
    if (argc < 2) {
        usage(stderr);
        return loom_cli_io_end(LOOM_EXIT_USAGE);
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        fprintf(loom_cli_out(), "loom %s (plugin ABI %u)\n", LOOM_VERSION_STRING, LOOM_ABI_VERSION);
        return loom_cli_io_end(LOOM_EXIT_OK);
    }
    if (!strcmp(argv[1], "help") && argc >= 3) { /* `loom help plan`: plan's usage */
        for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
            if (!strcmp(argv[2], commands[i].name)) {
                char help[] = "--help";
                char *args[] = {argv[2], help, NULL};
                return loom_cli_io_end(commands[i].run(2, args));
            }
        unknown_command("loom help", argv[2]);
        usage(stderr);
        return loom_cli_io_end(LOOM_EXIT_USAGE);
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(loom_cli_out());
        return loom_cli_io_end(LOOM_EXIT_OK);
    }
    unknown_command("loom", argv[1]);
    usage(stderr);
    return loom_cli_io_end(LOOM_EXIT_USAGE);
}
