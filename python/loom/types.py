"""Typed inputs: one sample's metadata and the options of a planner."""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Dict, Optional, Union

from . import _validate as v

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class Sample:
    """What the data loader knows about one sample before its tensors exist
    (loom_sample in <loom/problem.h>, one entry of a workload record's
    "samples").

    text_tokens    text tokens, 0 .. 2^32
    images         images, 0 .. 2^20
    video_seconds  seconds of video, 0 .. 1e6
    audio_seconds  seconds of audio, 0 .. 1e6
    microbatch     -1: the planner splits the samples evenly into the
                   configured microbatches, in order; 0 .. M-1: packed as
                   given (then on every sample of the iteration)

    A sample needs at least one non-zero field. Values are checked when
    planned, with the messages of the JSON workload loader.
    """

    text_tokens: int
    images: int = 0
    video_seconds: float = 0.0
    audio_seconds: float = 0.0
    microbatch: int = -1

    @classmethod
    def from_dict(cls, d: Mapping, path: str = "sample") -> "Sample":
        """A Sample from a workload-style dict; unknown keys and bad values
        raise LoomInputError naming `path`."""
        text, images, video, audio, mb = v.sample_fields(None, d, path)
        return cls(text, images, video, audio, mb)

    def to_dict(self) -> Dict[str, Any]:
        """The sample as a workload JSON object (the fields `loom workload`
        writes: zero seconds and microbatch -1 left out)."""
        d: Dict[str, Any] = {"text_tokens": self.text_tokens, "images": self.images}
        if self.video_seconds != 0:
            d["video_seconds"] = self.video_seconds
        if self.audio_seconds != 0:
            d["audio_seconds"] = self.audio_seconds
        if self.microbatch != -1:
            d["microbatch"] = self.microbatch
        return d

    def _loom_fields(self) -> Dict[str, Any]:
        # Every field, so that each is checked.
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


@dataclass(frozen=True)
class PlannerOptions:
    """What a Planner plans for (loom_planner_options); None takes the
    defaults of `loom plan`.

    manifest          planner manifest path (None: megatron-1f1b)
    model             model preset name or model.json path (None: vlm-s)
    cluster           cluster preset name or cluster.json path (None: h800)
    parallel          e.g. "tp=4,pp=4,mb=8" over the model's own (None: the model's)
    memory_cap_bytes  per-rank memory cap; 0: the manifest's, else the GPU's HBM
    seed              search seed (None: the manifest's)
    """

    manifest: Optional[PathLike] = None
    model: Optional[PathLike] = None
    cluster: Optional[PathLike] = None
    parallel: Optional[str] = None
    memory_cap_bytes: float = 0.0
    seed: Optional[int] = None

    KEYS = ("manifest", "model", "cluster", "parallel", "memory_cap_bytes", "seed")

    @classmethod
    def from_dict(cls, d: Mapping) -> "PlannerOptions":
        """PlannerOptions from a dict; an unknown key raises LoomInputError
        naming it and the allowed ones."""
        if not isinstance(d, Mapping):
            raise v.input_error("options: expected an object, found %s" % v.describe(d))
        v.check_keys(None, d, "options", cls.KEYS)
        opts = cls(**d)
        opts.check()
        return opts

    def check(self) -> None:
        """Raises LoomInputError for a value of the wrong type or range."""
        for name in ("manifest", "model", "cluster"):
            v.optional_text(name, getattr(self, name))
        if self.parallel is not None and not isinstance(self.parallel, str):
            raise v.input_error("parallel: expected a string, found %s"
                                % v.describe(self.parallel))
        v.optional_text("parallel", self.parallel)
        v.check_double(None, "memory_cap_bytes", self.memory_cap_bytes, 0.0, math.inf)
        if self.seed is not None:
            v.check_int(None, "seed", self.seed, 0, 2**64 - 1)
