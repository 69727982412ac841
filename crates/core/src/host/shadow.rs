//! Every copy of a runtime library in a root, and which consumer ld.so would map it for.
//!
//! A copy is a file (or a symlink to one) whose ELF SONAME is one of the sonames asked for,
//! found in the places a second runtime lives: the loader's search path (the default
//! directories, the directories of the ld.so cache's entries for those sonames,
//! `LD_LIBRARY_PATH`), every `/opt/rocm*` prefix's `lib/`, the `site-packages` and
//! `dist-packages` of the system Pythons and of every virtual environment (a directory holding
//! `pyvenv.cfg` or `conda-meta/`, looked for a few levels under the usual places), and the
//! DT_RPATH/DT_RUNPATH directories of the consumers. Consumers are every ELF file under a
//! `site-packages/torch/lib` and the files the caller names; each is resolved the way ld.so
//! resolves it ([`crate::host::ldsearch`]), the pair's own dependencies included (the HIP
//! library's NEEDED on the HSA library is searched with the consumer's DT_RPATH too, as ld.so
//! does).
//!
//! Everything is read inside the root: directories are walked without following a link
//! ([`crate::host::dirwalk`]), a symlink named like a library is resolved inside the root (a
//! loop or a dangling link is skipped, with the reason kept), files are opened through
//! [`Root::open_regular`], and the whole search stops at a number of entries, saying where.
//! Which copies are "ours" is the caller's business: this module knows nothing of ROCm.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::elf::DynamicPaths;
use crate::host::dirwalk::{self, Budget, EntryKind};
use crate::host::ldsearch::{self, Loaded, Step};
use crate::host::loader::{self, CacheEntry};
use crate::host::root::{FileKind, Missing, ResolveError, Root};

/// The consumer named for "ld.so's own search, for a program without DT_RPATH/DT_RUNPATH".
pub const DEFAULT_SEARCH: &str = "ld.so's default search (programs without DT_RPATH/DT_RUNPATH)";
/// At most this many consumer files are resolved (the rest are counted in `skipped`).
pub const MAX_CONSUMERS: usize = 4096;
/// How deep a `site-packages` tree is walked (`torch/lib` is 2; real wheels stay under 10).
const SITE_PACKAGES_DEPTH: usize = 16;
/// How deep under a usual place a virtual environment is looked for (`/home/u/proj/.venv`).
const VENV_DEPTH: usize = 4;
/// How deep a `/opt/rocm*/lib` is walked (`lib/asan/`, `lib/llvm/lib`).
const PREFIX_LIB_DEPTH: usize = 3;
/// Where virtual environments are looked for (plus `/<dir>/pyvenv.cfg` for every top dir).
const VENV_PLACES: &[&str] = &[
    "/opt",
    "/usr/local",
    "/root",
    "/home",
    "/srv",
    "/app",
    "/workspace",
];
/// Directories of the system Pythons that hold `python3*/{site,dist}-packages`.
const SYSTEM_PYTHON_LIBS: &[&str] = &["/usr/lib", "/usr/local/lib", "/usr/lib64"];
/// Directories never descended into while looking for environments: an environment's own
/// parts, and the big trees of other tools under a home directory.
const NOT_ENV_PARTS: &[&str] = &[
    "lib",
    "lib64",
    "bin",
    "include",
    "share",
    "site-packages",
    "dist-packages",
    "__pycache__",
    "node_modules",
    ".git",
    ".cache",
    ".cargo",
    ".rustup",
    "target",
];
/// Top-level directories that are never a virtual environment (and may be huge or live).
const NOT_ENVS: &[&str] = &["proc", "sys", "dev", "run", "usr", "etc", "var", "boot"];

/// What to look for.
pub struct Scope<'a> {
    /// The sonames whose copies count.
    pub sonames: &'a BTreeSet<String>,
    /// A file name worth opening (`libamdhip64.so.7`, `libamdhip64.so.7.2.1`): only those are
    /// read for their SONAME.
    pub name_matches: &'a dyn Fn(&str) -> bool,
    /// Consumers named by the caller (in-root paths).
    pub consumers: &'a [std::path::PathBuf],
    pub ld_library_path: Option<&'a str>,
    pub cache: &'a [CacheEntry],
    /// Entries the walks may look at, all together.
    pub max_entries: u64,
}

/// One consumer that maps a copy.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct Mapping {
    /// The consumer (an in-root path), or [`DEFAULT_SEARCH`].
    pub consumer: String,
    /// The object whose DT_NEEDED the copy answers (the consumer, or a library it loaded).
    pub needed_by: String,
    pub via: Step,
}

