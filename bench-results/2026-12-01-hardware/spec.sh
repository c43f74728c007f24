#!/usr/bin/env bash
# Issue 40: speculative decoding as the server counted it. One simulator
# with --spec-tokens 3 --spec-acceptance 0.7 and one without, the same
# closed-loop plan against each; the engine's own counters read from
# /metrics after the run (whole run, warm-up included). Run from the
# repository root after `cargo build --release -p goodput`.
set -euo pipefail
g=target/release/goodput
d=bench-results/2026-12-01-hardware
$g sim --port 18431 --spec-tokens 3 --spec-acceptance 0.7 2>/dev/null & s1=$!
$g sim --port 18432 2>/dev/null & s2=$!
trap 'kill $s1 $s2' EXIT
sleep 1
plan=(--concurrency 16 --num-prompts 1000 --input-tokens 512 --output-tokens 128 --seed 1)
$g run --url http://127.0.0.1:18431 "${plan[@]}" --out $d/spec-on.json > $d/spec-on.txt 2>&1
curl -s http://127.0.0.1:18431/metrics | grep '^vllm:spec_decode' > $d/spec-on-engine-counters.txt
$g run --url http://127.0.0.1:18432 "${plan[@]}" --out $d/spec-off.json > $d/spec-off.txt 2>&1
