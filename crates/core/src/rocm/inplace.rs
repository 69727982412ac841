//! Hosts and images patched the old, in-place way (the seed's Dockerfile block): the patched
//! files copied into `<prefix>/lib` with `cp -P`, every stock versioned file name replaced by a
//! hard link to the patched file, `ldconfig`, and the marker files
//! `<prefix>/.info/atom-rocm-runtime-commit` / `…-sonames`. dpkg still owns the stock names and
//! their md5sums no longer match, so the next reinstall of the stock package puts stock back.
//!
//! [`detect`] reads that state (read-only) for `verify`, `status` and `adopt`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::host::root::{FileKind, Root};
use crate::host::status::{self, StatusEntry};
use crate::output::shown;
use crate::rocm::{self, Half, InPlaceSearch, RuntimeLayout};

/// The most entries read from a ROCm lib directory of a root (a real one has a few hundred).
const MAX_LIB_DIR_ENTRIES: usize = 100_000;

/// A dpkg-owned file whose content no longer matches dpkg's md5sums.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DifferingFile {
    pub path: String,
    pub package: String,
    pub dpkg_md5: String,
    /// "missing" when the file is gone.
    pub actual_md5: String,
}

/// One patched library as it is live now.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PatchedLibrary {
    /// Family stem (`libamdhip64`).
    pub family: String,
    /// The real file the stock names are hard links of (in-root path).
    pub path: String,
    /// SONAME read from the ELF (None when unreadable).
    pub soname: Option<String>,
    pub size: u64,
    /// dpkg-owned stock file names that are the same inode.
    pub aliases: Vec<String>,
    /// Symlink names in the lib directory resolving to `path` (soname and dev links).
    pub links: Vec<String>,
    /// For the HSA library: exports the backport symbol.
    pub backport_symbol: Option<bool>,
}

/// What `detect` found.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct InPlacePatch {
    /// The real versioned prefix (`/opt/rocm-7.2.4`); `/usr` for Debian's flavour.
    pub prefix: String,
    /// The stock flavour whose files were patched.
    pub flavour: rocm::StockFlavour,
    /// The library directory the stock runtime files are in (`/opt/rocm-7.2.4/lib`,
    /// `/usr/lib/x86_64-linux-gnu`).
    pub lib_dir: String,
    /// Content of the commit marker, None when absent.
    pub marker_commit: Option<String>,
    /// Lines of the sonames marker, None when absent.
    pub marker_sonames: Option<Vec<String>>,
    /// The stock packages (name, version) owning the runtime files.
    pub stock: Vec<(String, String)>,
    pub differing: Vec<DifferingFile>,
    pub libraries: Vec<PatchedLibrary>,
    /// The commit of the installed rocm-pin packages, when some are installed.
    pub installed_commit: Option<String>,
    /// Things that make this patch unusable as it is (empty or dangling files, disagreeing
    /// markers, no backport symbol). Empty when it is a clean in-place patch.
    pub problems: Vec<String>,
}

impl InPlacePatch {
    /// The in-place patch is live: stock files differ from dpkg's record.
    pub fn is_live(&self) -> bool {
        !self.differing.is_empty()
    }

    /// The runtime layout the patched files are in.
    pub fn layout(&self) -> RuntimeLayout {
        RuntimeLayout::of_library_dir(&self.lib_dir)
    }

    /// Does the flavour keep the in-place commit marker (AMD's `/opt` prefix)?
    fn has_markers(&self) -> bool {
        rocm::flavour_spec(self.flavour).in_place == InPlaceSearch::RocmPathWithMarkers
    }

