#!/usr/bin/env bash
# Issues 33/34, fourteenth session: a fit with no interval whose zero lies
# below every measuring point decides nothing without a settled pass. The
# README's search in virtual time (its table came out line for line as
# 2026-11-30-unsettled-pass's). From the repository root after
#   cargo build --release -p goodput --examples
set -euo pipefail
d=bench-results/2026-11-30-below-measuring
target/release/examples/search_accuracy 100 8 20000 > $d/readme.txt
