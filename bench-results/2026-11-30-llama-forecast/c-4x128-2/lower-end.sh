#!/usr/bin/env bash
# Configuration C (4 x 128, 2 slots, one thread): 600 requests at the rate
# the head's search answers for the 256/64 search's points, 2.13 req/s (the
# highest measuring pass below every measuring fail; the binary that ran
# the search headlined the fit's bare zero, 3.41, which failed).
#   lower-end.sh GOODPUT LLAMA_SERVER
set -euo pipefail
goodput=$1 server=$2
here=$(cd "$(dirname "$0")/../../.." && pwd)
d=$(cd "$(dirname "$0")" && pwd)
m=$(mktemp -d)
python3 "$here/crates/goodput/tests/llama/make_model.py" "$m" --layers 4 --embd 128 >/dev/null
. "$here/bench-results/2026-11-28-slow-llama/server.sh"
start_server "$server" "$m/tiny.gguf" 2 "$m/server.log"
taskset -a -p -c 1 "$server_pid" >/dev/null
set +e
taskset -c 0 "$goodput" run --url "$url" --request-rate 2.13 --num-prompts 600 \
  --slo 'ttft:p99<=600ms,tpot:p99<=15ms' --input-tokens 256 --output-tokens 64 \
  >"$d/256-64/run-2.13.txt" 2>&1
echo "600 requests at 2.13 req/s: exit $?"
