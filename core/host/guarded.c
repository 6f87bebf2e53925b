/* guarded.c - host-owned buffers handed to plugins: the data ends at most
 * 7 bytes before an inaccessible page, so a write past the end faults in
 * the plugin's own call (an isolated run then names the plugin that was
 * running); the bytes in front of the data and the few between its end
 * and the guard page hold a canary that loom_guarded_intact checks right
 * after the call, for writes that stay inside the mapping. */
#define _DEFAULT_SOURCE
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "guarded.h"

#define GUARD_CANARY 0xA5u
#define GUARD_ALIGN 8u

int loom_guarded_alloc(loom_guarded *g, size_t bytes)
{
    memset(g, 0, sizeof *g);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (bytes == 0)
        bytes = 1;
    if (bytes > SIZE_MAX / 2 - 2 * page)
        return -1;
    size_t span = (bytes + GUARD_ALIGN + page - 1) / page * page; /* readable pages */
    void *map = mmap(NULL, span + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
    if (map == MAP_FAILED)
        return -1;
    if (mprotect((unsigned char *)map + span, page, PROT_NONE) != 0) {
        munmap(map, span + page);
        return -1;
    }
    g->map = map;
    g->map_bytes = span + page;
    size_t offset = (span - bytes) / GUARD_ALIGN * GUARD_ALIGN;
    memset(g->map, GUARD_CANARY, span);
    g->data = g->map + offset;
    g->bytes = bytes;
    memset(g->data, 0, bytes);
    return 0;
}

int loom_guarded_intact(const loom_guarded *g)
{
    if (!g->map)
        return 1;
    const unsigned char *data = g->data;
    const unsigned char *end = g->map + g->map_bytes - (size_t)sysconf(_SC_PAGESIZE);
    for (const unsigned char *p = g->map; p < data; p++)
        if (*p != GUARD_CANARY)
            return 0;
    for (const unsigned char *p = data + g->bytes; p < end; p++)
        if (*p != GUARD_CANARY)
            return 0;
    return 1;
}

void loom_guarded_free(loom_guarded *g)
{
    if (g->map)
        munmap(g->map, g->map_bytes);
    memset(g, 0, sizeof *g);
}
