/* roofline_memo.c - the layer-cost memo of a roofline instance (see
 * roofline_memo.h): a word-wise hash of the key picks a slot of a
 * 4096-slot table; a slot holds the last key that hashed there. */
#include <stddef.h>
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

/* The slot of a key: a multiply-xorshift mix over the 8-byte words from
 * its shape on (the key is zeroed before it is filled, so its padding
 * hashes the same). The model, rates and layer parameters before it
 * change with the module and TP, which the hashed part holds too, and a
 * lookup compares the whole key: hashing them cost more than the
 * estimate a hit saves. */
static uint32_t slot_of(const rf_memo_key *key)
{
    uint64_t h = 0x9e3779b97f4a7c15ull, w;
    const unsigned char *p = (const unsigned char *)key;
    size_t n = sizeof *key, i = offsetof(rf_memo_key, tokens);
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    for (; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    h ^= h >> 29;
    return (uint32_t)h & (RF_MEMO_SLOTS - 1);
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
