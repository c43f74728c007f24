#!/usr/bin/env bash
# Predicted against measured: calibrate a server over HTTP, forecast its
# sustained goodput for workloads unlike the calibration's shapes with
# `goodput predict`, then measure each with `goodput sweep --search goodput`
# (real time, about 5 minutes a workload) and print one table.
#
#   predict-vs-measured.sh secret   # the simulator with the black-box test's secret configuration
#   predict-vs-measured.sh llama    # llama.cpp's llama-server (tests/llama/build-server.sh) and
#                                   # the tiny random-weight model of tests/llama/make_model.py
#
# Everything runs on 127.0.0.1; the server is stopped at the end. Results go
# to $WORK (default /tmp/goodput-predict-<mode>). Needs target/release/goodput
# (cargo build --release -p goodput).
set -euo pipefail
cd "$(dirname "$0")/../.."
MODE=${1:?usage: predict-vs-measured.sh secret|llama}
WORK=${WORK:-/tmp/goodput-predict-$MODE}
GOODPUT=${GOODPUT:-target/release/goodput}
SEARCH_TIME=${SEARCH_TIME:-270s}
mkdir -p "$WORK"
server_pid=
trap '[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true' EXIT

wait_for() { # URL-file: the line holding the server's address
  for _ in $(seq 600); do
    url=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$1" | head -1 || true)
    [ -n "$url" ] && curl -sf "$url/health" >/dev/null 2>&1 && { echo "$url"; return; }
    sleep 0.1
  done
  echo "the server did not start: $(cat "$1")" >&2; exit 1
}

case "$MODE" in
secret)
  # The black-box test's secret configuration (crates/goodput/tests/predict.rs).
  cat > "$WORK/secret.toml" <<'EOF'
max_num_seqs = 48
num_gpu_blocks_override = 9000
[hardware]
name = "secret-gpu"
memory_gib = 96.0
peak_tflops = 700.0
bandwidth_gbps = 2400.0
interconnect_gbps = 100.0
allreduce_latency_us = 10.0
gemm_efficiency = 0.7
gemm_half_tokens = 120.0
attention_efficiency = 0.5
mbu = 0.7
step_overhead_ms = 3.0
per_seq_overhead_us = 20.0
EOF
  "$GOODPUT" sim --config "$WORK/secret.toml" --port 0 2> "$WORK/server.log" &
  server_pid=$!
  TOKENIZER=()
  CALIBRATE=()
  WORKLOADS=(
    "a|--input-tokens 256 --output-tokens 512|ttft:p99<=150ms"
    "b|--input-tokens 2048 --output-tokens 128|ttft:p99<=500ms"
    "c|--input-tokens 256 --output-tokens 128 --turns 4 --think-time 1s|ttft:p99<=300ms,tpot:p99<=40ms"
  )
  ;;
llama)
  bin=$(crates/goodput/tests/llama/build-server.sh)
  python3 crates/goodput/tests/llama/make_model.py "$WORK/model" >/dev/null
  # 4 slots of 2,048 tokens, one thread: the test suite's server with room for longer prompts.
  "$bin" -m "$WORK/model/tiny.gguf" --host 127.0.0.1 --port 0 --parallel 4 -c 8192 \
    --threads 1 --threads-batch 1 --metrics --no-webui --seed 1 2> "$WORK/server.log" &
  server_pid=$!
  # The model's own tokenizer, so that the sweep's lengths are the server's.
  TOKENIZER=(--tokenizer "$WORK/model/tokenizer.json")
  # llama.cpp prefills up to its --batch-size (2,048 by default) a step.
  CALIBRATE=(--max-num-batched-tokens 2048)
  WORKLOADS=(
    "a|--input-tokens 128 --output-tokens 32|ttft:p99<=250ms"
    "b|--input-tokens 768 --output-tokens 16|ttft:p99<=600ms"
  )
  ;;
*) echo "unknown mode $MODE (secret or llama)" >&2; exit 2 ;;
esac

URL=$(wait_for "$WORK/server.log")
echo "server at $URL" >&2
set -x
"$GOODPUT" calibrate --url "$URL" "${CALIBRATE[@]}" --out "$WORK/profile.toml" | tee "$WORK/calibrate.txt"
for w in "${WORKLOADS[@]}"; do
  IFS='|' read -r name flags slo <<< "$w"
  # shellcheck disable=SC2086
  "$GOODPUT" predict --profile "$WORK/profile.toml" $flags --slo "$slo" --out "$WORK/predict-$name.json" \
    | tee "$WORK/predict-$name.txt"
  # shellcheck disable=SC2086
  "$GOODPUT" sweep --url "$URL" --search goodput --search-time "$SEARCH_TIME" $flags "${TOKENIZER[@]}" \
    --slo "$slo" --out "$WORK/measure-$name.json" --quiet 2> "$WORK/measure-$name.err" \
    | tee "$WORK/measure-$name.txt"
done
set +x
echo "| workload | SLO | predicted (interval) | measured (interval) | predicted / measured |"
echo "| --- | --- | --- | --- | --- |"
for w in "${WORKLOADS[@]}"; do
  IFS='|' read -r name flags slo <<< "$w"
  python3 - "$WORK/predict-$name.json" "$WORK/measure-$name.json" "$flags" "$slo" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
m = json.load(open(sys.argv[2]))
g = m.get("goodput") or {}
measured = g.get("rate") or 0.0
iv = g.get("interval")
pi = p.get("interval") or {}
pint = f" ({pi['low']:.2f}–{pi['high']:.2f})" if pi else ""
mint = f" ({iv[0]:.2f}–{iv[1]:.2f})" if iv else ""
ratio = p["goodput"] / measured if measured else float("nan")
print(f"| `{sys.argv[3]}` | `{sys.argv[4]}` | {p['goodput']:.2f}{pint} | {measured:.2f}{mint} | {ratio:.3f} |")
EOF
done
