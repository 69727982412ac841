//! The staging tree (`rocm-pin build` output or any `cmake --install` layout): every shared
//! library directly in `lib/`, its ELF facts read from the file itself, its symlinks checked.
//! With a `rocm-pin-build.json` manifest the commit comes from it and each library's sha256 is
//! checked against it (a staging changed after the build is refused).

use std::path::{Path, PathBuf};

use anyhow::Context;

use super::error::refused;
use crate::elf::ElfInfo;
use crate::ops::build::manifest::{BuildManifest, MANIFEST_FILE};
use crate::rocm::PatchRecord;
use crate::rocm::{LibraryFamily, PinnedFamily};

use super::stock::sha256_file;

#[derive(Debug, Clone)]
pub struct StagedLibrary {
    /// File name in `lib/`, e.g. `libamdhip64.so.7.2.53211-b539bf7`.
    pub file_name: String,
    pub source: PathBuf,
    pub elf: ElfInfo,
    pub sha256: String,
    pub size: u64,
    pub family: Option<&'static LibraryFamily>,
    /// Symlink names in `lib/` that resolve to this file, e.g. `libamdhip64.so.7`.
    pub links: Vec<String>,
}

impl StagedLibrary {
    pub fn soname(&self) -> &str {
        self.elf.soname.as_deref().unwrap_or(&self.file_name)
    }
}

/// The libraries to package and where they came from. Two producers: [`load`] (a staging
/// directory: `rocm-pin build`'s output, or a `cmake --install` tree with the commit given)
/// and [`adopted`] (the live libraries of a host patched in place, copied by `rocm-pin adopt`).
#[derive(Debug, Clone)]
pub struct Staging {
    pub dir: PathBuf,
    pub commit: String,
    pub commit_time: i64,
    pub libraries: Vec<StagedLibrary>,
    pub origin: Origin,
}

/// Where a staging's libraries came from.
#[derive(Debug, Clone)]
pub enum Origin {
    /// `rocm-pin build`'s output, described by its manifest.
    Built(Box<BuildManifest>),
    /// A `cmake --install` tree; the commit facts were given on the command line.
    Given,
    /// The live patched libraries of a host patched in place; `source` says which (recorded in
    /// the marker).
    Adopted { source: String },
    /// The libraries of .debs a library's own build made (`package --from-deb`); `source`
    /// names each .deb and its sha256 (recorded in the marker).
    FromDebs { source: String },
}

impl Staging {
    pub fn family(&self, stem: &str) -> Option<&StagedLibrary> {
        self.libraries
            .iter()
            .find(|l| l.family.is_some_and(|f| f.stem == stem))
    }

    /// The build's patch series on top of the commit (none unless built by `rocm-pin build`).
    pub fn patches(&self) -> &[PatchRecord] {
        match &self.origin {
            Origin::Built(m) => &m.patches,
            _ => &[],
        }
    }

    /// The build ran with `--no-backport-check`.
    pub fn backport_check_skipped(&self) -> bool {
        matches!(&self.origin, Origin::Built(m) if m.backport_check_skipped)
    }

    /// This staging with its libraries labelled by `family`'s (the runtime pair's labels are
    /// what [`load`] gave them); two real files of one library are refused.
    pub fn for_family(&self, family: &'static PinnedFamily) -> anyhow::Result<Staging> {
        let mut staging = self.clone();
        for l in &mut staging.libraries {
            l.family = family.family_of(&l.file_name);
        }
        check_one_file_per_family(
            &staging.dir.join("lib"),
            &staging.libraries,
            family.libraries,
        )?;
        Ok(staging)
    }

    /// What an adoption (or `--from-deb`) took its libraries from (None for a build).
    pub fn adopted_source(&self) -> Option<&str> {
        match &self.origin {
            Origin::Adopted { source } | Origin::FromDebs { source } => Some(source),
            _ => None,
        }
    }
}

/// Commit facts given on the command line when the staging has no manifest.
#[derive(Debug, Clone, Default)]
pub struct CommitOverride {
    pub commit: Option<String>,
    pub commit_time: Option<i64>,
}

/// Read the staging under `dir`: its commit facts (manifest or `over`), its libraries in `lib/`
/// with their links, and, with a manifest, each listed file's sha256 checked against it.
pub fn load(dir: &Path, over: &CommitOverride) -> anyhow::Result<Staging> {
    let lib = dir.join("lib");
    if !lib.is_dir() {
        return Err(refused(format!("staging {} has no lib/ directory (expected the output of `rocm-pin build` or a `cmake --install` tree)", dir.display())));
    }
    let manifest_path = dir.join(MANIFEST_FILE);
    let manifest = read_manifest(&manifest_path)?;
    let commit = commit_of(dir, over, manifest.as_ref(), &manifest_path)?;
    let commit_time = commit_time_of(dir, over, manifest.as_ref())?;
    let libraries = read_libraries(&lib)?;
    if let Some(m) = &manifest {
        check_manifest_hashes(dir, &manifest_path, m)?;
    }
    Ok(Staging {
        dir: dir.to_path_buf(),
        commit,
        commit_time,
        libraries,
        origin: match manifest {
            Some(m) => Origin::Built(Box::new(m)),
            None => Origin::Given,
        },
    })
}

