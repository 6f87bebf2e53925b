/*
 * test_trust.c - plugin trust rules (core/trust.c): world-writable files
 * and folders, sticky folders, owners, binaries escaping their folder
 * through symlinks; the registry skipping untrusted plugins unless allowed;
 * `loom plan --allow-untrusted-plugins`.
 */
#define _DEFAULT_SOURCE /* mkdtemp, symlink */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <loom/sys/registry.h>
#include "registry_priv.h"
#include "ctx.h"
#include "testutil.h"
#include "trust.h"

static const char *const MANIFEST =
    "{\"loom_plugin\": 1, \"id\": \"org.test.trusty\", \"version\": \"1.0.0\", \"abi\": 1,\n"
    " \"binary\": \"loom-trusty.so\",\n"
    " \"provides\": {\"role\": \"ranker\", \"role_version\": 1, \"name\": \"trusty\"}}\n";

/* A plugin folder <root>/plugin with manifest.json (0644) and a binary
 * loom-trusty.so (0755), inside a private root folder (0700). */
typedef struct fixture {
    char root[256];
    char dir[300];
    char manifest[340];
    char binary[340];
} fixture;

/* Writes `text` to `path` with mode `mode`. */
static void write_file(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    ck_assert_int_eq(chmod(path, mode), 0);
}

/* Creates the fixture's folders and files. */
static void fx_init(fixture *fx)
{
    snprintf(fx->root, sizeof fx->root, "/tmp/loom-trust-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(fx->root));
    ck_assert_int_eq(chmod(fx->root, 0700), 0);
    snprintf(fx->dir, sizeof fx->dir, "%s/plugin", fx->root);
    ck_assert_int_eq(mkdir(fx->dir, 0755), 0);
    ck_assert_int_eq(chmod(fx->dir, 0755), 0);
    snprintf(fx->manifest, sizeof fx->manifest, "%s/manifest.json", fx->dir);
    snprintf(fx->binary, sizeof fx->binary, "%s/loom-trusty.so", fx->dir);
    write_file(fx->manifest, MANIFEST, 0644);
    write_file(fx->binary, "not really an ELF file\n", 0755);
}

/* Removes the fixture's root folder and everything in it. */
static void fx_done(fixture *fx)
{
    char cmd[400];
    chmod(fx->root, 0700);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx->root);
    ck_assert_int_eq(system(cmd), 0);
}

/* Parses the fixture's manifest and runs the trust check. */
static int check(const fixture *fx, int allow, loom_error *err)
{
    loom_plugin_manifest m;
    loom_error perr = {0, ""};
    ck_assert_int_eq(loom_parse_plugin_manifest(fx->manifest, &m, &perr), LOOM_OK);
    memset(err, 0, sizeof *err);
    int rc = loom_trust_check_plugin(&m, allow, err);
    loom_plugin_manifest_clear(&m);
    return rc;
}

/* Asserts that the check fails without --allow-untrusted-plugins with a
 * message holding `a` and `b`, and passes with it. */
static void expect_untrusted(const fixture *fx, const char *a, const char *b)
{
    loom_error err;
    ck_assert_int_eq(check(fx, 0, &err), LOOM_EPLUGIN);
    ck_assert_msg(strstr(err.message, "untrusted plugin org.test.trusty: ") != NULL, "%s",
                  err.message);
    ck_assert_msg(strstr(err.message, a) && strstr(err.message, b),
                  "message \"%s\" lacks \"%s\" or \"%s\"", err.message, a, b);
    ck_assert_msg(strstr(err.message, "pass --allow-untrusted-plugins") != NULL, "%s",
                  err.message);
    ck_assert_int_eq(check(fx, 1, &err), LOOM_OK);
}

START_TEST(private_plugin_is_trusted)
{
    fixture fx;
    fx_init(&fx);
    loom_error err;
    ck_assert_int_eq(check(&fx, 0, &err), LOOM_OK);
    /* A binary that does not exist yet is left to the loader. */
    ck_assert_int_eq(unlink(fx.binary), 0);
    ck_assert_int_eq(check(&fx, 0, &err), LOOM_OK);
    fx_done(&fx);
}
END_TEST

START_TEST(world_writable_manifest_is_refused)
{
    fixture fx;
    fx_init(&fx);
    ck_assert_int_eq(chmod(fx.manifest, 0666), 0);
    char want[2048];
    snprintf(want, sizeof want, "%s: the manifest is world-writable (mode 0666)", fx.manifest);
    expect_untrusted(&fx, want, want);
    fx_done(&fx);
}
END_TEST

