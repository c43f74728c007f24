#!/usr/bin/env bash
# Issue 37, fifteenth session: the thin binary, before (8f9d744) and after.
# 1. bench all with each binary, one after the other on the same machine:
#      target/release/bench all --goodput OLD --work-dir /tmp/bench-8f9d744 > bench-all-8f9d744.md
#      target/release/bench all --goodput NEW --work-dir /tmp/bench-head    > bench-all-head.md
# 2. the same saved results rendered by both binaries (console, CSV, HTML,
#    all overlaid, compare as text / Markdown / JSON):
#      G=NEW; $G run --num-prompts 60 --concurrency 4 --out closed.json --quiet
#      $G run --request-rate 10 --max-concurrency 8 --num-prompts 60 --out open.json --quiet
#      $G run --num-prompts 30 --repeat 2 --out rep.json --quiet
#      $G sweep --rates 4,8 --point-time 3s --out sweep.json --quiet
#      ../2026-11-30-front-door/identical.sh OLD NEW OUT closed.json open.json rep.json sweep.json \
#        /tmp/bench-head/goodput-{256,1024}-r1.results.json /tmp/bench-head/goodput-open-2000.results.json
#    > identical-diff.txt: 34 files, 28 identical; 6 HTML pages differ in
#    their Load row only (one Display for Load).
# 3. the README's 100 virtual searches, line for line as the fourteenth
#    session's but for wall time:
#      target/release/examples/search_accuracy 100 8 20000 > search-accuracy-readme.txt
set -euo pipefail
old=${1:?old goodput} new=${2:?new goodput}
here=$(cd "$(dirname "$0")" && pwd)
bench=${BENCH:-target/release/bench}
"$bench" all --goodput "$old" --work-dir /tmp/bench-old > "$here/bench-all-old.md"
"$bench" all --goodput "$new" --work-dir /tmp/bench-new > "$here/bench-all-new.md"
