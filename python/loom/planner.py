"""Planner and Result over libloom's C API."""

from __future__ import annotations

import ctypes
import json
import os
import pathlib
import threading
from collections.abc import Iterable, Mapping
from typing import Any, Dict, List, Optional, Tuple, Union

from . import _lib
from . import _validate as v
from .errors import input_error
from .types import PathLike, PlannerOptions, Sample

SampleLike = Union[Sample, Mapping]


class _PlannerHandle:
    """The C planner, shared by a Planner and its open results.

    A loom_result's plan refers to its planner's problem (model, cluster),
    which loom_result_plan_json and loom_result_write read; so the C planner
    is closed when the Planner is closed and every result from it is too.
    """

    def __init__(self, lib: _lib.Library):
        self.lib = lib
        self.ptr = ctypes.c_void_p()
        self.closing = False
        self.results = 0
        # Serialises calls (one thread at a time); re-entrant, as a result
        # collected while this thread holds it releases through it.
        self.lock = threading.RLock()

    def _free(self) -> None:
        if self.ptr:
            self.lib.c.loom_planner_close(self.ptr)
            self.ptr = ctypes.c_void_p()

    def release(self) -> None:
        with self.lock:
            self.results -= 1
            if self.closing and self.results == 0:
                self._free()

    def close(self) -> None:
        with self.lock:
            self.closing = True
            if self.results == 0:
                self._free()


class Result:
    """One planned iteration.

    The figures are read when the result is made and stay readable after
    close(); plan_json, actions() and write() need the result open. Close it
    with close() or `with`, or let it be garbage-collected.
    """

    def __init__(self, owner: _PlannerHandle, handle: int):
        # `owner` counts this result already (Planner._call).
        lib = owner.lib
        self._lib = lib
        self._owner: Optional[_PlannerHandle] = owner
        self._handle = ctypes.c_void_p(handle)
        self._json: Optional[Dict[str, Any]] = None
        c, h = lib.c, self._handle
        self._makespan_ms = c.loom_result_makespan_ms(h)
        self._bubble_ratio = c.loom_result_bubble_ratio(h)
        self._mfu = c.loom_result_mfu(h)
        self._plan_time_ms = c.loom_result_plan_time_ms(h)
        self._ranks = c.loom_result_ranks(h)
        self._peak = tuple(c.loom_result_peak_bytes(h, r) for r in range(self._ranks))

    @property
    def makespan_ms(self) -> float:
        """Predicted iteration time, ms."""
        return self._makespan_ms

    @property
    def bubble_ratio(self) -> float:
        """Idle share of ranks x makespan, 0 .. 1."""
        return self._bubble_ratio

    @property
    def mfu(self) -> Optional[float]:
        """Model FLOPs utilisation, or None when unknown."""
        return None if self._mfu < 0 else self._mfu

    @property
    def plan_time_ms(self) -> float:
        """Wall time Loom spent planning, ms."""
        return self._plan_time_ms

    @property
    def ranks(self) -> int:
        """Pipeline ranks."""
        return self._ranks

    @property
    def peak_bytes(self) -> Tuple[int, ...]:
        """Predicted peak memory of each rank, bytes (static + activations)."""
        return self._peak

    @property
    def closed(self) -> bool:
        return not self._handle

    def _live(self) -> ctypes.c_void_p:
        if not self._handle:
            raise input_error("result is closed")
        return self._handle

    @property
    def plan_json(self) -> Dict[str, Any]:
        """The plan as plan.json (docs/outputs.md), parsed: metrics,
        partition, stages, rank_actions."""
        if self._json is None:
            err = _lib.CError()
            ptr = self._lib.c.loom_result_plan_json(self._live(), ctypes.byref(err))
            if not ptr:
                err.raise_(-2)
            try:
                self._json = json.loads(ctypes.string_at(ptr).decode())
            finally:
                self._lib.c.loom_free(ptr)
        return self._json

    def actions(self, rank: int) -> List[Dict[str, Any]]:
        """The runtime actions of one rank in order (plan.json's
        rank_actions): dicts whose "action" is forward_stage,
        backward_stage, isend, irecv, wait_isend or wait_irecv. A plan of
        more than 65536 stages lists rank_orders instead (the compact
        form, docs/outputs.md), and this raises LoomInputError."""
        doc = self.plan_json
        if doc["rank_actions"] is None:
            raise input_error("actions: a plan of %d stages is in the compact form, which "
                              "lists each rank's stage order (plan_json[\"rank_orders\"]), "
                              "not its actions" % len(doc["stages"]["rows"]))
        for entry in doc["rank_actions"]:
            if entry["rank"] == rank:
                return entry["actions"]
        raise input_error("rank: expected an integer in [0, %d], found %s"
                          % (self._ranks - 1, v.describe(rank)))

    def write(self, directory: PathLike) -> pathlib.Path:
        """Writes plan.json, trace.json, schedule.csv, timeline.svg,
        summary.txt and report.html into `directory` (created), each
        atomically; returns it. schedule.csv only when PyTorch's schedule
        rules can express the plan (plan.json "schedule_csv" says why not)."""
        path = v.optional_text("directory", directory)
        if path is None:
            raise input_error("directory: expected a string or a path, found null")
        err = _lib.CError()
        rc = self._lib.c.loom_result_write(self._live(), path, ctypes.byref(err))
        self._lib.check(rc, err)
        return pathlib.Path(os.fsdecode(path))

    def close(self) -> None:
        """Frees the C result (idempotent)."""
        if self._handle:
            self._lib.c.loom_result_free(self._handle)
            self._handle = ctypes.c_void_p()
            owner, self._owner = self._owner, None
            if owner is not None:
                owner.release()

    def __enter__(self) -> "Result":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        return ("Result(makespan_ms=%.3f, bubble_ratio=%.4f, mfu=%s, ranks=%d%s)"
                % (self._makespan_ms, self._bubble_ratio,
                   "None" if self.mfu is None else "%.4f" % self.mfu, self._ranks,
                   ", closed" if self.closed else ""))


