#!/usr/bin/env python3
"""Plan pipeline-parallel training iterations from Python through libloom.

Only the standard library is used: ctypes loads libloom and calls its
stable C API (loom/api.h, documented in docs/embedding.md).

As a library:

    from loom_client import Planner
    with Planner(model="vlm-s", parallel="tp=4,pp=4,mb=8") as planner:
        plan = planner.plan([{"text_tokens": 812, "images": 3}, ...])
        print(plan.makespan_ms, plan.actions(rank=0)[:4])
        plan.close()

As a script it plays a training loop: while "step" k trains, the loader
prefetches the samples of step k + 1 and Loom plans that iteration, so the
plan is ready when the step starts.
"""

import argparse
import ctypes
import ctypes.util
import json
import os
import random
import sys

LOOM_ERROR_MSG_BYTES = 512


class LoomError(Exception):
    """A failed libloom call: `code` is the loom_status, `message` its text."""

    def __init__(self, code, message):
        super().__init__("%s (status %d)" % (message, code))
        self.code = code
        self.message = message


class _Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("message", ctypes.c_char * LOOM_ERROR_MSG_BYTES)]


class _Sample(ctypes.Structure):
    _fields_ = [
        ("text_tokens", ctypes.c_int64),
        ("images", ctypes.c_int32),
        ("microbatch", ctypes.c_int32),
        ("video_seconds", ctypes.c_double),
        ("audio_seconds", ctypes.c_double),
    ]


class _Options(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("manifest", ctypes.c_char_p),
        ("model", ctypes.c_char_p),
        ("cluster", ctypes.c_char_p),
        ("parallel", ctypes.c_char_p),
        ("memory_cap_bytes", ctypes.c_double),
        ("seed", ctypes.c_uint64),
        ("has_seed", ctypes.c_int32),
        ("reserved", ctypes.c_int32),
    ]


def _default_library():
    """libloom from $LOOM_LIB, the build tree next to this file, or the system."""
    env = os.environ.get("LOOM_LIB")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    built = os.path.join(here, "..", "..", "build", "lib", "libloom.so")
    if os.path.exists(built):
        return built
    found = ctypes.util.find_library("loom")
    if found:
        return found
    raise LoomError(-4, "libloom not found: set LOOM_LIB or pass lib=")


