//! Which file ld.so opens for a NEEDED entry of one object, the object's own search paths
//! included: `host::loader::resolve` answers for a program without RPATH/RUNPATH; this adds
//! what an object's dynamic section asks for, in glibc's order (`elf/dl-load.c`,
//! `_dl_map_object`):
//!
//! 1. DT_RPATH of the object, then of the object that loaded it, and so on up the chain: only
//!    when the object itself has no DT_RUNPATH, and each object's DT_RPATH only when that
//!    object has no DT_RUNPATH (ld.so drops DT_RPATH where DT_RUNPATH is present);
//! 2. `LD_LIBRARY_PATH`;
//! 3. DT_RUNPATH of the object (its own only, never its loader's);
//! 4. `/etc/ld.so.cache`, then the default directories (`host::loader::resolve`).
//!
//! `$ORIGIN` (and `${ORIGIN}`) is the directory of the object as it was loaded. An entry with
//! another token (`$LIB`, `$PLATFORM`) or a relative one (relative to the process's working
//! directory, unknowable here) is left out. A soname already loaded in the same process is
//! reused by ld.so without a search: the caller keeps that set.

use crate::elf::DynamicPaths;
use crate::host::loader::{self, CacheEntry, Via};
use crate::host::root::{Missing, Root};

/// Which step of the search found a library.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Step {
    Rpath,
    LdLibraryPath,
    Runpath,
    Cache,
    DefaultDir,
}

impl Step {
    /// The words a report uses: `DT_RPATH`, `LD_LIBRARY_PATH`, …
    pub fn describe(self) -> &'static str {
        match self {
            Step::Rpath => "DT_RPATH",
            Step::LdLibraryPath => "LD_LIBRARY_PATH",
            Step::Runpath => "DT_RUNPATH",
            Step::Cache => "ld.so.cache",
            Step::DefaultDir => "a default directory",
        }
    }
}

/// One object of a load chain: where it was loaded from (in-root) and its dynamic section.
#[derive(Debug, Clone, Copy)]
pub struct Loaded<'a> {
    pub path: &'a str,
    pub dynamic: &'a DynamicPaths,
}

/// `entry` with `$ORIGIN` replaced by the directory of `object_path`; None for an entry ld.so
/// would not resolve to an absolute directory here (another token, a relative path).
pub fn expand_origin(entry: &str, object_path: &str) -> Option<String> {
    let origin = match object_path.rsplit_once('/') {
        Some(("", _)) => "/",
        Some((dir, _)) => dir,
        None => return None,
    };
    let expanded = entry
        .replace("${ORIGIN}", origin)
        .replace("$ORIGIN", origin);
    (expanded.starts_with('/') && !expanded.contains('$')).then_some(expanded)
}

