#!/usr/bin/env bash
# The hosts docs/try.md is tried on (tests/install/try_doc.rs): Debian sid with Debian's own ROCm
# runtime and real dependants, as 23-debian-rocm-chroot.sh makes them, plus what `rocm-pin build`
# of the stand-in source needs (cmake, make, gcc, libc6-dev, git: try.md's prerequisites).
# Separate images, so the two of 23-debian-rocm-chroot.sh stay what the other tests measured:
#   "$ROCM_PIN_CACHE/chroot/sid-debian-rocm-try.tar.zst"    ROCm 7.2.4 from experimental
#   "$ROCM_PIN_CACHE/chroot/sid-debian-rocm6-try.tar.zst"   ROCm 6.4.3 from sid (with libhiprtc6 and
#       libhiprtc-builtins6, which libamdhip64-6 does not pull in)
# The archive moves: versions are not pinned; the test reads what was installed.
# Idempotent: an existing tarball is kept. Needs root and the network the first time.
# ROCM_PIN_CHROOT_SEED: see scripts/lib/chroot-image.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROCM_PIN_CACHE="${ROCM_PIN_CACHE:-$PWD/.cache}"
# shellcheck source=scripts/lib/chroot-image.sh
. scripts/lib/chroot-image.sh

dependants="rocminfo librocfft0 libhipfft0"
build_tools="cmake make gcc libc6-dev git ca-certificates"
valid_until='--aptopt=Acquire::Check-Valid-Until "false"'

# 7.2.4: experimental at its default priority (NotAutomatic), `-t experimental` for the runtime.
# shellcheck disable=SC2016 # "$1" is mmdebstrap's: the hook's own shell expands it
CHROOT_IMAGE_OPTS=(
  "$valid_until"
  "--customize-hook=chroot \"\$1\" apt-get install -y -q --no-install-recommends -t experimental libamdhip64-7 libhiprtc7 libhiprtc-builtins7 libhsa-runtime64-1 $dependants"
  "--customize-hook=chroot \"\$1\" apt-get install -y -q --no-install-recommends $build_tools"
  '--customize-hook=chroot "$1" apt-get clean'
)
CHROOT_IMAGE_MIRRORS=(
  "deb http://deb.debian.org/debian sid main"
  "deb http://deb.debian.org/debian experimental main"
)
make_chroot_image sid-debian-rocm-try sid

# 6.4.3: sid's own, no experimental. libamdhip64-6 comes without libhiprtc6 and
# libhiprtc-builtins6, which a HIP build (the stand-in's too) replaces with it: try.md's
# prerequisites install them, and so does this image.
# shellcheck disable=SC2016 # "$1" is mmdebstrap's: the hook's own shell expands it
CHROOT_IMAGE_OPTS=(
  "$valid_until"
  "--customize-hook=chroot \"\$1\" apt-get install -y -q --no-install-recommends libamdhip64-6 libhiprtc6 libhiprtc-builtins6 libhsa-runtime64-1 $dependants $build_tools"
  '--customize-hook=chroot "$1" apt-get clean'
)
CHROOT_IMAGE_MIRRORS=("deb http://deb.debian.org/debian sid main")
make_chroot_image sid-debian-rocm6-try sid
