"""Unit tests of bench-trace.py (per-thread attribution of perf sched timehist) and
big-host.py (Debian stanzas, dependencies, the package choice). Run by scripts/test."""
import importlib.util
import os
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


def load(name):
    spec = importlib.util.spec_from_file_location(name.replace("-", "_"), os.path.join(HERE, name))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench_trace = load("bench-trace.py")
big_host = load("big-host.py")

TIMEHIST = """\
           time    cpu  task name                       wait time  sch delay   run time  state
                        [tid/pid]                          (msec)     (msec)     (msec)
--------------- ------  ------------------------------  ---------  ---------  ---------  -----
   100.000000 [0001]  rocm-pin[400]                         0.000      0.000     50.000      S
   100.000001 [0000]  rocm-pin[500]                         0.000      0.000      2.000      S
   100.000002 [0001]  deb-read-ahead[501/500]              0.000      0.000      1.000      D
   100.000003 [0000]  rocm-pin[500]                        10.000      3.000      4.000      R
   100.000004 [0001]  deb-read-ahead[501/500]              5.000      1.000      1.000      S
   100.000005 [0001]  rocm-pin[502/500]                     0.000      0.000      7.000      S
   100.000006 [0000]  cc1[900]                              1.000      1.000      9.000      S
"""


class Trace(unittest.TestCase):
    def test_blocked_time_goes_to_the_state_the_thread_left_the_cpu_in(self):
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write(TIMEHIST)
        try:
            pid, per, tids = bench_trace.timehist(f.name, "rocm-pin", 500)
        finally:
            os.unlink(f.name)
        self.assertEqual(pid, 500)
        main = per["rocm-pin (main)"]
        self.assertEqual((main["run"], main["sch"]), (6.0, 3.0))
        # 10 ms wait, 3 of them runnable: 7 blocked, after leaving in S.
        self.assertEqual(main["blocked_S"], 7.0)
        ahead = per["deb-read-ahead"]
        # 5 ms wait, 1 runnable: 4 blocked on the disk (it left in D).
        self.assertEqual((ahead["blocked_D"], ahead["blocked_S"]), (4.0, 0.0))
        self.assertEqual(tids["rocm-pin"], {502})
        self.assertNotIn("cc1", per, "another process's threads were counted")
        # Another rocm-pin (a lower pid) is another process, not ours.
        self.assertEqual(set(tids), {"rocm-pin (main)", "deb-read-ahead", "rocm-pin"})
        self.assertEqual(tids["rocm-pin (main)"], {500})


PACKAGES = """\
Package: a
Version: 1
Priority: required
Depends: b (>= 1), c | d
Description: first
 continued

Package: b
Version: 1
Priority: optional
Pre-Depends: e:any
Description: second

Package: c
Version: 1
Priority: optional
Description: third

Package: e
Version: 1
Priority: optional
Description: fourth

Package: z
Version: 1
Priority: optional
Description: unrelated
"""


class BigHost(unittest.TestCase):
    def packages(self):
        return {f["Package"]: (b, f) for b, f in big_host.stanzas(PACKAGES)}

    def test_dependencies_take_the_first_alternative_without_versions_or_arch(self):
        self.assertEqual(big_host.depends(self.packages()["a"][1]), ["b", "c"])
        self.assertEqual(big_host.depends(self.packages()["b"][1]), ["e"])

    def test_the_closure_comes_first_and_name_order_fills_up_to_n(self):
        chosen = big_host.choose(self.packages(), 5)
        self.assertEqual(chosen[:4], ["a", "b", "c", "e"])
        self.assertEqual(chosen[4:], ["z"])
        self.assertEqual(big_host.choose(self.packages(), 2), ["a", "b"])


if __name__ == "__main__":
    unittest.main()
