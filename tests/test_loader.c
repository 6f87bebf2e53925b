/* test_loader.c - plugin discovery and loading: every fixture failure mode
 * with its exact status and message, dlopen vs static registration,
 * duplicate ids, the default search path and the host API table. */
#define _XOPEN_SOURCE 700 /* realpath, setenv */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "testutil.h"
#include <loom/sys/registry.h>
#include "registry_priv.h"
#include "ctx.h"

/* Static twin of the good fixture ranker, linked into this test. */
const loom_plugin_info *loom_static_fixture_good_rank(void);
extern int loom_fixture_good_rank_finis;

/* A registry holding every fixture of <build>/tests/fixtures. */
static loom_registry *fixture_registry(void)
{
    loom_registry *reg = loom_registry_new();
    loom_error err = {0};
    ck_assert_ptr_nonnull(reg);
    int rc = loom_registry_add_dir(reg, loom_test_bin("tests/fixtures"), &err);
    ck_assert_msg(rc == LOOM_OK, "%s", err.message);
    return reg;
}

/* Loads fixture `name` and checks status, state and message fragments
 * (NULL-terminated). Returns nothing; fails the test on mismatch. */
static void expect_load_failure(const char *name, int code, const char *const *frags)
{
    loom_registry *reg = fixture_registry();
    char id[128];
    snprintf(id, sizeof id, "fixture.%s", name);
    loom_plugin *p = loom_registry_find(reg, NULL, id);
    ck_assert_msg(p != NULL, "fixture %s not registered", id);
    ck_assert_int_eq(p->state, LOOM_PLUGIN_FOUND);
    loom_error err = {0};
    int rc = loom_plugin_load(reg, p, &err);
    ck_assert_msg(rc == code, "%s: status %s, expected %s: %s", id, loom_status_name(rc),
                  loom_status_name(code), err.message);
    ck_assert_int_eq(err.code, code);
    ck_assert_int_eq(p->state, LOOM_PLUGIN_FAILED);
    ck_assert_str_eq(p->load_error.message, err.message);
    /* Every message names the plugin id first. */
    ck_assert_msg(strstr(err.message, id) != NULL &&
                      (strstr(err.message, id) == err.message ||
                       !strncmp(err.message, "plugin ", 7)),
                  "message does not start with the id: %s", err.message);
    for (int i = 0; frags[i]; i++)
        ck_assert_msg(strstr(err.message, frags[i]) != NULL, "%s: missing \"%s\" in: %s",
                      id, frags[i], err.message);
    /* A second attempt returns the stored outcome. */
    loom_error again = {0};
    ck_assert_int_eq(loom_plugin_load(reg, p, &again), code);
    ck_assert_str_eq(again.message, err.message);
    loom_registry_free(reg);
}

START_TEST(missing_entry_symbol)
{
    static const char *const f[] = {"fixture-no-entry.so",
                                    "entry symbol loom_plugin_entry not found", NULL};
    expect_load_failure("no-entry", LOOM_EPLUGIN, f);
}
END_TEST

/* A copy of the good-rank fixture in a fresh folder, with manifest field
 * "entry" set to `entry` (NULL: default) and the binary cut to
 * `keep_bytes` (0: whole). Returns the folder (static storage). */
static const char *fixture_copy(const char *entry, long keep_bytes)
{
    static char dir[256];
    snprintf(dir, sizeof dir, "/tmp/loom-loader-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[512], cmd[2048];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s/fixture-good-rank.so'",
             loom_test_bin("tests/fixtures/good-rank/fixture-good-rank.so"), dir);
    ck_assert_int_eq(system(cmd), 0);
    if (keep_bytes > 0) {
        snprintf(path, sizeof path, "%s/fixture-good-rank.so", dir);
        ck_assert_int_eq(truncate(path, keep_bytes), 0);
    }
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "{\"loom_plugin\": 1, \"id\": \"fixture.copy\", \"version\": \"1.2.0\", "
               "\"abi\": 1, \"binary\": \"fixture-good-rank.so\", %s%s%s"
               "\"provides\": {\"role\": \"ranker\", \"role_version\": 1, "
               "\"name\": \"copy\"}}\n",
            entry ? "\"entry\": \"" : "", entry ? entry : "", entry ? "\", " : "");
    fclose(f);
    return dir;
}

