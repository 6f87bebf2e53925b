/* roofline_memo.c - the layer-cost memo of a roofline instance (see
 * roofline_memo.h): FNV-1a over the key's bytes picks a slot of a
 * 4096-slot table; a slot holds the last key that hashed there. */
#include <string.h>
#include "roofline_memo.h"

#define RF_MEMO_SLOTS 4096u

void rf_memo_init(rf_memo *m)
{
    memset(m, 0, sizeof *m);
    pthread_mutex_init(&m->lock, NULL);
}

void rf_memo_free(rf_memo *m, const loom_host_api *host)
{
    if (m->slots)
        host->free(m->slots);
    m->slots = NULL;
    pthread_mutex_destroy(&m->lock);
}

/* The slot of a key. */
static uint32_t slot_of(const rf_memo_key *key)
{
    const unsigned char *p = (const unsigned char *)key;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < sizeof *key; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return (uint32_t)(h ^ (h >> 32)) & (RF_MEMO_SLOTS - 1);
}

int rf_memo_get(rf_memo *m, const rf_memo_key *key, loom_roofline_costs *out)
{
    int hit = 0;
    uint32_t i = slot_of(key);
    pthread_mutex_lock(&m->lock);
    if (m->slots && m->slots[i].used && memcmp(&m->slots[i].key, key, sizeof *key) == 0) {
        *out = m->slots[i].costs;
        hit = 1;
    }
    pthread_mutex_unlock(&m->lock);
    return hit;
}

void rf_memo_put(rf_memo *m, const loom_host_api *host, const rf_memo_key *key,
                 const loom_roofline_costs *costs)
{
    uint32_t i = slot_of(key);
    pthread_mutex_lock(&m->lock);
    if (!m->slots) {
        m->slots = host->alloc(RF_MEMO_SLOTS * sizeof *m->slots);
        if (m->slots)
            memset(m->slots, 0, RF_MEMO_SLOTS * sizeof *m->slots);
    }
    if (m->slots) {
        m->slots[i].key = *key;
        m->slots[i].costs = *costs;
        m->slots[i].used = 1;
    }
    pthread_mutex_unlock(&m->lock);
}
