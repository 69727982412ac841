//! The staging directory `build --out DIR` writes: claiming it (new, empty or a previous
//! rocm-pin staging), the lock a build holds on it, and cleaning it before a build.

use std::path::{Path, PathBuf};

use anyhow::Context;

use super::error::BuildError;
use super::manifest::MANIFEST_FILE;
use super::steps::{self, Layout};
use crate::exit::usage;

/// Held for the whole build: a second `rocm-pin build` into the same `DIR` is refused rather
/// than left to delete the first one's files mid-build. Released when dropped (the file stays).
pub struct StagingLock {
    _file: std::fs::File,
}

pub(super) const LOCK_FILE: &str = "lock";

/// Check that `DIR` is new, empty or a previous rocm-pin staging, create its work directory and
/// take the build lock.
pub(super) fn claim_staging(layout: &Layout) -> anyhow::Result<StagingLock> {
    let staging = &layout.staging;
    if staging.exists() {
        if !staging.is_dir() {
            return Err(usage(format!(
                "--out {} is not a directory",
                staging.display()
            )));
        }
        let non_empty = std::fs::read_dir(staging)
            .with_context(|| format!("reading {}", staging.display()))?
            .next()
            .is_some();
        let ours = [MANIFEST_FILE, steps::WORK_DIR, steps::LOGS_DIR]
            .iter()
            .any(|n| staging.join(n).exists());
        if non_empty && !ours {
            return Err(BuildError::ForeignOutDir {
                out: staging.clone(),
            }
            .into());
        }
    }
    std::fs::create_dir_all(&layout.work)
        .with_context(|| format!("creating {}", layout.work.display()))?;
    let path = layout.work.join(LOCK_FILE);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    if file.try_lock().is_err() {
        return Err(BuildError::StagingLocked {
            staging: staging.clone(),
            lock: path,
        }
        .into());
    }
    Ok(StagingLock { _file: file })
}

/// Make `DIR` an empty staging directory (keeping a URL checkout for reuse). Refuses a
/// non-empty directory that is not a previous rocm-pin staging.
pub(super) fn clean_staging(layout: &Layout, keep: &[PathBuf]) -> anyhow::Result<()> {
    let staging = &layout.staging;
    if staging.exists() {
        if !staging.is_dir() {
            return Err(usage(format!(
                "--out {} is not a directory",
                staging.display()
            )));
        }
        let entries: Vec<_> = std::fs::read_dir(staging)
            .with_context(|| format!("reading {}", staging.display()))?
            .collect::<Result<_, _>>()
            .with_context(|| format!("reading {}", staging.display()))?;
        let ours = [MANIFEST_FILE, steps::WORK_DIR, steps::LOGS_DIR]
            .iter()
            .any(|n| staging.join(n).exists());
        if !entries.is_empty() && !ours {
            return Err(BuildError::ForeignOutDir {
                out: staging.clone(),
            }
            .into());
        }
        // The manifest goes first: an interrupted clean must not leave a "finished" staging.
        let manifest = staging.join(MANIFEST_FILE);
        if manifest.exists() {
            std::fs::remove_file(&manifest)
                .with_context(|| format!("removing {}", manifest.display()))?;
        }
        for entry in entries {
            let path = entry.path();
            if path == layout.work || path == manifest {
                continue;
            }
            remove_any(&path)?;
        }
        if layout.work.is_dir() {
            for entry in std::fs::read_dir(&layout.work)
                .with_context(|| format!("reading {}", layout.work.display()))?
            {
                let path = entry
                    .with_context(|| format!("reading {}", layout.work.display()))?
                    .path();
                if path != layout.checkout && path != layout.work.join(LOCK_FILE) {
                    remove_except(&path, keep)?;
                }
            }
        }
    }
    std::fs::create_dir_all(&layout.work)
        .with_context(|| format!("creating {}", layout.work.display()))?;
    Ok(())
}

/// Remove `path`, except the `keep` paths under it (their parents stay as directories).
pub(super) fn remove_except(path: &Path, keep: &[PathBuf]) -> anyhow::Result<()> {
    if keep.iter().any(|k| k == path) {
        return Ok(());
    }
    if keep.iter().any(|k| k.starts_with(path)) && path.is_dir() {
        for entry in
            std::fs::read_dir(path).with_context(|| format!("reading {}", path.display()))?
        {
            let child = entry
                .with_context(|| format!("reading {}", path.display()))?
                .path();
            remove_except(&child, keep)?;
        }
        return Ok(());
    }
    remove_any(path)
}

pub(super) fn remove_any(path: &Path) -> anyhow::Result<()> {
    let meta =
        std::fs::symlink_metadata(path).with_context(|| format!("reading {}", path.display()))?;
    if meta.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    }
    .with_context(|| format!("removing {}", path.display()))
}
