#!/usr/bin/env bash
# Issues 33 and 34, seventeenth session: a fit's zero with no interval is
# not headlined; where it lies above the highest measuring pass below every
# measuring fail, that pass answers (search/bare.rs). Virtual time, 100
# searches each, every search flag at its default. Run from the repository
# root after
#   cargo build --release -p goodput --example search_accuracy
# Compare with bench-results/2026-11-30-costed/{readme,slower-20}.txt (the
# same seeds before the change).
set -euo pipefail
d=bench-results/2026-11-30-bare
ex=target/release/examples/search_accuracy
$ex 100 8 20000 > $d/readme.txt
SEARCH_SLOWER=20 $ex 100 8 20000 > $d/slower-20.txt
