"""Errors: the JSON loader's checks and wording on dicts and dataclasses,
Loom's own messages and statuses, the exception classes by status."""

import ctypes.util
import json
import math

import pytest

import loom
from loom import _lib
from loom.errors import error_for

SAMPLE_KEYS = "text_tokens, images, video_seconds, audio_seconds, microbatch"


def raises(fn, *args, cls=loom.LoomInputError, **kwargs):
    with pytest.raises(cls) as e:
        fn(*args, **kwargs)
    return e.value


# (samples, message) of plan(); plan_json() says the same after "<iteration>:1: ".
BAD_SAMPLES = [
    ([{"text_token": 5}],
     'samples[0]: unknown field "text_token" (expected one of: %s)' % SAMPLE_KEYS),
    ([{"text_tokens": 5}, {"text_tokens": 5, "image": 1}],
     'samples[1]: unknown field "image" (expected one of: %s)' % SAMPLE_KEYS),
    ([{"text_tokens": -5}],
     "samples[0].text_tokens: expected an integer in [0, 4294967296], found -5"),
    ([loom.Sample(-5)],
     "samples[0].text_tokens: expected an integer in [0, 4294967296], found -5"),
    ([{"text_tokens": 2.5}],
     "samples[0].text_tokens: expected an integer in [0, 4294967296], found 2.5"),
    ([{"text_tokens": "812"}],
     'samples[0].text_tokens: expected an integer in [0, 4294967296], found "812"'),
    ([{"text_tokens": 2 ** 33}],
     "samples[0].text_tokens: expected an integer in [0, 4294967296], found 8589934592"),
    ([{"text_tokens": 1, "images": True}],
     "samples[0].images: expected an integer in [0, 1048576], found true"),
    ([{"text_tokens": 1, "images": None}],
     "samples[0].images: expected an integer in [0, 1048576], found null"),
    ([loom.Sample(10, video_seconds=-1.5)],
     "samples[0].video_seconds: expected a number in [0, 1000000], found -1.5"),
    ([{"text_tokens": 1, "audio_seconds": [1]}],
     "samples[0].audio_seconds: expected a number in [0, 1000000], found an array"),
    ([{"text_tokens": 1, "microbatch": -2}],
     "samples[0].microbatch: expected an integer in [-1, 65535], found -2"),
    ([{"text_tokens": 0}],
     "samples[0]: expected a sample with text tokens, images, video or audio, "
     "found an empty sample"),
    ([{"images": 0, "video_seconds": 0}],
     "samples[0].text_tokens: expected an integer in [0, 4294967296], "
     "found nothing (missing field)"),
    ([{"text_tokens": 1, "microbatch": 0}, {"text_tokens": 1}],
     "samples[1].microbatch: expected a microbatch index like samples[0], found none"),
    ([{"text_tokens": 1}, {"text_tokens": 1, "microbatch": 0}],
     "samples[1].microbatch: expected no microbatch like samples[0], found one"),
    ([{"text_tokens": 1}, 7],
     "samples[1]: expected a sample object, found 7"),
    ([{"text_tokens": 1}, "x" * 70],
     'samples[1]: expected a sample object, found "%s..."' % ("x" * 60)),
    ([], "samples: expected at least one sample, found none"),
]

# Not expressible in JSON text: checked in Python only.
PYTHON_ONLY = [
    ([loom.Sample(10, video_seconds=math.nan)],
     "samples[0].video_seconds: expected a number in [0, 1000000], found nan"),
    ([loom.Sample(10, audio_seconds=math.inf)],
     "samples[0].audio_seconds: expected a number in [0, 1000000], found inf"),
    ([loom.Sample(math.nan)],
     "samples[0].text_tokens: expected an integer in [0, 4294967296], found nan"),
]


@pytest.mark.parametrize("samples,message", BAD_SAMPLES + PYTHON_ONLY)
def test_plan_rejects(planner, samples, message):
    e = raises(planner.plan, samples)
    assert (e.status, e.code, e.message) == ("LOOM_EINVAL", -1, message)
    assert str(e) == message


