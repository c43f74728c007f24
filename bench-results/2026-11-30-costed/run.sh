#!/usr/bin/env bash
# Issue 34, sixteenth session: the time said costs the measuring points
# where exploring bracketed the edge when its fit put the edge above a rate
# an exploring point failed at (search.rs `costed_at`). Virtual time, every
# search flag at its default; the answers are line for line those of
# bench-results/2026-11-30-below-measuring/readme.txt and
# bench-results/2026-11-29-saturation-blocks/slower-20.txt, and only the
# time said moves (by at most 2 s, in 4 of 200 searches).
#   cargo build --release -p goodput --examples
set -euo pipefail
d=bench-results/2026-11-30-costed
ex=target/release/examples/search_accuracy
$ex 100 8 20000 > $d/readme.txt
SEARCH_SLOWER=20 $ex 100 8 20000 > $d/slower-20.txt
# The trial not kept, a build where the first measuring point also runs at
# the bracket's middle (`measure_at(self.placed(answer.rate))`):
# $ex 100 8 20000 > $d/readme-placed-at-the-bracket-trial.txt
