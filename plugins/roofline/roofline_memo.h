/* roofline_memo.h - a memo of layer costs for one roofline instance.
 * Pipelines price the same layer shape many times (identical layers of a
 * module, microbatches of one shape, every candidate of a search); the
 * roofline is a pure function of what the key holds (the hardware by
 * value, so a cluster whose factors change between calls, as `loom
 * calibrate` changes them, is a new key), so a hit returns exactly what
 * computing would. Thread-safe (one lock). */
#ifndef LOOM_ROOFLINE_MEMO_H
#define LOOM_ROOFLINE_MEMO_H

#include <pthread.h>
#include <stdint.h>
#include <loom/host.h>
#include "roofline_model.h"

/* Everything rf_layer_and_vocab's result depends on besides the
 * instance's own params. Zero it before filling (it is hashed and
 * compared bytewise). */
typedef struct rf_memo_key {
    const void *model;
    loom_roofline_hw hw;       /* the cluster's rates at this TP and CP */
    loom_layer layer;          /* the layer's shape parameters */
    int64_t tokens, sequences;
    double seq_sq_sum, attention_scale;
    int32_t module, vocab_role; /* 1: first layer, 2: last (head), 3: both */
    int32_t kind, frozen, n_layers; /* the module's, as the estimate reads them */
    int64_t vocab, vocab_hidden;
    int32_t tp, cp, policy, trainable_upstream;
} rf_memo_key;

typedef struct rf_memo_slot {
    rf_memo_key key;
    loom_roofline_costs costs;
    int32_t used;
} rf_memo_slot;

/* A direct-mapped table of slots, allocated on first use. */
typedef struct rf_memo {
    pthread_mutex_t lock;
    rf_memo_slot *slots;
    uint32_t n_slots;
} rf_memo;

void rf_memo_init(rf_memo *m);
void rf_memo_free(rf_memo *m, const loom_host_api *host);
/* 1 and *out when the key is held, else 0. */
int rf_memo_get(rf_memo *m, const rf_memo_key *key, loom_roofline_costs *out);
/* Holds key -> costs (replacing what shares its slot); nothing when the
 * table cannot be allocated. */
void rf_memo_put(rf_memo *m, const loom_host_api *host, const rf_memo_key *key,
                 const loom_roofline_costs *costs);

#endif
