#!/usr/bin/env bash
# Issues 33/34, thirteenth session: a pass the fit puts past the edge
# decides only if settled. The search in virtual time, before and after
# (the tables came out byte-identical to 2026-11-29-bracket-interval's).
# Run from the repository root after
#   cargo build --release -p goodput --examples
set -euo pipefail
d=bench-results/2026-11-30-unsettled-pass
ex=target/release/examples/search_accuracy
$ex 100 8 20000 > $d/readme.txt
SEARCH_SLOWER=20 $ex 100 8 20000 > $d/slower-20.txt
