/* main.c - `loom` entry point: dispatches to the subcommands. */
#include <stdio.h>
#include <string.h>
#include <loom/common.h>
#include "cli.h"

typedef struct loom_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} loom_command;

static const loom_command commands[] = {
    {"ab", loom_cmd_ab, "compare two planner manifests on the same workloads (A/B test)"},
    {"plan", loom_cmd_plan, "plan iterations of a workload and write the plan"},
    {"plugins", loom_cmd_plugins, "list or inspect the plugins Loom can find"},
    {"validate", loom_cmd_validate, "load and check a planner manifest without planning"},
    {"workload", loom_cmd_workload, "generate a seeded synthetic workload (JSON Lines)"},
    {"replan", loom_cmd_replan, "Oobleck: repair pipelines after node failures"},
    {"cp-balance", loom_cmd_cp_balance, "Cornstarch: balance attention blocks over a CP group"},
    {"calibrate-batch", loom_cmd_calibrate, "Entrain: minimum stable profiling batch size"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: loom [--version] [--help] <command> [<args>]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n`loom <command> --help` describes a command.\n"
                 "exit codes: 0 ok, 1 planning failure, 2 usage or input error, 3 plugin error\n");
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
    if (argc < 2) {
        usage(stderr);
        return LOOM_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        printf("loom %s (plugin ABI %u)\n", LOOM_VERSION_STRING, LOOM_ABI_VERSION);
        return LOOM_EXIT_OK;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return LOOM_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "loom: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return LOOM_EXIT_USAGE;
}
