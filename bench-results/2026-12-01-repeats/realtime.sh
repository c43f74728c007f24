#!/usr/bin/env bash
# compare of two `goodput run --repeat 3` results in real time against
# `goodput sim` (default preset): pairs of the same plan (one seed, as two
# runs of one command are), and pairs whose NEW ran against a server 5 %
# slower in every step (`--time-scale 1.05`). Run from the repository root
# after `cargo build --release -p goodput`.
set -uo pipefail
d=bench-results/2026-12-01-repeats/realtime
mkdir -p $d
g=target/release/goodput
$g sim --port 18431 > $d/sim.log 2>&1 & sim=$!
$g sim --port 18432 --time-scale 1.05 > $d/sim-slow.log 2>&1 & slow=$!
trap 'kill $sim $slow' EXIT
sleep 2
run() { # port out
  $g run --url http://127.0.0.1:$1 --repeat 3 --request-rate 20 --num-prompts 100 \
    --input-tokens 512 --output-tokens 64 --seed 1 --out $2 -q > /dev/null 2>&1
}
pairs=${PAIRS:-20}
for i in $(seq ${START:-1} $pairs); do
  run 18431 $d/a$i.json; run 18431 $d/b$i.json
  $g compare $d/a$i.json $d/b$i.json --format json > $d/same$i.json
  if [ $i -le ${SLOW_PAIRS:-5} ]; then
    run 18432 $d/s$i.json
    $g compare $d/a$i.json $d/s$i.json --format json > $d/slow$i.json
  fi
done
python3 - "$d" <<'PY'
import json, sys, glob
d = sys.argv[1]
def called(f):
    doc = json.load(open(f))
    return [x["name"] for x in doc["figures"] if x.get("significant") is True]
same = sorted(glob.glob(f"{d}/same*.json"))
slow = sorted(glob.glob(f"{d}/slow*.json"))
fs = [called(f) for f in same]
print(f"same plan: {sum(1 for c in fs if c)} of {len(fs)} pairs with a figure called significant")
for f, c in zip(same, fs):
    if c: print("  ", f, c)
fl = [called(f) for f in slow]
print(f"5 % slower server: {sum(1 for c in fl if c)} of {len(fl)} pairs flagged")
for f, c in zip(slow, fl):
    print("  ", f, c[:6], "..." if len(c) > 6 else "")
PY
