#!/usr/bin/env bash
# Issue 34: does a one-thread llama-server slow as requests wait on it?
# Closed loops of 256/64-token requests at rising concurrency against
# configuration C (a random-weight 4 x 128 model, 2 slots, one thread),
# the server pinned to core 1 and the client to core 0.
#   probe.sh GOODPUT LLAMA_SERVER OUT_DIR ["1 2 4 8 16 32 64 160"]
set -euo pipefail
goodput=$1 server=$2 out=$3 concs=${4:-1 2 4 8 16 32 64 160}
. "$(dirname "$0")/server-c.sh"
start_c "$out"
for c in $concs; do
  n=$(( c < 8 ? 120 : 200 ))
  taskset -c 0 "$goodput" run --url "$url" --concurrency "$c" --num-prompts "$n" \
    --input-tokens 256 --output-tokens 64 --out "$out/c$c.json" >"$out/c$c.txt" 2>&1 || true
  echo "c=$c n=$n: $(grep -E 'Request throughput|Median TPOT' "$out/c$c.txt" | tr -s ' ' | tr '\n' ';')" | tee -a "$out/summary.txt"
done
