#!/usr/bin/env python3
"""scripts/bench-all's report: one markdown table per goal of issue 35's criterion 4 from the
summaries the bench scripts kept under TOP/quiet and TOP/loaded (bench-summary.py's
summary.json / times.json with their meta.json, bench-images' sizes.json, bench-trace's
report.md), each row with the paired ratio (median of the per-round ratios, min, max), the
goal and whether it holds, the load (settled before, and min/median/max while measuring), the
commit and the date. Steps that failed are listed with their log.
Usage: bench-report.py TOP  (writes TOP/report.md and prints it)
"""
import glob
import json
import os
import sys

# (script directory prefix, case sub-directory or "", ratio key, what, goal quiet, goal loaded)
GOALS = {
    "deb build without md5sums vs the packager's path (dh_md5sums, then dpkg-deb), equal threads": [
        ("deb-build-xz", "", "rocm-pin/packager", "xz", 0.8, 1.0),
        ("deb-build-zstd", "", "rocm-pin/packager", "zstd", 0.8, 1.0),
    ],
    "deb build with md5sums in the tree vs bare dpkg-deb, equal threads": [
        ("deb-build-xz", "", "rocm-pin-md5/dpkg-deb", "xz", 1.0, 1.0),
        ("deb-build-zstd", "", "rocm-pin-md5/dpkg-deb", "zstd", 1.0, 1.0),
    ],
    "read-ahead before/after (same run): with / without (ROCM_PIN_READ_AHEAD=0)": [
        ("deb-build-xz", "", "rocm-pin/rocm-pin-inline", "xz", None, None),
        ("deb-build-zstd", "", "rocm-pin/rocm-pin-inline", "zstd", None, None),
        ("deb-build-xz", "", "rocm-pin-inline/packager", "xz, before", None, None),
        ("deb-build-zstd", "", "rocm-pin-inline/packager", "zstd, before", None, None),
    ],
    "verify vs dpkg --verify + apt-cache policy of the same packages": [
        ("verify", "large-host-full-lists", "rocm-pin-verify/dpkg-verify+policy",
         "~2,000-package host, full lists", 1.0, 1.0),
        ("verify", "full-debian-lists", "rocm-pin-verify/dpkg-verify+policy",
         "bookworm lists, image's packages", 1.0, 1.0),
        ("verify", "full-lists-after-dpkg", "rocm-pin-verify/dpkg-verify+policy",
         "bookworm lists, status newer than the cache", 1.0, 1.0),
        ("verify", "image-lists", "rocm-pin-verify/dpkg-verify+policy", "image's own lists",
         1.0, 1.0),
    ],
}


def load(path):
    with open(path) as f:
        return json.load(f)


def run_dirs(top, phase, prefix):
    return sorted(glob.glob(os.path.join(top, phase, prefix + "-*")))


def fmt_load(meta):
    load = meta.get("load", {})
    during = load.get("during_1min") or {}
    settled = load.get("settled_1min")
    s = f"{load.get('busy', '?')}; settled {settled if settled is not None else '?'}"
    if during:
        s += f"; during {during['min']:.2f}/{during['median']:.2f}/{during['max']:.2f}"
    return s


def ratio_row(summary, key, what, phase, goal):
    r = summary["ratios"].get(key)
    meta = summary.get("meta", {})
    if r is None:
        return f"| {what} | {phase} | {key}: not measured | | | | | |"
    verdict = "" if goal is None else ("met" if r["median"] <= goal else "NOT met")
    goal_s = "—" if goal is None else f"≤ {goal:.2f} {verdict}"
    commit = (meta.get("commit") or "?")[:12] + ("+changes" if meta.get("work_tree_changed") else "")
    if meta.get("profile", "release") != "release":
        goal_s += f" ({meta['profile']} profile: no figure)"
    return (f"| {what} | {phase} | {r['median']:.2f} | {r['min']:.2f} | {r['max']:.2f} | "
            f"{summary['rounds']} | {goal_s} | {fmt_load(meta)} | {commit} {meta.get('date', '')} |")


def goal_tables(top, out):
    for title, rows in GOALS.items():
        out.append(f"## {title}\n")
        out.append("| case | load | ratio (median of per-round) | min | max | rounds | goal | "
                   "busy processes; 1-min load | commit, date |")
        out.append("|---|---|---|---|---|---|---|---|---|")
        for prefix, case, key, what, goal_q, goal_l in rows:
            for phase, goal in (("quiet", goal_q), ("loaded", goal_l)):
                dirs = run_dirs(top, phase, prefix)
                if not dirs:
                    out.append(f"| {what} | {phase} | not run | | | | | | |")
                    continue
                path = os.path.join(dirs[-1], case, "summary.json")
                if not os.path.exists(path):
                    out.append(f"| {what} | {phase} | no summary ({path}) | | | | | | |")
                    continue
                out.append(ratio_row(load(path), key, what, phase, goal))
        out.append("")


def images_table(top, out):
    out.append("## image layers with the guard kept vs the one-RUN in-place method (goal ≤ 1.10)\n")
    out.append("| payload | load | layers ours/one-RUN uncompressed | gzip | ours (lean)/one-RUN gzip "
               "| guard binary in the layer B | build time ours/one-RUN (paired median, min, max) "
               "| busy processes; 1-min load | commit, date |")
    out.append("|---|---|---|---|---|---|---|---|---|")
    for phase in ("quiet", "loaded"):
        dirs = run_dirs(top, phase, "images")
        if not dirs:
            out.append(f"| | {phase} | not run | | | | | | |")
            continue
        for sizes_path in sorted(glob.glob(os.path.join(dirs[-1], "*", "sizes.json"))):
            sizes = load(sizes_path)
            times = load(os.path.join(os.path.dirname(sizes_path), "times.json"))
            meta = times.get("meta", {})
            r = times["ratios"].get("ours/onerun", {})
            gz = sizes["gzip"]["ours/onerun"]
            verdict = "met" if gz <= 1.10 else "NOT met"
            out.append(
                f"| {meta.get('case', '?')} | {phase} | {sizes['uncompressed']['ours/onerun']:.3f} | "
                f"{gz:.3f} ({verdict}) | {sizes['gzip']['ours-lean/onerun']:.3f} | {sizes['tool_bytes']} "
                f"(gzip {sizes.get('tool_gzip_bytes', '?')}) | "
                f"{r.get('median', float('nan')):.2f} ({r.get('min', float('nan')):.2f}–"
                f"{r.get('max', float('nan')):.2f}) | {fmt_load(meta)} | "
                f"{(meta.get('commit') or '?')[:12]} {meta.get('date', '')} |")
    out.append("")


def traces(top, out):
    out.append("## off-CPU trace of deb build, read-ahead on vs off\n")
    for phase in ("quiet", "loaded"):
        for d in run_dirs(top, phase, "trace"):
            out.append(f"- {phase}: {os.path.relpath(os.path.join(d, 'report.md'), top)}")
    out.append("")


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    top = argv[1]
    out = [f"# bench-all report ({os.path.basename(os.path.abspath(top))})", ""]
    steps = os.path.join(top, "steps.txt")
    if os.path.exists(steps):
        out.append("Steps (exit status, wall seconds, log):\n")
        out += [f"- {line.strip()}" for line in open(steps) if line.strip()]
        out.append("")
    goal_tables(top, out)
    images_table(top, out)
    traces(top, out)
    text = "\n".join(out) + "\n"
    with open(os.path.join(top, "report.md"), "w") as f:
        f.write(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
