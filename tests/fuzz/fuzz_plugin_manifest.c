/* fuzz_plugin_manifest.c - libFuzzer harness for plugin manifests
 * (core/manifest.c) and the resolution of their declared params
 * (core/params.c). */
#include "fuzz_input.h"
#include <loom/sys/registry.h>
#include "registry_priv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* libFuzzer entry: runs one input through the parser; never fails on bad
 * input, only on a crash, a leak or a broken invariant. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = loom_fuzz_file("manifest.json", data, size);
    if (!path)
        return 0;
    loom_plugin_manifest m;
    loom_error err = {0, ""};
    int rc = loom_parse_plugin_manifest(path, &m, &err);
    if (rc == LOOM_OK) {
        if (!m.id || !m.role || !m.binary_path || loom_role_index(m.role) < 0)
            loom_fuzz_fail("accepted manifest lacks id, binary or a known role");
        loom_param_value *values = NULL;
        int n = 0;
        if (loom_params_resolve(&m, NULL, path, "pipeline[0].params", &values, &n, &err) ==
            LOOM_OK) {
            char buf[512];
            loom_params_format(values, n, buf, sizeof buf);
            for (int i = 0; i < m.n_params; i++)
                loom_params_set_from_string(&m, values, n, m.params[i].name, "1", &err);
        }
        loom_params_free(values, n);
    } else if (!err.message[0]) {
        loom_fuzz_fail("manifest rejected without a message");
    }
    loom_plugin_manifest_clear(&m);
    return 0;
}
