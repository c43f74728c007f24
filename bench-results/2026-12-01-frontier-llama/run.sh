#!/usr/bin/env bash
# The frontier's throughput against llama.cpp's own count: `goodput sweep
# --frontier` against llama-server (4 slots, one thread, the suite's random
# 4-layer model), each point's output_throughput beside the tokens the
# server counted generating (llamacpp:tokens_predicted_total) over the same
# measured window, from the server-metrics scrape. Run from the repository
# root after `cargo build --release -p goodput`; GOODPUT_LLAMA_SERVER names
# the llama-server binary.
set -euo pipefail
d=bench-results/2026-12-01-frontier-llama
m=$(mktemp -d)
python3 crates/goodput/tests/llama/make_model.py "$m" > /dev/null
"$GOODPUT_LLAMA_SERVER" -m "$m/tiny.gguf" --host 127.0.0.1 --port 18517 --parallel 4 -c 4096 \
  --threads 1 --threads-batch 1 --metrics --no-webui --seed 1 > $d/llama.log 2>&1 & srv=$!
trap 'kill $srv; rm -rf "$m"' EXIT
for i in $(seq 60); do curl -sf http://127.0.0.1:18517/health > /dev/null && break; sleep 1; done
target/release/goodput sweep --url http://127.0.0.1:18517 --frontier --frontier-max 16 \
  --point-time 6s --input-tokens 128 --output-tokens 64 --tokenizer "$m/tokenizer.json" \
  --out $d/frontier.json > $d/console.txt 2>&1
python3 - $d/frontier.json <<'PY' | tee $d/check.txt
import json, sys
doc = json.load(open(sys.argv[1]))
print("| concurrency | goodput output tok/s | tokens goodput counted / llama.cpp counted | goodput duration / scrape window (s) | llama.cpp tokens predicted / window (tok/s) | client / server |")
print("| --- | --- | --- | --- | --- | --- |")
for p in doc["points"]:
    r = p["result"]
    s = r["server_metrics"]["summary"]
    gen, win = s["generation_tokens"], s["window_s"]
    ours = r["output_throughput"]
    print(f"| {r['config']['load']['concurrency']} | {ours:.1f} | {r['total_output_tokens']} / {gen:.0f} | {r['duration']:.2f} / {win:.2f} | {gen / win:.1f} | {ours / (gen / win):.3f} |")
PY
# The sweep's own document is 1 MB; only the console and the check are kept.
rm $d/frontier.json
