#!/usr/bin/env bash
# Issue 33: do the closed loop's throughput intervals cover on a real engine?
# REPS closed-loop runs of the same plan (different seeds) against llama.cpp's
# llama-server serving a random-weight model; the truth is the mean of the
# runs, and each run's printed interval is checked against it.
#   bench-results/2026-11-29-throughput-work/llama.sh GOODPUT LLAMA_SERVER OUT_DIR [REPS] [USERS] [REQUESTS]
set -euo pipefail
goodput=$1 server=$2 out=$3
reps=${4:-30} users=${5:-4} requests=${6:-300}
here=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
python3 "$here/crates/goodput/tests/llama/make_model.py" "$out/model" >/dev/null
. "$here/bench-results/2026-11-28-slow-llama/server.sh"
start_server "$server" "$out/model/tiny.gguf" "$users" "$out/server.log"
for i in $(seq 1 "$reps"); do
  "$goodput" run --url "$url" --concurrency "$users" --num-prompts "$requests" \
    --input-tokens uniform:64,192 --output-tokens uniform:16,48 --seed "$i" \
    --no-progress --out "$out/run-$i.json" >/dev/null 2>"$out/run-$i.err"
done
python3 - "$out" "$reps" <<'PY' | tee "$out/summary.txt"
import json, statistics, sys
out, reps = sys.argv[1], int(sys.argv[2])
runs = [json.load(open(f"{out}/run-{i}.json")) for i in range(1, reps + 1)]
for key in ["request_throughput", "output_throughput"]:
    v = [r[key] for r in runs]
    ci = [r["ci"][key] for r in runs]
    truth, sd = statistics.mean(v), statistics.stdev(v)
    half = statistics.mean((hi - lo) / 2 for lo, hi in ci)
    covered = sum(lo <= truth <= hi for lo, hi in ci)
    print(f"{key}: mean {truth:.2f}, sd {sd:.3f} ({100*sd/truth:.2f} %), mean half-width {half:.3f}, "
          f"w {half/(1.96*sd):.2f}, covered {covered} of {reps}")
PY
