/* state_rank.c - fixture ranker for the process-state tests: ranks groups
 * in index order like fifo, and changes the process state the output path
 * must not depend on, in create() (param in_create=true) or on its
 * on_call-th rank() call: action "chdir" moves to the folder the param dir
 * names, "umask" sets umask(0), "nofile" lowers RLIMIT_NOFILE's soft limit
 * to the lowest descriptor number not in use (no new one can be opened). */
#define _DEFAULT_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define FAULT_PARAM "on_call"
#define FAULT_WHO "state-rank"
#define FAULT_ID "fixture.state-rank"
#define FAULT_CREATE_HOOK read_params
#include "../fault_rank.h"

static char action[16] = "chdir";
static char dir[1024] = "/tmp";

static void fault_now(void);

/* Keeps the params; acts at once with in_create. */
static void read_params(const loom_host_api *host, loom_ctx *ctx)
{
    const char *a = host->param_string(ctx, "action");
    const char *d = host->param_string(ctx, "dir");
    int in_create = 0;
    host->param_bool(ctx, "in_create", &in_create);
    snprintf(action, sizeof action, "%s", a ? a : "chdir");
    snprintf(dir, sizeof dir, "%s", d && *d ? d : "/tmp");
    if (in_create)
        fault_now();
}

/* The lowest descriptor number not in use: a limit of it lets no new
 * descriptor be opened. */
static long lowest_free_fd(void)
{
    int fd = fcntl(0, F_DUPFD, 0);
    if (fd >= 0)
        close(fd);
    return fd < 0 ? 3 : fd;
}

/* Changes the process state named by `action`. */
static void fault_now(void)
{
    if (action[0] == 'c') {
        if (chdir(dir) != 0)
            perror("state-rank: chdir");
    } else if (action[0] == 'u') {
        umask(0);
    } else {
        struct rlimit r;
        getrlimit(RLIMIT_NOFILE, &r);
        r.rlim_cur = (rlim_t)lowest_free_fd();
        setrlimit(RLIMIT_NOFILE, &r);
    }
}

LOOM_PLUGIN_DEFINE(fixture_state_rank, fault_info);