/// The staging of an adoption: the live patched libraries (and their links) copied into
/// `dir/lib` by `rocm-pin adopt`, of `commit` (the in-place marker's), ordered by
/// `commit_time`; `source` says where they were taken from.
pub fn adopted(
    dir: &Path,
    commit: &str,
    commit_time: i64,
    source: String,
) -> anyhow::Result<Staging> {
    let commit = checked_commit(commit)?;
    if commit_time <= 0 {
        return Err(refused(format!(
            "commit time {commit_time} is not a positive Unix timestamp"
        )));
    }
    Ok(Staging {
        dir: dir.to_path_buf(),
        commit,
        commit_time,
        libraries: read_libraries(&dir.join("lib"))?,
        origin: Origin::Adopted { source },
    })
}

/// The shared libraries in `lib` with their links; at most one file per runtime family.
fn read_libraries(lib: &Path) -> anyhow::Result<Vec<StagedLibrary>> {
    let mut libraries = vec![];
    let mut links: Vec<StagedLink> = vec![];
    for (name, path) in &list_dir_sorted(lib)? {
        match read_lib_entry(lib, name, path)? {
            Some(LibEntry::Link(link)) => links.push(link),
            Some(LibEntry::Library(library)) => libraries.push(*library),
            None => {}
        }
    }
    for StagedLink { name, target } in links {
        if let Some(l) = libraries.iter_mut().find(|l| l.file_name == target) {
            l.links.push(name);
        }
    }
    check_one_file_per_family(lib, &libraries, crate::rocm::FAMILIES)?;
    Ok(libraries)
}

/// The build manifest when the staging has one; a file that is there but unreadable or not a
/// manifest is an error, never treated as absent.
fn read_manifest(manifest_path: &Path) -> anyhow::Result<Option<BuildManifest>> {
    if !manifest_path.exists() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(manifest_path)
        .with_context(|| format!("cannot read {}", manifest_path.display()))?;
    Ok(Some(serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not a rocm-pin build manifest",
            manifest_path.display()
        )
    })?))
}

/// The source commit (lower-case hex): the manifest's, which `--commit` may only repeat, or
/// `--commit` without a manifest.
fn commit_of(
    dir: &Path,
    over: &CommitOverride,
    manifest: Option<&BuildManifest>,
    manifest_path: &Path,
) -> anyhow::Result<String> {
    let commit = match (&over.commit, manifest) {
        (Some(c), Some(m)) if *c != m.commit => return Err(refused(format!("--commit {c} differs from the staging manifest's commit {} ({})", m.commit, manifest_path.display()))),
        (_, Some(m)) => m.commit.clone(),
        (Some(c), None) => c.clone(),
        (None, None) => return Err(refused(format!("staging {} has no {MANIFEST_FILE}: give --commit <full sha> and --commit-time (or SOURCE_DATE_EPOCH)", dir.display()))),
    };
    checked_commit(&commit)
}

/// `commit` in lower case, when it is a hexadecimal git commit id of at least 7 digits.
fn checked_commit(commit: &str) -> anyhow::Result<String> {
    if commit.len() < 7 || !commit.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(refused(format!(
            "commit {commit:?} is not a hexadecimal git commit id (at least 7 digits)"
        )));
    }
    Ok(commit.to_ascii_lowercase())
}

/// The commit time: the manifest's, else `--commit-time`; it orders package versions.
fn commit_time_of(
    dir: &Path,
    over: &CommitOverride,
    manifest: Option<&BuildManifest>,
) -> anyhow::Result<i64> {
    let commit_time = match (manifest, over.commit_time) {
        (Some(m), _) => m.commit_time,
        (None, Some(t)) => t,
        (None, None) => return Err(refused(format!("staging {} has no {MANIFEST_FILE}: the commit time is needed to order package versions; give --commit-time or SOURCE_DATE_EPOCH", dir.display()))),
    };
    if commit_time <= 0 {
        return Err(refused(format!(
            "commit time {commit_time} is not a positive Unix timestamp"
        )));
    }
    Ok(commit_time)
}

