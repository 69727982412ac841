//! The staging tree (`rocm-pin build` output or any `cmake --install` layout): every shared
//! library directly in `lib/`, its ELF facts read from the file itself, its symlinks checked.
//! With a `rocm-pin-build.json` manifest the commit comes from it and each library's sha256 is
//! checked against it (a staging changed after the build is refused).

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context};

use crate::build::manifest::{BuildManifest, MANIFEST_FILE};
use crate::elf::ElfInfo;
use crate::rocm::LibraryFamily;

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

#[derive(Debug, Clone)]
pub struct Staging {
    pub dir: PathBuf,
    pub commit: String,
    pub commit_time: i64,
    pub libraries: Vec<StagedLibrary>,
    pub manifest: Option<BuildManifest>,
}

impl Staging {
    pub fn family(&self, stem: &str) -> Option<&StagedLibrary> {
        self.libraries
            .iter()
            .find(|l| l.family.is_some_and(|f| f.stem == stem))
    }
}

/// Commit facts given on the command line when the staging has no manifest.
#[derive(Debug, Clone, Default)]
pub struct CommitOverride {
    pub commit: Option<String>,
    pub commit_time: Option<i64>,
}

pub fn load(dir: &Path, over: &CommitOverride) -> anyhow::Result<Staging> {
    let lib = dir.join("lib");
    if !lib.is_dir() {
        bail!(
            "staging {} has no lib/ directory (expected the output of `rocm-pin build` or a `cmake --install` tree)",
            dir.display()
        );
    }
    let manifest_path = dir.join(MANIFEST_FILE);
    let manifest: Option<BuildManifest> = if manifest_path.exists() {
        let text = std::fs::read_to_string(&manifest_path)
            .with_context(|| format!("cannot read {}", manifest_path.display()))?;
        Some(serde_json::from_str(&text).with_context(|| {
            format!(
                "{} is not a rocm-pin build manifest",
                manifest_path.display()
            )
        })?)
    } else {
        None
    };
    let commit = match (&over.commit, &manifest) {
        (Some(c), Some(m)) if *c != m.commit => bail!(
            "--commit {c} differs from the staging manifest's commit {} ({})",
            m.commit,
            manifest_path.display()
        ),
        (_, Some(m)) => m.commit.clone(),
        (Some(c), None) => c.clone(),
        (None, None) => bail!(
            "staging {} has no {MANIFEST_FILE}: give --commit <full sha> and --commit-time (or SOURCE_DATE_EPOCH)",
            dir.display()
        ),
    };
    if commit.len() < 7 || !commit.bytes().all(|b| b.is_ascii_hexdigit()) {
        bail!("commit {commit:?} is not a hexadecimal git commit id (at least 7 digits)");
    }
    let commit = commit.to_ascii_lowercase();
    let commit_time = match (&manifest, over.commit_time) {
        (Some(m), _) => m.commit_time,
        (None, Some(t)) => t,
        (None, None) => bail!(
            "staging {} has no {MANIFEST_FILE}: the commit time is needed to order package versions; give --commit-time or SOURCE_DATE_EPOCH",
            dir.display()
        ),
    };
    if commit_time <= 0 {
        bail!("commit time {commit_time} is not a positive Unix timestamp");
    }

    let mut names: Vec<(String, PathBuf)> = std::fs::read_dir(&lib)
        .with_context(|| format!("cannot list {}", lib.display()))?
        .map(|e| {
            let e = e.with_context(|| format!("cannot list {}", lib.display()))?;
            let name = e
                .file_name()
                .into_string()
                .map_err(|n| anyhow!("{}: non-UTF-8 file name {n:?}", lib.display()))?;
            Ok((name, e.path()))
        })
        .collect::<anyhow::Result<_>>()?;
    names.sort();

    let mut libraries = vec![];
    let mut links: Vec<(String, String)> = vec![];
    for (name, path) in &names {
        if !name.contains(".so") {
            continue;
        }
        let meta = std::fs::symlink_metadata(path)
            .with_context(|| format!("cannot stat {}", path.display()))?;
        if meta.file_type().is_symlink() {
            let real = std::fs::canonicalize(path).map_err(|_| {
                anyhow!(
                    "staged link {} dangles (-> {}); rebuild the staging",
                    path.display(),
                    std::fs::read_link(path)
                        .map(|t| t.display().to_string())
                        .unwrap_or_default()
                )
            })?;
            let lib_real = std::fs::canonicalize(&lib)?;
            if real.parent() != Some(lib_real.as_path()) {
                // A link out of lib/ (e.g. into the builder's /usr/lib) is not ours to ship.
                bail!(
                    "staged link {} points outside the staging lib/ ({}); refusing to package it",
                    path.display(),
                    real.display()
                );
            }
            let target_name = real
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_string();
            links.push((name.clone(), target_name));
            continue;
        }
        if !meta.is_file() {
            continue;
        }
        let family = crate::rocm::family_of(name);
        let head = read_head(path)?;
        if !crate::elf::is_elf(&head) {
            if family.is_some() || meta.len() == 0 {
                bail!(
                    "staged library {} is {} — not an ELF shared object; rebuild the staging",
                    path.display(),
                    if meta.len() == 0 {
                        "empty (0 bytes)".to_string()
                    } else {
                        "not ELF".to_string()
                    }
                );
            }
            continue;
        }
        let elf = crate::elf::read_elf(path)?;
        if !elf.shared_object {
            if family.is_some() {
                bail!(
                    "staged library {} is not a shared object (ET_DYN)",
                    path.display()
                );
            }
            continue;
        }
        libraries.push(StagedLibrary {
            file_name: name.clone(),
            source: path.clone(),
            sha256: sha256_file(path)?,
            size: meta.len(),
            family,
            elf,
            links: vec![],
        });
    }
    for (link, target) in links {
        if let Some(l) = libraries.iter_mut().find(|l| l.file_name == target) {
            l.links.push(link);
        }
    }
    for fam in crate::rocm::FAMILIES {
        let n = libraries
            .iter()
            .filter(|l| l.family.is_some_and(|f| f.stem == fam.stem))
            .count();
        if n > 1 {
            bail!(
                "staging {} holds {n} real files of {}; expected one (remove the stale one)",
                lib.display(),
                fam.stem
            );
        }
    }
    if let Some(m) = &manifest {
        for ml in &m.libraries {
            let p = dir.join(&ml.path);
            let actual = sha256_file(&p).with_context(|| {
                format!("manifest {} lists {}", manifest_path.display(), ml.path)
            })?;
            if actual != ml.sha256 {
                bail!(
                    "staged {} changed since the build (sha256 {actual}, manifest {}); rebuild or restore the staging",
                    p.display(),
                    ml.sha256
                );
            }
        }
    }
    Ok(Staging {
        dir: dir.to_path_buf(),
        commit,
        commit_time,
        libraries,
        manifest,
    })
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