/* Loads the plugin of folder `dir` and expects LOOM_EPLUGIN with `frag`;
 * then `loom plugins list --load` and `loom validate` name the failure,
 * exit non-zero, and no signal kills them. */
static void expect_copy_fails(const char *dir, const char *frag)
{
    loom_registry *reg = loom_registry_new();
    loom_error err = {0};
    ck_assert_int_eq(loom_registry_add_dir(reg, dir, &err), LOOM_OK);
    loom_plugin *p = loom_registry_find(reg, NULL, "fixture.copy");
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(loom_plugin_load(reg, p, &err), LOOM_EPLUGIN);
    ck_assert_msg(strstr(err.message, frag) != NULL, "missing \"%s\" in: %s", frag,
                  err.message);
    ck_assert_msg(strncmp(err.message, "fixture.copy: ", 14) == 0, "%s", err.message);
    loom_registry_free(reg);
    char cmd[2048], *out = NULL;
    snprintf(cmd, sizeof cmd, "'%s' plugins list --load --path '%s' 2>&1",
             loom_test_bin("bin/loom"), dir);
    int rc = loom_test_run(cmd, &out);
    ck_assert_msg(rc == 3, "plugins list --load: exit %d, expected 3 (plugin error): %s", rc, out);
    ck_assert_msg(strstr(out, frag) != NULL, "missing \"%s\" in: %s", frag, out);
    free(out);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

START_TEST(entry_symbol_outside_the_plugin)
{
    /* dlsym would find these in libc, which the plugin links. */
    expect_copy_fails(fixture_copy("abort", 0),
                      "entry symbol abort: it is defined in ");
    expect_copy_fails(fixture_copy("pause", 0), "not in the plugin");
    /* A data symbol of the plugin itself is no function either. */
    expect_copy_fails(fixture_copy("loom_fixture_good_rank_finis", 0),
                      "entry symbol loom_fixture_good_rank_finis: it is not a function");
}
END_TEST

START_TEST(truncated_binary)
{
    expect_copy_fails(fixture_copy(NULL, 3000), "cannot load: truncated: segment");
    expect_copy_fails(fixture_copy(NULL, 100), "cannot load: truncated: its program headers");
    expect_copy_fails(fixture_copy(NULL, 10), "cannot load: not an ELF file (10 bytes)");
}
END_TEST

START_TEST(abi_mismatch)
{
    static const char *const f[] = {"fixture-abi.so", "loom_plugin_entry",
                                    "ABI mismatch: host ABI 1, plugin ABI 2", NULL};
    expect_load_failure("abi", LOOM_EABI, f);
}
END_TEST

START_TEST(build_signature_mismatch)
{
    char want[96];
    snprintf(want, sizeof want, "build signature mismatch: pointer_bytes host %u, plugin 4",
             (unsigned)sizeof(void *));
    const char *const f[] = {"fixture-signature.so", want, NULL};
    expect_load_failure("signature", LOOM_EABI, f);
}
END_TEST

START_TEST(info_struct_too_small)
{
    char want[96];
    snprintf(want, sizeof want, "info struct_size is 8 bytes, host needs at least %u",
             (unsigned)LOOM_PLUGIN_INFO_SIZE_V1);
    const char *const f[] = {"fixture-small-info.so", want, NULL};
    expect_load_failure("small-info", LOOM_EABI, f);
}
END_TEST

START_TEST(id_mismatch)
{
    static const char *const f[] = {
        "binary reports id \"fixture.someone-else\"", "declares \"fixture.id-mismatch\"",
        "id-mismatch/manifest.json", NULL};
    expect_load_failure("id-mismatch", LOOM_EPLUGIN, f);
}
END_TEST

START_TEST(role_vtable_too_new)
{
    static const char *const f[] = {
        "ranker vtable has role_version 2, host supports up to 1 (plugin newer than host)",
        NULL};
    expect_load_failure("role-too-new", LOOM_EABI, f);
}
END_TEST

START_TEST(memory_tuner_too_old)
{
    static const char *const f[] = {
        "memory_tuner vtable has role_version 1, host needs at least 2 (built for an older "
        "SDK whose layer options it would misread; rebuild it)",
        NULL};
    expect_load_failure("mem-too-old", LOOM_EABI, f);
}
END_TEST

START_TEST(role_vtable_too_small)
{
    char want[96];
    snprintf(want, sizeof want, "ranker vtable struct_size is 8 bytes, host needs at least %zu",
             offsetof(loom_ranker_vtable, reads));
    const char *const f[] = {want, NULL};
    expect_load_failure("small-vtable", LOOM_EABI, f);
}
END_TEST

START_TEST(role_vtable_missing)
{
    static const char *const f[] = {
        "role(\"ranker\") returned no vtable, but the manifest declares role ranker", NULL};
    expect_load_failure("no-vtable", LOOM_EPLUGIN, f);
}
END_TEST

START_TEST(required_member_null)
{
    static const char *const f[] = {"interleaver vtable member interleave is NULL (required)",
                                    NULL};
    expect_load_failure("missing-member", LOOM_EPLUGIN, f);
}
END_TEST

START_TEST(init_failure)
{
    static const char *const f[] = {
        "plugin fixture.init-fails: cannot start: calibration table missing", NULL};
    expect_load_failure("init-fails", LOOM_EPLUGIN, f);
}
END_TEST

START_TEST(undefined_symbol_at_load)
{
    static const char *const f[] = {"fixture-undefined-symbol.so", "cannot load",
                                    "loom_fixture_symbol_nobody_defines", NULL};
    expect_load_failure("undefined-symbol", LOOM_EPLUGIN, f);
}
END_TEST

START_TEST(manifest_abi_checked_first)
{
    char dir[] = "/tmp/loom-test-abi-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("{\"loom_plugin\": 1, \"id\": \"t.future\", \"version\": \"1.0.0\", \"abi\": 2, "
          "\"binary\": \"t.so\", \"provides\": {\"role\": \"ranker\", \"role_version\": 1, "
          "\"name\": \"future\"}}",
          f);
    fclose(f);
    loom_registry *reg = loom_registry_new();
    loom_error err = {0};
    ck_assert_int_eq(loom_registry_add_dir(reg, dir, &err), LOOM_OK);
    ck_assert_int_eq(loom_registry_count(reg), 1);
    loom_plugin *p = loom_registry_at(reg, 0);
    ck_assert_int_eq(loom_plugin_load(reg, p, &err), LOOM_EABI);
    ck_assert_ptr_nonnull(strstr(err.message, "t.future: "));
    ck_assert_ptr_nonnull(strstr(err.message, "host ABI 1, plugin ABI 2 (declared in the manifest)"));
    loom_registry_free(reg);
    remove(path);
    rmdir(dir);
}
END_TEST

/* Creates an instance of a loaded ranker and ranks a 4-group graph. */
static void rank_with(loom_plugin *p, float prio[4], double *best)
{
    const loom_ranker_vtable *vt = (const loom_ranker_vtable *)p->vtable;
    loom_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    snprintf(ctx.plugin_id, sizeof ctx.plugin_id, "%s", p->m.id);
    loom_param_value *params = NULL;
    int n = 0;
    loom_error err = {0};
    cJSON *js = cJSON_Parse("{\"budget_ms\": 77, \"alpha\": 0.5}");
    ck_assert_int_eq(loom_params_resolve(&p->m, js, "t", "params", &params, &n, &err), LOOM_OK);
    cJSON_Delete(js);
    ctx.params = params;
    ctx.n_params = n;
    ctx.deadline_ms = -1;
    void *self = NULL;
    ck_assert_int_eq(vt->create(loom_host_table(), &ctx, p->plugin_state, &self, &err), LOOM_OK);
    loom_stage_graph g;
    memset(&g, 0, sizeof g);
    g.n_groups = 4;
    const loom_stage_graph *graphs[1] = {&g};
    loom_ranking r;
    r = (loom_ranking)LOOM_RANKING_INIT;
    r.cap_priorities = 4;
    r.priorities = prio;
    ck_assert_int_eq(vt->rank(self, graphs, 1, &r, &err), LOOM_OK);
    ck_assert_int_eq(r.candidate, 0);
    *best = r.best_makespan_ms;
    vt->destroy(self);
    loom_params_free(params, n);
}

START_TEST(good_plugin_dlopen_and_static_agree)
{
    loom_registry *dyn = fixture_registry();
    loom_error err = {0};
    loom_plugin *pd = loom_registry_find(dyn, "ranker", "good-rank");
    ck_assert_ptr_nonnull(pd);
    ck_assert_int_eq(pd->is_static, 0);
    ck_assert_int_eq(loom_plugin_load(dyn, pd, &err), LOOM_OK);
    ck_assert_int_eq(pd->state, LOOM_PLUGIN_LOADED);
    ck_assert_str_eq(pd->info->id, "fixture.good-rank");
    ck_assert_ptr_nonnull(pd->vtable);
    ck_assert_ptr_nonnull(pd->plugin_state);
    ck_assert_int_eq(loom_plugin_load(dyn, pd, &err), LOOM_OK); /* idempotent */

    loom_registry *st = loom_registry_new();
    ck_assert_int_eq(loom_registry_add_static(st, loom_test_src("tests/fixtures/good-rank/manifest.json"),
                                              loom_static_fixture_good_rank, &err),
                     LOOM_OK);
    loom_plugin *ps = loom_registry_find(st, NULL, "fixture.good-rank");
    ck_assert_ptr_nonnull(ps);
    ck_assert_int_eq(ps->is_static, 1);
    ck_assert_int_eq(loom_plugin_load(st, ps, &err), LOOM_OK);
    ck_assert_ptr_eq(ps->info, loom_static_fixture_good_rank());

    float a[4], b[4];
    double best_a = 0, best_b = 0;
    rank_with(pd, a, &best_a);
    rank_with(ps, b, &best_b);
    for (int i = 0; i < 4; i++) {
        ck_assert_float_eq(a[i], 0.5f * (float)(i + 1));
        ck_assert_float_eq(a[i], b[i]);
    }
    ck_assert_double_eq(best_a, 77.0);
    ck_assert_double_eq(best_b, 77.0);

    int before = loom_fixture_good_rank_finis;
    loom_registry_free(st); /* runs the static copy's fini() once */
    ck_assert_int_eq(loom_fixture_good_rank_finis, before + 1);
    loom_registry_free(dyn);
}
END_TEST

START_TEST(static_registration_runs_the_checks)
{
    loom_registry *reg = loom_registry_new();
    loom_error err = {0};
    /* The good ranker's entry under the id-mismatch fixture's manifest. */
    ck_assert_int_eq(loom_registry_add_static(reg, loom_test_src("tests/fixtures/id-mismatch/manifest.json"),
                                              loom_static_fixture_good_rank, &err),
                     LOOM_OK);
    loom_plugin *p = loom_registry_at(reg, 0);
    ck_assert_int_eq(loom_plugin_load(reg, p, &err), LOOM_EPLUGIN);
    ck_assert_ptr_nonnull(strstr(err.message, "fixture.id-mismatch: (static)"));
    ck_assert_ptr_nonnull(strstr(err.message, "binary reports id \"fixture.good-rank\""));
    ck_assert_int_eq(loom_registry_add_static(reg, "/nonexistent/manifest.json",
                                              loom_static_fixture_good_rank, &err),
                     LOOM_EIO);
    loom_registry_free(reg);
}
END_TEST

/* Writes dir/sub/manifest.json for plugin id `id` at `version` whose
 * binary is `binary`. */
static void write_manifest(const char *dir, const char *sub, const char *id,
                           const char *version, const char *binary)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, sub);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%s/manifest.json", dir, sub);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f,
            "{\"loom_plugin\": 1, \"id\": \"%s\", \"version\": \"%s\", \"abi\": 1, "
            "\"binary\": \"%s\", \"provides\": {\"role\": \"ranker\", \"role_version\": 1, "
            "\"name\": \"n-%s\"}}",
            id, version, binary, sub);
    fclose(f);
}

