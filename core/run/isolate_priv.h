/* isolate_priv.h - what the files of isolation share: the record the
 * child sends on the result pipe, the parent's collector, the channel, and
 * the child's process group as the parent sees it (isolate_channel.c,
 * isolate_signals.c, isolate.c, isolate_plan.c). */
#ifndef LOOM_ISOLATE_PRIV_H
#define LOOM_ISOLATE_PRIV_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "run_priv.h"

#if defined(__SANITIZE_ADDRESS__)
#define LOOM_ISOLATE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LOOM_ISOLATE_ASAN 1
#endif
#endif
#ifndef LOOM_ISOLATE_ASAN
#define LOOM_ISOLATE_ASAN 0
#endif

#define REC_MAGIC 0x4C4F4F4Du /* "LOOM" */
#define REC_MAX_STEPS 1024

enum rec_kind { REC_INFO = 1, REC_STEP, REC_BEGIN, REC_RESULT, REC_FAIL, REC_END, REC_KIND_END };

/* One message from the child; small enough for an atomic pipe write. */
typedef struct rec {
    uint32_t magic;
    uint32_t kind;      /* enum rec_kind */
    int32_t index;      /* INFO: iterations; STEP: step; BEGIN/FAIL: iteration */
    int32_t status;     /* FAIL: loom_status */
    double limit_ms;    /* BEGIN: the iteration's limit */
    loom_iter_result result;
    char text[LOOM_ERROR_MSG_BYTES]; /* manifest name, plugin id, message */
    uint64_t checksum;  /* FNV-1a 64 of every byte before it */
} rec;

_Static_assert(sizeof(rec) <= 4096, "records must fit one atomic pipe write");

/* Parent-side state of a run. */
typedef struct collector {
    loom_run_output *out;
    volatile int32_t *last_marker; /* the last step whose plugin ran (shared) */
    const loom_isolate_opts *opts;
    loom_iter_fn on_iter;
    void *iter_user;
    int32_t cap;
    char (*step_ids)[128];  /* plugin id per announced step */
    int32_t n_steps;
    int32_t current;        /* running or last begun iteration, -1 none */
    int in_iteration;
    double iter_limit_ms;   /* limit of the running iteration */
    int ended;              /* END seen */
    int no_memory;          /* allocation failure in the parent */
} collector;

struct loom_channel {
    int fd;              /* write end in a child; -1 in-process */
    collector *direct;   /* in-process receiver */
    volatile int32_t *step_marker; /* running step (shared memory in a child) */
    volatile int32_t *last_step_marker; /* the last step whose plugin began */
};

/* ---- records and the collector (isolate_channel.c) ----------------------- */

/* A zeroed record of one kind. */
rec loom_iso_new_rec(uint32_t kind, int32_t index);

/* Fills the magic and checksum and delivers r (write or direct call). */
int loom_iso_send(loom_channel *ch, rec *r);

/* Applies one record; returns -1 (why set) when it is malformed or out of
 * sequence. */
int loom_iso_handle(collector *c, const rec *r, char *why, size_t why_size);

/* Records where the run is now (phase and iteration) in a failure. */
void loom_iso_stamp_failure(collector *c, loom_failure *f);

/* Names the plugin of `step` in a failure (or the core for -1), and for
 * the core the plugin that ran last, if any. */
void loom_iso_stamp_step(collector *c, loom_failure *f, int32_t step);

/* ---- the child's process group and the signals (isolate_signals.c) ------- */

/* The parent's view of its child. */
typedef struct child {
    pid_t pid;
    int reaped; /* waited for; status holds its wait status */
    int status;
} child;

/* SIGINT, SIGTERM and SIGHUP in a set. */
void loom_iso_fwd_set(sigset_t *set);

/* Parent, signals blocked: starts forwarding to child `pid`. */
void loom_iso_fwd_install(pid_t pid);

/* Parent: gives the caller its dispositions back. */
void loom_iso_fwd_remove(void);

/* First steps of the child, signals still blocked: its own process group,
 * death with the parent, default dispositions for the parent's handlers,
 * then the caller's signal mask `mask`. */
void loom_iso_child_setup(pid_t parent, const sigset_t *mask);

/* 1 when the child has terminated; it stays unreaped (a zombie), so its
 * pid, which names its process group, cannot be reused yet. */
int loom_iso_child_ended(const child *k);

/* Kills the child's process group - the child and whatever it forked that
 * stayed in the group - and reaps the child (its wait status: k->status;
 * the real one when it had already ended). Every way out of the parent
 * loop goes through here. */
void loom_iso_stop_child(child *k);

#endif
