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
