# loom.bash - bash completion for the `loom` command line.
#
# Completes subcommands, the options of each subcommand, preset names
# (--model, --cluster), workload families (--generate, --family), roles and
# plugin names for --use ROLE=NAME and --param ROLE.KEY=VALUE, and files or
# folders for path options. Presets and plugins come from the loom binary
# being completed when it runs; otherwise from the lists below (the preset
# lists are those of core/problem/presets.c; tools/checks/check_conventions.sh
# keeps them equal).
#
# Install: `make install` puts it in share/bash-completion/completions/loom;
# or `source tools/completion/loom.bash` in a shell.

_loom_commands="ab plan tune plugins validate workload replan cp-balance calibrate calibrate-batch"
_loom_model_presets="vlm-s vlm-m vlm-l t2v-s t2v-l vlm-xl t2v-xl vit-5b vit-22b llama3-8b qwen2-32b qwen2-72b dit-5b dit-30b gpt-175b"
_loom_cluster_presets="h800 h100 h200 a100 a40"
_loom_families="image-pairs interleaved video rise-and-fall text"
_loom_roles="cost_model partitioner ranker interleaver memory_tuner"

# Options of each subcommand (the ones each `loom <command> --help` lists).
_loom_opts_plan="--manifest --model --cluster --parallel --global-batch --micro-batch-size --seq-len --workload --generate --packing-window --iterations --seed --stage-times --memory-cap --use --param --plugin-path --allow-untrusted-plugins --out --json --progress-csv --quiet --isolate --no-isolate --timeout-ms --memory-limit-mb --evaluations --path --help"
_loom_opts_ab="--model --cluster --parallel --global-batch --micro-batch-size --seq-len --workload --generate --packing-window --stage-times --iterations --seed --use --param --plugin-path --memory-cap --allow-untrusted-plugins --suite --threshold --memory-threshold --evaluations --wall-clock --shard --html --markdown --json --junit --timings --isolate --no-isolate --timeout-ms --memory-limit-mb --quiet --help"
_loom_opts_tune="--model --cluster --gpus --global-batch --seq-len --micro-batch-size --manifest --top --json --out --shard --tp-across-nodes --single-layouts --runtime --jobs --no-prune --quiet --iterations --seed --evaluations --memory-cap --use --param --plugin-path --path --generate --packing-window --allow-untrusted-plugins --help"
_loom_opts_tune_merge="--json --quiet --help"
_loom_opts_plugins="--json --load --plugin-path --path --allow-untrusted-plugins --help"
_loom_opts_validate="--plugin-path --path --use --param --allow-untrusted-plugins --help"
_loom_opts_workload="--family --iterations --microbatches --seed --sequence-tokens --tokens-per-image --packing-window --out --help"
_loom_opts_replan="--job --failed-nodes --full --json --out --help"
_loom_opts_cp_balance="--gpus --workloads --causal --segments --block --order --json --help"
_loom_opts_calibrate="--cluster --model --profile --measured --manifest --fit --out --table --max-residual --json --help"
_loom_opts_calibrate_batch="--model --workload --generate --global-batch --gpus --unit --alpha --p-error --n0 --estimator --costs --iterations --seed --json --help"

# Runs the loom binary being completed ($1 of COMP_WORDS), quietly.
_loom_run()
{
    local bin=${COMP_WORDS[0]}
    bin=${bin/#\~/$HOME}
    command -v -- "$bin" >/dev/null 2>&1 || return 1
    "$bin" "$@" 2>&1 </dev/null
}

# Preset names of `what` (model or cluster): from the binary's message for
# an unknown name, else the static list.
_loom_presets()
{
    local what=$1 out list
    if [ "$what" = model ]; then
        out=$(_loom_run calibrate-batch --model __loom_complete__ --generate text --global-batch 1)
    else
        out=$(_loom_run plan --quiet --iterations 1 --cluster __loom_complete__)
    fi
    list=$(printf '%s\n' "$out" | sed -n "s/.*expected a $what preset (\([^)]*\)).*/\1/p" | tr -d ,)
    if [ -z "$list" ]; then
        if [ "$what" = model ]; then list=$_loom_model_presets; else list=$_loom_cluster_presets; fi
    fi
    printf '%s\n' "$list"
}

# Names of the plugins of `role` that `loom plugins list` finds, with every
# --path / --plugin-path DIR already on the command line.
_loom_plugins()
{
    local role=$1 i paths=()
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
        --path | --plugin-path) [ -n "${COMP_WORDS[i + 1]}" ] && paths+=(--path "${COMP_WORDS[i + 1]}") ;;
        esac
    done
    _loom_run plugins list "${paths[@]}" |
        awk -v r="$role" 'NR > 1 && $2 == r { print $3 }'
}

