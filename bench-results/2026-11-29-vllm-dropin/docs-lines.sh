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