START_TEST(world_writable_binary_is_refused)
{
    fixture fx;
    fx_init(&fx);
    ck_assert_int_eq(chmod(fx.binary, 0777), 0);
    char want[2048];
    snprintf(want, sizeof want, "%s: the binary is world-writable (mode 0777)", fx.binary);
    expect_untrusted(&fx, want, want);
    fx_done(&fx);
}
END_TEST

START_TEST(world_writable_folder_needs_sticky_bit)
{
    fixture fx;
    fx_init(&fx);
    ck_assert_int_eq(chmod(fx.dir, 0777), 0);
    char want[2048];
    snprintf(want, sizeof want, "%s: the folder is world-writable without the sticky bit "
             "(mode 0777)", fx.dir);
    expect_untrusted(&fx, want, want);
    ck_assert_int_eq(chmod(fx.dir, 01777), 0);
    loom_error err;
    ck_assert_int_eq(check(&fx, 0, &err), LOOM_OK);
    fx_done(&fx);
}
END_TEST

START_TEST(world_writable_parent_folder_is_refused)
{
    fixture fx;
    fx_init(&fx);
    ck_assert_int_eq(chmod(fx.root, 0757), 0);
    char want[2048];
    snprintf(want, sizeof want, "%s: the folder is world-writable without the sticky bit "
             "(mode 0757)", fx.root);
    expect_untrusted(&fx, want, want);
    fx_done(&fx);
}
END_TEST

START_TEST(files_of_another_user_are_refused)
{
    ck_assert_msg(geteuid() == 0, "needs root (main returns 77 before this)");
    fixture fx;
    fx_init(&fx);
    ck_assert_int_eq(chown(fx.binary, 4242, 4242), 0);
    char want[2048];
    snprintf(want, sizeof want, "%s: the binary is owned by uid 4242", fx.binary);
    expect_untrusted(&fx, want, "neither root nor the user running loom (uid 0)");
    ck_assert_int_eq(chown(fx.binary, 0, 0), 0);
    ck_assert_int_eq(chown(fx.manifest, 4242, 4242), 0);
    snprintf(want, sizeof want, "%s: the manifest is owned by uid 4242", fx.manifest);
    expect_untrusted(&fx, want, want);
    ck_assert_int_eq(chown(fx.manifest, 0, 0), 0);
    ck_assert_int_eq(chown(fx.dir, 4242, 4242), 0);
    snprintf(want, sizeof want, "%s: the plugin folder is owned by uid 4242", fx.dir);
    expect_untrusted(&fx, want, want);
    ck_assert_int_eq(chown(fx.dir, 0, 0), 0);
    loom_error err;
    ck_assert_int_eq(check(&fx, 0, &err), LOOM_OK);
    fx_done(&fx);
}
END_TEST

/* Group-writable files and folders are trusted only when nobody but root
 * or the user running Loom can be in the group: gid 54321 names no group,
 * so its members cannot be known. */
START_TEST(group_writable_files_of_a_shared_group_are_refused)
{
    ck_assert_msg(geteuid() == 0, "needs root (main returns 77 before this)");
    fixture fx;
    fx_init(&fx);
    ck_assert_int_eq(chown(fx.binary, 0, 54321), 0);
    ck_assert_int_eq(chmod(fx.binary, 0775), 0);
    char want[2048];
    snprintf(want, sizeof want, "%s: the binary is group-writable (mode 0775) and gid 54321 "
             "may have members other than root and the user running loom", fx.binary);
    expect_untrusted(&fx, want, want);
    ck_assert_int_eq(chmod(fx.binary, 0755), 0); /* not writable by the group: fine */
    loom_error err;
    ck_assert_int_eq(check(&fx, 0, &err), LOOM_OK);
    ck_assert_int_eq(chown(fx.manifest, 0, 54321), 0);
    ck_assert_int_eq(chmod(fx.manifest, 0664), 0);
    snprintf(want, sizeof want, "%s: the manifest is group-writable (mode 0664)", fx.manifest);
    expect_untrusted(&fx, want, want);
    ck_assert_int_eq(chmod(fx.manifest, 0644), 0);
    ck_assert_int_eq(chown(fx.dir, 0, 54321), 0);
    ck_assert_int_eq(chmod(fx.dir, 0775), 0);
    snprintf(want, sizeof want, "%s: the folder is group-writable without the sticky bit "
             "(mode 0775) and gid 54321 may have members", fx.dir);
    expect_untrusted(&fx, want, want);
    ck_assert_int_eq(chmod(fx.dir, 01775), 0); /* sticky: members cannot replace our files */
    ck_assert_int_eq(check(&fx, 0, &err), LOOM_OK);
    fx_done(&fx);
}
END_TEST

