#!/usr/bin/env python3
"""golden_outputs.py SOURCE_DIR LOOM_BINARY [--write] - the plans and
output files of the shipped manifests are byte for byte what
tests/golden/outputs.sha256 records.

Every examples/manifests/*.json is planned in deterministic mode
(--evaluations 30, the manifest's own seed; --iterations 2 for a model) on the default
model preset vlm-s and cluster h800 (dualpipe-v at vpp 2, which vlm-s's own
config lacks); megatron-1f1b and megatron-balanced also on llama3-8b
(tp=8, pp=4, vpp=2, a generated text workload), which fills the torchtitan
and Megatron exports; every examples/stage-times/*.json with megatron-1f1b
(with the zb-v interleaver when a V or zig-zag placement is given); and
megatron-1f1b and pipeweaver once more with --isolate, whose plans come back
from a forked child and must hash the same as the in-process ones. Each
case's files (DIR/iter-NNN/*) and its `loom plan --json` output
(stdout.json) are hashed with SHA-256.

Normalised before hashing, because they hold the wall-clock planning time:
  - stdout.json: the value of "plan_time_ms" becomes #;
  - summary.txt: the number on the "  plan time" line becomes #;
  - report.html: the number after the "plan time" key becomes #.
No output holds a path: the cases name their inputs relative to the source
folder (their working directory), and --write plans every case twice, into
two different temporary folders, and records nothing when a file differs.

The hashes are of this build's arithmetic: a compiler, libm or flag change
that moves a last bit changes them, and the failure says which files moved;
--write records the current ones (after checking that two runs agree).
Exit 0 when every hash matches; 1 listing every changed, missing and extra
file with the command that plans its case.
"""
import glob
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile

GOLDEN = "tests/golden/outputs.sha256"
BASE = ["plan", "--quiet", "--json", "--evaluations", "30"]
TWO = ["--iterations", "2"]  # model cases: two iterations each
LLAMA = TWO + ["--model", "llama3-8b", "--parallel", "tp=8,pp=4,vpp=2,mb=8", "--generate", "text"]


def cases(src):
    """(name, args) of every case, in a fixed order."""
    out = []
    for path in sorted(glob.glob(os.path.join(src, "examples/manifests/*.json"))):
        name = os.path.basename(path)[:-5]
        extra = ["--parallel", "vpp=2"] if name == "dualpipe-v" else []
        out.append(("%s.vlm-s" % name, ["--manifest", "examples/manifests/%s.json" % name]
                    + TWO + extra))
    for name in ("megatron-1f1b", "megatron-balanced"):
        out.append(("%s.llama3-8b" % name,
                    ["--manifest", "examples/manifests/%s.json" % name] + LLAMA))
    for path in sorted(glob.glob(os.path.join(src, "examples/stage-times/*.json"))):
        with open(path) as fh:
            placed = json.load(fh).get("placement", "loop") != "loop"
        base = os.path.basename(path)[:-5]
        out.append(("stage-times.%s" % base,
                    ["--manifest", "examples/manifests/megatron-1f1b.json",
                     "--stage-times", "examples/stage-times/%s.json" % base]
                    + (["--use", "interleaver=zb-v"] if placed else [])))
    for name in ("megatron-1f1b", "pipeweaver"):
        out.append(("%s.vlm-s.isolate" % name,
                    ["--manifest", "examples/manifests/%s.json" % name] + TWO + ["--isolate"]))
    return out


def normalise(rel, data):
    """The bytes of output `rel` with the wall-clock figures blanked."""
    base = os.path.basename(rel)
    if base == "stdout.json":
        return re.sub(rb'("plan_time_ms": )[-0-9.eE+]+', rb"\1#", data)
    if base == "summary.txt":
        return re.sub(rb"(\n  plan time +)[0-9.]+", rb"\1#", data)
    if base == "report.html":
        return re.sub(rb'(plan time</span><span class="v">)[0-9.]+', rb"\1#", data)
    return data


def command(loom, args, out):
    return [loom] + BASE + args + ["--out", out]


