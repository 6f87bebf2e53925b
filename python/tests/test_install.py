"""`pip install` of the package offline (no index): with --target and no
build isolation, and into fresh venvs of the pyenv `python3` on PATH and of
Debian's /usr/bin/python3 with build isolation (the package's own build
backend needs nothing installed); and libloom found beside the prefix it
is installed in."""

import os
import shutil
import subprocess
import sys

import pytest

from conftest import PYTHON_DIR


def clean_env(**extra):
    """The environment without the sanitizer runtime (pip is plain Python)
    and without $LOOM_LIBRARY, plus `extra`."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_PRELOAD", "LOOM_LIBRARY", "PYTHONPATH")}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The package installed with pip --target into <prefix>/lib/python3/
    site-packages of a scratch prefix (from a copy of python/: pip builds
    in the source folder)."""
    if subprocess.run([sys.executable, "-m", "pip", "--version"],
                      capture_output=True).returncode != 0:
        pytest.skip("pip is not installed (Debian: python3-pip)")
    root = tmp_path_factory.mktemp("install")
    src = root / "src"
    shutil.copytree(PYTHON_DIR, src, ignore=shutil.ignore_patterns(
        "tests", "build", "*.egg-info", "__pycache__", ".pytest_cache"))
    site = root / "prefix" / "lib" / "python3" / "site-packages"
    out = subprocess.run([sys.executable, "-m", "pip", "install", "--no-index",
                          "--no-build-isolation", "--no-cache-dir", "--disable-pip-version-check",
                          "--quiet", "--target", str(site), str(src)],
                         capture_output=True, text=True, env=clean_env(PIP_ROOT_USER_ACTION="ignore"))
    assert out.returncode == 0, out.stdout + out.stderr
    return root / "prefix", site


def run_python(code, site, **env):
    """`code` in a fresh interpreter that sees only the installed package."""
    e = clean_env(PYTHONPATH=str(site), **env)
    for k in ("LD_PRELOAD",):  # a sanitizer build's libloom needs its runtime first
        if k in os.environ:
            e[k] = os.environ[k]
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=e, cwd=str(site.parent))


def test_installed_files(installed):
    prefix, site = installed
    names = sorted(p.name for p in (site / "loom").iterdir() if p.name != "__pycache__")
    assert names == ["__init__.py", "_lib.py", "_validate.py", "errors.py", "planner.py",
                     "py.typed", "types.py"]
    assert list(site.glob("loom-0.4.0.dist-info"))


def test_installed_package_plans(installed, library):
    prefix, site = installed
    out = run_python("import loom\n"
                     "print(loom.__file__)\n"
                     "with loom.Planner(parallel='tp=4,pp=4,mb=4') as p:\n"
                     "    r = p.plan([loom.Sample(812, images=3), loom.Sample(2048)])\n"
                     "    print(r.ranks, r.makespan_ms > 0)\n",
                     site, LOOM_LIBRARY=library)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == str(site / "loom" / "__init__.py")
    assert lines[1] == "4 True"


def test_library_beside_the_prefix(installed, library):
    """<prefix>/lib/libloom.so is found without $LOOM_LIBRARY."""
    prefix, site = installed
    lib = prefix / "lib" / "libloom.so"
    if not lib.exists():
        lib.symlink_to(library)
    out = run_python("import loom; print(loom.find_library())", site)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(lib)


def interpreters():
    """The `python3` on PATH (pyenv's on the project's machines) and
    Debian's, each once, where present."""
    found = []
    for exe in (shutil.which("python3"), "/usr/bin/python3"):
        if exe and os.path.exists(exe):
            real = subprocess.run([exe, "-c", "import sys; print(sys.executable)"],
                                  capture_output=True, text=True).stdout.strip()
            if real and real not in [r for _, r in found]:
                found.append((exe, real))
    return [exe for exe, _ in found]


@pytest.mark.parametrize("python", interpreters())
@pytest.mark.parametrize("isolation", [True, False])
def test_fresh_venv(python, isolation, tmp_path):
    """`pip install ./python` in a fresh venv, offline: with build isolation
    (the backend is in the source tree, nothing to download) and without
    (nothing but pip in the venv: no setuptools, no wheel needed)."""
    venv = tmp_path / "venv"
    made = subprocess.run([python, "-m", "venv", str(venv)], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip("%s cannot make a venv: %s" % (python, made.stderr.strip()[-200:]))
    py = str(venv / "bin" / "python")
    src = tmp_path / "src"
    shutil.copytree(PYTHON_DIR, src, ignore=shutil.ignore_patterns(
        "tests", "build", "*.egg-info", "__pycache__", ".pytest_cache"))
    cmd = [py, "-m", "pip", "install", "--no-index", "--no-cache-dir",
           "--disable-pip-version-check", "--quiet"]
    if not isolation:
        cmd.append("--no-build-isolation")
    out = subprocess.run(cmd + [str(src)], capture_output=True, text=True,
                         env=clean_env(PIP_ROOT_USER_ACTION="ignore"))
    assert out.returncode == 0, out.stdout + out.stderr
    show = subprocess.run([py, "-m", "pip", "show", "loom"], capture_output=True, text=True,
                          env=clean_env())
    assert "Version: 0.4.0" in show.stdout
    assert "License: MIT" in show.stdout
    imp = subprocess.run([py, "-c", "import loom; print(loom.__version__, loom.__file__)"],
                         capture_output=True, text=True, env=clean_env(), cwd=str(tmp_path))
    assert imp.returncode == 0, imp.stderr
    version, path = imp.stdout.split()
    assert version == "0.4.0"
    assert path.startswith(str(venv))
