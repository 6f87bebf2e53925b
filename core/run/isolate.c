/* isolate.c - runs planning work in a forked child with a wall-clock limit
 * per iteration and an address-space limit, collecting fixed-size,
 * checksummed records from a pipe; or in-process without limits. */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <loom/sys/isolate.h>
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
};

volatile int32_t *loom_channel_step_marker(loom_channel *ch)
{
    return ch ? ch->step_marker : NULL;
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

/* Names the plugin of `step` in a failure (or the core for -1). */
static void stamp_step(collector *c, loom_failure *f, int32_t step)
{
    f->step = step;
    f->plugin_id[0] = 0;
    if (step >= 0 && step < c->n_steps)
        snprintf(f->plugin_id, sizeof f->plugin_id, "%s", c->step_ids[step]);
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

/* Child process: runs the body, sends END and leaves without running the
 * parent's exit handlers. */
static _Noreturn void child_main(int fd, volatile int32_t *shared, const loom_isolate_opts *opts,
                       loom_isolate_body body, void *user)
{
    signal(SIGINT, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    if (!opts->keep_stdout)
        dup2(STDERR_FILENO, STDOUT_FILENO); /* plugin chatter must not reach stdout */
    apply_memory_limit(opts->memory_limit_mb);
    *shared = -1;
    loom_channel ch = {fd, NULL, shared};
    int status = body(user, &ch);
    rec r = new_rec(REC_END, 0);
    r.status = status;
    send_rec(&ch, &r);
    fflush(stdout);
    fflush(stderr);
    _exit(0);
}

/* Stops the child for good and reaps it. */
static void kill_child(pid_t pid)
{
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
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

/* Interval of the progress ticks while the parent waits. */
#define TICK_MS 250

/* Parent side: reads records until the child ends, fails or times out. */
static int parent_loop(collector *c, pid_t pid, int fd, volatile int32_t *shared, loom_error *err)
{
    union {
        rec r;
        char bytes[sizeof(rec)];
    } buf;
    size_t have = 0;
    double phase_start = loom_now_ms();
    for (;;) {
        double limit = c->in_iteration ? c->iter_limit_ms : c->opts->timeout_ms;
        int wait_ms = poll_budget(c, phase_start + limit);
        int tick = c->on_iter && (wait_ms < 0 || wait_ms > TICK_MS);
        struct pollfd pfd = {fd, POLLIN, 0};
        int n = wait_ms == 0 ? 0 : poll(&pfd, 1, tick ? TICK_MS : wait_ms);
        if (n == 0 && tick) {
            c->on_iter(c->iter_user, c->current, c->out->n_iterations, 2);
            continue;
        }
        if (n < 0 && errno == EINTR) {
            if (loom_interrupted) {
                kill_child(pid);
                return loom_set_error(err, LOOM_EINTERRUPTED, "interrupted");
            }
            continue;
        }
        if (n < 0) {
            kill_child(pid);
            return loom_set_error(err, LOOM_EIO, "poll on the result pipe: %s", strerror(errno));
        }
        if (n == 0) {
            int32_t step = *shared;
            kill_child(pid);
            loom_failure *f = parent_failure(c, LOOM_FAIL_TIMEOUT, step);
            if (f)
                f->limit_ms = limit;
            return LOOM_OK;
        }
        ssize_t got = read(fd, buf.bytes + have, sizeof buf - have);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            kill_child(pid);
            return loom_set_error(err, LOOM_EIO, "reading the result pipe: %s", strerror(errno));
        }
        if (got == 0)
            break;
        have += (size_t)got;
        if (have < sizeof buf)
            continue;
        have = 0;
        char why[160];
        if (handle(c, &buf.r, why, sizeof why) != 0) {
            int32_t step = *shared;
            kill_child(pid);
            loom_failure *f = parent_failure(c, LOOM_FAIL_GARBAGE, step);
            if (f)
                snprintf(f->message, sizeof f->message, "garbage on the result pipe: %s", why);
            return LOOM_OK;
        }
        phase_start = loom_now_ms();
    }
    int32_t step = *shared;
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    loom_failure *f = NULL;
    if (have > 0) {
        if ((f = parent_failure(c, LOOM_FAIL_GARBAGE, step)))
            snprintf(f->message, sizeof f->message,
                     "garbage on the result pipe: a truncated record (%zu of %zu bytes)", have,
                     sizeof(rec));
    } else if (WIFSIGNALED(st)) {
        if ((f = parent_failure(c, LOOM_FAIL_SIGNAL, step)))
            f->signal = WTERMSIG(st);
    } else if (!c->ended) {
        if ((f = parent_failure(c, LOOM_FAIL_EXIT, step)))
            f->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    }
    return LOOM_OK;
}

/* Forks the child and collects its records. */
static int run_forked(collector *c, loom_isolate_body body, void *user, loom_error *err)
{
    volatile int32_t *shared = mmap(NULL, sizeof(int32_t), PROT_READ | PROT_WRITE,
                                    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED)
        return loom_set_error(err, LOOM_ENOMEM, "isolation: mmap failed: %s", strerror(errno));
    *shared = -1;
    int fds[2];
    if (pipe(fds) != 0) {
        munmap((void *)shared, sizeof(int32_t));
        return loom_set_error(err, LOOM_EIO, "isolation: pipe failed: %s", strerror(errno));
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        munmap((void *)shared, sizeof(int32_t));
        return loom_set_error(err, LOOM_EIO, "isolation: fork failed: %s", strerror(errno));
    }
    if (pid == 0) {
        close(fds[0]);
        child_main(fds[1], shared, c->opts, body, user);
    }
    close(fds[1]);
    int rc = parent_loop(c, pid, fds[0], shared, err);
    close(fds[0]);
    munmap((void *)shared, sizeof(int32_t));
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
        volatile int32_t step = -1;
        loom_channel ch = {-1, &c, &step};
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

/* Opens the session, plans every iteration, closes it. */
static int plan_body(void *user, loom_channel *ch)
{
    const plan_job *job = user;
    loom_session s;
    loom_error err = {0};
    loom_session_args args = *job->args;
    args.step_marker = loom_channel_step_marker(ch);
    int rc = loom_session_open(&s, &args, &err);
    if (rc != LOOM_OK) {
        loom_channel_fail(ch, -1, rc, err.message);
        loom_session_close(&s);
        return rc;
    }
    loom_channel_info(ch, s.n_iterations, s.manifest_name);
    for (int i = 0; i < s.pl->n_steps; i++)
        loom_channel_step(ch, i, s.pl->steps[i].ctx.plugin_id);
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
    plan_job job = {args, opts};
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
}
