#!/usr/bin/env bash
# Issue 40, prepared for a session lent a GPU (the library's `device`
# entry), not run yet: `goodput run --nvml` beside nvidia-smi's own
# sampling of the same GPUs. The load is the built-in simulator (the GPU
# idles or serves whatever else runs there): what is checked is that
# goodput's NVML readings (power, energy over the window) agree with
# nvidia-smi's, not a benchmark. Run from the repository root on the GPU
# machine after `cargo build --release -p goodput`; writes under $OUT.
set -euo pipefail
OUT=${OUT:-/tmp/nvml-check}
mkdir -p "$OUT"
nvidia-smi --query-gpu=index,name,power.draw,utilization.gpu,memory.used,clocks.sm \
  --format=csv,noheader,nounits -lms 200 > "$OUT/nvidia-smi.csv" & smi=$!
target/release/goodput run --nvml --server-metrics-interval 200ms \
  --request-rate 10 --num-prompts 300 --out "$OUT/run.json" > "$OUT/run.txt" 2>&1
kill $smi
python3 - "$OUT" <<'PY'
import csv, json, sys
out = sys.argv[1]
g = json.load(open(f"{out}/run.json"))["gpu_metrics"]
s = g["summary"]
rows = [r for r in csv.reader(open(f"{out}/nvidia-smi.csv"))]
mean = sum(float(r[2]) for r in rows) / len(rows)
print(f"goodput: {s['gpus']} GPUs, {s['energy_j']:.1f} J over {s['window_s']:.1f} s from {s['energy_from']}, mean {s['mean_power_w']:.1f} W")
print(f"nvidia-smi: mean power.draw {mean:.1f} W a GPU, {mean * s['gpus']:.1f} W for all, over {len(rows)} rows")
PY
