/* test_isolate.c - fault isolation: records from a forked child, a crash,
 * an abort, a timeout (with the plugin named through the channel's step marker),
 * garbage and truncated records, an early exit, the address-space limit,
 * a forked process that keeps the pipe open (the run neither waits for it
 * nor leaves it alive), the iteration limit rule, real planning runs with the segfaulting and
 * never-returning fixture rankers (isolated and in-process), and `loom
 * plan --isolate` with its progress display. */
#define _DEFAULT_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "testutil.h"
#include <loom/sys/isolate.h>
#include "run_priv.h"
#include "ctx.h"

#if defined(__SANITIZE_ADDRESS__)
/* AddressSanitizer would turn a fixture's segfault into its own report and
 * exit(1); let the kernel deliver the signal as in a normal build. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "handle_segv=0";
}
#endif

#define PLANNERS LOOM_TEST_BINARY_DIR "/tests/isolation-fixtures/planners/"

/* Asserts that `text` contains `frag`. */
static void has(const char *text, const char *frag)
{
    ck_assert_msg(strstr(text, frag) != NULL, "missing \"%s\" in:\n%s", frag, text);
}

/* What a test body does. */
typedef enum body_mode {
    GOOD,      /* three results */
    ABORT,     /* abort() in iteration 1 */
    SEGV,      /* SIGSEGV in iteration 0 with step 1 marked */
    HANG,      /* sleeps in iteration 0 with step 2 marked */
    GARBAGE,   /* raw bytes on the pipe */
    TRUNCATED, /* half a record, then exit */
    SEQUENCE,  /* a result without a begin */
    EXIT7,     /* _exit(7) in iteration 1 */
    STATUS,    /* reports LOOM_EINVAL at iteration 0 */
    HOG,       /* allocates 1 GiB, reports LOOM_ENOMEM when that fails */
    FORK_GOOD, /* forks a process that sleeps holding the pipe, then as GOOD */
    FORK_SEGV  /* the same, then as SEGV */
} body_mode;

/* Shared with the child: the pid and process group of the process a
 * FORK_* body forked. */
static volatile long *forked_pid;

/* A result with distinct figures for iteration k. */
static loom_iter_result result_for(int32_t k)
{
    loom_iter_result r;
    memset(&r, 0, sizeof r);
    r.iteration = k;
    r.ranks = 4;
    r.makespan_ms = 100.0 + k;
    r.bubble_ratio = 0.25;
    r.mfu = -1;
    r.plan_time_ms = 1.5;
    r.peak_bytes = 1000 + k;
    r.evaluations = 7;
    return r;
}

/* Test body: announces two steps, then behaves as `mode` says. */
static int body(void *user, loom_channel *ch)
{
    body_mode mode = *(const body_mode *)user;
    loom_channel_info(ch, 3, "test-run");
    loom_channel_step(ch, 0, "test.cost");
    loom_channel_step(ch, 1, "test.crasher");
    loom_channel_step(ch, 2, "test.sleeper");
    if (mode == GARBAGE) {
        char junk[700];
        memset(junk, 'x', sizeof junk);
        ck_assert_int_eq((int)write(loom_channel_fd(ch), junk, sizeof junk), (int)sizeof junk);
        return 0;
    }
    if (mode == TRUNCATED) {
        char junk[100] = {0};
        ck_assert_int_eq((int)write(loom_channel_fd(ch), junk, sizeof junk), (int)sizeof junk);
        _exit(0);
    }
    if (mode == SEQUENCE) {
        loom_iter_result r = result_for(0);
        loom_channel_result(ch, &r);
        return 0;
    }
    if (mode == FORK_GOOD || mode == FORK_SEGV) {
        pid_t pid = fork(); /* inherits the write end of the pipe */
        if (pid == 0) {
            struct timespec ts = {30, 0};
            nanosleep(&ts, NULL);
            _exit(0);
        }
        forked_pid[0] = pid;
        forked_pid[1] = getpgrp();
        mode = mode == FORK_GOOD ? GOOD : SEGV;
    }
    for (int32_t k = 0; k < 3; k++) {
        loom_channel_begin(ch, k, 0);
        if (mode == ABORT && k == 1)
            abort();
        if (mode == EXIT7 && k == 1)
            _exit(7);
        if (mode == SEGV) {
            *loom_channel_step_marker(ch) = 1;
            signal(SIGSEGV, SIG_DFL);
            raise(SIGSEGV);
        }
        if (mode == HANG) {
            *loom_channel_step_marker(ch) = 2;
            for (;;) {
                struct timespec ts = {1, 0};
                nanosleep(&ts, NULL);
            }
        }
        if (mode == STATUS) {
            loom_channel_fail(ch, k, LOOM_EINVAL, "model.json: modules[1].layers: expected 1+");
            return 0;
        }
        if (mode == HOG) {
            char *p = malloc((size_t)1 << 30);
            if (!p) {
                loom_channel_fail(ch, k, LOOM_ENOMEM, "out of memory");
                return 0;
            }
            memset(p, 1, 4096);
            free(p);
        }
        loom_iter_result r = result_for(k);
        loom_channel_result(ch, &r);
    }
    return 40 + (int)mode;
}