@pytest.mark.parametrize("samples,message", BAD_SAMPLES + PYTHON_ONLY)
def test_plan_json_dict_rejects(planner, samples, message):
    e = raises(planner.plan_json, {"samples": samples})
    assert e.message == "<iteration>:1: " + message


def as_json(samples):
    return json.dumps({"samples": [s.to_dict() if isinstance(s, loom.Sample) else s
                                   for s in samples]})


@pytest.mark.parametrize("samples,message", BAD_SAMPLES)
def test_same_wording_as_the_json_loader(planner, samples, message):
    """libloom's own loader, given the record as text, says the same."""
    e = raises(planner.plan_json, as_json(samples))
    assert (e.status, e.message) == ("LOOM_EINVAL", "<iteration>:1: " + message)


@pytest.mark.parametrize("record,message", [
    ({"sample": [{"text_tokens": 5}]},
     '<iteration>:1: unknown field "sample" (expected one of: iteration, samples)'),
    ({"iteration": -1, "samples": [{"text_tokens": 5}]},
     "<iteration>:1: iteration: expected an integer in [0, 2147483647], found -1"),
    ({}, "<iteration>:1: samples: expected an array, found nothing (missing field)"),
    ({"samples": {"text_tokens": 5}}, "<iteration>:1: samples: expected an array, found an object"),
    ([], '<iteration>:1: expected an iteration object {"iteration": ..., "samples": [...]}, '
         "found an array"),
])
def test_record_rejects(planner, record, message):
    """Dict records and their JSON text get the same message."""
    if isinstance(record, dict):
        assert raises(planner.plan_json, record).message == message
    assert raises(planner.plan_json, json.dumps(record)).message == message


def test_json_text_errors(planner):
    e = raises(planner.plan_json, '{"samples": [{"text_tokens": 5,}]}')
    assert e.message == "<iteration>:1:33: malformed JSON: unexpected ']'"
    e = raises(planner.plan_json, 5)
    assert e.message == "record: expected an object or JSON text, found 5"


def test_c_checks_the_microbatch_range(planner):
    """A microbatch within the loader's bounds but past the parallel
    config's is libloom's own check."""
    e = raises(planner.plan, [{"text_tokens": 10, "microbatch": 9}])
    assert (e.code, e.message) == (
        -1, "iteration 0: samples[0].microbatch: expected -1..7 (the parallel config has 8 "
            "microbatches), found 9")


def test_sample_from_dict():
    e = raises(loom.Sample.from_dict, {"text_tokens": 5, "vidoe_seconds": 2})
    assert e.message == 'sample: unknown field "vidoe_seconds" (expected one of: %s)' % SAMPLE_KEYS
    e = raises(loom.Sample.from_dict, {"text_tokens": -1})
    assert e.message == "sample.text_tokens: expected an integer in [0, 4294967296], found -1"


def test_options_rejected(library):
    e = raises(loom.Planner, {"modle": "vlm-s"}, library=library)
    assert e.message == ('options: unknown field "modle" (expected one of: manifest, model, '
                         'cluster, parallel, memory_cap_bytes, seed)')
    e = raises(loom.Planner, memory_cap_bytes=-1, library=library)
    assert e.message == "memory_cap_bytes: expected a number >= 0, found -1"
    e = raises(loom.Planner, seed=-3, library=library)
    assert e.message == "seed: expected an integer in [0, 18446744073709551615], found -3"
    e = raises(loom.Planner, model=7, library=library)
    assert e.message == "model: expected a string or a path, found 7"


def test_bad_manifest_path(library, tmp_path):
    missing = tmp_path / "missing.json"
    e = raises(loom.Planner, manifest=missing, library=library)
    assert (type(e), e.status) == (loom.LoomInputError, "LOOM_EIO")
    assert e.message == "%s: cannot open: No such file or directory" % missing
    bad = tmp_path / "bad.json"
    bad.write_text('{"loom_planner": 1,,}')
    e = raises(loom.Planner, manifest=bad, library=library)
    assert e.status == "LOOM_EINVAL"
    assert e.message.startswith("%s:1:21: malformed JSON" % bad)