def run_case(loom, src, tmp, name, args):
    """{relative path: sha256} of one case, or a string saying why it failed."""
    out = os.path.join(tmp, name)
    r = subprocess.run(command(loom, args, out), capture_output=True, cwd=src,
                       env=dict(os.environ, LOOM_PLUGIN_PATH=""))
    if r.returncode != 0:
        return "exit %d: %s" % (r.returncode, r.stderr.decode(errors="replace").strip()[-400:])
    files = {name + "/stdout.json": r.stdout}
    for root, _, names in os.walk(out):
        for n in names:
            path = os.path.join(root, n)
            with open(path, "rb") as fh:
                files[name + "/" + os.path.relpath(path, out)] = fh.read()
    return {rel: hashlib.sha256(normalise(rel, data)).hexdigest() for rel, data in files.items()}


def run_all(loom, src, tmp):
    """({relative path: sha256}, [failure]) of every case."""
    hashes, fails = {}, []
    for name, args in cases(src):
        got = run_case(loom, src, tmp, name, args)
        if isinstance(got, str):
            fails.append("%s: loom plan failed (%s)\n  $ cd %s && %s" %
                         (name, got, src, " ".join(command("loom", args, "OUT"))))
        else:
            hashes.update(got)
    return hashes, fails


def read_golden(path):
    want = {}
    with open(path) as fh:
        for line in fh:
            if line.strip() and not line.startswith("#"):
                digest, rel = line.split(None, 1)
                want[rel.strip()] = digest
    return want


def isolate_agrees(hashes):
    """Failures where an --isolate case's files differ from its in-process twin."""
    fails = []
    for rel, digest in sorted(hashes.items()):
        case, _, tail = rel.partition("/")
        if case.endswith(".isolate"):
            twin = case[:-len(".isolate")] + "/" + tail
            if hashes.get(twin) != digest:
                fails.append("%s differs from %s (isolated and in-process plans differ)"
                             % (rel, twin))
    return fails


def write(src, loom):
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        first, fails = run_all(loom, src, a)
        second, fails2 = run_all(loom, src, b)
    fails += fails2 + isolate_agrees(first)
    fails += ["%s differs between two runs" % rel for rel in sorted(first)
              if second.get(rel) != first[rel]]
    if fails:
        print("\n".join("FAIL: " + f for f in fails))
        return 1
    with open(os.path.join(src, GOLDEN), "w") as fh:
        fh.write("# sha256 of the normalised outputs of tools/checks/golden_outputs.py\n")
        for rel in sorted(first):
            fh.write("%s  %s\n" % (first[rel], rel))
    print("wrote %s: %d files of %d cases" % (GOLDEN, len(first), len(cases(src))))
    return 0


def check(src, loom):
    want = read_golden(os.path.join(src, GOLDEN))
    with tempfile.TemporaryDirectory() as tmp:
        got, fails = run_all(loom, src, tmp)
    fails += isolate_agrees(got)
    args = dict(cases(src))
    for rel in sorted(set(want) | set(got)):
        case = rel.split("/", 1)[0]
        if case not in args:
            fails.append("%s: recorded, but no case %s is planned any more" % (rel, case))
            continue
        how = "  $ cd %s && %s" % (src, " ".join(command("loom", args[case], "OUT")))
        if rel not in got and case in {r.split("/", 1)[0] for r in got}:
            fails.append("%s: missing (recorded %s)\n%s" % (rel, want[rel], how))
        elif rel not in want:
            fails.append("%s: written but not recorded (sha256 %s)\n%s" % (rel, got[rel], how))
        elif rel in got and got[rel] != want[rel]:
            fails.append("%s: changed: sha256 %s, recorded %s\n%s" %
                         (rel, got[rel], want[rel], how))
    if fails:
        print("\n".join("FAIL: " + f for f in fails))
        print("%d failure(s); if the change is intended, record the new outputs with\n"
              "  %s %s %s %s --write" % (len(fails), sys.executable, os.path.abspath(__file__),
                                          src, loom))
        return 1
    print("ok: %d files of %d cases match %s" % (len(got), len(args), GOLDEN))
    return 0


def main():
    if len(sys.argv) not in (3, 4) or (len(sys.argv) == 4 and sys.argv[3] != "--write"):
        print("usage: golden_outputs.py SOURCE_DIR LOOM_BINARY [--write]", file=sys.stderr)
        return 2
    src, loom = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    return write(src, loom) if len(sys.argv) == 4 else check(src, loom)


if __name__ == "__main__":
    sys.exit(main())
