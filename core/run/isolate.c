/* isolate.c - runs planning work in a forked child with a wall-clock limit
 * per iteration and an address-space limit, collecting fixed-size,
 * checksummed records from a pipe (isolate_channel.c); or in-process
 * without limits. The child's process group and the signals around it are
 * isolate_signals.c's. */
#define _GNU_SOURCE /* pipe2 */
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
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <loom/sys/util.h>
#include "ctx.h" /* loom_interrupted */
#include "isolate_priv.h"

/* Applies the RLIMIT_AS limit in a child. */
static void apply_memory_limit(int64_t mb)
{
    if (mb <= 0 || !loom_isolate_memory_limit_supported())
        return;
    struct rlimit rl;
    rl.rlim_cur = rl.rlim_max = (rlim_t)mb << 20;
    setrlimit(RLIMIT_AS, &rl);
}

/* ---- the child --------------------------------------------------------- */

/* Child process: runs the body, flushes what it printed, sends END and
 * leaves without running the parent's exit handlers. */
static _Noreturn void child_main(int fd, volatile int32_t *shared,
                                 const loom_isolate_opts *opts, loom_isolate_body body,
                                 void *user)
{
    if (!opts->keep_stdout)
        dup2(STDERR_FILENO, STDOUT_FILENO); /* plugin chatter must not reach stdout */
    apply_memory_limit(opts->memory_limit_mb);
    shared[0] = shared[1] = -1;
    loom_channel ch = {fd, NULL, shared, shared + 1};
    int status = body(user, &ch);
    fflush(NULL); /* everything is out before END: the parent stops at END */
    rec r = loom_iso_new_rec(REC_END, 0);
    r.status = status;
    loom_iso_send(&ch, &r);
    _exit(0);
}

/* ---- the parent ------------------------------------------------------------ */

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
    loom_iso_stamp_failure(c, f);
    loom_iso_stamp_step(c, f, step);
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
    if (loom_iso_handle(c, &rd->buf.r, why, sizeof why) != 0) {
        int32_t step = *shared;
        loom_iso_stop_child(k);
        loom_failure *f = parent_failure(c, LOOM_FAIL_GARBAGE, step);
        if (f)
            snprintf(f->message, sizeof f->message, "garbage on the result pipe: %s", why);
        return 0;
    }
    if (c->ended) { /* all there is; nothing the child or its offspring does
                       from now on counts */
        loom_iso_stop_child(k);
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
    loom_iso_stop_child(k); /* the child is dead: its real status; the rest of its group goes */
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
                loom_iso_stop_child(&k);
                return loom_set_error(err, LOOM_EINTERRUPTED, "interrupted");
            }
            continue;
        }
        if (n < 0) {
            loom_iso_stop_child(&k);
            return loom_set_error(err, LOOM_EIO, "poll on the result pipe: %s", strerror(errno));
        }
        if (n > 0 && (pfd.revents & (POLLIN | POLLHUP | POLLERR))) {
            int got = read_some(&rd, fd);
            if (got < 0) {
                loom_iso_stop_child(&k);
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
        if (loom_iso_child_ended(&k)) {
            child_gone(c, &rd, &k, fd, shared);
            return LOOM_OK;
        }
        if (n == 0 && wait_ms >= 0 && poll_budget(c, phase_start + limit) == 0) {
            int32_t step = *shared;
            loom_iso_stop_child(&k);
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
    loom_iso_fwd_set(&set);
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
        loom_iso_child_setup(parent, &old);
        child_main(fds[1], shared, c->opts, body, user);
    }
    setpgid(pid, pid); /* the child does the same; whichever runs first wins */
    loom_iso_fwd_install(pid);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(fds[1]);
    int rc = parent_loop(c, pid, fds[0], shared, err);
    loom_iso_fwd_remove();
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