/// The entries of `lib` as (UTF-8 name, path), sorted by name so the result is reproducible.
fn list_dir_sorted(lib: &Path) -> anyhow::Result<Vec<(String, PathBuf)>> {
    let mut names: Vec<(String, PathBuf)> = std::fs::read_dir(lib)
        .with_context(|| format!("cannot list {}", lib.display()))?
        .map(|e| {
            let e = e.with_context(|| format!("cannot list {}", lib.display()))?;
            let name = e
                .file_name()
                .into_string()
                .map_err(|n| refused(format!("{}: non-UTF-8 file name {n:?}", lib.display())))?;
            Ok((name, e.path()))
        })
        .collect::<anyhow::Result<_>>()?;
    names.sort();
    Ok(names)
}

/// A symlink in `lib/` and the file name in `lib/` it resolves to.
struct StagedLink {
    name: String,
    target: String,
}

/// What one `lib/` entry contributes to the staging.
enum LibEntry {
    Link(StagedLink),
    Library(Box<StagedLibrary>),
}

/// Read one `lib/` entry: a library link (which must resolve within `lib/`), a shared library,
/// or None for anything else. A family file or an empty `.so` that is not an ELF shared object
/// is refused.
fn read_lib_entry(lib: &Path, name: &str, path: &Path) -> anyhow::Result<Option<LibEntry>> {
    if !name.contains(".so") {
        return Ok(None);
    }
    let meta = std::fs::symlink_metadata(path)
        .with_context(|| format!("cannot stat {}", path.display()))?;
    if meta.file_type().is_symlink() {
        return Ok(Some(LibEntry::Link(read_staged_link(lib, name, path)?)));
    }
    if !meta.is_file() {
        return Ok(None);
    }
    let family = crate::rocm::family_of(name);
    let head = read_head(path)?;
    if !crate::elf::is_elf(&head) {
        if family.is_some() || meta.len() == 0 {
            return Err(refused(format!(
                "staged library {} is {} — not an ELF shared object; rebuild the staging",
                path.display(),
                if meta.len() == 0 {
                    "empty (0 bytes)".to_string()
                } else {
                    "not ELF".to_string()
                }
            )));
        }
        return Ok(None);
    }
    let elf = crate::elf::read_elf(path)?;
    if !elf.shared_object {
        if family.is_some() {
            return Err(refused(format!(
                "staged library {} is not a shared object (ET_DYN)",
                path.display()
            )));
        }
        return Ok(None);
    }
    Ok(Some(LibEntry::Library(Box::new(StagedLibrary {
        file_name: name.to_string(),
        source: path.to_path_buf(),
        sha256: sha256_file(path)?,
        size: meta.len(),
        family,
        elf,
        links: vec![],
    }))))
}

/// Resolve the symlink `lib/<name>`; it must not dangle nor lead out of `lib/`.
fn read_staged_link(lib: &Path, name: &str, path: &Path) -> anyhow::Result<StagedLink> {
    let real = std::fs::canonicalize(path).map_err(|_| {
        refused(format!(
            "staged link {} dangles (-> {}); rebuild the staging",
            path.display(),
            std::fs::read_link(path)
                .map(|t| t.display().to_string())
                .unwrap_or_default()
        ))
    })?;
    let lib_real = std::fs::canonicalize(lib)?;
    if real.parent() != Some(lib_real.as_path()) {
        // A link out of lib/ (e.g. into the builder's /usr/lib) is not ours to ship.
        return Err(refused(format!(
            "staged link {} points outside the staging lib/ ({}); refusing to package it",
            path.display(),
            real.display()
        )));
    }
    let target = real
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    Ok(StagedLink {
        name: name.to_string(),
        target,
    })
}

/// Two real files of one family leave it ambiguous which is the runtime.
fn check_one_file_per_family(
    lib: &Path,
    libraries: &[StagedLibrary],
    families: &[LibraryFamily],
) -> anyhow::Result<()> {
    for fam in families {
        let n = libraries
            .iter()
            .filter(|l| l.family.is_some_and(|f| f.stem == fam.stem))
            .count();
        if n > 1 {
            return Err(refused(format!(
                "staging {} holds {n} real files of {}; expected one (remove the stale one)",
                lib.display(),
                fam.stem
            )));
        }
    }
    Ok(())
}

/// Every library the manifest lists still has the sha256 the build recorded.
fn check_manifest_hashes(
    dir: &Path,
    manifest_path: &Path,
    manifest: &BuildManifest,
) -> anyhow::Result<()> {
    for ml in &manifest.libraries {
        let p = dir.join(&ml.path);
        let actual = sha256_file(&p)
            .with_context(|| format!("manifest {} lists {}", manifest_path.display(), ml.path))?;
        if actual != ml.sha256 {
            return Err(refused(format!("staged {} changed since the build (sha256 {actual}, manifest {}); rebuild or restore the staging", p.display(), ml.sha256)));
        }
    }
    Ok(())
}

fn read_head(path: &Path) -> anyhow::Result<Vec<u8>> {
    use std::io::Read;
    let mut f =
        std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut buf = vec![0u8; 4];
    let n = f.read(&mut buf)?;
    buf.truncate(n);
    Ok(buf)
}
