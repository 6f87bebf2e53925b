/* isolate_signals.c - the child's process group and the signals around
 * it: the parent's forwarding handlers while a child runs, the child's own
 * dispositions, and stopping and reaping the child's group. */
#define _GNU_SOURCE /* on_exit */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include "isolate_priv.h"

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

void loom_iso_fwd_set(sigset_t *set)
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

void loom_iso_fwd_install(pid_t pid)
{
    fwd_pid = pid;
    fwd_sigints = 0;
    fwd_reaped = 0;
    fwd_status = 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fwd_handler;
    loom_iso_fwd_set(&sa.sa_mask);
    for (int k = 0; k < 3; k++) {
        fwd_installed[k] = 0;
        if (sigaction(fwd_signals[k], NULL, &fwd_saved[k]) != 0 ||
            (!(fwd_saved[k].sa_flags & SA_SIGINFO) && fwd_saved[k].sa_handler == SIG_IGN))
            continue; /* an ignored signal stays ignored (nohup) */
        fwd_installed[k] = sigaction(fwd_signals[k], &sa, NULL) == 0;
    }
}

void loom_iso_fwd_remove(void)
{
    sigset_t set, old;
    loom_iso_fwd_set(&set);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    for (int k = 0; k < 3; k++)
        if (fwd_installed[k])
            sigaction(fwd_signals[k], &fwd_saved[k], NULL);
    fwd_pid = 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* ---- the child's own dispositions ---------------------------------------- */

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

void loom_iso_child_setup(pid_t parent, const sigset_t *mask)
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
    struct sigaction on_int; /* stays installed: signal() may reset it after one delivery */
    memset(&on_int, 0, sizeof on_int);
    on_int.sa_handler = child_on_sigint;
    sigemptyset(&on_int.sa_mask);
    on_int.sa_flags = SA_RESTART;
    sigaction(SIGINT, &on_int, NULL);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGTTOU, SIG_IGN); /* a background group may still write to the terminal */
    signal(SIGTTIN, SIG_IGN);
    on_exit(child_on_exit, NULL);
    pthread_sigmask(SIG_SETMASK, mask, NULL);
}

/* ---- ending the child's group ------------------------------------------- */

int loom_iso_child_ended(const child *k)
{
    if (k->reaped || fwd_reaped)
        return 1;
    siginfo_t info;
    memset(&info, 0, sizeof info);
    if (waitid(P_PID, (id_t)k->pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0)
        return errno == ECHILD;
    return info.si_pid == k->pid;
}

void loom_iso_stop_child(child *k)
{
    sigset_t set, old;
    loom_iso_fwd_set(&set);
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
