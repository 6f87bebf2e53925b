/* guarded.h - host-owned buffers handed to plugin code, with a guard page
 * right after their end and canary bytes around them (guarded.c), so that
 * an overrun faults inside the plugin call or is found right after it. */
#ifndef LOOM_GUARDED_H
#define LOOM_GUARDED_H

#include <stddef.h>

typedef struct loom_guarded {
    unsigned char *map; /* the mapping: canary head, data, canary tail, guard page */
    size_t map_bytes;
    void *data;         /* what the plugin gets (zeroed, 8-byte aligned) */
    size_t bytes;
} loom_guarded;

/* Maps a zeroed buffer of `bytes` (at least 1) whose end is followed by at
 * most 7 canary bytes and then an inaccessible page. 0, or -1 when out of
 * memory. */
int loom_guarded_alloc(loom_guarded *g, size_t bytes);

/* 1 while every canary byte before and after the data is intact. */
int loom_guarded_intact(const loom_guarded *g);

/* Unmaps g (a zeroed or freed g is fine). */
void loom_guarded_free(loom_guarded *g);

#endif