# Files (or folders with -d) matching the current word.
_loom_files()
{
    compopt -o filenames 2>/dev/null
    if [ "$1" = -d ]; then
        COMPREPLY=($(compgen -d -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}

_loom()
{
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
    local cmd="" sub="" i w
    COMPREPLY=()
    for ((i = 1; i < COMP_CWORD; i++)); do
        w=${COMP_WORDS[i]}
        if [ -z "$cmd" ]; then
            case $w in -*) ;; *) cmd=$w ;; esac
        elif [ -z "$sub" ] && { [ "$cmd" = plugins ] || [ "$cmd" = workload ] || [ "$cmd" = tune ]; }; then
            case $w in -*) ;; *) sub=$w ;; esac
        fi
    done

    if [ -z "$cmd" ]; then
        COMPREPLY=($(compgen -W "$_loom_commands --help --version" -- "$cur"))
        return 0
    fi

    # --use ROLE=NAME and --param ROLE.KEY=VALUE, whether or not '=' split
    # the word (COMP_WORDBREAKS): "--use r = n", "--use r =", "--use r=n".
    local opt="" role="" val="" whole=0
    if [ "$cur" = "=" ]; then
        opt=${COMP_WORDS[COMP_CWORD - 2]} role=$prev val=""
    elif [ "$prev" = "=" ] && [ "$COMP_CWORD" -ge 3 ]; then
        opt=${COMP_WORDS[COMP_CWORD - 3]} role=${COMP_WORDS[COMP_CWORD - 2]} val=$cur
    elif [[ $cur == *=* ]]; then
        opt=$prev role=${cur%%=*} val=${cur#*=} whole=1
    fi
    if [ "$opt" = --use ] && [ -n "$role" ]; then
        local names
        names=$(_loom_plugins "$role")
        if [ $whole = 1 ]; then
            COMPREPLY=($(compgen -P "$role=" -W "$names" -- "$val"))
        else
            COMPREPLY=($(compgen -W "$names" -- "$val"))
        fi
        return 0
    fi

    case $prev in
    --model)
        COMPREPLY=($(compgen -W "$(_loom_presets model)" -- "$cur"))
        [[ $cur == */* || $cur == .* ]] && _loom_files
        return 0 ;;
    --cluster)
        COMPREPLY=($(compgen -W "$(_loom_presets cluster)" -- "$cur"))
        [[ $cur == */* || $cur == .* ]] && _loom_files
        return 0 ;;
    --generate | --family)
        COMPREPLY=($(compgen -W "$_loom_families" -- "$cur"))
        return 0 ;;
    --use)
        compopt -o nospace 2>/dev/null
        COMPREPLY=($(compgen -S = -W "$_loom_roles" -- "$cur"))
        return 0 ;;
    --param)
        compopt -o nospace 2>/dev/null
        COMPREPLY=($(compgen -S . -W "$_loom_roles" -- "$cur"))
        return 0 ;;
    --order)
        COMPREPLY=($(compgen -W "sorted unsorted" -- "$cur"))
        return 0 ;;
    --estimator)
        COMPREPLY=($(compgen -W "sum mean" -- "$cur"))
        return 0 ;;
    --runtime)
        COMPREPLY=($(compgen -W "pytorch_csv torchtitan megatron mimo" -- "$cur"))
        return 0 ;;
    --fit)
        COMPREPLY=($(compgen -W "eff_gemm eff_attention eff_memory eff_collective" -- "$cur"))
        return 0 ;;
    --iterations)
        if [ "$cmd" = calibrate ]; then _loom_files; fi
        return 0 ;;
    --manifest | --workload | --stage-times | --progress-csv | --suite | --markdown | --junit | --html | \
        --job | --costs | --profile | --table)
        _loom_files
        return 0 ;;
    --json)
        if [ "$cmd" = ab ] || [ "$sub" = merge ]; then _loom_files; return 0; fi ;;
    --out)
        if [ "$cmd" = plan ] || [ "$cmd" = tune ]; then _loom_files -d; else _loom_files; fi
        return 0 ;;
    --path | --plugin-path)
        _loom_files -d
        return 0 ;;
    --parallel | --seed | --memory-cap | --timeout-ms | --memory-limit-mb | \
        --threshold | --memory-threshold | --evaluations | --microbatches | --sequence-tokens | --tokens-per-image | --packing-window | --failed-nodes | --gpus | --workloads | --causal | \
        --segments | --block | --global-batch | --micro-batch-size | --seq-len | --top | --shard | --unit | --alpha | --p-error | --n0 | --max-residual)
        return 0 ;;
    esac

    local opts=""
    case $cmd in
    plan) opts=$_loom_opts_plan ;;
    ab) opts=$_loom_opts_ab ;;
    tune)
        if [ "$sub" = merge ]; then
            opts=$_loom_opts_tune_merge
            [[ $cur != -* ]] && { _loom_files; return 0; }
        elif [ -z "$sub" ] && [[ $cur != -* ]]; then
            COMPREPLY=($(compgen -W "merge" -- "$cur"))
            return 0
        else
            opts=$_loom_opts_tune
        fi ;;
    validate) opts=$_loom_opts_validate ;;
    replan) opts=$_loom_opts_replan ;;
    cp-balance) opts=$_loom_opts_cp_balance ;;
    calibrate) opts=$_loom_opts_calibrate ;;
    calibrate-batch) opts=$_loom_opts_calibrate_batch ;;
    plugins)
        if [ -z "$sub" ]; then
            COMPREPLY=($(compgen -W "list inspect --help" -- "$cur"))
            return 0
        fi
        if [ "$sub" = inspect ] && [[ $cur != -* ]]; then
            COMPREPLY=($(compgen -W "$(_loom_run plugins list | awk 'NR > 1 { print $1; print $3 }')" -- "$cur"))
            return 0
        fi
        opts=$_loom_opts_plugins ;;
    workload)
        if [ -z "$sub" ]; then
            COMPREPLY=($(compgen -W "generate --help" -- "$cur"))
            return 0
        fi
        opts=$_loom_opts_workload ;;
    *) return 0 ;;
    esac
    if [[ $cur != -* ]] && { [ "$cmd" = ab ] || [ "$cmd" = validate ]; }; then
        _loom_files # the manifests of `loom ab A.json B.json` and `loom validate MANIFEST`
    else
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    fi
    return 0
}

complete -F _loom loom
