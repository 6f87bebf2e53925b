/* fork_rank.c - fixture ranker for the isolation tests: ranks groups in
 * index order like fifo, but on its fork_on_call-th rank() call in a
 * process forks a child that outlives the call: with mode "sleep" it
 * sleeps, with mode "write" it writes a line to its stdout every 20 ms;
 * either way for at most 60 s. The forked process inherits every open
 * file, the isolation pipe included. The ranker appends "<pid of the
 * forked process> <its process group>\n" to the file the pid_file param
 * names (one line per process that forks: loom tune --jobs runs several).
 * With mode "setsid" the forked process forks a grandchild that calls
 * setsid() (leaving every process group and session Loom knows) and
 * sleeps, appends "<grandchild pid> <its session>\n" to pid_file and exits
 * at once, so the grandchild is orphaned; the ranker waits for it. Mode
 * "setsid-hang" does the same and then hangs in the call for up to 60 s,
 * so a test can signal Loom while the orphan lives. */
#define _DEFAULT_SOURCE
#include <fcntl.h>
#include <sys/wait.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define FAULT_PARAM "fork_on_call"
#define FAULT_WHO "fork-rank"
#define FAULT_ID "fixture.fork-rank"
#define FAULT_CREATE_HOOK read_params
#include "../fault_rank.h"

static char mode[16] = "sleep";
static char pid_file[1024];

/* Keeps the params fault_now needs. */
static void read_params(const loom_host_api *host, loom_ctx *ctx)
{
    const char *m = host->param_string(ctx, "mode");
    const char *p = host->param_string(ctx, "pid_file");
    snprintf(mode, sizeof mode, "%s", m ? m : "sleep");
    snprintf(pid_file, sizeof pid_file, "%s", p ? p : "");
}

/* Sleeps for ms milliseconds. */
static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Writes "<a> <b>\n" to pid_file. */
static void note_pids(long a, long b)
{
    char line[64];
    int n = snprintf(line, sizeof line, "%ld %ld\n", a, b);
    int fd = open(pid_file, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
        if (write(fd, line, (size_t)n) != n)
            n = 0;
        close(fd);
    }
}

/* The forked process of mode "setsid": orphans a grandchild in a session
 * of its own. */
static void orphan_grandchild(void)
{
    pid_t g = fork();
    if (g == 0) {
        setsid();
        for (int i = 0; i < 3000; i++) /* 60 s */
            pause_ms(20);
        _exit(0);
    }
    if (g > 0 && pid_file[0]) {
        pid_t sid = -1;
        for (int i = 0; i < 500 && (sid = getsid(g)) != g; i++) /* until it left */
            pause_ms(2);
        note_pids((long)g, (long)sid);
    }
    _exit(0);
}

/* Forks the lingering process; the caller goes on ranking. */
static void fault_now(void)
{
    if (mode[0] == 's') {
        pid_t pid = fork();
        if (pid == 0)
            orphan_grandchild();
        if (pid > 0)
            waitpid(pid, NULL, 0);
        for (int i = 0; mode[6] == '-' && i < 3000; i++) /* setsid-hang: 60 s */
            pause_ms(20);
        return;
    }
    pid_t pid = fork();
    if (pid > 0 && pid_file[0])
        note_pids((long)pid, (long)getpgrp());
    if (pid != 0)
        return;
    for (int i = 0; i < 3000; i++) { /* 60 s */
        if (mode[0] == 'w') {
            static const char msg[] = "fork-rank: the forked process is still writing\n";
            if (write(STDOUT_FILENO, msg, sizeof msg - 1) < 0)
                break;
        }
        pause_ms(20);
    }
    _exit(0);
}

LOOM_PLUGIN_DEFINE(fixture_fork_rank, fault_info);
