#!/usr/bin/env bash
# Builder stage of the rocm-pin Dockerfile recipe (docs/docker.md): build the patched ROCr + CLR
# pair once, package it against this image's stock ROCm, publish it as a signed apt repository,
# and leave ONE artifact directory keyed on the commit:
#
#   $ROCM_PIN_OUT/rocm-pin-<12-hex commit>/
#     debs/*.deb          the replacement packages (rocm-pin install takes these)
#     repo/               a signed apt repository holding the same .debs (pool/, dists/, InRelease)
#     repo/archive-key.gpg the public key for `signed-by=`
#     bin/rocm-pin        the rocm-pin binary that made it (downstream stages install with it)
#     bin/rocm-pin-guard  its guard binary (guard + verify only; what images keep, docs/docker.md;
#                         absent when the rocm-pin here has none beside it)
#     COMMIT              the full source commit
#     SHA256SUMS          every file above
#
# Runs on the ROCm 7.2.4 image with rocm-pin, cmake, a C/C++ compiler and the build
# prerequisites installed (rocm-pin build names what is missing). Fails, changing nothing in
# $ROCM_PIN_OUT, when any step fails.
#
# Environment (all optional):
#   ROCM_PIN_SOURCE     git URL or local checkout   [https://github.com/ROCm/rocm-systems.git]
#   ROCM_PIN_COMMIT     full commit to build        [rocm-pin's pinned commit]
#   ROCM_PATH           the ROCm install to build against and package for   [/opt/rocm]
#   ROCM_PIN_OUT        where the artifact directory goes                  [/out]
#   ROCM_PIN_WORK       scratch space (staging, logs)                      [/tmp/rocm-pin-work]
#   ROCM_PIN_SIGN_KEY   armored secret key for the repository [/run/secrets/rocm-pin-key when
#                       that build secret is mounted]; neither: a fresh key is made and only
#                       its public half is kept
#   ROCM_PIN_FLAVOR     replacement packages are <stock>-<flavor>           [pinned]
#   ROCM_PIN_SUITE      apt suite of the repository                         [stable]
#   MAX_JOBS            parallel compile jobs (rocm-pin build reads it)     [all CPUs]
#   ROCM_PIN_BUILD_ARGS more `rocm-pin build` arguments, split on blanks, e.g.
#                       "--clr-cmake-arg=-DHIP_ENABLE_ROCPROFILER_REGISTER=OFF"  [none]
#   ROCM_PIN_STAGING    package this existing staging instead of building one (the output of
#                       an earlier `rocm-pin build`; a `cmake --install` tree without its
#                       rocm-pin-build.json also needs ROCM_PIN_COMMIT and SOURCE_DATE_EPOCH,
#                       the commit's time)                                       [build]
set -euo pipefail

