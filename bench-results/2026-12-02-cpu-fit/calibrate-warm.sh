#!/usr/bin/env bash
# Issue 34: calibrate configuration C after 120 requests of 256/64 two at a
# time (WARM=0: on a fresh server), then forecast both workloads: the
# held-queue section's calibrate.sh with its warm-up on.
#   [WARM=0] calibrate-warm.sh GOODPUT LLAMA_SERVER OUT_DIR
WARM=${WARM:-1} exec "$(dirname "$0")/../2026-12-02-held-queue/calibrate.sh" "$@"