    /// The command that adopts this patch (`--commit` where no marker can name the commit).
    fn adopt_command(&self) -> &'static str {
        if self.has_markers() || self.marker_commit.is_some() {
            "rocm-pin adopt"
        } else {
            "rocm-pin adopt --commit <the 40-digit commit>"
        }
    }

    /// The problem a live patch has when nothing names its commit (no marker, no `--commit`).
    pub(crate) fn commit_unknown(&self) -> String {
        if self.has_markers() {
            return format!(
                "no commit marker {}/{}: the source commit is unknown: write the full 40-digit commit the libraries were built from ({}'s file name ends in its short hash) into that file and run `rocm-pin adopt` again, or give it with `rocm-pin adopt --commit <40-digit commit>`",
                self.prefix,
                rocm::INPLACE_COMMIT_RELPATH,
                rocm::pair_family(Half::Hip).stem
            );
        }
        let hint = self
            .libraries
            .iter()
            .flat_map(|l| std::iter::once(&l.path).chain(l.aliases.iter()))
            .find_map(|p| {
                let name = p.rsplit('/').next().unwrap_or(p);
                rocm::commit_hint_of_file_name(name).map(|h| format!("{p} says commit {h}"))
            })
            .unwrap_or_else(|| {
                format!(
                    "no file name here carries it: the {} file CLR's build installs is named `{}.so.<version>-<short hash>`",
                    rocm::pair_family(Half::Hip).stem,
                    rocm::pair_family(Half::Hip).stem
                )
            });
        format!(
            "the commit the libraries patched in place in {} were built from is unknown: {} keeps no in-place commit marker; pass it with `rocm-pin adopt --commit <40-digit commit>` ({hint})",
            self.lib_dir,
            rocm::flavour_spec(self.flavour).title
        )
    }

    /// The commit an adoption packages: `--commit` when given, else the marker's (lowercase).
    /// None when neither names one.
    pub(crate) fn commit(&self, given: Option<&str>) -> Option<String> {
        given
            .or(self.marker_commit.as_deref())
            .map(str::to_ascii_lowercase)
    }

    /// The problems again, judging the commit given with `--commit` as well.
    pub(crate) fn with_commit(mut self, given: Option<&str>) -> Self {
        if self.is_live() {
            self.problems = problems(&self, given);
        }
        self
    }

    /// Stock package names, space-separated (for commands in messages).
    fn stock_names(&self) -> String {
        self.stock
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// " of NAME VERSION, NAME VERSION" (empty when no stock package owns the runtime): which
    /// packages a reverted patch left live.
    fn stock_with_versions(&self) -> String {
        if self.stock.is_empty() {
            return String::new();
        }
        let list: Vec<String> = self.stock.iter().map(|(n, v)| format!("{n} {v}")).collect();
        format!(" of {}", list.join(", "))
    }

    /// The apt/dpkg commands that put the stock files back.
    pub fn reverting_commands(&self) -> Vec<String> {
        let names = self.stock_names();
        vec![
            format!("apt-get install --reinstall {names}"),
            "apt --fix-broken install (after anything leaves a ROCm dependency broken, e.g. `dpkg -i --force-all` of a custom rccl)".to_string(),
            format!("apt-get upgrade / dist-upgrade once a newer {names} is published"),
            format!("dpkg -i of any {names} .deb"),
        ]
    }

    /// One line for a verify check: the state, the differing files, the fix.
    pub fn summary(&self) -> String {
        if let (false, Some(ours)) = (self.is_live(), &self.installed_commit) {
            return format!(
                "stale in-place marker {}/{} names commit {} but the installed rocm-pin packages carry {ours}: remove the marker (and its -sonames sibling) so nothing reads the wrong commit",
                self.prefix,
                rocm::INPLACE_COMMIT_RELPATH,
                self.marker_commit.as_deref().unwrap_or("?")
            );
        }
        if !self.is_live() {
            return format!(
                "stale in-place marker {}/{} (commit {}): the in-place patch was reverted, the stock runtime{} is live; remove the marker or install the pinned packages",
                self.prefix,
                rocm::INPLACE_COMMIT_RELPATH,
                self.marker_commit.as_deref().unwrap_or("?"),
                self.stock_with_versions()
            );
        }
        format!(
            "patched in place (commit {}), NOT protected: dpkg-owned {} differ from dpkg's md5sums, so `{}` or `apt --fix-broken install` puts stock back{}; fix: `{}`",
            self.marker_commit.as_deref().unwrap_or("unknown"),
            self.differing
                .iter()
                .map(|d| format!("{} ({})", d.path, d.package))
                .collect::<Vec<_>>()
                .join(", "),
            self.reverting_commands()[0],
            if self.problems.is_empty() {
                String::new()
            } else {
                format!(" [problems: {}]", self.problems.join("; "))
            },
            self.adopt_command()
        )
    }

    /// One paragraph for humans: what was found, why it is not protected, the fix. What was
    /// read from the root (the marker's commit, file names, package names) is shown escaped,
    /// one line per item whatever it holds.
    pub fn describe(&self) -> String {
        let mut s = String::new();
        if !self.is_live() && self.installed_commit.is_some() {
            return format!("{}\n", shown(&self.summary()));
        }
        if self.is_live() && !self.has_markers() {
            s.push_str(&format!(
                "patched IN PLACE in {} (commit unknown: {} keeps no in-place marker), NOT protected:\n",
                shown(&self.lib_dir),
                rocm::flavour_spec(self.flavour).title
            ));
        } else if self.is_live() {
            s.push_str(&format!(
                "patched IN PLACE (commit {} from {}/{}), NOT protected:\n",
                shown(
                    self.marker_commit
                        .as_deref()
                        .unwrap_or("unknown: no marker")
                ),
                shown(&self.prefix),
                rocm::INPLACE_COMMIT_RELPATH
            ));
        } else {
            s.push_str(&format!(
                "the in-place marker {}/{} (commit {}) is present but every stock file matches dpkg again: the in-place patch was REVERTED, the stock runtime{} is live\n",
                shown(&self.prefix),
                rocm::INPLACE_COMMIT_RELPATH,
                shown(self.marker_commit.as_deref().unwrap_or("?")),
                shown(&self.stock_with_versions())
            ));
        }
        for l in &self.libraries {
            s.push_str(&format!(
                "  {} ({}, {} bytes) {}\n",
                shown(&l.path),
                shown(l.soname.as_deref().unwrap_or("no SONAME")),
                l.size,
                if l.aliases.is_empty() {
                    "hard-linked as (no stock name)".to_string()
                } else if l.aliases == [l.path.clone()] {
                    "copied over the stock file of that name".to_string()
                } else {
                    format!("hard-linked as {}", shown(&l.aliases.join(", ")))
                }
            ));
        }
        for d in &self.differing {
            s.push_str(&format!(
                "  dpkg-owned {} ({}) differs: md5 {} vs dpkg's {}\n",
                shown(&d.path),
                shown(&d.package),
                shown(&d.actual_md5),
                shown(&d.dpkg_md5)
            ));
        }
        for p in &self.problems {
            s.push_str(&format!("  PROBLEM: {}\n", shown(p)));
        }
        if self.is_live() {
            s.push_str("  these put the stock runtime back:\n");
            for c in self.reverting_commands() {
                s.push_str(&format!("    {}\n", shown(&c)));
            }
            s.push_str(&format!(
                "  fix: `{}` (packages the live patched pair as Protected replacements, offline)\n",
                shown(self.adopt_command())
            ));
        } else {
            s.push_str("  fix: install the patched pair as packages (`rocm-pin install`), or remove the stale marker files\n");
        }
        s
    }
}

