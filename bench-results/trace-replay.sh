#!/usr/bin/env bash
# Real-time precision of trace replay: a generic JSONL trace of Poisson
# arrivals at RATE req/s for SECONDS s (4-token outputs, 64-token prompts),
# replayed by goodput against the reference server (`bench serve`, its own
# process); prints the schedule lag (send time minus the trace's time) and
# the achieved rate. Needs `cargo build --release -p goodput -p goodput-bench`.
set -euo pipefail
RATE=${1:-500}
SECONDS_=${2:-10}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=$(mktemp -d)
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$DIR"' EXIT
python3 - "$RATE" "$SECONDS_" > "$DIR/trace.jsonl" <<'PY'
import json, random, sys
rate, secs = float(sys.argv[1]), float(sys.argv[2])
random.seed(1)
t = 0.0
while t < secs:
    print(json.dumps({"timestamp": round(t * 1e6), "input_tokens": 64, "output_tokens": 4}))
    t += random.expovariate(rate)
PY
"$ROOT/target/release/bench" serve --tokens 4 --duration-s 120 > "$DIR/addr" 2>/dev/null &
SERVER=$!
for _ in $(seq 50); do [ -s "$DIR/addr" ] && break; sleep 0.1; done
ADDR=$(grep -oE '127\.0\.0\.1:[0-9]+' "$DIR/addr" | head -1)
"$ROOT/target/release/goodput" run --url "http://$ADDR" --model m --quiet \
  --trace "$DIR/trace.jsonl" --trace-time-unit us --out "$DIR/r.json" >/dev/null 2>&1 || true
python3 - "$DIR/r.json" "$(wc -l < "$DIR/trace.jsonl")" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
lag = r["schedule_lag"]
print(f"requests in trace: {sys.argv[2]}; completed {r['completed']}, failed {r['failed']}")
print(f"offered (trace mean) {r['request_rate']:.1f} req/s, achieved {r['achieved_request_rate']:.1f} req/s")
print("schedule lag ms: mean {:.3f}, p50 {:.3f}, p99 {:.3f}, max {:.3f}".format(
    lag["mean_ms"], lag["p50_ms"], lag["p99_ms"], lag["max_ms"]))
PY
