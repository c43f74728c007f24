#!/usr/bin/env bash
# Issue 33/34, twelfth session: a bracket answer (the fit's zero outside the
# points it ran) keeps the fit's interval where the interval holds the rate.
# Virtual time; the tables came out as the eleventh session's, line for line
# but the reference's wall time. Run from the repository root after
#   cargo build --release -p goodput --example search_accuracy
set -euo pipefail
d=bench-results/2026-11-29-bracket-interval
ex=target/release/examples/search_accuracy
$ex 100 8 20000 > $d/readme.txt
SEARCH_SLOWER=20 $ex 100 8 20000 > $d/slower-20.txt