class Planner:
    """A manifest's plugins and a problem (model, cluster, parallel config),
    opened once; plan() then plans each iteration from its samples.

        with loom.Planner(model="vlm-s", parallel="tp=4,pp=4,mb=8") as p:
            r = p.plan([loom.Sample(812, images=3), loom.Sample(40)])

    Options come as keywords or as `options` (a PlannerOptions or a dict
    with the same keys). `library` is the path of libloom.so (default:
    $LOOM_LIBRARY, beside the installed package or the build tree, then the
    system's). Calls are serialised by a lock; a planner per thread plans
    in parallel.
    """

    def __init__(self, options: Union[PlannerOptions, Mapping, None] = None, *,
                 manifest: Optional[PathLike] = None, model: Optional[PathLike] = None,
                 cluster: Optional[PathLike] = None, parallel: Optional[str] = None,
                 memory_cap_bytes: float = 0.0, seed: Optional[int] = None,
                 library: Optional[PathLike] = None):
        self._owner: Optional[_PlannerHandle] = None
        keywords = PlannerOptions(manifest, model, cluster, parallel, memory_cap_bytes, seed)
        if options is None:
            opts = keywords
        elif keywords != PlannerOptions():
            raise TypeError("Planner: give either options or keyword options, not both")
        elif isinstance(options, PlannerOptions):
            opts = options
        else:
            opts = PlannerOptions.from_dict(options)
        opts.check()
        self.options = opts
        self._lib = _lib.load(library)
        owner = _PlannerHandle(self._lib)
        c = _lib.COptions()
        c.struct_size = ctypes.sizeof(_lib.COptions)
        c.manifest = v.optional_text("manifest", opts.manifest)
        c.model = v.optional_text("model", opts.model)
        c.cluster = v.optional_text("cluster", opts.cluster)
        c.parallel = v.optional_text("parallel", opts.parallel)
        c.memory_cap_bytes = float(opts.memory_cap_bytes)
        c.has_seed = 0 if opts.seed is None else 1
        c.seed = 0 if opts.seed is None else int(opts.seed)
        err = _lib.CError()
        rc = self._lib.c.loom_planner_open(ctypes.byref(c), ctypes.byref(owner.ptr),
                                           ctypes.byref(err))
        self._lib.check(rc, err)
        self._owner = owner

    @property
    def library(self) -> str:
        """The path of the libloom.so in use."""
        return self._lib.path

    @property
    def version(self) -> str:
        """libloom's version, e.g. "0.4.0"."""
        return self._lib.version()

    @property
    def closed(self) -> bool:
        return self._owner is None or self._owner.closing

    def _call(self, fn: Any, *args: Any) -> Result:
        """fn(planner, *args, &out, &err) under the lock; the Result."""
        owner = self._owner
        if owner is None:
            raise input_error("planner is closed")
        out = ctypes.c_void_p()
        err = _lib.CError()
        with owner.lock:
            if owner.closing:
                raise input_error("planner is closed")
            rc = fn(owner.ptr, *args, ctypes.byref(out), ctypes.byref(err))
            if rc == 0:
                owner.results += 1  # released by Result.close()
        self._lib.check(rc, err)
        return Result(owner, out.value)

    def plan(self, samples: Iterable[SampleLike]) -> Result:
        """Plans one iteration of 1 .. 1 000 000 samples: Sample objects or
        dicts with the keys of a workload record's samples (text_tokens,
        images, video_seconds, audio_seconds, microbatch)."""
        fields = v.samples_fields(None, samples)
        n = len(fields)
        arr = (_lib.CSample * n)()
        for i, (text, images, video, audio, mb) in enumerate(fields):
            s = arr[i]
            s.text_tokens, s.images, s.microbatch = text, images, mb
            s.video_seconds, s.audio_seconds = video, audio
        return self._call(self._lib.c.loom_planner_plan, arr, n)

    def plan_json(self, record: Union[Mapping, str, bytes]) -> Result:
        """Plans one workload JSON Lines record, {"samples": [...]}, given
        as a dict (checked here first, with the loader's messages) or as
        JSON text (checked by libloom; messages name "<iteration>")."""
        if isinstance(record, Mapping):
            iteration, fields = v.record_fields(v.RECORD_WHERE, record)
            doc: Dict[str, Any] = {} if iteration is None else {"iteration": iteration}
            doc["samples"] = [_sample_json(f) for f in fields]
            text = json.dumps(doc).encode()
        elif isinstance(record, str):
            text = record.encode()
        elif isinstance(record, bytes):
            text = record
        else:
            raise input_error("record: expected an object or JSON text, found %s"
                              % v.describe(record))
        if b"\0" in text:
            raise input_error("%s: malformed JSON: unexpected NUL byte" % v.RECORD_WHERE)
        return self._call(self._lib.c.loom_planner_plan_json, text)

    def close(self) -> None:
        """Ends planning (idempotent). The plugins' instances and the C
        planner are freed now, or when the last open result from this
        planner is closed: results stay fully usable."""
        if self._owner is not None:
            self._owner.close()

    def __enter__(self) -> "Planner":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            if getattr(self, "_owner", None) is not None:
                self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        o = self.options
        return "Planner(model=%r, cluster=%r, parallel=%r%s)" % (
            o.model, o.cluster, o.parallel, ", closed" if self.closed else "")


def _sample_json(f: tuple) -> Dict[str, Any]:
    text, images, video, audio, mb = f
    d: Dict[str, Any] = {"text_tokens": text, "images": images}
    if video:
        d["video_seconds"] = video
    if audio:
        d["audio_seconds"] = audio
    if mb >= 0:
        d["microbatch"] = mb
    return d


__all__ = ["Planner", "Result"]
