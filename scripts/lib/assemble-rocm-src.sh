#!/usr/bin/env bash
# assemble-rocm-src.sh SRC_DIR DEST: the real ROCm runtime sources (../shared/rocm-src: ROCr and
# rocprofiler-register from ROCm/rocm-systems, CLR, HIP 6.3.0; see its README) assembled into
# rocm-systems' monorepo layout (projects/rocr-runtime, projects/clr, projects/hip) as a git
# repository with one commit, and that commit printed on stdout. The tarballs are checked
# against SHA256SUMS first. Author, committer and dates are fixed, so the same tarballs give the
# same commit id everywhere (and the same paths and SOURCE_DATE_EPOCH for the compile cache).
# Used by tests/build/real.rs and scripts/bench-build-cache.
set -euo pipefail
src=$1 dest=$2
rocr="rocm-systems-1b1610fc-rocr-runtime+rocprofiler-register.tar.xz"
clr="clr-f9f995c6.tar.xz"
hip="hip-c5e11fca.tar.xz"
for f in "$rocr" "$clr" "$hip" SHA256SUMS; do
  if [ ! -s "$src/$f" ]; then
    echo "assemble-rocm-src: $src/$f is missing (the shared ROCm sources; see shared/rocm-src/README.md)" >&2
    exit 1
  fi
done
(cd "$src" && sha256sum --quiet -c SHA256SUMS) >&2
if [ -e "$dest" ]; then
  echo "assemble-rocm-src: $dest exists; give a new directory" >&2
  exit 1
fi
mkdir -p "$dest/projects/clr" "$dest/projects/hip"
tar -xJf "$src/$rocr" -C "$dest" --strip-components=1
tar -xJf "$src/$clr" -C "$dest/projects/clr" --strip-components=1
tar -xJf "$src/$hip" -C "$dest/projects/hip" --strip-components=1
export GIT_AUTHOR_NAME=rocm-pin-test GIT_AUTHOR_EMAIL=rocm-pin-test@localhost
export GIT_COMMITTER_NAME=rocm-pin-test GIT_COMMITTER_EMAIL=rocm-pin-test@localhost
# The ROCr snapshot's commit date (ROCm/rocm-systems 1b1610fc, 2025-08-09).
export GIT_AUTHOR_DATE=2025-08-09T00:00:00Z GIT_COMMITTER_DATE=2025-08-09T00:00:00Z
git -C "$dest" init -q
git -C "$dest" -c core.autocrlf=false add -A
git -C "$dest" -c commit.gpgsign=false commit -q \
  -m "rocm-systems 1b1610fc (rocr-runtime, rocprofiler-register) + clr f9f995c6 + hip c5e11fca"
git -C "$dest" rev-parse HEAD
