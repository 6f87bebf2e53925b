/* cli.h - the `loom` command-line tool: one function per subcommand.
 * Each returns the process exit code: 0 ok, 1 planning failure (or a
 * regression for `ab`), 2 usage or input error, 3 plugin error. */
#ifndef LOOM_CLI_H
#define LOOM_CLI_H

#include <loom/sys/util.h>

enum loom_exit {
    LOOM_EXIT_OK = 0,
    LOOM_EXIT_PLAN = 1,
    LOOM_EXIT_USAGE = 2,
    LOOM_EXIT_PLUGIN = 3
};

/* Maps a loom_status to an exit code (EABI/EPLUGIN -> 3, EINVAL/ENOTFOUND/
 * EIO -> 2, others -> 1). */
int loom_cli_exit_for_status(int status);

/* The value of option `name` at argv[*i]: from "--name=V", or the next
 * argument (advancing *i); "" when "--name" is the last argument; NULL
 * when argv[*i] is another option. The value is borrowed from argv. */
const char *loom_cli_opt_value(int argc, char **argv, int *i, const char *name);

int loom_cmd_ab(int argc, char **argv);        /* cmd_ab.c */
int loom_cmd_ab_merge(int argc, char **argv);  /* cmd_ab_merge.c */
int loom_cmd_plugins(int argc, char **argv);   /* cmd_plugins.c */
int loom_cmd_validate(int argc, char **argv);  /* cmd_validate.c */
int loom_cmd_plan(int argc, char **argv);      /* cmd_plan.c */
int loom_cmd_workload(int argc, char **argv);  /* cmd_workload.c */
int loom_cmd_replan(int argc, char **argv);    /* cmd_replan.c */
int loom_cmd_cp_balance(int argc, char **argv); /* cmd_cp_balance.c */
int loom_cmd_calibrate(int argc, char **argv); /* cmd_calibrate.c */

#endif