/// One copy of a library with one of the sonames.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Copy {
    /// Where it is (in-root; its directory symlink-free, the name as found).
    pub path: String,
    /// The file it is (`path` with a last symlink followed inside the root).
    pub file: String,
    pub soname: String,
    /// Where the search found it: "loader search path", "/opt/rocm* prefix", …
    pub found_in: BTreeSet<String>,
    /// Who ld.so would map it for; empty for a copy nothing maps.
    pub mapped_by: Vec<Mapping>,
    /// (device, inode) of `file`: equal for hard links and for links to the same file.
    #[serde(skip)]
    pub identity: (u64, u64),
}

/// Everything the search found.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Finding {
    pub copies: Vec<Copy>,
    /// The consumers resolved (in-root paths).
    pub consumers: Vec<String>,
    /// A consumer's NEEDED on one of the sonames that ld.so would find nowhere.
    pub unresolved: Vec<String>,
    /// Entries looked at and left out, each with why (a symlink loop, a dangling link, a
    /// consumer that is not an ELF file).
    pub skipped: Vec<String>,
    /// Why the search stopped short (its entry budget ran out), None when it looked everywhere.
    pub incomplete: Option<String>,
    /// Entries the walks looked at.
    pub entries_walked: u64,
}

/// Find every copy and who maps it. Never fails: what cannot be read is in `skipped`.
pub fn find(root: &Root, scope: &Scope<'_>) -> Finding {
    let mut search = Search {
        root,
        scope,
        budget: Budget::new(scope.max_entries),
        candidates: BTreeMap::new(),
        consumers: BTreeSet::new(),
        skipped: Vec::new(),
    };
    search.loader_dirs();
    search.rocm_prefixes();
    for dir in python_dirs(root, &mut search.budget) {
        search.site_packages(&dir);
    }
    for c in scope.consumers {
        match root.resolve(c, Missing::Fail) {
            Ok(r) => {
                search
                    .consumers
                    .insert(r.path.to_string_lossy().into_owned());
            }
            Err(e) => search
                .skipped
                .push(format!("--consumer {}: {e}", c.display())),
        }
    }
    search.finish()
}

/// An object ld.so loaded: its in-root path and its dynamic section.
type Object = (String, DynamicPaths);

/// The search in progress.
struct Search<'a, 'b> {
    root: &'a Root,
    scope: &'a Scope<'b>,
    budget: Budget,
    /// Candidate path → where it was found.
    candidates: BTreeMap<String, BTreeSet<String>>,
    consumers: BTreeSet<String>,
    skipped: Vec<String>,
}

impl Search<'_, '_> {
    /// Remember every entry of `dir` (one level) whose name matches.
    fn list_for_copies(&mut self, dir: &str, found_in: &str) {
        let mut hits = Vec::new();
        let name_matches = self.scope.name_matches;
        let walked = dirwalk::walk(self.root, dir, 1, &mut self.budget, &mut |p, n, k, _| {
            if k != EntryKind::Dir && name_matches(n) {
                hits.push(p.to_string());
            }
            false
        });
        if let Err(e) = walked {
            self.skipped.push(format!("{dir}: {e}"));
        }
        for p in hits {
            self.candidate(p, found_in);
        }
    }

    fn candidate(&mut self, path: String, found_in: &str) {
        self.candidates
            .entry(path)
            .or_default()
            .insert(found_in.to_string());
    }

    /// The default directories, the cache's entries for the sonames, LD_LIBRARY_PATH.
    fn loader_dirs(&mut self) {
        let mut dirs: BTreeSet<String> = loader::default_dirs().into_iter().collect();
        for e in self.scope.cache {
            if self.scope.sonames.contains(&e.soname) {
                if let Some((dir, _)) = e.path.rsplit_once('/') {
                    dirs.insert(dir.to_string());
                }
            }
        }
        for d in self
            .scope
            .ld_library_path
            .into_iter()
            .flat_map(|lp| lp.split([':', ';']))
        {
            if d.starts_with('/') {
                dirs.insert(d.to_string());
            }
        }
        for dir in self.resolved_dirs(dirs) {
            self.list_for_copies(&dir, "loader search path");
        }
    }