/* Removes dir/sub/manifest.json and dir/sub. */
static void remove_manifest(const char *dir, const char *sub)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s/manifest.json", dir, sub);
    remove(path);
    snprintf(path, sizeof path, "%s/%s", dir, sub);
    rmdir(path);
}

START_TEST(duplicate_ids)
{
    char a[] = "/tmp/loom-test-dupA-XXXXXX", b[] = "/tmp/loom-test-dupB-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(a));
    ck_assert_ptr_nonnull(mkdtemp(b));
    write_manifest(a, "p", "t.dup", "1.0.0", "p.so");
    write_manifest(b, "p", "t.dup", "1.1.0", "p.so");
    write_manifest(b, "q", "t.same", "2.0.0", "q.so");
    write_manifest(a, "q", "t.same", "2.0.0", "q.so");
    write_manifest(a, "bad", "t bad", "1.0.0", "x.so"); /* malformed: skipped */
    loom_registry *reg = loom_registry_new();
    loom_error err = {0};
    ck_assert_int_eq(loom_registry_add_dir(reg, a, &err), LOOM_OK);
    ck_assert_int_eq(loom_registry_count(reg), 2);
    ck_assert_int_eq(loom_registry_add_dir(reg, a, &err), LOOM_OK); /* same files again */
    ck_assert_int_eq(loom_registry_count(reg), 2);
    /* b has t.dup 1.1.0 (wins) and t.same 2.0.0 from another binary (error). */
    ck_assert_int_eq(loom_registry_add_dir(reg, b, &err), LOOM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "plugin t.same version 2.0.0 is provided by two "
                                              "different binaries"));
    char pa[512], pb[512];
    char *ra = realpath(a, NULL), *rb = realpath(b, NULL);
    snprintf(pa, sizeof pa, "%s/q/manifest.json", ra);
    snprintf(pb, sizeof pb, "%s/q/manifest.json", rb);
    ck_assert_ptr_nonnull(strstr(err.message, pa));
    ck_assert_ptr_nonnull(strstr(err.message, pb));
    loom_plugin *p = loom_registry_find(reg, NULL, "t.dup");
    ck_assert_str_eq(p->m.version, "1.1.0");
    snprintf(pb, sizeof pb, "%s/p/manifest.json", rb);
    ck_assert_str_eq(p->m.manifest_path, pb);
    ck_assert_int_eq(loom_registry_count(reg), 2);
    loom_registry_free(reg);

    /* The older version found later is ignored. */
    reg = loom_registry_new();
    remove_manifest(b, "q");
    ck_assert_int_eq(loom_registry_add_dir(reg, b, &err), LOOM_OK);
    ck_assert_int_eq(loom_registry_add_dir(reg, a, &err), LOOM_OK);
    ck_assert_str_eq(loom_registry_find(reg, NULL, "t.dup")->m.version, "1.1.0");
    ck_assert_int_eq(loom_registry_count(reg), 2);
    /* By name within a role. */
    ck_assert_ptr_eq(loom_registry_find(reg, "ranker", "n-p"), loom_registry_find(reg, NULL, "t.dup"));
    ck_assert_ptr_null(loom_registry_find(reg, "interleaver", "n-p"));
    ck_assert_ptr_null(loom_registry_find(reg, NULL, "t.none"));
    ck_assert_ptr_null(loom_registry_at(reg, 2));
    loom_registry_free(reg);
    free(ra);
    free(rb);
    remove_manifest(a, "p");
    remove_manifest(a, "q");
    remove_manifest(a, "bad");
    remove_manifest(b, "p");
    rmdir(a);
    rmdir(b);
}
END_TEST

