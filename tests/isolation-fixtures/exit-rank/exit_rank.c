/* exit_rank.c - fixture ranker for the isolation tests: ranks groups in
 * index order like fifo, but calls exit(0) - as if it had finished the
 * program - on its exit_on_call-th rank() call in a process, or in
 * create() when exit_in_create is 1. */
#include <stdlib.h>

#define FAULT_PARAM "exit_on_call"
#define FAULT_WHO "exit-rank"
#define FAULT_ID "fixture.exit-rank"
#define FAULT_CREATE_HOOK exit_in_create
#include "../fault_rank.h"

/* exit(0) in create() when the exit_in_create param is 1. */
static void exit_in_create(const loom_host_api *host, loom_ctx *ctx)
{
    int64_t now = 0;
    host->param_int(ctx, "exit_in_create", &now);
    if (now)
        exit(0);
}

/* Ends the process as a program that is done would. */
static void fault_now(void)
{
    exit(0);
}

LOOM_PLUGIN_DEFINE(fixture_exit_rank, fault_info);