    /// Every `/opt/rocm*` prefix's `lib/`, each resolved directory once.
    fn rocm_prefixes(&mut self) {
        let names = self
            .root
            .read_dir_names("/opt", 100_000)
            .unwrap_or_default();
        let libs = names
            .iter()
            .filter(|n| n.starts_with("rocm"))
            .map(|n| format!("/opt/{n}/lib"));
        for lib in self.resolved_dirs(libs.collect()) {
            let mut hits = Vec::new();
            let name_matches = self.scope.name_matches;
            let walked = dirwalk::walk(
                self.root,
                &lib,
                PREFIX_LIB_DEPTH,
                &mut self.budget,
                &mut |p, n, k, _| {
                    if k != EntryKind::Dir && name_matches(n) {
                        hits.push(p.to_string());
                    }
                    true
                },
            );
            if let Err(e) = walked {
                self.skipped.push(format!("{lib}: {e}"));
            }
            for p in hits {
                self.candidate(p, "/opt/rocm* prefix");
            }
        }
    }

    /// A whole `site-packages`: library copies anywhere in it, consumers under `torch/lib`.
    fn site_packages(&mut self, dir: &str) {
        let mut hits = Vec::new();
        let mut consumers = Vec::new();
        let name_matches = self.scope.name_matches;
        let walked = dirwalk::walk(
            self.root,
            dir,
            SITE_PACKAGES_DEPTH,
            &mut self.budget,
            &mut |p, n, k, _| {
                if k == EntryKind::Dir {
                    return n != "__pycache__";
                }
                if name_matches(n) {
                    hits.push(p.to_string());
                }
                if k == EntryKind::File && n.contains(".so") && p.contains("/torch/lib/") {
                    consumers.push(p.to_string());
                }
                false
            },
        );
        if let Err(e) = walked {
            self.skipped.push(format!("{dir}: {e}"));
        }
        for p in hits {
            self.candidate(p, "python site-packages");
        }
        self.consumers.extend(consumers);
    }

    /// Each directory resolved inside the root (missing ones left out), once.
    fn resolved_dirs(&self, dirs: BTreeSet<String>) -> BTreeSet<String> {
        dirs.into_iter()
            .filter_map(|d| self.root.resolve(&d, Missing::Fail).ok())
            .map(|r| r.path.to_string_lossy().into_owned())
            .collect()
    }

    /// Resolve the consumers, read every candidate, and put the mappings on the copies.
    fn finish(mut self) -> Finding {
        let mut mappings: Vec<(String, Mapping)> = Vec::new();
        let mut unresolved = Vec::new();
        let consumers: Vec<String> = self.consumers.iter().cloned().collect();
        if consumers.len() > MAX_CONSUMERS {
            self.skipped.push(format!(
                "{} consumer files not resolved (over {MAX_CONSUMERS})",
                consumers.len() - MAX_CONSUMERS
            ));
        }
        let mut listed: BTreeSet<String> = BTreeSet::new();
        for consumer in consumers.iter().take(MAX_CONSUMERS) {
            let dynamic = match read_dynamic(self.root, consumer) {
                Ok(d) => d,
                Err(e) => {
                    self.skipped.push(format!("consumer {consumer}: {e}"));
                    continue;
                }
            };
            // The consumer's own search directories may hold a copy no other place has.
            let chain = [Loaded {
                path: consumer,
                dynamic: &dynamic,
            }];
            let dirs: BTreeSet<String> = ldsearch::search_dirs(&chain, None)
                .into_iter()
                .map(|(d, _)| d)
                .collect();
            // Each directory listed once: torch's libraries share one DT_RPATH.
            for dir in self.resolved_dirs(dirs) {
                if listed.insert(dir.clone()) {
                    self.list_for_copies(&dir, &format!("DT_RPATH/DT_RUNPATH of {consumer}"));
                }
            }
            let (found, missing) = self.map_consumer(consumer, &dynamic);
            mappings.extend(found);
            unresolved.extend(missing);
        }
        for soname in self.scope.sonames {
            let res = loader::resolve(
                self.root,
                soname,
                self.scope.cache,
                self.scope.ld_library_path,
            );
            if let Some(w) = res.winner {
                let via = match res.via {
                    Some(loader::Via::LdLibraryPath) => Step::LdLibraryPath,
                    Some(loader::Via::Cache) => Step::Cache,
                    _ => Step::DefaultDir,
                };
                let path = canonical_dir(self.root, &w).unwrap_or(w);
                mappings.push((
                    path,
                    Mapping {
                        consumer: DEFAULT_SEARCH.into(),
                        needed_by: DEFAULT_SEARCH.into(),
                        via,
                    },
                ));
            }
        }
        for (path, _) in &mappings {
            if !self.candidates.contains_key(path) {
                self.candidate(path.clone(), "where a consumer's search leads");
            }
        }
        let copies = self.read_candidates(&mappings);
        Finding {
            copies,
            consumers,
            unresolved,
            skipped: self.skipped,
            incomplete: self.budget.exhausted.clone(),
            entries_walked: self.budget.entries_seen,
        }
    }