START_TEST(missing_dir_is_an_error_only_when_explicit)
{
    loom_registry *reg = loom_registry_new();
    loom_error err = {0};
    ck_assert_int_eq(loom_registry_add_dir(reg, "/nonexistent/loom-plugins", &err), LOOM_ENOTFOUND);
    ck_assert_str_eq(err.message, "plugin directory /nonexistent/loom-plugins: expected a "
                                  "directory, found nothing");
    /* A plugin folder itself is accepted. */
    ck_assert_int_eq(loom_registry_add_dir(reg, loom_test_bin("tests/fixtures/good-rank"), &err),
                     LOOM_OK);
    ck_assert_int_eq(loom_registry_count(reg), 1);
    loom_registry_free(reg);
}
END_TEST

/* Number of <dir>/<x>/manifest.json files. */
static int count_manifests(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) {
        char path[4400];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s/manifest.json", dir, de->d_name);
        if (de->d_name[0] != '.' && stat(path, &st) == 0)
            n++;
    }
    if (d)
        closedir(d);
    return n;
}

START_TEST(default_search_path)
{
    char env[4200];
    snprintf(env, sizeof env, "/nonexistent/a::%s", loom_test_bin("tests/fixtures"));
    setenv("LOOM_PLUGIN_PATH", env, 1);
    loom_registry *reg = loom_registry_new();
    loom_error err = {0};
    ck_assert_int_eq(loom_registry_add_default_dirs(reg, &err), LOOM_OK);
    ck_assert_ptr_nonnull(loom_registry_find(reg, NULL, "fixture.good-rank"));
    /* Next to libloom: <build>/lib/../plugins. */
    char *plugins = realpath(loom_test_bin("plugins"), NULL);
    int expected = plugins ? count_manifests(plugins) : 0;
    int found = 0;
    for (int i = 0; i < loom_registry_count(reg); i++)
        if (plugins && !strncmp(loom_registry_at(reg, i)->m.dir, plugins, strlen(plugins)))
            found++;
    ck_assert_int_eq(found, expected);
    ck_assert_int_eq(loom_registry_count(reg), count_manifests(loom_test_bin("tests/fixtures")) + expected);
    free(plugins);
    loom_registry_free(reg);
    unsetenv("LOOM_PLUGIN_PATH");
}
END_TEST

