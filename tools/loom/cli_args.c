/* cli_args.c - the one option parser every `loom` subcommand uses
 * (getopt_long underneath). */
#define _GNU_SOURCE
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <loom/sys/session.h>
#include "cli.h"

/* Keys of the shared planning options: LOOM_CLI_SESSION_KEY + their index
 * in loom_session_options(). */
#define LOOM_CLI_SESSION_KEY 0x4000
#define LOOM_CLI_PATH_ALIAS 0x3fff

void loom_cli_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "loom %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* Index of `name` among the seen options, or -1. */
static int seen_index(const char **seen, int n_seen, const char *name)
{
    for (int i = 0; i < n_seen; i++)
        if (!strcmp(seen[i], name))
            return i;
    return -1;
}

/* The first pair of `pairs` whose both names are in `seen`: prints it and
 * returns -1; 0 when none. */
static int check_conflicts(const char *cmd, const char *const (*pairs)[2], const char **seen,
                           int n_seen)
{
    for (int k = 0; pairs && pairs[k][0]; k++)
        if (seen_index(seen, n_seen, pairs[k][0]) >= 0 &&
            seen_index(seen, n_seen, pairs[k][1]) >= 0) {
            loom_cli_error(cmd, "--%s and --%s cannot be given together", pairs[k][0],
                           pairs[k][1]);
            return -1;
        }
    return 0;
}

/* Builds the getopt_long table: the command's options, then (with a
 * session) the shared ones and the --path alias, then --help. */
static struct option *build_table(const loom_cli_spec *spec, int *n_out)
{
    int n = 0;
    for (const loom_cli_option *o = spec->options; o && o->name; o++)
        n++;
    const loom_session_option *so = spec->session ? loom_session_options() : NULL;
    for (const loom_session_option *o = so; o && o->name; o++)
        n++;
    struct option *t = calloc((size_t)n + 4, sizeof *t);
    if (!t)
        return NULL;
    n = 0;
    for (const loom_cli_option *o = spec->options; o && o->name; o++)
        t[n++] = (struct option){o->name, o->takes_value ? required_argument : no_argument, NULL,
                                 o->key};
    for (int i = 0; so && so[i].name; i++)
        t[n++] = (struct option){so[i].name, so[i].takes_value ? required_argument : no_argument,
                                 NULL, LOOM_CLI_SESSION_KEY + i};
    if (so)
        t[n++] = (struct option){"path", required_argument, NULL, LOOM_CLI_PATH_ALIAS};
    t[n++] = (struct option){"help", no_argument, NULL, 'h'};
    *n_out = n;
    return t;
}

/* The long name getopt_long matched for key `key` (first entry). */
static const char *name_of(const struct option *t, int n, int key)
{
    for (int i = 0; i < n; i++)
        if (t[i].val == key)
            return t[i].name;
    return "?";
}

/* Says why long option `typed` matched nothing: unknown, or a prefix of
 * several names. */
static void unknown_long(const char *cmd, const struct option *t, int n, const char *typed)
{
    const char *name = typed + 2, *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    char list[512] = "";
    int matches = 0;
    for (int i = 0; i < n; i++)
        if (!strncmp(t[i].name, name, len) && strlen(list) + strlen(t[i].name) + 8 < sizeof list) {
            strcat(list, matches++ ? ", --" : "--");
            strcat(list, t[i].name);
        }
    if (matches > 1)
        loom_cli_error(cmd, "ambiguous option '--%.*s' (could be %s)", (int)len, name, list);
    else
        loom_cli_error(cmd, "unknown option '--%.*s'", (int)len, name);
}

int loom_cli_parse(const loom_cli_spec *spec, int argc, char **argv)
{
    int n = 0, rc = 0, n_seen = 0;
    struct option *table = build_table(spec, &n);
    const char **seen = calloc((size_t)argc + 1, sizeof *seen);
    if (!table || !seen) {
        free(table);
        free(seen);
        loom_cli_error(spec->cmd, "out of memory");
        return -1;
    }
    const loom_session_option *so = loom_session_options();
    opterr = 0;
    optind = 0; /* glibc: start afresh (also resets its permutation state) */
    for (;;) {
        int idx = -1;
        int c = getopt_long(argc, argv, "-:h", table, &idx);
        if (c == -1)
            break;
        const char *typed = argv[optind - 1];
        if (c == 1) { /* an operand, in order */
            rc = spec->handle ? spec->handle(spec->ctx, LOOM_CLI_OPERAND, NULL, optarg) : -1;
            if (!spec->handle)
                loom_cli_error(spec->cmd, "unexpected argument '%s'", optarg);
        } else if (c == '?') {
            if (optopt)
                loom_cli_error(spec->cmd, "option '--%s' takes no value (found '%s')",
                               name_of(table, n, optopt), typed);
            else if (!strncmp(typed, "--", 2))
                unknown_long(spec->cmd, table, n, typed);
            else
                loom_cli_error(spec->cmd, "unknown option '%s'", typed);
            rc = -1;
        } else if (c == ':') {
            loom_cli_error(spec->cmd, "option '--%s' needs a value", name_of(table, n, optopt));
            rc = -1;
        } else if (c == 'h') {
            rc = 1;
        } else {
            const char *name = idx >= 0 ? table[idx].name : name_of(table, n, c);
            if (c == LOOM_CLI_PATH_ALIAS) { /* --path: the plugin folder option's alias */
                name = "plugin-path";
                c = LOOM_CLI_SESSION_KEY;
                while (strcmp(so[c - LOOM_CLI_SESSION_KEY].name, name))
                    c++;
            }
            if (seen_index(seen, n_seen, name) < 0)
                seen[n_seen++] = name;
            if (c >= LOOM_CLI_SESSION_KEY) {
                loom_error err = {0};
                if (loom_session_args_set(spec->session, so[c - LOOM_CLI_SESSION_KEY].name, optarg,
                                          &err) != LOOM_OK) {
                    loom_cli_error(spec->cmd, "%s", err.message);
                    rc = -1;
                }
            } else if (optarg && !*optarg) {
                loom_cli_error(spec->cmd, "option '--%s' needs a value, found ''", name);
                rc = -1;
            } else {
                rc = spec->handle ? spec->handle(spec->ctx, c, name, optarg) : -1;
            }
        }
        if (rc)
            break;
    }
    for (int i = optind; rc == 0 && i < argc; i++) { /* operands after "--" */
        rc = spec->handle ? spec->handle(spec->ctx, LOOM_CLI_OPERAND, NULL, argv[i]) : -1;
        if (!spec->handle)
            loom_cli_error(spec->cmd, "unexpected argument '%s'", argv[i]);
    }
    if (rc == 0)
        rc = check_conflicts(spec->cmd, spec->conflicts, seen, n_seen);
    free(table);
    free(seen);
    return rc;
}

int loom_cli_number(const char *cmd, const char *name, const char *v, double lo, double hi,
                    double *out)
{
    char *end = NULL;
    double d = v ? strtod(v, &end) : NAN;
    if (!v || !*v || !end || *end || !(d >= lo) || !(d <= hi)) {
        loom_cli_error(cmd, "--%s: expected a number in [%g, %g], found '%s'", name, lo, hi,
                       v ? v : "");
        return -1;
    }
    *out = d;
    return 0;
}

void loom_cli_json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(out, "\\u%04x", *p);
        else
            fputc(*p, out);
    }
    fputc('"', out);
}
