#!/usr/bin/env bash
# Issue 33, eleventh session: a mean's spread read before the run's drain
# (the completions after its last send), its interval spanning the mean
# before the drain and the mean of all. Virtual time. Run from the
# repository root after
#   cargo build --release -p goodput --examples
set -euo pipefail
d=bench-results/2026-11-29-drain
ex=target/release/examples/coverage
$ex 200 intervals > $d/intervals-200.txt
$ex 100 compare > $d/compare-100.txt
# The closed loops' compare with 300 pairs a cell (the 92 % cell at 200
# requests is the one over 5 %).
COVERAGE_ONLY=closed $ex 300 compare > $d/compare-300-closed.txt
# Trial, not kept: batches of at least 64 requests (an env knob in
# stats/batch.rs for the trial only, MINBATCH=64).