/* Stand-ins for vtable members (never called). */
static int stub_create(const loom_host_api *h, loom_ctx *c, void *ps, void **self, loom_error *e)
{
    (void)h, (void)c, (void)ps, (void)self, (void)e;
    return LOOM_OK;
}

/* Stand-in destroy. */
static void stub_destroy(void *self)
{
    (void)self;
}

/* Stand-in interleave. */
static int stub_interleave(void *self, const loom_stage_graph *g, const float *p,
                           loom_schedule *out, loom_error *e)
{
    (void)self, (void)g, (void)p, (void)out, (void)e;
    return LOOM_OK;
}

/* Stand-in wants_split_backward. */
static int stub_wants(void *self)
{
    (void)self;
    return 1;
}

START_TEST(vtable_copy_zero_fills)
{
    /* A plugin built before wants_split_backward existed: its struct ends
     * at interleave, so the host copy must read that member as NULL. */
    loom_interleaver_vtable src = {
        {(uint32_t)offsetof(loom_interleaver_vtable, wants_split_backward), 1},
        stub_create, stub_destroy, stub_interleave, stub_wants};
    loom_interleaver_vtable dst;
    memset(&dst, 0xab, sizeof dst);
    ck_assert_ptr_null(loom_role_copy_vtable(3, &src.header, &dst));
    ck_assert(dst.interleave == stub_interleave);
    ck_assert(dst.wants_split_backward == NULL);
    src.header.struct_size = sizeof src;
    ck_assert_ptr_null(loom_role_copy_vtable(3, &src.header, &dst));
    ck_assert(dst.wants_split_backward == stub_wants);
    src.interleave = NULL;
    ck_assert_str_eq(loom_role_copy_vtable(3, &src.header, &dst), "interleave");
    src.create = NULL;
    ck_assert_str_eq(loom_role_copy_vtable(3, &src.header, &dst), "create");
}
END_TEST

