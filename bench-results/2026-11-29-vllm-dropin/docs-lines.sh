#!/usr/bin/env bash
# vLLM's documented `vllm bench serve` command lines, run by goodput (issue 36).
#
#   docs-lines.sh GOODPUT OUT
#
# Each line of docs-lines.txt (beside this script) is a command line from
# vLLM's documentation with only `vllm bench serve` replaced by
# `goodput bench serve`, and each dataset path replaced by a local stand-in
# written here ($SHAREGPT, $SONNET, $BURSTGPT, $CUSTOM, $OUT). It runs
# against `goodput sim` on vLLM's default port, 8000, with a time limit,
# and records its exit code, whether it wrote a result file, and the
# message that stopped it where one did.
set -uo pipefail
GOODPUT=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
OUT=$2
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export SHAREGPT=$OUT/ShareGPT_V3_unfiltered_cleaned_split.json
export SONNET=$OUT/sonnet.txt
export BURSTGPT=$OUT/BurstGPT_without_fails_2.csv
export CUSTOM=$OUT/custom.jsonl
export OUT
python3 - "$OUT" <<'PY'
import json, random, sys
out = sys.argv[1]
random.seed(7)
words = "the a serving model token latency batch cache prefill decode request answer".split()
def text(lo, hi):
    return " ".join(random.choice(words) for _ in range(random.randint(lo, hi)))
rows = [{"id": str(i), "conversations": [{"from": "human", "value": text(20, 200)},
                                         {"from": "gpt", "value": text(10, 120)}]} for i in range(300)]
json.dump(rows, open(f"{out}/ShareGPT_V3_unfiltered_cleaned_split.json", "w"))
with open(f"{out}/sonnet.txt", "w") as f:
    for _ in range(200):
        f.write(text(6, 10) + "\n")
with open(f"{out}/BurstGPT_without_fails_2.csv", "w") as f:
    f.write("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n")
    for i in range(300):
        q, a = random.randint(20, 600), random.randint(10, 300)
        f.write(f"{i * 0.5},ChatGPT,{q},{a},{q + a},Conversation log\n")
with open(f"{out}/custom.jsonl", "w") as f:
    for _ in range(300):
        f.write(json.dumps({"prompt": text(20, 200)}) + "\n")
import os
os.makedirs(f"{out}/data/spec_bench", exist_ok=True)
os.makedirs(f"{out}/data/speed_bench", exist_ok=True)
with open(f"{out}/data/spec_bench/question.jsonl", "w") as f:
    for i in range(80):
        f.write(json.dumps({"question_id": i, "category": "writing", "turns": [text(10, 80), text(5, 20)]}) + "\n")
with open(f"{out}/data/speed_bench/qualitative.jsonl", "w") as f:
    for i in range(80):
        f.write(json.dumps({"category": "coding", "messages": [{"role": "user", "content": text(10, 80)}]}) + "\n")
PY
# Hugging Face stand-ins in a Hub cache of their own (the ids the lines
# name, in the layout `hf download ID --repo-type dataset` leaves), written
# with pyarrow and PIL, the writers the Hub's files come from
# (pip install pyarrow pillow numpy).
export HF_HUB_CACHE=$OUT/hub
python3 - "$OUT/hub" <<'PY'
import io, os, random, sys
import numpy as np, pyarrow as pa, pyarrow.parquet as pq
from PIL import Image
hub = sys.argv[1]
random.seed(11)
words = "the a serving model token latency batch cache prefill decode request answer".split()
def text(lo, hi):
    return " ".join(random.choice(words) for _ in range(random.randint(lo, hi)))
def snapshot(repo, files):
    root = os.path.join(hub, "datasets--" + repo.replace("/", "--"))
    os.makedirs(os.path.join(root, "refs"), exist_ok=True)
    open(os.path.join(root, "refs", "main"), "w").write("0" * 40)
    for rel, table in files.items():
        path = os.path.join(root, "snapshots", "0" * 40, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        pq.write_table(table, path)  # snappy, pyarrow's default
def jpeg(h, w):
    b = io.BytesIO()
    Image.fromarray(np.random.default_rng(random.randrange(1 << 30)).integers(0, 256, (h, w, 3), dtype=np.uint8)).save(b, format="JPEG")
    return b.getvalue()
n = 60
snapshot("lmarena-ai/VisionArena-Chat", {"data/train-00000-of-00001.parquet": pa.table({
    "images": [[{"bytes": jpeg(random.choice([224, 448]), 448), "path": None}] for _ in range(n)],
    "conversation": [[[{"role": "user", "content": text(5, 40)}, {"role": "assistant", "content": text(5, 40)}]] for _ in range(n)],
})})
snapshot("likaixin/InstructCoder", {"data/train-00000-of-00001.parquet": pa.table({
    "input": [text(20, 120) for _ in range(n)], "instruction": [text(5, 20) for _ in range(n)],
})})
snapshot("AI-MO/aimo-validation-aime", {"data/train-00000-of-00001.parquet": pa.table({
    "problem": [text(20, 120) for _ in range(n)], "solution": [text(30, 300) for _ in range(n)],
})})
PY
# The simulator serves one model, under the name each line asks for (as the
# user's vLLM server would), restarted for each line.
SIM=
trap 'kill $SIM 2>/dev/null || true' EXIT
start_sim() {
  kill $SIM 2>/dev/null || true
  wait $SIM 2>/dev/null || true
  "$GOODPUT" sim --port 8000 --served-model-name "$1" > "$OUT/sim.log" 2>&1 &
  SIM=$!
  for _ in $(seq 50); do
    curl -sf http://127.0.0.1:8000/v1/models > /dev/null && break
    sleep 0.2
  done
}
n=0
echo "| # | exit | result file | stopped by | command |" > "$OUT/summary.md"
echo "| --- | --- | --- | --- | --- |" >> "$OUT/summary.md"
while IFS= read -r line; do
  case "$line" in ''|'#'*) continue ;; esac
  n=$((n + 1))
  dir="$OUT/line-$n"
  mkdir -p "$dir"
  model=$(sed -nE 's/.*--model[ =]([^ ]+).*/\1/p' <<< "$line")
  start_sim "${model:-meta-llama/Llama-3.1-8B-Instruct}"
  cmd=${line//goodput bench serve/\"\$GOODPUT\" bench serve}
  (cd "$dir" && timeout 300 bash -c "GOODPUT='$GOODPUT'; $cmd" > "$dir/stdout" 2> "$dir/stderr")
  rc=$?
  file=$(find "$dir" -name '*.json' -newer "$OUT/sim.log" | head -1)
  [ -n "$file" ] && file=yes || file=no
  why=$(grep -m1 -E "^(goodput: error|error:)" "$dir/stderr" | cut -c1-160 | tr '|' '/')
  echo "| $n | $rc | $file | ${why:--} | \`${line}\` |" >> "$OUT/summary.md"
  echo "line $n: exit $rc, result file $file ${why:+($why)}"
done < "$HERE/docs-lines.txt"
