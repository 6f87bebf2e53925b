/* sim_scratch.h - the simulator's scratch, shared by the replay
 * (simulator.c) and the iteration tail (sim_tail.c). */
#ifndef LOOM_SIM_SCRATCH_H
#define LOOM_SIM_SCRATCH_H

#include "stage_graph.h"

/* The fill a rank runs inside its next stages (stage -1: none). */
typedef struct sim_fill {
    int32_t stage, left;    /* the fill and its hosts still to run */
    double ready, raw;      /* when its inputs are ready, with / without P2P */
    double avail;           /* when it could first run: ready, the rank free */
    double start;           /* its start: avail, or its first host's start */
    double comm, compute;   /* the hosts' exposed communication and compute */
    double idle, idle_p2p;  /* the rank's idle time from avail on, and the part
                               of it counted as waiting on transfers */
} sim_fill;

struct loom_sim_scratch {
    int32_t cap_stages, cap_ranks;
    double *end_ms;       /* per stage */
    uint8_t *done;        /* per stage */
    int32_t *seen;        /* per stage: validation stamp */
    int32_t *wait_head;   /* per stage: first rank waiting on it, -1 */
    int32_t *wait_next;   /* per rank: next rank waiting on the same stage */
    int32_t *cursor;      /* per rank: index into order */
    int32_t *scan;        /* per rank: next predecessor edge to check */
    double *ready_ms;     /* per rank: max pred end seen for the head */
    double *free_ms;      /* per rank */
    double *first_ms;     /* per rank */
    int64_t *mem;         /* per rank: current activation bytes */
    int64_t *peak;        /* per rank: peak activation bytes */
    int32_t *stack;       /* ranks to advance */
    double *raw_ms;       /* per rank: max pred end seen, without P2P */
    double *busy_ms;      /* per rank: stage time */
    double *p2p_ms;       /* per rank: idle time waiting on transfers */
    double *start_ms;     /* per stage */
    double *sync_end_ms;  /* per rank: end of its gradient sync */
    int32_t cap_chunks;   /* ranks x chunks the two below hold */
    double *chunk_start;  /* [rank * chunks + c]: last backward's start */
    double *chunk_end;    /* [rank * chunks + c]: last backward's end */
    int32_t stamp;
    sim_fill *fill;       /* per rank */
    /* The parameter prefetch (loom_stage_graph.tail_param_prefetch_ms),
     * when a rank has one (sim_prefetch.c). Per rank r, cells
     * [r * gate_chunks, (r + 1) * gate_chunks): the chunks in the order of
     * their first forwards (gate_order, gate_used of them), each chunk's
     * part of the gather (gate_part) and when it has arrived (gate_ms,
     * once dispatched); gate_pos the next chunk in that order whose first
     * forward has not started, gate_link when the rank's DP link is free. */
    int gate_on;
    int32_t gate_chunks, cap_gate, cap_gate_ranks;
    double *gate_ms, *gate_part;
    int32_t *gate_order;
    int32_t *gate_used, *gate_pos; /* per rank */
    double *gate_link;             /* per rank */
    double *gate_wait_ms; /* per rank: time its forwards waited for them */
};

/* The end of every rank's gradient sync (s->sync_end_ms) after its stages
 * have run (s->free_ms), from the replayed stage times (sim_tail.c).
 * LOOM_ENOMEM when the per-chunk times cannot be held. */
int loom_sim_tail(loom_sim_scratch *s, const loom_stage_graph *g, loom_error *err);

/* Sets up the parameter prefetch for sched (s->gate_on 0 when the graph
 * has none): every rank's chunk order and parts, the first two chunks'
 * gathers dispatched at the step's start, the ranks' waits cleared
 * (sim_prefetch.c). LOOM_ENOMEM when they cannot be held. */
int loom_sim_gates(loom_sim_scratch *s, const loom_stage_graph *g, const loom_schedule *sched,
                   loom_error *err);

/* Rank r's next stage st, whose inputs have ended, may start at
 * *start_ms: when it is the first forward of the next chunk in the rank's
 * order, it cannot start before that chunk's parameters have arrived
 * (*start_ms moves there; returns the wait) and its start dispatches the
 * gather of the chunk after the next (sim_prefetch.c). */
double loom_sim_gate(loom_sim_scratch *s, const loom_stage_graph *g, int32_t r, int32_t st,
                     double *start_ms);

#endif