/* Stand-in rank. */
static int stub_rank(void *self, const loom_stage_graph *const *g, int32_t n, loom_ranking *out,
                     loom_error *e)
{
    (void)self, (void)g, (void)n, (void)out, (void)e;
    return LOOM_OK;
}

START_TEST(ranker_reads_defaults_to_all)
{
    /* A ranker built before `reads` existed: the host reads every graph
     * member for it (LOOM_RANKER_READS_ALL), whatever follows its struct. */
    loom_ranker_vtable src = {{(uint32_t)offsetof(loom_ranker_vtable, reads), 1},
                              stub_create, stub_destroy, stub_rank, LOOM_RANKER_READS_COUNTS};
    loom_ranker_vtable dst;
    memset(&dst, 0xab, sizeof dst);
    ck_assert_ptr_null(loom_role_copy_vtable(2, &src.header, &dst));
    ck_assert_uint_eq(dst.reads, LOOM_RANKER_READS_ALL);
    src.header.struct_size = sizeof src;
    ck_assert_ptr_null(loom_role_copy_vtable(2, &src.header, &dst));
    ck_assert_uint_eq(dst.reads, LOOM_RANKER_READS_COUNTS);
}
END_TEST

START_TEST(role_tables)
{
    ck_assert_uint_eq(loom_role_vtable_bytes(2), sizeof(loom_ranker_vtable));
    ck_assert_uint_eq(loom_role_vtable_min_bytes(2), offsetof(loom_ranker_vtable, reads));
    ck_assert_uint_eq(loom_role_vtable_min_bytes(3),
                      offsetof(loom_interleaver_vtable, wants_split_backward));
    ck_assert_uint_eq(loom_role_vtable_min_bytes(0),
                      offsetof(loom_cost_model_vtable, module_extra));
    ck_assert_uint_eq(loom_role_vtable_bytes(5), 0);
}
END_TEST

