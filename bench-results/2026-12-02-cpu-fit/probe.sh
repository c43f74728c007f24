#!/usr/bin/env bash
# Issue 34: configuration C's prefills as the server's own log times them,
# in closed loops of 1 and 2 and open loops at 4 and 7 req/s (256/64).
#   probe.sh GOODPUT LLAMA_SERVER OUT_DIR
set -euo pipefail
g=$1 server=$2 out=$3
. "$(dirname "$0")/../2026-12-02-held-queue/server-c.sh"
start_c "$out"
for c in 1 2 1 2; do
  n0=$(grep -c "prompt eval time" "$out/server.log" || true)
  taskset -c 0 "$g" run --url "$url" --max-concurrency $c --num-prompts 80 --input-tokens 256 --output-tokens 64 --out "$out/c$c.json" > "$out/c$c.txt" 2>&1
  echo "c=$c"; grep "prompt eval time" "$out/server.log" | tail -n +$((n0+1)) | sed -E 's/.*prompt eval time = +([0-9.]+) ms \/ +([0-9]+) tokens.*/\1 \2/' | awk '$2>400 {s+=$1; t+=$2; n++} END {printf "  %d prefills, %.1f ms mean, %.4f ms/token\n", n, s/n, s/t}'
done
for r in 4 7; do
  n0=$(grep -c "prompt eval time" "$out/server.log" || true)
  taskset -c 0 "$g" run --url "$url" --request-rate $r --num-prompts 200 --input-tokens 256 --output-tokens 64 --out "$out/r$r.json" > "$out/r$r.txt" 2>&1
  echo "rate=$r"; grep "prompt eval time" "$out/server.log" | tail -n +$((n0+1)) | sed -E 's/.*prompt eval time = +([0-9.]+) ms \/ +([0-9]+) tokens.*/\1 \2/' | awk '$2>400 {s+=$1; t+=$2; n++} END {printf "  %d prefills, %.1f ms mean, %.4f ms/token\n", n, s/n, s/t}'
done