    /// What ld.so loads of the sonames for `consumer`: its NEEDED entries, then theirs, each
    /// soname once (a loaded soname is reused). Returns (copy path, mapping) pairs and the
    /// NEEDED entries found nowhere.
    fn map_consumer(
        &self,
        consumer: &str,
        dynamic: &DynamicPaths,
    ) -> (Vec<(String, Mapping)>, Vec<String>) {
        let mut out = Vec::new();
        let mut missing = Vec::new();
        let mut loaded: BTreeSet<String> = BTreeSet::new();
        // (an object loaded, the objects that loaded it, nearest first)
        let mut queue: VecDeque<(Object, Vec<Object>)> =
            VecDeque::from([((consumer.to_string(), dynamic.clone()), Vec::new())]);
        while let Some(((object, dynp), parents)) = queue.pop_front() {
            let mut owned = vec![(object.clone(), dynp.clone())];
            owned.extend(parents.iter().cloned());
            let chain: Vec<Loaded<'_>> = owned
                .iter()
                .map(|(p, d)| Loaded {
                    path: p,
                    dynamic: d,
                })
                .collect();
            for needed in &dynp.needed {
                if !self.scope.sonames.contains(needed) || !loaded.insert(needed.clone()) {
                    continue;
                }
                let found = ldsearch::resolve(
                    self.root,
                    needed,
                    &chain,
                    self.scope.ld_library_path,
                    self.scope.cache,
                );
                let Some((path, via)) = found else {
                    missing.push(format!("{object} needs {needed}: ld.so finds none"));
                    continue;
                };
                out.push((
                    path.clone(),
                    Mapping {
                        consumer: consumer.to_string(),
                        needed_by: object.clone(),
                        via,
                    },
                ));
                if let Ok(d) = read_dynamic(self.root, &path) {
                    queue.push_back(((path, d), owned.clone()));
                }
            }
        }
        (out, missing)
    }

    /// Each candidate with one of the sonames, as a [`Copy`] with its mappings.
    fn read_candidates(&mut self, mappings: &[(String, Mapping)]) -> Vec<Copy> {
        let mut copies = Vec::new();
        for (path, found_in) in std::mem::take(&mut self.candidates) {
            let file = match self.root.resolve(&path, Missing::Fail) {
                Ok(r) => r.path.to_string_lossy().into_owned(),
                Err(e @ ResolveError::Loop { .. }) => {
                    self.skipped
                        .push(format!("{path}: {e}; ld.so cannot open it either"));
                    continue;
                }
                Err(e) => {
                    self.skipped.push(format!("{path}: {e}"));
                    continue;
                }
            };
            let Ok(meta) = self.root.metadata(&file) else {
                continue;
            };
            if !meta.is_file() {
                continue;
            }
            let soname = match read_dynamic(self.root, &file) {
                Ok(d) => d.soname,
                Err(_) => None, // not an ELF file (a linker script, a text stub): no copy
            };
            let Some(soname) = soname.filter(|s| self.scope.sonames.contains(s)) else {
                continue;
            };
            let mut mapped_by: Vec<Mapping> = mappings
                .iter()
                .filter(|(p, _)| *p == path)
                .map(|(_, m)| m.clone())
                .collect();
            mapped_by.sort();
            mapped_by.dedup();
            copies.push(Copy {
                path,
                file,
                soname,
                found_in,
                mapped_by,
                identity: (meta.dev(), meta.ino()),
            });
        }
        copies
    }
}

/// `path` with its directory resolved inside the root (the name kept as it is).
fn canonical_dir(root: &Root, path: &str) -> Option<String> {
    let (dir, name) = path.rsplit_once('/')?;
    ldsearch::openable(root, if dir.is_empty() { "/" } else { dir }, name)
}

/// The dynamic section of the regular file `path` names inside the root.
pub fn read_dynamic(root: &Root, path: &str) -> anyhow::Result<DynamicPaths> {
    let (file, _) = root.open_regular(path, FileKind::PackagedFile)?;
    crate::elf::read_dynamic_paths(&file, Path::new(path))
}

