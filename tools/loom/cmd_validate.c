/* cmd_validate.c - `loom validate` (placeholder until its implementation lands). */
#include <stdio.h>
#include "cli.h"

int loom_cmd_validate(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "loom validate: not available in this build\n");
    return LOOM_EXIT_USAGE;
}
