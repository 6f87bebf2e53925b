/* cmd_plan.c - `loom plan` (placeholder until its implementation lands). */
#include <stdio.h>
#include "cli.h"

int loom_cmd_plan(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "loom plan: not available in this build\n");
    return LOOM_EXIT_USAGE;
}
