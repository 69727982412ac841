#!/usr/bin/env bash
# Real pip and real uv for the wheel tests (tests/wheels): their wheels from PyPI, the newest
# release inside a pinned range, each checked against the sha256 PyPI's JSON API publishes, into
# "$ROCM_PIN_CACHE/pip-uv/". The tests install them into throwaway venvs offline and read the
# versions they find (never a version written here). Idempotent: a wheel already there whose
# sha256 file matches is kept.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROCM_PIN_CACHE="${ROCM_PIN_CACHE:-$PWD/.cache}"
dest="$ROCM_PIN_CACHE/pip-uv"
mkdir -p "$dest"
# project, lowest version (inclusive), highest (exclusive), file-name suffix wanted.
fetch() {
  python3 - "$dest" "$@" <<'PY'
import hashlib, json, os, sys, urllib.parse, urllib.request
dest, project, low, high, suffix = sys.argv[1:6]
def key(v):
    return tuple(int(p) if p.isdigit() else -1 for p in v.split("."))
api = f"https://pypi.org/pypi/{project}/json"
with urllib.request.urlopen(api, timeout=60) as r:
    releases = json.load(r)["releases"]
candidates = sorted(
    (v for v in releases
     if all(p.isdigit() for p in v.split(".")) and key(low) <= key(v) < key(high)),
    key=key, reverse=True)
for version in candidates:
    files = [f for f in releases[version] if f["filename"].endswith(suffix) and not f.get("yanked")]
    if not files:
        continue
    f = files[0]
    path = os.path.join(dest, f["filename"])
    want = f["digests"]["sha256"]
    if os.path.exists(path) and hashlib.sha256(open(path, "rb").read()).hexdigest() == want:
        print(f"40-pip-uv: already present: {path}")
        sys.exit(0)
    # A mirror may give the file's URL relative to the API's.
    with urllib.request.urlopen(urllib.parse.urljoin(api, f["url"]), timeout=300) as r:
        data = r.read()
    got = hashlib.sha256(data).hexdigest()
    if got != want:
        sys.exit(f"40-pip-uv: {f['filename']}: sha256 {got}, PyPI says {want}")
    with open(path + ".tmp", "wb") as out:
        out.write(data)
    os.replace(path + ".tmp", path)
    print(f"40-pip-uv: {project} {version} -> {path}")
    sys.exit(0)
sys.exit(f"40-pip-uv: no {project} release in [{low}, {high}) has a *{suffix} file")
PY
}
fetch pip 25.0 27 -py3-none-any.whl
fetch uv 0.9 1.0 -py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
