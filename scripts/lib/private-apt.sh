# shellcheck shell=bash
# A private apt that resolves against a chroot image's own dpkg database, for setup steps that
# fetch the Debian packages an image lacks (24-debian-new-dependants.sh, 26-debian-rccl.sh):
# the host's sources, lists, pins and status are never read or touched.
#
#   private_apt WHO WORK IMAGE KEYRING   fills the array apt_opts (pass it to apt-get) and runs
#                                        `apt-get update` on sid + experimental (experimental
#                                        preferred); WHO names the step in its errors.
# Check-Valid-Until: the archive snapshot these machines reach is past its Release files'
# Valid-Until date (see 22-rocm-toolchain-chroot.sh).
private_apt() {
  local who=$1 work=$2 image=$3 keyring=$4
  mkdir -p "$work/etc" "$work/lists/partial" "$work/cache/archives/partial" "$work/out" \
    "$work/dpkg/info" "$work/dpkg/updates"
  # The image's dpkg database is what apt resolves against: what it has is not fetched.
  tar --zstd -xOf "$image" ./var/lib/dpkg/status >"$work/dpkg/status"
  [ -s "$work/dpkg/status" ] || {
    echo "$who: no ./var/lib/dpkg/status in $image" >&2
    exit 1
  }
  printf 'deb [signed-by=%s] http://deb.debian.org/debian %s main\n' \
    "$keyring" sid "$keyring" experimental >"$work/etc/sources.list"
  apt_opts=(
    -o "Dir::Etc::SourceList=$work/etc/sources.list" -o Dir::Etc::SourceParts=/dev/null
    -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null
    -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache"
    -o "Dir::State::status=$work/dpkg/status" -o "Dir::State::extended_states=$work/extended_states"
    -o APT::Architecture=amd64 -o APT::Architectures=amd64 -o APT::Sandbox::User=root
    -o Acquire::Check-Valid-Until=false -o APT::Install-Recommends=false
    -o APT::Default-Release=experimental -o Acquire::Languages=none
  )
  apt-get "${apt_opts[@]}" update -q --error-on=any >/dev/null
}
