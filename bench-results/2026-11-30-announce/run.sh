#!/usr/bin/env bash
# Issue 34, fourteenth session: the time a sized search announces, its
# measuring points costed at the highest rate exploring saw pass. The
# search in virtual time (its answers are those of 2026-11-30-unsettled-pass;
# only the time said moves). Run from the repository root after
#   cargo build --release -p goodput --examples
set -euo pipefail
d=bench-results/2026-11-30-announce
ex=target/release/examples/search_accuracy
$ex 100 8 20000 > $d/readme.txt
SEARCH_SLOWER=20 $ex 100 8 20000 > $d/slower-20.txt
