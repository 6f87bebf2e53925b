/*
 * fuzz_input.h - helpers shared by the libFuzzer harnesses: the fuzz input
 * as a NUL-terminated string, or as a file for the loaders that read paths.
 *
 * Ownership: loom_fuzz_strdup returns malloc'd memory the caller frees.
 * loom_fuzz_file returns a path in static storage, valid until the next
 * call with the same name; the files and their private directory are
 * removed at exit.
 */
#ifndef LOOM_FUZZ_INPUT_H
#define LOOM_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>

/* Copies data[0..size) into a fresh NUL-terminated buffer (NULL when out
 * of memory). */
char *loom_fuzz_strdup(const uint8_t *data, size_t size);

/* Writes data[0..size) to the file `name` (e.g. "model.json") in this
 * process's private temporary directory and returns its path, or NULL
 * when the file cannot be written. */
const char *loom_fuzz_file(const char *name, const uint8_t *data, size_t size);

/* Stops the process in a way libFuzzer reports as a crash: used when a
 * harness finds a broken invariant (not a crash by itself). */
void loom_fuzz_fail(const char *what);

#endif
