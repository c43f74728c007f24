#!/usr/bin/env bash
# Issue 34: calibrate configuration C (a random-weight 4 x 128 model, 2 slots,
# one thread; the server on core 1, the client on core 0) and forecast the
# two workloads of its searches, with their prompts as the server counts them.
#   [WARM=1] calibrate.sh GOODPUT LLAMA_SERVER OUT_DIR   (WARM=1: a warm-up first)
set -euo pipefail
g=$1 server=$2 out=$3
. "$(dirname "$0")/server-c.sh"
start_c "$out"
# WARM=1 (calibrate-warm.sh): 120 requests of 256/64 two at a time first.
if [ "${WARM:-0}" = 1 ]; then
  taskset -c 0 "$g" run --url "$url" --max-concurrency 2 --num-prompts 120 --input-tokens 256 --output-tokens 64 > "$out/warm.txt" 2>&1
fi
taskset -c 0 "$g" calibrate --url "$url" --max-num-batched-tokens 2048 --out "$out/profile.toml" > "$out/calibrate.txt" 2>&1
grep -E "held queue: [0-9]+ requests \(|check:|rms" "$out/calibrate.txt"
for w in "518 64" "264 128"; do
  set -- $w
  "$g" predict --profile "$out/profile.toml" --input-tokens "$1" --output-tokens "$2" \
    --slo 'ttft:p99<=600ms,tpot:p99<=15ms' > "$out/predict-$1-$2.txt" 2>&1
  grep "^predicted goodput" "$out/predict-$1-$2.txt"
done
