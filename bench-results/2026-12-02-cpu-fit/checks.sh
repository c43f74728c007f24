#!/usr/bin/env bash
# Issue 34: 600 requests of 128/128 against configuration C at the search's
# lower end (7.48 req/s) and at 1.2 x its upper end (10.18).
#   checks.sh GOODPUT LLAMA_SERVER OUT_DIR
set -euo pipefail
g=$1 server=$2 out=$3
. "$(dirname "$0")/../2026-12-02-held-queue/server-c.sh"
start_c "$out"
slo='ttft:p99<=600ms,tpot:p99<=15ms'
for r in 7.48 10.18; do
  set +e
  taskset -c 0 "$g" run --url "$url" --request-rate $r --num-prompts 600 --slo "$slo" --input-tokens 128 --output-tokens 128 --out "$out/run-$r.json" > "$out/run-$r.txt" 2>&1
  echo "128/128: 600 requests at $r req/s: exit $? ($(grep -E 'p99 TTFT|p99 TPOT' "$out/run-$r.txt" | grep -E '<=' | tr -s ' ' | tr '\n' ';'))"
  set -e
done
