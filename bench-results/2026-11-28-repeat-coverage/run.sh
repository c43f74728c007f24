#!/usr/bin/env bash
# Coverage of --repeat's interval, in real time against the built-in
# simulator (in virtual time repeats are identical). The interval claims to
# cover the figure of this plan as drawn (one seed): its truth here is the
# mean of 40 repeats of the same plan; then REPS invocations of --repeat 5
# each give an interval per figure. Usage: run.sh GOODPUT_BINARY [REPS]
set -euo pipefail
bin=$1
reps=${2:-24}
out=$(dirname "$0")
plan=(run --num-prompts 60 --request-rate 30 --seed 7 --input-tokens 512 --output-tokens 64 --quiet)
"$bin" "${plan[@]}" --repeat 40 --out "$out/truth.json" 2>/dev/null
for r in $(seq 1 "$reps"); do
  "$bin" "${plan[@]}" --repeat 5 --out "$out/rep-$r.json" 2>/dev/null
  # Kept: the across-repeats part only (the whole documents are 200 KB each).
  python3 -c "import json,sys; p=sys.argv[1]; d=json.load(open(p)); json.dump({\"across_repeats\": d[\"across_repeats\"]}, open(p, \"w\"), indent=1)" "$out/rep-$r.json"
done
python3 - "$out" "$reps" <<'PY'
import json, sys
out, reps = sys.argv[1], int(sys.argv[2])
truth = {f["name"]: f for f in json.load(open(f"{out}/truth.json"))["across_repeats"]["figures"]}
tally = {}
firsts = {}
for r in range(1, reps + 1):
    for f in json.load(open(f"{out}/rep-{r}.json"))["across_repeats"]["figures"]:
        t = truth.get(f["name"])
        if t is None or f.get("lo") is None or f.get("hi") is None:
            continue
        c = tally.setdefault(f["name"], [0, 0, 0])
        c[0] += f["lo"] <= t["mean"] <= f["hi"]
        c[1] += f["hi"] < t["mean"]
        c[2] += f["lo"] > t["mean"]
        firsts.setdefault(f["name"], []).append(f["values"][0] / f["mean"] - 1 if f["mean"] else 0)
print(f"truth: mean of 40 repeats; {reps} invocations of --repeat 5")
print("| figure | truth | its sd | covered | below | above | first repeat vs its run's mean |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for name, (c, b, a) in tally.items():
    t = truth[name]
    first = sum(firsts[name]) / len(firsts[name]) * 100
    print(f"| {name} | {t['mean']:.4g} | {t['std']:.3g} | {c} of {c+b+a} | {b} | {a} | {first:+.1f} % |")
PY