/* Collects begin/end/tick callbacks. */
typedef struct calls {
    int begins, ends, ticks;
} calls;

/* Counts the callbacks of a run. */
static void count_calls(void *user, int32_t iteration, int32_t n, int done)
{
    calls *c = user;
    if (done == 2) {
        c->ticks++;
        return;
    }
    ck_assert_int_eq(n, 3);
    ck_assert_int_ge(iteration, 0);
    if (done)
        c->ends++;
    else
        c->begins++;
}

/* Runs the body in `mode` with a 300 ms timeout (20 s for the memory hog,
 * which sanitizers slow down) and `mb` MiB. */
static void run_mode(body_mode mode, int isolate, int64_t mb, loom_run_output *out, calls *c)
{
    loom_isolate_opts opts = {.isolate = isolate, .timeout_ms = mode == HOG ? 20000 : 300,
                              .memory_limit_mb = mb};
    loom_error err = {0};
    memset(c, 0, sizeof *c);
    int rc = loom_isolate_call(&opts, body, &mode, count_calls, c, out, &err);
    ck_assert_msg(rc == LOOM_OK, "%s", err.message);
}

START_TEST(good_run_isolated_and_in_process)
{
    for (int isolate = 0; isolate < 2; isolate++) {
        loom_run_output out;
        calls c;
        run_mode(GOOD, isolate, 0, &out, &c);
        ck_assert_int_eq(out.failure.kind, LOOM_FAIL_NONE);
        ck_assert_int_eq(out.n_results, 3);
        ck_assert_int_eq(out.n_iterations, 3);
        ck_assert_str_eq(out.manifest_name, "test-run");
        for (int k = 0; k < 3; k++) {
            ck_assert_int_eq(out.results[k].iteration, k);
            ck_assert_double_eq(out.results[k].makespan_ms, 100.0 + k);
            ck_assert_int_eq(out.results[k].peak_bytes, 1000 + k);
            ck_assert_int_eq(out.results[k].evaluations, 7);
        }
        ck_assert_int_eq(c.begins, 3);
        ck_assert_int_eq(c.ends, 3);
        ck_assert_int_eq(out.body_status, 40);
        ck_assert_int_eq(loom_failure_status(&out.failure), LOOM_OK);
        loom_run_output_clear(&out);
    }
}
END_TEST

START_TEST(abort_is_a_signal_at_its_iteration)
{
    loom_run_output out;
    calls c;
    run_mode(ABORT, 1, 0, &out, &c);
    ck_assert_int_eq(out.failure.kind, LOOM_FAIL_SIGNAL);
    ck_assert_int_eq(out.failure.signal, SIGABRT);
    ck_assert_int_eq(out.failure.iteration, 1);
    ck_assert_int_eq(out.failure.phase, LOOM_PHASE_ITERATION);
    ck_assert_int_eq(out.failure.step, -1);
    ck_assert_str_eq(out.failure.plugin_id, "");
    ck_assert_int_eq(out.n_results, 1);
    ck_assert_int_eq(loom_failure_status(&out.failure), LOOM_EPLUGIN);
    char buf[512];
    loom_failure_describe(&out.failure, buf, sizeof buf);
    ck_assert_str_eq(buf, "the core (no plugin running) was killed by signal 6 (SIGABRT) at "
                          "iteration 1");
    loom_run_output_clear(&out);
}
END_TEST

