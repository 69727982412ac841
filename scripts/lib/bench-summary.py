#!/usr/bin/env python3
"""Summarise hyperfine JSON exports (DIR/round-*.json) of scripts/lib/bench.sh's rounds.

Per command: the number of timed runs and min / Q1 / median / Q3 / max of the wall times over
all rounds. Per --ratio A B: median(A) / median(B) over all runs, and the spread of the ratio:
min / median / max of the per-round ratios (each round measured A and B back to back, so a load
change between rounds does not bias it) — a ratio is only as good as that spread.
Usage: bench-summary.py DIR [--ratio A B]... [--json OUT]
"""
import glob
import json
import os
import statistics
import sys


def quartiles(xs):
    xs = sorted(xs)
    if len(xs) < 2:
        return xs[0], xs[0], xs[0]
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return q[0], q[1], q[2]


def main(argv):
    d = argv[1]
    pairs, out = [], None
    i = 2
    while i < len(argv):
        if argv[i] == "--ratio":
            pairs.append((argv[i + 1], argv[i + 2]))
            i += 3
        elif argv[i] == "--json":
            out = argv[i + 1]
            i += 2
        else:
            sys.exit(f"bench-summary: unknown argument {argv[i]}")
    rounds = []
    for path in sorted(glob.glob(os.path.join(d, "round-*.json")),
                       key=lambda p: int(p.rsplit("-", 1)[1].split(".")[0])):
        with open(path) as f:
            rounds.append({r["command"]: r["times"] for r in json.load(f)["results"]})
    if not rounds:
        sys.exit(f"bench-summary: no hyperfine exports in {d}")
    names = list(rounds[0])
    allt = {n: [t for r in rounds for t in r[n]] for n in names}
    summary = {"rounds": len(rounds), "commands": {}, "ratios": {}}
    print(f"{'command':<22}{'runs':>5}{'min s':>9}{'Q1 s':>9}{'median s':>10}{'Q3 s':>9}{'max s':>9}")
    for n in names:
        t = allt[n]
        q1, med, q3 = quartiles(t)
        summary["commands"][n] = {"runs": len(t), "min": min(t), "q1": q1, "median": med,
                                  "q3": q3, "max": max(t)}
        print(f"{n:<22}{len(t):>5}{min(t):>9.3f}{q1:>9.3f}{med:>10.3f}{q3:>9.3f}{max(t):>9.3f}")
    for a, b in pairs:
        overall = statistics.median(allt[a]) / statistics.median(allt[b])
        per_round = [statistics.median(r[a]) / statistics.median(r[b]) for r in rounds]
        summary["ratios"][f"{a}/{b}"] = {"median": overall, "round_min": min(per_round),
                                         "round_median": statistics.median(per_round),
                                         "round_max": max(per_round)}
        print(f"ratio {a}/{b}: {overall:.2f} (per round min/median/max "
              f"{min(per_round):.2f}/{statistics.median(per_round):.2f}/{max(per_round):.2f}, "
              f"{len(rounds)} rounds)")
    if out:
        with open(out, "w") as f:
            json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main(sys.argv)
