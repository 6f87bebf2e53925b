/*
 * run_priv.h - the run layer's functions that only the core and its tests
 * call (not exported, not installed).
 */
#ifndef LOOM_RUN_PRIV_H
#define LOOM_RUN_PRIV_H

#include <stddef.h>
#include <loom/sys/isolate.h>
#include <loom/sys/session.h>

/* ---- sessions (session.c) ------------------------------------------------ */

/* Consumes the option at argv[*i] when it is one of loom_session_options()
 * spelt "--name" (advancing *i past its value): returns 1 when consumed, 0
 * when it is not a session option, -1 (after printing why) when its value
 * is missing or malformed. For programs without an option parser of their
 * own (the benchmarks); `loom` itself parses with getopt_long and
 * loom_session_args_set. */
int loom_session_args_take(loom_session_args *a, int argc, char **argv, int *i);

/* Plans a caller-provided iteration (checked against the problem first);
 * the C API's loom_planner_plan. */
int loom_session_plan_iteration(loom_session *s, const loom_iteration *it, loom_plan *plan,
                                loom_error *err);

/* Path of the default planner manifest (first that exists of: the
 * working directory's examples/manifests, the installed data dir, the
 * source tree). */
const char *loom_default_manifest(char *buf, size_t size);

/* ---- isolation (isolate.c) ----------------------------------------------- */

/* The pipe's file descriptor in a child (-1 in-process); for tests that
 * need to write garbage. */
int loom_channel_fd(const loom_channel *ch);

/* 1 when the address-space limit is applied in this build; 0 in
 * AddressSanitizer builds, whose shadow memory needs terabytes of address
 * space (the limit is then skipped). */
int loom_isolate_memory_limit_supported(void);

#endif
