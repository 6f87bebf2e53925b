#!/usr/bin/env bash
# check_conventions.sh - the man page, the bash completion and plugin names
# kept in step with the code.
#
#   check_conventions.sh man SRC LOOM           docs/man/loom.1 renders without
#       groff warnings, has a section for every command `loom --help` lists
#       and mentions every option of every `loom <command> --help`;
#   check_conventions.sh completion SRC LOOM    tools/completion/loom.bash
#       parses, completes `loom pl` to "plan plugins" and `loom plan --mo` to
#       "--model", offers every option of every `loom <command> --help`,
#       presets and plugin names from LOOM, and its static preset lists equal
#       core/problem/presets.c's;
#   check_conventions.sh plugin-names SRC       no two plugins under plugins/
#       share provides.name.
set -u
mode=${1:-}
src=${2:-}
loom=${3:-}
fails=0

fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}

# The commands `loom --help` lists.
commands() {
    "$loom" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { on = 0 }'
}

# The help text of one command (`plugins` and `workload` have subcommands).
command_help() {
    "$loom" "$1" --help 2>&1
}

# The long options a help text names.
options_of() {
    grep -o -- '--[a-z][a-z0-9-]*' | sort -u
}

check_man() {
    local page=$src/docs/man/loom.1 text warn cmd opt n=0
    [ -f "$page" ] || { fail "$page: missing"; return; }
    warn=$(groff -man -Tutf8 -ww -z "$page" 2>&1) || fail "groff exits non-zero on $page"
    [ -z "$warn" ] || fail "groff warnings on $page: $warn"
    text=$(sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' "$page")
    local cmds
    cmds=$(commands)
    [ -n "$cmds" ] || fail "no commands in \`loom --help\`"
    for cmd in $cmds; do
        grep -q "^\.SS loom $cmd\b" <<<"$text" || fail "loom.1: no section \".SS loom $cmd\""
        for opt in $(command_help "$cmd" | options_of); do
            n=$((n + 1))
            grep -Eq -- "(^|[^a-z0-9-])$opt([^a-z0-9-]|\$)" <<<"$text" ||
                fail "loom.1: \`loom $cmd --help\` lists $opt, the man page does not"
        done
    done
    echo "man page: $(wc -w <<<"$cmds") commands, $n options checked"
}

# Prints COMPREPLY for the words given, completing the last one.
complete_words() {
    bash -c '
        source "$1" || exit 1
        shift
        COMP_WORDS=("$@")
        COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
        COMPREPLY=()
        _loom
        printf "%s\n" "${COMPREPLY[@]}"
    ' complete "$src/tools/completion/loom.bash" "$@" 2>&1
}

expect_completion() {
    local want=$1 got
    shift
    got=$(complete_words "$@" | tr '\n' ' ' | sed 's/ $//')
    [ "$got" = "$want" ] || fail "completion of '$*': expected '$want', found '$got'"
}

check_completion() {
    local script=$src/tools/completion/loom.bash cmd opt got words n=0
    [ -f "$script" ] || { fail "$script: missing"; return; }
    bash -n "$script" || fail "bash -n $script"
    expect_completion "plan plugins" loom pl
    expect_completion "--model" loom plan --mo
    expect_completion "plan plugins" "$loom" pl
    expect_completion "--model" "$loom" plan --mo
    for cmd in $(commands); do
        case $cmd in
        plugins) words=("$loom" plugins list --) ;;
        workload) words=("$loom" workload generate --) ;;
        *) words=("$loom" "$cmd" --) ;;
        esac
        got=$(complete_words "${words[@]}")
        for opt in $(command_help "$cmd" | options_of); do
            n=$((n + 1))
            grep -qx -- "$opt" <<<"$got" ||
                fail "completion of 'loom $cmd --': \`loom $cmd --help\` lists $opt, the completion does not offer it"
        done
    done
    # Presets: from the binary, and the static fallback equal to presets.c.
    local presets_c=$src/core/problem/presets.c models clusters
    models=$(sed -n '/model_names\[\] = {/,/NULL}/p' "$presets_c" | grep -o '"[^"]*"' | tr -d '"' | tr '\n' ' ' | sed 's/ $//')
    clusters=$(sed -n 's/.*cluster_names\[\] = {\(.*\)NULL}.*/\1/p' "$presets_c" | grep -o '"[^"]*"' | tr -d '"' | tr '\n' ' ' | sed 's/ $//')
    [ -n "$models" ] && [ -n "$clusters" ] || fail "cannot read the preset names from $presets_c"
    expect_completion "$models" "$loom" plan --model ""
    expect_completion "$clusters" "$loom" plan --cluster ""
    expect_completion "$models" /nonexistent/loom plan --model ""
    expect_completion "$clusters" /nonexistent/loom plan --cluster ""
    # Plugin names for --use ROLE=NAME, with and without '=' splitting the word.
    expect_completion "interleaver=gpipe" "$loom" plan --use interleaver=gp
    expect_completion "gpipe" "$loom" plan --use interleaver = gp
    got=$(complete_words "$loom" plan --use memory_tuner =)
    grep -qx "ilp-memory" <<<"$got" || fail "completion of '--use memory_tuner=': no ilp-memory in '$got'"
    grep -qx "greedy" <<<"$got" || fail "completion of '--use memory_tuner=': no greedy in '$got'"
    expect_completion "cost_model= partitioner= ranker= interleaver= memory_tuner=" "$loom" plan --use ""
    echo "completion: $n options checked"
}

check_plugin_names() {
    python3 - "$src" <<'EOF' || fails=$((fails + 1))
import glob, json, os, sys
src = sys.argv[1]
by_name = {}
for path in sorted(glob.glob(os.path.join(src, "plugins/*/manifest.json"))):
    with open(path, encoding="utf-8") as f:
        m = json.load(f)
    by_name.setdefault(m["provides"]["name"], []).append(os.path.relpath(path, src))
dups = {n: p for n, p in by_name.items() if len(p) > 1}
for n, paths in sorted(dups.items()):
    print("FAIL: provides.name %r is used by %s" % (n, ", ".join(paths)))
print("plugin names: %d plugins, %d distinct names" % (sum(map(len, by_name.values())), len(by_name)))
sys.exit(1 if dups or not by_name else 0)
EOF
}

case $mode in
man) check_man ;;
completion) check_completion ;;
plugin-names) check_plugin_names ;;
*)
    echo "usage: check_conventions.sh man|completion SRC LOOM | plugin-names SRC" >&2
    exit 2
    ;;
esac
if [ "$fails" -gt 0 ]; then
    echo "$fails failure(s)"
    exit 1
fi
echo ok
