#!/usr/bin/env bash
# A stand-in for rust:1-bookworm (docs/docker/tool.Dockerfile's RUST_IMAGE), which cannot be
# pulled here: scripts/lib/standin-rust.Dockerfile on the cached bookworm builder tarball, with
# the host's Rust toolchain (`rustc --print sysroot`) and Cargo.lock's crates vendored, so that
# tool.Dockerfile builds with --network none.
#
#   scripts/lib/standin-rust-image.sh vendor   cargo vendor --locked into
#                                              $ROCM_PIN_CACHE/rust-standin/vendor-<Cargo.lock hash>
#                                              (crates.io only for crates not in ~/.cargo), and
#                                              apt-get download dpkg-dev and the packages it needs
#                                              that the builder tarball lacks (idempotent)
#   scripts/lib/standin-rust-image.sh image    make (cached) the image in the podman storage of
#                                              scripts/images; prints its reference on the last line
#
# Needs root, buildah/podman (scripts/install-deps), the bookworm builder tarball (scripts/test-setup).
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
ROCM_PIN_CACHE="${ROCM_PIN_CACHE:-$repo/.cache}"
dir=$ROCM_PIN_CACHE/rust-standin
lock_sum=$(sha256sum Cargo.lock | cut -c1-12)
vendor=$dir/vendor-$lock_sum
debs=$dir/debs
# dpkg-dev (tool.Dockerfile apt-get installs it; rust:1-bookworm has it) and what it needs that
# the bookworm builder tarball lacks: installed from these .debs, as the image's apt is offline.
deb_packages=(dpkg-dev libdpkg-perl bzip2 patch xz-utils)

say() { printf 'standin-rust: %s\n' "$*" >&2; }
die() {
  say "ERROR: $*"
  exit 1
}

download_debs() {
  [ -f "$debs/.done" ] && return 0
  rm -rf "$debs" "$debs.tmp"
  mkdir -p "$debs.tmp"
  say "apt-get download ${deb_packages[*]} -> $debs"
  # apt's package lists may be missing (scripts/install-deps updates them only when it installs).
  if ! (cd "$debs.tmp" && apt-get download -q "${deb_packages[@]}") >"$dir/debs.log" 2>&1; then
    apt-get update -q >>"$dir/debs.log" 2>&1 || die "apt-get update failed: $(tail -5 "$dir/debs.log")"
    (cd "$debs.tmp" && apt-get download -q "${deb_packages[@]}") >>"$dir/debs.log" 2>&1 ||
      die "apt-get download ${deb_packages[*]} failed: $(tail -5 "$dir/debs.log")"
  fi
  touch "$debs.tmp/.done"
  mv "$debs.tmp" "$debs"
}

make_vendor() {
  mkdir -p "$dir"
  download_debs
  [ -f "$vendor/.done" ] && return 0
  command -v cargo >/dev/null || die "cargo is not on PATH"
  mkdir -p "$dir"
  rm -rf "$vendor" "$vendor.tmp"
  say "cargo vendor --locked -> $vendor"
  cargo vendor --locked --versioned-dirs "$vendor.tmp" >/dev/null 2>"$dir/vendor.log" ||
    die "cargo vendor failed: $(tail -5 "$dir/vendor.log")"
  touch "$vendor.tmp/.done"
  mv "$vendor.tmp" "$vendor"
  # Older vendor trees (another Cargo.lock) are not needed again.
  find "$dir" -maxdepth 1 -name 'vendor-*' ! -name "vendor-$lock_sum" -exec rm -rf {} +
}

make_image() {
  local sysroot rust_version tarball os_ref sum ref ctx
  if [ ! -f "$vendor/.done" ] || [ ! -f "$debs/.done" ]; then
    die "$vendor or $debs is missing: run scripts/test-setup (scripts/setup.d/30-rust-standin.sh)"
  fi
  command -v rustc >/dev/null || die "rustc is not on PATH"
  sysroot=$(rustc --print sysroot)
  rust_version=$(rustc --version | cut -d' ' -f2)
  tarball=$ROCM_PIN_CACHE/chroot/bookworm-builder.tar.zst
  [ -s "$tarball" ] || die "$tarball is missing: run scripts/test-setup"
  eval "$(scripts/images env)"
  # The same name scripts/images base --builder imports the tarball as.
  os_ref=localhost/rocm-pin-standin/bookworm-builder:$(stat -c '%s-%Y' "$tarball")
  sum=$({ echo "$os_ref"; cat scripts/lib/standin-rust.Dockerfile; ls "$debs"; } | sha256sum | cut -c1-8)
  ref=localhost/rocm-pin-standin/rust:$rust_version-$lock_sum-$sum
  if podman image exists "$ref"; then
    echo "$ref"
    return 0
  fi
  if ! podman image exists "$os_ref"; then
    say "podman import $tarball as $os_ref"
    zstd -dc "$tarball" | podman import --quiet - "$os_ref" >/dev/null || die "podman import of $tarball failed"
  fi
  ctx=$(mktemp -d "$dir/.ctx.XXXXXX")
  # shellcheck disable=SC2064 # expand now: remove this call's directory
  trap "rm -rf '$ctx'" EXIT
  # The toolchain without its docs and sources: bin/ (cargo, rustc, rustdoc) and lib/.
  mkdir -p "$ctx/toolchain/bin" "$ctx/toolchain/lib/rustlib"
  cp -a "$sysroot"/bin/{cargo,rustc,rustdoc} "$ctx/toolchain/bin/"
  cp -a "$sysroot"/lib/*.so* "$ctx/toolchain/lib/"
  cp -a "$sysroot/lib/rustlib/x86_64-unknown-linux-gnu" "$ctx/toolchain/lib/rustlib/"
  cp -a "$vendor" "$ctx/vendor"
  rm -f "$ctx/vendor/.done"
  cp -a "$debs" "$ctx/debs"
  rm -f "$ctx/debs/.done"
  cat >"$ctx/cargo-config.toml" <<'TOML'
[source.crates-io]
replace-with = "vendored-sources"

[source.vendored-sources]
directory = "/usr/local/cargo/vendor"

[net]
offline = true
TOML
  say "building $ref (rustc $rust_version from $sysroot, crates of Cargo.lock $lock_sum)"
  buildah bud --quiet --network none --layers --force-rm -f "$repo/scripts/lib/standin-rust.Dockerfile" \
    --build-arg "OS_IMAGE=$os_ref" -t "$ref" "$ctx" >/dev/null ||
    die "building the stand-in Rust image $ref failed (see buildah's output above)"
  rm -rf "$ctx"
  trap - EXIT
  # Older stand-ins (another toolchain or Cargo.lock) are not needed again.
  podman images --format '{{.Repository}}:{{.Tag}}' localhost/rocm-pin-standin/rust |
    grep -vxF "$ref" | xargs -r podman rmi -f >/dev/null 2>&1 || true
  echo "$ref"
}

case ${1:-} in
  vendor) make_vendor ;;
  image)
    [ "$(id -u)" -eq 0 ] || die "needs root (image storage, runc)"
    make_image
    ;;
  *)
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