START_TEST(host_table)
{
    const loom_host_api *h = loom_host_table();
    ck_assert_uint_eq(h->struct_size, sizeof(loom_host_api));
    ck_assert_uint_eq(h->abi_version, LOOM_ABI_VERSION);
    loom_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.seed = 12345;
    ctx.deadline_ms = -1;
    ck_assert_uint_eq(h->seed(&ctx), 12345);
    uint64_t s1 = 9, s2 = 9;
    ck_assert_uint_eq(h->rng_next(&s1), loom_splitmix64(&s2));
    ck_assert_uint_eq(s1, s2);
    ck_assert_double_eq(h->budget_left_ms(&ctx), -1);
    ck_assert_int_eq(h->expired(&ctx), 0);
    double now = h->now_ms();
    ck_assert(h->now_ms() >= now);
    ctx.deadline_ms = now + 60000;
    double left = h->budget_left_ms(&ctx);
    ck_assert(left > 59000 && left <= 60000);
    ck_assert_int_eq(h->expired(&ctx), 0);
    loom_interrupted = 1;
    ck_assert_int_eq(h->expired(&ctx), 1);
    loom_interrupted = 0;
    ctx.deadline_ms = now - 1;
    ck_assert_double_eq(h->budget_left_ms(&ctx), 0);
    ck_assert_int_eq(h->expired(&ctx), 1);
    ck_assert_ptr_null(h->problem(&ctx));
    loom_error err = {0};
    ck_assert_int_eq(h->error(&err, LOOM_EINVAL, "x=%d", 3), LOOM_EINVAL);
    ck_assert_str_eq(err.message, "x=3");
    void *z = h->alloc(0); /* a block even for 0 bytes */
    ck_assert_ptr_nonnull(z);
    h->free(z);
    void *m = h->alloc(16);
    m = h->realloc(m, 32);
    ck_assert_ptr_nonnull(m);
    h->free(m);
}
END_TEST

START_TEST(host_params)
{
    loom_plugin_manifest man;
    loom_error err = {0};
    ck_assert_int_eq(loom_parse_plugin_manifest(loom_test_src("tests/fixtures/good-rank/manifest.json"),
                                                &man, &err),
                     LOOM_OK);
    loom_param_value *v = NULL;
    int n = 0;
    cJSON *js = cJSON_Parse("{\"budget_ms\": 5, \"mode\": \"exact\"}");
    ck_assert_int_eq(loom_params_resolve(&man, js, "t", "params", &v, &n, &err), LOOM_OK);
    cJSON_Delete(js);
    loom_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.params = v;
    ctx.n_params = n;
    const loom_host_api *h = loom_host_table();
    int64_t i = 0;
    double d = 0;
    int b = -1;
    ck_assert_int_eq(h->param_int(&ctx, "budget_ms", &i), LOOM_OK);
    ck_assert_int_eq(i, 5);
    ck_assert_int_eq(h->param_double(&ctx, "budget_ms", &d), LOOM_OK);
    ck_assert_double_eq(d, 5.0);
    ck_assert_int_eq(h->param_int(&ctx, "alpha", &i), LOOM_EINVAL);
    ck_assert_int_eq(h->param_double(&ctx, "alpha", &d), LOOM_OK);
    ck_assert_double_eq(d, 1.0);
    ck_assert_int_eq(h->param_bool(&ctx, "deterministic", &b), LOOM_OK);
    ck_assert_int_eq(b, 1);
    ck_assert_int_eq(h->param_bool(&ctx, "mode", &b), LOOM_EINVAL);
    ck_assert_str_eq(h->param_string(&ctx, "mode"), "exact");
    ck_assert_str_eq(h->param_string(&ctx, "file"), "");
    ck_assert_ptr_null(h->param_string(&ctx, "budget_ms"));
    ck_assert_int_eq(h->param_int(&ctx, "undeclared", &i), LOOM_ENOTFOUND);
    ck_assert_int_eq(h->param_double(&ctx, "undeclared", &d), LOOM_ENOTFOUND);
    ck_assert_int_eq(h->param_bool(&ctx, "undeclared", &b), LOOM_ENOTFOUND);
    ck_assert_ptr_null(h->param_string(&ctx, "undeclared"));
    loom_params_free(v, n);
    loom_plugin_manifest_clear(&man);
}
END_TEST