START_TEST(segv_names_the_running_plugin)
{
    loom_run_output out;
    calls c;
    run_mode(SEGV, 1, 0, &out, &c);
    ck_assert_int_eq(out.failure.kind, LOOM_FAIL_SIGNAL);
    ck_assert_int_eq(out.failure.signal, SIGSEGV);
    ck_assert_int_eq(out.failure.iteration, 0);
    ck_assert_int_eq(out.failure.step, 1);
    ck_assert_str_eq(out.failure.plugin_id, "test.crasher");
    char buf[512];
    loom_failure_describe(&out.failure, buf, sizeof buf);
    ck_assert_str_eq(buf, "plugin test.crasher (pipeline[1]) was killed by signal 11 (SIGSEGV) "
                          "at iteration 0");
    loom_run_output_clear(&out);
}
END_TEST

START_TEST(hang_times_out)
{
    loom_run_output out;
    calls c;
    double t0 = loom_now_ms();
    run_mode(HANG, 1, 0, &out, &c);
    double took = loom_now_ms() - t0;
    ck_assert_int_eq(out.failure.kind, LOOM_FAIL_TIMEOUT);
    ck_assert_double_eq(out.failure.limit_ms, 300);
    ck_assert_int_eq(out.failure.iteration, 0);
    ck_assert_str_eq(out.failure.plugin_id, "test.sleeper");
    ck_assert_msg(took >= 290 && took < 5000, "took %.0f ms", took);
    ck_assert_int_ge(c.ticks, 1); /* the parent woke up for progress while waiting */
    char buf[512];
    loom_failure_describe(&out.failure, buf, sizeof buf);
    ck_assert_str_eq(buf, "plugin test.sleeper (pipeline[2]) exceeded the time limit of 300 ms "
                          "at iteration 0 (timeout)");
    loom_run_output_clear(&out);
}
END_TEST

START_TEST(garbage_and_truncated_records)
{
    static const body_mode modes[] = {GARBAGE, TRUNCATED, SEQUENCE};
    static const char *const frags[] = {"bad magic number or checksum", "a truncated record",
                                        "out-of-sequence"};
    for (int m = 0; m < 3; m++) {
        loom_run_output out;
        calls c;
        run_mode(modes[m], 1, 0, &out, &c);
        ck_assert_int_eq(out.failure.kind, LOOM_FAIL_GARBAGE);
        ck_assert_int_eq(out.failure.status, LOOM_EPLUGIN);
        has(out.failure.message, "garbage on the result pipe");
        has(out.failure.message, frags[m]);
        ck_assert_int_eq(out.n_results, 0);
        loom_run_output_clear(&out);
    }
}
END_TEST

START_TEST(early_exit)
{
    loom_run_output out;
    calls c;
    run_mode(EXIT7, 1, 0, &out, &c);
    ck_assert_int_eq(out.failure.kind, LOOM_FAIL_EXIT);
    ck_assert_int_eq(out.failure.exit_code, 7);
    ck_assert_int_eq(out.failure.iteration, 1);
    ck_assert_int_eq(out.n_results, 1);
    char buf[512];
    loom_failure_describe(&out.failure, buf, sizeof buf);
    has(buf, "exited with status 7 before finishing at iteration 1");
    loom_run_output_clear(&out);
}
END_TEST

START_TEST(status_failure_keeps_message)
{
    for (int isolate = 0; isolate < 2; isolate++) {
        loom_run_output out;
        calls c;
        run_mode(STATUS, isolate, 0, &out, &c);
        ck_assert_int_eq(out.failure.kind, LOOM_FAIL_STATUS);
        ck_assert_int_eq(out.failure.status, LOOM_EINVAL);
        ck_assert_int_eq(loom_failure_status(&out.failure), LOOM_EINVAL);
        ck_assert_str_eq(out.failure.message, "model.json: modules[1].layers: expected 1+");
        ck_assert_int_eq(out.failure.iteration, 0);
        ck_assert_int_eq(out.n_results, 0);
        loom_run_output_clear(&out);
    }
}
END_TEST

