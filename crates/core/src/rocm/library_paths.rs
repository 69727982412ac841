//! Runtime library paths and file names: which family a library path belongs to, in which
//! flavour's library directory it lies, and what its file name says (SONAME major, commit hint).

use super::families::{family_of, LibraryFamily};
use super::flavour::{RuntimeLibraryDir, StockFlavour, STOCK_FLAVOURS};

/// The runtime library family of `path` when it is a replaceable runtime library of the target
/// prefix: directly in `<prefix>/lib/` (not `lib/asan/`, not `/usr/lib`, not another
/// `/opt/rocm-*` tree) and named like a family member. This is the stock-discovery rule: a
/// package owning such a path is a replacement target.
pub fn runtime_library_family_at(prefix: &str, path: &str) -> Option<&'static LibraryFamily> {
    runtime_library_family_in(&format!("{}/lib", prefix.trim_end_matches('/')), path)
}

/// [`runtime_library_family_at`] for a library directory given as it is (`/opt/rocm-7.2.4/lib`,
/// `/usr/lib/x86_64-linux-gnu`): the family of `path` when it lies directly in `lib_dir`.
pub fn runtime_library_family_in(lib_dir: &str, path: &str) -> Option<&'static LibraryFamily> {
    let name = path.strip_prefix(&format!("{}/", lib_dir.trim_end_matches('/')))?;
    if name.contains('/') {
        return None;
    }
    family_of(name)
}

/// The SONAME major of `libamdhip64.so.7` → `Some("7")`; None when the soname has no version.
pub fn soname_major(soname: &str) -> Option<&str> {
    soname
        .split_once(".so.")
        .map(|(_, rest)| rest.split('.').next().unwrap_or(rest))
}

/// The ROCm prefix a stock file list installs into: the `/opt/rocm-X.Y.Z` holding a runtime
/// library in its `lib/`. None when no such path is listed.
pub fn prefix_of_runtime_path(path: &str) -> Option<String> {
    let (dir, name) = path.rsplit_once('/')?;
    let prefix = dir.strip_suffix("/lib")?;
    let leaf = prefix.rsplit('/').next()?;
    (leaf.starts_with("rocm-") && prefix.starts_with("/opt/") && family_of(name).is_some())
        .then(|| prefix.to_string())
}

/// The short git hash CLR puts in the HIP library's file name when built without a ROCm patch
/// version (`libamdhip64.so.7.2.53211-b539bf7` → `b539bf7`). None when the name carries none.
pub fn commit_hint_of_file_name(file_name: &str) -> Option<&str> {
    let (_, tail) = file_name.rsplit_once('-')?;
    (tail.len() >= 7 && tail.bytes().all(|b| b.is_ascii_hexdigit())).then_some(tail)
}

/// Is `dir` a multiarch library directory, `/usr/lib/<cpu>-linux-<abi>` (x86_64-linux-gnu,
/// aarch64-linux-gnu, arm-linux-gnueabihf)? `/usr/lib/x86_64` or `/usr/lib/foo/bar` are not.
pub fn is_multiarch_lib_dir(dir: &str) -> bool {
    dir.strip_prefix("/usr/lib/").is_some_and(|triplet| {
        let parts: Vec<&str> = triplet.split('-').collect();
        parts.len() >= 3
            && parts[1] == "linux"
            && parts.iter().all(|p| {
                !p.is_empty()
                    && p.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            })
    })
}

/// A runtime library path as discovery sees it: the flavour whose library directory it lies
/// directly in, its family and that directory. `/opt/rocm-7.2.4/lib/libamdhip64.so.7` → AMD,
/// `/opt/rocm-7.2.4/lib`; `/usr/lib/x86_64-linux-gnu/libhiprtc.so.7.2.53211` → Debian,
/// `/usr/lib/x86_64-linux-gnu`. None for any other path (`lib/asan/`, `/usr/lib/` itself, a
/// name outside the families).
pub fn runtime_library_location(
    path: &str,
) -> Option<(StockFlavour, &'static LibraryFamily, &str)> {
    let (dir, name) = path.rsplit_once('/')?;
    let family = family_of(name)?;
    let layout = if prefix_of_runtime_path(path).is_some() {
        RuntimeLibraryDir::VersionedPrefixLib
    } else if is_multiarch_lib_dir(dir) {
        RuntimeLibraryDir::Multiarch
    } else {
        return None;
    };
    STOCK_FLAVOURS
        .iter()
        .find(|s| s.library_dir == layout)
        .map(|s| (s.flavour, family, dir))
}

#[cfg(test)]
#[path = "library_paths_tests.rs"]
mod tests;
