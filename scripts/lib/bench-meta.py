#!/usr/bin/env python3
"""Write a benchmark run's provenance as JSON (scripts/lib/bench.sh's bench_meta): the commit
(and whether the work tree had changes), the date, the machine (CPUs this process may use, CPUs
online, CPU model, kernel), the busy processes and the load average, plus KEY=VALUE pairs.
Usage: bench-meta.py OUT CPU_WORKERS HDD_WORKERS SETTLED_LOAD [KEY=VALUE]...
"""
import datetime
import json
import os
import platform
import subprocess
import sys


def git(*args):
    try:
        return subprocess.run(["git", *args], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or None


def main(argv):
    out, cpu_workers, hdd_workers, settled, *pairs = argv[1:]
    with open("/proc/loadavg") as f:
        loadavg = f.read().split()[:3]
    meta = {
        "commit": git("rev-parse", "HEAD"),
        "work_tree_changed": bool(git("status", "--porcelain", "--untracked-files=no")),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": {"cpus_usable": len(os.sched_getaffinity(0)), "cpus_online": os.cpu_count(),
                    "model": cpu_model(), "kernel": platform.release()},
        "load": {"cpu_workers": int(cpu_workers), "hdd_workers": int(hdd_workers),
                 "settled_1min": float(settled) if settled else None,
                 "loadavg_when_written": loadavg},
    }
    for pair in pairs:
        key, _, value = pair.partition("=")
        meta[key] = value
    with open(out, "w") as f:
        json.dump(meta, f, indent=1)


if __name__ == "__main__":
    main(sys.argv)
