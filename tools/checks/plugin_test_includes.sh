#!/usr/bin/env bash
# plugin_test_includes.sh - plugin tests see the SDK only, run by ctest
# (tests/guards/CMakeLists.txt):
#
#   plugin_test_includes.sh <source dir>
#
# Every #include of every plugins/<X>/**/test_*.c and test_*.h (subfolders
# included), and of every test helper
# in sdk/mock/loom/ that such a test includes, must name one of:
#   - a header of the SDK: <loom/...> found in sdk/include, in a kit's
#     include folder (sdk/kits/*/include) or in sdk/mock;
#   - a file of the test's own plugin folder ("name.h");
#   - "testutil.h" (tests/testutil.h, the Check helpers);
#   - a system or third-party header: <name> not under loom/.
# Anything else (the core's "stage_graph.h", "engine_api.h", <loom/sys/...>,
# <loom/api.h>, another folder's file) is core-private. The script prints
# each offending line, then the number of files with one, and exits 1 when
# that number is not 0.
set -u

[ $# -eq 1 ] || { echo "usage: $0 <source dir>" >&2; exit 2; }
cd "$1" || exit 2
[ -d plugins ] || { echo "$0: no plugins/ folder in $1" >&2; exit 2; }

# 0 when <loom/...> path $1 is an SDK, kit or mock header.
sdk_header() {
    local k
    [ -f "sdk/include/$1" ] && return 0
    [ -f "sdk/mock/$1" ] && return 0
    for k in sdk/kits/*/include; do
        [ -f "$k/$1" ] && return 0
    done
    return 1
}

# Prints the core-private includes of file $1 (own folder $2), one a line.
bad_includes() {
    local file=$1 own=$2 line path kind
    local head='^[0-9]+:[[:space:]]*#[[:space:]]*include[[:space:]]*'
    while IFS= read -r line; do
        kind=$(printf '%s\n' "$line" | sed -E "s/${head}([<\"]).*/\\1/")
        path=$(printf '%s\n' "$line" | sed -E "s/${head}[<\"]([^>\"]*)[>\"].*/\\1/")
        if [ "$kind" = "<" ]; then
            case $path in
            loom/*) sdk_header "$path" && continue ;;
            *) continue ;; # a system or third-party header
            esac
        else
            case $path in
            */* | ..*) ;;
            testutil.h) continue ;;
            *) [ -n "$own" ] && [ -f "$own/$path" ] && continue ;;
            esac
        fi
        local close='"'
        [ "$kind" = "<" ] && close='>'
        echo "$file:${line%%:*}: #include ${kind}${path}${close}" \
             "is not an SDK, mock, own-folder or system header"
    done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]' "$file")
}

files=0
bad=0
while IFS= read -r file; do
    [ -f "$file" ] || continue
    files=$((files + 1))
    own=""
    case $file in plugins/*) own=$(dirname "$file") ;; esac
    out=$(bad_includes "$file" "$own")
    if [ -n "$out" ]; then
        printf '%s\n' "$out"
        bad=$((bad + 1))
    fi
done < <(find plugins -mindepth 2 -type f \( -name 'test_*.c' -o -name 'test_*.h' \) |
         LC_ALL=C sort; printf '%s\n' sdk/mock/loom/*.h)

if [ "$files" -eq 0 ]; then
    echo "$0: no plugin test under $1/plugins" >&2
    exit 1
fi
echo "plugin tests and mock helpers including a core-private header: $bad (of $files files)"
[ "$bad" -eq 0 ]
