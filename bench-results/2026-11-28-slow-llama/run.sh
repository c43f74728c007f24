#!/usr/bin/env bash
# Issue 34: the default goodput search against a slow llama.cpp server (a
# configuration the suite does not use), then 600 requests at the
# interval's lower end, and 600 at 1.2 x its upper end.
#   bench-results/2026-11-28-slow-llama/run.sh GOODPUT LLAMA_SERVER OUT_DIR [LAYERS EMBD SLOTS]
set -euo pipefail
goodput=$1 server=$2 out=$3
layers=${4:-8} embd=${5:-384} slots=${6:-4}
here=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
python3 "$here/crates/goodput/tests/llama/make_model.py" "$out/model" --layers "$layers" --embd "$embd" >/dev/null
. "$(dirname "$0")/server.sh"
start_server "$server" "$out/model/tiny.gguf" "$slots" "$out/server.log"
slo='ttft:p99<=600ms,tpot:p99<=15ms'
work=(--input-tokens 256 --output-tokens 64)
start=$(date +%s)
set +e
"$goodput" sweep --url "$url" --search goodput --slo "$slo" "${work[@]}" --out "$out/sweep.json" \
  >"$out/sweep.txt" 2>"$out/sweep.err"
echo "sweep exit $? after $(( $(date +%s) - start )) s" | tee "$out/summary.txt"
grep 'goodput: search:' "$out/sweep.err" | tee -a "$out/summary.txt"
grep '^goodput:' "$out/sweep.txt" | tee -a "$out/summary.txt"
read -r lo hi < <(python3 -c "
import json; g=json.load(open('$out/sweep.json'))['goodput']
i=g.get('interval') or [g['rate'], g['rate']]
print(i[0], i[1]) if g['rate'] > 0 and not g.get('inconclusive') else print('none none')")
if [ "$lo" = none ]; then echo "no settled rate: nothing to hold" | tee -a "$out/summary.txt"; exit 0; fi
for r in "$lo" "$(python3 -c "print($hi*1.2)")"; do
  "$goodput" run --url "$url" --request-rate "$r" --num-prompts 600 --slo "$slo" "${work[@]}" \
    --out "$out/run-$r.json" >"$out/run-$r.txt" 2>&1
  echo "600 requests at $r req/s: exit $? ($(grep -E 'p99 TTFT|p99 TPOT' "$out/run-$r.txt" | grep -E '<=' | tr -s ' ' | tr '\n' ';'))" | tee -a "$out/summary.txt"
done
