#!/usr/bin/env bash
# The builder chroot image tests/docker_recipe.rs runs docs/docker/build-runtime.sh in: the
# bookworm apt image plus a compiler toolchain, standing in for the ROCm 7.2.4 image the recipe's
# builder stage starts FROM (which has cmake and a compiler once the recipe's apt line ran).
# "$ROCM_PIN_CACHE/chroot/bookworm-builder.tar.zst", made with
# `mmdebstrap --variant=apt --include=<tools> bookworm`. Idempotent: an existing tarball is kept.
# Needs root and the network the first time (about 1-3 minutes, ~100 MB).
#
# ROCM_PIN_CHROOT_SEED=DIR: copy DIR/bookworm-builder.tar.zst instead when it exists there.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROCM_PIN_CACHE="${ROCM_PIN_CACHE:-$PWD/.cache}"
dest="$ROCM_PIN_CACHE/chroot"
tarball="$dest/bookworm-builder.tar.zst"
# What `rocm-pin build` of the stand-in source needs (its prerequisite check names the same).
tools="cmake,g++,make,ninja-build,pkg-config,git,ca-certificates"
mkdir -p "$dest"
if [ -s "$tarball" ]; then
  echo "21-builder-chroot: $tarball already present"
  exit 0
fi
tmp="$dest/.bookworm-builder.$$.tmp.tar.zst"
trap 'rm -f "$tmp"' EXIT
if [ -n "${ROCM_PIN_CHROOT_SEED:-}" ] && [ -s "$ROCM_PIN_CHROOT_SEED/bookworm-builder.tar.zst" ]; then
  echo "21-builder-chroot: seeding $tarball from $ROCM_PIN_CHROOT_SEED"
  cp "$ROCM_PIN_CHROOT_SEED/bookworm-builder.tar.zst" "$tmp"
else
  if [ "$(id -u)" -ne 0 ]; then
    echo "21-builder-chroot: making $tarball needs root (mmdebstrap in root mode); rerun as root" >&2
    exit 1
  fi
  if ! command -v mmdebstrap >/dev/null; then
    echo "21-builder-chroot: mmdebstrap is not installed: apt-get install mmdebstrap (scripts/install-deps)" >&2
    exit 1
  fi
  echo "21-builder-chroot: mmdebstrap --variant=apt --include=$tools bookworm (takes 1-3 min)"
  start=$SECONDS
  mmdebstrap --variant=apt --quiet --include="$tools" bookworm "$tmp"
  echo "21-builder-chroot: builder image made in $((SECONDS - start)) s"
fi
mv "$tmp" "$tarball"
trap - EXIT
ls -l "$tarball"
