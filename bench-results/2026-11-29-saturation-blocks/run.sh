#!/usr/bin/env bash
# Issue 34, eleventh session: saturation's in-flight trend read in blocks
# of one fill (whole seconds, at least 1), and the search's fit zero bounded
# by the points the fit used. Virtual time. Run from the repository root
# after
#   cargo build --release -p goodput --example search_accuracy
set -euo pipefail
d=bench-results/2026-11-29-saturation-blocks
ex=target/release/examples/search_accuracy
# The README's deployment 20 times slower, then the README's own.
SEARCH_SLOWER=20 $ex 100 8 20000 > $d/slower-20.txt
$ex 100 8 20000 > $d/readme.txt
# The blocks alone (before the fit's bound), kept as
# slower-20-blocks-only.txt and readme-blocks-only.txt, were run by a build
# without the bound.
# One point's saturation verdicts, 12 seeds at 85 % of the slow server's
# sustained goodput (SEARCH_POINT=rate,requests,seeds):
SEARCH_SLOWER=20 SEARCH_POINT=1.07,845,12 $ex > $d/points-at-85-percent.txt
SEARCH_MAX_SEQS=8 $ex 100 8 20000 > $d/max-seqs-8.txt
# Fresh seeds, no rule tried on them.
SEARCH_SEED_FROM=100 $ex 100 8 20000 > $d/readme-seeds-100.txt
SEARCH_SLOWER=20 SEARCH_SEED_FROM=100 $ex 100 8 20000 > $d/slower-20-seeds-100.txt