START_TEST(symlink_out_of_folder_is_refused_even_when_allowed)
{
    fixture fx;
    fx_init(&fx);
    char outside[300];
    snprintf(outside, sizeof outside, "%s/elsewhere.so", fx.root);
    write_file(outside, "elsewhere\n", 0755);
    ck_assert_int_eq(unlink(fx.binary), 0);
    ck_assert_int_eq(symlink("../elsewhere.so", fx.binary), 0);
    char want[2048];
    snprintf(want, sizeof want, "untrusted plugin org.test.trusty: %s: the binary resolves to "
             "%s, outside the plugin folder %s", fx.binary, outside, fx.dir);
    for (int allow = 0; allow <= 1; allow++) {
        loom_error err;
        ck_assert_int_eq(check(&fx, allow, &err), LOOM_EPLUGIN);
        ck_assert_msg(strstr(err.message, want) != NULL, "message \"%s\" lacks \"%s\"",
                      err.message, want);
    }
    fx_done(&fx);
}
END_TEST

START_TEST(symlink_to_nothing_is_refused)
{
    fixture fx;
    fx_init(&fx);
    ck_assert_int_eq(unlink(fx.binary), 0);
    ck_assert_int_eq(symlink("gone.so", fx.binary), 0);
    loom_error err;
    ck_assert_int_eq(check(&fx, 1, &err), LOOM_EPLUGIN);
    ck_assert_msg(strstr(err.message, "the binary cannot be resolved") &&
                      strstr(err.message, "a symlink to nothing"),
                  "%s", err.message);
    fx_done(&fx);
}
END_TEST

START_TEST(symlink_inside_folder_is_followed)
{
    fixture fx;
    fx_init(&fx);
    char sub[340], real[400];
    snprintf(sub, sizeof sub, "%s/lib", fx.dir);
    ck_assert_int_eq(mkdir(sub, 0755), 0);
    ck_assert_int_eq(chmod(sub, 0755), 0);
    snprintf(real, sizeof real, "%s/loom-trusty.so.1", sub);
    write_file(real, "versioned\n", 0755);
    ck_assert_int_eq(unlink(fx.binary), 0);
    ck_assert_int_eq(symlink("lib/loom-trusty.so.1", fx.binary), 0);
    loom_error err;
    ck_assert_int_eq(check(&fx, 0, &err), LOOM_OK);
    /* The resolved file and its folder are checked, not the link. */
    ck_assert_int_eq(chmod(real, 0646), 0);
    char want[2048];
    snprintf(want, sizeof want, "%s: the binary is world-writable (mode 0646)", real);
    expect_untrusted(&fx, want, want);
    ck_assert_int_eq(chmod(real, 0755), 0);
    ck_assert_int_eq(chmod(sub, 0777), 0);
    snprintf(want, sizeof want, "%s: the folder is world-writable without the sticky bit", sub);
    expect_untrusted(&fx, want, want);
    fx_done(&fx);
}
END_TEST

START_TEST(check_dirs_walks_up_to_root)
{
    loom_error err = {0, ""};
    ck_assert_int_eq(loom_trust_check_dirs("/", &err), LOOM_OK);
    /* /tmp is world-writable with the sticky bit on every sane system. */
    struct stat st;
    ck_assert_int_eq(stat("/tmp", &st), 0);
    if ((st.st_mode & 01002) == 01002)
        ck_assert_int_eq(loom_trust_check_dirs("/tmp", &err), LOOM_OK);
    ck_assert_int_eq(loom_trust_check_dirs("/no/such/folder", &err), LOOM_EPLUGIN);
    ck_assert_msg(strstr(err.message, "/no/such/folder: cannot check the folder") != NULL,
                  "%s", err.message);
    ck_assert_int_eq(loom_trust_check_file("/tmp", "manifest", &err), LOOM_EPLUGIN);
    ck_assert_msg(strstr(err.message, "/tmp: the manifest is not a regular file") != NULL, "%s",
                  err.message);
}
END_TEST

