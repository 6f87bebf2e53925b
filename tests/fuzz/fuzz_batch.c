/* fuzz_batch.c - libFuzzer harness for the global-batch options every
 * planning command shares (--global-batch, --micro-batch-size, --seq-len,
 * --memory-cap and --parallel through loom_session_args_set, core/run/
 * session.c). Input: lines "NAME VALUE", applied in order. An accepted
 * value lies in the documented range. */
#include <stdlib.h>
#include <string.h>
#include "fuzz_input.h"
#include <loom/sys/session.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The options this harness drives; the first byte of a line picks one
 * when the line names none of them. */
static const char *const names[] = {"global-batch", "micro-batch-size", "seq-len",
                                    "memory-cap", "parallel"};

/* Applies one "NAME VALUE" line to a; checks the ranges. */
static void apply(loom_session_args *a, char *line)
{
    char *space = strchr(line, ' ');
    const char *name = names[(unsigned char)line[0] % 5], *value = line;
    if (space) {
        *space = 0;
        for (int i = 0; i < 5; i++)
            if (!strcmp(line, names[i]))
                name = names[i];
        value = space + 1;
    }
    loom_error err = {0, ""};
    if (loom_session_args_set(a, name, value, &err) != LOOM_OK) {
        if (!err.message[0])
            loom_fuzz_fail("option rejected without a message");
        return;
    }
    if (a->global_batch < 0 || a->global_batch > (1LL << 40))
        loom_fuzz_fail("accepted --global-batch out of [1, 2^40]");
    if (a->seq_len < 0 || a->seq_len > (1 << 20))
        loom_fuzz_fail("accepted --seq-len out of [1, 2^20]");
    if (a->micro_batch_size < 0)
        loom_fuzz_fail("accepted a negative --micro-batch-size");
    if (!(a->memory_cap_bytes >= 0))
        loom_fuzz_fail("accepted a negative or NaN --memory-cap");
}

/* libFuzzer entry. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = loom_fuzz_strdup(data, size);
    if (!text)
        return 0;
    loom_session_args a;
    loom_session_args_init(&a);
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = 0;
        apply(&a, line);
    }
    free(text);
    return 0;
}
