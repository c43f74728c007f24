#!/usr/bin/env bash
# Other throughput intervals beside the printed ones, and where a run's
# duration goes (BENCHMARKS.md, "Throughput intervals from the run's clock").
#   run.sh COVERAGE_BINARY OUT_DIR
# COVERAGE_BINARY: target/{debug,release}/examples/coverage (cargo build -p goodput --examples).
set -euo pipefail
BIN=$1 OUT=$2
mkdir -p "$OUT"
COVERAGE_THROUGHPUT_ALT=1 "$BIN" 40 intervals > "$OUT/intervals-40.txt" 2> "$OUT/duration-parts-40.txt"
COVERAGE_ONLY=open COVERAGE_THROUGHPUT_ALT=1 "$BIN" 40 intervals > "$OUT/intervals-40-open-with-sends-only.txt" 2>/dev/null
