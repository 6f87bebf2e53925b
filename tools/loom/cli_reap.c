/* cli_reap.c - nothing Loom started outlives it: `loom` makes itself a
 * child subreaper (PR_SET_CHILD_SUBREAPER) before any plugin code runs, so
 * a process a plugin forks - in-process, or from an isolated child, even
 * one that called setsid() to leave the child's process group - comes
 * back to Loom when its parent dies instead of going to init; before
 * Loom exits it kills and reaps every child it still has, round after
 * round, until none is left. Only async-signal-safe calls, so signal
 * handlers can use it too.
 *
 * The signal handlers of `loom` are installed here with sigaction(): the
 * build is strict POSIX, where signal() installs a handler for one
 * delivery only (System V semantics), so a second signal would take the
 * default action and kill Loom without reaping. SIGINT, SIGTERM and SIGHUP
 * kill and reap every descendant and then end Loom by the same signal
 * (exit status 128 + the signal's number in a shell), unless a command
 * installs its own handler (plan and ab handle a first SIGINT as a
 * request to stop) or the signal is ignored (nohup). */
#define _GNU_SOURCE /* syscall */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cli.h"

#define REAP_ROUNDS 4096

/* One record of getdents64. */
struct reap_dirent {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

void loom_cli_reap_begin(void)
{
    (void)prctl(PR_SET_CHILD_SUBREAPER, 1L, 0L, 0L, 0L);
}

/* The number in decimal string s, or -1. */
static long parse_pid(const char *s)
{
    long v = 0;
    if (!*s)
        return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > 100000000L)
            return -1;
        v = v * 10 + (*s - '0');
    }
    return v;
}

/* The parent of process `pid` from /proc/<pid>/stat (field 4, after the
 * last ')' of the command name), or -1. */
static long parent_of(const char *pid)
{
    char path[64] = "/proc/", buf[512];
    size_t n = 6;
    for (const char *p = pid; *p && n < 40; p++)
        path[n++] = *p;
    const char *tail = "/stat";
    while (*tail)
        path[n++] = *tail++;
    path[n] = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t len = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (len <= 0)
        return -1;
    buf[len] = 0;
    char *close_paren = NULL;
    for (char *p = buf; *p; p++)
        if (*p == ')')
            close_paren = p;
    if (!close_paren || close_paren[1] != ' ' || !close_paren[2] || close_paren[3] != ' ')
        return -1;
    long v = 0;
    for (char *p = close_paren + 4; *p >= '0' && *p <= '9'; p++)
        v = v * 10 + (*p - '0');
    return v;
}

/* Sends SIGKILL to every child of this process (from /proc); returns how
 * many it found, or -1 when /proc cannot be read. */
static int kill_children(pid_t self)
{
    int fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    _Alignas(8) char buf[4096];
    int found = 0;
    for (;;) {
        long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
        if (n <= 0)
            break;
        for (long off = 0; off < n;) {
            const struct reap_dirent *e = (const void *)(buf + off);
            off += e->d_reclen;
            long pid = parse_pid(e->d_name);
            if (pid > 0 && pid != (long)self && parent_of(e->d_name) == (long)self) {
                kill((pid_t)pid, SIGKILL);
                found++;
            }
        }
    }
    close(fd);
    return found;
}

int loom_cli_reap_all(void)
{
    pid_t self = getpid();
    int reaped = 0;
    for (int round = 0; round < REAP_ROUNDS; round++) {
        int found = kill_children(self);
        if (found == 0)
            break;
        /* a killed child's own children come back to us before it can be
         * reaped: the next round finds them */
        pid_t p = waitpid(-1, NULL, found > 0 ? 0 : WNOHANG);
        if (p > 0)
            reaped++;
        else if (p < 0 && errno != EINTR)
            break;
        while ((p = waitpid(-1, NULL, WNOHANG)) > 0)
            reaped++;
    }
    while (waitpid(-1, NULL, WNOHANG) > 0)
        reaped++;
    return reaped;
}

void loom_cli_catch(int sig, void (*fn)(int), struct sigaction *old)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fn;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGINT);
    sigaddset(&sa.sa_mask, SIGTERM);
    sigaddset(&sa.sa_mask, SIGHUP);
    sa.sa_flags = SA_RESTART;
    (void)sigaction(sig, &sa, old);
}

void loom_cli_die_of(int sig)
{
    loom_cli_reap_all();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    (void)sigaction(sig, &sa, NULL);
    /* blocked while a handler runs: delivered, fatally, when it returns;
     * called outside a handler, at once */
    raise(sig);
}

/* The default handler of SIGINT, SIGTERM and SIGHUP. */
static void on_fatal_signal(int sig)
{
    loom_cli_die_of(sig);
}

void loom_cli_signals_begin(void)
{
    static const int fatal[] = {SIGINT, SIGTERM, SIGHUP};
    for (int k = 0; k < 3; k++) {
        struct sigaction sa;
        if (sigaction(fatal[k], NULL, &sa) != 0 ||
            (!(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == SIG_IGN))
            continue; /* an ignored signal stays ignored (nohup) */
        loom_cli_catch(fatal[k], on_fatal_signal, NULL);
    }
}
