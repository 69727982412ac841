#!/usr/bin/env bash
# The Debian-flavour hosts (issue 23; tests/install/debian_flavour.rs): Debian sid with Debian's
# own ROCm runtime packages and real dependants installed, the stock a Debian or Ubuntu user has
# after `apt install libamdhip64-7`. Two images, one per ROCm series Debian ships:
#   "$ROCM_PIN_CACHE/chroot/sid-debian-rocm.tar.zst"      ROCm 7.2.4 from experimental (enabled at
#       experimental's own default priority, 1: NotAutomatic), libamdhip64.so.7
#   "$ROCM_PIN_CACHE/chroot/sid-debian-rocm6.tar.zst"     ROCm 6.4.3 from sid only, libamdhip64.so.6
#   "$ROCM_PIN_CACHE/chroot/sid-debian-rocm6-dev.tar.zst" the same plus Debian's HIP headers
#       (libamdhip64-dev) and gcc: the real build (tests/build/real.rs) replaces this stock and a
#       HIP program compiled here against Debian's headers must load ours
# The 7.2.4 image also has dpkg-dev (dpkg-shlibdeps, dpkg-gensymbols). Each holds the HIP half (libamdhip64-N, and for 7: libhiprtc7, libhiprtc-builtins7), the HSA half
# (libhsa-runtime64-1) and three real dependants: rocminfo (HSA) and the two smallest HIP libraries
# whose closure stays small, librocfft0 and libhipfft0 (librocrand1 alone is 490 MB installed).
# The package names are the facts of docs/flavours.md; the archive moves, so versions are not
# pinned here: the tests read what was installed.
# Idempotent: an existing tarball is kept. Needs root and the network the first time (measured:
# see docs/flavours.md, "The CI images").
# ROCM_PIN_CHROOT_SEED: see scripts/lib/chroot-image.sh.
# ROCM_PIN_DEBIAN_ROCM_IMAGES: "7 6 6dev" by default; "7" makes only the 7.2.4 image.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROCM_PIN_CACHE="${ROCM_PIN_CACHE:-$PWD/.cache}"
# shellcheck source=scripts/lib/chroot-image.sh
. scripts/lib/chroot-image.sh

dependants="rocminfo librocfft0 libhipfft0"
# What a Debian maintainer builds with: tests/package/debian_stock.rs runs dpkg-shlibdeps and
# dpkg-gensymbols against rocm-pin's installed replacements in the 7.2.4 image.
build_tools="dpkg-dev"
# Debian's Release files carry a Valid-Until date, and the archive snapshot these machines reach
# is past it (see 22-rocm-toolchain-chroot.sh); the option is also written into the image so a
# later `apt-get update` inside it accepts the same archive.
valid_until='--aptopt=Acquire::Check-Valid-Until "false"'

read -r -a series <<<"${ROCM_PIN_DEBIAN_ROCM_IMAGES:-7 6 6dev}"
for major in "${series[@]}"; do
  case $major in
  7)
    # ROCm 7.2.4 is only in experimental: `-t experimental` takes it and the experimental
    # versions of the dependants (sid's librocfft0/libhipfft0 are built against libamdhip64-6).
    runtime="libamdhip64-7 libhiprtc7 libhiprtc-builtins7 libhsa-runtime64-1"
    # shellcheck disable=SC2016 # "$1" is mmdebstrap's: the hook's own shell expands it
    CHROOT_IMAGE_OPTS=(
      "$valid_until"
      "--customize-hook=chroot \"\$1\" apt-get install -y -q --no-install-recommends -t experimental $runtime $dependants $build_tools"
      '--customize-hook=chroot "$1" apt-get clean'
    )
    CHROOT_IMAGE_MIRRORS=(
      "deb http://deb.debian.org/debian sid main"
      "deb http://deb.debian.org/debian experimental main"
    )
    make_chroot_image sid-debian-rocm sid
    ;;
  6)
    # ROCm 6.4.3 is sid's own: no experimental, so nothing upgrades it to 7.2.4 behind a test.
    runtime="libamdhip64-6 libhsa-runtime64-1"
    # shellcheck disable=SC2016 # "$1" is mmdebstrap's: the hook's own shell expands it
    CHROOT_IMAGE_OPTS=(
      "$valid_until"
      "--customize-hook=chroot \"\$1\" apt-get install -y -q --no-install-recommends $runtime $dependants"
      '--customize-hook=chroot "$1" apt-get clean'
    )
    CHROOT_IMAGE_MIRRORS=("deb http://deb.debian.org/debian sid main")
    make_chroot_image sid-debian-rocm6 sid
    ;;
  6dev)
    # The 6.4.3 stock with what a HIP developer on Debian has: the headers and the dev link
    # (libamdhip64-dev pins libamdhip64-6 and its siblings with `=`), and gcc to compile a HIP
    # host program with -D__HIP_PLATFORM_AMD__. A separate image, so the two above stay what
    # tests/install/debian_flavour.rs measured.
    runtime="libamdhip64-6 libhsa-runtime64-1 libamdhip64-dev"
    stock_debs="libamdhip64-6 libhiprtc6 libhiprtc-builtins6 libhsa-runtime64-1"
    # shellcheck disable=SC2016 # "$1" is mmdebstrap's: the hook's own shell expands it
    CHROOT_IMAGE_OPTS=(
      "$valid_until"
      "--customize-hook=chroot \"\$1\" apt-get install -y -q --no-install-recommends $runtime $dependants gcc libc6-dev"
      '--customize-hook=chroot "$1" apt-get clean'
      # The stock runtime .debs as installed, kept in /srv/debian-stock: the test publishes them
      # as a local repository so `apt-get install --reinstall` of Debian's names runs offline.
      "--customize-hook=chroot \"\$1\" apt-get install -y -q --reinstall --download-only $stock_debs"
      '--customize-hook=mkdir -p "$1/srv/debian-stock" && mv "$1"/var/cache/apt/archives/*.deb "$1/srv/debian-stock/"'
      '--customize-hook=chroot "$1" apt-get clean'
    )
    CHROOT_IMAGE_MIRRORS=("deb http://deb.debian.org/debian sid main")
    make_chroot_image sid-debian-rocm6-dev sid
    ;;
  *)
    echo "23-debian-rocm-chroot: unknown ROCm series '$major' in ROCM_PIN_DEBIAN_ROCM_IMAGES (use 7, 6 and/or 6dev)" >&2
    exit 1
    ;;
  esac
done
