/* cmd_workload.c - `loom workload` (placeholder until its implementation lands). */
#include <stdio.h>
#include "cli.h"

int loom_cmd_workload(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "loom workload: not available in this build\n");
    return LOOM_EXIT_USAGE;
}
