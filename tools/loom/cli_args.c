/* cli_args.c - option parsing shared by the `loom` subcommands. */
#include <string.h>
#include "cli.h"

const char *loom_cli_opt_value(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0)
        return NULL;
    if (argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (argv[*i][n] != 0)
        return NULL;
    if (*i + 1 >= argc)
        return "";
    return argv[++*i];
}
