#!/usr/bin/env python3
"""core_deps.py [--check] OBJECT... | --build DIR --src DIR - the call graph between core source files: file A
depends on file B when A calls a function B defines (read with nm from the
object files). Prints the number of files, the dependency levels (longest
chain, cycles counted as one level) and every cycle (strongly connected
set of more than one file). With --check it exits 1 when there is a
cycle."""
import glob
import os
import subprocess
import sys


def symbols(obj):
    out = subprocess.run(["nm", obj], capture_output=True, text=True,
                         check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            undefined.add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBR":
            defined.add(parts[2])
    return defined, undefined


def main():
    args = sys.argv[1:]
    check = "--check" in args
    args = [a for a in args if a != "--check"]
    if args[:1] == ["--build"]:  # the core objects of a build tree whose source still exists
        build, src = args[1], args[3]
        objs = []
        for o in sorted(glob.glob(os.path.join(build, "core/CMakeFiles/loom_core_*.dir/*/*.o"))):
            layer = os.path.basename(os.path.dirname(o))
            if os.path.exists(os.path.join(src, "core", layer, os.path.basename(o)[:-2])):
                objs.append(o)
        if len(objs) < 10:
            print("core_deps: found %d core objects under %s, expected the whole core"
                  % (len(objs), build))
            sys.exit(1)
    else:
        objs = args
    name = {o: os.path.basename(o).replace(".c.o", ".c") for o in objs}
    owner, uses = {}, {}
    for o in objs:
        d, u = symbols(o)
        for s in d:
            owner[s] = o
        uses[o] = u
    graph = {o: sorted({owner[s] for s in uses[o] if s in owner and owner[s] != o})
             for o in objs}
    # Tarjan's strongly connected components.
    index, low, stack, on, sccs = {}, {}, [], set(), []
    counter = [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            sccs.append(comp)

    sys.setrecursionlimit(10000)
    for v in objs:
        if v not in index:
            strong(v)
    comp_of = {v: i for i, c in enumerate(sccs) for v in c}
    level = {}
    for i, comp in enumerate(sccs):  # Tarjan emits sinks first
        deps = {comp_of[w] for v in comp for w in graph[v]} - {i}
        level[i] = 1 + max((level[j] for j in deps), default=0)
    cycles = [sorted(name[v] for v in c) for c in sccs if len(c) > 1]
    print("%d files, %d dependency levels, %d cycles"
          % (len(objs), max(level.values(), default=0), len(cycles)))
    for c in cycles:
        print("  cycle: " + ", ".join(c))
    if check and cycles:
        sys.exit(1)


if __name__ == "__main__":
    main()
