#!/usr/bin/env python3
"""Summarise hyperfine JSON exports (DIR/round-*.json) of scripts/lib/bench.sh's rounds, and
choose the order of the commands in each round.

Summary: per command, the number of timed runs and min / Q1 / median / Q3 / max of the wall
times over all rounds. Per --ratio A B, the headline is PAIRED: in each round, median(A) /
median(B) of that round's runs (A and B ran back to back, so a load change between rounds
cancels), then the median of these per-round ratios with their min and max. The ratio of the
pooled medians is not a paired figure (it mixes rounds measured under different loads) and is
not printed. --not-below A B exits 1 when that median ratio is below 1 (A does all of B's work
and more: faster means the benchmark compares different things). --json OUT writes the summary,
with every round's per-command times, and the --meta file's fields when given.
Usage: bench-summary.py DIR [--ratio A B]... [--not-below A B]... [--meta FILE] [--json OUT]

Orders: bench-summary.py --orders N ROUNDS prints ROUNDS' lines, each a permutation of 0..N-1: a
balanced Latin square (Williams design: every command once in every position and every ordered
pair adjacent once per N rounds; for an odd N the square is followed by its rows reversed, 2N
rounds). ROUNDS is rounded up to a whole number of squares (the rounds actually run are printed),
except that ROUNDS <= N for an odd N gives the first N rows: a Latin square (every command once
in every position) without the carry-over balance — the short form bench-all --quick asks for.
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


def williams_square(n):
    """Rows of a balanced Latin square over 0..n-1 (n rows; 2n for an odd n)."""
    first, lo, hi = [0], 1, n - 1
    while len(first) < n:
        first.append(lo)
        lo += 1
        if len(first) < n:
            first.append(hi)
            hi -= 1
    rows = [[(c + r) % n for c in first] for r in range(n)]
    if n % 2 == 1:
        rows += [list(reversed(row)) for row in rows]
    return rows


def orders(n, rounds):
    """The command order of each round: whole balanced squares, at least `rounds` rows."""
    square = williams_square(n)
    if rounds <= n:
        # Rows 0..n-1 are cyclic shifts of one row: a Latin square on its own.
        return square[:n]
    whole = max(1, -(-rounds // len(square)))
    return square * whole


def paired_ratio(rounds, a, b):
    """Per-round median(a)/median(b), and their median, min and max."""
    per_round = [statistics.median(r[a]) / statistics.median(r[b]) for r in rounds]
    return {"median": statistics.median(per_round), "min": min(per_round),
            "max": max(per_round), "per_round": per_round}


def load_rounds(d):
    rounds = []
    for path in sorted(glob.glob(os.path.join(d, "round-*.json")),
                       key=lambda p: int(p.rsplit("-", 1)[1].split(".")[0])):
        with open(path) as f:
            rounds.append({r["command"]: r["times"] for r in json.load(f)["results"]})
    return rounds


def summarise(rounds, pairs, floors, out=sys.stdout):
    """Prints the table and ratios; returns (summary dict, failed floor messages)."""
    names = list(rounds[0])
    allt = {n: [t for r in rounds for t in r[n]] for n in names}
    summary = {"rounds": len(rounds), "commands": {}, "ratios": {},
               "round_times": [{n: r[n] for n in names} for r in rounds]}
    print(f"{'command':<22}{'runs':>5}{'min s':>9}{'Q1 s':>9}{'median s':>10}{'Q3 s':>9}{'max s':>9}",
          file=out)
    for n in names:
        t = allt[n]
        q1, med, q3 = quartiles(t)
        summary["commands"][n] = {"runs": len(t), "min": min(t), "q1": q1, "median": med,
                                  "q3": q3, "max": max(t)}
        print(f"{n:<22}{len(t):>5}{min(t):>9.3f}{q1:>9.3f}{med:>10.3f}{q3:>9.3f}{max(t):>9.3f}",
              file=out)
    failed = []
    for a, b in pairs + [p for p in floors if p not in pairs]:
        r = paired_ratio(rounds, a, b)
        summary["ratios"][f"{a}/{b}"] = r
        print(f"ratio {a}/{b}: {r['median']:.2f} (paired: median of {len(rounds)} per-round "
              f"ratios, min {r['min']:.2f}, max {r['max']:.2f})", file=out)
        if (a, b) in floors and r["median"] < 1.0:
            failed.append(f"{a} beat {b} ({r['median']:.2f}): {a} does all of {b}'s work and "
                          "more, so the two sides do not compare the same thing (bytes, threads, "
                          "library?) — a benchmark bug until explained")
    return summary, failed


def main(argv):
    if len(argv) == 4 and argv[1] == "--orders":
        for row in orders(int(argv[2]), int(argv[3])):
            print(" ".join(map(str, row)))
        return 0
    if len(argv) < 2:
        sys.exit(__doc__)
    d = argv[1]
    pairs, floors, out, meta = [], [], None, None
    i = 2
    while i < len(argv):
        if argv[i] in ("--ratio", "--not-below"):
            (pairs if argv[i] == "--ratio" else floors).append((argv[i + 1], argv[i + 2]))
            i += 3
        elif argv[i] in ("--json", "--meta"):
            if argv[i] == "--json":
                out = argv[i + 1]
            else:
                meta = argv[i + 1]
            i += 2
        else:
            sys.exit(f"bench-summary: unknown argument {argv[i]}")
    rounds = load_rounds(d)
    if not rounds:
        sys.exit(f"bench-summary: no hyperfine exports in {d}")
    summary, failed = summarise(rounds, pairs, floors)
    if meta:
        with open(meta) as f:
            summary["meta"] = json.load(f)
    if out:
        with open(out, "w") as f:
            json.dump(summary, f, indent=1)
    for message in failed:
        print(f"bench-summary: {message}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
