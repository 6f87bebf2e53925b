/* fuzz_input.c - the fuzz input as a string or as a temporary file. */
#define _DEFAULT_SOURCE /* mkdtemp */
#include "fuzz_input.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LOOM_FUZZ_MAX_FILES 8

static char fuzz_dir[4096];
static char fuzz_paths[LOOM_FUZZ_MAX_FILES][4200];
static int fuzz_n_paths;

char *loom_fuzz_strdup(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return NULL;
    if (size)
        memcpy(s, data, size);
    s[size] = 0;
    return s;
}

/* Removes the files written so far and the private directory. */
static void remove_fuzz_dir(void)
{
    for (int i = 0; i < fuzz_n_paths; i++)
        unlink(fuzz_paths[i]);
    if (fuzz_dir[0])
        rmdir(fuzz_dir);
}

/* Creates the private directory once; 0 on success. */
static int ensure_dir(void)
{
    if (fuzz_dir[0])
        return 0;
    const char *tmp = getenv("TMPDIR");
    snprintf(fuzz_dir, sizeof fuzz_dir, "%s/loom-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(fuzz_dir)) {
        fuzz_dir[0] = 0;
        return -1;
    }
    atexit(remove_fuzz_dir);
    return 0;
}

/* The slot holding the path of `name`, registering it the first time. */
static const char *path_of(const char *name)
{
    char want[4200];
    snprintf(want, sizeof want, "%s/%s", fuzz_dir, name);
    for (int i = 0; i < fuzz_n_paths; i++)
        if (!strcmp(fuzz_paths[i], want))
            return fuzz_paths[i];
    if (fuzz_n_paths == LOOM_FUZZ_MAX_FILES)
        return NULL;
    memcpy(fuzz_paths[fuzz_n_paths], want, sizeof want);
    return fuzz_paths[fuzz_n_paths++];
}

const char *loom_fuzz_file(const char *name, const uint8_t *data, size_t size)
{
    if (ensure_dir())
        return NULL;
    const char *path = path_of(name);
    if (!path)
        return NULL;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return NULL;
    size_t done = 0;
    while (done < size) {
        ssize_t n = write(fd, data + done, size - done);
        if (n <= 0) {
            close(fd);
            return NULL;
        }
        done += (size_t)n;
    }
    close(fd);
    return path;
}

void loom_fuzz_fail(const char *what)
{
    fprintf(stderr, "loom-fuzz: invariant broken: %s\n", what);
    fflush(stderr);
    __builtin_trap();
}
