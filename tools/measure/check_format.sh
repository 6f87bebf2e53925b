#!/usr/bin/env bash
# The files gpu_profile.py writes are what `loom calibrate` reads: a CPU run
# (--cpu: wall-clock times, format only) of a tiny model, then the profile
# priced by loom calibrate --fit none. Usage: check_format.sh LOOM SRC [PYTHON]
set -euo pipefail
loom=$1
src=$2
py=${3:-python3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$py" "$src/tools/measure/gpu_profile.py" --cpu --model "$src/tests/fidelity/models/tiny-vlm.json" \
    --out "$out" --tokens 32,64 --seq-len 16,32 --gemm-m 16 --attn-seq 16 --attn-tokens 32 \
    --warmup 0 --repeat 1 --shard-tp 2
for f in device.json gemm.csv attention.csv profile.csv shards.csv; do
    test -s "$out/$f" || { echo "check_format: $f missing"; exit 1; }
done
# every module at each token count it can hold (the ViT at its 16-token items)
rows=$(($(wc -l < "$out/profile.csv") - 1))
test "$rows" -ge 4 || { echo "check_format: $rows profile rows"; exit 1; }
"$loom" calibrate --cluster h800 --model "$src/tests/fidelity/models/tiny-vlm.json" \
    --profile "$out/profile.csv" --fit none --max-residual 1000 > "$out/log"
grep -q "$((2 * rows)) measurements, 0 factors" "$out/log" ||
    { cat "$out/log"; echo "check_format: loom calibrate did not price every row"; exit 1; }
echo "check_format: $rows profile rows accepted by loom calibrate"
# gpu_iteration.py on a tiny text model: one JSON with every timed iteration
"$py" "$src/tools/measure/gpu_iteration.py" --cpu --model "$src/tests/fidelity/models/tiny-lm.json" \
    --microbatches 2 --seq-len 16 --warmup 0 --repeat 2 --out "$out"
"$py" -c 'import json, sys; d = json.load(open(sys.argv[1])); assert len(d["iteration_ms"]) == 2 and d["median_ms"] > 0 and d["optimizer_ms"] > 0, d' "$out/iteration-tiny-lm.json"
echo "check_format: gpu_iteration.py wrote iteration-tiny-lm.json"
# a bad model file: file, JSON path, expected and found; exit 2, nothing written
bad="$out/bad.json"
printf '{"modules": [{"name": "vit", "layers": {"count": 1, "hidden": 64, "ffn_hidden": 0, "heads": 4}}]}' > "$bad"
set +e
msg=$("$py" "$src/tools/measure/gpu_profile.py" --cpu --model "$bad" --out "$out/bad" 2>&1)
rc=$?
set -e
test "$rc" = 2 && test ! -e "$out/bad" ||
    { echo "check_format: bad model: exit $rc"; exit 1; }
echo "$msg" | grep -qF "$bad: modules[0].layers.ffn_hidden: expected an integer >= 1, found 0" ||
    { echo "check_format: bad model message: $msg"; exit 1; }
echo "check_format: a bad model file is refused with its JSON path"
