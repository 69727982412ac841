#!/usr/bin/env bash
# Downstream stage of the rocm-pin Dockerfile recipe (docs/docker.md): install the replacement
# runtime pair made by build-runtime.sh with `rocm-pin install` — from the artifact directory
# (bind-mounted from the artifact image for this RUN only, or COPY'd in), or from the artifact's
# apt repository. Run it BEFORE the image's other apt/pip steps; run verify-runtime.sh AFTER all
# of them.
#
# The version gate (`ROCM_PIN_MODE`) decides what happens on an image whose ROCm is not 7.2.4:
#   require (default)  install fails (exit 2), the build stops: this image must carry the runtime
#   auto               install exits 0 and records the skip; verify-runtime.sh then exits 3
#                      (only for images that deliberately cover other ROCm versions)
#   off                nothing is done
#
# Environment (all optional):
#   ROCM_PIN_ARTIFACT  the mounted (or COPY'd) directory: rocm-pin-<commit>/ or its parent [/tmp/rocm-pin]
#   ROCM_PIN_COMMIT    if set, the artifact must carry exactly this commit
#   ROCM_PIN_APT_REPO  instead of the artifact's .debs, fetch them from this repository URL
#                      (e.g. https://HOST/rocm-pin-repo); needs ROCM_PIN_APT_KEY
#   ROCM_PIN_APT_KEY   public key file for signed-by= [<artifact>/repo/archive-key.gpg]
#   ROCM_PIN_SUITE     the repository's suite                                         [stable]
#   ROCM_PIN_FLAVOR    replacement packages are <stock>-<flavor>                       [pinned]
#   ROCM_PIN_MODE      require | auto | off                                            [require]
#   ROCM_PIN_KEEP_TOOL what of rocm-pin stays in the image                               [guard]
#                      guard: only the small guard binary, /usr/lib/rocm-pin/rocm-pin-guard (its
#                        hooks run it; verify-runtime.sh verifies with it); rocm-pin itself runs
#                        from the artifact for the install and is not kept
#                      1: also the full rocm-pin and rocm-pin-guard in /usr/local/bin (every
#                        subcommand in the image; ~4.4 MB more compressed, docs/docker.md)
#                      0: nothing, and no guard (verify-runtime.sh then needs the artifact
#                        mounted too)
#                      An artifact without bin/rocm-pin-guard (made by an older rocm-pin) keeps
#                      the full rocm-pin for `guard`, as 1 does.
#   ROCM_PIN_GUARD     1: apt + dpkg hooks so any later apt/dpkg command that breaks the runtime
#                      fails; needs a binary kept in the image    [1 unless ROCM_PIN_KEEP_TOOL=0]
#   ROCM_PIN_KEEP_STOCK 1: keep the stock .debs in the image for an offline `rocm-pin rollback`
#                      [0: an image rolls back by using the previous image; rollback then says so]
#   ROCM_PIN_KEEP_ARTIFACT  1: leave a COPY'd artifact in the image (a mount is never kept)  [0]
set -euo pipefail

say() { printf 'install-runtime: %s\n' "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }

artifact=${ROCM_PIN_ARTIFACT:-/tmp/rocm-pin}
want_commit=${ROCM_PIN_COMMIT:-}
apt_repo=${ROCM_PIN_APT_REPO:-}
suite=${ROCM_PIN_SUITE:-stable}
flavor=${ROCM_PIN_FLAVOR:-pinned}
mode=${ROCM_PIN_MODE:-require}
keep_tool=${ROCM_PIN_KEEP_TOOL:-guard}
guard=${ROCM_PIN_GUARD:-}
keep_stock=${ROCM_PIN_KEEP_STOCK:-0}
keep=${ROCM_PIN_KEEP_ARTIFACT:-0}

case $mode in require | auto | off) ;; *) die "ROCM_PIN_MODE=$mode: expected require, auto or off" ;; esac
case $keep_tool in guard | 1 | 0) ;; *) die "ROCM_PIN_KEEP_TOOL=$keep_tool: expected guard, 1 or 0" ;; esac

