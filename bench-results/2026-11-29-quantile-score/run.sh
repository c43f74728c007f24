#!/usr/bin/env bash
# Issue 33, tenth session: percentile ends whose spread is read at the
# candidate bound (its design effect at the quantile's binomial variance)
# as well as at the estimate. Virtual time, so the machine's load does not
# change a number. Run from the repository root after
#   cargo build --release -p goodput --examples
set -euo pipefail
d=bench-results/2026-11-29-quantile-score
ex=target/release/examples/coverage
# The whole table (seeds 0-199, as every earlier table).
$ex 200 intervals > $d/intervals-200.txt
# The sample on which the estimate's reading failed (seeds 200-599,
# bench-results/2026-11-29-throughput-work/intervals-400-2000-requests-fresh-seeds.txt).
COVERAGE_ONLY=open COVERAGE_SIZES=2000 COVERAGE_SEED_FROM=200 $ex 400 intervals > $d/intervals-400-open-2000-seeds-200.txt
# A sample no rule was tried on.
COVERAGE_ONLY=open COVERAGE_SIZES=2000 COVERAGE_SEED_FROM=500000 $ex 400 intervals > $d/intervals-400-open-2000-seeds-500000.txt
# compare's false alarms and power: the ends only widen, never narrow.
$ex 100 compare > $d/compare-100.txt
