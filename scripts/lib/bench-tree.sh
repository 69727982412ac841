# shellcheck shell=bash
# Shared by scripts/bench-deb-build and scripts/bench-trace: the tree shaped like the real ROCm
# 7.2.4 runtime package (bench_make_tree) and the packager's md5sums command (dh_md5sums_cmd).
# Callers set: tree (where), size_mib ("-": real sizes, or MiB in all), work (scratch), debs
# (Debian's ROCm .debs: $ROCM_PIN_CACHE/debian-debs, scripts/test-setup).
# shellcheck disable=SC2154 # tree, size_mib, work, debs: set by the caller, as said above

# The real ROCm 7.2.4 runtime libraries (crates/kit/src/standin.rs REAL_LIBRARY_SIZES): the
# file name in the package and its size in bytes.
real_libraries=(
  "libamdhip64.so.7.2.70204 27490168"
  "libhsa-runtime64.so.1.18.70204 4370616"
  "libhiprtc.so.7.2.70204 869672"
  "libhiprtc-builtins.so.7.2.70204 603704"
)
real_total=$((27490168 + 4370616 + 869672 + 603704))

# bench_make_tree: $tree (no DEBIAN/md5sums), deterministic: each library filled, in turn, with
# Debian's real ROCm libraries (in name order) and cut at its size; soname and dev symlinks; the
# stock versioned name as a hard link; the Debian packages' doc files as the small files.
bench_make_tree() {
  local src="$work/debian-libs" d entry name size f i=0
  compgen -G "$debs/*.deb" >/dev/null ||
    { echo "${0##*/}: no Debian ROCm packages in $debs: run scripts/test-setup" >&2; exit 2; }
  rm -rf "$tree" "$src"
  mkdir -p "$src"
  for d in "$debs"/*.deb; do dpkg-deb -x "$d" "$src"; done
  local elves=()
  mapfile -t elves < <(find "$src" -type f -name 'lib*.so.*' | LC_ALL=C sort)
  [ "${#elves[@]}" -gt 0 ] || { echo "${0##*/}: no libraries in $debs/*.deb" >&2; exit 2; }
  local lib="$tree/opt/rocm-7.2.4/lib" doc="$tree/usr/share/doc/rocm-bench"
  mkdir -p "$tree/DEBIAN" "$lib" "$doc"
  cat >"$tree/DEBIAN/control" <<CONTROL
Package: rocm-bench
Version: 7.2.4-1
Architecture: amd64
Maintainer: rocm-pin bench <bench@example.org>
Description: ROCm-shaped benchmark tree
 The 7.2.4 runtime libraries' sizes, filled with Debian's real ROCm machine code.
CONTROL
  for entry in "${real_libraries[@]}"; do
    read -r name size <<<"$entry"
    [ "$size_mib" = - ] || size=$((size * size_mib * 1048576 / real_total))
    f="$lib/$name"
    : >"$f"
    while [ "$(stat -c %s "$f")" -lt "$size" ]; do
      cat "${elves[$((i % ${#elves[@]}))]}" >>"$f"
      i=$((i + 1))
    done
    truncate -s "$size" "$f"
    local stem=${name%%.so.*}
    local major=${name#"$stem".so.}
    major=${major%%.*}
    ln -s "$name" "$lib/$stem.so.$major"
    ln -s "$stem.so.$major" "$lib/$stem.so"
    ln "$f" "$lib/${name%.*}.0"
  done
  find "$src/usr/share/doc" -type f -print0 | LC_ALL=C sort -z |
    while IFS= read -r -d '' f; do cp "$f" "$doc/$(basename "$(dirname "$f")")-${f##*/}"; done
  rm -rf "$src"
  echo "${0##*/}: tree $tree: $(du -sm "$tree" | cut -f1) MiB, $(find "$tree" | wc -l) entries, gzip -1 keeps $(tar -C "$tree" -cf - . | gzip -1 | wc -c | awk -v t="$(du -sb "$tree" | cut -f1)" '{printf "%.0f", 100 * $1 / t}') %" >&2
}

# dh_md5sums_cmd DIR: the command that writes DIR/DEBIAN/md5sums as dh_md5sums does (every
# regular file outside DEBIAN, sorted bytewise).
dh_md5sums_cmd() {
  printf '%s' "cd '$1' && find . -type f ! -path './DEBIAN/*' -printf '%P\\0' | LC_ALL=C sort -z | xargs -r0 md5sum >DEBIAN/md5sums"
}

