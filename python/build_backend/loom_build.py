"""loom_build.py - the package's own PEP 517 build backend (pure Python, no
dependency): builds the `loom` wheel (and an sdist, and a PEP 660 editable
wheel) with zipfile and tarfile from pyproject.toml's [project] table, so
`pip install ./python` works in any venv - pyenv, conda, Debian - and
offline, with or without build isolation. The package is pure Python
(ctypes over libloom), so a wheel is the package files plus .dist-info.
"""
import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "loom"
TAG = "py3-none-any"


def _project():
    """name, version, description, requires-python and license of
    pyproject.toml's [project] table (tomllib when present, else the
    simple `key = "value"` lines this file uses)."""
    path = os.path.join(ROOT, "pyproject.toml")
    with open(path, "rb") as f:
        raw = f.read()
    try:
        import tomllib  # Python 3.11+
        return tomllib.loads(raw.decode("utf-8"))["project"]
    except ImportError:
        pass
    text = raw.decode("utf-8")
    section = re.search(r"^\[project\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S).group(1)
    project = {}
    for key, value in re.findall(r'^([A-Za-z-]+)\s*=\s*"([^"]*)"\s*$', section, re.M):
        project[key] = value
    return project


def _dist_name(project):
    return "%s-%s" % (project["name"].replace("-", "_"), project["version"])


def _metadata(project):
    """The METADATA / PKG-INFO text (core metadata 2.1)."""
    lines = ["Metadata-Version: 2.1", "Name: " + project["name"],
             "Version: " + project["version"]]
    if project.get("description"):
        lines.append("Summary: " + project["description"])
    if project.get("requires-python"):
        lines.append("Requires-Python: " + project["requires-python"])
    lic = project.get("license")
    if isinstance(lic, str):
        lines.append("License: " + lic)
    for c in project.get("classifiers", []) if isinstance(project.get("classifiers"), list) \
            else []:
        lines.append("Classifier: " + c)
    readme = os.path.join(ROOT, "README.md")
    body = ""
    if os.path.exists(readme):
        lines.append("Description-Content-Type: text/markdown")
        with open(readme, encoding="utf-8") as f:
            body = f.read()
    return "\n".join(lines) + "\n\n" + body


def _package_files():
    """(archive name, path) of every file of the package, sorted."""
    out = []
    src = os.path.join(ROOT, PACKAGE)
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith((".pyc", ".pyo")):
                continue
            path = os.path.join(dirpath, name)
            out.append((os.path.relpath(path, ROOT).replace(os.sep, "/"), path))
    return out


def _digest(data):
    h = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + h.decode("ascii")


def _write_wheel(wheel_directory, entries):
    """Writes a wheel of `entries` ((archive name, bytes)) plus .dist-info;
    returns its file name."""
    project = _project()
    dist = _dist_name(project)
    info = dist + ".dist-info"
    files = list(entries)
    files.append((info + "/METADATA", _metadata(project).encode("utf-8")))
    files.append((info + "/WHEEL", ("Wheel-Version: 1.0\nGenerator: loom_build\n"
                                    "Root-Is-Purelib: true\nTag: %s\n" % TAG).encode("ascii")))
    files.append((info + "/top_level.txt", (PACKAGE + "\n").encode("ascii")))
    lic = os.path.join(os.path.dirname(ROOT), "LICENSE")
    if os.path.exists(lic):
        with open(lic, "rb") as f:
            files.append((info + "/LICENSE", f.read()))
    record = "".join("%s,%s,%d\n" % (n, _digest(d), len(d)) for n, d in files)
    record += info + "/RECORD,,\n"
    files.append((info + "/RECORD", record.encode("utf-8")))
    name = "%s-%s.whl" % (dist, TAG)
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w",
                         zipfile.ZIP_DEFLATED) as z:
        for n, d in files:
            zi = zipfile.ZipInfo(n, date_time=(2026, 1, 1, 0, 0, 0))
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, d)
    return name


# ---- PEP 517 / PEP 660 hooks ----------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    entries = []
    for name, path in _package_files():
        with open(path, "rb") as f:
            entries.append((name, f.read()))
    return _write_wheel(wheel_directory, entries)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """A wheel whose .pth puts this source folder on sys.path."""
    return _write_wheel(wheel_directory, [("_loom_editable.pth",
                                           (ROOT + "\n").encode("utf-8"))])


def build_sdist(sdist_directory, config_settings=None):
    project = _project()
    dist = _dist_name(project)
    name = dist + ".tar.gz"
    members = [("pyproject.toml", os.path.join(ROOT, "pyproject.toml")),
               ("README.md", os.path.join(ROOT, "README.md")),
               ("build_backend/loom_build.py", os.path.abspath(__file__))]
    members += _package_files()
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for arc, path in members:
            if os.path.exists(path):
                t.add(path, arcname=dist + "/" + arc, recursive=False)
        info = _metadata(project).encode("utf-8")
        ti = tarfile.TarInfo(dist + "/PKG-INFO")
        ti.size = len(info)
        t.addfile(ti, io.BytesIO(info))
    return name
