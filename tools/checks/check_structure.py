#!/usr/bin/env python3
"""check_structure.py SRC_DIR [--levels] - checks the layering rules that
the build alone does not state in one place, and prints what it measured.

Rules (exit 1 naming every violation):
  core     every quoted #include of a core file resolves in its own layer or
           a layer below (base < graph < problem < cost < host < engine < outputs
           < run); no include cycle among core files;
  tools    tools/loom, tools/ab and tools/progress include, in quotes, only
           their own files, and in angle brackets no file that
           lives in core/ outside core/include;

--levels prints the number of files at the top of core/, the lines of
core/, and the longest chain of #include edges between core files.
"""
import os
import re
import sys

LAYERS = ["base", "graph", "problem", "cost", "host", "engine", "outputs", "run"]
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def core_files(src):
    """Every .c/.h under core/ (relative path -> layer index or None)."""
    out = {}
    core = os.path.join(src, "core")
    for root, _, files in os.walk(core):
        for f in files:
            if f.endswith((".c", ".h")):
                rel = os.path.relpath(os.path.join(root, f), core)
                top = rel.split(os.sep)[0]
                out[rel] = LAYERS.index(top) if top in LAYERS else None
    return out


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
    files = core_files(src)
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
                errors.append("core/%s includes %s from the higher layer %s"
                              % (rel, name, LAYERS[dl]))
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


def main():
    src = sys.argv[1]
    errors = []
    files, depth = check_core(src, errors)
    check_tools(src, errors)
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
    print("check_structure: core layers, include cycles and tool includes ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
