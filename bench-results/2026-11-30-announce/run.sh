#!/usr/bin/env bash
# Issue 34, fourteenth session: a trial, not kept. The time a sized search
# announces, its measuring points costed at the highest rate exploring saw
# pass (in search.rs `sizing`: `point_cost(lo.min(rate), requests)`, then
# only when the edge estimate is above a rate exploring saw fail). Built
# from that change, from the repository root:
#   cargo build --release -p goodput --examples
set -euo pipefail
d=bench-results/2026-11-30-announce
ex=target/release/examples/search_accuracy
$ex 100 8 20000 > $d/readme-highest-pass.txt            # lo.min(rate)
SEARCH_SLOWER=20 $ex 100 8 20000 > $d/slower-20-highest-pass.txt
# with the `rate > hi` condition instead:
# $ex 100 8 20000 > $d/readme-above-a-fail.txt
