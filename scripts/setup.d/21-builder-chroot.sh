#!/usr/bin/env bash
# The builder chroot image tests/images/docker_recipe.rs runs docs/docker/build-runtime.sh in: the
# bookworm apt image plus a compiler toolchain, standing in for the ROCm 7.2.4 image the recipe's
# builder stage starts FROM (which has cmake and a compiler once the recipe's apt line ran).
# "$ROCM_PIN_CACHE/chroot/bookworm-builder.tar.zst", made with
# `mmdebstrap --variant=apt --include=<tools> bookworm`. Idempotent: an existing tarball is kept.
# Needs root and the network the first time (about 1-4 minutes, ~200 MB).
# ROCM_PIN_CHROOT_SEED: see scripts/lib/chroot-image.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROCM_PIN_CACHE="${ROCM_PIN_CACHE:-$PWD/.cache}"
# shellcheck source=scripts/lib/chroot-image.sh
. scripts/lib/chroot-image.sh
# What `rocm-pin build` of the stand-in source needs (its prerequisite check names the same).
make_chroot_image bookworm-builder bookworm "cmake,g++,make,ninja-build,pkg-config,git,ca-certificates"