/* A plugin calls loom_status_name() (header-only in the SDK): the fixture
 * links with --no-undefined, imports no loom_ symbol, and gets the names. */
START_TEST(plugin_calls_status_name)
{
    loom_registry *reg = fixture_registry();
    loom_plugin *p = loom_registry_find(reg, "ranker", "status-name");
    ck_assert_ptr_nonnull(p);
    loom_error err = {0};
    ck_assert_msg(loom_plugin_load(reg, p, &err) == LOOM_OK, "%s", err.message);
    const loom_ranker_vtable *vt = (const loom_ranker_vtable *)p->vtable;
    loom_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    snprintf(ctx.plugin_id, sizeof ctx.plugin_id, "%s", p->m.id);
    ctx.deadline_ms = -1;
    void *self = NULL;
    ck_assert_int_eq(vt->create(loom_host_table(), &ctx, p->plugin_state, &self, &err), LOOM_OK);
    loom_stage_graph g;
    memset(&g, 0, sizeof g);
    const loom_stage_graph *graphs[1] = {&g};
    float prio[1];
    loom_ranking r = LOOM_RANKING_INIT;
    r.cap_priorities = 1;
    r.priorities = prio;
    ck_assert_int_eq(vt->rank(self, graphs, 1, &r, &err), LOOM_EINFEASIBLE);
    ck_assert_str_eq(err.message, "status-name: LOOM_EABI LOOM_OK LOOM_E?");
    vt->destroy(self);

    char cmd[4200], *out = NULL;
    snprintf(cmd, sizeof cmd, "nm -D --undefined-only '%s'", p->m.binary_path);
    ck_assert_int_eq(loom_test_run(cmd, &out), 0);
    ck_assert_msg(strstr(out, "loom_") == NULL, "the plugin imports core symbols:\n%s", out);
    free(out);
    ck_assert_str_eq(loom_status_name(LOOM_EDEADLOCK), "LOOM_EDEADLOCK");
    loom_registry_free(reg);
}
END_TEST

/* Builds the suite. */
static Suite *loader_suite(void)
{
    Suite *s = suite_create("loader");
    TCase *tc = tcase_create("failures");
    tcase_add_test(tc, missing_entry_symbol);
    tcase_add_test(tc, entry_symbol_outside_the_plugin);
    tcase_add_test(tc, truncated_binary);
    tcase_add_test(tc, abi_mismatch);
    tcase_add_test(tc, build_signature_mismatch);
    tcase_add_test(tc, info_struct_too_small);
    tcase_add_test(tc, id_mismatch);
    tcase_add_test(tc, role_vtable_too_new);
    tcase_add_test(tc, memory_tuner_too_old);
    tcase_add_test(tc, role_vtable_too_small);
    tcase_add_test(tc, role_vtable_missing);
    tcase_add_test(tc, required_member_null);
    tcase_add_test(tc, init_failure);
    tcase_add_test(tc, undefined_symbol_at_load);
    tcase_add_test(tc, manifest_abi_checked_first);
    suite_add_tcase(s, tc);
    TCase *ok = tcase_create("loading");
    tcase_add_test(ok, good_plugin_dlopen_and_static_agree);
    tcase_add_test(ok, static_registration_runs_the_checks);
    tcase_add_test(ok, role_tables);
    tcase_add_test(ok, vtable_copy_zero_fills);
    tcase_add_test(ok, ranker_reads_defaults_to_all);
    tcase_add_test(ok, plugin_calls_status_name);
    suite_add_tcase(s, ok);
    TCase *reg = tcase_create("registry");
    tcase_add_test(reg, duplicate_ids);
    tcase_add_test(reg, missing_dir_is_an_error_only_when_explicit);
    tcase_add_test(reg, default_search_path);
    suite_add_tcase(s, reg);
    TCase *host = tcase_create("host_api");
    tcase_add_test(host, host_table);
    tcase_add_test(host, host_params);
    suite_add_tcase(s, host);
    return s;
}

int main(void)
{
    return loom_test_main(loader_suite());
}
