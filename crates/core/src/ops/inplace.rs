//! Hosts and images patched the old, in-place way (the seed's Dockerfile block): the patched
//! files copied into `<prefix>/lib` with `cp -P`, every stock versioned file name replaced by a
//! hard link to the patched file, `ldconfig`, and the marker files
//! `<prefix>/.info/atom-rocm-runtime-commit` / `…-sonames`. dpkg still owns the stock names and
//! their md5sums no longer match, so the next reinstall of the stock package puts stock back.
//!
//! [`detect`] reads that state (read-only) for `verify`, `status` and `adopt`.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::host::root::{FileKind, Root};
use crate::host::status::{self, StatusEntry};
use crate::rocm::{self, Half};

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
    /// The real versioned prefix (`/opt/rocm-7.2.4`).
    pub prefix: String,
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
            "patched in place (commit {}), NOT protected: dpkg-owned {} differ from dpkg's md5sums, so `{}` or `apt --fix-broken install` puts stock back{}; fix: `rocm-pin adopt`",
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
            }
        )
    }

    /// One paragraph for humans: what was found, why it is not protected, the fix.
    pub fn describe(&self) -> String {
        let mut s = String::new();
        if !self.is_live() && self.installed_commit.is_some() {
            return format!("{}\n", self.summary());
        }
        if self.is_live() {
            s.push_str(&format!(
                "patched IN PLACE (commit {} from {}/{}), NOT protected:\n",
                self.marker_commit
                    .as_deref()
                    .unwrap_or("unknown: no marker"),
                self.prefix,
                rocm::INPLACE_COMMIT_RELPATH
            ));
        } else {
            s.push_str(&format!(
                "the in-place marker {}/{} (commit {}) is present but every stock file matches dpkg again: the in-place patch was REVERTED, the stock runtime{} is live\n",
                self.prefix,
                rocm::INPLACE_COMMIT_RELPATH,
                self.marker_commit.as_deref().unwrap_or("?"),
                self.stock_with_versions()
            ));
        }
        for l in &self.libraries {
            s.push_str(&format!(
                "  {} ({}, {} bytes) hard-linked as {}\n",
                l.path,
                l.soname.as_deref().unwrap_or("no SONAME"),
                l.size,
                if l.aliases.is_empty() {
                    "(no stock name)".to_string()
                } else {
                    l.aliases.join(", ")
                }
            ));
        }
        for d in &self.differing {
            s.push_str(&format!(
                "  dpkg-owned {} ({}) differs: md5 {} vs dpkg's {}\n",
                d.path, d.package, d.actual_md5, d.dpkg_md5
            ));
        }
        for p in &self.problems {
            s.push_str(&format!("  PROBLEM: {p}\n"));
        }
        if self.is_live() {
            s.push_str("  these put the stock runtime back:\n");
            for c in self.reverting_commands() {
                s.push_str(&format!("    {c}\n"));
            }
            s.push_str("  fix: `rocm-pin adopt` (packages the live patched pair as Protected replacements, offline)\n");
        } else {
            s.push_str("  fix: install the patched pair as packages (`rocm-pin install`), or remove the stale marker files\n");
        }
        s
    }
}

fn read_marker(root: &Root, prefix: &str, rel: &str) -> Option<String> {
    root.read_to_string(format!("{prefix}/{rel}"), FileKind::StateRecord)
        .ok()
}

/// The md5 of the regular file `path` names inside the root, streamed (None: not readable
/// safely, reported as "missing").
fn md5_of(root: &Root, path: &str) -> Option<String> {
    let (file, _) = root.open_regular(path, FileKind::PackagedFile).ok()?;
    crate::digest::md5_reader(file).ok()
}

/// The stock runtime packages installed for `prefix`, with their md5sums of runtime files.
fn stock_runtime_files(
    root: &Root,
    entries: &[StatusEntry],
    prefix: &str,
) -> Vec<(StatusEntry, Vec<(String, String)>)> {
    let mut out = Vec::new();
    for e in entries {
        if !e.has_files()
            || e.extra.contains_key(rocm::COMMIT_FIELD)
            || !rocm::is_stock_runtime_package(&e.package)
        {
            continue;
        }
        let Ok(Some(sums)) = status::package_md5sums(root, &e.package, &e.architecture) else {
            continue;
        };
        let files: Vec<(String, String)> = sums
            .into_iter()
            .filter(|(p, _)| rocm::runtime_library_family_at(prefix, p).is_some())
            .collect();
        if !files.is_empty() {
            out.push((e.clone(), files));
        }
    }
    out
}

