/* cli.h - the `loom` command-line tool: one function per subcommand.
 * Each returns the process exit code: 0 ok, 1 planning failure (or a
 * regression for `ab`), 2 usage, input or output error (a failed write to
 * stdout too), 3 plugin error. */
#ifndef LOOM_CLI_H
#define LOOM_CLI_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <loom/sys/session.h>
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

/* ---- options (cli_args.c) --------------------------------------------------- */

/* One option of a command: long name without "--", whether it takes a
 * value ("--name V" or "--name=V"), and the key its handler switches on
 * (>= 0x100 and below 0x3fff, unique within the command). */
typedef struct loom_cli_option {
    const char *name;
    int takes_value;
    int key;
} loom_cli_option;

/* The key handlers get for an operand (a non-option argument). */
#define LOOM_CLI_OPERAND 1

/* What a command accepts. */
typedef struct loom_cli_spec {
    const char *cmd;                   /* "plan", "ab merge": errors start "loom <cmd>: " */
    const loom_cli_option *options;    /* ended by a NULL name; may be NULL */
    loom_session_args *session;        /* non-NULL: the shared planning options
                                        * (loom_session_options, --path as an alias
                                        * of --plugin-path) are set in it */
    const char *const (*conflicts)[2]; /* long-name pairs that exclude each other,
                                        * ended by {NULL, NULL}; may be NULL */
    /* Called for each option and operand in command-line order with its key,
     * its long name (NULL for operands) and its value (NULL for an option
     * without one). Returns 0, or -1 after printing one error line with
     * loom_cli_error. */
    int (*handle)(void *ctx, int key, const char *name, const char *value);
    void *ctx;
} loom_cli_spec;

/* Parses argv[1..] with getopt_long: options and operands in any order,
 * "--name=V" or "--name V", unambiguous prefixes of long names, "--" ends
 * the options, -h/--help. Rejects unknown or ambiguous options, missing,
 * empty or unexpected values and the spec's contradictory pairs (the
 * session options' own contradictions, such as --stage-times with
 * --model, are loom_session_open's to report). Returns 0 to run,
 * 1 for --help, -1 after printing one "loom <cmd>: ..." line. */
int loom_cli_parse(const loom_cli_spec *spec, int argc, char **argv);

/* Reads option --name's value `v` as a number in [lo, hi] into *out;
 * -1 after printing "loom <cmd>: --name: expected a number in [lo, hi],
 * found 'v'". */
int loom_cli_number(const char *cmd, const char *name, const char *v, double lo, double hi,
                    double *out);

/* Prints "loom <cmd>: <message>\n" on stderr. */
void loom_cli_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Writes s as a JSON string (quoted; ", \ and control bytes escaped, every
 * other byte as it is; NULL as ""). */
void loom_cli_json_string(FILE *out, const char *s);

/* ---- standard output, output errors and plugin code (cli_io.c) ------------ */

/* Called by main before command `cmd` (NULL: none) runs: reopens a closed
 * fd 0 or 2 on /dev/null and a closed fd 1 on /dev/full (so a write to a
 * closed stdout fails rather than landing in a file opened later); with
 * `plugin_code` (the command may run plugin code) gives the command its
 * own stream on a duplicate of the real stdout and points fd 1 at stderr,
 * so nothing plugin code prints (printf, write(1, ...)) reaches the
 * command's output; and installs the exit guard (loom_cli_guard_marker). */
void loom_cli_io_begin(const char *cmd, int plugin_code);

/* `path` made absolute against the current directory (malloc'd; NULL when
 * out of memory or the directory is gone): for paths handed on to code
 * that runs after plugin code could have called chdir(). */
char *loom_cli_absolute_path(const char *path);

/* Makes `loom` a child subreaper, so what plugin code forks (and then
 * orphans, even after setsid()) comes back to it (cli_reap.c). */
void loom_cli_reap_begin(void);

/* Kills and reaps every child `loom` still has, and what they leave,
 * until none is left; returns how many it reaped. Async-signal-safe. */
int loom_cli_reap_all(void);

/* Installs fn for signal sig with sigaction() (for every delivery, not
 * one; SIGINT, SIGTERM and SIGHUP blocked while it runs); the previous
 * disposition goes to *old unless old is NULL (cli_reap.c). */
void loom_cli_catch(int sig, void (*fn)(int), struct sigaction *old);

/* Kills and reaps every descendant, then ends `loom` by signal sig (its
 * default action). Async-signal-safe; in a handler of sig the process
 * dies when the handler returns. */
void loom_cli_die_of(int sig);

/* SIGINT, SIGTERM and SIGHUP, unless ignored: loom_cli_die_of. Commands
 * that load plugins start with it (loom_cli_io_begin). */
void loom_cli_signals_begin(void);

/* The stream every command prints its results on (never stdout itself). */
FILE *loom_cli_out(void);

/* Flushes loom_cli_out(); when a write to it failed, prints "loom <cmd>:
 * cannot write to standard output: <why>" and returns LOOM_EXIT_USAGE (2,
 * the input/output error class), else `code`. */
int loom_cli_io_check(int code);

/* The command returned `code`: exit() is normal again; returns
 * loom_cli_io_check(code). */
int loom_cli_io_end(int code);

/* Exit guard: while a command runs, exit() called by plugin code ends the
 * process with exit code 3 and "loom <cmd>: plugin <id> called exit(n)
 * before the command finished (pipeline[i])", where i is the step in
 * *marker (loom_session_args.step_marker) and the id the one given for it
 * by loom_cli_guard_step (loom_cli_guard_on_step is its on_step form), or
 * the plugin named by loom_cli_guard_loading (NULL: none) while one is
 * loaded outside a pipeline. _exit() cannot be caught in-process:
 * --isolate reports it. */
void loom_cli_guard_marker(volatile int32_t *marker);
void loom_cli_guard_step(int32_t step, const char *plugin_id);
void loom_cli_guard_on_step(void *user, int32_t step, const char *plugin_id);
void loom_cli_guard_loading(const char *plugin_id);

int loom_cmd_ab(int argc, char **argv);        /* cmd_ab.c */
int loom_cmd_ab_merge(int argc, char **argv);  /* cmd_ab_merge.c */
int loom_cmd_plugins(int argc, char **argv);   /* cmd_plugins.c */
int loom_cmd_validate(int argc, char **argv);  /* cmd_validate.c */
int loom_cmd_plan(int argc, char **argv);      /* cmd_plan.c */
int loom_cmd_workload(int argc, char **argv);  /* cmd_workload.c */
int loom_cmd_replan(int argc, char **argv);    /* cmd_replan.c */
int loom_cmd_cp_balance(int argc, char **argv); /* cmd_cp_balance.c */
int loom_cmd_calibrate_batch(int argc, char **argv); /* cmd_calibrate_batch.c */
int loom_cmd_calibrate(int argc, char **argv); /* cmd_calibrate.c */
int loom_cmd_tune(int argc, char **argv);      /* cmd_tune.c */
int loom_cmd_tune_merge(int argc, char **argv); /* cmd_tune_merge.c */

#endif