/// The directories searched before the cache for a NEEDED entry of `chain[0]` (loaded by
/// `chain[1]`, …), in order, each with the step that names it.
pub fn search_dirs(chain: &[Loaded<'_>], ld_library_path: Option<&str>) -> Vec<(String, Step)> {
    let mut dirs = Vec::new();
    let Some(object) = chain.first() else {
        return dirs;
    };
    if object.dynamic.runpath.is_empty() {
        for l in chain.iter().filter(|l| l.dynamic.runpath.is_empty()) {
            for e in &l.dynamic.rpath {
                if let Some(d) = expand_origin(e, l.path) {
                    dirs.push((d, Step::Rpath));
                }
            }
        }
    }
    if let Some(lp) = ld_library_path {
        for d in lp.split([':', ';']).filter(|d| d.starts_with('/')) {
            dirs.push((d.to_string(), Step::LdLibraryPath));
        }
    }
    for e in &object.dynamic.runpath {
        if let Some(d) = expand_origin(e, object.path) {
            dirs.push((d, Step::Runpath));
        }
    }
    dirs
}

/// Where ld.so finds `soname` for `chain[0]`: the in-root path it opens (its directory
/// resolved inside the root, the name as asked, so a symlink there stays visible) and the
/// step. None when nothing is found.
pub fn resolve(
    root: &Root,
    soname: &str,
    chain: &[Loaded<'_>],
    ld_library_path: Option<&str>,
    cache: &[CacheEntry],
) -> Option<(String, Step)> {
    for (dir, step) in search_dirs(chain, ld_library_path) {
        if let Some(found) = openable(root, &dir, soname) {
            return Some((found, step));
        }
    }
    let res = loader::resolve(root, soname, cache, None);
    let winner = res.winner?;
    let step = match res.via {
        Some(Via::Cache) => Step::Cache,
        _ => Step::DefaultDir,
    };
    let (dir, name) = winner.rsplit_once('/')?;
    Some((
        openable(root, if dir.is_empty() { "/" } else { dir }, name)?,
        step,
    ))
}

/// `dir/name` when it resolves inside the root to a regular file (what ld.so can open), with
/// `dir` made symlink-free.
pub fn openable(root: &Root, dir: &str, name: &str) -> Option<String> {
    let dir = root.resolve(dir, Missing::Fail).ok()?.path;
    let path = dir.join(name);
    let meta = root.metadata(&path).ok()?;
    meta.is_file().then(|| path.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dynamic(rpath: &[&str], runpath: &[&str]) -> DynamicPaths {
        DynamicPaths {
            rpath: rpath.iter().map(|s| s.to_string()).collect(),
            runpath: runpath.iter().map(|s| s.to_string()).collect(),
            ..DynamicPaths::default()
        }
    }

    #[test]
    fn origin_expands_and_other_tokens_are_left_out() {
        let p = "/opt/venv/site-packages/torch/lib/libtorch_hip.so";
        assert_eq!(
            expand_origin("$ORIGIN/../../_rocm_sdk_core/lib", p).as_deref(),
            Some("/opt/venv/site-packages/torch/lib/../../_rocm_sdk_core/lib")
        );
        assert_eq!(
            expand_origin("${ORIGIN}", p).as_deref(),
            Some("/opt/venv/site-packages/torch/lib")
        );
        assert_eq!(expand_origin("$LIB/x", p), None);
        assert_eq!(expand_origin("relative/lib", p), None);
        assert_eq!(expand_origin("$ORIGIN", "/libx.so").as_deref(), Some("/"));
    }

    #[test]
    fn rpath_comes_before_ld_library_path_and_runpath_after_it() {
        let with_rpath = dynamic(&["/rpath"], &[]);
        let chain = [Loaded {
            path: "/c/lib.so",
            dynamic: &with_rpath,
        }];
        assert_eq!(
            search_dirs(&chain, Some("/llp")),
            vec![
                ("/rpath".to_string(), Step::Rpath),
                ("/llp".to_string(), Step::LdLibraryPath)
            ]
        );
        // With DT_RUNPATH, DT_RPATH is ignored and LD_LIBRARY_PATH comes first.
        let both = dynamic(&["/rpath"], &["/runpath"]);
        let chain = [Loaded {
            path: "/c/lib.so",
            dynamic: &both,
        }];
        assert_eq!(
            search_dirs(&chain, Some("/llp")),
            vec![
                ("/llp".to_string(), Step::LdLibraryPath),
                ("/runpath".to_string(), Step::Runpath)
            ]
        );
    }

    #[test]
    fn the_loaders_rpath_applies_but_never_its_runpath() {
        let plain = dynamic(&[], &[]);
        let loader_rpath = dynamic(&["$ORIGIN/../core"], &[]);
        let loader_runpath = dynamic(&[], &["/loader-runpath"]);
        let chain = [
            Loaded {
                path: "/core/libamdhip64.so.7",
                dynamic: &plain,
            },
            Loaded {
                path: "/torch/lib/libtorch_hip.so",
                dynamic: &loader_rpath,
            },
        ];
        assert_eq!(
            search_dirs(&chain, None),
            vec![("/torch/lib/../core".to_string(), Step::Rpath)]
        );
        let chain = [
            chain[0],
            Loaded {
                path: "/x/l.so",
                dynamic: &loader_runpath,
            },
        ];
        assert!(search_dirs(&chain, None).is_empty());
        // An object with its own DT_RUNPATH ignores every DT_RPATH of the chain.
        let own_runpath = dynamic(&[], &["/own"]);
        let chain = [
            Loaded {
                path: "/a/l.so",
                dynamic: &own_runpath,
            },
            Loaded {
                path: "/torch/lib/libtorch_hip.so",
                dynamic: &loader_rpath,
            },
        ];
        assert_eq!(
            search_dirs(&chain, None),
            vec![("/own".to_string(), Step::Runpath)]
        );
    }

    #[test]
    fn resolve_takes_the_first_directory_holding_the_file_then_the_cache() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        for dir in ["rpath", "llp", "runpath", "usr/lib"] {
            std::fs::create_dir_all(r.join(dir)).unwrap();
            std::fs::write(r.join(dir).join("libx.so.1"), b"x").unwrap();
        }
        let root = Root::new(r);
        let rp = dynamic(&["/nowhere", "/rpath"], &[]);
        let chain = [Loaded {
            path: "/c/l.so",
            dynamic: &rp,
        }];
        assert_eq!(
            resolve(&root, "libx.so.1", &chain, Some("/llp"), &[]),
            Some(("/rpath/libx.so.1".to_string(), Step::Rpath))
        );
        std::fs::remove_file(r.join("rpath/libx.so.1")).unwrap();
        assert_eq!(
            resolve(&root, "libx.so.1", &chain, Some("/llp"), &[]),
            Some(("/llp/libx.so.1".to_string(), Step::LdLibraryPath))
        );
        let run = dynamic(&[], &["/runpath"]);
        let chain = [Loaded {
            path: "/c/l.so",
            dynamic: &run,
        }];
        assert_eq!(
            resolve(&root, "libx.so.1", &chain, None, &[]),
            Some(("/runpath/libx.so.1".to_string(), Step::Runpath))
        );
        let none = dynamic(&[], &[]);
        let chain = [Loaded {
            path: "/c/l.so",
            dynamic: &none,
        }];
        assert_eq!(
            resolve(&root, "libx.so.1", &chain, None, &[]),
            Some(("/usr/lib/libx.so.1".to_string(), Step::DefaultDir))
        );
        assert_eq!(resolve(&root, "liby.so.1", &chain, None, &[]), None);
    }
}