# The artifact directory: given directly, or the single rocm-pin-*/ inside what COPY brought.
if [ -d "$artifact" ] && [ ! -f "$artifact/COMMIT" ]; then
  shopt -s nullglob
  found=("$artifact"/rocm-pin-*/)
  shopt -u nullglob
  if [ "${#found[@]}" -eq 1 ]; then
    artifact=${found[0]%/}
  elif [ "${#found[@]}" -gt 1 ] && [ -n "$want_commit" ] && [ -d "$artifact/rocm-pin-${want_commit:0:12}" ]; then
    artifact=$artifact/rocm-pin-${want_commit:0:12}
  elif [ "${#found[@]}" -gt 1 ]; then
    die "$artifact holds ${#found[@]} artifacts (${found[*]}): set ROCM_PIN_COMMIT or ROCM_PIN_ARTIFACT to one"
  fi
fi
have_artifact=0
if [ -f "$artifact/COMMIT" ]; then
  have_artifact=1
  (cd "$artifact" && sha256sum --quiet --strict -c SHA256SUMS) ||
    die "$artifact does not match its SHA256SUMS: the COPY is incomplete or was changed"
  commit=$(cat "$artifact/COMMIT")
  if [ -n "$want_commit" ] && [ "$commit" != "$want_commit" ]; then
    die "$artifact carries commit $commit, but ROCM_PIN_COMMIT=$want_commit"
  fi
elif [ -z "$apt_repo" ]; then
  die "no artifact at $artifact (expected rocm-pin-<commit>/ with COMMIT, debs/, repo/ from build-runtime.sh; RUN --mount=type=bind,from=<artifact image>,target=$artifact) and no ROCM_PIN_APT_REPO"
fi

# rocm-pin itself: already installed (e.g. its .deb, whose /usr/bin/rocm-pin-guard the hooks
# run), else the binary the artifact carries. `install --guard` copies the rocm-pin-guard beside
# the rocm-pin it runs to /usr/lib/rocm-pin (a hard link when that is /usr/local/bin's).
rocm_pin=rocm-pin
if ! command -v rocm-pin >/dev/null; then
  if [ "$have_artifact" != 1 ] || [ ! -x "$artifact/bin/rocm-pin" ]; then
    die "rocm-pin is not on PATH and $artifact/bin/rocm-pin is missing: install rocm-pin first"
  fi
  if [ "$keep_tool" = guard ] && [ ! -x "$artifact/bin/rocm-pin-guard" ] && [ "${guard:-1}" = 1 ]; then
    say "$artifact has no bin/rocm-pin-guard (made by an older rocm-pin): the guard keeps the full rocm-pin (as ROCM_PIN_KEEP_TOOL=1)"
    keep_tool=1
  fi
  case $keep_tool in
    1)
      install -m 0755 "$artifact/bin/rocm-pin" /usr/local/bin/rocm-pin
      if [ -x "$artifact/bin/rocm-pin-guard" ]; then
        install -m 0755 "$artifact/bin/rocm-pin-guard" /usr/local/bin/rocm-pin-guard
      fi
      say "installed /usr/local/bin/rocm-pin from the artifact (ROCM_PIN_KEEP_TOOL=guard keeps only the guard binary)"
      ;;
    guard)
      rocm_pin=$artifact/bin/rocm-pin
      if [ "${guard:-1}" = 1 ]; then
        say "running $rocm_pin from the artifact; the image keeps only the guard binary /usr/lib/rocm-pin/rocm-pin-guard (ROCM_PIN_KEEP_TOOL=1 keeps rocm-pin too)"
      else
        say "running $rocm_pin from the artifact; not kept in the image (ROCM_PIN_GUARD=0: no guard, no binary)"
      fi
      ;;
    0)
      rocm_pin=$artifact/bin/rocm-pin
      if [ "${guard:-0}" = 1 ]; then
        die "ROCM_PIN_GUARD=1 needs a binary in the image (its hooks run it): set ROCM_PIN_KEEP_TOOL=guard (the default) or 1, or ROCM_PIN_GUARD=0"
      fi
      say "running $rocm_pin from the artifact; not kept in the image (ROCM_PIN_KEEP_TOOL=0, no guard)"
      guard=0
      ;;
  esac