/// A full git commit id: 40 hex digits (what a marker and `adopt --commit` must say).
pub(crate) fn is_full_commit(c: &str) -> bool {
    c.len() == 40 && c.bytes().all(|b| b.is_ascii_hexdigit())
}

fn read_marker(root: &Root, path: &str) -> Option<String> {
    root.read_to_string(path, FileKind::StateRecord).ok()
}

/// The md5 of the regular file `path` names inside the root, streamed (None: not readable
/// safely, reported as "missing").
fn md5_of(root: &Root, path: &str) -> Option<String> {
    let (file, _) = root.open_regular(path, FileKind::PackagedFile).ok()?;
    crate::digest::md5_reader(file).ok()
}

/// One installed stock runtime package with dpkg's md5sums of its files.
type PackageSums<'a> = (&'a StatusEntry, Vec<(String, String)>);

/// The installed stock runtime packages of `flavour` (by name; never ours) with their md5sums,
/// each package's read once per [`detect`]. Only the files dpkg lists for the package *now*
/// count: when a stock package is forced in next to ours (`dpkg -i --force-all`), dpkg skips
/// every file ours already owns ("Replaced by files in installed package …"), so its md5sums
/// still name those paths while its `.list` no longer does. Comparing them would call our own
/// installed files a patch in place and send the user to `adopt`, which refuses.
fn stock_package_sums<'a>(
    root: &Root,
    entries: &'a [StatusEntry],
    flavour: rocm::StockFlavour,
) -> Vec<PackageSums<'a>> {
    entries
        .iter()
        .filter(|e| e.has_files() && !e.extra.contains_key(rocm::COMMIT_FIELD))
        .filter(|e| rocm::stock_package_by_name(&e.package).is_some_and(|n| n.flavour == flavour))
        .filter_map(|e| {
            let sums = status::package_md5sums(root, &e.package, &e.architecture).ok()??;
            let listed: HashSet<String> = status::package_list(root, &e.package, &e.architecture)
                .ok()?
                .into_iter()
                .collect();
            let owned = sums
                .into_iter()
                .filter(|(p, _)| listed.contains(p))
                .collect();
            Some((e, owned))
        })
        .collect()
}

