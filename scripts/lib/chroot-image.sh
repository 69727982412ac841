# shellcheck shell=bash
# make_chroot_image TAG SUITE [INCLUDE]: make "$ROCM_PIN_CACHE/chroot/<TAG>.tar.zst" with
# `mmdebstrap --variant=apt [--include=INCLUDE] SUITE`, unless it is already there. Sourced by the
# scripts/setup.d/2x-*.sh scripts, which only say which images they need.
#
# CHROOT_IMAGE_OPTS / CHROOT_IMAGE_MIRRORS (arrays, optional): extra mmdebstrap options (before the
# suite) and mirror lines (after the target), for images that need more than the default mirror.
#
# ROCM_PIN_CHROOT_SEED=DIR: copy DIR/<TAG>.tar.zst instead of running mmdebstrap when it exists
# there (a developer machine with a prepared tarball); CI leaves it unset.
make_chroot_image() {
  local tag=$1 suite=$2 include=${3:-} dest tarball tmp start
  dest="$ROCM_PIN_CACHE/chroot"
  tarball="$dest/$tag.tar.zst"
  mkdir -p "$dest"
  if [ -s "$tarball" ]; then
    echo "chroot image: $tarball already present"
    return 0
  fi
  # mmdebstrap picks the output format from the name: keep .tar.zst at the end of the temp name.
  tmp="$dest/.$tag.$$.tmp.tar.zst"
  # shellcheck disable=SC2064 # expand now: the trap must remove this call's temp file
  trap "rm -f '$tmp'" EXIT
  if [ -n "${ROCM_PIN_CHROOT_SEED:-}" ] && [ -s "$ROCM_PIN_CHROOT_SEED/$tag.tar.zst" ]; then
    echo "chroot image: seeding $tarball from $ROCM_PIN_CHROOT_SEED"
    cp "$ROCM_PIN_CHROOT_SEED/$tag.tar.zst" "$tmp"
  else
    if [ "$(id -u)" -ne 0 ]; then
      echo "chroot image: making $tarball needs root (mmdebstrap in root mode); rerun as root" >&2
      exit 1
    fi
    if ! command -v mmdebstrap >/dev/null; then
      echo "chroot image: mmdebstrap is not installed: apt-get install mmdebstrap (scripts/install-deps)" >&2
      exit 1
    fi
    echo "chroot image: mmdebstrap --variant=apt ${include:+--include=$include }$suite"
    start=$SECONDS
    mmdebstrap --variant=apt --quiet ${include:+"--include=$include"} \
      ${CHROOT_IMAGE_OPTS[@]+"${CHROOT_IMAGE_OPTS[@]}"} \
      "$suite" "$tmp" ${CHROOT_IMAGE_MIRRORS[@]+"${CHROOT_IMAGE_MIRRORS[@]}"}
    echo "chroot image: $tag made in $((SECONDS - start)) s"
  fi
  mv "$tmp" "$tarball"
  trap - EXIT
  ls -l "$tarball"
}
