#!/usr/bin/env bash
# The chroot images the acceptance tests and `rocm-pin demo` unpack per scenario:
# "$ROCM_PIN_CACHE/chroot/<suite>-apt.tar.zst", made with `mmdebstrap --variant=apt <suite>`
# (bookworm: apt 2.6 / dpkg 1.21; trixie: apt 3.0 / dpkg 1.22). Idempotent: an existing tarball
# is kept. Needs root and the network the first time (10-60 s each).
# ROCM_PIN_CHROOT_SEED: see scripts/lib/chroot-image.sh.
# ROCM_PIN_CHROOT_SUITES overrides the suite list (default "bookworm trixie").
set -euo pipefail
cd "$(dirname "$0")/../.."
ROCM_PIN_CACHE="${ROCM_PIN_CACHE:-$PWD/.cache}"
# shellcheck source=scripts/lib/chroot-image.sh
. scripts/lib/chroot-image.sh
read -r -a suites <<<"${ROCM_PIN_CHROOT_SUITES:-bookworm trixie}"
for suite in "${suites[@]}"; do
  make_chroot_image "$suite-apt" "$suite"
done
