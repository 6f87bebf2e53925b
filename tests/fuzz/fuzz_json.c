/* fuzz_json.c - libFuzzer harness for the JSON reader (core/json_util.c):
 * syntax errors with line and column, and the typed getters on every
 * member of whatever parses. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include "fuzz_input.h"
#include <loom/sys/json.h>
#include "base.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Calls every typed getter on every member of every object under `item`;
 * `depth` bounds the recursion. */
static void walk(const cJSON *item, const char *path, int depth)
{
    static const char *const allowed[] = {"name", "id", "layers", "modules", NULL};
    if (depth > 64)
        return;
    loom_error err = {0, ""};
    char child_path[256];
    if (cJSON_IsObject(item)) {
        loom_json_check_keys("fuzz.json", item, path, allowed, &err);
        for (const cJSON *m = item->child; m; m = m->next) {
            int64_t i = 0;
            double d = 0;
            int b = 0;
            const char *s = NULL;
            const cJSON *o = NULL;
            loom_json_get_int("fuzz.json", item, path, m->string, 1, -5, 1 << 20, &i, &err);
            loom_json_get_double("fuzz.json", item, path, m->string, 1, 0.0, 1e12, &d, &err);
            loom_json_get_bool("fuzz.json", item, path, m->string, 1, &b, &err);
            loom_json_get_string("fuzz.json", item, path, m->string, 1, &s, &err);
            loom_json_get_object("fuzz.json", item, path, m->string, 1, &o, &err);
            loom_json_get_array("fuzz.json", item, path, m->string, 1, &o, &err);
            loom_json_path_key(child_path, sizeof child_path, path, m->string);
            walk(m, child_path, depth + 1);
        }
    } else if (cJSON_IsArray(item)) {
        int k = 0;
        for (const cJSON *m = item->child; m; m = m->next, k++) {
            loom_json_path_index(child_path, sizeof child_path, path, k);
            loom_json_type_name(m);
            walk(m, child_path, depth + 1);
        }
    }
}

/* libFuzzer entry: runs one input through the parser; never fails on bad
 * input, only on a crash, a leak or a broken invariant. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = loom_fuzz_strdup(data, size);
    if (!text)
        return 0;
    cJSON *root = NULL;
    loom_error err = {0, ""};
    if (loom_json_parse("fuzz.json", text, size, &root, &err) == LOOM_OK) {
        walk(root, "", 0);
        cJSON_Delete(root);
    } else if (!err.message[0]) {
        loom_fuzz_fail("loom_json_parse failed without a message");
    }
    free(text);
    return 0;
}