def _load(path):
    """Loads libloom and declares the signatures this client uses."""
    lib = ctypes.CDLL(path)
    P, E = ctypes.c_void_p, ctypes.POINTER(_Error)
    sigs = {
        "loom_version": (ctypes.c_char_p, []),
        "loom_planner_open": (ctypes.c_int, [ctypes.POINTER(_Options), ctypes.POINTER(P), E]),
        "loom_planner_close": (None, [P]),
        "loom_planner_plan": (ctypes.c_int, [P, ctypes.POINTER(_Sample), ctypes.c_int32,
                                             ctypes.POINTER(P), E]),
        "loom_planner_plan_json": (ctypes.c_int, [P, ctypes.c_char_p, ctypes.POINTER(P), E]),
        "loom_result_makespan_ms": (ctypes.c_double, [P]),
        "loom_result_bubble_ratio": (ctypes.c_double, [P]),
        "loom_result_mfu": (ctypes.c_double, [P]),
        "loom_result_plan_time_ms": (ctypes.c_double, [P]),
        "loom_result_ranks": (ctypes.c_int32, [P]),
        "loom_result_peak_bytes": (ctypes.c_int64, [P, ctypes.c_int32]),
        "loom_result_plan_json": (P, [P, E]),
        "loom_result_write": (ctypes.c_int, [P, ctypes.c_char_p, E]),
        "loom_result_free": (None, [P]),
        "loom_free": (None, [P]),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    return lib


def _text(s):
    return None if s is None else s.encode()


class Plan:
    """One planned iteration. Free it with close() (or use `with`)."""

    def __init__(self, lib, handle):
        self._lib = lib
        self._handle = ctypes.c_void_p(handle)
        self._json = None

    def _live(self):
        if not self._handle:
            raise LoomError(-1, "plan already closed")
        return self._handle

    @property
    def makespan_ms(self):
        """Predicted iteration time in milliseconds."""
        return self._lib.loom_result_makespan_ms(self._live())

    @property
    def bubble_ratio(self):
        """Idle share of the ranks over the iteration, 0..1."""
        return self._lib.loom_result_bubble_ratio(self._live())

    @property
    def mfu(self):
        """Model FLOPs utilisation, or None when unknown."""
        v = self._lib.loom_result_mfu(self._live())
        return None if v < 0 else v

    @property
    def plan_time_ms(self):
        """Wall time Loom spent planning, in milliseconds."""
        return self._lib.loom_result_plan_time_ms(self._live())

    @property
    def ranks(self):
        return self._lib.loom_result_ranks(self._live())

    def peak_bytes(self, rank):
        """Predicted peak memory of `rank` in bytes."""
        return self._lib.loom_result_peak_bytes(self._live(), rank)

    def to_json(self):
        """The plan as plan.json (a dict): partition, stages, rank_actions, metrics."""
        if self._json is None:
            err = _Error()
            ptr = self._lib.loom_result_plan_json(self._live(), ctypes.byref(err))
            if not ptr:
                raise LoomError(err.code, err.message.decode(errors="replace"))
            try:
                self._json = json.loads(ctypes.string_at(ptr).decode())
            finally:
                self._lib.loom_free(ptr)
        return self._json

    def actions(self, rank):
        """The runtime actions of one rank, in order: dicts whose "action" is
        forward_stage, backward_stage, isend, irecv, wait_isend or wait_irecv
        (fields in docs/outputs.md)."""
        for entry in self.to_json()["rank_actions"]:
            if entry["rank"] == rank:
                return entry["actions"]
        raise LoomError(-1, "no rank %d in this plan" % rank)

    def write(self, directory):
        """Writes plan.json, trace.json, schedule.csv, timeline.svg, summary.txt, report.html."""
        err = _Error()
        rc = self._lib.loom_result_write(self._live(), _text(directory), ctypes.byref(err))
        if rc != 0:
            raise LoomError(rc, err.message.decode(errors="replace"))

    def close(self):
        if self._handle:
            self._lib.loom_result_free(self._handle)
            self._handle = ctypes.c_void_p()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Planner:
    """A Loom planner: a manifest's plugins and a problem, opened once.

    Not thread-safe: use one planner per thread.
    """

    def __init__(self, manifest=None, model=None, cluster=None, parallel=None,
                 memory_cap_bytes=0.0, seed=None, lib=None):
        self._lib = _load(lib or _default_library())
        opts = _Options()
        opts.struct_size = ctypes.sizeof(_Options)
        opts.manifest = _text(manifest)
        opts.model = _text(model)
        opts.cluster = _text(cluster)
        opts.parallel = _text(parallel)
        opts.memory_cap_bytes = float(memory_cap_bytes)
        opts.has_seed = 0 if seed is None else 1
        opts.seed = 0 if seed is None else int(seed)
        handle = ctypes.c_void_p()
        err = _Error()
        rc = self._lib.loom_planner_open(ctypes.byref(opts), ctypes.byref(handle),
                                         ctypes.byref(err))
        if rc != 0:
            raise LoomError(rc, err.message.decode(errors="replace"))
        self._handle = handle

    @property
    def version(self):
        return self._lib.loom_version().decode()

    def plan(self, samples):
        """Plans one iteration from sample metadata: a list of dicts with
        text_tokens, images, video_seconds, audio_seconds and optionally
        microbatch (-1 or absent: Loom splits the samples evenly)."""
        if not self._handle:
            raise LoomError(-1, "planner already closed")
        arr = (_Sample * len(samples))()
        for i, s in enumerate(samples):
            arr[i].text_tokens = int(s.get("text_tokens", 0))
            arr[i].images = int(s.get("images", 0))
            arr[i].microbatch = int(s.get("microbatch", -1))
            arr[i].video_seconds = float(s.get("video_seconds", 0.0))
            arr[i].audio_seconds = float(s.get("audio_seconds", 0.0))
        out = ctypes.c_void_p()
        err = _Error()
        rc = self._lib.loom_planner_plan(self._handle, arr, len(samples), ctypes.byref(out),
                                         ctypes.byref(err))
        if rc != 0:
            raise LoomError(rc, err.message.decode(errors="replace"))
        return Plan(self._lib, out.value)

    def plan_json(self, iteration):
        """The same from one workload JSON Lines record (str or dict)."""
        if not self._handle:
            raise LoomError(-1, "planner already closed")
        text = iteration if isinstance(iteration, str) else json.dumps(iteration)
        out = ctypes.c_void_p()
        err = _Error()
        rc = self._lib.loom_planner_plan_json(self._handle, text.encode(), ctypes.byref(out),
                                              ctypes.byref(err))
        if rc != 0:
            raise LoomError(rc, err.message.decode(errors="replace"))
        return Plan(self._lib, out.value)

    def close(self):
        if self._handle:
            self._lib.loom_planner_close(self._handle)
            self._handle = ctypes.c_void_p()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def prefetch(rng, batch_size):
    """What a data loader knows about the next batch before it is loaded:
    per-sample metadata of an interleaved image-text dataset."""
    batch = []
    for _ in range(batch_size):
        images = rng.choice([0, 1, 1, 2, 3, 5])
        batch.append({"text_tokens": rng.randint(64, 2048), "images": images})
    return batch


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", help="path of libloom.so (default: $LOOM_LIB, ../../build/lib)")
    ap.add_argument("--manifest", help="planner manifest (default: megatron-1f1b)")
    ap.add_argument("--model", default="vlm-s")
    ap.add_argument("--cluster", default="h800")
    ap.add_argument("--parallel", default="tp=4,pp=4,mb=8")
    ap.add_argument("--steps", type=int, default=3, help="training steps to play")
    ap.add_argument("--batch", type=int, default=32, help="samples per step")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", help="write the outputs of the last plan into this folder")
    args = ap.parse_args(argv)

    rng = random.Random(args.seed)
    with Planner(manifest=args.manifest, model=args.model, cluster=args.cluster,
                 parallel=args.parallel, seed=args.seed, lib=args.lib) as planner:
        print("libloom %s, model %s, %s" % (planner.version, args.model, args.parallel))
        upcoming = prefetch(rng, args.batch)
        ready = planner.plan(upcoming)
        for step in range(args.steps):
            plan, samples = ready, upcoming
            # The step runs with `plan`; meanwhile the loader prefetches
            # the next batch and Loom plans it.
            if step + 1 < args.steps:
                upcoming = prefetch(rng, args.batch)
                ready = planner.plan(upcoming)
            first = ["%s %s%d" % (a["action"], a.get("kind", ""), a["microbatch"])
                     for a in plan.actions(0)[:3]]
            peak = max(plan.peak_bytes(r) for r in range(plan.ranks)) / 2**30
            print("step %d: %d samples, %d images -> makespan %.3f ms, bubble %.1f %%, "
                  "peak %.2f GiB, planned in %.1f ms; rank 0 starts with %s"
                  % (step, len(samples), sum(s["images"] for s in samples), plan.makespan_ms,
                     100 * plan.bubble_ratio, peak, plan.plan_time_ms, ", ".join(first)))
            if args.out and step + 1 == args.steps:
                plan.write(args.out)
                print("wrote %s" % args.out)
            plan.close()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except LoomError as e:
        print("loom_client: %s" % e, file=sys.stderr)
        sys.exit(2)
