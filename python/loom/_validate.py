"""The checks of Loom's JSON workload loader (core/problem/workload_io.c,
core/base/json_util.c), done in Python on dicts and dataclasses before any
call into libloom, with the loader's wording: "<where>: <path>: expected
<what>, found <value>" and "unknown field "<key>" (expected one of: ...)"."""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any, Optional, Sequence

from .errors import input_error

# The loader's bounds (workload_io.c parse_sample / parse_line).
TEXT_TOKENS_MAX = 1 << 32
IMAGES_MAX = 1 << 20
SECONDS_MAX = 1e6
MICROBATCH_MAX = 65536 - 1  # LOOM_MAX_PARALLEL_DEGREE - 1
ITERATION_MAX = 2**31 - 1
SAMPLES_MAX = 1000000  # LOOM_MAX_SAMPLES_PER_ITERATION
SAMPLE_KEYS = ("text_tokens", "images", "video_seconds", "audio_seconds", "microbatch")
RECORD_KEYS = ("iteration", "samples")
RECORD_WHERE = "<iteration>:1"  # what loom_planner_plan_json names its input


def _g15(v: float) -> str:
    return "%.15g" % v


def _is_number(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def describe(v: Any) -> str:
    """A value as the loader's "found ..." describes it (describe_value)."""
    if v is None:
        return "null"
    if v is True or v is False:
        return "true" if v else "false"
    if _is_number(v):
        try:
            return _g15(float(v))
        except OverflowError:  # an int beyond a double: what JSON would read as +-inf
            return "-inf" if v < 0 else "inf"
    if isinstance(v, str):
        return '"%s..."' % v[:57] if len(v) > 60 else '"%s"' % v
    if isinstance(v, Mapping):
        return "an object"
    if isinstance(v, (list, tuple)):
        return "an array"
    return "a %s" % type(v).__name__


def describe_item(v: Any) -> str:
    """The same as loom_json_describe (strings cut after 60 characters)."""
    if isinstance(v, str):
        return '"%s%s"' % (v[:60], "..." if len(v) > 60 else "")
    return describe(v)


def _join(where: Optional[str], path: str) -> str:
    if where and path:
        return "%s: %s" % (where, path)
    return where or path


def _key(path: str, key: str) -> str:
    return "%s.%s" % (path, key) if path else key


def check_keys(where: Optional[str], obj: Mapping, path: str, allowed: Sequence[str]) -> None:
    """Every key of `obj` is one of `allowed` (loom_json_check_keys)."""
    for k in obj:
        if k not in allowed:
            raise input_error('%s: unknown field "%s" (expected one of: %s)'
                              % (_join(where, path), k, ", ".join(allowed)))


def get_int(where: Optional[str], obj: Mapping, path: str, key: str, lo: int, hi: int,
            default: Optional[int]) -> int:
    """obj[key] as an integer in [lo, hi] (loom_json_get_int); integral
    floats are accepted as JSON's numbers are. default None: required."""
    if key not in obj:
        if default is None:
            raise input_error("%s: expected an integer in [%d, %d], found nothing (missing field)"
                              % (_join(where, _key(path, key)), lo, hi))
        return default
    return check_int(where, _key(path, key), obj[key], lo, hi)


def check_int(where: Optional[str], full: str, v: Any, lo: int, hi: int) -> int:
    ok = _is_number(v)
    if ok and not isinstance(v, numbers.Integral):
        f = float(v)
        ok = math.isfinite(f) and f == math.floor(f)
        if ok:
            v = int(f)
    if ok:
        v = int(v)
        ok = lo <= v <= hi
    if not ok:
        raise input_error("%s: expected an integer in [%d, %d], found %s"
                          % (_join(where, full), lo, hi, describe(v)))
    return v


def get_double(where: Optional[str], obj: Mapping, path: str, key: str, lo: float, hi: float,
               default: float) -> float:
    """obj[key] as a finite number in [lo, hi] (loom_json_get_double)."""
    if key not in obj:
        return default
    return check_double(where, _key(path, key), obj[key], lo, hi)


def check_double(where: Optional[str], full: str, v: Any, lo: float, hi: float) -> float:
    f = float(v) if _is_number(v) else None
    if f is None or not math.isfinite(f) or f < lo or f > hi:
        want = ("a number >= %s" % _g15(lo)) if hi == math.inf else \
            ("a number in [%s, %s]" % (_g15(lo), _g15(hi)))
        raise input_error("%s: expected %s, found %s" % (_join(where, full), want, describe(v)))
    return f


def sample_fields(where: Optional[str], obj: Any, path: str) -> tuple:
    """One sample (a Mapping or a Sample) checked as parse_sample does:
    (text_tokens, images, video_seconds, audio_seconds, microbatch)."""
    if not isinstance(obj, Mapping):
        to_dict = getattr(obj, "_loom_fields", None)
        if to_dict is None:
            raise input_error("%s: expected a sample object, found %s"
                              % (_join(where, path), describe_item(obj)))
        obj = to_dict()
    check_keys(where, obj, path, SAMPLE_KEYS)
    text = get_int(where, obj, path, "text_tokens", 0, TEXT_TOKENS_MAX, None)
    images = get_int(where, obj, path, "images", 0, IMAGES_MAX, 0)
    video = get_double(where, obj, path, "video_seconds", 0.0, SECONDS_MAX, 0.0)
    audio = get_double(where, obj, path, "audio_seconds", 0.0, SECONDS_MAX, 0.0)
    mb = get_int(where, obj, path, "microbatch", -1, MICROBATCH_MAX, -1)
    if text == 0 and images == 0 and video == 0 and audio == 0:
        raise input_error("%s: expected a sample with text tokens, images, video or audio, "
                          "found an empty sample" % _join(where, path))
    return text, images, video, audio, mb


def samples_fields(where: Optional[str], samples: Any) -> list:
    """A list of samples checked as parse_line checks "samples": at least
    one, at most 1 000 000, each valid, a microbatch on all or none."""
    if isinstance(samples, (str, bytes, Mapping)) or not hasattr(samples, "__iter__"):
        raise input_error("%s: expected an array, found %s"
                          % (_join(where, "samples"), describe(samples)))
    samples = list(samples)
    if not samples:
        raise input_error("%s: expected at least one sample, found none"
                          % _join(where, "samples"))
    if len(samples) > SAMPLES_MAX:
        raise input_error("%s: expected at most %d samples, found %d"
                          % (_join(where, "samples"), SAMPLES_MAX, len(samples)))
    out = []
    with_mb = False
    for i, s in enumerate(samples):
        path = "samples[%d]" % i
        f = sample_fields(where, s, path)
        if i == 0:
            with_mb = f[4] >= 0
        elif with_mb != (f[4] >= 0):
            raise input_error("%s.microbatch: expected %s like samples[0], found %s"
                              % (_join(where, path),
                                 "a microbatch index" if with_mb else "no microbatch",
                                 "none" if with_mb else "one"))
        out.append(f)
    return out


def record_fields(where: str, record: Any) -> tuple:
    """One workload record {"iteration": i, "samples": [...]} checked as
    parse_line does: (iteration or None, list of sample fields)."""
    if not isinstance(record, Mapping):
        raise input_error('%s: expected an iteration object {"iteration": ..., "samples": '
                          '[...]}, found %s' % (where, describe_item(record)))
    check_keys(where, record, "", RECORD_KEYS)
    iteration = get_int(where, record, "", "iteration", 0, ITERATION_MAX, -1)
    if "samples" not in record:
        raise input_error("%s: samples: expected an array, found nothing (missing field)"
                          % where)
    samples = record["samples"]
    if not isinstance(samples, (list, tuple)):
        raise input_error("%s: samples: expected an array, found %s" % (where, describe(samples)))
    return (None if iteration < 0 else iteration), samples_fields(where, samples)


def optional_text(name: str, v: Any) -> Optional[bytes]:
    """An option that is a string or a path (or None), as bytes for C."""
    import os

    if v is None:
        return None
    if isinstance(v, (str, os.PathLike)):
        b = os.fsencode(v)
        if b"\0" in b:
            raise input_error("%s: expected a string without NUL bytes, found %s"
                              % (name, describe(os.fsdecode(v))))
        return b
    raise input_error("%s: expected a string or a path, found %s" % (name, describe(v)))
