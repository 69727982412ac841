#!/usr/bin/env python3
"""Grow a root's dpkg database to about N installed packages from real Debian data, for
scripts/bench-verify's large-host case: what verify and `dpkg --verify` + `apt-cache policy`
parse on a real ROCm host (hundreds to ~2,000 packages) is the status file, the file lists and
apt's cache of them, not the other packages' file contents.

The data: Debian bookworm main's Packages (the control stanzas, as dpkg keeps them) and
Contents-amd64 (every file of every package), about 20 MB downloaded once into CACHE (reused
after). The packages: the dependency closure (Depends, Pre-Depends, Recommends: apt installs them) of Priority required,
important and standard plus SEEDS (a desktop, compilers, Python's science stack, containers: what a ROCm
workstation carries), in name order until N. For each package not already in the root's status:
its stanza with "Status: install ok installed" appended to var/lib/dpkg/status, and its file
list (Contents' files and every parent directory, "/." first, as dpkg writes them) as
var/lib/dpkg/info/PKG.list (PKG:amd64.list for Multi-Arch: same). No md5sums and no files are
written for them: neither side reads those for packages it does not verify — said in the report.
About 150 MB of lists on disk for 2,000 packages.
Usage: big-host.py ROOT N CACHE
"""
import gzip
import lzma
import os
import re
import sys
import urllib.request

MIRROR = "http://deb.debian.org/debian/dists/bookworm/main"
SEEDS = ["task-gnome-desktop", "build-essential", "cmake", "git", "python3-scipy",
         "python3-pip", "libopenblas0", "clang", "gdb", "valgrind", "python3-pandas",
         "python3-matplotlib", "python3-sklearn", "podman", "openjdk-17-jdk", "libboost-all-dev",
         "texlive-latex-extra"]


def fetch(cache, name, url):
    path = os.path.join(cache, name)
    if not os.path.exists(path):
        os.makedirs(cache, exist_ok=True)
        print(f"big-host: downloading {url}", file=sys.stderr)
        urllib.request.urlretrieve(url, path + ".part")
        os.rename(path + ".part", path)
    return path


def stanzas(text):
    for block in text.split("\n\n"):
        if block.strip():
            fields, last = {}, None
            for line in block.splitlines():
                if line[:1] in (" ", "\t") and last:
                    fields[last] += "\n" + line
                else:
                    last, _, value = line.partition(":")
                    fields[last] = value.strip()
            yield block.strip(), fields


def depends(fields):
    out = []
    for key in ("Pre-Depends", "Depends", "Recommends"):
        for alt in fields.get(key, "").replace("\n", " ").split(","):
            name = re.split(r"[\s(:\[]", alt.split("|")[0].strip(), 1)[0]
            if name:
                out.append(name)
    return out


def choose(packages, n):
    seeds = sorted(p for p, (_, f) in packages.items()
                   if f.get("Priority") in ("required", "important", "standard"))
    seeds += [s for s in SEEDS if s in packages]
    chosen, queue = [], list(seeds)
    seen = set()
    while queue and len(chosen) < n:
        p = queue.pop(0)
        if p in seen or p not in packages:
            continue
        seen.add(p)
        chosen.append(p)
        queue.extend(sorted(depends(packages[p][1])))
    # The seeds' closure may stay short of N: fill in name order, as a host's extra packages.
    for p in sorted(packages):
        if len(chosen) >= n:
            break
        if p not in seen:
            seen.add(p)
            chosen.append(p)
    return chosen


def main(argv):
    if len(argv) != 4:
        sys.exit(__doc__)
    root, n, cache = argv[1], int(argv[2]), argv[3]
    packages_xz = fetch(cache, "bookworm-main-Packages.xz", f"{MIRROR}/binary-amd64/Packages.xz")
    contents_gz = fetch(cache, "bookworm-main-Contents-amd64.gz", f"{MIRROR}/Contents-amd64.gz")
    with lzma.open(packages_xz, "rt", encoding="utf-8") as f:
        packages = {fields["Package"]: (block, fields) for block, fields in stanzas(f.read())}
    status_path = os.path.join(root, "var/lib/dpkg/status")
    with open(status_path, encoding="utf-8") as f:
        installed = {fields["Package"] for _, fields in stanzas(f.read())}
    chosen = [p for p in choose(packages, n) if p not in installed]
    want = set(chosen)
    files = {p: [] for p in chosen}
    with gzip.open(contents_gz, "rt", encoding="utf-8", errors="replace") as f:
        for line in f:
            path, _, owners = line.rstrip("\n").rpartition(" ")
            path = path.strip()
            if not path or path == "FILE":
                continue
            for owner in owners.split(","):
                p = owner.rsplit("/", 1)[-1]
                if p in want:
                    files[p].append("/" + path)
    info = os.path.join(root, "var/lib/dpkg/info")
    keep = ("Package", "Version", "Architecture", "Multi-Arch", "Maintainer", "Installed-Size",
            "Depends", "Pre-Depends", "Recommends", "Suggests", "Breaks", "Conflicts",
            "Provides", "Replaces", "Section", "Priority", "Source", "Homepage", "Description")
    with open(status_path, "rb") as f:
        f.seek(max(0, os.path.getsize(status_path) - 2))
        tail = f.read()
    with open(status_path, "a", encoding="utf-8") as status:
        status.write("\n" * (2 - len(tail) + len(tail.rstrip(b"\n"))))
        for p in chosen:
            block, fields = packages[p]
            lines, include = [], False
            for line in block.splitlines():
                if line[:1] not in (" ", "\t"):
                    include = line.partition(":")[0] in keep
                    if line.startswith("Package:"):
                        lines.append(line)
                        lines.append("Status: install ok installed")
                        continue
                if include:
                    lines.append(line)
            status.write("\n".join(lines) + "\n\n")
            dirs = {"/."}
            for path in files[p]:
                d = os.path.dirname(path)
                while d not in ("/", ""):
                    dirs.add(d)
                    d = os.path.dirname(d)
            name = f"{p}:amd64" if fields.get("Multi-Arch") == "same" else p
            with open(os.path.join(info, name + ".list"), "w", encoding="utf-8") as lst:
                lst.write("\n".join(sorted(dirs) + sorted(files[p])) + "\n")
    total = len(installed) + len(chosen)
    lists = sum(len(v) for v in files.values())
    print(f"big-host: {len(chosen)} packages added to {len(installed)} installed: {total} in all, "
          f"{lists} files in their lists (bookworm main Packages and Contents-amd64; "
          "no md5sums or files for the added packages)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
