#!/usr/bin/env python3
"""Write a benchmark run's provenance as JSON (scripts/lib/bench.sh's bench_meta): the commit
(and whether the work tree had changes), the date, the machine (CPUs this process may use, CPUs
online, CPU model, kernel), the busy processes and the load average, plus KEY=VALUE pairs.
The load during the measured part comes from SAMPLES (one 1-minute load average a line, taken
every 5 s by bench.sh's sampler): min, median and max.
Usage: bench-meta.py OUT CPU_WORKERS HDD_WORKERS SETTLED_LOAD SAMPLES [KEY=VALUE]...
"""
import datetime
import json
import os
import platform
import statistics
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
    out, cpu_workers, hdd_workers, settled, samples_file, *pairs = argv[1:]
    with open("/proc/loadavg") as f:
        loadavg = f.read().split()[:3]
    with open(samples_file) as f:
        samples = [float(line) for line in f if line.strip()]
    during = ({"min": min(samples), "median": statistics.median(samples), "max": max(samples),
               "samples": len(samples)} if samples else None)
    meta = {
        "commit": git("rev-parse", "HEAD"),
        "work_tree_changed": bool(git("status", "--porcelain", "--untracked-files=no")),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": {"cpus_usable": len(os.sched_getaffinity(0)), "cpus_online": os.cpu_count(),
                    "model": cpu_model(), "kernel": platform.release()},
        "load": {"cpu_workers": int(cpu_workers), "hdd_workers": int(hdd_workers),
                 "busy": (f"stress-ng --cpu {cpu_workers} --hdd {hdd_workers}"
                          if int(cpu_workers) + int(hdd_workers) else "none"),
                 "settled_1min": float(settled) if settled else None,
                 "during_1min": during,
                 "loadavg_when_written": loadavg},
    }
    for pair in pairs:
        key, _, value = pair.partition("=")
        meta[key] = value
    with open(out, "w") as f:
        json.dump(meta, f, indent=1)


if __name__ == "__main__":
    main(sys.argv)
