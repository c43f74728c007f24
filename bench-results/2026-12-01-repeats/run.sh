#!/usr/bin/env bash
# Issue 33, twenty-first session: compare of two --repeat results (Welch's
# t-test across the repeats), and how far a 10 % slower prefill moves each
# figure of one 1,000-request run in units of the runs' spread (the most
# any test of one pair can see). Virtual time. Run from the repository
# root after
#   cargo build --release -p goodput --examples
set -euo pipefail
d=bench-results/2026-12-01-repeats
ex=target/release/examples/coverage
$ex 100 effect > $d/effect-100.txt
COVERAGE_REPEATS=5 $ex 100 repeats > $d/repeats-5-100.txt
# Near capacity in open loop five repeats a side are not enough; ten:
COVERAGE_ONLY=open COVERAGE_REPEATS=10 $ex 100 repeats > $d/repeats-10-open-100.txt
