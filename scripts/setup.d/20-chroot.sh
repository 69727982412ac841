#!/usr/bin/env bash
# The chroot images the acceptance tests and `rocm-pin demo` unpack per scenario:
# "$ROCM_PIN_CACHE/chroot/<suite>-apt.tar.zst", made with `mmdebstrap --variant=apt <suite>`
# (bookworm: apt 2.6 / dpkg 1.21; trixie: apt 3.0 / dpkg 1.22). Idempotent: an existing tarball
# is kept. Needs root and the network the first time.
#
# ROCM_PIN_CHROOT_SEED=DIR: copy DIR/<suite>-apt.tar.zst instead of running mmdebstrap when it
# exists there (a developer machine with a prepared tarball); CI leaves it unset.
# ROCM_PIN_CHROOT_SUITES overrides the suite list (default "bookworm trixie").
set -euo pipefail
cd "$(dirname "$0")/../.."
ROCM_PIN_CACHE="${ROCM_PIN_CACHE:-$PWD/.cache}"
dest="$ROCM_PIN_CACHE/chroot"
mkdir -p "$dest"
read -r -a suites <<<"${ROCM_PIN_CHROOT_SUITES:-bookworm trixie}"

for suite in "${suites[@]}"; do
  tarball="$dest/$suite-apt.tar.zst"
  if [ -s "$tarball" ]; then
    echo "20-chroot: $tarball already present"
    continue
  fi
  # mmdebstrap picks the output format from the name: keep .tar.zst at the end of the temp name.
  tmp="$dest/.$suite-apt.$$.tmp.tar.zst"
  trap 'rm -f "$tmp"' EXIT
  if [ -n "${ROCM_PIN_CHROOT_SEED:-}" ] && [ -s "$ROCM_PIN_CHROOT_SEED/$suite-apt.tar.zst" ]; then
    echo "20-chroot: seeding $tarball from $ROCM_PIN_CHROOT_SEED"
    cp "$ROCM_PIN_CHROOT_SEED/$suite-apt.tar.zst" "$tmp"
  else
    if [ "$(id -u)" -ne 0 ]; then
      echo "20-chroot: making $tarball needs root (mmdebstrap in root mode); rerun as root" >&2
      exit 1
    fi
    if ! command -v mmdebstrap >/dev/null; then
      echo "20-chroot: mmdebstrap is not installed: apt-get install mmdebstrap (scripts/install-deps)" >&2
      exit 1
    fi
    echo "20-chroot: mmdebstrap --variant=apt $suite (takes 10-60 s)"
    start=$SECONDS
    mmdebstrap --variant=apt --quiet "$suite" "$tmp"
    echo "20-chroot: $suite image made in $((SECONDS - start)) s"
  fi
  mv "$tmp" "$tarball"
  trap - EXIT
  ls -l "$tarball"
done
