#!/usr/bin/env bash
# Debian's own ROCm runtime packages (libhsa-runtime64-1, libamdhip64-5), real-world inputs for the
# .deb and ELF readers. Downloaded with `apt-get download` into "$ROCM_PIN_CACHE/debian-debs";
# never committed. Idempotent: a package whose .deb is already there is not fetched again.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROCM_PIN_CACHE="${ROCM_PIN_CACHE:-$PWD/.cache}"
dest="$ROCM_PIN_CACHE/debian-debs"
mkdir -p "$dest"

# Each wanted package, with the names it has had across releases (the t64 transition renamed
# some libraries after bookworm). The first name apt knows a candidate for is downloaded.
wanted=(
  "libhsa-runtime64-1 libhsa-runtime64-1t64"
  "libamdhip64-5 libamdhip64-5t64 libamdhip64-6"
)

have_deb() {
  compgen -G "$dest/${1}_*.deb" >/dev/null
}

apt_lists_empty() {
  ! compgen -G "/var/lib/apt/lists/*_Packages*" >/dev/null
}

has_candidate() {
  local c
  c="$(apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ {print $2}')"
  [ -n "$c" ] && [ "$c" != "(none)" ]
}

todo=()
for names in "${wanted[@]}"; do
  found=""
  for n in $names; do
    if have_deb "$n"; then found="$n"; break; fi
  done
  if [ -z "$found" ]; then todo+=("$names"); fi
done
if [ "${#todo[@]}" -eq 0 ]; then
  echo "10-debian-debs: already present in $dest"
  exit 0
fi

if apt_lists_empty; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "10-debian-debs: apt package lists are empty and we are not root; run 'sudo apt-get update' first" >&2
    exit 1
  fi
  apt-get update -q
fi

for names in "${todo[@]}"; do
  pick=""
  for n in $names; do
    if has_candidate "$n"; then pick="$n"; break; fi
  done
  if [ -z "$pick" ]; then
    echo "10-debian-debs: none of [$names] is available from the configured apt sources" >&2
    echo "  (these are Debian bookworm packages in main; check /etc/apt/sources.list and run apt-get update)" >&2
    exit 1
  fi
  # apt-get download writes into the current directory; download to a temp dir in the cache and
  # move into place so an interrupted download never leaves a partial .deb behind.
  tmp="$(mktemp -d "$dest/.download.XXXXXX")"
  chmod 755 "$tmp" # apt downloads as the _apt user when it can reach the directory
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && apt-get download -q "$pick")
  mv "$tmp"/*.deb "$dest/"
  rm -rf "$tmp"
  trap - EXIT
  echo "10-debian-debs: downloaded $pick into $dest"
done
ls -l "$dest"
