#!/usr/bin/env python3
"""check_structure.py SRC_DIR [--levels] - checks the layering rules that
the build alone does not state in one place, and prints what it measured.

Rules (exit 1 naming every violation):
  core     every quoted #include of a core file resolves in its own layer or
           a layer below (base < graph < problem < cost < host < engine < outputs
           < run); no include cycle among core files;
  public   every public header (core/include/loom/**.h) names its layer in a
           "Layer: NAME" line; a core file, or a public header, includes
           only public headers of its own layer and the layers below;
  tools    tools/loom, tools/ab and tools/progress include, in quotes, only
           their own files, and in angle brackets no file that lives in core/
           outside core/include; every <loom/...> they include is a public
           header (core/include, sdk/include, algorithms/*/include);
  python   every libloom function the Python package binds (python/loom)
           is declared in loom/api.h.

--self-test copies the folders the rules read into a temporary tree, breaks
each rule there once and checks that the check then fails naming it.

--levels prints the number of files at the top of core/, the lines of
core/, and the longest chain of #include edges between core files.
"""
import os
import re
import shutil
import sys
import tempfile

LAYERS = ["base", "graph", "problem", "cost", "host", "engine", "outputs", "run"]
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
LAYER_LINE = re.compile(r'^ \* Layer: ([a-z]+)\b', re.M)


def core_files(src, errors):
    """Every .c/.h under core/ (relative path -> layer index or None); a
    public header's layer is the one its "Layer:" line names."""
    out = {}
    core = os.path.join(src, "core")
    for root, _, files in os.walk(core):
        for f in files:
            if f.endswith((".c", ".h")):
                rel = os.path.relpath(os.path.join(root, f), core)
                top = rel.split(os.sep)[0]
                out[rel] = LAYERS.index(top) if top in LAYERS else None
                if top == "include" and f.endswith(".h"):
                    out[rel] = public_layer(os.path.join(root, f), rel, errors)
    return out


def public_layer(path, rel, errors):
    """The layer a public header declares, or None (an error) without one."""
    m = LAYER_LINE.search(open(path, encoding="utf-8").read())
    if not m or m.group(1) not in LAYERS:
        errors.append("core/%s names no layer: expected a line \" * Layer: NAME\" with NAME "
                      "one of %s, found %s" % (rel, ", ".join(LAYERS),
                                             '"%s"' % m.group(1) if m else "none"))
        return None
    return LAYERS.index(m.group(1))


def resolve(src, rel, name, kind, files):
    """The core file an include names (searching the including file's layer,
    then the layers below, then core/include), or None for other headers."""
    core = os.path.join(src, "core")
    if kind == "<":
        cand = os.path.join("include", name)
        return cand if cand in files else None
    layer = rel.split(os.sep)[0]
    order = [layer] + [l for l in reversed(LAYERS) if l != layer]
    for l in order:
        cand = os.path.join(l, name)
        if cand in files:
            return cand
    return name if name in files else None  # a flat core/


def check_core(src, errors):
    files = core_files(src, errors)
    graph = {}
    for rel, layer in files.items():
        text = open(os.path.join(src, "core", rel), encoding="utf-8").read()
        deps = []
        for kind, name in INCLUDE.findall(text):
            dep = resolve(src, rel, name, kind, files)
            if dep is None:
                continue
            deps.append(dep)
            dl = files[dep]
            if layer is not None and dl is not None and dl > layer:
                errors.append("core/%s (layer %s) includes %s of the higher layer %s"
                              % (rel, LAYERS[layer], name, LAYERS[dl]))
        graph[rel] = deps
    # cycles and longest chain (DFS with colours)
    state, depth = {}, {}

    def visit(n, stack):
        state[n] = 1
        best = 0
        for d in graph.get(n, []):
            if state.get(d) == 1:
                cyc = stack[stack.index(d):] + [d] if d in stack else [n, d]
                errors.append("core include cycle: " + " -> ".join(cyc))
                continue
            if state.get(d) != 2:
                visit(d, stack + [d])
            best = max(best, depth.get(d, 0) + 1)
        state[n] = 2
        depth[n] = best

    for n in sorted(graph):
        if n not in state:
            visit(n, [n])
    return files, depth


def check_tools(src, errors):
    core_internal = set()
    for root, _, fs in os.walk(os.path.join(src, "core")):
        if os.sep + "include" in root + os.sep and "/core/include" in root:
            continue
        core_internal.update(f for f in fs if f.endswith(".h"))
    folders = ("tools/loom", "tools/ab", "tools/progress")
    public = public_headers(src)
    own = set()
    for folder in folders:
        d = os.path.join(src, folder)
        if os.path.isdir(d):
            own.update(os.listdir(d))
    for folder in folders:
        d = os.path.join(src, folder)
        if not os.path.isdir(d):
            continue
        for f in sorted(os.listdir(d)):
            if not f.endswith((".c", ".h")):
                continue
            text = open(os.path.join(d, f), encoding="utf-8").read()
            for kind, name in INCLUDE.findall(text):
                if kind == '"' and name not in own:
                    errors.append("%s/%s includes \"%s\", which is not a file of "
                                  "the tools (%s)" % (folder, f, name, ", ".join(folders)))
                if kind == "<" and os.path.basename(name) in core_internal \
                        and not name.startswith("loom/"):
                    errors.append("%s/%s includes <%s>, a core-internal header"
                                  % (folder, f, name))
                if kind == "<" and name.startswith("loom/") and name not in public:
                    errors.append("%s/%s includes <%s>, expected a public header of "
                                  "core/include, sdk/include or algorithms/*/include"
                                  % (folder, f, name))


