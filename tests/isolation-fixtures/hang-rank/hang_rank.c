/* hang_rank.c - fixture ranker for the isolation tests: ranks groups in
 * index order like fifo, but its hang_on_call-th rank() call in a process
 * sleeps forever, ignoring the time budget. */
#include <time.h>

#define FAULT_PARAM "hang_on_call"
#define FAULT_WHO "hang-rank"
#define FAULT_ID "fixture.hang-rank"
#include "../fault_rank.h"

/* Sleeps in one-second steps for ever. */
static void fault_now(void)
{
    for (;;) {
        struct timespec ts = {1, 0};
        nanosleep(&ts, NULL);
    }
}

LOOM_PLUGIN_DEFINE(fixture_hang_rank, fault_info);
