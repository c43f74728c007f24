#!/usr/bin/env bash
# Issue 34: the forecast against the search on the slow llama.cpp server.
# Starts the same server run.sh ran (same model directory, slots, one
# thread), calibrates it over HTTP, and forecasts the workload run.sh's
# search measured: its prompts as the server counted them (the mean of the
# sweep's usage), 64-token answers, the same SLO.
#   bench-results/2026-11-28-slow-llama/predict.sh GOODPUT LLAMA_SERVER RUN_DIR [SLOTS]
set -euo pipefail
goodput=$1 server=$2 dir=$3 slots=${4:-3}
. "$(dirname "$0")/server.sh"
start_server "$server" "$dir/model/tiny.gguf" "$slots" "$dir/predict-server.log"
slo='ttft:p99<=600ms,tpot:p99<=15ms'
input=$(python3 -c "
import json; v=json.load(open('$dir/sweep.json'))
r=[p['result'] for p in v['points']]
print(round(sum(x['total_input_tokens'] for x in r)/sum(x['completed'] for x in r)))")
echo "prompts of $input tokens as the server counted them" | tee "$dir/predict-summary.txt"
"$goodput" calibrate --url "$url" --max-num-batched-tokens 2048 \
  --out "$dir/profile.toml" >"$dir/calibrate.txt" 2>&1
grep -iE "rms|check:" "$dir/calibrate.txt" | tee -a "$dir/predict-summary.txt"
"$goodput" predict --profile "$dir/profile.toml" --input-tokens "$input" --output-tokens 64 \
  --slo "$slo" --out "$dir/predict.json" >"$dir/predict.txt" 2>&1
grep -E "^predicted goodput" "$dir/predict.txt" | tee -a "$dir/predict-summary.txt"
grep '^goodput:' "$dir/sweep.txt" | sed 's/^/searched: /' | tee -a "$dir/predict-summary.txt"
