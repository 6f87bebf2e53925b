/* fuzz_workload.c - libFuzzer harness for workloads as JSON Lines
 * (core/workload_io.c): parses, writes the result back and checks that it
 * reads back identically. */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz_input.h"
#include <loom/sys/problem.h>
#include "problem_inputs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* 1 when two workloads hold the same iterations and samples. */
static int same_workload(const loom_workload *a, const loom_workload *b)
{
    if (a->n_iterations != b->n_iterations || a->n_samples != b->n_samples)
        return 0;
    for (int32_t i = 0; i < a->n_iterations; i++) {
        const loom_iteration *x = &a->iterations[i], *y = &b->iterations[i];
        if (x->index != y->index || x->n_samples != y->n_samples)
            return 0;
        for (int32_t k = 0; k < x->n_samples; k++) {
            const loom_sample *s = &x->samples[k], *t = &y->samples[k];
            if (s->text_tokens != t->text_tokens || s->images != t->images ||
                s->microbatch != t->microbatch || s->video_seconds != t->video_seconds ||
                s->audio_seconds != t->audio_seconds)
                return 0;
        }
    }
    return 1;
}

/* Writes w as JSON Lines and parses it back; fails the run on a mismatch. */
static void round_trip(const loom_workload *w)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return;
    loom_error err = {0, ""};
    int rc = loom_workload_write(w, f, &err);
    fclose(f);
    if (rc == LOOM_OK) {
        loom_workload *back = NULL;
        if (loom_workload_parse("round-trip.jsonl", text, len, &back, &err) != LOOM_OK) {
            fprintf(stderr, "%s\n", err.message);
            loom_fuzz_fail("a written workload does not parse back");
        }
        if (!same_workload(w, back))
            loom_fuzz_fail("a written workload reads back differently");
        loom_workload_free(back);
    }
    free(text);
}

/* libFuzzer entry: runs one input through the parser; never fails on bad
 * input, only on a crash, a leak or a broken invariant. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = loom_fuzz_strdup(data, size);
    if (!text)
        return 0;
    loom_workload *w = NULL;
    loom_error err = {0, ""};
    if (loom_workload_parse("fuzz.jsonl", text, size, &w, &err) == LOOM_OK) {
        if (w->n_iterations < 1)
            loom_fuzz_fail("accepted workload has no iteration");
        round_trip(w);
    } else if (!err.message[0]) {
        loom_fuzz_fail("workload rejected without a message");
    }
    loom_workload_free(w);
    free(text);
    return 0;
}
