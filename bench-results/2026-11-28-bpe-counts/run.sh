#!/usr/bin/env bash
# Issue 34: output counts without the server's usage, on a vocabulary whose
# tokens hide in characters: a byte-level BPE over all 256 bytes trained on
# text in several scripts (make_model.py --varied), of another size than
# the suite's (4,096 tokens, 8 x 384). llama-server behind a proxy that
# strips usage; goodput's total output tokens against the server's.
#   bench-results/2026-11-28-bpe-counts/run.sh GOODPUT LLAMA_SERVER OUT_DIR
set -euo pipefail
goodput=$1 server=$2 out=$3
here=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
python3 "$here/crates/goodput/tests/llama/make_model.py" "$out/model" --varied --vocab 4096 \
  --layers 8 --embd 384 >/dev/null
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port) pport=$(free_port)
"$server" -m "$out/model/tiny.gguf" --host 127.0.0.1 --port "$port" --parallel 4 -c 4096 \
  --threads 1 --threads-batch 1 --no-webui --seed 1 >"$out/server.log" 2>&1 &
spid=$!
python3 "$(dirname "$0")/strip_usage.py" "$pport" "http://127.0.0.1:$port" "$out/totals.json" &
ppid=$!
trap 'kill $spid $ppid 2>/dev/null' EXIT
for p in "$port" "$pport"; do
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$p/health" >/dev/null && break; sleep 0.2; done
done
echo "case,requests,server_tokens,goodput_tokens,error_pct,events,sources" >"$out/results.csv"
for spec in "64 64" "256 128" "32 256"; do
  read -r input output <<<"$spec"
  rm -f "$out/totals.json"
  "$goodput" run --url "http://127.0.0.1:$pport" --concurrency 4 --num-prompts 40 \
    --input-tokens "$input" --output-tokens "$output" --tokenizer "$out/model/tokenizer.json" \
    --out "$out/run-$input-$output.json" --records "$out/records-$input-$output.jsonl" \
    >"$out/run-$input-$output.txt" 2>&1
  python3 - "$out" "$input" "$output" >>"$out/results.csv" <<'PY'
import json, sys, collections
out, i, o = sys.argv[1:]
# the server's count per request, by the x-request-id goodput sends
t = {k.rsplit("-", 1)[-1]: v for k, v in json.load(open(f"{out}/totals.json")).items()}
n = ours = theirs = events = 0
src = collections.Counter()
for line in open(f"{out}/records-{i}-{o}.jsonl"):
    r = json.loads(line)
    if r.get("output_tokens") is None or r.get("error") or r.get("warmup"):
        continue
    n += 1
    ours += r["output_tokens"]; theirs += t[str(r["request_id"])]
    events += r.get("events", 0); src[r["token_source"]] += 1
err = 100 * (ours - theirs) / theirs
print(f"{i}/{o},{n},{theirs},{ours},{err:.2f},{events},{' '.join(f'{k}:{v}' for k,v in sorted(src.items()))}")
PY
done
cat "$out/results.csv"
