/* tune_jobs.c - `loom tune --jobs N`: the simulations of the walk, N at a
 * time in forked processes. Plugins need not be thread-safe, so each
 * simulation runs in a child of its own, which writes its result as a
 * shard file's configuration to a pipe and exits. The batched walk here
 * reaches every configuration the one-job walk reaches (it prunes against
 * an older, never better, top), so the walk that follows reads every
 * result it needs and prints exactly what one job prints. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tune.h"

#define MAX_JOBS 64

/* One running child: its pid and the read end of its result pipe. */
typedef struct job {
    pid_t pid;
    int fd;
    int32_t at;
} job;

/* In the child: simulates c and writes it to fd; never returns. */
static void run_child(const loom_tune_search *t, loom_tune_config *c, int fd)
{
    loom_error err = {0};
    if (loom_tune_simulate(t, c, &err) != LOOM_OK)
        _exit(3);
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (!m)
        _exit(3);
    loom_tune_write_config(c, m);
    if (fclose(m) != 0)
        _exit(3);
    for (size_t off = 0; off < len;) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            _exit(3);
        off += (size_t)w;
    }
    _exit(0);
}

/* Starts a child simulating configuration `at`; -1 when it cannot. */
static int start(const loom_tune_search *t, int32_t at, job *j)
{
    int p[2];
    if (pipe(p) != 0)
        return -1;
    fflush(NULL); /* nothing buffered is written twice */
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        return -1;
    }
    if (pid == 0) {
        close(p[0]);
        run_child(t, &t->configs[at], p[1]);
    }
    close(p[1]);
    j->pid = pid;
    j->fd = p[0];
    j->at = at;
    return 0;
}

/* Reads child j's result into its configuration and reaps the child; a
 * failed or malformed one leaves the configuration unsimulated. */
static void finish(loom_tune_search *t, job *j)
{
    char *text = NULL;
    size_t len = 0, cap = 0;
    int ok = 1;
    for (;;) {
        if (len + 65536 + 1 > cap) {
            size_t nc = cap ? cap * 2 : 131072;
            char *g = realloc(text, nc);
            if (!g) {
                ok = 0;
                break;
            }
            text = g;
            cap = nc;
        }
        ssize_t r = read(j->fd, text + len, cap - len - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            ok = 0;
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    close(j->fd);
    int status = 0;
    while (waitpid(j->pid, &status, 0) < 0 && errno == EINTR)
        ;
    ok = ok && text && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    loom_tune_config got, *c = &t->configs[j->at];
    if (ok) {
        text[len] = '\0';
        ok = loom_tune_read_config_text(text, &got, t->n_manifests) == 0 && got.simulated;
        if (ok) {
            loom_tune_result_clear(&c->result);
            c->result = got.result;
            c->simulated = 1;
        } else {
            loom_tune_result_clear(&got.result);
        }
        free(got.static_reason);
    }
    free(text);
}

void loom_tune_prefetch(loom_tune_search *t, int32_t jobs, void (*progress)(void *user),
                        void *user)
{
    if (jobs < 2 || t->n_configs < 2)
        return;
    jobs = jobs > MAX_JOBS ? MAX_JOBS : jobs;
    int32_t n = 0, nbest = 0, k = t->top;
    loom_tune_key *order = loom_tune_bound_order(t, &n);
    double *best = calloc((size_t)k + 1, sizeof *best);
    if (!order || !best) {
        free(order);
        free(best);
        return; /* the walk simulates everything itself */
    }
    job run[MAX_JOBS];
    for (int32_t j = 0; j < n;) {
        if (!t->no_prune && nbest >= k && order[j].bound_ms > best[k - 1])
            break;
        int32_t started = 0;
        for (; started < jobs && j < n; j++)
            if (start(t, order[j].at, &run[started]) == 0)
                started++;
        for (int32_t q = 0; q < started; q++) {
            finish(t, &run[q]);
            const loom_tune_config *c = &t->configs[run[q].at];
            if (c->simulated && c->result.feasible)
                loom_tune_keep_best(best, &nbest, k, c->result.makespan_ms);
            if (progress)
                progress(user);
        }
    }
    free(order);
    free(best);
}

/* In a child: bounds configurations [lo, hi) and writes them to fd, one
 * per line; never returns. */
static void bound_child(loom_tune_search *t, int32_t lo, int32_t hi, int fd)
{
    FILE *out = fdopen(fd, "w");
    if (!out)
        _exit(3);
    for (int32_t i = lo; i < hi; i++) {
        loom_error err = {0};
        if (loom_tune_bound(t, &t->configs[i], &err) != LOOM_OK)
            _exit(3);
        loom_tune_write_config(&t->configs[i], out);
        fputc('\n', out);
    }
    _exit(fclose(out) == 0 ? 0 : 3);
}

/* Reads a bounding child's lines into configurations [lo, hi); 0 when
 * every one arrived. */
static int bound_finish(loom_tune_search *t, int fd, pid_t pid, int32_t lo, int32_t hi)
{
    FILE *in = fdopen(fd, "r");
    char *line = NULL;
    size_t cap = 0;
    int32_t i = lo;
    while (in && i < hi && getline(&line, &cap, in) > 0) {
        loom_tune_config got;
        if (loom_tune_read_config_text(line, &got, t->n_manifests) != 0 ||
            got.index != t->configs[i].index) {
            free(got.static_reason);
            break;
        }
        loom_tune_config *c = &t->configs[i++];
        c->lower_bound_ms = got.lower_bound_ms;
        c->param_rank_bytes = got.param_rank_bytes;
        c->state_rank_bytes = got.state_rank_bytes;
        c->cap_bytes = got.cap_bytes;
        free(c->static_reason);
        c->static_reason = got.static_reason;
        loom_tune_result_clear(&got.result);
    }
    free(line);
    if (in)
        fclose(in);
    else
        close(fd);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return i == hi && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

int32_t loom_tune_bound_jobs(loom_tune_search *t, int32_t jobs, char *bounded)
{
    if (jobs < 2 || t->n_configs < 2 * jobs)
        return 0;
    jobs = jobs > MAX_JOBS ? MAX_JOBS : jobs;
    pid_t pid[MAX_JOBS];
    int fd[MAX_JOBS];
    int32_t lo[MAX_JOBS + 1], started = 0, done = 0;
    for (int32_t q = 0; q <= jobs; q++)
        lo[q] = (int32_t)((int64_t)t->n_configs * q / jobs);
    fflush(NULL);
    for (int32_t q = 0; q < jobs; q++) {
        int p[2];
        if (pipe(p) != 0)
            break;
        pid[q] = fork();
        if (pid[q] < 0) {
            close(p[0]);
            close(p[1]);
            break;
        }
        if (pid[q] == 0) {
            close(p[0]);
            for (int32_t r = 0; r < q; r++)
                close(fd[r]);
            bound_child(t, lo[q], lo[q + 1], p[1]);
        }
        close(p[1]);
        fd[q] = p[0];
        started++;
    }
    for (int32_t q = 0; q < started; q++)
        if (bound_finish(t, fd[q], pid[q], lo[q], lo[q + 1]) == 0) {
            memset(bounded + lo[q], 1, (size_t)(lo[q + 1] - lo[q]));
            done += lo[q + 1] - lo[q];
        }
    return done;
}
