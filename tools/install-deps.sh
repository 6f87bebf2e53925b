#!/usr/bin/env bash
# Installs the Debian packages Loom needs, skipping what is already there.
set -euo pipefail
need=(cmake make gcc pkg-config libcjson-dev liblpsolve55-dev libffi-dev check libsubunit-dev python3 python3-jsonschema groff-base valgrind clang libclang-rt-14-dev python3-pytest python3-torch python3-setuptools python3-wheel python3-pip chromium)
missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
