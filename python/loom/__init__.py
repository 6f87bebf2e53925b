"""Loom from Python: plan pipeline-parallel training iterations through
libloom's stable C API (loom/api.h) with ctypes; standard library only.

    import loom

    with loom.Planner(manifest="examples/manifests/pipeweaver.json", model="vlm-s",
                      cluster="h800", parallel="tp=4,pp=4,mb=8") as planner:
        r = planner.plan([loom.Sample(812, images=3), loom.Sample(2048)])
        print(r.makespan_ms, r.bubble_ratio, r.peak_bytes)
        r.write("out/")

Errors raise LoomError (LoomInputError, LoomPluginError, LoomPlanError)
carrying Loom's message and status. docs/embedding.md has the guide.
"""

from __future__ import annotations

from typing import Optional

from ._lib import LIBRARY_ENV, find_library
from .errors import (LoomError, LoomInputError, LoomLibraryError, LoomPlanError,
                     LoomPluginError, status_name)
from .planner import Planner, Result
from .types import PathLike, PlannerOptions, Sample

__version__ = "0.4.0"


def version(library: Optional[PathLike] = None) -> str:
    """libloom's version, e.g. "0.4.0" (loom_version())."""
    from . import _lib

    return _lib.load(library).version()


__all__ = [
    "LIBRARY_ENV",
    "LoomError",
    "LoomInputError",
    "LoomLibraryError",
    "LoomPlanError",
    "LoomPluginError",
    "Planner",
    "PlannerOptions",
    "Result",
    "Sample",
    "find_library",
    "status_name",
    "version",
]
