/* crash_rank.c - fixture ranker for the isolation tests: ranks groups in
 * index order like fifo, but its crash_on_call-th rank() call in a process
 * writes to a page it mapped without access, a genuine segfault. */
#define _DEFAULT_SOURCE
#include <sys/mman.h>

#define FAULT_PARAM "crash_on_call"
#define FAULT_WHO "crash-rank"
#define FAULT_ID "fixture.crash-rank"
#include "../fault_rank.h"

/* Writes into an inaccessible page: the kernel delivers SIGSEGV. */
static void fault_now(void)
{
    volatile char *page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page != MAP_FAILED)
        page[0] = 1;
}

LOOM_PLUGIN_DEFINE(fixture_crash_rank, fault_info);
