#!/usr/bin/env bash
# Issue 34: the forecast against settled searches on slow llama.cpp servers,
# two configurations the suite does not use, two workloads each.
# For one configuration: its model, one one-thread llama-server, the default
# search for each workload (the issue's SLO), 600 requests at the first
# workload's lower end and 600 at 1.2 x its upper end (unless CHECKS=0),
# then a calibration over HTTP and `goodput predict` for each workload with
# its prompts as the server counted them in the search.
#   [SERVER_CPU=1] [CHECKS=0] run.sh GOODPUT LLAMA_SERVER OUT_DIR LAYERS EMBD SLOTS "IN/OUT IN/OUT"
# A workload whose sweep.json is already in OUT_DIR/IN-OUT/ is not searched again.
set -euo pipefail
goodput=$1 server=$2 out=$3 layers=$4 embd=$5 slots=$6 workloads=$7
here=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
python3 "$here/crates/goodput/tests/llama/make_model.py" "$out/model" --layers "$layers" --embd "$embd" >/dev/null
. "$here/bench-results/2026-11-28-slow-llama/server.sh"
start_server "$server" "$out/model/tiny.gguf" "$slots" "$out/server.log"
# SERVER_CPU=N pins the server to one core (run the script itself with
# `taskset -c M` to keep the client on another).
if [ -n "${SERVER_CPU:-}" ]; then taskset -a -p -c "$SERVER_CPU" "$server_pid" >/dev/null; fi
slo='ttft:p99<=600ms,tpot:p99<=15ms'
first=1
for w in $workloads; do
  in=${w%/*} outt=${w#*/} d="$out/$in-$outt"
  mkdir -p "$d"
  work=(--input-tokens "$in" --output-tokens "$outt")
  if [ ! -f "$d/sweep.json" ]; then
    start=$(date +%s)
    set +e
    "$goodput" sweep --url "$url" --search goodput --slo "$slo" "${work[@]}" --out "$d/sweep.json" \
      >"$d/sweep.txt" 2>"$d/sweep.err"
    echo "$w: sweep exit $? after $(( $(date +%s) - start )) s" | tee -a "$out/summary.txt"
    set -e
    grep 'goodput: search:' "$d/sweep.err" | tee -a "$out/summary.txt" || true
  fi
  grep '^goodput:' "$d/sweep.txt" | sed "s|^|$w: |" | tee -a "$out/summary.txt"
  if [ "$first" = 1 ] && [ "${CHECKS:-1}" = 1 ]; then
    read -r lo hi < <(python3 -c "
import json; g=json.load(open('$d/sweep.json'))['goodput']
i=g.get('interval') or [g['rate'], g['rate']]
print(i[0], i[1]) if g['rate'] > 0 and not g.get('inconclusive') else print('none none')")
    if [ "$lo" != none ]; then
      for r in "$lo" "$(python3 -c "print($hi*1.2)")"; do
        set +e
        "$goodput" run --url "$url" --request-rate "$r" --num-prompts 600 --slo "$slo" "${work[@]}" \
          --out "$d/run-$r.json" >"$d/run-$r.txt" 2>&1
        echo "$w: 600 requests at $r req/s: exit $? ($(grep -E 'p99 TTFT|p99 TPOT' "$d/run-$r.txt" | grep -E '<=' | tr -s ' ' | tr '\n' ';'))" | tee -a "$out/summary.txt"
        set -e
      done
    fi
  fi
  first=0
done
"$goodput" calibrate --url "$url" --max-num-batched-tokens 2048 --out "$out/profile.toml" \
  >"$out/calibrate.txt" 2>&1
grep -iE "rms|check:" "$out/calibrate.txt" | tee -a "$out/summary.txt"
for w in $workloads; do
  in=${w%/*} outt=${w#*/} d="$out/$in-$outt"
  counted=$(python3 -c "
import json; v=json.load(open('$d/sweep.json'))
r=[p['result'] for p in v['points']]
print(round(sum(x['total_input_tokens'] for x in r)/sum(x['completed'] for x in r)))")
  "$goodput" predict --profile "$out/profile.toml" --input-tokens "$counted" --output-tokens "$outt" \
    --slo "$slo" --out "$d/predict.json" >"$d/predict.txt" 2>&1
  echo "$w (prompts of $counted tokens as the server counted them): $(grep -E '^predicted goodput' "$d/predict.txt")" | tee -a "$out/summary.txt"
done
