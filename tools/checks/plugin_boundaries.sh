#!/usr/bin/env bash
# plugin_boundaries.sh - guard rails for the plugin folders, run by ctest
# (tests/guards/CMakeLists.txt). Each check prints every violation and
# exits 1 when there is one.
#
#   plugin_boundaries.sh includes <source dir>
#       No #include in any *.c or *.h file under plugins/<X>/ (subfolders
#       included) names a path containing
#       "../" or "plugins/", or a file that exists in another plugin's
#       folder (and not in X's own).
#   plugin_boundaries.sh cmake <source dir>
#       No plugins/<X>/CMakeLists.txt names a core/ source (core/....c) or
#       a "../" path.
#   plugin_boundaries.sh compile <source dir> <cc> [-I<dir>...]
#       Every non-test source of every plugin (*.c and *.h anywhere under
#       plugins/<X>/, not named test_*) compiles (-fsyntax-only) with only the SDK
#       headers (sdk/include), the kits' headers (sdk/kits/*/include), the
#       paper-algorithm libraries' headers (algorithms/*/include), the
#       given third-party include dirs (lp_solve, cJSON, libffi) and the
#       system headers on the include path: the plugin's own folder is
#       reached through #include "..." only.
set -u

# Plugins not checked (none: every plugin keeps to the rules).
SKIP_PLUGINS=""

# File name prefixes of test code (tests include testutil.h and the mock
# helpers of sdk/mock; plugin_test_includes.sh checks their includes);
# such files are left out of the compile check. Benchmarks, which drive the
# engine, live under tools/bench/, not in a plugin's folder.
TEST_PREFIXES="test_"

usage() {
    echo "usage: $0 includes|cmake <source dir>" >&2
    echo "       $0 compile <source dir> <cc> [-I<dir>...]" >&2
    exit 2
}

[ $# -ge 2 ] || usage
check=$1
src=$2
shift 2
cd "$src" || exit 2
[ -d plugins ] || { echo "$0: no plugins/ folder in $src" >&2; exit 2; }

# 1 when plugin folder name $1 is in SKIP_PLUGINS.
skipped() {
    local s
    for s in $SKIP_PLUGINS; do
        [ "$s" = "$1" ] && return 0
    done
    return 1
}

# 1 when file name $1 (no directory) is test code.
is_test() {
    local p
    for p in $TEST_PREFIXES; do
        case $1 in "$p"*) return 0 ;; esac
    done
    return 1
}

# The plugin folders to check, one per line.
plugin_dirs() {
    local d
    for d in plugins/*/; do
        d=${d%/}
        skipped "${d#plugins/}" || echo "$d"
    done
}

# The *.c and *.h files under plugin folder $1, subfolders included,
# sorted, one per line.
c_files() {
    find "$1" -type f \( -name '*.c' -o -name '*.h' \) | LC_ALL=C sort
}

fail=0
checked=0

check_includes() {
    local dir file line path other name
    while IFS= read -r dir; do
        name=${dir#plugins/}
        while IFS= read -r file; do
            checked=$((checked + 1))
            # "#include <path>" and "#include \"path\"", with any spacing
            while IFS= read -r line; do
                path=$(printf '%s\n' "$line" |
                       sed -E 's/^[0-9]+:[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([^>"]*)[>"].*/\1/')
                case $path in
                *../* | *plugins/*)
                    echo "$file:${line%%:*}: #include \"$path\" reaches outside the plugin's folder"
                    fail=1
                    continue ;;
                esac
                [ -e "$dir/$path" ] || [ -e "$(dirname "$file")/$path" ] && continue
                for other in plugins/*/; do
                    other=${other%/}
                    [ "$other" = "$dir" ] && continue
                    if [ -e "$other/$path" ]; then
                        echo "$file:${line%%:*}: #include \"$path\" names a file of $other (plugin $name may include only its own folder, <loom/...> and system headers)"
                        fail=1
                        break
                    fi
                done
            done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]' "$file")
        done < <(c_files "$dir")
    done < <(plugin_dirs)
}

check_cmake() {
    local dir file code
    while IFS= read -r dir; do
        file=$dir/CMakeLists.txt
        [ -f "$file" ] || continue
        checked=$((checked + 1))
        # comments (# to the end of the line) do not count
        code=$(sed -E 's/#.*$//' "$file")
        if printf '%s\n' "$code" |
           grep -nE 'core/[A-Za-z0-9_./-]*\.c([^A-Za-z0-9_]|$)'; then
            echo "$file: names a core/ source (a plugin links the SDK and kits only)"
            fail=1
        fi
        if printf '%s\n' "$code" | grep -nF '../'; then
            echo "$file: names a path outside the plugin's folder (../)"
            fail=1
        fi
    done < <(plugin_dirs)
}

check_compile() {
    [ $# -ge 1 ] || usage
    local cc=$1
    shift
    local inc=(-I sdk/include) k dir file out
    for k in sdk/kits/*/include algorithms/*/include; do
        [ -d "$k" ] && inc+=(-I "$k")
    done
    while IFS= read -r dir; do
        while IFS= read -r file; do
            is_test "$(basename "$file")" && continue
            checked=$((checked + 1))
            if ! out=$("$cc" -std=c11 -fsyntax-only -D_POSIX_C_SOURCE=200809L \
                       -x c "${inc[@]}" "$@" "$file" 2>&1); then
                echo "$file: does not compile with only the SDK, kit and system headers:"
                printf '%s\n' "$out" | head -n 5 | sed 's/^/    /'
                fail=1
            fi
        done < <(c_files "$dir")
    done < <(plugin_dirs)
}

case $check in
includes) check_includes ;;
cmake) check_cmake ;;
compile) check_compile "$@" ;;
*) usage ;;
esac

if [ "$checked" -eq 0 ]; then
    echo "$check: nothing checked under $src/plugins" >&2
    exit 1
fi
if [ "$fail" -ne 0 ]; then
    echo "$check: FAILED (skipped plugins: ${SKIP_PLUGINS:-none})"
    exit 1
fi
echo "$check: $checked files OK (skipped plugins: ${SKIP_PLUGINS:-none})"
