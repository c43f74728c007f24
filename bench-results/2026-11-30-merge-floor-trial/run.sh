#!/usr/bin/env bash
# Issue 33, seventeenth session, a trial not kept: batch means allowed to
# merge down to 4 batches (MIN_BATCHES stays 8 as the floor below which no
# interval is read; the merging floor was an env knob in stats/batch.rs,
# GOODPUT_TRIAL_MERGE_FLOOR, in a build of this session only). The open
# loop's three loads at 400 requests, 200 replications, virtual time.
set -euo pipefail
t=bench-results/2026-11-30-merge-floor-trial
ex=target/release/examples/coverage
COVERAGE_SIZES=400 COVERAGE_ONLY=open $ex 200 intervals > $t/before-open-400.txt
GOODPUT_TRIAL_MERGE_FLOOR=4 COVERAGE_SIZES=400 COVERAGE_ONLY=open $ex 200 intervals > $t/merge-floor-4-open-400.txt
