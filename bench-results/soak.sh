#!/usr/bin/env bash
# Memory over a long run: the simulator in its own process (llama-3.2-1b,
# 1,024 sequences) and goodput at 1,000 streams for MINUTES minutes;
# goodput's RSS sampled every minute, and its throughput at the end.
# Needs `cargo build --release -p goodput`.
set -euo pipefail
MINUTES=${1:-10}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
G="$ROOT/target/release/goodput"
DIR=$(mktemp -d)
trap 'kill $SIM 2>/dev/null || true; rm -rf "$DIR"' EXIT
"$G" sim --port 0 --model-profile llama-3.2-1b --max-num-seqs 1024 > "$DIR/sim.out" 2>&1 &
SIM=$!
for _ in $(seq 100); do grep -qoE 'http://127\.0\.0\.1:[0-9]+' "$DIR/sim.out" && break; sleep 0.1; done
URL=$(grep -oE 'http://127\.0\.0\.1:[0-9]+' "$DIR/sim.out" | head -1)
"$G" run --url "$URL" --endpoint completions --concurrency 1000 --duration "${MINUTES}m" \
  --input-tokens 128 --output-tokens 300 --warmup 0 --quiet --out "$DIR/r.json" > /dev/null 2>&1 &
RUN=$!
echo "| minute | goodput RSS (MiB) |"
echo "| ---: | ---: |"
for m in $(seq 1 "$MINUTES"); do
  sleep 60
  RSS=$(awk '/VmRSS/ {print $2}' /proc/$RUN/status 2>/dev/null || echo 0)
  printf '| %d | %.1f |\n' "$m" "$(echo "$RSS / 1024" | bc -l)"
done
wait $RUN || true
python3 - "$DIR/r.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"\ncompleted {r['completed']}, failed {r['failed']}, duration {r['duration']:.0f} s, "
      f"output {r['output_throughput']:.0f} tok/s, ITL p99 {r['p99_itl_ms']:.2f} ms")
print("notes:", *r["run"]["notes"], sep="\n  ")
PY
