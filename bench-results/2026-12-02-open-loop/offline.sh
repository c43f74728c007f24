#!/usr/bin/env bash
# Issue 34: configuration C calibrated (with its open loop), then open loops
# with their records at several rates for two workloads, each read offline
# against the profile by the held count and by the mean latency
# (open_loop::tests::offline), beside `goodput predict` for the searches'
# two workloads.
#   offline.sh GOODPUT LLAMA_SERVER OUT_DIR
set -euo pipefail
g=$1 server=$2 out=$3
here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/bench-results/2026-12-02-held-queue/server-c.sh"
start_c "$out"
taskset -c 0 "$g" run --url "$url" --max-concurrency 2 --num-prompts 120 --input-tokens 256 --output-tokens 64 > "$out/warm.txt" 2>&1
taskset -c 0 "$g" calibrate --url "$url" --max-num-batched-tokens 2048 --out "$out/profile.toml" > "$out/calibrate.txt" 2>&1
grep -E "^open loop|check:|held queue:" "$out/calibrate.txt"
list=()
# 125 client tokens are 258 of the server's (the open loop's prompt); 256 are 522.
for w in "125 64" "256 64" "64 128"; do
  set -- $w
  for r in ${RATES:-6 10 14 18}; do
    f="$out/open-$1-$2-$r.jsonl"
    taskset -c 0 "$g" run --url "$url" --request-rate "$r" --num-prompts $(( r * 30 )) --warmup 0 \
      --input-tokens "$1" --output-tokens "$2" --records "$f" > "$out/open-$1-$2-$r.txt" 2>&1 || true
    list+=("$r:$f")
  done
done
IFS=,; echo "${list[*]}" > "$out/records.list"