def test_bad_model(library):
    e = raises(loom.Planner, model="vlm-q", library=library)
    assert (type(e), e.status) == (loom.LoomInputError, "LOOM_ENOTFOUND")
    assert e.message.startswith('model "vlm-q": expected a model preset (vlm-s, ')
    assert e.message.endswith("or a path to a model.json, found neither; did you mean vlm-s?")
    e = raises(loom.Planner, parallel="tp=4,pp=zz", library=library)
    assert e.message == 'parallel config "tp=4,pp=zz": pp: expected an integer in [1, 65536], ' \
                        'found "zz"'


def test_plugin_error(library, build_dir):
    manifest = build_dir / "tests" / "fixtures" / "planners" / "create-fails.json"
    if not manifest.is_file():
        pytest.skip("the test fixtures are not built (%s)" % manifest)
    e = raises(loom.Planner, manifest=manifest, library=library, cls=loom.LoomPluginError)
    assert (e.status, e.code) == ("LOOM_EPLUGIN", -7)
    assert e.message == ("%s: pipeline[2]: plugin fixture.good-rank: create refused: "
                         "fail_create is internal" % manifest)


def test_plan_error(library):
    with loom.Planner(model="vlm-s", parallel="tp=4,pp=4,mb=8", memory_cap_bytes=1,
                      library=library) as p:
        e = raises(p.plan, [loom.Sample(1000, images=2)] * 8, cls=loom.LoomPlanError)
    assert e.status == "LOOM_EINFEASIBLE"
    assert "cannot fit the memory cap of 1 bytes" in e.message


def test_library_not_found(monkeypatch, tmp_path):
    e = raises(loom.Planner, library=tmp_path / "libloom.so", cls=loom.LoomLibraryError)
    assert isinstance(e, loom.LoomInputError) and e.status == "LOOM_ENOTFOUND"
    assert e.message == "libloom not found: %s (the library= argument) does not exist" % (
        tmp_path / "libloom.so")
    monkeypatch.setenv("LOOM_LIBRARY", str(tmp_path / "nope.so"))
    e = raises(loom.version, cls=loom.LoomLibraryError)
    assert e.message == "libloom not found: %s (from $LOOM_LIBRARY) does not exist" % (
        tmp_path / "nope.so")
    monkeypatch.delenv("LOOM_LIBRARY")
    monkeypatch.setattr(_lib, "candidates", lambda: [str(tmp_path / "a" / "libloom.so")])
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: None)
    e = raises(loom.find_library, cls=loom.LoomLibraryError)
    assert e.message == (
        "libloom not found; tried: $LOOM_LIBRARY (unset), %s, the system's library path "
        "(ctypes.util.find_library('loom')). Pass library=PATH or set $LOOM_LIBRARY to the "
        "path of libloom.so" % (tmp_path / "a" / "libloom.so"))
    not_a_library = tmp_path / "libloom.so"
    not_a_library.write_text("text")
    e = raises(loom.version, not_a_library, cls=loom.LoomLibraryError)
    assert e.message.startswith("libloom: cannot load %s: " % not_a_library)


@pytest.mark.parametrize("code,cls,status", [
    (-1, loom.LoomInputError, "LOOM_EINVAL"),
    (-4, loom.LoomInputError, "LOOM_ENOTFOUND"),
    (-9, loom.LoomInputError, "LOOM_EIO"),
    (-3, loom.LoomPluginError, "LOOM_EABI"),
    (-7, loom.LoomPluginError, "LOOM_EPLUGIN"),
    (-5, loom.LoomPlanError, "LOOM_EINFEASIBLE"),
    (-8, loom.LoomPlanError, "LOOM_EDEADLOCK"),
    (-10, loom.LoomPlanError, "LOOM_ETIMEOUT"),
    (-11, loom.LoomPlanError, "LOOM_EINTERRUPTED"),
    (-2, loom.LoomError, "LOOM_ENOMEM"),
    (-99, loom.LoomError, "LOOM_E?"),
])
def test_status_classes(code, cls, status):
    e = error_for(code, "text")
    assert type(e) is cls and isinstance(e, loom.LoomError)
    assert (e.code, e.status, e.message, str(e)) == (code, status, "text", "text")
    assert repr(e) == "%s(%s, 'text')" % (cls.__name__, status)
    assert isinstance(loom.LoomInputError(-1, "x"), ValueError)
