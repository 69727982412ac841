#!/usr/bin/env bash
# The real-toolchain builder image: Debian sid with experimental enabled, holding Debian's ROCm
# 7.2.4 toolchain (comgr 3.0.0, hipcc, rocm-device-libs-22 from experimental; clang/lld/llvm 22
# from sid). tests/build/real.rs runs `rocm-pin build` of the real ROCr and CLR/HIP trees in it,
# then packages, installs and loads the result there.
# "$ROCM_PIN_CACHE/chroot/sid-rocm-toolchain.tar.zst". Idempotent: an existing tarball is kept.
# Needs root and the network the first time (measured: about 1-2 minutes, ~1.5 GB unpacked).
# ROCM_PIN_CHROOT_SEED: see scripts/lib/chroot-image.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROCM_PIN_CACHE="${ROCM_PIN_CACHE:-$PWD/.cache}"
# shellcheck source=scripts/lib/chroot-image.sh
. scripts/lib/chroot-image.sh

# From sid: the compiler, the build tools and the libraries ROCr and CLR link against.
sid_packages="clang-22,lld-22,llvm-22-dev,libclang-22-dev,cmake,ninja-build,g++,gcc,make,pkg-config,xxd"
sid_packages+=",git,ca-certificates,libdrm-dev,libnuma-dev,libelf-dev,libdw-dev,python3-cppheaderparser"
# rocclr's find_package(OpenGL REQUIRED) needs GL/gl.h and libGL.so.
sid_packages+=",libgl-dev"
# The shared compile cache the real-build test and scripts/bench-build-cache use: ccache with a
# redis remote storage started on 127.0.0.1 inside the chroot.
sid_packages+=",ccache,redis-server"
# From experimental (only there today): Debian's ROCm 7.2.4 code-object manager, hipcc and the
# device libraries for LLVM 22; `-t experimental` because sid's versions (if any) are older.
experimental_packages="libamd-comgr-dev hipcc rocm-device-libs-22"

# Debian's Release files carry a Valid-Until date, and the archive snapshot these machines reach
# is past it, so apt refuses it as "expired" without this option. Set for mmdebstrap's own apt
# calls (--aptopt, which also writes it into the image's /etc/apt/apt.conf.d/99mmdebstrap) so
# every later `apt-get update` inside the chroot accepts the same archive.
# shellcheck disable=SC2016 # "$1" is mmdebstrap's: the hook's own shell expands it
CHROOT_IMAGE_OPTS=(
  '--aptopt=Acquire::Check-Valid-Until "false"'
  "--customize-hook=chroot \"\$1\" apt-get install -y -q --no-install-recommends -t experimental $experimental_packages"
  '--customize-hook=chroot "$1" apt-get clean'
)
CHROOT_IMAGE_MIRRORS=(
  "deb http://deb.debian.org/debian sid main"
  "deb http://deb.debian.org/debian experimental main"
)
make_chroot_image sid-rocm-toolchain sid "$sid_packages"