def public_headers(src):
    """Every header path (as included, "loom/...") of the public include
    folders: libloom's, the SDK's and the algorithm libraries'."""
    roots = [os.path.join(src, "core", "include"), os.path.join(src, "sdk", "include")]
    algs = os.path.join(src, "algorithms")
    if os.path.isdir(algs):
        roots += [os.path.join(algs, a, "include") for a in sorted(os.listdir(algs))]
    out = set()
    for r in roots:
        for root, _, fs in os.walk(r):
            out.update(os.path.relpath(os.path.join(root, f), r).replace(os.sep, "/")
                       for f in fs if f.endswith(".h"))
    return out


def check_python(src, errors):
    """The package binds only functions of loom/api.h (its ctypes table
    lists each as "loom_name": (restype, argtypes))."""
    api = open(os.path.join(src, "core", "include", "loom", "api.h"), encoding="utf-8").read()
    declared = set(re.findall(r'^LOOM_EXPORT [^(]*\b(loom_[a-z0-9_]+)\(', api, re.M))
    pkg = os.path.join(src, "python", "loom")
    if not os.path.isdir(pkg):
        return
    for f in sorted(os.listdir(pkg)):
        if not f.endswith(".py"):
            continue
        text = open(os.path.join(pkg, f), encoding="utf-8").read()
        for name in sorted(set(re.findall(r'"(loom_[a-z0-9_]+)"\s*:\s*\(', text))):
            if name not in declared:
                errors.append("python/loom/%s binds %s, which loom/api.h does not declare "
                              "(the package uses the embedding API only)" % (f, name))


def check_all(src):
    """Every rule over the tree at src: (errors, files, include depths)."""
    errors = []
    files, depth = check_core(src, errors)
    check_tools(src, errors)
    check_python(src, errors)
    return errors, files, depth


# Each case of --self-test: (what it breaks, file, text replaced, its
# replacement, a part of the message the check must then print).
BREAKS = [
    ("a host file includes the run layer's session header",
     "core/host/host_api.c", '#include "ctx.h"\n',
     '#include "ctx.h"\n#include <loom/sys/session.h>\n',
     "core/host/host_api.c (layer host) includes loom/sys/session.h of the higher layer run"),
    ("a public header includes one of a higher layer",
     "core/include/loom/sys/output.h", "#include <loom/sys/plan.h>\n",
     "#include <loom/sys/plan.h>\n#include <loom/sys/session.h>\n",
     "(layer outputs) includes loom/sys/session.h of the higher layer run"),
    ("a public header names no layer",
     "core/include/loom/sys/json.h", " * Layer: base", " * Level: base",
     "core/include/loom/sys/json.h names no layer"),
    ("the CLI includes a core-internal header",
     "tools/loom/cmd_validate.c", '#include "cli.h"\n', '#include "cli.h"\n#include "pipeline.h"\n',
     "includes \"pipeline.h\", which is not a file of the tools"),
    ("the CLI includes a loom/ header that is not public",
     "tools/loom/cmd_validate.c", '#include "cli.h"\n', '#include "cli.h"\n#include <loom/sys/pipeline.h>\n',
     "includes <loom/sys/pipeline.h>, expected a public header"),
    ("the Python package binds a tooling function",
     "python/loom/_lib.py", '"loom_version":', '"loom_session_open": (None, []),\n    "loom_version":',
     "binds loom_session_open, which loom/api.h does not declare"),
]


def self_test(src):
    """Breaks each rule once in a copy of the tree; 0 when every break fails
    the check with its message and the unbroken copy passes."""
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for part in ("core", "sdk/include", "algorithms", "tools/loom", "tools/ab",
                     "tools/progress", "python/loom"):
            if os.path.isdir(os.path.join(src, part)):
                shutil.copytree(os.path.join(src, part), os.path.join(tmp, part))
        errors = check_all(tmp)[0]
        if errors:
            print("self-test: the unbroken copy fails: %s" % errors[0], file=sys.stderr)
            failures += 1
        for what, rel, old, new, expect in BREAKS:
            path = os.path.join(tmp, rel)
            text = open(path, encoding="utf-8").read()
            if old not in text:
                print("self-test: %s: %s has no %r to replace" % (what, rel, old), file=sys.stderr)
                failures += 1
                continue
            open(path, "w", encoding="utf-8").write(text.replace(old, new, 1))
            errors = check_all(tmp)[0]
            open(path, "w", encoding="utf-8").write(text)
            if not any(expect in e for e in errors):
                print("self-test: %s: expected an error containing %r, found %s"
                      % (what, expect, errors or "none"), file=sys.stderr)
                failures += 1
    print("check_structure self-test: %d of %d broken rules caught"
          % (len(BREAKS) - failures, len(BREAKS)))
    return 1 if failures else 0


def main():
    src = sys.argv[1]
    if "--self-test" in sys.argv:
        return self_test(src)
    errors, files, depth = check_all(src)
    if "--levels" in sys.argv:
        top = [f for f in os.listdir(os.path.join(src, "core"))
               if os.path.isfile(os.path.join(src, "core", f))]
        lines = 0
        for rel in files:
            with open(os.path.join(src, "core", rel), encoding="utf-8") as fh:
                lines += sum(1 for _ in fh)
        print("core: %d files at the top level, %d lines in .c/.h files, "
              "%d include levels" % (len(top), lines,
                                     1 + max(depth.values(), default=0)))
    for e in errors:
        print("check_structure: " + e, file=sys.stderr)
    if errors:
        return 1
    print("check_structure: core layers, public headers' layers, include cycles, tool "
          "includes and the Python bindings ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
