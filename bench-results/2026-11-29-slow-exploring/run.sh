#!/usr/bin/env bash
# Issue 34, tenth session: a search on a slow server, in virtual time. The
# README's deployment run 20 times slower (every engine step 20 times
# longer, the SLO 20 times looser): the same queue in slow motion, its
# sustained goodput 20 times lower, its answers about 20 s long. Run from
# the repository root after
#   cargo build --release -p goodput --example search_accuracy
set -euo pipefail
d=bench-results/2026-11-29-slow-exploring
ex=target/release/examples/search_accuracy
# Windows in multiples of the floor's median E2EL (exploring, measuring):
# 3,6 is the sweep's rule before this change; 3,40 the kept one.
for w in 3,6 8,6 8,20 8,40 3,40; do
  SEARCH_SLOWER=20 SEARCH_WINDOWS=$w $ex 100 8 20000 > $d/windows-${w/,/-}-slower-20.txt
done
# The kept rule, as the sweep applies it (no override).
SEARCH_SLOWER=20 $ex 100 8 20000 > $d/after-slower-20.txt
# The README's deployment itself: its windows are the defaults (its
# answers take about 1 s), so the search is as before.
$ex 100 8 20000 > $d/after-readme.txt
# A server whose capacity is a few times one request's pace (8 sequences
# a batch): left as found.
SEARCH_MAX_SEQS=8 $ex 100 8 20000 > $d/max-seqs-8.txt