START_TEST(registry_skips_untrusted_unless_allowed)
{
    fixture fx;
    fx_init(&fx);
    ck_assert_int_eq(chmod(fx.manifest, 0666), 0);
    loom_error err = {0, ""};
    loom_registry *reg = loom_registry_new();
    ck_assert_int_eq(loom_registry_add_dir(reg, fx.root, &err), LOOM_OK);
    ck_assert_ptr_null(loom_registry_find(reg, NULL, "org.test.trusty"));
    loom_registry_free(reg);

    reg = loom_registry_new();
    loom_registry_set_trust(reg, 1);
    ck_assert_int_eq(loom_registry_add_dir(reg, fx.root, &err), LOOM_OK);
    ck_assert_ptr_nonnull(loom_registry_find(reg, "ranker", "trusty"));
    loom_registry_free(reg);

    /* Escaping the folder is never allowed. */
    ck_assert_int_eq(chmod(fx.manifest, 0644), 0);
    ck_assert_int_eq(unlink(fx.binary), 0);
    ck_assert_int_eq(symlink("/bin/sh", fx.binary), 0);
    reg = loom_registry_new();
    loom_registry_set_trust(reg, 1);
    ck_assert_int_eq(loom_registry_add_dir(reg, fx.root, &err), LOOM_OK);
    ck_assert_ptr_null(loom_registry_find(reg, NULL, "org.test.trusty"));
    loom_registry_free(reg);
    fx_done(&fx);
}
END_TEST

START_TEST(cli_names_the_file_and_honours_the_flag)
{
    fixture fx;
    fx_init(&fx);
    ck_assert_int_eq(chmod(fx.manifest, 0666), 0);
    char cmd[1024];
    char *out = NULL;
    snprintf(cmd, sizeof cmd,
             "LOOM_PLUGIN_PATH= '%s' plan --quiet --iterations 1 --plugin-path '%s' "
             "--use ranker=trusty",
             loom_test_bin("bin/loom"), fx.root);
    ck_assert_int_eq(loom_test_run(cmd, &out), 2);
    char want[2048];
    snprintf(want, sizeof want, "untrusted plugin org.test.trusty: %s: the manifest is "
             "world-writable (mode 0666)", fx.manifest);
    ck_assert_msg(strstr(out, want) != NULL, "output lacks \"%s\":\n%s", want, out);
    ck_assert_msg(strstr(out, "no ranker plugin \"trusty\"") != NULL, "%s", out);
    free(out);

    /* Allowed, the plugin gets to the loader, which rejects the fake binary. */
    snprintf(cmd, sizeof cmd,
             "LOOM_PLUGIN_PATH= '%s' plan --quiet --iterations 1 --plugin-path '%s' "
             "--use ranker=trusty --allow-untrusted-plugins",
             loom_test_bin("bin/loom"), fx.root);
    ck_assert_int_eq(loom_test_run(cmd, &out), 3);
    ck_assert_msg(strstr(out, "untrusted plugin") == NULL, "%s", out);
    ck_assert_msg(strstr(out, "loom-trusty.so: cannot load") != NULL, "%s", out);
    free(out);
    fx_done(&fx);
}
END_TEST

/* The trust suite: rules, then the registry and the CLI; with `root` only
 * the checks that need root to chown (owner and group rules). */
static Suite *suite(int root)
{
    Suite *s = suite_create(root ? "trust_root" : "trust");
    TCase *tc = tcase_create("rules");
    if (root) {
        tcase_add_test(tc, files_of_another_user_are_refused);
        tcase_add_test(tc, group_writable_files_of_a_shared_group_are_refused);
        suite_add_tcase(s, tc);
        return s;
    }
    tcase_add_test(tc, private_plugin_is_trusted);
    tcase_add_test(tc, world_writable_manifest_is_refused);
    tcase_add_test(tc, world_writable_binary_is_refused);
    tcase_add_test(tc, world_writable_folder_needs_sticky_bit);
    tcase_add_test(tc, world_writable_parent_folder_is_refused);
    tcase_add_test(tc, symlink_out_of_folder_is_refused_even_when_allowed);
    tcase_add_test(tc, symlink_to_nothing_is_refused);
    tcase_add_test(tc, symlink_inside_folder_is_followed);
    tcase_add_test(tc, check_dirs_walks_up_to_root);
    suite_add_tcase(s, tc);
    TCase *tr = tcase_create("registry");
    tcase_set_timeout(tr, 120);
    tcase_add_test(tr, registry_skips_untrusted_unless_allowed);
    tcase_add_test(tr, cli_names_the_file_and_honours_the_flag);
    suite_add_tcase(s, tr);
    return s;
}

/* `test_trust --root` runs the owner and group checks, which chown files to
 * other users: as anybody but root it reports SKIP (exit 77, ctest's
 * SKIP_RETURN_CODE) instead of passing without checking. */
int main(int argc, char **argv)
{
    int root = argc > 1 && strcmp(argv[1], "--root") == 0;
    if (root && geteuid() != 0) {
        fprintf(stderr, "test_trust --root: SKIP: the owner and group checks need root to "
                        "chown files to other users\n");
        return 77;
    }
    return loom_test_main(suite(root));
}
