#!/usr/bin/env bash
# Installs the Debian packages Loom needs, skipping what is already there.
set -euo pipefail
need=(cmake make gcc pkg-config libcjson-dev liblpsolve55-dev libffi-dev check libsubunit-dev python3 python3-jsonschema groff-base valgrind clang libclang-rt-14-dev python3-pytest python3-venv python3-setuptools python3-wheel python3-pip chromium)
missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The Python packages of requirements.txt, in a venv of Debian's python3
# (build/venv, or $LOOM_VENV). Reinstalled only when requirements.txt changed:
# the venv keeps a copy of the file it was built from.
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${LOOM_VENV:-$root/build/venv}"
if ! cmp -s "$root/requirements.txt" "$venv/loom-requirements.txt"; then
  echo "install-deps: building the Python venv $venv from requirements.txt"
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/python3" -m pip install -q --disable-pip-version-check -r "$root/requirements.txt" 2>&1 |
    grep -v "^WARNING: Location .* is ignored" || true
  "$venv/bin/python3" -c "import torch, torchtitan, megatron.core, pytest, jsonschema" 2>/dev/null ||
    { echo "install-deps: the venv $venv cannot import its packages" >&2; exit 1; }
  cp "$root/requirements.txt" "$venv/loom-requirements.txt"
fi
