/* cmd_plugins.c - `loom plugins` (placeholder until its implementation lands). */
#include <stdio.h>
#include "cli.h"

int loom_cmd_plugins(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "loom plugins: not available in this build\n");
    return LOOM_EXIT_USAGE;
}