/// Every `site-packages`/`dist-packages` of the system Pythons and of the virtual
/// environments found under the usual places, each resolved directory once.
pub fn python_dirs(root: &Root, budget: &mut Budget) -> BTreeSet<String> {
    let mut libs: BTreeSet<String> = SYSTEM_PYTHON_LIBS.iter().map(|s| s.to_string()).collect();
    for env in environments(root, budget) {
        libs.insert(format!("{env}/lib"));
        libs.insert(format!("{env}/lib64"));
    }
    let mut out = BTreeSet::new();
    for lib in libs {
        let Ok(lib) = root.resolve(&lib, Missing::Fail) else {
            continue;
        };
        let lib = lib.path.to_string_lossy().into_owned();
        for name in root.read_dir_names(&lib, 10_000).unwrap_or_default() {
            if !name.starts_with("python") {
                continue;
            }
            for leaf in ["site-packages", "dist-packages"] {
                if let Ok(r) = root.resolve(format!("{lib}/{name}/{leaf}"), Missing::Fail) {
                    out.insert(r.path.to_string_lossy().into_owned());
                }
            }
        }
    }
    out
}

/// Directories holding `pyvenv.cfg` (a venv) or `conda-meta/` (a conda environment): under
/// `VENV_PLACES` to `VENV_DEPTH` levels, and every top-level directory itself.
pub fn environments(root: &Root, budget: &mut Budget) -> BTreeSet<String> {
    let mut envs = BTreeSet::new();
    for top in root.read_dir_names("/", 10_000).unwrap_or_default() {
        if !NOT_ENVS.contains(&top.as_str()) && root.exists(format!("/{top}/pyvenv.cfg")) {
            if let Ok(r) = root.resolve(format!("/{top}"), Missing::Fail) {
                envs.insert(r.path.to_string_lossy().into_owned());
            }
        }
    }
    for place in VENV_PLACES {
        let _ = dirwalk::walk(root, place, VENV_DEPTH, budget, &mut |p, n, k, _| {
            let is_env = (n == "pyvenv.cfg" && k == EntryKind::File)
                || (n == "conda-meta" && k == EntryKind::Dir);
            if is_env {
                if let Some((dir, _)) = p.rsplit_once('/') {
                    envs.insert(dir.to_string());
                }
            }
            // An environment is known by its top directory: its own tree (lib/, bin/, …) is
            // walked as site-packages, not here, and caches of other tools hold none.
            k == EntryKind::Dir && !NOT_ENV_PARTS.contains(&n)
        });
    }
    envs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(root: &Path, p: &str) {
        let h = root.join(p.trim_start_matches('/'));
        std::fs::create_dir_all(h.parent().unwrap()).unwrap();
        std::fs::write(h, b"x").unwrap();
    }

    #[test]
    fn environments_are_found_by_pyvenv_cfg_or_conda_meta_under_the_usual_places() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        touch(r, "/opt/venv/pyvenv.cfg");
        touch(r, "/home/u/proj/.venv/pyvenv.cfg");
        touch(r, "/opt/conda/envs/py312/conda-meta/history");
        touch(r, "/venv/pyvenv.cfg");
        // Too deep, and inside a tool's cache: not looked at.
        touch(r, "/home/u/a/b/c/.venv/pyvenv.cfg");
        touch(r, "/root/.cache/x/pyvenv.cfg");
        let envs = environments(&Root::new(r), &mut Budget::new(10_000));
        let envs: Vec<&str> = envs.iter().map(String::as_str).collect();
        assert_eq!(
            envs,
            vec![
                "/home/u/proj/.venv",
                "/opt/conda/envs/py312",
                "/opt/venv",
                "/venv"
            ]
        );
    }

    #[test]
    fn a_search_over_its_entry_budget_says_where_it_stopped() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        touch(r, "/opt/venv/pyvenv.cfg");
        for i in 0..50 {
            touch(
                r,
                &format!("/opt/venv/lib/python3.12/site-packages/p{i}/m.py"),
            );
        }
        let sonames = BTreeSet::from(["libamdhip64.so.7".to_string()]);
        let name_matches = |n: &str| n.starts_with("libamdhip64");
        let scope = |max_entries| Scope {
            sonames: &sonames,
            name_matches: &name_matches,
            consumers: &[],
            ld_library_path: None,
            cache: &[],
            max_entries,
        };
        let found = find(&Root::new(r), &scope(20));
        let why = found.incomplete.expect("the budget ran out");
        assert!(why.contains("more than 20 entries"), "{why}");
        let found = find(&Root::new(r), &scope(10_000));
        assert_eq!(found.incomplete, None);
        assert!(found.entries_walked > 100, "{}", found.entries_walked);
    }
}
