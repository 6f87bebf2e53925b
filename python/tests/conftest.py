"""Shared fixtures: the package from this source tree, the libloom.so and
`loom` CLI of the build under test ($LOOM_LIBRARY and $LOOM_CLI, set by the
ctest entry; else the build tree beside the checkout)."""

import os
import pathlib
import sys

import pytest

PYTHON_DIR = pathlib.Path(__file__).resolve().parents[1]
REPO = PYTHON_DIR.parent
sys.path.insert(0, str(PYTHON_DIR))

import loom  # noqa: E402  (the package of this source tree)


@pytest.fixture(scope="session")
def library():
    """Path of the libloom.so under test."""
    return loom.find_library()


@pytest.fixture(scope="session")
def build_dir(library):
    """The build tree libloom.so lives in (<build>/lib/libloom.so)."""
    return pathlib.Path(library).resolve().parent.parent


@pytest.fixture(scope="session")
def cli(build_dir):
    """The `loom` CLI of the same build."""
    path = pathlib.Path(os.environ.get("LOOM_CLI") or build_dir / "bin" / "loom")
    assert path.is_file(), "the loom CLI is missing: %s (set $LOOM_CLI)" % path
    return path


@pytest.fixture(scope="session")
def repo():
    return REPO


@pytest.fixture
def planner(library):
    """The megatron-1f1b baseline (deterministic, no search) on vlm-s."""
    with loom.Planner(model="vlm-s", cluster="h800", parallel="tp=4,pp=4,mb=8", seed=3,
                      library=library) as p:
        yield p
