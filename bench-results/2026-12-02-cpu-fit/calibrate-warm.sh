#!/usr/bin/env bash
# Issue 34: calibrate configuration C after 120 requests of 256/64 two at a
# time (WARM=0: on a fresh server), then forecast both workloads.
#   [WARM=0] calibrate-warm.sh GOODPUT LLAMA_SERVER OUT_DIR
set -euo pipefail
g=$1 server=$2 out=$3
. "$(dirname "$0")/../2026-12-02-held-queue/server-c.sh"
start_c "$out"
if [ "${WARM:-1}" = 1 ]; then
  taskset -c 0 "$g" run --url "$url" --max-concurrency 2 --num-prompts 120 --input-tokens 256 --output-tokens 64 > "$out/warm.txt" 2>&1
fi
taskset -c 0 "$g" calibrate --url "$url" --max-num-batched-tokens 2048 --out "$out/profile.toml" > "$out/calibrate.txt" 2>&1
grep -E "prefill: 5|check:|rms" "$out/calibrate.txt" | grep -v "^goodput calibrate: burst"
for w in "518 64" "264 128"; do
  set -- $w
  "$g" predict --profile "$out/profile.toml" --input-tokens "$1" --output-tokens "$2" \
    --slo 'ttft:p99<=600ms,tpot:p99<=15ms' > "$out/predict-$1-$2.txt" 2>&1
  grep "^predicted goodput" "$out/predict-$1-$2.txt"
done