/// The stock runtime files of one layout: each package with dpkg's md5sums of its runtime
/// libraries directly in the layout's library directory.
type LayoutFiles = (RuntimeLayout, Vec<(StatusEntry, Vec<(String, String)>)>);

/// dpkg's path-exclude filters of the root, loaded when a layout first needs them.
type LazyFilters = std::cell::OnceCell<Option<crate::host::excludes::PathFilters>>;

/// Read the in-place state under `root`. None when there is no trace of an in-place patch
/// (no marker and every stock runtime file matches dpkg), or no stock runtime at all. Where to
/// look is each flavour's data ([`rocm::InPlaceSearch`]): AMD's `/opt/rocm` first (its markers
/// are there), then the library directories of the other flavours' stock packages. The first
/// live patch is the answer; a trace of one that is not live (a reverted patch's marker) only
/// when no layout has a live one.
pub(crate) fn detect(root: &Root, entries: &[StatusEntry]) -> Option<InPlacePatch> {
    let filters = LazyFilters::new();
    // A live patch wins over a marker left by a reverted one (AMD's, searched first, would
    // otherwise hide a live patch of Debian's files on a host with both).
    let mut not_live = None;
    for spec in rocm::STOCK_FLAVOURS {
        let sums = stock_package_sums(root, entries, spec.flavour);
        for (layout, stock) in runtime_files_by_layout(root, spec, &sums) {
            match detect_in(root, entries, &layout, stock, &filters) {
                Some(p) if p.is_live() => return Some(p),
                Some(p) => {
                    not_live.get_or_insert(p);
                }
                None => {}
            }
        }
    }
    not_live
}

