/* isolate.c - runs planning work in a forked child with a wall-clock limit
 * per iteration and an address-space limit, collecting fixed-size,
 * checksummed records from a pipe; or in-process without limits. */
#define _GNU_SOURCE /* pipe2, on_exit */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include "run_priv.h"
#include "engine_api.h"
#include "pipeline.h"

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

volatile int32_t *loom_channel_step_marker(loom_channel *ch)
{
    return ch ? ch->step_marker : NULL;
}

volatile int32_t *loom_channel_last_step_marker(loom_channel *ch)
{
    return ch ? ch->last_step_marker : NULL;
}

/* FNV-1a 64 over n bytes. */
static uint64_t fnv1a(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static int handle(collector *c, const rec *r, char *why, size_t why_size);

/* Fills the magic and checksum and delivers r (write or direct call). */
static int send_rec(loom_channel *ch, rec *r)
{
    r->magic = REC_MAGIC;
    r->checksum = fnv1a(r, offsetof(rec, checksum));
    if (ch->fd < 0) {
        char why[128];
        return handle(ch->direct, r, why, sizeof why) == 0 ? LOOM_OK : LOOM_EINVAL;
    }
    const char *p = (const char *)r;
    size_t left = sizeof *r;
    while (left > 0) {
        ssize_t n = write(ch->fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return LOOM_EIO;
        p += n;
        left -= (size_t)n;
    }
    return LOOM_OK;
}

/* A zeroed record of one kind. */
static rec new_rec(uint32_t kind, int32_t index)
{
    rec r;
    memset(&r, 0, sizeof r);
    r.kind = kind;
    r.index = index;
    return r;
}

int loom_channel_info(loom_channel *ch, int32_t n_iterations, const char *manifest_name)
{
    rec r = new_rec(REC_INFO, n_iterations);
    snprintf(r.text, sizeof r.text, "%s", manifest_name ? manifest_name : "");
    return send_rec(ch, &r);
}

int loom_channel_step(loom_channel *ch, int32_t step, const char *plugin_id)
{
    rec r = new_rec(REC_STEP, step);
    snprintf(r.text, sizeof r.text, "%.127s", plugin_id ? plugin_id : "");
    return send_rec(ch, &r);
}

int loom_channel_begin(loom_channel *ch, int32_t iteration, double limit_ms)
{
    rec r = new_rec(REC_BEGIN, iteration);
    r.limit_ms = limit_ms;
    return send_rec(ch, &r);
}

int loom_channel_result(loom_channel *ch, const loom_iter_result *res)
{
    rec r = new_rec(REC_RESULT, res->iteration);
    r.result = *res;
    return send_rec(ch, &r);
}

int loom_channel_fail(loom_channel *ch, int32_t iteration, int status, const char *message)
{
    rec r = new_rec(REC_FAIL, iteration);
    r.status = status;
    snprintf(r.text, sizeof r.text, "%s", message ? message : "");
    return send_rec(ch, &r);
}

int loom_channel_fd(const loom_channel *ch)
{
    return ch->fd;
}

int loom_isolate_memory_limit_supported(void)
{
    return !LOOM_ISOLATE_ASAN;
}

/* Records where the run is now (phase and iteration) in a failure. */
static void stamp_failure(collector *c, loom_failure *f)
{
    f->iteration = c->current;
    if (c->current < 0)
        f->phase = LOOM_PHASE_OPEN;
    else
        f->phase = c->in_iteration ? LOOM_PHASE_ITERATION : LOOM_PHASE_AFTER;
}

/* Names the plugin of `step` in a failure (or the core for -1), and for
 * the core the plugin that ran last, if any. */
static void stamp_step(collector *c, loom_failure *f, int32_t step)
{
    f->step = step;
    f->plugin_id[0] = 0;
    f->last_step = -1;
    f->last_plugin_id[0] = 0;
    if (step >= 0 && step < c->n_steps) {
        snprintf(f->plugin_id, sizeof f->plugin_id, "%s", c->step_ids[step]);
        return;
    }
    int32_t last = c->last_marker ? *c->last_marker : -1;
    if (last >= 0 && last < c->n_steps) {
        f->last_step = last;
        snprintf(f->last_plugin_id, sizeof f->last_plugin_id, "%s", c->step_ids[last]);
    }
}

/* 1 when the text field holds a NUL-terminated string. */
static int text_ok(const rec *r)
{
    return memchr(r->text, 0, sizeof r->text) != NULL;
}

/* 1 when every number of a result is plausible. */
static int result_ok(const loom_iter_result *x)
{
    return isfinite(x->makespan_ms) && x->makespan_ms >= 0 && isfinite(x->bubble_ratio) &&
           isfinite(x->mfu) && isfinite(x->plan_time_ms) && x->plan_time_ms >= 0 &&
           x->peak_bytes >= 0 && x->ranks >= 0 && x->evaluations >= 0;
}

/* Appends a result to the output. */
static int push_result(collector *c, const loom_iter_result *x)
{
    loom_run_output *o = c->out;
    if (o->n_results == c->cap) {
        int32_t cap = c->cap ? c->cap * 2 : 16;
        loom_iter_result *p = realloc(o->results, (size_t)cap * sizeof *p);
        if (!p) {
            c->no_memory = 1;
            return -1;
        }
        o->results = p;
        c->cap = cap;
    }
    o->results[o->n_results++] = *x;
    return 0;
}

/* Remembers the plugin id of an announced step. */
static int push_step(collector *c, int32_t step, const char *id)
{
    if (step >= c->n_steps) {
        char (*p)[128] = realloc(c->step_ids, (size_t)(step + 1) * sizeof *p);
        if (!p) {
            c->no_memory = 1;
            return -1;
        }
        for (int32_t i = c->n_steps; i <= step; i++)
            p[i][0] = 0;
        c->step_ids = p;
        c->n_steps = step + 1;
    }
    snprintf(c->step_ids[step], sizeof c->step_ids[step], "%.127s", id);
    return 0;
}

/* Applies one record; returns -1 (why set) when it is malformed or out of
 * sequence. */
static int handle(collector *c, const rec *r, char *why, size_t why_size)
{
    loom_run_output *o = c->out;
    if (r->magic != REC_MAGIC || r->checksum != fnv1a(r, offsetof(rec, checksum))) {
        snprintf(why, why_size, "a record with a bad magic number or checksum");
        return -1;
    }
    if (r->kind < REC_INFO || r->kind >= REC_KIND_END || !text_ok(r) || c->ended) {
        snprintf(why, why_size, "a record of unknown kind %u or after the end", r->kind);
        return -1;
    }
    switch (r->kind) {
    case REC_INFO:
        if (r->index < 0)
            break;
        o->n_iterations = r->index;
        snprintf(o->manifest_name, sizeof o->manifest_name, "%.127s", r->text);
        return 0;
    case REC_STEP:
        if (r->index < 0 || r->index >= REC_MAX_STEPS)
            break;
        return push_step(c, r->index, r->text);
    case REC_BEGIN:
        if (c->in_iteration || r->index < 0 || !isfinite(r->limit_ms))
            break;
        c->current = r->index;
        c->in_iteration = 1;
        c->iter_limit_ms = r->limit_ms > 0 ? r->limit_ms : c->opts->timeout_ms;
        if (c->on_iter)
            c->on_iter(c->iter_user, r->index, o->n_iterations, 0);
        return 0;
    case REC_RESULT:
        if (!c->in_iteration || r->index != c->current || r->result.iteration != c->current ||
            !result_ok(&r->result))
            break;
        c->in_iteration = 0;
        if (push_result(c, &r->result))
            return 0;
        if (c->on_iter)
            c->on_iter(c->iter_user, r->index, o->n_iterations, 1);
        return 0;
    case REC_FAIL:
        if (r->status >= 0 || r->index < -1)
            break;
        if (o->failure.kind == LOOM_FAIL_NONE) {
            loom_failure *f = &o->failure;
            int limited = c->opts->isolate && c->opts->memory_limit_mb > 0 &&
                          loom_isolate_memory_limit_supported();
            f->kind = (r->status == LOOM_ENOMEM && limited) ? LOOM_FAIL_MEMORY : LOOM_FAIL_STATUS;
            f->limit_mb = f->kind == LOOM_FAIL_MEMORY ? c->opts->memory_limit_mb : 0;
            f->status = r->status;
            stamp_failure(c, f);
            if (r->index >= 0)
                f->iteration = r->index;
            stamp_step(c, f, -1);
            snprintf(f->message, sizeof f->message, "%s", r->text);
        }
        c->in_iteration = 0;
        return 0;
    case REC_END:
        if (c->in_iteration)
            break;
        c->ended = 1;
        o->body_status = r->status;
        return 0;
    default:
        break;
    }
    snprintf(why, why_size, "an out-of-sequence or inconsistent record (kind %u, index %d)",
             r->kind, r->index);
    return -1;
}

/* Applies the RLIMIT_AS limit in a child. */
static void apply_memory_limit(int64_t mb)
{
    if (mb <= 0 || !loom_isolate_memory_limit_supported())
        return;
    struct rlimit rl;
    rl.rlim_cur = rl.rlim_max = (rlim_t)mb << 20;
    setrlimit(RLIMIT_AS, &rl);
}

/* ---- the child's process group and the parent's signals ----------------- */

/* The child runs in a process group of its own, so the parent decides what
 * reaches it: while a child runs, the parent handles SIGINT, SIGTERM and
 * SIGHUP (unless they are ignored) with fwd_handler, which passes the first
 * SIGINT on to the child's group when the caller handles SIGINT itself, and
 * otherwise kills and reaps the whole group before the caller's handler (or
 * the default action) runs. One isolated run at a time per process. */
static const int fwd_signals[3] = {SIGINT, SIGTERM, SIGHUP};
static struct sigaction fwd_saved[3];       /* the caller's dispositions */
static int fwd_installed[3];
static volatile sig_atomic_t fwd_pid;       /* the running child, 0 none */
static volatile sig_atomic_t fwd_sigints;   /* SIGINTs seen during the run */
static volatile sig_atomic_t fwd_reaped;    /* the handler killed and reaped it */
static volatile sig_atomic_t fwd_status;    /* then its wait status */

/* The three signals in a set. */
static void fwd_set(sigset_t *set)
{
    sigemptyset(set);
    for (int k = 0; k < 3; k++)
        sigaddset(set, fwd_signals[k]);
}

/* 1 when a disposition is a function of the caller's. */
static int is_handler(const struct sigaction *sa)
{
    if (sa->sa_flags & SA_SIGINFO)
        return sa->sa_sigaction != NULL;
    return sa->sa_handler != SIG_DFL && sa->sa_handler != SIG_IGN;
}

/* Kills the child's process group and reaps the child (async-signal-safe). */
static void fwd_kill_group(void)
{
    pid_t pid = (pid_t)fwd_pid;
    if (pid <= 0 || fwd_reaped)
        return;
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    fwd_status = st;
    fwd_reaped = 1;
}

static void fwd_handler(int sig)
{
    int saved_errno = errno;
    int k = sig == SIGINT ? 0 : sig == SIGTERM ? 1 : 2;
    const struct sigaction *old = &fwd_saved[k];
    if (sig == SIGINT && is_handler(old) && ++fwd_sigints == 1) {
        /* Ctrl-C: the child hears it as if it shared the terminal's group */
        if (fwd_pid > 0)
            kill(-(pid_t)fwd_pid, SIGINT);
    } else {
        fwd_kill_group(); /* nothing the child started survives the parent */
    }
    if (!is_handler(old)) { /* the default action: terminate */
        sigaction(sig, old, NULL);
        raise(sig); /* delivered when this handler returns */
    } else if (old->sa_flags & SA_SIGINFO) {
        siginfo_t info;
        memset(&info, 0, sizeof info);
        info.si_signo = sig;
        info.si_code = SI_USER;
        old->sa_sigaction(sig, &info, NULL);
    } else {
        old->sa_handler(sig);
    }
    errno = saved_errno;
}

/* Parent, signals blocked: starts forwarding to child `pid`. */
static void fwd_install(pid_t pid)
{
    fwd_pid = pid;
    fwd_sigints = 0;
    fwd_reaped = 0;
    fwd_status = 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fwd_handler;
    fwd_set(&sa.sa_mask);
    for (int k = 0; k < 3; k++) {
        fwd_installed[k] = 0;
        if (sigaction(fwd_signals[k], NULL, &fwd_saved[k]) != 0 ||
            (!(fwd_saved[k].sa_flags & SA_SIGINFO) && fwd_saved[k].sa_handler == SIG_IGN))
            continue; /* an ignored signal stays ignored (nohup) */
        fwd_installed[k] = sigaction(fwd_signals[k], &sa, NULL) == 0;
    }
}

/* Parent: gives the caller its dispositions back. */
static void fwd_remove(void)
{
    sigset_t set, old;
    fwd_set(&set);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    for (int k = 0; k < 3; k++)
        if (fwd_installed[k])
            sigaction(fwd_signals[k], &fwd_saved[k], NULL);
    fwd_pid = 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* ---- the child --------------------------------------------------------- */

static pid_t child_self; /* the child's pid, in the child */

/* exit() called in the child (a plugin, or a library it uses): end at
 * once with that status, as an early exit the parent reports, without the
 * parent's exit handlers. A process a plugin forked leaves the same way,
 * without flushing the buffers it inherited. */
static void child_on_exit(int status, void *arg)
{
    (void)arg;
    if (getpid() == child_self)
        fflush(NULL); /* what the child printed so far */
    _exit(status);
}

/* SIGINT in the child (only the parent sends it: the first Ctrl-C): the
 * running search stops and keeps its best plan; the body may install its
 * own handler. */
static void child_on_sigint(int sig)
{
    (void)sig;
    loom_interrupt();
}

/* First steps of the child, signals still blocked: its own process group,
 * death with the parent, default dispositions for the parent's handlers. */
static void child_setup(pid_t parent, const sigset_t *mask)
{
    child_self = getpid();
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) /* the parent died before the line above */
        _exit(127);
    for (int k = 1; k < 3; k++) {
        struct sigaction sa;
        if (sigaction(fwd_signals[k], NULL, &sa) == 0 && is_handler(&sa))
            signal(fwd_signals[k], SIG_DFL);
    }
    signal(SIGINT, child_on_sigint);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGTTOU, SIG_IGN); /* a background group may still write to the terminal */
    signal(SIGTTIN, SIG_IGN);
    on_exit(child_on_exit, NULL);
    pthread_sigmask(SIG_SETMASK, mask, NULL);
}

/* Child process: runs the body, flushes what it printed, sends END and
 * leaves without running the parent's exit handlers. */
static _Noreturn void child_main(int fd, volatile int32_t *shared, const loom_isolate_opts *opts,
                       loom_isolate_body body, void *user)
{
    if (!opts->keep_stdout)
        dup2(STDERR_FILENO, STDOUT_FILENO); /* plugin chatter must not reach stdout */
    apply_memory_limit(opts->memory_limit_mb);
    shared[0] = shared[1] = -1;
    loom_channel ch = {fd, NULL, shared, shared + 1};
    int status = body(user, &ch);
    fflush(NULL); /* everything is out before END: the parent stops at END */
    rec r = new_rec(REC_END, 0);
    r.status = status;
    send_rec(&ch, &r);
    _exit(0);
}

/* ---- the parent ------------------------------------------------------------ */

/* The parent's view of its child. */
typedef struct child {
    pid_t pid;
    int reaped; /* waited for; status holds its wait status */
    int status;
} child;

/* 1 when the child has terminated; it stays unreaped (a zombie), so its
 * pid, which names its process group, cannot be reused yet. */
static int child_ended(const child *k)
{
    if (k->reaped || fwd_reaped)
        return 1;
    siginfo_t info;
    memset(&info, 0, sizeof info);
    if (waitid(P_PID, (id_t)k->pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0)
        return errno == ECHILD;
    return info.si_pid == k->pid;
}

/* Kills the child's process group - the child and whatever it forked that
 * stayed in the group - and reaps the child (its wait status: k->status;
 * the real one when it had already ended). Every way out of the parent
 * loop goes through here. */
static void stop_child(child *k)
{
    sigset_t set, old;
    fwd_set(&set);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    if (!k->reaped) {
        if (fwd_reaped) {
            k->status = fwd_status;
        } else {
            kill(-k->pid, SIGKILL);
            kill(k->pid, SIGKILL);
            int st = 0;
            while (waitpid(k->pid, &st, 0) < 0 && errno == EINTR)
                ;
            k->status = st;
        }
        k->reaped = 1;
        fwd_pid = 0;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Records a failure the parent detected (timeout, garbage, crash) unless
 * the child reported one first; returns it, or NULL when one was already
 * recorded. */
static loom_failure *parent_failure(collector *c, int kind, int32_t step)
{
    loom_failure *f = &c->out->failure;
    if (f->kind != LOOM_FAIL_NONE)
        return NULL;
    memset(f, 0, sizeof *f);
    f->kind = kind;
    f->status = LOOM_EPLUGIN;
    stamp_failure(c, f);
    stamp_step(c, f, step);
    return f;
}

/* Milliseconds the current phase may still take; -1 none. */
static int poll_budget(const collector *c, double deadline_ms)
{
    double limit = c->in_iteration ? c->iter_limit_ms : c->opts->timeout_ms;
    if (!(limit > 0))
        return -1;
    double left = deadline_ms - loom_now_ms();
    if (left <= 0)
        return 0;
    return left > 1e9 ? 1000000000 : (int)ceil(left);
}

/* Interval of the progress ticks and of the checks whether the child is
 * still alive while the parent waits. */
#define TICK_MS 250
/* Records read at most once the child has ended (a process it forked may
 * still hold the pipe and write to it). */
#define DRAIN_RECORDS 64

/* Partial record being read from the pipe. */
typedef struct reader {
    union {
        rec r;
        char bytes[sizeof(rec)];
    } buf;
    size_t have;
    int eof;
} reader;

/* Reads what the pipe holds (one read); returns 1 when a whole record is
 * in r->buf, 0 otherwise, -1 on a read error. */
static int read_some(reader *r, int fd)
{
    ssize_t got = read(fd, r->buf.bytes + r->have, sizeof r->buf - r->have);
    if (got < 0)
        return errno == EINTR || errno == EAGAIN ? 0 : -1;
    if (got == 0) {
        r->eof = 1;
        return 0;
    }
    r->have += (size_t)got;
    if (r->have < sizeof r->buf)
        return 0;
    r->have = 0;
    return 1;
}

/* Applies a whole record; on garbage stops the child and records the
 * failure. Returns 1 to go on, 0 when the run is over (END or garbage). */
static int take_record(collector *c, reader *rd, child *k, volatile int32_t *shared)
{
    char why[160];
    if (handle(c, &rd->buf.r, why, sizeof why) != 0) {
        int32_t step = *shared;
        stop_child(k);
        loom_failure *f = parent_failure(c, LOOM_FAIL_GARBAGE, step);
        if (f)
            snprintf(f->message, sizeof f->message, "garbage on the result pipe: %s", why);
        return 0;
    }
    if (c->ended) { /* all there is; nothing the child or its offspring does
                       from now on counts */
        stop_child(k);
        return 0;
    }
    return 1;
}

/* The child ended without END: reads what it wrote before, then turns its
 * end into a failure (truncated record, signal or early exit). */
static void child_gone(collector *c, reader *rd, child *k, int fd, volatile int32_t *shared)
{
    for (int n = 0; n < DRAIN_RECORDS && !rd->eof;) {
        struct pollfd pfd = {fd, POLLIN, 0};
        if (poll(&pfd, 1, 0) <= 0)
            break;
        int got = read_some(rd, fd);
        if (got < 0)
            break;
        if (got == 1) {
            n++;
            if (!take_record(c, rd, k, shared))
                return;
        }
    }
    int32_t step = *shared;
    stop_child(k); /* the child is dead: its real status; the rest of its group goes */
    int st = k->status;
    loom_failure *f = NULL;
    if (rd->have > 0) {
        if ((f = parent_failure(c, LOOM_FAIL_GARBAGE, step)))
            snprintf(f->message, sizeof f->message,
                     "garbage on the result pipe: a truncated record (%zu of %zu bytes)", rd->have,
                     sizeof(rec));
    } else if (WIFSIGNALED(st)) {
        if ((f = parent_failure(c, LOOM_FAIL_SIGNAL, step)))
            f->signal = WTERMSIG(st);
    } else if ((f = parent_failure(c, LOOM_FAIL_EXIT, step))) {
        f->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    }
}

/* Parent side: reads records until END, a failure, the child's end or the
 * deadline. The child's process group is killed and the child reaped on
 * every way out. */
static int parent_loop(collector *c, pid_t pid, int fd, volatile int32_t *shared, loom_error *err)
{
    reader rd;
    memset(&rd, 0, sizeof rd);
    child k = {pid, 0, 0};
    double phase_start = loom_now_ms();
    for (;;) {
        double limit = c->in_iteration ? c->iter_limit_ms : c->opts->timeout_ms;
        int wait_ms = poll_budget(c, phase_start + limit);
        int capped = wait_ms < 0 || wait_ms > TICK_MS;
        struct pollfd pfd = {rd.eof ? -1 : fd, POLLIN, 0};
        int n = wait_ms == 0 ? 0 : poll(&pfd, 1, capped ? (rd.eof ? 10 : TICK_MS) : wait_ms);
        if (n < 0 && errno == EINTR) {
            if (loom_interrupted) {
                stop_child(&k);
                return loom_set_error(err, LOOM_EINTERRUPTED, "interrupted");
            }
            continue;
        }
        if (n < 0) {
            stop_child(&k);
            return loom_set_error(err, LOOM_EIO, "poll on the result pipe: %s", strerror(errno));
        }
        if (n > 0 && (pfd.revents & (POLLIN | POLLHUP | POLLERR))) {
            int got = read_some(&rd, fd);
            if (got < 0) {
                stop_child(&k);
                return loom_set_error(err, LOOM_EIO, "reading the result pipe: %s",
                                      strerror(errno));
            }
            if (got == 1) {
                if (!take_record(c, &rd, &k, shared))
                    return LOOM_OK;
                phase_start = loom_now_ms();
            }
            if (!rd.eof)
                continue;
        }
        if (child_ended(&k)) {
            child_gone(c, &rd, &k, fd, shared);
            return LOOM_OK;
        }
        if (n == 0 && wait_ms >= 0 && poll_budget(c, phase_start + limit) == 0) {
            int32_t step = *shared;
            stop_child(&k);
            loom_failure *f = parent_failure(c, LOOM_FAIL_TIMEOUT, step);
            if (f)
                f->limit_ms = limit;
            return LOOM_OK;
        }
        if (n == 0 && !rd.eof && capped && c->on_iter)
            c->on_iter(c->iter_user, c->current, c->out->n_iterations, 2);
    }
}

/* Forks the child and collects its records. */
static int run_forked(collector *c, loom_isolate_body body, void *user, loom_error *err)
{
    volatile int32_t *shared = mmap(NULL, 2 * sizeof(int32_t), PROT_READ | PROT_WRITE,
                                    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED)
        return loom_set_error(err, LOOM_ENOMEM, "isolation: mmap failed: %s", strerror(errno));
    shared[0] = shared[1] = -1; /* running step, last step that ran */
    c->last_marker = shared + 1;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        munmap((void *)shared, 2 * sizeof(int32_t));
        return loom_set_error(err, LOOM_EIO, "isolation: pipe failed: %s", strerror(errno));
    }
    fflush(NULL);
    sigset_t set, old;
    fwd_set(&set);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        close(fds[0]);
        close(fds[1]);
        munmap((void *)shared, 2 * sizeof(int32_t));
        return loom_set_error(err, LOOM_EIO, "isolation: fork failed: %s", strerror(e));
    }
    if (pid == 0) {
        close(fds[0]);
        child_setup(parent, &old);
        child_main(fds[1], shared, c->opts, body, user);
    }
    setpgid(pid, pid); /* the child does the same; whichever runs first wins */
    fwd_install(pid);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(fds[1]);
    int rc = parent_loop(c, pid, fds[0], shared, err);
    fwd_remove();
    close(fds[0]);
    munmap((void *)shared, 2 * sizeof(int32_t));
    return rc;
}

int loom_isolate_call(const loom_isolate_opts *opts, loom_isolate_body body, void *user,
                      loom_iter_fn on_iter, void *iter_user, loom_run_output *out,
                      loom_error *err)
{
    memset(out, 0, sizeof *out);
    out->failure.iteration = -1;
    out->failure.step = -1;
    collector c;
    memset(&c, 0, sizeof c);
    c.out = out;
    c.opts = opts;
    c.on_iter = on_iter;
    c.iter_user = iter_user;
    c.current = -1;
    int rc;
    if (opts->isolate) {
        rc = run_forked(&c, body, user, err);
    } else {
        volatile int32_t step = -1, last = -1;
        loom_channel ch = {-1, &c, &step, &last};
        out->body_status = body(user, &ch);
        c.ended = 1;
        rc = LOOM_OK;
    }
    free(c.step_ids);
    if (rc == LOOM_OK && c.no_memory)
        rc = loom_set_error(err, LOOM_ENOMEM, "isolation: out of memory collecting results");
    return rc;
}

void loom_run_output_clear(loom_run_output *out)
{
    if (!out)
        return;
    free(out->results);
    memset(out, 0, sizeof *out);
}

/* ---- the planning body --------------------------------------------------- */

typedef struct plan_job {
    const loom_session_args *args;
    const loom_isolate_opts *opts;
    loom_channel *ch;
} plan_job;

double loom_isolate_search_budget_ms(const loom_pipeline *pl)
{
    if (pl->budget_ms > 0)
        return pl->budget_ms;
    if (pl->ranker < 0)
        return 0;
    const loom_step *st = &pl->steps[pl->ranker];
    for (int i = 0; i < st->n_params; i++) {
        const loom_param_value *v = &st->params[i];
        if (v->name && !strcmp(v->name, "budget_ms") &&
            (v->type == LOOM_PARAM_INT || v->type == LOOM_PARAM_DOUBLE))
            return v->d > 0 ? v->d : 0;
    }
    return 0;
}

double loom_isolate_iteration_limit(const loom_isolate_opts *opts, double budget_ms)
{
    if (!(budget_ms > 0))
        return opts->timeout_ms;
    double grace = budget_ms > LOOM_ISOLATE_GRACE_MS ? budget_ms : LOOM_ISOLATE_GRACE_MS;
    double limit = budget_ms + grace;
    if (opts->timeout_given && opts->timeout_ms > 0 && opts->timeout_ms < limit)
        return opts->timeout_ms;
    return limit;
}

/* Copies the figures of a finished plan into a result record. */
static void fill_result(const loom_plan *plan, int32_t k, loom_iter_result *r)
{
    memset(r, 0, sizeof *r);
    const loom_metrics *m = &plan->metrics;
    r->iteration = k;
    r->ranks = plan->graph ? plan->graph->n_ranks : 0;
    r->cap_violations = m->cap_violations;
    r->makespan_ms = m->makespan_ms;
    r->bubble_ratio = m->bubble_ratio;
    r->mfu = m->mfu;
    r->plan_time_ms = plan->plan_time_ms;
    r->peak_bytes = m->max_peak_bytes;
    r->evaluations = plan->evaluations;
}

/* Announces a resolved pipeline step on the job's channel, and to the
 * caller's on_step. */
static void announce_step(void *user, int32_t step, const char *plugin_id)
{
    plan_job *job = user;
    loom_channel_step(job->ch, step, plugin_id);
    if (job->args->on_step)
        job->args->on_step(job->args->on_step_user, step, plugin_id);
}

/* Opens the session, plans every iteration, closes it. */
static int plan_body(void *user, loom_channel *ch)
{
    plan_job *job = user;
    loom_session s;
    loom_error err = {0};
    loom_session_args args = *job->args;
    job->ch = ch;
    args.step_marker = loom_channel_step_marker(ch); /* the parent reads it */
    args.last_step_marker = loom_channel_last_step_marker(ch);
    if (loom_channel_fd(ch) < 0 && job->args->step_marker)
        args.step_marker = job->args->step_marker; /* in-process: the caller's */
    args.on_step = announce_step; /* before any plugin code runs */
    args.on_step_user = job;
    int rc = loom_session_open(&s, &args, &err);
    if (rc != LOOM_OK) {
        loom_channel_fail(ch, -1, rc, err.message);
        loom_session_close(&s);
        return rc;
    }
    loom_channel_info(ch, s.n_iterations, s.manifest_name);
    double limit = loom_isolate_iteration_limit(job->opts, loom_isolate_search_budget_ms(s.pl));
    for (int32_t k = 0; k < s.n_iterations; k++) {
        loom_plan plan;
        loom_channel_begin(ch, k, limit);
        rc = loom_session_plan(&s, k, &plan, &err);
        if (rc != LOOM_OK) {
            loom_channel_fail(ch, k, rc, err.message);
            break;
        }
        loom_iter_result r;
        fill_result(&plan, k, &r);
        loom_plan_clear(&plan);
        loom_channel_result(ch, &r);
        if (loom_interrupted && loom_channel_fd(ch) < 0) {
            loom_channel_fail(ch, k, LOOM_EINTERRUPTED, "interrupted");
            break;
        }
    }
    loom_session_close(&s);
    return rc;
}

int loom_isolate_plan(const loom_session_args *args, const loom_isolate_opts *opts,
                      loom_iter_fn on_iter, void *iter_user, loom_run_output *out,
                      loom_error *err)
{
    plan_job job = {args, opts, NULL};
    return loom_isolate_call(opts, plan_body, &job, on_iter, iter_user, out, err);
}

/* ---- descriptions ---------------------------------------------------------- */

const char *loom_fail_kind_name(int kind)
{
    static const char *const names[] = {"none",    "status",  "signal", "timeout",
                                        "memory",  "garbage", "exit"};
    if (kind < 0 || kind > LOOM_FAIL_EXIT)
        return "unknown";
    return names[kind];
}

const char *loom_signal_name(int sig, char *buf, size_t size)
{
    static const struct {
        int sig;
        const char *name;
    } names[] = {{SIGSEGV, "SIGSEGV"}, {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},
                 {SIGFPE, "SIGFPE"},   {SIGILL, "SIGILL"},   {SIGKILL, "SIGKILL"},
                 {SIGTERM, "SIGTERM"}, {SIGINT, "SIGINT"},   {SIGPIPE, "SIGPIPE"},
                 {SIGTRAP, "SIGTRAP"}, {SIGSYS, "SIGSYS"},   {SIGXCPU, "SIGXCPU"},
                 {SIGXFSZ, "SIGXFSZ"}, {SIGHUP, "SIGHUP"},   {SIGQUIT, "SIGQUIT"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].sig == sig)
            return names[i].name;
    snprintf(buf, size, "signal %d", sig);
    return buf;
}

int loom_failure_status(const loom_failure *f)
{
    if (f->kind == LOOM_FAIL_NONE)
        return LOOM_OK;
    if (f->kind == LOOM_FAIL_STATUS)
        return f->status;
    return LOOM_EPLUGIN;
}

/* "at iteration 2", "after iteration 2" or "while opening the session". */
static void describe_when(const loom_failure *f, char *buf, size_t size)
{
    if (f->phase == LOOM_PHASE_OPEN || f->iteration < 0)
        snprintf(buf, size, "while opening the session");
    else if (f->phase == LOOM_PHASE_AFTER)
        snprintf(buf, size, "after iteration %d", f->iteration);
    else
        snprintf(buf, size, "at iteration %d", f->iteration);
}

/* After a crash, hang or broken channel in core code: names the plugin
 * that ran last as the likely cause, and why. */
static void blame_last_plugin(const loom_failure *f, char *buf, size_t size)
{
    int core_died = f->kind == LOOM_FAIL_SIGNAL || f->kind == LOOM_FAIL_TIMEOUT ||
                    f->kind == LOOM_FAIL_GARBAGE || f->kind == LOOM_FAIL_EXIT;
    size_t n = strlen(buf);
    if (!core_died || f->plugin_id[0] || !f->last_plugin_id[0] || n + 1 >= size)
        return;
    snprintf(buf + n, size - n, "; the likely cause is plugin %s (pipeline[%d]), the last "
             "whose call ran: plugin code shares the planning process and can corrupt its "
             "memory or close descriptors (such as the result pipe) that core code uses later",
             f->last_plugin_id, f->last_step);
}

void loom_failure_describe(const loom_failure *f, char *buf, size_t size)
{
    char who[192], when[64], sig[32];
    if (f->plugin_id[0])
        snprintf(who, sizeof who, "plugin %s (pipeline[%d])", f->plugin_id, f->step);
    else
        snprintf(who, sizeof who, "the core (no plugin running)");
    describe_when(f, when, sizeof when);
    switch (f->kind) {
    case LOOM_FAIL_NONE:
        snprintf(buf, size, "no failure");
        break;
    case LOOM_FAIL_STATUS:
        snprintf(buf, size, "%s %s: %s", loom_status_name(f->status), when, f->message);
        break;
    case LOOM_FAIL_SIGNAL:
        snprintf(buf, size, "%s was killed by signal %d (%s) %s", who, f->signal,
                 loom_signal_name(f->signal, sig, sizeof sig), when);
        break;
    case LOOM_FAIL_TIMEOUT:
        snprintf(buf, size, "%s exceeded the time limit of %.0f ms %s (timeout)", who,
                 f->limit_ms, when);
        break;
    case LOOM_FAIL_MEMORY:
        snprintf(buf, size, "out of memory under the %lld MiB address-space limit %s: %s",
                 (long long)f->limit_mb, when, f->message);
        break;
    case LOOM_FAIL_GARBAGE:
        snprintf(buf, size, "%s: %s %s", who, f->message, when);
        break;
    case LOOM_FAIL_EXIT:
        snprintf(buf, size, "%s: the planning process exited with status %d before finishing %s",
                 who, f->exit_code, when);
        break;
    default:
        snprintf(buf, size, "unknown failure");
        break;
    }
    blame_last_plugin(f, buf, size);
}
