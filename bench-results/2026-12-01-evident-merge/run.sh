#!/usr/bin/env bash
# Issue 33, twenty-fifth session: batch means merge below 8 batches, down
# to 4, only on a lag-1 autocorrelation above Anderson's one-sided 5 %
# point for independent batches (stats/batch.rs). Virtual time. Run from
# the repository root after
#   cargo build --release -p goodput --examples
# The before-*.txt files are the same commands with the build before the
# change (6246b04).
set -euo pipefail
d=bench-results/2026-12-01-evident-merge
ex=target/release/examples/coverage
$ex 200 intervals > $d/intervals-200.txt
$ex 100 compare > $d/compare-100.txt
# The closed loops' compare with 300 pairs a cell (the 92 % cell at 200
# requests was 6.7 % in bench-results/2026-11-29-drain/compare-300-closed.txt).
COVERAGE_ONLY=closed $ex 300 compare > $d/compare-300-closed.txt
# A fresh sample of the open loop at 400 requests (seeds 1000 on), 400
# replications a cell.
COVERAGE_SEED_FROM=1000 COVERAGE_SIZES=400 COVERAGE_ONLY=open $ex 400 intervals > $d/open-400-fresh-400.txt
# The search, as in bench-results/2026-11-30-bare/ (100 searches each).
s=target/release/examples/search_accuracy
$s 100 8 20000 > $d/search-readme.txt
SEARCH_SLOWER=20 $s 100 8 20000 > $d/search-slower-20.txt
# A longer run at a crowded load is as crowded: the crowding index of five
# open-loop runs a load at 2,000 and at 20,000 requests.
COVERAGE_SIZES=2000,20000 COVERAGE_ONLY=open $ex 5 intervals > $d/crowding-2000-20000.txt