/// The layouts of one flavour an in-place patch may be in, by its data (the resolved
/// `/opt/rocm`, even with no stock file: its markers may be there; or every library directory
/// the flavour's stock packages list runtime files in, in the order first listed), each with
/// its stock runtime files. One pass over the sums: a root whose md5sums list many library
/// directories costs what its md5sums weigh, not that times the directories.
fn runtime_files_by_layout(
    root: &Root,
    spec: &rocm::StockFlavourSpec,
    sums: &[PackageSums<'_>],
) -> Vec<LayoutFiles> {
    let mut out: Vec<LayoutFiles> = Vec::new();
    if spec.in_place == InPlaceSearch::RocmPathWithMarkers {
        if let Ok((prefix, _)) = rocm::resolve_rocm_path(root, Path::new(rocm::DEFAULT_ROCM_PATH)) {
            out.push((
                RuntimeLayout::versioned_prefix(&prefix.display().to_string()),
                Vec::new(),
            ));
        }
    }
    let mut index: HashMap<String, usize> = out
        .iter()
        .enumerate()
        .map(|(i, (layout, _))| (layout.lib_dir.clone(), i))
        .collect();
    for (e, sums) in sums {
        for (path, md5) in sums {
            let Some((dir, name)) = path.rsplit_once('/') else {
                continue;
            };
            if rocm::family_of(name).is_none() {
                continue;
            }
            let i = match index.get(dir) {
                Some(&i) => i,
                None if spec.in_place == InPlaceSearch::StockPackageDirs
                    && rocm::runtime_library_location(path)
                        .is_some_and(|(flavour, ..)| flavour == spec.flavour) =>
                {
                    out.push((RuntimeLayout::of_library_dir(dir), Vec::new()));
                    index.insert(dir.to_string(), out.len() - 1);
                    out.len() - 1
                }
                None => continue,
            };
            let files = &mut out[i].1;
            match files.last_mut() {
                // A package's files are read together, so its entry is the last one.
                Some((last, list))
                    if last.package == e.package && last.architecture == e.architecture =>
                {
                    list.push((path.clone(), md5.clone()))
                }
                _ => files.push(((*e).clone(), vec![(path.clone(), md5.clone())])),
            }
        }
    }
    out
}

/// [`detect`] in one layout.
fn detect_in(
    root: &Root,
    entries: &[StatusEntry],
    layout: &RuntimeLayout,
    stock: Vec<(StatusEntry, Vec<(String, String)>)>,
    filters: &LazyFilters,
) -> Option<InPlacePatch> {
    let prefix = layout.prefix.clone();
    let markers = layout.inplace_markers();
    let marker_commit = markers
        .as_ref()
        .and_then(|[commit, _]| read_marker(root, commit))
        .map(|t| t.lines().next().unwrap_or("").trim().to_string());
    let marker_sonames = markers
        .as_ref()
        .and_then(|[_, sonames]| read_marker(root, sonames))
        .map(|t| {
            t.lines()
                .map(|l| l.trim().to_string())
                .filter(|l| !l.is_empty())
                .collect()
        });
    let filters = filters.get_or_init(|| crate::host::excludes::PathFilters::load(root).ok());
    let mut differing = Vec::new();
    for (e, files) in &stock {
        for (path, want) in files {
            // Absent by dpkg's path-exclude is how dpkg installed it, not a patch.
            if root.symlink_metadata(path).is_err()
                && filters.as_ref().is_some_and(|f| f.is_excluded(path))
            {
                continue;
            }
            let got = md5_of(root, path).unwrap_or_else(|| "missing".to_string());
            if &got != want {
                differing.push(DifferingFile {
                    path: path.clone(),
                    package: e.package.clone(),
                    dpkg_md5: want.clone(),
                    actual_md5: got,
                });
            }
        }
    }
    if differing.is_empty() && marker_commit.is_none() && marker_sonames.is_none() {
        return None;
    }
    // A marker naming the commit our installed packages carry is the adoption in progress (or
    // an image that installed ours on top): it agrees, so it is not reported.
    let installed_commit = entries
        .iter()
        .filter(|e| e.has_files())
        .find_map(|e| e.extra.get(rocm::COMMIT_FIELD).cloned());
    let agrees_with_ours = marker_commit
        .as_ref()
        .zip(installed_commit.as_ref())
        .is_some_and(|(m, o)| m.eq_ignore_ascii_case(o));
    if differing.is_empty() && agrees_with_ours {
        return None;
    }
    let mut patch = InPlacePatch {
        prefix,
        flavour: layout.flavour,
        lib_dir: layout.lib_dir.clone(),
        marker_commit,
        marker_sonames,
        stock: stock
            .iter()
            .map(|(e, _)| (e.package.clone(), e.version.clone()))
            .collect(),
        differing,
        libraries: Vec::new(),
        installed_commit,
        problems: Vec::new(),
    };
    if patch.is_live() {
        patch.libraries = patched_libraries(root, &patch);
        patch.problems = problems(&patch, None);
    }
    Some(patch)
}

/// Group the differing files by inode and find, for each, the real patched file: a regular
/// file in that file's own directory, same inode, not one of the stock names (the seed's
/// hard links); else the stock-named file itself (patched files copied over the stock names).
fn patched_libraries(root: &Root, patch: &InPlacePatch) -> Vec<PatchedLibrary> {
    // The directories of the differing files, each read once: (dir, [(name, metadata)]).
    let mut dirs: BTreeMap<String, Vec<(String, std::fs::Metadata)>> = BTreeMap::new();
    for d in &patch.differing {
        let Some((dir, _)) = d.path.rsplit_once('/') else {
            continue;
        };
        dirs.entry(dir.to_string()).or_insert_with(|| {
            let mut entries: Vec<(String, std::fs::Metadata)> = root
                .read_dir_names(dir, MAX_LIB_DIR_ENTRIES)
                .map(|names| {
                    names
                        .into_iter()
                        .filter_map(|name| {
                            rocm::family_of(&name)?;
                            let m = root.symlink_metadata(format!("{dir}/{name}")).ok()?;
                            Some((name, m))
                        })
                        .collect()
                })
                .unwrap_or_default();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            entries
        });
    }
    let stock_names: Vec<&str> = patch.differing.iter().map(|d| d.path.as_str()).collect();
    // (dir, inode) -> differing stock paths
    let mut by_inode: BTreeMap<(String, u64, u64), Vec<String>> = BTreeMap::new();
    for d in &patch.differing {
        let Some((dir, _)) = d.path.rsplit_once('/') else {
            continue;
        };
        if let Ok(m) = root.symlink_metadata(&d.path) {
            if m.is_file() {
                by_inode
                    .entry((dir.to_string(), m.dev(), m.ino()))
                    .or_default()
                    .push(d.path.clone());
            }
        }
    }
    let mut out = Vec::new();
    for ((dir, dev, ino), aliases) in by_inode {
        let entries = dirs.get(&dir).map(Vec::as_slice).unwrap_or_default();
        let real = entries
            .iter()
            .filter(|(_, m)| m.is_file() && m.dev() == dev && m.ino() == ino)
            .map(|(n, _)| format!("{dir}/{n}"))
            .find(|p| !stock_names.contains(&p.as_str()))
            .unwrap_or_else(|| aliases[0].clone());
        let name = Path::new(&real)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let family = rocm::family_of(&name);
        let size = root.metadata(&real).map(|m| m.len()).unwrap_or(0);
        let elf = root
            .open_regular(&real, FileKind::PackagedFile)
            .ok()
            .and_then(|(f, _)| crate::elf::read_elf_file(&f, Path::new(&real)).ok());
        let links = entries
            .iter()
            .filter(|(_, m)| m.file_type().is_symlink())
            .filter(|(n, _)| {
                root.canonical(&format!("{dir}/{n}"))
                    .is_ok_and(|t| t == real)
            })
            .map(|(n, _)| n.clone())
            .collect();
        out.push(PatchedLibrary {
            family: family.map(|f| f.stem.to_string()).unwrap_or_default(),
            path: real,
            soname: elf.as_ref().and_then(|e| e.soname.clone()),
            size,
            aliases,
            links,
            backport_symbol: family.filter(|f| f.half == rocm::Half::Hsa).map(|_| {
                elf.as_ref()
                    .is_some_and(|e| e.export(rocm::BACKPORT_SYMBOL).is_some())
            }),
        });
    }
    out
}

/// What makes a live in-place patch unusable as the source of an adoption; `given` is the
/// commit `rocm-pin adopt --commit` names (it must agree with a marker, when there is one).
fn problems(patch: &InPlacePatch, given: Option<&str>) -> Vec<String> {
    let mut p = Vec::new();
    for d in &patch.differing {
        if d.actual_md5 == "missing" {
            p.push(format!(
                "{} ({}) is missing or unreadable (a dangling link?)",
                d.path, d.package
            ));
        }
    }
    for l in &patch.libraries {
        if l.size == 0 && l.aliases == [l.path.clone()] {
            p.push(format!(
                "{} is EMPTY (0 bytes): an empty file was copied over the stock file; restore stock with `apt-get install --reinstall {}`",
                l.path,
                patch.stock_names()
            ));
            continue;
        }
        if l.size == 0 {
            p.push(format!(
                "{} is EMPTY (0 bytes) and hard-linked as {}: the in-place block linked an empty file (its `touch` on a dangling link); restore stock with `apt-get install --reinstall {}`",
                l.path,
                l.aliases.join(", "),
                patch.stock_names()
            ));
            continue;
        }
        let dir = l.path.rsplit_once('/').map_or("", |(d, _)| d);
        match &l.soname {
            None => p.push(format!(
                "{} is not an ELF shared library with a SONAME",
                l.path
            )),
            Some(s) if !l.links.iter().any(|n| n == s) => p.push(format!(
                "the soname link {dir}/{s} does not resolve to {} (dangling or pointing elsewhere)",
                l.path
            )),
            Some(_) => {}
        }
        if l.backport_symbol == Some(false) {
            p.push(format!(
                "{} does not export {}: not the patched ROCr",
                l.path,
                rocm::BACKPORT_SYMBOL
            ));
        }
    }
    for stem in [Half::Hsa, Half::Hip].map(|h| rocm::pair_family(h).stem) {
        if !patch.libraries.iter().any(|l| l.family == stem) {
            p.push(format!(
                "no patched {stem} found (only part of the pair is replaced)"
            ));
        }
    }
    if let (Some(m), Some(g)) = (&patch.marker_commit, given) {
        if !m.eq_ignore_ascii_case(g) {
            p.push(format!(
                "the commit marker {}/{} says {m} but --commit says {g}: which one the libraries were built from is for you to check; correct the marker or --commit",
                patch.prefix,
                rocm::INPLACE_COMMIT_RELPATH
            ));
        }
    }
    // Where the commit was read, for the messages: the marker's, else --commit's.
    let said_by = if given.is_some() {
        "--commit says"
    } else {
        "the commit marker says"
    };
    match given.or(patch.marker_commit.as_deref()) {
        None => p.push(patch.commit_unknown()),
        Some(c) => {
            if !is_full_commit(c) {
                p.push(format!("{said_by} {c:?}, not a full 40-digit commit id"));
            }
            for l in &patch.libraries {
                let name = Path::new(&l.path)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                if let Some(h) = rocm::commit_hint_of_file_name(&name) {
                    if !c.to_ascii_lowercase().starts_with(&h.to_ascii_lowercase()) {
                        p.push(format!(
                            "{said_by} {c} but {} was built from commit {h} (its file name)",
                            l.path
                        ));
                    }
                }
            }
        }
    }
    if let Some(names) = &patch.marker_sonames {
        for l in &patch.libraries {
            if let Some(s) = &l.soname {
                let stem = format!("{}.so.", l.family);
                if let Some(m) = names.iter().find(|n| n.starts_with(&stem)) {
                    if m != s {
                        p.push(format!(
                            "the sonames marker says {m} but the live {} has SONAME {s}",
                            l.path
                        ));
                    }
                }
            }
        }
    }
    p
}

#[cfg(test)]
#[path = "inplace_tests.rs"]
mod tests;
