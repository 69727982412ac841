#!/usr/bin/env python3
"""Where one process's threads spend their wall time, from `perf sched timehist --state` (and
the per-thread syscall summary of `perf trace -s`): scripts/bench-trace's table.

Per thread (grouped by name; the process's main thread apart): time on a CPU (run), runnable
but waiting for a CPU (sch delay: the load beside it), and off a CPU, blocked, split by the state
it left the CPU in — S (sleeping: a futex, a pipe, a full or empty queue between our threads)
or D (uninterruptible: the disk). perf's "wait time" runs from sched-out to sched-in, so blocked
= wait - sch delay, of the state printed on the slice before.
The process is named by its pid (PID in the timehist, TRACE_PID in the trace): perf records
every CPU, and other processes of the same name may run beside it.
Usage: bench-trace.py PROG PID TIMEHIST_TXT [TRACE_PID TRACE_SUMMARY_TXT]   (a markdown table)
"""
import collections
import re
import sys

LINE = re.compile(r"^\s*[\d.]+\s+\[\d+\]\s+(.+?)\[(\d+)(?:/(\d+))?\]\s+([\d.]+)\s+([\d.]+)\s+"
                  r"([\d.]+)\s+(\S)?\s*$")
# perf trace -s: " rocm-pin (1234), 567 events, 12.3%" then "   futex  12  0  34.567 ..."
THREAD = re.compile(r"^\s*(.+?) \((\d+)\), \d+ events")
SYSCALL = re.compile(r"^\s+(\w+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s")


def timehist(path, prog, pid):
    rows = []
    with open(path, errors="replace") as f:
        for line in f:
            m = LINE.match(line)
            if m:
                name, tid, owner, wait, sch, run, state = m.groups()
                rows.append((name.strip(), int(tid), int(owner or tid), float(wait), float(sch),
                             float(run), state or "?"))
    if not any(name == prog and tid == pid for name, tid, *_ in rows):
        sys.exit(f"bench-trace: no {prog} process {pid} in {path}")
    per = collections.defaultdict(lambda: collections.Counter())
    tids = collections.defaultdict(set)
    last_state = {}
    for name, tid, p, wait, sch, run, state in rows:
        if p != pid:
            continue
        # The process's own thread under every name it had (sh and env exec into rocm-pin).
        key = f"{prog} (main)" if tid == pid else name
        tids[key].add(tid)
        c = per[key]
        c["run"] += run
        c["sch"] += sch
        # The wait before this slice began when the thread left the CPU in last_state.
        c["blocked_" + last_state.get(tid, "S")] += max(0.0, wait - sch)
        last_state[tid] = state
    return pid, per, tids


def trace_summary(path):
    """Per thread id: {syscall: total msec}."""
    out = collections.defaultdict(collections.Counter)
    current = None
    if not path:
        return out
    with open(path, errors="replace") as f:
        for line in f:
            m = THREAD.match(line)
            if m:
                current = int(m.group(2))
                continue
            m = SYSCALL.match(line)
            if m and current:
                out[current][m.group(1)] += float(m.group(4))
    return out


def trace_keys(path, main_tid, by_tid):
    """The traced run's syscall times grouped as timehist groups threads: by name, the main
    thread (MAIN_TID, the process's id) apart."""
    names = {}
    if path:
        with open(path, errors="replace") as f:
            for line in f:
                m = THREAD.match(line)
                if m:
                    names[int(m.group(2))] = m.group(1).strip()
    out = collections.defaultdict(collections.Counter)
    for tid, counter in by_tid.items():
        name = names.get(tid, "?")
        out[f"{name} (main)" if tid == main_tid else name].update(counter)
    return out


def main(argv):
    if len(argv) not in (4, 6):
        sys.exit(__doc__)
    prog, pid, hist = argv[1], int(argv[2]), argv[3]
    pid, per, tids = timehist(hist, prog, pid)
    traced = collections.defaultdict(collections.Counter)
    if len(argv) == 6:
        trace_pid, trace_path = int(argv[4]), argv[5]
        # perf trace -s groups by thread id; the traced run is another run (other ids).
        by_tid = {t: c for t, c in trace_summary(trace_path).items()}
        for key, counter in trace_keys(trace_path, trace_pid, by_tid).items():
            traced[key].update(counter)
    print("| thread | n | run ms | waiting for a CPU ms | blocked S (futex, queue) ms "
          "| blocked D (disk) ms | top syscalls (perf trace, ms) |")
    print("|---|---|---|---|---|---|---|")
    total = collections.Counter()
    for key in sorted(per, key=lambda k: -per[k]["run"]):
        c = per[key]
        total.update(c)
        top = ", ".join(f"{s} {ms:.0f}" for s, ms in traced[key].most_common(3))
        print(f"| {key} | {len(tids[key])} | {c['run']:.0f} | {c['sch']:.0f} | "
              f"{c['blocked_S']:.0f} | {c['blocked_D']:.0f} | {top} |")
    print(f"| all threads of pid {pid} | {sum(len(t) for t in tids.values())} | "
          f"{total['run']:.0f} | {total['sch']:.0f} | {total['blocked_S']:.0f} | "
          f"{total['blocked_D']:.0f} | |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
