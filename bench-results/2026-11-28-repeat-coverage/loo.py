# Coverage of --repeat 5 intervals against the mean of the other
# invocations' repeats (leave one out): the truth as a new invocation,
# with its own simulator process, would see it.
import json, sys
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 24
runs = [{f["name"]: f for f in json.load(open(f"rep-{r}.json"))["across_repeats"]["figures"]} for r in range(1, reps + 1)]
print(f"truth: for each invocation, the mean of the other {reps - 1} invocations' 5 repeats each")
print("| figure | covered | below | above |")
print("| --- | --- | --- | --- |")
tot = [0, 0]
for name in runs[0]:
    c = b = a = 0
    for i, run in enumerate(runs):
        f = run[name]
        if f.get("lo") is None or f.get("hi") is None:
            continue
        others = [v for j, o in enumerate(runs) if j != i for v in o[name]["values"]]
        t = sum(others) / len(others)
        if f["lo"] <= t <= f["hi"]:
            c += 1
        elif f["hi"] < t:
            b += 1
        else:
            a += 1
    tot[0] += c
    tot[1] += c + b + a
    print(f"| {name} | {c} of {c + b + a} | {b} | {a} |")
print(f"all figures: {tot[0]} of {tot[1]}")
