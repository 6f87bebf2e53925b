/* testutil.c - helpers shared by the Check suites. */
#define _DEFAULT_SOURCE
#include "testutil.h"
#include <loom/mock_host.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

static char slots[16][4096];
static int next_slot;

static char *slot(void)
{
    char *s = slots[next_slot];
    next_slot = (next_slot + 1) % 16;
    return s;
}

const char *loom_test_src(const char *rel)
{
    char *s = slot();
    snprintf(s, 4096, "%s/%s", LOOM_TEST_SOURCE_DIR, rel);
    return s;
}

const char *loom_test_bin(const char *rel)
{
    char *s = slot();
    snprintf(s, 4096, "%s/%s", LOOM_TEST_BINARY_DIR, rel);
    return s;
}

static char made[64][4096];
static int n_made;

/* Removes the temporary files this process created. */
static void remove_tmpfiles(void)
{
    for (int i = 0; i < n_made; i++)
        unlink(made[i]);
    n_made = 0;
}

const char *loom_test_tmpfile(const char *suffix, const char *text)
{
    char *s = slot();
    snprintf(s, 4096, "/tmp/loom-test-XXXXXX%s", suffix ? suffix : "");
    int fd = mkstemps(s, suffix ? (int)strlen(suffix) : 0);
    ck_assert_int_ge(fd, 0);
    size_t n = strlen(text);
    ck_assert_int_eq((long)write(fd, text, n), (long)n);
    close(fd);
    if (n_made == 0)
        atexit(remove_tmpfiles);
    if (n_made == 64) {
        unlink(made[0]);
        memmove(made[0], made[1], sizeof made - sizeof made[0]);
        n_made--;
    }
    snprintf(made[n_made++], sizeof made[0], "%s", s);
    return s;
}

int loom_test_run(const char *cmd, char **output)
{
    size_t size = strlen(cmd) + 8;
    char *full = malloc(size);
    if (!full)
        return -1;
    snprintf(full, size, "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    free(full);
    if (!p)
        return -1;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    size_t n;
    while ((n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
        len += n;
        if (cap - len < 1024) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
    }
    buf[len] = 0;
    int st = pclose(p);
    if (output)
        *output = buf;
    else
        free(buf);
    return (st >= 0 && WIFEXITED(st)) ? WEXITSTATUS(st) : -1;
}

int loom_test_cli(const char *args, char **output)
{
    static const char asan[] = "ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0\"";
    const char *bin = loom_test_bin("bin/loom");
    size_t size = sizeof asan + strlen(bin) + strlen(args) + 3;
    char *cmd = malloc(size);
    if (!cmd)
        return -1;
    snprintf(cmd, size, "%s %s %s", asan, bin, args);
    int rc = loom_test_run(cmd, output);
    free(cmd);
    return rc;
}

/* Reads /proc/<pid>/stat: state, parent and process group. 0 on success. */
static int proc_stat(const char *pid, char *state, long *ppid, long *pgrp)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%s/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    if (!p || sscanf(p + 1, " %c %ld %ld", state, ppid, pgrp) != 3)
        return -1;
    return 0;
}

/* Calls fn(pid, state, ppid, pgrp, user) for every process; stops when
 * fn returns non-zero and returns that. */
static long each_process(long (*fn)(long, char, long, long, long), long user)
{
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    long r = 0;
    for (struct dirent *e = readdir(d); e && !r; e = readdir(d)) {
        char state;
        long ppid, pgrp;
        if (e->d_name[0] < '0' || e->d_name[0] > '9' ||
            proc_stat(e->d_name, &state, &ppid, &pgrp) != 0)
            continue;
        r = fn(atol(e->d_name), state, ppid, pgrp, user);
    }
    closedir(d);
    return r;
}

static long count_in_group(long pid, char state, long ppid, long pgrp, long pgid)
{
    (void)pid, (void)ppid;
    return pgrp == pgid && state != 'Z' && state != 'X' ? 1 : 0;
}

int loom_test_group_alive(long pgid)
{
    /* each_process stops at the first hit: enough to say "some" */
    return (int)each_process(count_in_group, pgid);
}

int loom_test_group_gone(long pgid, double limit_s)
{
    if (pgid <= 1)
        return 1;
    if (pgid == (long)getpgrp())
        return 0; /* never kill our own group */
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        if (!loom_test_group_alive(pgid))
            return 1;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 > limit_s)
            break;
        usleep(20000);
    }
    kill(-(pid_t)pgid, SIGKILL); /* leave nothing behind */
    return 0;
}

static long is_child(long pid, char state, long ppid, long pgrp, long parent)
{
    (void)state, (void)pgrp;
    return ppid == parent ? pid : 0;
}

long loom_test_child_of(long parent)
{
    return each_process(is_child, parent);
}

int loom_test_main(Suite *suite)
{
    SRunner *sr = srunner_create(suite);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

void loom_test_mock_manifest(loom_mock_host *h, const loom_plugin_info *info)
{
    loom_error err = {0};
    ck_assert_ptr_nonnull(h);
    ck_assert_ptr_nonnull(info);
    int rc = loom_mock_host_load_manifest_of(h, LOOM_TEST_SOURCE_DIR "/plugins", info->id, &err);
    ck_assert_msg(rc == LOOM_OK, "%s", err.message);
}

loom_mock_host *loom_test_mock_host(const loom_plugin_info *info)
{
    loom_mock_host *h = loom_mock_host_new();
    loom_test_mock_manifest(h, info);
    return h;
}

void loom_test_has(const char *text, const char *frag)
{
    ck_assert_msg(text && strstr(text, frag) != NULL, "missing \"%s\" in:\n%.3000s", frag,
                  text ? text : "(null)");
}

char *loom_test_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(m);
    int c;
    while ((c = fgetc(f)) != EOF)
        fputc(c, m);
    fclose(f);
    fclose(m);
    return buf;
}

char *loom_test_cli_expect(int code, const char *fmt, ...)
{
    char args[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    char *out = NULL;
    int rc = loom_test_cli(args, &out);
    ck_assert_msg(rc == code, "loom %s: exit %d, expected %d:\n%.3000s", args, rc, code,
                  out ? out : "");
    return out;
}

void loom_test_mkdtemp(char *dir, size_t size, const char *tag)
{
    snprintf(dir, size, "/tmp/loom-%s-XXXXXX", tag);
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

void loom_test_rmdir(const char *dir)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

struct cJSON *loom_test_json(const char *path)
{
    char *text = loom_test_slurp(path);
    cJSON *doc = cJSON_Parse(text);
    free(text);
    ck_assert_msg(doc != NULL, "%s: not JSON", path);
    return doc;
}
