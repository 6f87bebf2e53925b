/* chatty_rank.c - fixture ranker for the isolation tests: ranks groups in
 * index order like fifo, and prints to standard output - with printf()
 * and with write(1, ...) - in create() and on its chat_on_call-th rank()
 * call in a process, as a plugin left with debugging output would. */
#include <stdio.h>
#include <unistd.h>

#define FAULT_PARAM "chat_on_call"
#define FAULT_WHO "chatty-rank"
#define FAULT_ID "fixture.chatty-rank"
#define FAULT_CREATE_HOOK chat_in_create
#include "../fault_rank.h"

/* Prints one line both ways. */
static void chat(const char *where)
{
    static const char raw[] = "chatty-rank: write(1) says hello\n";
    printf("chatty-rank: printf in %s\n", where); /* left in stdout's buffer */
    if (write(STDOUT_FILENO, raw, sizeof raw - 1) < 0)
        return;
}

static void chat_in_create(const loom_host_api *host, loom_ctx *ctx)
{
    (void)host;
    (void)ctx;
    chat("create");
}

static void fault_now(void)
{
    chat("rank");
}

LOOM_PLUGIN_DEFINE(fixture_chatty_rank, fault_info);
