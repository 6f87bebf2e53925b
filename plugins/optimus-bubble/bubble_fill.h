/*
 * bubble_fill.h - Optimus's fine-grained bubble exploitation (Optimus
 * §4.2-4.3, Algorithm 2 OptimizeSchedule) over a coarse colocated order
 * (<loom/kits/colocated.h>), at the granularity of the graph's stages (one per
 * encoder layer when the partition gives one position per layer).
 *
 * Forward pass, repeated: findCritical picks the encoder flow whose last
 * forward still in the PRE region ends latest (ties: lowest flow); its
 * last PRE unit (the one the backbone consumes last) is taken out of PRE
 * and its forward stages, upstream to downstream, each go into the idle
 * gap of its rank that lies after the rank's first backbone stage, starts
 * no earlier than its inputs are ready, fits (stages are never split) and
 * ends first. The move is kept when the simulated schedule runs
 * without deadlock, the makespan does not grow and the backbone still
 * starts that microbatch no later than before (CheckEncLLMDep); the first
 * rejected move ends the pass. The backward pass mirrors it: the flow
 * whose POST backwards end last gives its earliest-gradient unit, whose
 * backward stages (downstream to upstream, I with its W) go into gaps
 * before the rank's last backbone stage, no earlier than the gradient.
 * Each accepted move takes one unit out of PRE / POST, so a pass makes at
 * most one move per encoder unit.
 *
 * Kernel level (Optimus §4.2-4.3, AssignKernels): where the schedule has
 * fills, a stage may instead run as a fill (loom_schedule.fill_hosts)
 * inside consecutive backbone stages of its rank: its compute in their TP
 * collectives (loom_stage_graph.comm_ms), its own collectives under their
 * compute, the rest in the rank's idle time between them. The hosts start
 * no earlier than its inputs are ready, are the fewest from that point
 * that hold it, and end before its deadline. Of the idle gaps and fills
 * that take the stage, the one ending first wins (ties: the earlier gap,
 * then the idle gap).
 *
 * Ownership: a loom_bf is owned by its interleaver (loom_bf_free); the
 * graph and the co are read-only; the schedule is rewritten in place.
 */
#ifndef LOOM_BUBBLE_FILL_H
#define LOOM_BUBBLE_FILL_H

#include <loom/kits/colocated.h>

/* Simulates sched over g into m (with start_ms / end_ms set). */
typedef int (*loom_bf_sim_fn)(void *user, const loom_stage_graph *g,
                              const loom_schedule *sched, loom_metrics *m,
                              loom_error *err);

enum { LOOM_BF_FORWARD = 1, LOOM_BF_BACKWARD = 2 };

typedef struct loom_bf {
    const loom_host_api *host;
    int32_t cap_stages, cap_units, cap_ranks;
    int32_t *trial;            /* trial order (n_stages) */
    int32_t *trial_fill;       /* trial fills, by stage (n_stages) */
    double *vstart, *vend;     /* times while placing (n_stages) */
    double *zero;              /* durations with encoder stages zeroed */
    uint8_t *moving;           /* per stage: being moved now */
    uint8_t *moved_f, *moved_b; /* per unit: out of PRE / POST */
    loom_metrics cur, next;    /* current and trial simulation */
    int32_t *rank_len;         /* per rank: its list's length while moving */
    double *rank_busy;         /* per rank: encoder time */
    /* results of the last refine */
    int32_t fwd_moves, bwd_moves;
    double coarse_ms, fine_ms, backbone_ms, encoder_ms;
} loom_bf;

/* Releases the scratch of bf. */
void loom_bf_free(loom_bf *bf);

/* Refines the coarse order `sched` of g in place (passes: LOOM_BF_FORWARD
 * | LOOM_BF_BACKWARD) and records the moves and the makespans of the
 * coarse and fine orders, of the backbone alone (encoder stages at zero
 * time) and the busiest rank's encoder time. Errors other than a rejected
 * move (out of memory, a coarse order that does not run) are returned. */
int loom_bf_refine(loom_bf *bf, const loom_co *co, const loom_stage_graph *g,
                   int passes, loom_schedule *sched, loom_bf_sim_fn sim,
                   void *user, loom_error *err);

#endif
