"""Unit tests of bench-summary.py (run by scripts/test:
python3 -m unittest discover -s scripts/lib -p 'test_*.py')."""
import importlib.util
import io
import itertools
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "bench-summary.py")
spec = importlib.util.spec_from_file_location("bench_summary", SCRIPT)
bench_summary = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench_summary)


def write_rounds(d, rounds):
    for k, r in enumerate(rounds):
        with open(os.path.join(d, f"round-{k}.json"), "w") as f:
            json.dump({"results": [{"command": n, "times": t} for n, t in r.items()]}, f)


# Side A 4 % slower than B in every round; the rounds ran under different loads and each
# round's runs spread. The pooled medians give 1.25 here, not 1.04.
FOUR_PERCENT = [
    {"A": [1.04, 1.04], "B": [0.5, 1.5]},
    {"A": [2.08, 2.08], "B": [1.0, 3.0]},
]


class PairedRatio(unittest.TestCase):
    def test_a_4_percent_slower_in_every_round_prints_1_04(self):
        with tempfile.TemporaryDirectory() as d:
            write_rounds(d, FOUR_PERCENT)
            out = subprocess.run([sys.executable, SCRIPT, d, "--ratio", "A", "B",
                                  "--json", os.path.join(d, "s.json")],
                                 capture_output=True, text=True, check=True).stdout
            self.assertIn("ratio A/B: 1.04 (", out)
            self.assertIn("min 1.04, max 1.04", out)
            with open(os.path.join(d, "s.json")) as f:
                self.assertAlmostEqual(json.load(f)["ratios"]["A/B"]["median"], 1.04)

    def test_the_pooled_medians_would_not_give_it(self):
        pooled = (bench_summary.statistics.median([t for r in FOUR_PERCENT for t in r["A"]]) /
                  bench_summary.statistics.median([t for r in FOUR_PERCENT for t in r["B"]]))
        self.assertGreater(abs(pooled - 1.04), 0.1)

    def test_spread_is_the_per_round_min_and_max(self):
        rounds = [{"A": [1.1], "B": [1.0]}, {"A": [0.9], "B": [1.0]}, {"A": [2.0], "B": [2.0]}]
        r = bench_summary.paired_ratio(rounds, "A", "B")
        self.assertAlmostEqual(r["median"], 1.0)
        self.assertAlmostEqual(r["min"], 0.9)
        self.assertAlmostEqual(r["max"], 1.1)

    def test_not_below_fails_when_a_side_beats_the_one_it_contains(self):
        with tempfile.TemporaryDirectory() as d:
            write_rounds(d, [{"ours": [0.9], "bare": [1.0]}, {"ours": [0.95], "bare": [1.0]}])
            res = subprocess.run([sys.executable, SCRIPT, d, "--not-below", "ours", "bare"],
                                 capture_output=True, text=True)
            self.assertEqual(res.returncode, 1, res.stdout + res.stderr)
            self.assertIn("ours beat bare", res.stderr)
            write_rounds(d, [{"ours": [1.2], "bare": [1.0]}, {"ours": [1.1], "bare": [1.0]}])
            res = subprocess.run([sys.executable, SCRIPT, d, "--not-below", "ours", "bare"],
                                 capture_output=True, text=True)
            self.assertEqual(res.returncode, 0, res.stdout + res.stderr)


class Orders(unittest.TestCase):
    def check_balanced(self, n):
        rows = bench_summary.williams_square(n)
        self.assertEqual(len(rows), n if n % 2 == 0 else 2 * n)
        for row in rows:
            self.assertEqual(sorted(row), list(range(n)))
        # Every side equally often in every position.
        for pos in range(n):
            counts = [sum(1 for row in rows if row[pos] == s) for s in range(n)]
            self.assertEqual(len(set(counts)), 1, f"n={n} position {pos}: {counts}")
        # Every ordered pair equally often adjacent (first-order carry-over balanced).
        pairs = {p: 0 for p in itertools.permutations(range(n), 2)}
        for row in rows:
            for a, b in zip(row, row[1:]):
                pairs[(a, b)] += 1
        self.assertEqual(len(set(pairs.values())), 1, f"n={n}: {pairs}")

    def test_squares_are_balanced_for_2_to_7_sides(self):
        for n in range(2, 8):
            self.check_balanced(n)

    def test_rounds_are_rounded_up_to_whole_squares(self):
        self.assertEqual(len(bench_summary.orders(4, 3)), 4)
        self.assertEqual(len(bench_summary.orders(4, 5)), 8)
        self.assertEqual(len(bench_summary.orders(3, 4)), 6)
        self.assertEqual(len(bench_summary.orders(2, 1)), 2)

    def test_few_rounds_of_an_odd_number_of_sides_are_one_latin_square(self):
        for n in (3, 5, 7):
            rows = bench_summary.orders(n, 2)
            self.assertEqual(len(rows), n)
            for pos in range(n):
                self.assertEqual(sorted(row[pos] for row in rows), list(range(n)))

    def test_the_cli_prints_one_order_a_line(self):
        out = subprocess.run([sys.executable, SCRIPT, "--orders", "2", "2"],
                             capture_output=True, text=True, check=True).stdout
        self.assertEqual(out, "0 1\n1 0\n")


if __name__ == "__main__":
    unittest.main()
