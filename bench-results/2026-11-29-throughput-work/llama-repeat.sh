#!/usr/bin/env bash
# Issue 33: the same llama.cpp server and plan as llama.sh, run as
# INVOCATIONS invocations of `--repeat REPEATS`: does the repeats' interval
# reach the run-to-run variation of the server's own speed?
#   bench-results/2026-11-29-throughput-work/llama-repeat.sh GOODPUT LLAMA_SERVER OUT_DIR [INVOCATIONS] [REPEATS]
set -euo pipefail
goodput=$1 server=$2 out=$3
invocations=${4:-4} repeats=${5:-5}
here=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
python3 "$here/crates/goodput/tests/llama/make_model.py" "$out/model" >/dev/null
. "$here/bench-results/2026-11-28-slow-llama/server.sh"
start_server "$server" "$out/model/tiny.gguf" 4 "$out/server.log"
for i in $(seq 1 "$invocations"); do
  "$goodput" run --url "$url" --concurrency 4 --num-prompts 300 \
    --input-tokens uniform:64,192 --output-tokens uniform:16,48 --seed "$((100 + i))" \
    --repeat "$repeats" --no-progress --out "$out/repeat-$i.json" >"$out/repeat-$i.txt" 2>&1
done
