"""Finding and loading libloom.so, and the ctypes declarations of the C API
(loom/api.h, loom_sample from loom/problem.h)."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading
from typing import Dict, List, Optional, Union

from .errors import LoomLibraryError, error_for

LOOM_ERROR_MSG_BYTES = 512
LIBRARY_ENV = "LOOM_LIBRARY"
_SONAME = "libloom.so"


class CError(ctypes.Structure):
    """loom_error."""

    _fields_ = [("code", ctypes.c_int), ("message", ctypes.c_char * LOOM_ERROR_MSG_BYTES)]

    def raise_(self, rc: int) -> None:
        code = self.code if self.code else rc
        raise error_for(code, self.message.decode("utf-8", errors="replace"))


class CSample(ctypes.Structure):
    """loom_sample."""

    _fields_ = [
        ("text_tokens", ctypes.c_int64),
        ("images", ctypes.c_int32),
        ("microbatch", ctypes.c_int32),
        ("video_seconds", ctypes.c_double),
        ("audio_seconds", ctypes.c_double),
    ]


class COptions(ctypes.Structure):
    """loom_planner_options (size-prefixed: struct_size = sizeof)."""

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


_P = ctypes.c_void_p
_E = ctypes.POINTER(CError)
_SIGNATURES = {
    "loom_version": (ctypes.c_char_p, []),
    "loom_planner_open": (ctypes.c_int, [ctypes.POINTER(COptions), ctypes.POINTER(_P), _E]),
    "loom_planner_close": (None, [_P]),
    "loom_planner_plan": (ctypes.c_int, [_P, ctypes.POINTER(CSample), ctypes.c_int32,
                                         ctypes.POINTER(_P), _E]),
    "loom_planner_plan_json": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.POINTER(_P), _E]),
    "loom_result_makespan_ms": (ctypes.c_double, [_P]),
    "loom_result_bubble_ratio": (ctypes.c_double, [_P]),
    "loom_result_mfu": (ctypes.c_double, [_P]),
    "loom_result_plan_time_ms": (ctypes.c_double, [_P]),
    "loom_result_ranks": (ctypes.c_int32, [_P]),
    "loom_result_peak_bytes": (ctypes.c_int64, [_P, ctypes.c_int32]),
    "loom_result_plan_json": (_P, [_P, _E]),
    "loom_result_write": (ctypes.c_int, [_P, ctypes.c_char_p, _E]),
    "loom_result_free": (None, [_P]),
    "loom_free": (None, [_P]),
}

PathArg = Union[str, "os.PathLike[str]"]


def _package_dir() -> str:
    return os.path.dirname(os.path.abspath(__file__))


def candidates() -> List[str]:
    """Where libloom.so is looked for after the explicit argument and
    $LOOM_LIBRARY, in order: the package's own folder, the lib folders of
    the prefix the package is installed into (<prefix>/lib/python3.X/
    site-packages → <prefix>/lib, and <prefix>/local/lib/... → <prefix>/lib
    for Debian's pip), of sys.prefix, then the build tree beside a source checkout
    (python/loom → build/lib)."""
    here = _package_dir()
    out = [os.path.join(here, _SONAME)]
    # <prefix>/lib/python3.X/{site,dist}-packages/loom or
    # <prefix>/lib/python3/dist-packages/loom (Debian).
    # <prefix>/local/lib/python3.X/dist-packages/loom (Debian's pip --prefix).
    site = os.path.dirname(here)
    if os.path.basename(site) in ("site-packages", "dist-packages"):
        prefix = os.path.dirname(os.path.dirname(os.path.dirname(site)))
        prefixes = [prefix]
        if os.path.basename(prefix) == "local":
            prefixes.append(os.path.dirname(prefix))
        for p in prefixes:
            for libdir in ("lib", "lib64", "lib/x86_64-linux-gnu", "lib/aarch64-linux-gnu"):
                out.append(os.path.join(p, libdir, _SONAME))
    for libdir in ("lib", "lib64"):
        out.append(os.path.join(sys.prefix, libdir, _SONAME))
    # A source checkout: <repo>/python/loom next to <repo>/build/lib.
    source = os.path.dirname(here)
    if os.path.exists(os.path.join(source, "pyproject.toml")):
        out.append(os.path.join(os.path.dirname(source), "build", "lib", _SONAME))
    seen, unique = set(), []
    for c in out:
        c = os.path.normpath(c)
        if c not in seen:
            seen.add(c)
            unique.append(c)
    return unique


def find_library(path: Optional[PathArg] = None) -> str:
    """The libloom.so to load: `path` when given, else $LOOM_LIBRARY, else
    the first of candidates() that exists, else the system's (ld.so's
    search path). Raises LoomLibraryError naming what was tried."""
    if path is not None:
        p = os.fspath(path)
        if not os.path.exists(p):
            raise LoomLibraryError(-4, "libloom not found: %s (the library= argument) does not "
                                       "exist" % p)
        return p
    env = os.environ.get(LIBRARY_ENV)
    if env:
        if not os.path.exists(env):
            raise LoomLibraryError(-4, "libloom not found: %s (from $%s) does not exist"
                                   % (env, LIBRARY_ENV))
        return env
    tried = ["$%s (unset)" % LIBRARY_ENV]
    for c in candidates():
        if os.path.exists(c):
            return c
        tried.append(c)
    system = ctypes.util.find_library("loom")
    if system:
        return system
    tried.append("the system's library path (ctypes.util.find_library('loom'))")
    raise LoomLibraryError(-4, "libloom not found; tried: %s. Pass library=PATH or set $%s to "
                               "the path of libloom.so" % (", ".join(tried), LIBRARY_ENV))


class Library:
    """A loaded libloom with the C API's signatures declared."""

    def __init__(self, path: str):
        self.path = path
        try:
            self.c = ctypes.CDLL(path)
        except OSError as e:
            hint = ""
            if "ASan runtime" in str(e) or "asan" in str(e).lower():
                hint = (" (a sanitizer build of libloom needs its runtime loaded first: "
                        "LD_PRELOAD=$(gcc -print-file-name=libasan.so) "
                        "ASAN_OPTIONS=detect_leaks=0)")
            raise LoomLibraryError(-4, "libloom: cannot load %s: %s%s" % (path, e, hint)) from e
        for name, (res, args) in _SIGNATURES.items():
            try:
                fn = getattr(self.c, name)
            except AttributeError:
                raise LoomLibraryError(-4, "libloom: %s has no %s (not libloom, or too old)"
                                       % (path, name)) from None
            fn.restype = res
            fn.argtypes = args

    def version(self) -> str:
        return self.c.loom_version().decode()

    def check(self, rc: int, err: CError) -> None:
        """Raises the LoomError of a non-zero status."""
        if rc != 0:
            err.raise_(rc)


_loaded: Dict[str, Library] = {}
_lock = threading.Lock()


def load(path: Optional[PathArg] = None) -> Library:
    """The Library for find_library(path), loaded once per real path."""
    found = find_library(path)
    key = os.path.realpath(found) if os.path.exists(found) else found
    with _lock:
        lib = _loaded.get(key)
        if lib is None:
            lib = Library(found)
            _loaded[key] = lib
        return lib
