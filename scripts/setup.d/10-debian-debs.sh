#!/usr/bin/env bash
# Debian's own ROCm runtime packages, used as real-world input for the .deb and ELF readers.
# Downloaded with `apt-get download` (never committed) into "$ROCM_PIN_CACHE/debian-debs".
# Idempotent: does nothing when both .debs are already there.
set -euo pipefail
cd "$(dirname "$0")/../.."
cache="${ROCM_PIN_CACHE:-$PWD/.cache}"
dest="$cache/debian-debs"
packages=(libhsa-runtime64-1 libamdhip64-5)
mkdir -p "$dest"

missing=()
for p in "${packages[@]}"; do
  compgen -G "$dest/${p}_*.deb" >/dev/null || missing+=("$p")
done
[ "${#missing[@]}" -eq 0 ] && exit 0

# apt-get download needs package lists; refresh them once when the packages are unknown.
if ! apt-cache show "${missing[@]}" >/dev/null 2>&1; then
  apt-get update -qq
fi
tmp="$(mktemp -d "$dest/.download.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

# apt-get download writes into the current directory.
(cd "$tmp" && apt-get download -qq -o APT::Sandbox::User=root "${missing[@]}")
for f in "$tmp"/*.deb; do
  dpkg-deb --info "$f" >/dev/null   # refuse a broken download before it lands in the cache
  mv "$f" "$dest/"
done
echo "debian-debs: downloaded ${missing[*]} into $dest"
