#!/usr/bin/env bash
# Real NEW dependants for the downstream scenario list on Debian's real 7.2.4 stock (issue 23
# item 4, tests/package/debian_downstream.rs): Debian packages that depend DIRECTLY on a stock
# runtime package of the sid-debian-rocm image (23-debian-rocm-chroot.sh) and are not installed
# there, fetched with whatever of their dependency closure the image lacks, so the test installs
# them with apt from a local repository, offline. One per half, the first candidate that fits:
#   HIP (libamdhip64-7):      libhipfftw0 (hipFFT's FFTW interface; its other ROCm dependency,
#                             librocfft0, is in the image)
#   HSA (libhsa-runtime64-1): libhsa-amd-aqlprofile64-1 (AMD's AQL profiling library), else
#                             rocm-opencl-icd
# The names are preferences; the versions are what the archive has: apt resolves each against
# the image's own dpkg status file, `-t experimental` as the image was made, so exactly the
# closure the image lacks is downloaded (measured: none beyond the two packages, ~200 KB).
# A candidate whose closure is over $max_bytes is passed over (librocrand1 alone is 54 MB).
# Output "$ROCM_PIN_CACHE/debian-new-dependants/": the .debs and `dependants`, one line per
# dependant: `<package> <version> <the stock package it depends on>`. Made in a temporary
# directory and renamed into place, so a failed download leaves nothing behind.
# Idempotent: an existing directory is kept. Needs the 7.2.4 image and the network.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/lib/private-apt.sh
. scripts/lib/private-apt.sh
ROCM_PIN_CACHE="${ROCM_PIN_CACHE:-$PWD/.cache}"
dest="$ROCM_PIN_CACHE/debian-new-dependants"
image="$ROCM_PIN_CACHE/chroot/sid-debian-rocm.tar.zst"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
max_bytes=$((30 * 1000 * 1000))
# "<stock package of the image>:<candidates, in order of preference>", one per half.
halves=(
  "libamdhip64-7:libhipfftw0"
  "libhsa-runtime64-1:libhsa-amd-aqlprofile64-1 rocm-opencl-icd"
)

if [ -s "$dest/dependants" ]; then
  echo "24-debian-new-dependants: already present: $dest"
  exit 0
fi
[ -f "$image" ] || {
  echo "24-debian-new-dependants: $image is missing: run scripts/setup.d/23-debian-rocm-chroot.sh first" >&2
  exit 1
}
[ -r "$keyring" ] || {
  echo "24-debian-new-dependants: $keyring missing (apt-get install debian-archive-keyring)" >&2
  exit 1
}
work="$(mktemp -d "$ROCM_PIN_CACHE/.debian-new-dependants.XXXXXX")"
trap 'rm -rf "$work"' EXIT
private_apt 24-debian-new-dependants "$work" "$image" "$keyring"

is_in_image() {
  [ "$(dpkg-query --admindir="$work/dpkg" -W -f '${db:Status-Abbrev}' "$1" 2>/dev/null)" = "ii " ]
}

# The bytes of the .debs apt would download to install $1 into the image (its closure there).
closure_bytes() {
  apt-get "${apt_opts[@]}" install -qq --print-uris "$1" | awk '{ n += $3 } END { print n + 0 }'
}

# What installing $1 would change in the image beyond new packages: upgrades (`Inst p [old]`)
# and removals. A new dependant must be just that, or the scenario tests something else.
changes_in_image() {
  apt-get "${apt_opts[@]}" install -s -qq "$1" | grep -E '^(Remv |Inst [^ ]+ \[)' || true
}

# Does .deb $1 list $2 in its Depends (as one of its alternatives)?
depends_directly() {
  dpkg-deb -f "$1" Depends |
    awk -v want="$2" -v RS='[,|]' '{ sub(/^[ \n]+/, ""); split($0, w, /[ (:\n]/) } w[1] == want { found = 1 } END { exit !found }'
}

for half in "${halves[@]}"; do
  stock="${half%%:*}"
  picked=""
  why=()
  for name in ${half#*:}; do
    if is_in_image "$name"; then
      why+=("$name: installed in the image already")
      continue
    fi
    if ! bytes="$(closure_bytes "$name" 2>"$work/err")"; then
      why+=("$name: apt cannot install it into the image: $(cat "$work/err")")
      continue
    fi
    changes="$(changes_in_image "$name")"
    if [ -n "$changes" ]; then
      why+=("$name: installing it would change the image's packages: $changes")
      continue
    fi
    if [ "$bytes" -gt "$max_bytes" ]; then
      why+=("$name: its closure is $bytes bytes, over $max_bytes")
      continue
    fi
    rm -f "$work/cache/archives/"*.deb
    apt-get "${apt_opts[@]}" install -qq -y --download-only "$name" >/dev/null
    deb="$(compgen -G "$work/cache/archives/${name}_*.deb" | head -1)" || {
      why+=("$name: apt-get --download-only left no ${name}_*.deb")
      continue
    }
    if ! depends_directly "$deb" "$stock"; then
      why+=("$name: does not depend on $stock directly ($(dpkg-deb -f "$deb" Depends))")
      continue
    fi
    mv "$work/cache/archives/"*.deb "$work/out/"
    echo "$name $(dpkg-deb -f "$work/out/$(basename "$deb")" Version) $stock" >>"$work/out/dependants"
    picked="$name"
    break
  done
  if [ -z "$picked" ]; then
    echo "24-debian-new-dependants: no new dependant of $stock fits:" >&2
    printf '  %s\n' "${why[@]}" >&2
    echo "  add a package depending on $stock directly to \`halves\` in $0" >&2
    exit 1
  fi
done
mv "$work/out" "$dest"
echo "24-debian-new-dependants: in $dest:"
cat "$dest/dependants"
du -b "$dest"/*.deb
