#!/usr/bin/env bash
# Last step of every downstream stage of the rocm-pin Dockerfile recipe (docs/docker.md), after
# every other apt/pip command: `rocm-pin verify` (with the guard binary rocm-pin-guard when the
# image keeps only that, ROCM_PIN_KEEP_TOOL=guard, the default). A later step that reverted or broke the
# patched runtime (apt --fix-broken install, a reinstall, a forced dpkg -i, a purge) fails the
# build here instead of shipping the stock runtime silently.
#
# Exit codes are rocm-pin verify's: 0 the patched pair is installed, pinned and what the loader
# opens; 1 a check failed (the failed checks are printed); 2 rocm-pin could not run the checks;
# 3 the version gate skipped this image (install-runtime.sh ran with ROCM_PIN_MODE=auto on a
# ROCm other than 7.2.4).
#
# Environment (optional):
#   ROCM_PIN_ALLOW_SKIPPED  1: exit 0 instead of 3 when the gate skipped this image (images that
#                           deliberately cover other ROCm versions)                   [0]
#   ROCM_PIN_ARTIFACT       where the artifact is mounted, for the rocm-pin binary when the
#                           image keeps none (ROCM_PIN_KEEP_TOOL=0)          [/tmp/rocm-pin]
set -euo pipefail

say() { printf 'verify-runtime: %s\n' "$*" >&2; }

allow_skipped=${ROCM_PIN_ALLOW_SKIPPED:-0}
artifact=${ROCM_PIN_ARTIFACT:-/tmp/rocm-pin}
# The full rocm-pin when the image keeps it, else the guard binary (the .deb's, /usr/local/bin's
# or the guard's private copy): both verify a root alike (same checks, output and exit codes).
rocm_pin=
for b in "$(command -v rocm-pin || true)" "$(command -v rocm-pin-guard || true)" /usr/lib/rocm-pin/rocm-pin-guard; do
  if [ -n "$b" ] && [ -x "$b" ]; then
    rocm_pin=$b
    break
  fi
done
if [ -z "$rocm_pin" ]; then
  # The image keeps no binary: the artifact mounted for this RUN carries it.
  found=()
  for b in "$artifact"/bin/rocm-pin "$artifact"/rocm-pin-*/bin/rocm-pin; do
    if [ -x "$b" ]; then found+=("$b"); fi
  done
  if [ "${#found[@]}" -ne 1 ]; then
    say "ERROR: neither rocm-pin nor rocm-pin-guard is in the image and $artifact holds ${#found[@]} rocm-pin binaries: run install-runtime.sh first, and mount the artifact image for this RUN (RUN --mount=type=bind,from=rocm-pin-runtime,target=$artifact)"
    exit 2
  fi
  rocm_pin=${found[0]}
fi

rc=0
"$rocm_pin" verify || rc=$?
case $rc in
  0) say "OK: the patched ROCm runtime is installed, pinned and in use" ;;
  3)
    if [ "$allow_skipped" = 1 ]; then
      say "the version gate skipped this image (ROCM_PIN_MODE=auto): stock runtime kept by design (ROCM_PIN_ALLOW_SKIPPED=1)"
      rc=0
    else
      say "ERROR: the version gate skipped this image: it carries the STOCK runtime (set ROCM_PIN_ALLOW_SKIPPED=1 if that is intended)"
    fi
    ;;
  *) say "ERROR: $rocm_pin verify failed (exit $rc): a step after install-runtime.sh reverted or broke the patched runtime; see the failed checks above" ;;
esac
exit "$rc"
