#!/usr/bin/env bash
# The day-2 images (tests/install/day2.rs, stock-release scenarios): the apt variant plus aptitude and
# unattended-upgrades, so `aptitude safe-upgrade` and `unattended-upgrade` run as Debian ships
# them without the tests touching the network: "$ROCM_PIN_CACHE/chroot/<suite>-day2.tar.zst".
# Idempotent (an existing tarball is kept); needs root and the network the first time.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROCM_PIN_CACHE="${ROCM_PIN_CACHE:-$PWD/.cache}"
# shellcheck source=scripts/lib/chroot-image.sh
. scripts/lib/chroot-image.sh
read -r -a suites <<<"${ROCM_PIN_CHROOT_SUITES:-bookworm trixie}"
for suite in "${suites[@]}"; do
  make_chroot_image "$suite-day2" "$suite" "aptitude,unattended-upgrades"
done
