#!/usr/bin/env bash
# Issue 34: does a forecast's interval cover what the server sustains? Black
# boxes whose sustained goodput is known: built-in simulator deployments,
# each served over HTTP (`goodput sim`), calibrated over HTTP (`goodput
# calibrate`), then forecast (`goodput predict --profile`, 16 draws). The
# truth is the forecaster on the black box's own configuration (`goodput
# predict --sim`, 8 schedules of 3,000 requests, seeds apart from the
# forecast's): its sustained goodput.
#   bench-results/2026-11-28-forecast-coverage/run.sh GOODPUT OUT_DIR
set -euo pipefail
goodput=$1 out=$2
mkdir -p "$out"
boxes=(
  "llama-3.1-8b,h100-sxm|--model-profile llama-3.1-8b --hardware h100-sxm"
  "llama-3.2-1b,l4,max-num-seqs=48,num-gpu-blocks-override=4000|--model-profile llama-3.2-1b --hardware l4 --max-num-seqs 48 --num-gpu-blocks-override 4000"
  "llama-3.1-8b,a100-80gb,max-num-seqs=32|--model-profile llama-3.1-8b --hardware a100-80gb --max-num-seqs 32"
  "llama-3.1-70b,h200,tp=2|--model-profile llama-3.1-70b --hardware h200 --tensor-parallel 2"
)
workloads=(
  "--input-tokens 512 --output-tokens 128|ttft:p99<=300ms,tpot:p99<=50ms"
  "--input-tokens 2048 --output-tokens 256|ttft:p99<=1000ms"
)
echo "box,workload,slo,predicted,low,high,truth,error_pct,covers" >"$out/results.csv"
i=0
for box in "${boxes[@]}"; do
  spec=${box%%|*} flags=${box#*|}
  i=$((i + 1))
  # shellcheck disable=SC2086
  "$goodput" sim --port 0 $flags >"$out/sim-$i.log" 2>&1 &
  pid=$!
  url=
  for _ in $(seq 300); do
    url=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$out/sim-$i.log" | head -1 || true)
    [ -n "$url" ] && curl -sf "$url/health" >/dev/null 2>&1 && break
    sleep 0.1
  done
  "$goodput" calibrate --url "$url" --out "$out/profile-$i.toml" --quiet >"$out/calibrate-$i.txt" 2>&1
  kill "$pid"; wait "$pid" 2>/dev/null || true
  j=0
  for w in "${workloads[@]}"; do
    wflags=${w%%|*} slo=${w#*|}
    j=$((j + 1))
    # shellcheck disable=SC2086
    "$goodput" predict --profile "$out/profile-$i.toml" --slo "$slo" $wflags --draws 16 \
      --out "$out/forecast-$i-$j.json" >"$out/forecast-$i-$j.txt" 2>&1
    # shellcheck disable=SC2086
    "$goodput" predict --sim "$spec" --slo "$slo" $wflags --schedules 8 --requests 3000 --draws 0 \
      --seed 7777 --out "$out/truth-$i-$j.json" >"$out/truth-$i-$j.txt" 2>&1
    python3 - "$out" "$i" "$j" "$spec" "$wflags" "$slo" >>"$out/results.csv" <<'PY'
import json, sys
out, i, j, spec, w, slo = sys.argv[1:]
f = json.load(open(f"{out}/forecast-{i}-{j}.json"))
t = json.load(open(f"{out}/truth-{i}-{j}.json"))["goodput"]
g, iv = f["goodput"], f["interval"]
lo, hi = iv["low"], iv["high"]
print(f'"{spec}","{w}","{slo}",{g:.3f},{lo:.3f},{hi:.3f},{t:.3f},{100*(g/t-1):+.1f},{"yes" if lo <= t <= hi else "no"}')
PY
  done
done
column -s, -t "$out/results.csv"