fi
guard=${guard:-1}

debs_dir=
if [ -n "$apt_repo" ]; then
  key=${ROCM_PIN_APT_KEY:-}
  if [ -z "$key" ] && [ "$have_artifact" = 1 ]; then key=$artifact/repo/archive-key.gpg; fi
  if [ -z "$key" ] || [ ! -s "$key" ]; then
    die "ROCM_PIN_APT_REPO needs the repository's public key: set ROCM_PIN_APT_KEY (archive-key.gpg; '${key}' is missing or empty)"
  fi
  install -D -m 0644 "$key" /usr/share/keyrings/rocm-pin.gpg
  printf 'deb [signed-by=/usr/share/keyrings/rocm-pin.gpg] %s %s main\n' "$apt_repo" "$suite" \
    > /etc/apt/sources.list.d/rocm-pin.list
  say "apt source: $apt_repo $suite main (signed-by /usr/share/keyrings/rocm-pin.gpg)"
  apt-get update -q
  debs_dir=$(mktemp -d)
  # Downloaded, not installed: rocm-pin install runs the version gate and the safety checks.
  (cd "$debs_dir" && apt-get download "hsa-rocr-$flavor" "hip-runtime-amd-$flavor")
else
  debs_dir=$artifact/debs
fi
shopt -s nullglob
debs=("$debs_dir"/*.deb)
shopt -u nullglob
[ "${#debs[@]}" -ge 2 ] || die "$debs_dir holds ${#debs[@]} .deb(s), expected the HSA and HIP pair"

args=(install --mode "$mode")
[ "$guard" = 1 ] && args+=(--guard)
# An image is rolled back by going back to the previous image: no stock .debs in the layer.
[ "$keep_stock" = 1 ] || args+=(--no-rollback)
say "rocm-pin ${args[*]} ${debs[*]}"
rc=0
"$rocm_pin" "${args[@]}" "${debs[@]}" || rc=$?
if [ "$rc" -ne 0 ]; then
  say "ERROR: rocm-pin install failed (exit $rc): the image would not carry the patched runtime (mode $mode; see above)"
  exit "$rc"
fi

# The gate skipped this image (mode auto or off): no guard was armed, so no guard binary was
# copied; keep it anyway, so verify-runtime.sh and the container can still say what happened.
if [ "$keep_tool" = guard ] && [ "$guard" = 1 ] && [ "$rocm_pin" != rocm-pin ] &&
  [ ! -e /usr/lib/rocm-pin/rocm-pin-guard ] && [ -x "$artifact/bin/rocm-pin-guard" ]; then
  install -m 0755 "$artifact/bin/rocm-pin-guard" /usr/local/bin/rocm-pin-guard
  say "no guard armed (mode $mode): kept /usr/local/bin/rocm-pin-guard for verify"
fi
if [ -n "$apt_repo" ]; then rm -rf "$debs_dir"; fi
# apt's binary caches (~2 MB, rebuilt on demand) would otherwise land in this layer.
rm -f /var/cache/apt/pkgcache.bin /var/cache/apt/srcpkgcache.bin
# A COPY'd artifact is deleted (hidden; the COPY layer keeps its bytes); a read-only bind mount
# leaves nothing behind to delete.
if [ "$have_artifact" = 1 ] && [ "$keep" != 1 ] && [ -w "$artifact" ]; then rm -rf "$artifact"; fi
say "done (mode $mode); run verify-runtime.sh as the image's LAST step"
