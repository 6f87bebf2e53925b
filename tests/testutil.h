/* testutil.h - helpers shared by the Check suites. */
#ifndef LOOM_TESTUTIL_H
#define LOOM_TESTUTIL_H
#include <check.h>
#include <stdio.h>

/* Absolute path of a file in the source tree / build tree. */
const char *loom_test_src(const char *rel);
const char *loom_test_bin(const char *rel);

/* Writes `text` to a fresh temporary file and returns its path (static
 * storage per call slot, valid until 16 more calls). */
const char *loom_test_tmpfile(const char *suffix, const char *text);

/* Runs a shell command, capturing stdout+stderr into a malloc'd string;
 * returns the exit status (or -1). */
int loom_test_run(const char *cmd, char **output);

/* Runs this build's `loom <args>` (bin/loom) as loom_test_run does, with
 * AddressSanitizer's SEGV handler off so that a plugin crash reaches the
 * command's own handling in sanitized builds. */
int loom_test_cli(const char *args, char **output);

struct loom_mock_host;
struct loom_plugin_info;

/* A mock host that knows the params of the in-tree plugin `info` (its
 * plugins/<name>/manifest.json, found by id), so params a test does not
 * set take the manifest's defaults as with the real host. Fails the test
 * when the manifest cannot be loaded. */
struct loom_mock_host *loom_test_mock_host(const struct loom_plugin_info *info);

/* Loads the manifest of in-tree plugin `info` into h, replacing the one
 * loaded before (params set on h stay). Fails the test on error. */
void loom_test_mock_manifest(struct loom_mock_host *h, const struct loom_plugin_info *info);

/* Processes alive (not zombies) in process group `pgid`, from /proc. */
int loom_test_group_alive(long pgid);

/* Waits up to `limit_s` seconds until process group `pgid` has no live
 * process; returns 1 when it has none, else 0 after killing them all (0
 * at once, killing nothing, for the caller's own group). */
int loom_test_group_gone(long pgid, double limit_s);

/* The pid of a child of process `parent` (from /proc), or 0 when it has
 * none. */
long loom_test_child_of(long parent);

/* Fails the test unless `text` contains `frag` (quoting the text). */
void loom_test_has(const char *text, const char *frag);

/* The whole file at `path` as a malloc'd string; fails the test when it
 * cannot be read. */
char *loom_test_slurp(const char *path);

struct cJSON;

/* The JSON document in file `path` (cJSON_Delete frees it); fails the test
 * when the file cannot be read or is not JSON. */
struct cJSON *loom_test_json(const char *path);

/* Runs this build's `loom <printf args>` and fails the test unless it
 * exits with `code`; returns the output (malloc'd). */
char *loom_test_cli_expect(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Makes a fresh folder /tmp/loom-<tag>-XXXXXX into dir (size bytes). */
void loom_test_mkdtemp(char *dir, size_t size, const char *tag);

/* Removes a folder and everything in it. */
void loom_test_rmdir(const char *dir);

/* Runs every suite returned by `make_suite` and returns the exit code. */
int loom_test_main(Suite *suite);

#endif