say() { printf 'build-runtime: %s\n' "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }

source_url=${ROCM_PIN_SOURCE:-https://github.com/ROCm/rocm-systems.git}
commit=${ROCM_PIN_COMMIT:-}
rocm_path=${ROCM_PATH:-/opt/rocm}
out=${ROCM_PIN_OUT:-/out}
work=${ROCM_PIN_WORK:-/tmp/rocm-pin-work}
flavor=${ROCM_PIN_FLAVOR:-pinned}
suite=${ROCM_PIN_SUITE:-stable}

command -v rocm-pin >/dev/null || die "rocm-pin is not on PATH: install it first (apt-get install ./rocm-pin_*.deb)"
command -v dpkg-deb >/dev/null || die "dpkg-deb is not on PATH (package dpkg)"

mkdir -p "$work" "$out"
staging=$work/staging
debs=$work/debs
rm -rf "$debs"

commit_args=()
if [ -n "$commit" ]; then
  commit_args=(--commit "$commit")
fi
package_args=()
if [ -n "${ROCM_PIN_STAGING:-}" ]; then
  staging=$ROCM_PIN_STAGING
  [ -d "$staging/lib" ] || die "ROCM_PIN_STAGING=$staging has no lib/: give the output of rocm-pin build (or a cmake --install tree)"
  if [ ! -f "$staging/rocm-pin-build.json" ]; then
    if [ -z "$commit" ] || [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
      die "ROCM_PIN_STAGING=$staging has no rocm-pin-build.json: set ROCM_PIN_COMMIT and SOURCE_DATE_EPOCH (the commit and its time)"
    fi
    package_args=(--commit "$commit" --commit-time "$SOURCE_DATE_EPOCH")
  fi
  say "packaging the existing staging $staging (ROCM_PIN_STAGING: no build)"
else
  [ -e "$rocm_path" ] || die "ROCM_PATH=$rocm_path does not exist: this stage must run on the ROCm 7.2.4 image (Debian's ROCm packages: ROCM_PATH=/usr)"
  read -r -a extra_args <<<"${ROCM_PIN_BUILD_ARGS:-}"
  say "rocm-pin build from $source_url ${commit:-(pinned commit)} against $rocm_path ${extra_args[*]}"
  rocm-pin build --source "$source_url" "${commit_args[@]}" --rocm-path "$rocm_path" --out "$staging" \
    "${extra_args[@]}"
fi

say "rocm-pin package against the stock packages installed in this image"
rocm-pin package --quiet --staging "$staging" "${package_args[@]}" --flavor "$flavor" --out "$debs"
shopt -s nullglob
built=("$debs"/*.deb)
shopt -u nullglob
[ "${#built[@]}" -ge 2 ] || die "rocm-pin package made ${#built[@]} .deb(s) in $debs, expected the HSA and HIP pair"

# The commit the packages really carry (not the requested one): the artifact's key.
full=$(dpkg-deb -f "${built[0]}" X-Rocm-Pin-Commit)
[[ $full =~ ^[0-9a-f]{40}$ ]] || die "${built[0]} has no X-Rocm-Pin-Commit field (got '$full')"
if [ -n "$commit" ] && [ "$full" != "$commit" ]; then
  die "the packages carry commit $full, but ROCM_PIN_COMMIT=$commit was requested"
fi
artifact=$out/rocm-pin-${full:0:12}
[ ! -e "$artifact" ] || die "$artifact already exists: remove it or build another commit"

# Assemble next to the final place, then rename: a failed step leaves no half artifact.
tmp=$out/.rocm-pin-${full:0:12}.tmp
rm -rf "$tmp"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/debs" "$tmp/bin"
cp "${built[@]}" "$tmp/debs/"

sign_key=${ROCM_PIN_SIGN_KEY:-}
# The Dockerfile's `RUN --mount=type=secret,id=rocm-pin-key` puts the key here for that RUN only.
if [ -z "$sign_key" ] && [ -s /run/secrets/rocm-pin-key ]; then
  sign_key=/run/secrets/rocm-pin-key
  say "signing with the build secret rocm-pin-key"
fi
if [ -z "$sign_key" ]; then
  sign_key=$work/repo-key.asc
  rm -f "$sign_key" "$work"/repo-key.pub.*
  say "no ROCM_PIN_SIGN_KEY: making a fresh repository key (its secret half stays in $work)"
  rocm-pin repo keygen --out "$sign_key" >/dev/null
fi
[ -r "$sign_key" ] || die "ROCM_PIN_SIGN_KEY=$sign_key is not readable"

say "rocm-pin repo: signed apt repository (suite $suite)"
rocm-pin repo --quiet "$tmp"/debs/*.deb --out "$tmp/repo" --suite "$suite" --sign-key "$sign_key"
[ -s "$tmp/repo/archive-key.gpg" ] || die "rocm-pin repo wrote no public key $tmp/repo/archive-key.gpg"

install -m 0755 "$(command -v rocm-pin)" "$tmp/bin/rocm-pin"
# The guard binary of the same build, beside rocm-pin (rocm-pin's .deb ships both in /usr/bin).
# A rocm-pin without one (an older .deb) makes an artifact without it: install-runtime.sh then
# keeps the full rocm-pin for the guard, as before.
guard_bin=$(dirname "$(command -v rocm-pin)")/rocm-pin-guard
if [ -x "$guard_bin" ]; then
  install -m 0755 "$guard_bin" "$tmp/bin/rocm-pin-guard"
else
  say "no rocm-pin-guard beside $(command -v rocm-pin): the artifact carries only bin/rocm-pin (images that keep the guard keep the full rocm-pin)"
fi
printf '%s\n' "$full" > "$tmp/COMMIT"
sums=$work/SHA256SUMS
(cd "$tmp" && find . -type f -printf '%P\n' | LC_ALL=C sort | xargs -d '\n' sha256sum) > "$sums"
mv "$sums" "$tmp/SHA256SUMS"
mv "$tmp" "$artifact"
trap - EXIT
say "artifact: $artifact"
ls -l "$artifact/debs" >&2
