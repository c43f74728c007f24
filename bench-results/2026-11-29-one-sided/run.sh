#!/usr/bin/env bash
# The coverage study after a crowded run's lower ends became one-sided 95 %
# bounds (issue 33, 2026-11-29, seventh session): intervals over 200
# replications per cell, compare over 100 pairs. Virtual time; about 8
# minutes on one core. Writes beside this script.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/../.."
cargo build --release -p goodput --example coverage
target/release/examples/coverage 200 intervals > "$here/intervals-200.txt"
target/release/examples/coverage 100 compare > "$here/compare-100.txt"
