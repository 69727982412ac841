#!/usr/bin/env bash
# Debian's real RCCL for issue 34 criterion 3 (tests/install/rccl_debian.rs): experimental's
# `librccl1` (librccl.so.1; ~370 MB as a .deb), its exact-`=` dependants `librccl1-tests` (real
# programs linked against librccl.so.1) and `librccl-dev`, with whatever of their dependency
# closure the 7.2.4 image of 23-debian-rocm-chroot.sh lacks, so the test publishes them as a
# local repository and installs them with apt, offline, into a copy of that image. The stock
# `librccl1` .deb is kept as downloaded: the test forces it in with the seed's
# `dpkg -i --force-all`.
# The archive moves: nothing here names a version; apt resolves the names against the image's
# own dpkg status file, `-t experimental` as the image was made, and what came is checked for
# its structure (librccl1 ships librccl.so.1; librccl1-tests and librccl-dev depend on
# `librccl1 (= <the downloaded version>)`).
# Output "$ROCM_PIN_CACHE/debian-rccl/": the .debs and `packages`, one line per downloaded
# package: `<package> <version> <file>`. Made in a temporary directory and renamed into place,
# so a failed or interrupted download leaves nothing behind.
# Idempotent: an existing directory is kept. Needs the 7.2.4 image and the network the first time.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/lib/private-apt.sh
. scripts/lib/private-apt.sh
ROCM_PIN_CACHE="${ROCM_PIN_CACHE:-$PWD/.cache}"
dest="$ROCM_PIN_CACHE/debian-rccl"
image="$ROCM_PIN_CACHE/chroot/sid-debian-rocm.tar.zst"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
wanted="librccl1 librccl1-tests librccl-dev"
# The whole closure, librccl1 included; more than this means the archive changed what these
# packages pull in, and the test's download cost with it: look before raising it.
max_bytes=$((600 * 1000 * 1000))

if [ -s "$dest/packages" ]; then
  echo "26-debian-rccl: already present: $dest"
  exit 0
fi
[ -f "$image" ] || {
  echo "26-debian-rccl: $image is missing: run scripts/setup.d/23-debian-rocm-chroot.sh first" >&2
  exit 1
}
[ -r "$keyring" ] || {
  echo "26-debian-rccl: $keyring missing (apt-get install debian-archive-keyring)" >&2
  exit 1
}
start=$SECONDS
mkdir -p "$ROCM_PIN_CACHE"
work="$(mktemp -d "$ROCM_PIN_CACHE/.debian-rccl.XXXXXX")"
trap 'rm -rf "$work"' EXIT
private_apt 26-debian-rccl "$work" "$image" "$keyring"

# shellcheck disable=SC2086 # $wanted is a list of names
bytes="$(apt-get "${apt_opts[@]}" install -qq --print-uris $wanted | awk '{ n += $3 } END { print n + 0 }')"
if [ "$bytes" -gt "$max_bytes" ]; then
  echo "26-debian-rccl: installing $wanted into the image downloads $bytes bytes, over $max_bytes" >&2
  exit 1
fi
# Nothing of the image may change: the closure is new packages only.
# shellcheck disable=SC2086
changes="$(apt-get "${apt_opts[@]}" install -s -qq $wanted | grep -E '^(Remv |Inst [^ ]+ \[)' || true)"
if [ -n "$changes" ]; then
  echo "26-debian-rccl: installing $wanted would change the image's packages:" >&2
  echo "$changes" >&2
  exit 1
fi
# shellcheck disable=SC2086
apt-get "${apt_opts[@]}" install -qq -y --download-only $wanted >/dev/null
mv "$work/cache/archives/"*.deb "$work/out/"

deb_of() {
  compgen -G "$work/out/${1}_*.deb" | head -1
}
for name in $wanted; do
  [ -n "$(deb_of "$name")" ] || {
    echo "26-debian-rccl: apt-get --download-only left no ${name}_*.deb" >&2
    exit 1
  }
done
stock="$(deb_of librccl1)"
version="$(dpkg-deb -f "$stock" Version)"
dpkg-deb -c "$stock" | grep -qE '/librccl\.so\.1 -> |/librccl\.so\.1$' || {
  echo "26-debian-rccl: $(basename "$stock") ships no librccl.so.1" >&2
  exit 1
}
for dependant in librccl1-tests librccl-dev; do
  deps="$(dpkg-deb -f "$(deb_of "$dependant")" Depends)"
  grep -qF "librccl1 (= $version)" <<<"$deps" || {
    echo "26-debian-rccl: $dependant does not depend on librccl1 (= $version): $deps" >&2
    exit 1
  }
done
for deb in "$work/out/"*.deb; do
  echo "$(dpkg-deb -f "$deb" Package) $(dpkg-deb -f "$deb" Version) $(basename "$deb")"
done >"$work/out/packages"
mv "$work/out" "$dest"
echo "26-debian-rccl: in $dest ($bytes bytes, $((SECONDS - start)) s):"
cat "$dest/packages"