/// Read the in-place state under `root`. None when there is no trace of an in-place patch
/// (no marker and every stock runtime file matches dpkg), or no ROCm prefix at all.
pub(crate) fn detect(root: &Root, entries: &[StatusEntry]) -> Option<InPlacePatch> {
    let (prefix, _) = rocm::resolve_rocm_path(root, Path::new(rocm::DEFAULT_ROCM_PATH)).ok()?;
    let prefix = prefix.display().to_string();
    let marker_commit = read_marker(root, &prefix, rocm::INPLACE_COMMIT_RELPATH)
        .map(|t| t.lines().next().unwrap_or("").trim().to_string());
    let marker_sonames = read_marker(root, &prefix, rocm::INPLACE_SONAMES_RELPATH).map(|t| {
        t.lines()
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty())
            .collect()
    });
    let stock = stock_runtime_files(root, entries, &prefix);
    let filters = crate::host::excludes::PathFilters::load(root).ok();
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
        prefix: prefix.clone(),
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
        patch.problems = problems(&patch);
    }
    Some(patch)
}

/// Group the differing files by inode and find, for each, the real patched file: a regular
/// file in the same lib directory, same inode, not one of the stock names.
fn patched_libraries(root: &Root, patch: &InPlacePatch) -> Vec<PatchedLibrary> {
    let lib_dir = format!("{}/lib", patch.prefix);
    let mut entries: Vec<(String, std::fs::Metadata)> = root
        .read_dir_names(&lib_dir, MAX_LIB_DIR_ENTRIES)
        .map(|names| {
            names
                .into_iter()
                .filter_map(|name| {
                    rocm::family_of(&name)?;
                    let m = root.symlink_metadata(format!("{lib_dir}/{name}")).ok()?;
                    Some((name, m))
                })
                .collect()
        })
        .unwrap_or_default();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let stock_names: Vec<&str> = patch.differing.iter().map(|d| d.path.as_str()).collect();
    // inode -> differing stock paths
    let mut by_inode: BTreeMap<(u64, u64), Vec<String>> = BTreeMap::new();
    for d in &patch.differing {
        if let Ok(m) = root.symlink_metadata(&d.path) {
            if m.is_file() {
                by_inode
                    .entry((m.dev(), m.ino()))
                    .or_default()
                    .push(d.path.clone());
            }
        }
    }
    let mut out = Vec::new();
    for ((dev, ino), aliases) in by_inode {
        let real = entries
            .iter()
            .filter(|(_, m)| m.is_file() && m.dev() == dev && m.ino() == ino)
            .map(|(n, _)| format!("{lib_dir}/{n}"))
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
                root.canonical(&format!("{lib_dir}/{n}"))
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

/// What makes a live in-place patch unusable as the source of an adoption.
fn problems(patch: &InPlacePatch) -> Vec<String> {
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
        if l.size == 0 {
            p.push(format!(
                "{} is EMPTY (0 bytes) and hard-linked as {}: the in-place block linked an empty file (its `touch` on a dangling link); restore stock with `apt-get install --reinstall {}`",
                l.path,
                l.aliases.join(", "),
                patch.stock_names()
            ));
            continue;
        }
        match &l.soname {
            None => p.push(format!("{} is not an ELF shared library with a SONAME", l.path)),
            Some(s) if !l.links.iter().any(|n| n == s) => p.push(format!(
                "the soname link {}/lib/{s} does not resolve to {} (dangling or pointing elsewhere)",
                patch.prefix, l.path
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
    match &patch.marker_commit {
        None => p.push(format!(
            "no commit marker {}/{}: the source commit is unknown: write the full 40-digit commit the libraries were built from ({}'s file name ends in its short hash) into that file and run `rocm-pin adopt` again",
            patch.prefix,
            rocm::INPLACE_COMMIT_RELPATH,
            rocm::pair_family(Half::Hip).stem
        )),
        Some(c) => {
            if c.len() != 40 || !c.bytes().all(|b| b.is_ascii_hexdigit()) {
                p.push(format!(
                    "the commit marker says {c:?}, not a full 40-digit commit id"
                ));
            }
            for l in &patch.libraries {
                let name = Path::new(&l.path)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                if let Some(h) = rocm::commit_hint_of_file_name(&name) {
                    if !c.to_ascii_lowercase().starts_with(&h.to_ascii_lowercase()) {
                        p.push(format!(
                            "the commit marker says {c} but {} was built from commit {h} (its file name)",
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
mod tests {
    use super::*;

    #[test]
    fn no_prefix_means_nothing_to_report() {
        let d = tempfile::tempdir().unwrap();
        assert!(detect(&Root::new(d.path()), &[]).is_none());
    }

    #[test]
    fn a_stale_marker_alone_reads_as_reverted() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        std::fs::create_dir_all(r.join("opt/rocm-7.2.4/.info")).unwrap();
        std::os::unix::fs::symlink("/opt/rocm-7.2.4", r.join("opt/rocm")).unwrap();
        std::fs::write(
            r.join("opt/rocm-7.2.4/.info/atom-rocm-runtime-commit"),
            format!("{}\n", rocm::PIN_COMMIT),
        )
        .unwrap();
        let p = detect(&Root::new(r), &[]).unwrap();
        assert!(!p.is_live());
        assert_eq!(p.marker_commit.as_deref(), Some(rocm::PIN_COMMIT));
        assert!(p.describe().contains("REVERTED"), "{}", p.describe());
        // With ours installed at another commit the marker disagrees; at the same commit it
        // is the adoption's own and not reported.
        let ours = |commit: &str| StatusEntry {
            package: "hsa-rocr-pinned".into(),
            status: "install ok installed".into(),
            extra: [(rocm::COMMIT_FIELD.to_string(), commit.to_string())].into(),
            ..Default::default()
        };
        let other = detect(
            &Root::new(r),
            &[ours("0123456789abcdef0123456789abcdef01234567")],
        )
        .unwrap();
        assert!(
            other.summary().contains("stale in-place marker"),
            "{}",
            other.summary()
        );
        assert!(detect(&Root::new(r), &[ours(rocm::PIN_COMMIT)]).is_none());
    }

    /// The seed's shape on a fake root: the stock name hard-linked to a patched file whose
    /// name carries the short commit, the soname link re-pointed, the markers.
    #[test]
    fn reads_hard_links_over_stock_names_and_judges_the_markers() {
        use md5::Digest as _;
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        let lib = r.join("opt/rocm-7.2.4/lib");
        std::fs::create_dir_all(&lib).unwrap();
        std::fs::create_dir_all(r.join("opt/rocm-7.2.4/.info")).unwrap();
        std::fs::create_dir_all(r.join("var/lib/dpkg/info")).unwrap();
        std::os::unix::fs::symlink("/opt/rocm-7.2.4", r.join("opt/rocm")).unwrap();
        let stock = "libamdhip64.so.7.2.70204";
        std::fs::write(
            r.join("var/lib/dpkg/info/hip-runtime-amd.md5sums"),
            format!(
                "{}  opt/rocm-7.2.4/lib/{stock}\n",
                hex::encode(md5::Md5::digest(b"stock hip"))
            ),
        )
        .unwrap();
        let patched = "libamdhip64.so.7.2.53211-b539bf7";
        std::fs::write(lib.join(patched), b"patched hip").unwrap();
        std::fs::hard_link(lib.join(patched), lib.join(stock)).unwrap();
        std::os::unix::fs::symlink(patched, lib.join("libamdhip64.so.7")).unwrap();
        let marker = r.join("opt/rocm-7.2.4/.info/atom-rocm-runtime-commit");
        std::fs::write(&marker, format!("{}\n", rocm::PIN_COMMIT)).unwrap();
        let entries = [StatusEntry {
            package: "hip-runtime-amd".into(),
            version: "7.2.53211.70204-93~24.04".into(),
            architecture: "amd64".into(),
            status: "install ok installed".into(),
            ..Default::default()
        }];
        let p = detect(&Root::new(r), &entries).unwrap();
        assert!(p.is_live());
        assert_eq!(p.differing.len(), 1);
        assert_eq!(p.differing[0].path, format!("/opt/rocm-7.2.4/lib/{stock}"));
        assert_eq!(p.libraries.len(), 1);
        let l = &p.libraries[0];
        assert_eq!(l.path, format!("/opt/rocm-7.2.4/lib/{patched}"));
        assert_eq!(l.aliases, vec![format!("/opt/rocm-7.2.4/lib/{stock}")]);
        assert_eq!(l.links, vec!["libamdhip64.so.7".to_string()]);
        // Not ELF, and only half of the pair: both said.
        assert!(
            p.problems.iter().any(|x| x.contains("not an ELF")),
            "{:?}",
            p.problems
        );
        assert!(p
            .problems
            .iter()
            .any(|x| x.contains("no patched libhsa-runtime64")));
        assert!(!p.problems.iter().any(|x| x.contains("built from commit")));
        assert!(p.summary().contains("rocm-pin adopt"), "{}", p.summary());
        // A marker naming another commit than the file name's.
        std::fs::write(&marker, "0123456789abcdef0123456789abcdef01234567\n").unwrap();
        let p = detect(&Root::new(r), &entries).unwrap();
        assert!(
            p.problems
                .iter()
                .any(|x| x.contains("built from commit b539bf7")),
            "{:?}",
            p.problems
        );
        // Stock content back (what `apt-get install --reinstall` does): reverted, marker stale.
        std::fs::remove_file(lib.join(stock)).unwrap();
        std::fs::write(lib.join(stock), b"stock hip").unwrap();
        let p = detect(&Root::new(r), &entries).unwrap();
        assert!(!p.is_live());
        assert!(p.describe().contains("REVERTED"), "{}", p.describe());
        // Which stock package is live again is named.
        let (name, version) = &p.stock[0];
        assert!(
            p.summary()
                .contains(&format!("reverted, the stock runtime of {name} {version}")),
            "{}",
            p.summary()
        );
    }
}
