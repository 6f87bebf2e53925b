/*
 * trust.h - whether Loom may load a plugin's files (internal, not
 * installed). Loading a plugin runs its code with the rights of the user
 * running Loom, so the files that decide which code runs must not be
 * changeable by anybody else. Model in docs/security.md.
 *
 * Rules, for a plugin found on disk (static, in-process plugins load no
 * file and are not checked):
 *   1. the manifest and the binary are regular files, not world-writable,
 *      and owned by root or by the user running Loom (effective uid);
 *   2. the plugin folder is owned by root or by that user, and neither it
 *      nor any folder above it (up to /) is world-writable without the
 *      sticky bit;
 *   3. the binary, after resolving symlinks, lies inside the plugin folder
 *      (the manifest parser already rejects "..", "/" and absolute paths).
 * --allow-untrusted-plugins (allow_untrusted = 1) waives rules 1 and 2,
 * never rule 3. A binary that does not exist yet is not checked (loading
 * it fails later with its own error).
 *
 * Ownership: nothing here allocates for the caller; err is caller storage.
 */
#ifndef LOOM_TRUST_H
#define LOOM_TRUST_H

#include "ctx.h"

/* Checks the plugin described by `m` (its manifest_path, dir and
 * binary_path, all absolute) against the rules above. Returns LOOM_OK, or
 * LOOM_EPLUGIN with a message naming the plugin id, the offending file or
 * folder and why, e.g. "untrusted plugin org.x.y: /p/x/manifest.json: the
 * manifest is world-writable (mode 0666); pass --allow-untrusted-plugins to
 * load it anyway". */
int loom_trust_check_plugin(const loom_plugin_manifest *m, int allow_untrusted,
                            loom_error *err);

/* Rule 1 for one file (`what` names it in messages: "manifest",
 * "binary"): LOOM_OK or LOOM_EPLUGIN naming `path` and why. */
int loom_trust_check_file(const char *path, const char *what, loom_error *err);

/* Rule 2 for the folder `dir` (absolute, symlinks resolved) and every
 * folder above it: LOOM_OK or LOOM_EPLUGIN naming the folder and why. */
int loom_trust_check_dirs(const char *dir, loom_error *err);

#endif