START_TEST(memory_limit)
{
    loom_run_output out;
    calls c;
    run_mode(HOG, 1, 128, &out, &c);
    if (!loom_isolate_memory_limit_supported()) {
        /* ASan builds skip the limit: the gigabyte is granted */
        ck_assert_int_eq(out.failure.kind, LOOM_FAIL_NONE);
        ck_assert_int_eq(out.n_results, 3);
    } else {
        ck_assert_int_eq(out.failure.kind, LOOM_FAIL_MEMORY);
        ck_assert_int_eq(out.failure.limit_mb, 128);
        ck_assert_int_eq(out.failure.iteration, 0);
        char buf[512];
        loom_failure_describe(&out.failure, buf, sizeof buf);
        ck_assert_str_eq(buf, "out of memory under the 128 MiB address-space limit at "
                              "iteration 0: out of memory");
    }
    loom_run_output_clear(&out);
    run_mode(HOG, 1, 0, &out, &c); /* no limit: the gigabyte is there */
    ck_assert_int_eq(out.failure.kind, LOOM_FAIL_NONE);
    loom_run_output_clear(&out);
}
END_TEST

/* Runs a FORK_* body with a 20 s limit and checks it did not wait for the
 * forked process, and that nothing of the child's process group is left. */
static void run_forking(body_mode mode, loom_run_output *out)
{
    forked_pid = mmap(NULL, 2 * sizeof *forked_pid, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne((void *)forked_pid, MAP_FAILED);
    forked_pid[0] = forked_pid[1] = 0;
    loom_isolate_opts opts = {.isolate = 1, .timeout_ms = 20000};
    loom_error err = {0};
    double t0 = loom_now_ms();
    ck_assert_int_eq(loom_isolate_call(&opts, body, &mode, NULL, NULL, out, &err), LOOM_OK);
    double took = loom_now_ms() - t0;
    long pid = forked_pid[0], group = forked_pid[1];
    munmap((void *)forked_pid, 2 * sizeof *forked_pid);
    ck_assert_msg(pid > 0, "the body did not fork");
    ck_assert_msg(group != (long)getpgrp(), "the child shares this process's group");
    ck_assert_msg(loom_test_group_gone(group, 10), "process group %ld outlived the run", group);
    ck_assert_msg(took < 15000, "the run took %.0f ms: it waited for the forked process", took);
}

START_TEST(a_forked_process_neither_holds_nor_outlives_the_run)
{
    loom_run_output out;
    run_forking(FORK_GOOD, &out);
    ck_assert_int_eq(out.failure.kind, LOOM_FAIL_NONE);
    ck_assert_int_eq(out.n_results, 3);
    ck_assert_int_eq(out.body_status, 40);
    loom_run_output_clear(&out);
    run_forking(FORK_SEGV, &out); /* the crash is seen although the pipe stays open */
    ck_assert_int_eq(out.failure.kind, LOOM_FAIL_SIGNAL);
    ck_assert_int_eq(out.failure.signal, SIGSEGV);
    ck_assert_str_eq(out.failure.plugin_id, "test.crasher");
    loom_run_output_clear(&out);
}
END_TEST

START_TEST(iteration_limits)
{
    loom_isolate_opts o = {.isolate = 1, .timeout_ms = 60000};
    ck_assert_double_eq(loom_isolate_iteration_limit(&o, 0), 60000);
    ck_assert_double_eq(loom_isolate_iteration_limit(&o, 100), 5100);
    ck_assert_double_eq(loom_isolate_iteration_limit(&o, 8000), 16000);
    ck_assert_double_eq(loom_isolate_iteration_limit(&o, 600000), 1200000);
    o.timeout_given = 1;
    ck_assert_double_eq(loom_isolate_iteration_limit(&o, 600000), 60000);
    ck_assert_double_eq(loom_isolate_iteration_limit(&o, 100), 5100);
    o.timeout_ms = 500;
    ck_assert_double_eq(loom_isolate_iteration_limit(&o, 100), 500);
    o.timeout_ms = 0;
    ck_assert_double_eq(loom_isolate_iteration_limit(&o, 0), 0);
    ck_assert_double_eq(loom_isolate_iteration_limit(&o, 100), 5100);
}
END_TEST

START_TEST(names)
{
    char buf[32];
    ck_assert_str_eq(loom_signal_name(SIGSEGV, buf, sizeof buf), "SIGSEGV");
    ck_assert_str_eq(loom_signal_name(SIGKILL, buf, sizeof buf), "SIGKILL");
    ck_assert_str_eq(loom_signal_name(63, buf, sizeof buf), "signal 63");
    ck_assert_str_eq(loom_fail_kind_name(LOOM_FAIL_TIMEOUT), "timeout");
    ck_assert_str_eq(loom_fail_kind_name(LOOM_FAIL_GARBAGE), "garbage");
    ck_assert_str_eq(loom_fail_kind_name(99), "unknown");
}
END_TEST

/* Session args for a fixture planner over vlm-s, 4 iterations. */
static void fixture_args(loom_session_args *a, const char *planner)
{
    loom_session_args_init(a);
    a->manifest = planner;
    a->model = "vlm-s";
    a->parallel = "tp=4,pp=4,mb=8";
    a->iterations = 4;
    a->has_seed = 1;
    a->seed = 2;
}

START_TEST(plan_with_segfaulting_ranker)
{
    loom_session_args a;
    fixture_args(&a, PLANNERS "crash.json");
    loom_isolate_opts opts = {.isolate = 1, .timeout_ms = 60000,
                              .memory_limit_mb = LOOM_ISOLATE_DEFAULT_MEMORY_MB};
    loom_run_output out;
    loom_error err = {0};
    ck_assert_int_eq(loom_isolate_plan(&a, &opts, NULL, NULL, &out, &err), LOOM_OK);
    ck_assert_int_eq(out.failure.kind, LOOM_FAIL_SIGNAL);
    ck_assert_int_eq(out.failure.signal, SIGSEGV);
    ck_assert_int_eq(out.failure.iteration, 2);
    ck_assert_int_eq(out.failure.step, 2);
    ck_assert_str_eq(out.failure.plugin_id, "fixture.crash-rank");
    ck_assert_int_eq(out.n_iterations, 4);
    ck_assert_int_eq(out.n_results, 2);
    ck_assert_str_eq(out.manifest_name, "isolation-crash");
    loom_run_output_clear(&out);
}
END_TEST

START_TEST(plan_with_hanging_ranker)
{
    loom_session_args a;
    fixture_args(&a, PLANNERS "hang.json");
    loom_isolate_opts opts = {.isolate = 1, .timeout_ms = 500, .timeout_given = 1};
    loom_run_output out;
    loom_error err = {0};
    ck_assert_int_eq(loom_isolate_plan(&a, &opts, NULL, NULL, &out, &err), LOOM_OK);
    ck_assert_int_eq(out.failure.kind, LOOM_FAIL_TIMEOUT);
    ck_assert_double_eq(out.failure.limit_ms, 500);
    ck_assert_int_eq(out.failure.iteration, 2);
    ck_assert_str_eq(out.failure.plugin_id, "fixture.hang-rank");
    ck_assert_int_eq(out.n_results, 2);
    loom_run_output_clear(&out);
}
END_TEST

START_TEST(budget_plus_grace_bounds_a_hanging_ranker)
{
    /* hang.json sets budget_ms 100: the limit is 100 + max(5000, 100) */
    loom_session_args a;
    fixture_args(&a, PLANNERS "hang.json");
    loom_isolate_opts opts = {.isolate = 1, .timeout_ms = 60000};
    loom_run_output out;
    loom_error err = {0};
    double t0 = loom_now_ms();
    ck_assert_int_eq(loom_isolate_plan(&a, &opts, NULL, NULL, &out, &err), LOOM_OK);
    ck_assert_int_eq(out.failure.kind, LOOM_FAIL_TIMEOUT);
    ck_assert_double_eq(out.failure.limit_ms, 5100);
    ck_assert_double_lt(loom_now_ms() - t0, 30000);
    loom_run_output_clear(&out);
}
END_TEST

START_TEST(isolated_equals_in_process)
{
    loom_session_args a;
    fixture_args(&a, PLANNERS "base.json");
    loom_run_output iso, inproc;
    loom_error err = {0};
    loom_isolate_opts o1 = {.isolate = 1, .timeout_ms = 60000,
                            .memory_limit_mb = LOOM_ISOLATE_DEFAULT_MEMORY_MB};
    loom_isolate_opts o0 = {.isolate = 0, .timeout_ms = 60000};
    ck_assert_int_eq(loom_isolate_plan(&a, &o1, NULL, NULL, &iso, &err), LOOM_OK);
    ck_assert_int_eq(loom_isolate_plan(&a, &o0, NULL, NULL, &inproc, &err), LOOM_OK);
    ck_assert_int_eq(iso.failure.kind, LOOM_FAIL_NONE);
    ck_assert_int_eq(inproc.failure.kind, LOOM_FAIL_NONE);
    ck_assert_int_eq(iso.n_results, 4);
    ck_assert_int_eq(inproc.n_results, 4);
    for (int k = 0; k < 4; k++) {
        ck_assert_double_eq(iso.results[k].makespan_ms, inproc.results[k].makespan_ms);
        ck_assert_int_eq(iso.results[k].peak_bytes, inproc.results[k].peak_bytes);
        ck_assert_double_gt(iso.results[k].makespan_ms, 0);
        ck_assert_int_eq(iso.results[k].ranks, 4);
    }
    loom_run_output_clear(&iso);
    loom_run_output_clear(&inproc);
}
END_TEST

START_TEST(bad_input_is_a_status_failure)
{
    loom_session_args a;
    fixture_args(&a, PLANNERS "base.json");
    a.model = "/nonexistent/model.json";
    loom_isolate_opts opts = {.isolate = 1, .timeout_ms = 60000};
    loom_run_output out;
    loom_error err = {0};
    ck_assert_int_eq(loom_isolate_plan(&a, &opts, NULL, NULL, &out, &err), LOOM_OK);
    ck_assert_int_eq(out.failure.kind, LOOM_FAIL_STATUS);
    ck_assert_int_eq(out.failure.phase, LOOM_PHASE_OPEN);
    ck_assert_int_eq(out.failure.iteration, -1);
    has(out.failure.message, "/nonexistent/model.json");
    int st = loom_failure_status(&out.failure);
    ck_assert_msg(st == LOOM_EIO || st == LOOM_ENOTFOUND || st == LOOM_EINVAL, "status %d", st);
    loom_run_output_clear(&out);
}
END_TEST

/* ---- `loom plan --isolate` and its progress display ------------------------ */

/* The makespans of the summary table rows in `text` (at most 8). */
static int table_makespans(const char *text, double ms[8])
{
    int n = 0;
    for (const char *line = text; line && *line && n < 8; line = strchr(line, '\n')) {
        while (*line == '\n')
            line++;
        int k;
        double v;
        if (sscanf(line, "%d %lf", &k, &v) == 2 && k == n)
            ms[n++] = v;
    }
    return n;
}

START_TEST(cli_plan_isolated_matches_in_process)
{
    char *a = NULL, *b = NULL;
    const char *args = "plan --model vlm-s --parallel tp=4,pp=4,mb=8 --iterations 3 --seed 5";
    char iso[512];
    snprintf(iso, sizeof iso, "%s --isolate --timeout-ms 60000 --memory-limit-mb 8192", args);
    ck_assert_int_eq(loom_test_cli(args, &a), 0);
    ck_assert_int_eq(loom_test_cli(iso, &b), 0);
    double ma[8], mb[8];
    ck_assert_int_eq(table_makespans(a, ma), 3);
    ck_assert_int_eq(table_makespans(b, mb), 3);
    for (int k = 0; k < 3; k++)
        ck_assert_double_eq(ma[k], mb[k]);
    has(b, "mean iteration ");
    free(a);
    free(b);
}
END_TEST

START_TEST(cli_plan_isolated_reports_crash_and_hang)
{
    char *out = NULL;
    ck_assert_int_eq(loom_test_cli("plan --manifest " PLANNERS "crash.json --model vlm-s "
                          "--parallel tp=4,pp=4,mb=8 --isolate",
                          &out),
                     3);
    double ms[8];
    ck_assert_int_eq(table_makespans(out, ms), 2); /* the rows before the crash */
    has(out, "loom plan: plugin fixture.crash-rank (pipeline[2]) was killed by signal 11 "
             "(SIGSEGV) at iteration 2");
    free(out);
    ck_assert_int_eq(loom_test_cli("plan --manifest " PLANNERS "hang.json --model vlm-s "
                          "--parallel tp=4,pp=4,mb=8 --isolate --timeout-ms 400 --json",
                          &out),
                     3);
    has(out, "loom plan: plugin fixture.hang-rank (pipeline[2]) exceeded the time limit of 400 ms "
             "at iteration 2 (timeout)");
    free(out);
    ck_assert_int_eq(loom_test_cli("plan --isolate --timeout-ms x", &out), 2);
    has(out, "--timeout-ms: expected a number in [0, 1e+09], found 'x'");
    free(out);
}
END_TEST

START_TEST(cli_plan_progress_lines)
{
    /* iterations 0 and 1 plan at once, iteration 2 hangs until the limit:
     * the display keeps printing lines while it waits */
    char *out = NULL;
    const char *args = "plan --manifest " PLANNERS "hang.json --model vlm-s "
                       "--parallel tp=4,pp=4,mb=8 --iterations 4 --isolate --timeout-ms 2600";
    ck_assert_int_eq(loom_test_cli(args, &out), 3);
    has(out, "loom:  50% (2/4) iteration 3/4 elapsed 2.");
    has(out, ", estimate 2.");
    ck_assert_ptr_null(strchr(out, '\r')); /* not a terminal: plain lines */
    has(out, "exceeded the time limit of 2600 ms at iteration 2");
    free(out);
    char quiet[1024];
    snprintf(quiet, sizeof quiet, "%s --quiet", args);
    ck_assert_int_eq(loom_test_cli(quiet, &out), 3);
    ck_assert_ptr_null(strstr(out, "loom: "));
    free(out);
}
END_TEST

static Suite *isolate_suite(void)
{
    Suite *s = suite_create("isolate");
    TCase *tc = tcase_create("isolate");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, good_run_isolated_and_in_process);
    tcase_add_test(tc, abort_is_a_signal_at_its_iteration);
    tcase_add_test(tc, segv_names_the_running_plugin);
    tcase_add_test(tc, hang_times_out);
    tcase_add_test(tc, garbage_and_truncated_records);
    tcase_add_test(tc, early_exit);
    tcase_add_test(tc, status_failure_keeps_message);
    tcase_add_test(tc, memory_limit);
    tcase_add_test(tc, a_forked_process_neither_holds_nor_outlives_the_run);
    tcase_add_test(tc, iteration_limits);
    tcase_add_test(tc, names);
    tcase_add_test(tc, plan_with_segfaulting_ranker);
    tcase_add_test(tc, plan_with_hanging_ranker);
    tcase_add_test(tc, budget_plus_grace_bounds_a_hanging_ranker);
    tcase_add_test(tc, isolated_equals_in_process);
    tcase_add_test(tc, bad_input_is_a_status_failure);
    suite_add_tcase(s, tc);
    TCase *cli = tcase_create("cli");
    tcase_set_timeout(cli, 180);
    tcase_add_test(cli, cli_plan_isolated_matches_in_process);
    tcase_add_test(cli, cli_plan_isolated_reports_crash_and_hang);
    tcase_add_test(cli, cli_plan_progress_lines);
    suite_add_tcase(s, cli);
    return s;
}

int main(void)
{
    return loom_test_main(isolate_suite());
}
