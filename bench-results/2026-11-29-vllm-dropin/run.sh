#!/usr/bin/env bash
# vLLM's own CI reads goodput's result files (issue 36).
#
#   run.sh GOODPUT CONVERTER OUT
#
# GOODPUT: the goodput binary. CONVERTER: vLLM's
# .buildkite/performance-benchmarks/scripts/convert-results-json-to-markdown.py
# (from a vLLM checkout; needs pandas, tabulate, psutil, regex). OUT: a new
# directory.
#
# Starts `goodput sim` on port 8000 (vLLM's default), runs the serving
# tests vLLM's performance benchmarks run (their command lines with
# `vllm bench serve` replaced by `goodput bench serve`, a local ShareGPT-format
# file for the dataset, fewer prompts), names each result as vLLM's runner
# does (serving_<test>_qps_<qps>.json beside its .commands file), then runs
# the converter over the folder and prints its Markdown table.
set -euo pipefail
GOODPUT=$1 CONVERTER=$2 OUT=$3
mkdir -p "$OUT/results"
OUT=$(cd "$OUT" && pwd)
python3 - "$OUT/sharegpt.json" <<'PY'
import json, random, sys
random.seed(7)
words = "the a serving model token latency batch cache prefill decode request answer".split()
rows = []
for i in range(200):
    q = " ".join(random.choice(words) for _ in range(random.randint(20, 200)))
    a = " ".join(random.choice(words) for _ in range(random.randint(10, 120)))
    rows.append({"id": str(i), "conversations": [{"from": "human", "value": q}, {"from": "gpt", "value": a}]})
json.dump(rows, open(sys.argv[1], "w"))
PY
"$GOODPUT" sim --port 8000 > "$OUT/sim.log" 2>&1 &
SIM=$!
trap 'kill $SIM 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  curl -sf http://127.0.0.1:8000/v1/models > /dev/null && break
  sleep 0.2
done
MODEL=meta-llama/Llama-3.1-8B-Instruct
run() { # test-name qps args...
  local name=$1 qps=$2
  shift 2
  local file="serving_${name}_qps_${qps}.json"
  local client="vllm bench serve --save-result --result-dir $OUT/results --result-filename $file --request-rate $qps $*"
  local rc=0
  "$GOODPUT" bench serve --save-result --result-dir "$OUT/results" --result-filename "$file" \
    --request-rate "$qps" "$@" > "$OUT/${name}_qps_${qps}.log" 2>&1 || rc=$?
  echo "goodput bench serve ... $name qps $qps: exit $rc"
  python3 -c 'import json,sys; json.dump({"server_command": sys.argv[1], "client_command": sys.argv[2], "gpu_type": "goodput-sim"}, open(sys.argv[3], "w"))' \
    "vllm serve $MODEL --tensor-parallel-size 1 --dtype bfloat16" "$client" "$OUT/results/serving_${name}_qps_${qps}.commands"
}
for qps in 1 4 16 inf; do
  run llama8B_tp1_sharegpt "$qps" --model "$MODEL" --backend vllm --dataset-name sharegpt \
    --dataset-path "$OUT/sharegpt.json" --num-prompts 40
done
for qps in 4 inf; do
  run llama8B_tp1_random_1024_128 "$qps" --model "$MODEL" --backend vllm --dataset-name random \
    --random-input-len 1024 --random-output-len 128 --ignore-eos --num-prompts 100 --max-concurrency 32
done
ls "$OUT/results"
# The converter fills the tables into vLLM's descriptions page, read from
# ../.buildkite/…: a page of just the serving table.
mkdir -p "$OUT/.buildkite/performance-benchmarks"
echo '{serving_tests_markdown_table}' > "$OUT/.buildkite/performance-benchmarks/performance-benchmarks-descriptions.md"
cd "$OUT/results"
python3 "$CONVERTER" -r "$OUT/results"
cat "$OUT/results/benchmark_results.md"
