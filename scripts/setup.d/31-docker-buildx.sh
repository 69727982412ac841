#!/usr/bin/env bash
# The docker buildx CLI plugin for `scripts/images buildkit buildx` (tests/images/buildkit.rs):
# bookworm packages no docker-buildx, so Debian trixie's is fetched with `apt-get download` from a
# private apt configuration under the cache (the host's apt sources and lists are not touched),
# unpacked, and its plugin binary put in "$ROCM_PIN_CACHE/docker-buildx/config/cli-plugins", the
# DOCKER_CONFIG scripts/lib/buildkit.sh gives Debian's docker 20.10. Never installed on the host.
# Idempotent: an executable plugin already there is kept.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROCM_PIN_CACHE="${ROCM_PIN_CACHE:-$PWD/.cache}"
dest="$ROCM_PIN_CACHE/docker-buildx"
plugin="$dest/config/cli-plugins/docker-buildx"
if [ -x "$plugin" ]; then
  echo "31-docker-buildx: already present: $plugin"
  exit 0
fi
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -r "$keyring" ] || {
  echo "31-docker-buildx: $keyring missing (apt-get install debian-archive-keyring)" >&2
  exit 1
}
work="$dest/apt"
rm -rf "$work"
mkdir -p "$work/etc" "$work/lists/partial" "$work/cache/archives/partial" "$work/deb"
trap 'rm -rf "$work"' EXIT
echo "deb [signed-by=$keyring] http://deb.debian.org/debian trixie main" >"$work/etc/sources.list"
apt_opts=(
  -o "Dir::Etc::SourceList=$work/etc/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o Dir::State::status=/dev/null
  -o APT::Architecture=amd64 -o APT::Sandbox::User=root
)
apt-get "${apt_opts[@]}" update -q >/dev/null
# The version the docs and tests were measured with; should trixie replace it, the newer one is
# taken and named (its docker driver still drives the dockerd's own BuildKit).
pin=0.13.1+ds1-3
want=docker-buildx
if apt-cache "${apt_opts[@]}" madison docker-buildx | awk -F'|' '{print $2}' | grep -qx " *$pin *"; then
  want="docker-buildx=$pin"
else
  echo "31-docker-buildx: trixie no longer has docker-buildx $pin; taking its current version" >&2
fi
(cd "$work/deb" && apt-get "${apt_opts[@]}" download "$want")
deb=$(compgen -G "$work/deb/docker-buildx_*.deb" | head -1) || {
  echo "31-docker-buildx: apt-get download docker-buildx (Debian trixie) produced no .deb" >&2
  exit 1
}
dpkg-deb -x "$deb" "$work/x"
mkdir -p "$(dirname "$plugin")"
install -m 0755 "$work/x/usr/libexec/docker/cli-plugins/docker-buildx" "$plugin.tmp"
mv "$plugin.tmp" "$plugin"
echo "31-docker-buildx: $(basename "$deb") -> $plugin"
