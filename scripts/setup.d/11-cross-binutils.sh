#!/usr/bin/env bash
# Debian's powerpc cross binutils (as, ld), unpacked into "$ROCM_PIN_CACHE/cross-binutils/root"
# without installing anything: the ELF tests assemble and link big-endian ELF32 and ELF64
# shared objects with them (no big-endian machine or compiler needed). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROCM_PIN_CACHE="${ROCM_PIN_CACHE:-$PWD/.cache}"
dest="$ROCM_PIN_CACHE/cross-binutils"
pkg=binutils-powerpc-linux-gnu
root="$dest/root"

if [ -x "$root/usr/bin/powerpc-linux-gnu-ld" ]; then
  echo "11-cross-binutils: already unpacked in $root"
  exit 0
fi
mkdir -p "$dest"
if ! compgen -G "$dest/${pkg}_*.deb" >/dev/null; then
  if ! compgen -G "/var/lib/apt/lists/*_Packages*" >/dev/null; then
    if [ "$(id -u)" -ne 0 ]; then
      echo "11-cross-binutils: apt package lists are empty; run 'sudo apt-get update' first" >&2
      exit 1
    fi
    apt-get update -q
  fi
  tmp="$(mktemp -d "$dest/.download.XXXXXX")"
  chmod 755 "$tmp" # apt downloads as the _apt user when it can reach the directory
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && apt-get download -q "$pkg")
  mv "$tmp"/*.deb "$dest/"
  rm -rf "$tmp"
  trap - EXIT
fi
debs=("$dest/${pkg}"_*.deb)
partial="$dest/.root.$$"
rm -rf "$partial"
dpkg-deb -x "${debs[0]}" "$partial"
rm -rf "$root"
mv "$partial" "$root"
echo "11-cross-binutils: unpacked ${debs[0]##*/} into $root"
