#!/usr/bin/env bash
# Issue 33, ninth session: a closed loop's request-rate interval from the
# work its requests drew. Virtual time, so the machine's load does not
# change a number. Run from the repository root after
#   cargo build --release -p goodput --examples
set -euo pipefail
d=bench-results/2026-11-29-throughput-work
ex=target/release/examples/coverage
# Every reading of the closed loop's throughputs tried (the `~` rows).
COVERAGE_ONLY=closed COVERAGE_THROUGHPUT_ALT=1 $ex 200 intervals > $d/intervals-200-closed-alternatives.txt
# The whole table with the kept intervals.
$ex 200 intervals > $d/intervals-200.txt
# A fresh sample of the 2,000-request cells: 400 replications, seeds 200–599.
COVERAGE_SIZES=2000 COVERAGE_SEED_FROM=200 $ex 400 intervals > $d/intervals-400-2000-requests-fresh-seeds.txt
# compare's false alarms and power with these intervals.
$ex 100 compare > $d/compare-100.txt
